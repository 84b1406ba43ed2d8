"""The catalogue of variants is the one list: the backends, the config, the schema and the README agree with it."""

from __future__ import annotations

import pytest
import yaml

import variant_table
from conftest import ROOT
from tiny_mlp_bench import catalogue
from tiny_mlp_bench.backends import backend


def test_the_readme_table_is_the_catalogues_as_make_variant_table_writes_it(tmp_path):
    assert variant_table.main(["--check"]) == 0, "run: make variant-table"
    rows = variant_table.table().splitlines()[2:]
    assert len(rows) == len(catalogue.VARIANTS)
    assert rows[0] == "| torch | `seed` | cpu, cuda | yes | — (the asker's loop) |"
    assert "| torch | `graphed` | cuda | yes |" in rows[5] and "| tf_keras | `xla` | cpu, cuda | – |" in rows[9]
    assert "| keras_torch | `seed` | cpu, cuda | – |" in rows[17]  # a default rung of a framework run on request
    # A stale table is found and rewritten between the markers, the text around it kept.
    stale = tmp_path / "README.md"
    stale.write_text(f"intro\n{variant_table.BEGIN}\n| old |\n{variant_table.END}\nafter\n")
    assert variant_table.main(["--check", "--readme", str(stale)]) == 1
    assert variant_table.main(["--readme", str(stale)]) == 0
    assert stale.read_text() == f"intro\n{variant_table.BEGIN}\n{variant_table.table()}\n{variant_table.END}\nafter\n"


@pytest.mark.parametrize("framework", catalogue.framework_names())
def test_each_backend_implements_exactly_its_catalogue_variants(framework):
    assert backend(framework).name == framework
    assert list(backend(framework).variants) == catalogue.variant_names(framework)


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
