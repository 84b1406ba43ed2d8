"""A study beside one busy core (config/busy.yaml): its runs are a machine of their own in the report, judged by the
idle runs' canary, and the report's first screen says whether the asker's order reproduces and what one thread does."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from helpers import ROOT, synthetic_record
from tiny_mlp_bench.report import claims
from tiny_mlp_bench.report.busy_archive import BusyArchiveError, choose, quote
from tiny_mlp_bench.report.markdown import render_markdown
from tiny_mlp_bench.report.model import build_report


def runs(framework: str, variant: str, condition: str, times_s, step_ms: float) -> list[dict]:
    """Runs of a rung with these times to a result, each step a little slower than the last run's."""
    found = []
    for repeat, seconds in enumerate(times_s, start=1):
        record = synthetic_record(
            framework, "cpu", repeat, seconds, variant=variant, step_ms=step_ms * (1 + repeat / 50)
        )
        if condition == "busy":
            record["identity"] |= {"condition": "busy", "run_id": f"{framework}-cpu-{variant}-busy-{repeat}"}
            record["neighbour"] = {"core": 1, "cpu_s": 9.6, "wall_s": 10.0, "cpu_share": 0.96}
        found.append(record)
    return found


FIVE = (1.0, 1.02, 1.04, 1.06, 1.08)


def study() -> list[dict]:
    """Idle, Keras 2 1.5x torch; beside a busy core torch's pool 2.4x slower and Keras 2's 1.2x, so that Keras wins
    there, while one thread is immune to the busy core."""
    return [
        *runs("torch", "seed", "idle", [6 * t for t in FIVE], 0.8),
        *runs("tf_keras", "seed", "idle", [9 * t for t in FIVE], 1.2),
        *runs("torch", "one_thread", "idle", [6.1 * t for t in FIVE], 0.81),
        *runs("tf_keras", "one_thread", "idle", [9.1 * t for t in FIVE], 1.21),
        *runs("torch", "seed", "busy", [14.4 * t for t in FIVE], 1.92),
        *runs("tf_keras", "seed", "busy", [10.8 * t for t in FIVE], 1.44),
        *runs("torch", "one_thread", "busy", [6.2 * t for t in FIVE], 0.82),
        *runs("tf_keras", "one_thread", "busy", [9.2 * t for t in FIVE], 1.22),
    ]


def test_busy_runs_are_a_machine_of_their_own_and_the_answer_compares_the_conditions():
    report = build_report(study())
    assert [m.label for m in report.machines] == ["bench-host", "bench-host, beside one busy core"]
    busy = report.busy
    assert busy.host == "bench-host" and busy.neighbour_share == (0.96, 0.96)
    idle_keras, busy_keras = busy.keras_over_torch
    assert 1.45 < idle_keras.result.estimate < 1.55 and idle_keras.result.resolved
    assert 0.7 < busy_keras.result.estimate < 0.8 and busy.askers_order is True
    torch_slowed = dict((rung.label, views) for rung, views in busy.busy_over_idle)["torch `seed`"]
    assert 2.3 < torch_slowed.step.estimate < 2.5
    torch_one_thread = busy.one_thread[0]
    assert torch_one_thread[0] == "torch" and torch_one_thread[2].step.estimate < 0.5  # busy: one thread wins


def test_the_first_screen_says_the_order_beside_the_busy_core_and_what_a_user_should_do():
    report = build_report(study())
    lines = claims.busy_lines(report.busy)
    assert lines[0].startswith("Beside one busy core, Keras 2 took 0.7")
    assert lines[0].endswith("the asker's order, Keras faster than torch, reproduces beside a busy core.")
    assert "torch `seed` 2.4" in lines[1]
    advice = next(line for line in lines if line.startswith("For a model this small on a machine that does other"))
    assert "it made no loop slower here, and beside the busy core it took torch 0.4" in advice
    assert lines[-1].startswith("One busy core is 1 of this machine's 2 logical CPUs: the size of what it does depends")
    assert lines[-1].endswith("The busy loop got 96% of its core.")
    text = render_markdown(report)
    assert text.index("## Beside one busy core") < text.index("## Host `bench-host`")
    assert re.search(r"\| Keras 2 `seed` / torch `seed` +\| to a result +\|", text)


def test_a_study_without_busy_runs_has_no_busy_section_and_no_advice_without_evidence():
    idle_only = [r for r in study() if r["identity"]["condition"] == "idle"]
    report = build_report(idle_only)
    assert report.busy is None and "Beside one busy core" not in render_markdown(report)
    # One thread no faster beside the busy core: no advice.
    same = [r for r in study() if not (r["identity"]["condition"] == "busy" and r["identity"]["variant"] == "seed")]
    same += runs("torch", "seed", "busy", [6.2 * t for t in FIVE], 0.82) + runs(
        "tf_keras", "seed", "busy", [9.2 * t for t in FIVE], 1.22
    )
    lines = claims.busy_lines(build_report(same).busy)
    assert not any("use one CPU thread" in line for line in lines)


def write_archive(archives, name: str, records: list[dict], kind: str = "busy", day="2026-01-01", cpu=None):
    """An archive of ``kind`` holding ``records``, started on ``day``, on the CPU model ``cpu`` where given."""
    (archives / name / "runs").mkdir(parents=True)
    (archives / name / "provenance.json").write_text(json.dumps({"study": {"kind": kind}}))
    for record in records:
        record["identity"]["started_at"] = f"{day}T00:00:00+00:00"
        record["environment"]["cpu_model"] = cpu or record["environment"]["cpu_model"]
        (archives / name / "runs" / f"{record['identity']['run_id']}.json").write_text(json.dumps(record))


def first_screen_busy_line(report) -> str | None:
    text = render_markdown(report)
    return next((line for line in text.splitlines() if line.startswith("- **Beside one busy core**")), None)


def test_a_default_studys_first_screen_quotes_the_newest_busy_core_archive_of_its_machine_kind(tmp_path):
    archives = tmp_path / "archive"
    write_archive(archives, "older", study(), day="2026-01-01")
    write_archive(archives, "newer", study(), day="2026-02-01")
    write_archive(archives, "newest-elsewhere", study(), day="2026-03-01", cpu="Another CPU")
    write_archive(archives, "idle-study", [r for r in study() if r["identity"]["condition"] == "idle"], "default")
    offered = choose("auto", archives)
    assert [folder.name for folder in offered] == ["newer", "newest-elsewhere", "older"]
    idle_here = [r for r in study() if r["identity"]["condition"] == "idle"]

    report = build_report(idle_here, busy_archives=tuple(map(quote, offered)))
    assert {label: found.archive for label, found in report.archived_busy.items()} == {"bench-host": "newer"}
    line = first_screen_busy_line(report)
    assert line.startswith(
        "- **Beside one busy core**: the archive `newer` (2026-02-01, this machine kind, 5+ runs a side), one study, "
        "found: beside one busy core, Keras 2 took 0.7"
    )
    assert line.endswith("the asker's order, Keras faster than torch, reproduces beside a busy core.")

    elsewhere = build_report(idle_here, busy_archives=(quote(archives / "newest-elsewhere"),))
    assert elsewhere.archived_busy == {} and first_screen_busy_line(elsewhere) == (
        "- **Beside one busy core**: no archived busy-core study ran on this machine kind; `make busy` runs one."
    )
    # Not asked for (busy_answer_archive: none), or a busy-core study itself: no line.
    assert first_screen_busy_line(build_report(idle_here)) is None
    busy_study = build_report(study(), busy_archives=tuple(map(quote, offered)))
    assert not busy_study.busy_quote_asked and first_screen_busy_line(busy_study) is None


def test_a_named_busy_core_archive_must_exist_and_hold_both_loops_in_both_conditions(tmp_path):
    archives = tmp_path / "archive"
    assert choose("auto", archives) == [] and choose("none", archives) is None
    write_archive(archives, "busy", study())
    write_archive(archives, "torch-only", [r for r in study() if r["identity"]["framework"] == "torch"])
    assert choose("busy", archives) == [archives / "busy"] and choose("auto", archives) == [archives / "busy"]
    with pytest.raises(BusyArchiveError, match=r"'busy_answer_archive': .*torch-only does not hold completed runs"):
        choose("torch-only", archives)
    with pytest.raises(BusyArchiveError, match=r"'busy_answer_archive': no archive .*/nope"):
        choose("nope", archives)


def test_choosing_the_quoted_archives_builds_no_report(tmp_path):
    """Snakemake chooses them while it parses the workflow: from the records' identities, with no report's stack."""
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tiny_mlp_bench.report import busy_archive, gpu_archive\n"
        f"archives = Path({str(ROOT / 'results' / 'archive')!r})\n"
        "assert busy_archive.choose('auto', archives) and gpu_archive.choose('auto', archives)\n"
        "print(sorted(m for m in ('pandas', 'scipy', 'tiny_mlp_bench.report.model') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"
