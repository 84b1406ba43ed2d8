"""Aggregation and rendering: right numbers, a golden Markdown file, identical bytes on reruns."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from conftest import TEST_DATA, run_script, synthetic_record, synthetic_study, synthetic_sweeps
from render_report import render_markdown
from report_data import crossovers, flops_per_step, ladders, records_to_frame, summarize, sweep_frame, targets
from run_record import SWEEP_SCHEMA, RecordError, read_record, validate_record, write_record, write_sweep

GOLDEN = TEST_DATA / "golden_report.md"


def test_synthetic_records_are_valid():
    for record in synthetic_study():
        validate_record(record)
    for sweep in synthetic_sweeps():
        validate_record(sweep, schema_name=SWEEP_SCHEMA)


def test_summary_medians_spread_and_counts():
    summary = summarize(records_to_frame(synthetic_study()))
    seed = summary[summary["variant"] == "seed"].set_index("step")
    torch, keras = seed.loc["torch-cpu"], seed.loc["keras-cpu"]
    assert (torch.median_s, torch.min_s, torch.max_s, torch.runs, torch.converged) == (7.0, 6.0, 8.0, 3, 2)
    assert (keras.median_s, keras.min_s, keras.max_s, keras.runs, keras.converged) == (4.0, 3.0, 5.0, 3, 3)
    assert torch.median_epoch_s == pytest.approx(0.012) and torch.first_epoch_s == 0.5
    assert torch.step_s == pytest.approx(1e-3)  # median later epoch / 12 steps
    assert "torch-cuda" not in seed.index  # skipped runs are never timed
    # Ladder order, not alphabetical: seed, sync_free, compiled.
    assert list(summary[summary["step"] == "torch-cpu"]["variant"]) == ["seed", "sync_free", "compiled"]


def test_ladder_speedups_and_spread():
    ladder = ladders(summarize(records_to_frame(synthetic_study())))
    seed, sync_free, compiled = ladder["torch-cpu"]
    assert seed.vs_seed == pytest.approx(1.0) and seed.vs_previous is None
    assert sync_free.vs_seed == pytest.approx(4.0) and sync_free.vs_previous == pytest.approx(4.0)
    assert compiled.step_s == pytest.approx(0.15e-3)  # median of 0.1 and 0.2 ms
    assert compiled.vs_previous == pytest.approx(0.25 / 0.15)
    assert compiled.cv == pytest.approx(0.4714, abs=1e-4)  # stdev(0.1, 0.2) / 0.15
    assert seed.first_epoch_excess_s == pytest.approx(0.5 - 0.012)
    assert ladder["numpy-cpu"][0].vs_seed is None  # the reference has no seed to compare with


def test_targets_are_judged_from_the_medians():
    verdicts = {t.name: (t.verdict, t.detail) for t in targets(ladders(summarize(records_to_frame(synthetic_study()))))}
    five = verdicts["best torch-cpu variant ≥ 5× faster per step than torch-cpu seed"]
    assert five == ("met", "compiled 150.0 µs/step vs seed 1000.0 µs/step: 6.67×")
    numpy = verdicts["best torch-cpu variant within 1.5× of the NumPy reference per step"]
    assert numpy == ("not met", "compiled 150.0 µs/step vs NumPy 80.0: 1.88×")
    assert verdicts["best keras-cpu variant ≥ 10× faster per step than keras-cpu seed"][0] == "not met"
    assert verdicts["torch-cuda graphed ≥ 50× faster per step than torch-cuda seed"][0] == "not measured"


def test_flops_per_step_of_the_question_shape():
    assert flops_per_step(64, 20) == 18 * 64 * 20 + 10 * 81


def test_crossovers_are_found_from_the_sweep():
    found = {c.hidden_units: c for c in crossovers(sweep_frame(synthetic_sweeps()))}
    assert found[20].batch_size == 4096
    assert found[4].batch_size is None and found[4].largest_batch == 4096
    assert crossovers(sweep_frame(synthetic_sweeps()[:1])) == []  # one device: nothing to compare


def test_report_states_ratios_and_lists_runs_to_look_at():
    text = render_markdown(synthetic_study())
    assert "| torch-cpu / keras-cpu | 1.22 | 1.75 |" in text  # asker 11/9, ours 7/4
    assert "torch-cpu took 7.00 s, 1.75× slower than keras-cpu (4.00 s)." in text
    assert "| torch-cpu-seed-1 | not converged | train R² -5.3500 |" in text
    assert "| torch-cuda-seed-1 | skipped | no CUDA device: test |" in text
    assert "| torch-cuda | 17 | skipped | – | 0/1 | – |" in text


def test_report_states_ladder_keras_floor_and_crossovers():
    text = render_markdown(synthetic_study(), synthetic_sweeps())
    assert "- torch-cpu: from 1000.0 µs per step (seed) to 150.0 µs (compiled), 6.67× faster" in text
    assert "a step still costs 1600.0 µs, 1.25× the seed's speed" in text
    assert "- Width 20: cuda is faster than cpu from batch 4096 on." in text
    assert "- Width 4: cuda was never faster than cpu, up to batch 4096." in text
    assert "23,850 FLOPs per step; floor 0.239 µs." in text  # at the cpu sweep's 100 GFLOP/s
    assert "| `compiled` | 150.0 | 100.0–200.0 | 47.1% ⚠ |" in text


def test_report_without_a_gpu_sweep_says_so():
    skipped = synthetic_sweeps()[1] | {"status": "skipped", "reason": "no CUDA device: test", "points": []}
    text = render_markdown(synthetic_study(), [synthetic_sweeps()[0], skipped])
    assert "Crossover map: not measured on cuda (no CUDA device: test), so no crossover is stated." in text
    assert "Width 20" not in text


def test_report_matches_the_golden_file():
    text = render_markdown(synthetic_study(), synthetic_sweeps())
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "report changed; rerun with UPDATE_GOLDEN=1 and review the diff"


def test_hosts_are_reported_apart():
    records = [*synthetic_study(), synthetic_record("torch", "cpu", 4, 1.0, host="other-node")]
    text = render_markdown(records)
    assert "### Host `bench-host` (15 runs)" in text and "### Host `other-node` (1 runs)" in text
    # Each host is summarised on its own: the other node's 1 s run is not averaged into 6/7/8 s.
    bench, other = text.split("# Results on host `bench-host`")[1].split("# Results on host `other-node`")
    assert "| torch-cpu | 11 | 7.00 | 6.00–8.00 | 3/3 | 2/3 |" in bench
    assert "| torch-cpu | 11 | 1.00 | 1.00–1.00 | 1/1 | 1/1 |" in other


def test_machines_sharing_a_host_name_are_reported_apart():
    # VMs and containers are often all called the same: the hardware tells them apart.
    gpu_machine = synthetic_record("torch", "cpu", 4, 1.0)
    gpu_machine["environment"]["gpu_name"] = "NVIDIA H200"
    text = render_markdown([*synthetic_study(), gpu_machine])
    assert "# Results on host `bench-host (Test CPU, 2 logical CPUs, no GPU)`" in text
    assert "# Results on host `bench-host (Test CPU, 2 logical CPUs, NVIDIA H200)`" in text


def test_same_records_give_identical_files(tmp_path):
    paths = []
    for i, record in enumerate(synthetic_study()):
        paths.append(tmp_path / "runs" / f"{i}.json")
        write_record(record, paths[-1])
    sweeps = []
    for sweep in synthetic_sweeps():
        sweeps.append(tmp_path / "sweep" / f"{sweep['device']}.json")
        write_sweep(sweep, sweeps[-1])
    outputs = []
    names = ("report.md", "timings.parquet", "report/t.png", "report/x.png")
    for name in ("a", "b"):
        out = tmp_path / name
        args = [
            "--report",
            out / "report.md",
            "--timings",
            out / "timings.parquet",
            "--plot",
            out / "report/t.png",
            "--crossover-plot",
            out / "report/x.png",
            "--sweeps",
            *sweeps,
            "--",
        ]
        result = run_script("render_report.py", *args, *reversed(paths) if name == "b" else paths)
        assert result.returncode == 0, result.stderr
        outputs.append([(out / f).read_bytes() for f in names])
    assert outputs[0] == outputs[1]
    assert "](report/t.png)" in outputs[0][0].decode() and "](report/x.png)" in outputs[0][0].decode()
    frame = pd.read_parquet(tmp_path / "a" / "timings.parquet")
    assert len(frame) == 15 and list(frame["run_id"][:3]) == [
        "keras-cpu-seed-1",
        "keras-cpu-seed-2",
        "keras-cpu-seed-3",
    ]


def test_invalid_record_is_named_and_nothing_is_written(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    write_record(synthetic_record("torch", "cpu", 1, 1.0), good)
    broken = synthetic_record("torch", "cpu", 2, 1.0)
    broken["timings"]["fit_predict_s"] = "fast"
    bad.write_text(json.dumps(broken))
    report = tmp_path / "report.md"
    result = run_script(
        "render_report.py",
        "--report",
        report,
        "--timings",
        tmp_path / "t.parquet",
        "--plot",
        tmp_path / "t.png",
        good,
        bad,
    )
    assert result.returncode == 1
    assert f"{bad}: field timings/fit_predict_s: 'fast' is not of type 'number'" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "good.json"]


def test_truncated_record_file_is_named(tmp_path):
    path = tmp_path / "torch-cpu-seed-1.json"
    path.write_text('{"record_type": ')
    with pytest.raises(RecordError, match=r"torch-cpu-seed-1\.json: not a readable JSON record"):
        read_record(path)


def test_duplicate_runs_are_refused(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        write_record(synthetic_record("torch", "cpu", 1, 1.0), path)
    result = run_script(
        "render_report.py",
        "--report",
        tmp_path / "r.md",
        "--timings",
        tmp_path / "t.parquet",
        "--plot",
        tmp_path / "t.png",
        a,
        b,
    )
    assert result.returncode == 1 and "run torch-cpu-seed-1 is also in" in result.stderr


def test_record_writer_refuses_an_invalid_record(tmp_path):
    record = synthetic_record("torch", "cpu", 1, 1.0)
    record["status"] = "great"
    with pytest.raises(RecordError, match="field status: 'great' is not one of"):
        write_record(record, tmp_path / "r.json")
    assert list(tmp_path.iterdir()) == []


def test_noisy_rungs_are_called_out():
    text = render_markdown(synthetic_study())
    assert "- Spread too large to compare reliably: torch-cpu compiled (CV 47.1%); rerun with more repeats." in text


def test_failed_runs_come_with_the_command_that_reruns_them():
    records = [*synthetic_study(), synthetic_record("torch", "cpu", 4, status="failed", reason="RuntimeError: x")]
    text = render_markdown(records)
    assert "| torch-cpu-seed-4 | failed | RuntimeError: x |" in text
    assert "`snakemake --forcerun results/runs/torch-cpu-seed-4.json`" in text
