"""Aggregation and rendering: right numbers, a golden Markdown file, identical bytes on reruns."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from conftest import TEST_DATA, run_script, synthetic_record, synthetic_study
from render_report import records_to_frame, render_markdown, summarize
from run_record import RecordError, read_record, validate_record, write_record

GOLDEN = TEST_DATA / "golden_report.md"


def test_synthetic_records_are_valid():
    for record in synthetic_study():
        validate_record(record)


def test_summary_medians_spread_and_counts():
    summary = summarize(records_to_frame(synthetic_study())).set_index("step")
    torch, keras = summary.loc["torch-cpu"], summary.loc["keras-cpu"]
    assert (torch.median_s, torch.min_s, torch.max_s, torch.runs, torch.converged) == (7.0, 6.0, 8.0, 3, 2)
    assert (keras.median_s, keras.min_s, keras.max_s, keras.runs, keras.converged) == (4.0, 3.0, 5.0, 3, 3)
    assert torch.median_epoch_s == 0.01 and torch.first_epoch_s == 0.5
    assert "torch-cuda" not in summary.index  # skipped runs are never timed


def test_report_states_ratios_and_lists_runs_to_look_at():
    text = render_markdown(synthetic_study())
    assert "| torch-cpu / keras-cpu | 1.22 | 1.75 |" in text  # asker 11/9, ours 7/4
    assert "torch-cpu took 7.00 s, 1.75× slower than keras-cpu (4.00 s)." in text
    assert "| torch-cpu-seed-1 | not converged | train R² -5.3500 |" in text
    assert "| torch-cuda-seed-1 | skipped | no CUDA device: test |" in text
    assert "| torch-cuda | 17 | skipped | – | 0/1 | – |" in text


def test_report_matches_the_golden_file():
    text = render_markdown(synthetic_study())
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "report changed; rerun with UPDATE_GOLDEN=1 and review the diff"


def test_hosts_are_reported_apart():
    records = [*synthetic_study(), synthetic_record("torch", "cpu", 4, 1.0, host="other-node")]
    text = render_markdown(records)
    assert "### Host `bench-host` (8 runs)" in text and "### Host `other-node` (1 runs)" in text


def test_same_records_give_identical_files(tmp_path):
    paths = []
    for i, record in enumerate(synthetic_study()):
        paths.append(tmp_path / "runs" / f"{i}.json")
        write_record(record, paths[-1])
    outputs = []
    for name in ("a", "b"):
        out = tmp_path / name
        args = ["--report", out / "report.md", "--timings", out / "timings.parquet", "--plot", out / "report/t.png"]
        result = run_script("render_report.py", *args, *reversed(paths) if name == "b" else paths)
        assert result.returncode == 0, result.stderr
        outputs.append([(out / f).read_bytes() for f in ("report.md", "timings.parquet", "report/t.png")])
    assert outputs[0] == outputs[1]
    assert "](report/t.png)" in outputs[0][0].decode()
    frame = pd.read_parquet(tmp_path / "a" / "timings.parquet")
    assert len(frame) == 8 and list(frame["run_id"][:3]) == ["keras-cpu-seed-1", "keras-cpu-seed-2", "keras-cpu-seed-3"]


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
    with pytest.raises(RecordError, match=r"torch-cpu-seed-1\.json: not a readable JSON run record"):
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
