"""A study's expected time (tiny_mlp_bench/expected_time.py): each repeat from a record that models it, the
study's own time around its timed jobs and .venv's set-up, from synthetic archives and the 2-core archive."""

import json
import re
import time
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, synthetic_record
from tiny_mlp_bench import config_check, expected_time
from tiny_mlp_bench.jobs import rounds

TWO_CORE = ROOT / "results" / "archive" / "2026-12-03-cpu-2core"
LIKE = {"cpu_model": "Test CPU", "logical_cpus": 2, "gpu_name": None}  # the synthetic records' machine
CONFIG = {
    "frameworks": ["torch"],
    "devices": ["cpu"],
    "variants": {"torch": ["seed", "fused_epoch"]},
    "repeats": 3,
    "claim_repeats": 1,
    "epochs": 4,
    "estimate_archive": "auto",
}


@pytest.fixture(autouse=True)
def like_machine(monkeypatch):
    monkeypatch.setattr(expected_time, "this_machine", lambda gpu: LIKE | {"gpu_name": gpu})


def timed(record: dict, start_s: float, took_s: float, cache: str = "cold") -> dict:
    """``record`` as run ``start_s`` after noon for ``took_s``, finding its compiler cache ``cache``."""
    at = lambda s: f"2026-01-01T12:{int(s) // 60:02d}:{s % 60:06.3f}+00:00"  # noqa: E731
    record["load"] = {"started_at": at(start_s), "ended_at": at(start_s + took_s)}
    record["method"]["compile_cache"] = cache
    return record


def write_archive(archives: Path, name: str, records: list[dict], make_run: dict | None = None) -> Path:
    folder = archives / name
    (folder / "runs").mkdir(parents=True)
    (folder / "provenance.json").write_text(json.dumps({"study": {"first_run_started": "2026-01-01T12:00:00"}}))
    for record in records:
        (folder / "runs" / f"{record['identity']['run_id']}.json").write_text(json.dumps(record))
    if make_run:
        (folder / "logs").mkdir()
        (folder / "logs" / "make_run_time.json").write_text(json.dumps(make_run))
    return folder


def two_rungs(tmp_path: Path, make_run: dict | None = None) -> Path:
    """An archive of seed's 3 runs (10, 12, 14 s) and fused_epoch's first 2 (a 100 s cold compilation, 8 s warm),
    a second apart: 5 jobs over 148 s, 4 s between them."""
    runs = [
        timed(synthetic_record("torch", "cpu", 1), 0, 10),
        timed(synthetic_record("torch", "cpu", 1, variant="fused_epoch"), 11, 100),
        timed(synthetic_record("torch", "cpu", 2), 112, 12),
        timed(synthetic_record("torch", "cpu", 2, variant="fused_epoch"), 125, 8, "warm"),
        timed(synthetic_record("torch", "cpu", 3), 134, 14),
    ]
    return write_archive(tmp_path / "archive", "study", runs, make_run).parent


def test_each_repeat_comes_from_its_own_record_and_a_warm_one_never_from_a_cold_compilation(tmp_path):
    archives = two_rungs(tmp_path)
    found = expected_time.estimate(CONFIG, archives, rounds.training_runs(CONFIG), None)
    seconds = {Path(output).stem: s for output, (s, _) in found.jobs.items()}
    between = 4 / 5  # a job's share of the seconds between jobs
    assert between == pytest.approx(found.pace.between_jobs_s)
    assert seconds["torch-cpu-seed-2"] == pytest.approx(12 + between)
    # The cold compilation is its rung's first run only; the third, which the archive lacks, is warm.
    assert seconds["torch-cpu-fused_epoch-1"] == pytest.approx(100 + between)
    assert seconds["torch-cpu-fused_epoch-3"] == pytest.approx(8 + between)
    # Without a make_run_time.json, nothing around the jobs nor of the set-up is counted.
    assert (found.around_s, found.setup_s, found.overhead_s) == (0.0, 0.0, pytest.approx(6 * between))
    assert found.timed_s == pytest.approx(10 + 12 + 14 + 100 + 8 + 8)


def test_a_compiling_rungs_later_repeat_is_not_estimated_from_cold_compilations_alone(tmp_path):
    cold = [timed(synthetic_record("torch", "cpu", r, variant="fused_epoch"), 100 * r, 90) for r in (1, 2)]
    archives = write_archive(tmp_path / "archive", "cold-only", cold).parent
    found = expected_time.estimate(CONFIG, archives, rounds.training_runs(CONFIG), None)
    assert found.jobs["results/runs/torch-cpu-fused_epoch-1.json"][0] == pytest.approx(90 + 10 / 2)
    assert found.jobs["results/runs/torch-cpu-fused_epoch-2.json"] is None
    line = expected_time.expected_line(found, rounds.training_runs(CONFIG), None)
    assert "no archived run of the other 5 there (" in line


def test_the_study_around_its_jobs_and_the_set_up_come_from_make_run_time(tmp_path):
    # The study ran 160 s: 12 s besides its jobs' 148 s; .venv took 100 s to set up.
    archives = two_rungs(tmp_path, {"setup_s": 100, "study_s": 160, "total_s": 260})
    pending = rounds.training_runs(CONFIG)
    fresh = expected_time.estimate(CONFIG, archives, pending, None, venv_set_up=False)
    assert (fresh.around_s, fresh.setup_s) == (pytest.approx(12), 100)
    set_up = expected_time.estimate(CONFIG, archives, pending, None)
    assert set_up.setup_s == 0 and set_up.total_s == pytest.approx(fresh.total_s - 100)
    line = expected_time.expected_line(set_up, pending, None)
    assert line.startswith("Expected: about 3 min: 3 min for 6 of the 6 timed jobs, 17 s of Snakemake, the dataset")
    assert "no set-up (.venv is set up); at the pace of study, whose machine is like this one (Test CPU" in line


def test_auto_takes_an_archive_of_a_like_machine_and_a_named_one_must_be_there(tmp_path):
    archives = two_rungs(tmp_path)
    other = timed(synthetic_record("torch", "cpu", 1), 0, 10)
    other["environment"]["cpu_model"] = "Other CPU"
    write_archive(archives, "other", [other])
    assert expected_time.choose_archive("auto", archives, LIKE).name == "study"
    assert expected_time.choose_archive("other", archives, LIKE).name == "other"
    with pytest.raises(expected_time.EstimateArchiveError, match=r"no archived study .*gone"):
        expected_time.choose_archive("gone", archives, LIKE)
    # A named archive of another machine gives its pace, and says whose it is.
    config, pending = CONFIG | {"estimate_archive": "other"}, rounds.training_runs(CONFIG)
    line = expected_time.expected_line(expected_time.estimate(config, archives, pending, None), pending, None)
    assert "at the pace of other, made on Other CPU, 2 logical CPUs, no GPU (this one: Test CPU" in line


def test_auto_paces_a_local_study_by_a_default_study_while_the_gpu_plan_reads_every_study(tmp_path):
    archives = two_rungs(tmp_path)
    # A newer GPU study of the same machine: its pace is no local study's, but what it measured counts.
    gpu_study = write_archive(archives, "gpu-study", [timed(synthetic_record("torch", "cpu", 1), 0, 30)])
    (gpu_study / "provenance.json").write_text(json.dumps({"study": {"first_run_started": "2026-02-01T12:00:00"}}))
    (gpu_study / "logs").mkdir()
    (gpu_study / "logs" / "gpu_study.json").write_text("{}")
    assert expected_time.choose_archive("auto", archives, LIKE).name == "study"
    assert {name for name, _, _ in expected_time.archived(archives)} == {"study", "gpu-study"}


def config_as_run(path: Path) -> dict:
    """A config file with the schema's defaults and the catalogue's filled in, as a study runs it."""
    schema = yaml.safe_load((ROOT / "config" / "config.schema.yaml").read_text())
    defaults = {key: spec["default"] for key, spec in schema["properties"].items() if "default" in spec}
    return config_check.with_catalogue_defaults(defaults | yaml.safe_load(path.read_text()))


def at_two_core_pace(config: dict) -> expected_time.Estimate:
    """``config``'s study from a fresh clone, at the 2-core archive's pace."""
    config = config | {"estimate_archive": TWO_CORE.name}
    return expected_time.estimate(config, TWO_CORE.parent, rounds.run_order(config), None, venv_set_up=False)


def test_the_2_core_archives_own_study_is_estimated_within_a_tenth_of_what_make_run_took():
    took = json.loads((TWO_CORE / "logs" / "make_run_time.json").read_text())
    found = at_two_core_pace(config_as_run(TWO_CORE / "config.yaml"))
    assert found.setup_s == took["setup_s"]
    assert found.total_s == pytest.approx(took["total_s"], rel=0.1)


def test_the_default_study_fits_15_minutes_from_a_fresh_clone_at_the_2_core_pace():
    # 15 minutes less a tenth: the estimate's margin above, and a slower day.
    found = at_two_core_pace(config_as_run(ROOT / "config" / "config.yaml"))
    # A job the archive cannot pace would be left out of the total, which would then hold by leaving it out.
    assert not [output for output, seconds in found.jobs.items() if seconds is None]
    assert found.total_s <= 900


def test_a_run_expects_its_time_from_archives_of_a_like_machine_and_says_where_there_are_none(monkeypatch, tmp_path):
    config = config_as_run(TWO_CORE / "config.yaml")
    env = json.loads(next((TWO_CORE / "runs").glob("*.json")).read_text())["environment"]
    like = {"cpu_model": env["cpu_model"], "logical_cpus": env["logical_cpus"]}
    monkeypatch.setattr(expected_time, "this_machine", lambda gpu: like | {"gpu_name": gpu})
    # TWO_CORE alone: a newer study of its kind ran today's smaller default, without every job of its config.
    archives = tmp_path / "archive"
    archives.mkdir()
    (archives / TWO_CORE.name).symlink_to(TWO_CORE)
    pending = rounds.run_order(config)
    line = expected_time.expected_line(expected_time.estimate(config, archives, pending, None), pending, None)
    assert re.match(r"Expected: about \d+ min: \d+ min for 73 of the 73 timed jobs, \d+ (min|s) of Snakemake", line)
    assert f"at the pace of {TWO_CORE.name}, whose machine is like this one ({env['cpu_model']}, 2 logical" in line
    monkeypatch.setattr(
        expected_time, "this_machine", lambda gpu: {"cpu_model": "Other CPU", "logical_cpus": 64, "gpu_name": gpu}
    )
    found = expected_time.estimate(config, archives, pending, None)
    assert expected_time.expected_line(found, pending, None) == (
        "Expected: no estimate; no archived study ran these jobs on a machine like this one "
        "(Other CPU, 64 logical CPUs, no GPU)."
    )


def test_the_time_left_is_said_as_each_timed_record_appears(tmp_path):
    first, second, third = (str(tmp_path / f"{name}.json") for name in ("a", "b", "c"))
    expected = {first: (120.0, "archive"), second: (60.0, "archive"), third: None}
    assert expected_time.time_left(expected, set()) == "about 3 min left (0 of 3 timed jobs done; 1 more not estimated)"
    said = []
    watcher = expected_time.follow(expected, said.append, every_s=0.01)
    Path(first).write_text("{}")
    deadline = time.monotonic() + 10
    while not said and time.monotonic() < deadline:
        time.sleep(0.01)
    assert said == ["about 1 min left (1 of 3 timed jobs done; 1 more not estimated)"]
    for path in (second, third):
        Path(path).write_text("{}")
    watcher.join(timeout=10)
    assert not watcher.is_alive() and said[-1] == "about 0 s left (3 of 3 timed jobs done)"
