"""The compare command: this study against an archive, per rung and view, a change called only beyond the noise."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_command, synthetic_record, table_rows
from tiny_mlp_bench.records import write_record
from tiny_mlp_bench.report.compare import NOISE_BAND, NoiseBand, compare, noise_band


def runs(variant: str, steps_ms: list[float], framework: str = "torch") -> list[dict]:
    return [
        synthetic_record(framework, "cpu", repeat, 2.0, variant=variant, step_ms=ms)
        for repeat, ms in enumerate(steps_ms, start=1)
    ]


ARCHIVE = [
    *runs("seed", [1.0, 1.1, 0.9, 1.05, 0.95]),
    *runs("sync_free", [0.25, 0.26, 0.24, 0.25, 0.27]),
    *runs("compiled", [0.1, 0.2, 0.15, 0.12, 0.18]),
    *runs("resident", [1.0, 1.1, 0.9]),
    *runs("reference", [0.08], framework="numpy"),
    *runs("seed", [2.0, 2.0], framework="keras"),
    synthetic_record("torch", "cuda", 1, 2.0, variant="resident", step_ms=0.3),
]
# This study's day ran every rung twice as fast: the torch seed took half the archive's time per step.
THIS = [
    *runs("seed", [0.5, 0.55, 0.45, 0.52, 0.48]),
    *runs("sync_free", [0.5, 0.52, 0.49, 0.51, 0.5]),  # 4x the archive's ratio to the seed: slower
    *runs("compiled", [0.05, 0.1, 0.075, 0.06, 0.09]),  # half the archive's time, as the seed: no change
    *runs("resident", [0.25, 0.275, 0.225]),  # half the archive's ratio, but 3 runs against 3 cannot resolve it
    *runs("reference", [0.04], framework="numpy"),  # one run a side
    synthetic_record("torch", "cuda", 1, 2.0, variant="resident", step_ms=0.3),  # no torch seed on cuda
]


def test_a_change_is_judged_by_each_rungs_ratio_to_its_own_studys_torch_seed():
    found = {(c.pair, c.variant): c for c in compare(THIS, ARCHIVE)}
    seed = found["torch-cpu", "seed"]
    assert seed.verdict("step", None) == "the yardstick: raw times, never judged"
    assert seed.ratio("step").estimate == pytest.approx(0.5, rel=0.05)  # the day, shown
    sync_free = found["torch-cpu", "sync_free"]
    assert sync_free.verdict("step", None) == "slower" and sync_free.ratio("step").estimate == pytest.approx(4, 0.05)
    assert sync_free.ratio("step").p_value == pytest.approx(2 / 252)  # the least p at 5 runs against 5
    # Half the archive's time, as the whole day was: no change.
    assert found["torch-cpu", "compiled"].verdict("step", None) == "not resolved by 5 and 5 runs"
    # Every run of one side below every run of the other, yet the exact test's p is 0.10: nothing is bounded.
    resident = found["torch-cpu", "resident"]
    assert resident.verdict("step", None) == "not resolved by 3 and 3 runs"
    assert resident.ratio("step").p_value == pytest.approx(0.1)
    assert resident.ratio("step").low is None and resident.ratio("step").high is None
    assert found["numpy-cpu", "reference"].verdict("step", None) == "not resolved by 1 and 1 runs"
    keras = found["keras-cpu", "seed"]
    assert keras.verdict("step", None) == "only in the archive" and keras.ratio("step") is None
    cuda = found["torch-cuda", "resident"]
    assert cuda.verdict("step", None) == "no torch seed on cuda on both sides to judge by" and not cuda.ratio("step")
    # Time to result beside per step: every synthetic run took 2 s to a result, on both sides.
    assert sync_free.ratio("result").estimate == pytest.approx(1.0)


def test_a_resolved_change_inside_the_noise_band_is_not_called():
    sync_free = next(c for c in compare(THIS, ARCHIVE) if (c.pair, c.variant) == ("torch-cpu", "sync_free"))
    assert sync_free.verdict("step", NoiseBand(5.0, "two studies")) == "within the noise band (×5.00)"
    assert sync_free.verdict("step", NoiseBand(3.0, "two studies")) == "slower"  # 4 lies outside 1/3 to 3


def test_the_noise_band_is_the_largest_change_in_a_ratio_to_the_seed_less_compiled_rungs():
    found = noise_band(compare(THIS, ARCHIVE), ({"name": "a"}, {"name": "b"}))
    # sync_free's 4x per step is the largest; compiled (the cache timed) and the yardstick itself are left out.
    assert found["band"] == pytest.approx(4.0, rel=0.05)
    assert not any("compiled" in rung or "`seed`" in rung for rung in found["ratios"])
    assert found["ratios"]["torch-cpu `sync_free` result"] == pytest.approx(1.0)


def test_the_projects_noise_band_names_its_studies_and_docs_method_names_it():
    band = NoiseBand.read(NOISE_BAND)
    assert band is not None and band.ratio > 1
    method = (Path(__file__).parents[1] / "docs" / "method.md").read_text()
    assert "results/archive/noise-band.json" in method
    assert all(name in method for name in band.source.split(" and "))


def write_runs(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True)
    for record in records:
        write_record(record, folder / f"{record['identity']['run_id']}.json")
    return folder


def test_the_command_writes_a_row_per_rung_and_view(tmp_path):
    archive = write_runs(tmp_path / "archive" / "runs", ARCHIVE)
    this = write_runs(tmp_path / "results" / "runs", THIS)
    result = run_command("compare", archive, "--this", this)
    assert result.returncode == 0, result.stderr
    steps = result.stdout.split("## Keras's pause at the end of fit")[0]
    rows = {(row[0], row[1]): row[2:] for row in table_rows(steps)}
    seed = rows["torch-cpu `seed`", "per step"]
    assert (
        seed[1] == "5" and seed[3] == "5" and seed[4] == "0.50" and seed[7] == "the yardstick: raw times, never judged"
    )
    sync_free = rows["torch-cpu `sync_free`", "per step"]
    assert sync_free[4] == "4.00" and sync_free[6] == "0.008" and sync_free[7] == "slower"  # beyond the noise band
    assert rows["torch-cpu `resident`", "per step"][5:] == [
        "unbounded–unbounded",
        "0.100",
        "not resolved by 3 and 3 runs",
    ]
    assert rows["keras-cpu `seed`", "per step"] == [
        "–",
        "0",
        "2.00 ms (2.00–2.00)",
        "2",
        "–",
        "–",
        "–",
        "only in the archive",
    ]
    assert "the noise band, ×" in steps


def with_fit_end(records: list[dict], pauses_s: list[float]) -> list[dict]:
    """Keras records from after fit_end was timed: each pause inside its fit."""
    for record, pause in zip(records, pauses_s, strict=True):
        record["timings"]["phases_s"]["fit"] += pause
        record["timings"]["phases_s"]["fit_end"] = pause
    return records


def test_the_command_shows_each_keras_rungs_pause_at_the_end_of_fit(tmp_path):
    # Keras 2 paused for seconds at the end of fit in two of three runs; the archive is from before fit_end.
    this_keras_2 = with_fit_end(runs("seed", [2.0, 2.0, 2.0], framework="tf_keras"), [0.05, 12.2, 20.2])
    archive = write_runs(tmp_path / "archive" / "runs", [*ARCHIVE, *runs("seed", [2.0], framework="tf_keras")])
    this = write_runs(tmp_path / "results" / "runs", [*THIS, *this_keras_2])
    result = run_command("compare", archive, "--this", this)
    assert result.returncode == 0, result.stderr
    steps, pauses = result.stdout.split("## Keras's pause at the end of fit")
    keras_2_steps = next(row for row in table_rows(steps) if row[:2] == ["tf_keras-cpu `seed`", "per step"])
    assert keras_2_steps[2:6] == ["2.00 ms (2.00–2.00)", "3", "2.00 ms (1 run)", "1"]  # as before
    # Only the Keras rungs, this study's first; a dash where a side's records have no fit_end.
    assert table_rows(pauses)[2:] == [
        ["tf_keras-cpu `seed`", "12.200", "0.050–20.200", "–", "–"],
        ["keras-cpu `seed`", "–", "–", "–", "–"],
    ]


def test_a_folder_without_records_is_named(tmp_path):
    archive = write_runs(tmp_path / "archive" / "runs", ARCHIVE)
    (tmp_path / "empty").mkdir()
    result = run_command("compare", archive, "--this", tmp_path / "empty")
    assert result.returncode == 1
    assert f"error: {tmp_path / 'empty'}: no run records (*.json) here" in result.stderr
