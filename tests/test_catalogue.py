"""The catalogue of variants is the one list: the backends, the config, the schema and the README agree with it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from helpers import ROOT
from tiny_mlp_bench import backends, catalogue
from tiny_mlp_bench.generated_docs import variant_table


def test_the_readme_table_is_the_catalogues_as_make_variant_table_writes_it(tmp_path):
    assert variant_table.main(["--check"]) == 0, "run: make variant-table"
    rows = variant_table.table().splitlines()[2:]
    assert len(rows) == len(catalogue.VARIANTS)
    assert rows[0] == "| torch | `seed` | cpu, cuda | yes | — (the asker's loop) |"
    assert "| torch | `graphed` | cuda | yes |" in rows[5] and "| tf_keras | `xla` | cpu, cuda | – |" in rows[10]
    assert "| keras_torch | `seed` | cpu, cuda | – |" in rows[18]  # a default rung of a framework run on request
    # A stale table is found and rewritten between the markers, the text around it kept.
    stale = tmp_path / "README.md"
    stale.write_text(f"intro\n{variant_table.BEGIN}\n| old |\n{variant_table.END}\nafter\n")
    assert variant_table.main(["--check", "--readme", str(stale)]) == 1
    assert variant_table.main(["--readme", str(stale)]) == 0
    assert stale.read_text() == f"intro\n{variant_table.BEGIN}\n{variant_table.table()}\n{variant_table.END}\nafter\n"


def test_the_backend_modules_register_exactly_the_catalogue_and_import_no_framework():
    # One process imports every backend module the catalogue names; the registry then holds each
    # framework's backend and one loop per rung, and none of the frameworks themselves was imported.
    program = """
import json, sys
from tiny_mlp_bench import backends, catalogue
from tiny_mlp_bench.generated_docs import variant_table
for framework in catalogue.framework_names():
    backends.import_backend_module(framework)
    assert backends.backend(framework).name == framework
frameworks = {"torch", "tensorflow", "tf_keras", "keras", "jax", "optax", "numba", "sklearn"}
print(json.dumps({"registered": backends.registered(), "imported": sorted(frameworks & set(sys.modules))}))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    found = json.loads(done.stdout)
    assert found["imported"] == []
    registered = {framework: sorted(variants) for framework, variants in found["registered"].items()}
    assert registered == {f: sorted(catalogue.variant_names(f)) for f in catalogue.framework_names()}


def test_a_loop_the_catalogue_does_not_list_cannot_be_registered():
    backends.import_backend_module("torch")  # torch's loops are registered (importing torch_loops imports no torch)
    with pytest.raises(catalogue.UnknownVariant, match="unknown torch variant 'turbo'"):
        backends.register_loops("torch", {"turbo": object})
    with pytest.raises(ValueError, match="a loop for torch seed is registered already"):
        backends.register_loops("torch", {"seed": object})
    with pytest.raises(backends.NotRegistered, match="registers no loop for keras_torch xla"):
        backends.loop("keras_torch", "xla")


def test_the_study_configs_leave_the_variants_to_the_catalogue():
    # The default study names no rung (the catalogue's defaults); the full and GPU studies say `all`.
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert "variants" not in config and "frameworks" not in config
    for study in ("full", "gpu"):
        chosen = yaml.safe_load((ROOT / "config" / f"{study}.yaml").read_text())["variants"]
        assert set(chosen.values()) == {catalogue.ALL}, study


def test_ladders_start_with_the_askers_loop_and_unknown_names_are_refused():
    assert catalogue.variant_names("torch")[0] == "seed" and catalogue.variant_names("keras")[0] == "seed"
    assert catalogue.ladder_position("torch", "graphed") == 5
    assert catalogue.ladder_position("torch", "not-listed") == len(catalogue.ladder("torch"))
    with pytest.raises(catalogue.UnknownVariant, match="unknown keras variant 'turbo'; known: seed, xla"):
        catalogue.variant("keras", "turbo")
    with pytest.raises(catalogue.UnknownVariant, match="unknown framework 'mxnet'"):
        catalogue.framework("mxnet")


def test_where_variants_run():
    assert not catalogue.variant("torch", "graphed").runs_on("cpu")
    assert catalogue.variant("numpy", "reference").why_not_on("cuda") == "numpy reference runs on cpu only"
    assert all(v.runs_on("cpu") or v.runs_on("cuda") for v in catalogue.VARIANTS)
