"""The catalogue of rungs is the one list: the backends, the config, the schema and the README agree with it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
import yaml

from helpers import ROOT
from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.generated_docs import rung_table
from tiny_mlp_bench.stacks import CAUSES


def test_the_readme_table_is_the_catalogues_as_make_rung_table_writes_it(tmp_path):
    assert rung_table.main(["--check"]) == 0, "run: make rung-table"
    rows = rung_table.table().splitlines()[2:]
    assert len(rows) == len(registry.rungs())
    assert rows[0] == "| torch | `seed` | cpu, cuda | yes | — (the asker's loop) |"
    assert "| torch | `graphed` | cuda | yes |" in rows[5] and "| tf_keras | `xla` | cpu, cuda | – |" in rows[13]
    assert "| torch | `one_thread` | cpu | – |" in rows[9]  # the busy-core study's, not the default study's
    assert "| keras_torch | `seed` | cpu, cuda | – |" in rows[24]  # a default rung of a framework run on request
    # A stale table is found and rewritten between the markers, the text around it kept.
    stale = tmp_path / "README.md"
    stale.write_text(f"intro\n{rung_table.BEGIN}\n| old |\n{rung_table.END}\nafter\n")
    assert rung_table.main(["--check", "--readme", str(stale)]) == 1
    assert rung_table.main(["--readme", str(stale)]) == 0
    assert stale.read_text() == f"intro\n{rung_table.BEGIN}\n{rung_table.table()}\n{rung_table.END}\nafter\n"


def test_the_backend_modules_declare_every_rung_with_its_loop_and_import_no_framework():
    # One process gathers every rung and backend; none of the frameworks themselves was imported.
    program = """
import json, sys
from tiny_mlp_bench import catalogue, registry
for framework in catalogue.framework_names():
    assert registry.backend(framework).name == framework
    assert all(callable(registry.loop(framework, name)) for name in registry.rung_names(framework))
frameworks = {"torch", "tensorflow", "tf_keras", "keras", "jax", "optax", "numba", "sklearn"}
print(json.dumps({"rungs": len(registry.rungs()), "imported": sorted(frameworks & set(sys.modules))}))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    found = json.loads(done.stdout)
    assert found["imported"] == [] and found["rungs"] == len(registry.rungs())
    assert [v.framework for v in registry.rungs()] == sorted(
        (v.framework for v in registry.rungs()), key=catalogue.framework_names().index
    )


def test_a_backend_module_declares_its_own_frameworks_rungs_each_with_a_loop(monkeypatch):
    from tiny_mlp_bench.backends import sklearn_mlp

    (rung,) = sklearn_mlp.RUNGS
    for declared, problem in [
        (dataclasses.replace(rung, framework="torch"), "declares torch mlp_regressor, not a rung of its own"),
        (dataclasses.replace(rung, loop=None), "declares sklearn mlp_regressor without a loop"),
    ]:
        monkeypatch.setattr(sklearn_mlp, "RUNGS", (declared,))
        registry.rungs.cache_clear()
        with pytest.raises(ValueError, match=problem):
            registry.rungs()
    monkeypatch.undo()
    registry.rungs.cache_clear()
    assert registry.rung("sklearn", "mlp_regressor").loop is rung.loop


def test_a_backend_module_declares_one_backend_per_framework_and_only_its_own(monkeypatch):
    from tiny_mlp_bench.backends import sklearn_mlp

    (declared,) = sklearn_mlp.BACKENDS
    for backends, problem in [
        ((dataclasses.replace(declared, name="torch"),), "declares a backend for torch, not a framework of its own"),
        ((declared, declared), "declares 2 backends for sklearn"),
        ((), "declares no backend for sklearn"),
    ]:
        monkeypatch.setattr(sklearn_mlp, "BACKENDS", backends)
        with pytest.raises((ValueError, registry.NotRegistered), match=problem):
            registry.backend("sklearn")
    monkeypatch.undo()
    assert registry.backend("sklearn") is declared


def test_the_study_configs_leave_the_variants_to_the_catalogue():
    # The default study names no rung (the catalogue's defaults); the full and GPU studies say `all`, but for the
    # GPU study's torch, which names every rung but one_thread (a GPU says nothing about a CPU's thread pool) and the
    # release sweep's cause rung.
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert "variants" not in config and "frameworks" not in config
    full = yaml.safe_load((ROOT / "config" / "full.yaml").read_text())["variants"]
    assert set(full.values()) == {catalogue.ALL}
    gpu = yaml.safe_load((ROOT / "config" / "gpu.yaml").read_text())["variants"]
    causes = {rung for _, rung, _, _ in CAUSES}
    assert gpu.pop("torch") == [
        v.name for v in registry.ladder("torch") if v.role != catalogue.Role.ONE_THREAD and v.name not in causes
    ]
    assert set(gpu.values()) == {catalogue.ALL}


def test_ladders_start_with_the_askers_loop_and_unknown_names_are_refused():
    assert registry.rung_names("torch")[0] == "seed" and registry.rung_names("keras")[0] == "seed"
    assert registry.ladder_position("torch", "graphed") == 5
    assert registry.ladder_position("torch", "not-listed") == len(registry.ladder("torch"))
    with pytest.raises(catalogue.UnknownRung, match="unknown keras rung 'turbo'; known: seed, xla"):
        registry.rung("keras", "turbo")
    with pytest.raises(catalogue.UnknownRung, match="unknown framework 'mxnet'"):
        catalogue.framework("mxnet")


def test_where_variants_run():
    assert not registry.rung("torch", "graphed").runs_on("cpu")
    assert registry.rung("numpy", "reference").why_not_on("cuda") == "numpy reference runs on cpu only"
    assert all(v.runs_on("cpu") or v.runs_on("cuda") for v in registry.rungs())


def test_a_rung_declared_only_in_its_backend_module_reaches_the_config_check_the_plan_and_the_report(
    monkeypatch, tmp_path
):
    # A new torch rung, written only where its loop is: torch_loops.RUNGS.
    from helpers import ROOT, synthetic_record
    from tiny_mlp_bench.backends import torch_loops
    from tiny_mlp_bench.config_check import config_errors
    from tiny_mlp_bench.gpu_study import plan
    from tiny_mlp_bench.jobs import rounds
    from tiny_mlp_bench.report.markdown import render_markdown
    from tiny_mlp_bench.report.model import build_report

    turbo = catalogue.Rung(
        "torch", "turbo", catalogue.DEVICES, "what turbo removes", default=False, loop=torch_loops.SyncFreeLoop
    )
    monkeypatch.setattr(torch_loops, "RUNGS", (*torch_loops.RUNGS, turbo))
    registry.rungs.cache_clear()
    try:
        schema = yaml.safe_load((ROOT / "config" / "config.schema.yaml").read_text())
        config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
        config |= {"frameworks": ["torch"], "variants": {"torch": ["seed", "turbo"]}, "devices": ["cpu"]}
        assert config_errors(config, schema) == []
        assert config_errors(config | {"variants": {"torch": ["warp"]}}, schema) != []
        config |= {"plan_estimates_s": {"*": 10}}
        assert "torch-cpu-turbo-1" in [p.job.name for p in plan.plan(config, tmp_path, None)]
        assert "torch-cpu-turbo-1" in [job.name for job in rounds.training_runs(config)]
        records = [synthetic_record("torch", "cpu", r, 2.0, variant=v) for v in ("seed", "turbo") for r in (1, 2)]
        report = build_report(records)
        (ladder,) = report.machines[0].ladders
        assert [r.variant for r in ladder.rungs] == ["seed", "turbo"]
        assert "what turbo removes" in render_markdown(report)
    finally:
        monkeypatch.undo()
        registry.rungs.cache_clear()


# Every module of the package imported with the rungs unreadable: a module that reads them at import ties itself
# to every backend module (which the catalogue imports to gather them) before anything runs.
NO_RUNGS_AT_IMPORT = """
import importlib, pkgutil, traceback
import tiny_mlp_bench
from tiny_mlp_bench import catalogue, registry

class ReadAtImport(Exception):
    pass

def unreadable():
    raise ReadAtImport

registry.rungs = unreadable
for info in pkgutil.walk_packages(tiny_mlp_bench.__path__, "tiny_mlp_bench."):
    try:
        importlib.import_module(info.name)
    except ReadAtImport as err:
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.name == "<module>"]
        print(f"{info.name}: reads the rungs at {frames[-1].filename}:{frames[-1].lineno}")
"""


def test_no_module_reads_the_rungs_when_it_is_imported():
    done = subprocess.run([sys.executable, "-c", NO_RUNGS_AT_IMPORT], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", done.stdout
