"""Archives: packing a finished study, refusing what cannot be traced, verifying anywhere, and the
archived GPU answer a report quotes.

Each test packs a synthetic study in a throwaway git repository holding a copy of the workflow, so
commits, modified trees and later code changes are real.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from rocrate.rocrate import ROCrate

import tiny_mlp_bench
from helpers import (
    ROOT,
    copy_workflow,
    synthetic_probes,
    synthetic_record,
    synthetic_study,
    synthetic_sweeps,
    write_study,
)
from tiny_mlp_bench.archive.crate import PROFILES
from tiny_mlp_bench.archive.layout import RECORD_FOLDERS, ArchiveError
from tiny_mlp_bench.archive.manifest import check_manifest, write_manifest
from tiny_mlp_bench.archive.packing import pack, reseal, unused_name
from tiny_mlp_bench.archive.rendering import render, render_command
from tiny_mlp_bench.archive.snakemake_logs import NONE_FOUND, record_span, study_logs
from tiny_mlp_bench.archive.verifying import verify
from tiny_mlp_bench.report.gpu_archive import GpuArchiveError, choose


def git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def write_records(folder, commit: str) -> None:
    """The synthetic study's records, as the given commit would have made them."""
    kinds = {"runs": synthetic_study(), "sweep": synthetic_sweeps(), "probes": synthetic_probes()}
    for kind, records in kinds.items():
        (folder / kind).mkdir(parents=True)
        for number, record in enumerate(records):
            record["environment"]["git_commit"] = commit
            name = record["identity"]["run_id"] if kind == "runs" else f"{kind}-{number}"
            (folder / kind / f"{name}.json").write_text(json.dumps(record))


@pytest.fixture(scope="module")
def finished_study(tmp_path_factory):
    """A git repository with the workflow committed and a finished synthetic study in results/ and logs/,
    made and rendered once for the module: each test gets a copy of it (``study``)."""
    (repo := tmp_path_factory.mktemp("finished") / "repo").mkdir()
    copy_workflow(repo)  # the lock files in requirements/ too
    (repo / ".gitignore").write_text("results/*\n!results/archive/\nlogs/\n__pycache__/\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "workflow")
    results = repo / "results"
    write_records(results, git(repo, "rev-parse", "HEAD").strip())
    (results / "config.yaml").write_text("epochs: 4\n")
    (repo / "logs" / "train").mkdir(parents=True)
    (repo / "logs" / "train" / "torch-cpu-seed-1.log").write_text("epoch 4/4\n")
    render(repo, results, render_command(results))  # what the render_report rule made
    return repo


@pytest.fixture
def study(finished_study, tmp_path):
    """A copy of the finished study of its own for one test, .git, file modes and times kept, as a moved clone."""
    return shutil.copytree(finished_study, tmp_path / "repo", symlinks=True)


def archive(repo, **options):
    return pack(repo, repo / "results" / "archive", name="study", **options)


def commit_change(repo, path: str, text: str) -> None:
    (repo / path).write_text((repo / path).read_text() + text)
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", f"change {path}")


@pytest.mark.slow
def test_pack_writes_records_code_provenance_crate_and_manifest(study):
    folder = archive(study)
    head = git(study, "rev-parse", "HEAD").strip()
    assert (folder / "runs" / "torch-cpu-seed-1.json").is_file() and (
        folder / "logs/train/torch-cpu-seed-1.log"
    ).is_file()
    assert (folder / "config.yaml").read_text() == "epochs: 4\n"
    assert (folder / "report.md").read_bytes() == (study / "results" / "report.md").read_bytes()
    with tarfile.open(folder / "workflow.tar.gz") as code:  # the code that rendered it, results/ left out
        assert code.extractfile("Snakefile").read() == (study / "Snakefile").read_bytes()
        assert "rules/report.smk" in code.getnames() and not any(n.startswith("results") for n in code.getnames())
    provenance = json.loads((folder / "provenance.json").read_text())
    made = len(synthetic_study()) + len(synthetic_sweeps()) + len(synthetic_probes())
    assert provenance["study"]["commit"] == head and provenance["study"]["commits"] == {head: made}
    assert provenance["study"]["kind"] == "default"  # a local study: no GPU study's log in it
    assert provenance["render"]["commit"] == head and provenance["render"]["tree_modified"] is False
    assert provenance["archive"] == "study" and (folder / "requirements" / "runtime.txt").is_file()
    # The manifest is what sha256sum itself checks, and covers every file but the notes.
    assert subprocess.run(["sha256sum", "--check", "--quiet", "MANIFEST.sha256"], cwd=folder).returncode == 0
    listed = {line.split("  ", 1)[1] for line in (folder / "MANIFEST.sha256").read_text().splitlines()}
    assert {"provenance.json", "ro-crate-metadata.json", "report/ladder.png", "timings.parquet"} <= listed
    assert {"report/numbers.json", "workflow.tar.gz"} <= listed
    # The rocrate library reads the crate back: the Workflow Run Crate profiles, the workflow, the run.
    crate = ROCrate(folder)
    assert set(PROFILES) <= {profile.id for profile in crate.root_dataset["conformsTo"]}
    assert crate.mainEntity.id == "workflow.tar.gz" and "ComputationalWorkflow" in crate.mainEntity.type
    assert crate.mainEntity["version"] == head
    (run,) = crate.get_by_type("CreateAction")
    assert run["instrument"] is crate.mainEntity
    assert "runs/torch-cpu-seed-1.json" in {entity.id for entity in run["result"]}
    assert "config.yaml" in {entity.id for entity in run["object"]}
    assert not list((study / "results" / "archive").glob(".*"))  # no partial folder left


@pytest.mark.slow
def test_pack_refuses_a_modified_tree_unless_told_and_then_says_so(study):
    (study / "rules" / "report.smk").write_text("# changed\n")
    with pytest.raises(ArchiveError, match=r"tracked files: rules/report.smk.*--allow-modified"):
        archive(study)
    assert list((study / "results" / "archive").iterdir()) == []
    folder = archive(study, allow_modified=True)
    rendered = json.loads((folder / "provenance.json").read_text())["render"]
    assert rendered["tree_modified"] is True and rendered["modified_files"] == ["rules/report.smk"]
    with pytest.raises(ArchiveError, match="rendered from a modified tree"):
        verify(folder)


@pytest.mark.slow
def test_pack_flags_records_made_in_a_modified_tree(study):
    record = study / "results" / "runs" / "keras-cpu-seed-2.json"
    made = json.loads(record.read_text())
    made["environment"]["git_commit"] += "-dirty"
    record.write_text(json.dumps(made))
    render(study, study / "results", render_command(study / "results"))
    with pytest.raises(ArchiveError, match=r"1 records were made from a modified tree \(runs/keras-cpu-seed-2.json\)"):
        archive(study)
    folder = archive(study, allow_modified=True)
    assert json.loads((folder / "provenance.json").read_text())["study"]["records_from_modified_tree"] == [
        "runs/keras-cpu-seed-2.json"
    ]


@pytest.mark.slow
def test_pack_refuses_records_the_report_was_not_made_from(study):
    stray = json.loads((study / "results" / "runs" / "torch-cpu-seed-1.json").read_text())
    stray["identity"] |= {"run_id": "torch-cpu-seed-9", "repeat": 9}
    (study / "results" / "runs" / "torch-cpu-seed-9.json").write_text(json.dumps(stray))
    with pytest.raises(ArchiveError, match=r"results/report\.md is not what this commit renders"):
        archive(study)
    assert list((study / "results" / "archive").iterdir()) == []


T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC).timestamp()


def snakemake_log(repo, start: float, end: float, text: str = "Finished job 0.\n"):
    """A log of a Snakemake invocation as Snakemake leaves it: named by its start in local time,
    last written at its end."""
    folder = repo / ".snakemake" / "log"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"{datetime.datetime.fromtimestamp(start).isoformat().replace(':', '')}.snakemake.log"
    log.write_text(text)
    os.utime(log, (end, end))
    return log


def write_json(path, record: dict, written: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    os.utime(path, (written, written))


def test_the_studys_snakemake_logs_are_those_of_invocations_that_ran_while_it_was_made(tmp_path, monkeypatch):
    # Snakemake names a log by its local time: in a zone 5:30 east of UTC, as India's.
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    try:
        results = tmp_path / "results"
        assert study_logs(tmp_path) == []  # no results, no .snakemake: none
        # An older run record says when it started, its file when it ended (written as its job ended); a
        # sweep record's load block says both; a probe's load block its start only (no zone: UTC).
        write_json(results / "runs" / "a.json", {"identity": {"started_at": "2026-01-01T00:01:00+00:00"}}, T0 + 300)
        times = {"started_at": "2026-01-01T00:04:00.000001+00:00", "ended_at": "2026-01-01T00:08:00+00:00"}
        write_json(results / "sweep" / "cpu.json", {"load": times}, time.time())
        write_json(results / "probes" / "p.json", {"load": {"started_at": "2026-01-01T00:06:00"}}, T0 + 600)
        assert record_span(results / "runs" / "a.json")[1].timestamp() == T0 + 300
        assert record_span(results / "probes" / "p.json")[1].timestamp() == T0 + 600
        (results / "report.md").write_text("# report\n")
        os.utime(results / "report.md", (T0 + 1200, T0 + 1200))
        # The records' span is 00:01 to 00:10 UTC, and the report was rendered at 00:20.
        snakemake_log(tmp_path, T0 - 3600, T0 - 1800)  # an earlier study's, ended before the records began
        ran = snakemake_log(tmp_path, T0 + 30.123456, T0 + 400)  # made the run record and the sweep
        rest = snakemake_log(tmp_path, T0 + 450, T0 + 620)  # made the probe
        during = "Job stats:\nThis was a dry-run (flag -n). The order of jobs does not reflect the order of execution."
        snakemake_log(tmp_path, T0 + 500, T0 + 501, during)  # a dry run while the study ran: never the study's
        rendered = snakemake_log(tmp_path, T0 + 1190, T0 + 1210)  # --forcerun render_report
        snakemake_log(tmp_path, T0 + 1500, T0 + 1501)  # after the report: a dry run, or nothing left to do
        (tmp_path / ".snakemake" / "log" / "notes.snakemake.log").write_text("not Snakemake's")
        assert [p.name for p in study_logs(tmp_path)] == [ran.name, rest.name, rendered.name]
        assert ran.name.endswith("T053030.123456.snakemake.log")  # 00:00:30 UTC is 05:30:30 there
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.slow
def test_pack_carries_the_snakemake_logs_of_the_study_and_no_other(study):
    results = study / "results"
    records = [path for kind in RECORD_FOLDERS for path in (results / kind).glob("*.json")]
    for path in records:  # written at 00:10 UTC: the end of a record that states none
        os.utime(path, (T0 + 600, T0 + 600))
    spans = [record_span(path) for path in records]
    began, ended = min(s for s, _ in spans).timestamp(), max(e for _, e in spans).timestamp()
    os.utime(results / "report.md", (ended + 60, ended + 60))
    snakemake_log(study, began - 7200, began - 3600)  # an earlier study's
    ran = snakemake_log(study, began - 30, ended + 70, "Finished job 0.\n1 of 1 steps (100%) done\n")
    dry_run = "This was a dry-run (flag -n). The order of jobs does not reflect the order of execution.\n"
    snakemake_log(study, ended + 600, ended + 601, dry_run)  # `snakemake -n` after the study
    folder = archive(study)
    archived = f"logs/snakemake/{ran.name}"
    assert sorted(p.name for p in (folder / "logs" / "snakemake").iterdir()) == [ran.name]
    assert (folder / archived).read_bytes() == ran.read_bytes()
    assert (folder / archived).stat().st_mtime == ran.stat().st_mtime  # its end kept
    provenance = json.loads((folder / "provenance.json").read_text())
    assert provenance["study"]["snakemake_logs"] == [archived] and NONE_FOUND not in provenance["notes"]
    listed = {line.split("  ", 1)[1] for line in (folder / "MANIFEST.sha256").read_text().splitlines()}
    assert archived in listed and "logs/train/torch-cpu-seed-1.log" in listed
    (run,) = ROCrate(folder).get_by_type("CreateAction")
    assert archived in {entity.id for entity in run["result"]}
    verify(folder)


@pytest.mark.slow
def test_pack_without_a_snakemake_log_still_packs_and_says_so(study):
    folder = archive(study)  # the study's repository has no .snakemake/
    provenance = json.loads((folder / "provenance.json").read_text())
    assert provenance["study"]["snakemake_logs"] == [] and provenance["notes"] == [NONE_FOUND]
    assert not (folder / "logs" / "snakemake").exists() and (folder / "logs/train/torch-cpu-seed-1.log").is_file()
    check_manifest(folder)


@pytest.mark.slow
def test_an_archive_with_the_numbers_old_name_is_resealed_under_todays(study):
    folder = archive(study)
    # Sealed by older code, an archive held the report's numbers as report/model.json.
    (folder / "report" / "numbers.json").rename(folder / "report" / "model.json")
    write_manifest(folder)
    reseal(folder, study)
    assert (folder / "report" / "numbers.json").is_file() and not (folder / "report" / "model.json").exists()
    assert "report/model.json" not in (folder / "MANIFEST.sha256").read_text()
    verify(folder)


@pytest.mark.slow
def test_a_reseal_quotes_a_gpu_answer_only_where_the_study_asked_for_one(study):
    folder = archive(study)
    write_gpu_archive(study / "results" / "archive", "gpu-study", gpu_host_records("2026-02-01"))
    config = folder / "config.yaml"
    config.write_text(config.read_text() + "gpu_answer_archive: none\n")  # as a busy-core study's config says
    write_manifest(folder)
    reseal(folder, study)
    assert not (folder / "gpu-archive").exists()
    assert "No archive was asked for one." in (folder / "report.md").read_text()
    verify(folder)


@pytest.mark.slow
def test_verify_re_renders_at_the_archive_commit_not_at_head(study):
    folder = archive(study)
    commit_change(study, "tiny_mlp_bench/report/report.md.j2", "\nA line that later code adds.\n")
    verify(folder)  # the archive's commit renders what it holds, whatever HEAD renders now
    git(study, "add", "-f", "results/archive")
    git(study, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "archive")
    done = subprocess.run(  # the study's own copy of the program, as its checkout runs it
        [sys.executable, "-m", "tiny_mlp_bench", "verify"], cwd=study, capture_output=True, text=True
    )
    assert done.returncode == 0 and f"ok      {folder}: numbers recomputed" in done.stdout, done.stdout + done.stderr


@pytest.mark.slow
def test_verify_names_the_first_file_that_differs(study):
    folder = archive(study)
    record = folder / "runs" / "torch-cpu-seed-2.json"
    record.write_text(record.read_text().replace('"repeat": 2', '"repeat": 2 '))
    with pytest.raises(ArchiveError, match=r"runs/torch-cpu-seed-2.json: its SHA-256 differs"):
        check_manifest(folder)
    record.unlink()
    with pytest.raises(ArchiveError, match=r"runs/torch-cpu-seed-2.json: listed in MANIFEST.sha256 but missing"):
        verify(folder)


@pytest.mark.slow
def test_verify_compares_bytes_only_where_the_versions_match(study):
    folder = archive(study)
    files = (
        "report.md, timings.parquet, report/timings.png, report/ladder.png, report/crossover.png, report/breakdown.png"
    )
    files += ", headline.csv"
    assert verify(folder) == f"numbers recomputed and equal; {files} byte for byte"
    chart = (folder / "report" / "ladder.png").read_bytes()
    (folder / "report" / "ladder.png").write_bytes((folder / "report" / "timings.png").read_bytes())
    write_manifest(folder)
    with pytest.raises(ArchiveError, match=r"report/ladder.png: differs from its re-rendering"):
        verify(folder)
    # Rendered elsewhere, with another matplotlib: the chart's bytes are its own, but the numbers must agree.
    (folder / "report" / "ladder.png").write_bytes(chart[:-1])
    set_version(folder, "matplotlib", "0.1")
    assert verify(folder).startswith("numbers recomputed and equal; bytes not compared (matplotlib 0.1 there, ")


def set_version(folder, package: str, version: str) -> None:
    """The archive's report as if rendered with another version of ``package``, manifest made again."""
    model = json.loads((folder / "report" / "numbers.json").read_text())
    model["versions"][package] = version
    (folder / "report" / "numbers.json").write_text(json.dumps(model))
    write_manifest(folder)


@pytest.mark.slow
def test_a_changed_record_fails_even_where_the_manifest_was_made_again(study):
    folder = archive(study)
    record = folder / "runs" / "torch-cpu-seed-2.json"
    changed = json.loads(record.read_text())
    changed["timings"]["phases_s"]["predict"] = 0.005
    record.write_text(json.dumps(changed))
    set_version(folder, "pandas", "0.1")  # rendered elsewhere: only the numbers are compared
    with pytest.raises(
        ArchiveError, match=r"numbers.json: model\.runs\[torch-cpu-seed-2\]\.predict_s is 0\.004 in the archive, 0\.005"
    ):
        verify(folder)


@pytest.mark.slow
def test_an_archive_copied_out_of_the_repository_verifies_without_git(study, tmp_path):
    elsewhere = tmp_path / "elsewhere" / "study"
    shutil.copytree(archive(study), elsewhere)
    no_git = tmp_path / "bin"  # a PATH on which no git is found
    no_git.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tiny_mlp_bench", "verify", str(elsewhere)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": str(no_git)},
    )
    assert done.returncode == 0 and f"ok      {elsewhere}: numbers recomputed" in done.stdout, done.stdout + done.stderr


def gpu_host_records(started: str, cpu: bool = True) -> list[dict]:
    """torch seed on cuda (17 s) and, with ``cpu``, on cpu (7 s) of one GPU host, as its archive holds them."""
    records = [synthetic_record("torch", "cuda", r, 17.0, host="gpu-host", step_ms=1.4) for r in (1, 2)]
    records += [synthetic_record("torch", "cpu", r, 7.0, host="gpu-host") for r in (1, 2)] if cpu else []
    for record in records:
        record["identity"]["started_at"] = f"{started}T00:00:00+00:00"
        if record["identity"]["device"] == "cuda":
            record["environment"]["gpu_name"] = "Test GPU"  # a cpu run names no GPU: it used none
    return records


def write_gpu_archive(archives, name: str, records: list[dict]) -> None:
    (archives / name / "runs").mkdir(parents=True)
    for record in records:
        (archives / name / "runs" / f"{record['identity']['run_id']}.json").write_text(json.dumps(record))


def test_the_newest_archive_with_torch_seed_on_cuda_is_chosen(tmp_path):
    archives = tmp_path / "archive"
    assert choose("auto", archives) is None  # no archives: none qualifies
    write_gpu_archive(archives, "older-gpu", gpu_host_records("2026-01-01"))
    write_gpu_archive(archives, "newer-cuda-only", gpu_host_records("2026-02-01", cpu=False))
    cpu_only = [r for r in gpu_host_records("2026-03-01") if r["identity"]["device"] == "cpu"]
    write_gpu_archive(archives, "newest-cpu-only", cpu_only)
    assert choose("auto", archives) == archives / "newer-cuda-only"  # its cuda numbers alone are quoted
    assert choose("older-gpu", archives) == archives / "older-gpu" and choose("none", archives) is None
    with pytest.raises(GpuArchiveError, match=r"newest-cpu-only does not hold a completed torch `seed` run on cuda"):
        choose("newest-cpu-only", archives)
    with pytest.raises(GpuArchiveError, match=r"'gpu_answer_archive': no archive .*/nope"):
        choose("nope", archives)


def render_without_cuda(study, *options: str) -> str:
    """results/report.md rendered as if this run's cuda side had not completed, with ``options``."""
    results = study / "results"
    for record in (results / "runs").glob("*-cuda-*.json"):
        record.unlink()
    command = render_command(results)
    cut = command.index("--")
    render(study, results, [*command[:cut], *options, *command[cut:]])
    return (results / "report.md").read_text()


@pytest.mark.slow
def test_a_report_without_cuda_quotes_the_archived_gpu_answer_and_packs_what_it_quotes(study):
    results = study / "results"
    write_gpu_archive(results / "archive", "gpu-study", gpu_host_records("2026-02-01"))
    # The archive's own verdict, its GPU over its own CPU: never its seconds beside this machine's.
    quoted = "The archive `gpu-study` (Test GPU, 2026-02-01), on its own machine: to a result, the original torch loop"
    report = render_without_cuda(study, "--gpu-archive", "archive/gpu-study")
    line = next(line for line in report.splitlines() if quoted in line)
    assert line.endswith("as long as on the same machine's CPU, but 2 runs a side cannot settle it.")
    assert "17.0 s" not in line and "per step" not in line
    folder = archive(study)
    packed = sorted(p.name for p in (folder / "gpu-archive" / "gpu-study" / "runs").iterdir())
    assert packed == [f"torch-{device}-seed-{r}.json" for device in ("cpu", "cuda") for r in (1, 2)]
    assert json.loads((folder / "provenance.json").read_text())["render"]["gpu_archive_quoted"] == "gpu-study"
    shutil.rmtree(results / "archive" / "gpu-study")  # the archive needs only what it packed
    assert verify(folder).endswith("byte for byte") and quoted in (folder / "report.md").read_text()


@pytest.mark.slow
def test_a_report_says_when_no_archive_has_a_gpu_answer_to_quote(study):
    report = render_without_cuda(study, "--no-archive-qualifies")
    assert "No archive holds a completed GPU run of it either." in report
    folder = archive(study)
    assert "--no-archive-qualifies" in json.loads((folder / "provenance.json").read_text())["render"]["command"]
    verify(folder)


@pytest.mark.slow
def test_a_report_quotes_a_busy_core_archive_and_its_archive_packs_what_it_quotes(study):
    results = study / "results"
    busy = write_study(results / "archive", "busy-study", keras_s=(9.0, 9.2, 9.4), torch_s=(6.0, 6.1, 6.2))
    write_study(results / "archive", "busy-study", (10.0, 10.2, 10.4), (14.0, 14.2, 14.4), condition="busy")
    command = render_command(results)
    cut = command.index("--")
    render(study, results, [*command[:cut], "--busy-archives", "archive/busy-study", *command[cut:]])
    quoted = "- **Beside one busy core**: the archive `busy-study` (2026-01-01, this machine kind"
    assert quoted in (results / "report.md").read_text()
    folder = archive(study)
    packed = sorted(p.name for p in (folder / "busy-archive" / "busy-study" / "runs").iterdir())
    assert packed == sorted(p.name for p in (busy / "runs").glob("*-cpu-seed-*.json")) and len(packed) == 12
    assert json.loads((folder / "provenance.json").read_text())["render"]["busy_archives_quoted"] == ["busy-study"]
    shutil.rmtree(busy)  # the archive needs only what it packed
    assert verify(folder).endswith("byte for byte") and quoted in (folder / "report.md").read_text()


@pytest.mark.slow
def test_the_repository_archives_verify():
    """Every archive in results/archive/ verifies (also `make verify`, which CI runs)."""
    done = subprocess.run([sys.executable, "-m", "tiny_mlp_bench", "verify"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_make_clean_removes_the_study_but_never_the_archives(tmp_path):
    shutil.copy2(ROOT / "Makefile", tmp_path)
    kept = tmp_path / "results" / "archive" / "a-study" / "runs" / "torch-cpu-seed-1.json"
    removed = [tmp_path / p for p in ("results/runs/torch-cpu-seed-1.json", "results/report.md", "logs/x.log")]
    for path in (kept, *removed, tmp_path / ".snakemake" / "metadata"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    done = subprocess.run(["make", "clean"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert kept.is_file() and sorted(p.name for p in (tmp_path / "results").iterdir()) == ["archive"]
    assert not any(p.exists() for p in removed) and not (tmp_path / ".snakemake").exists()


def test_a_second_study_of_a_day_is_archived_under_the_next_free_name(tmp_path):
    assert unused_name(tmp_path, "2026-12-02-nvidia-h200") == "2026-12-02-nvidia-h200"
    (tmp_path / "2026-12-02-nvidia-h200").mkdir()
    (tmp_path / "2026-12-02-nvidia-h200-2").mkdir()
    assert unused_name(tmp_path, "2026-12-02-nvidia-h200") == "2026-12-02-nvidia-h200-3"


def test_a_render_past_its_time_is_stopped_and_named(tmp_path):
    # The GPU study renders within its time limit: a render still running at it is stopped, saying so.
    (tmp_path / "slow_render.py").write_text("import time; time.sleep(60)\n")
    began = time.monotonic()
    with pytest.raises(ArchiveError, match=r"took over 1 s, the time it had"):
        render(tmp_path, tmp_path, ["slow_render.py"], timeout=1)
    assert time.monotonic() - began < 10


def test_a_render_runs_the_code_it_is_given_not_the_installed_package(tmp_path):
    # Verifying renders with the tarball's code: its program must import the tarball's tiny_mlp_bench,
    # though another copy is installed here (this repository's, which the tests import).
    code = tmp_path / "workflow"
    (code / "tiny_mlp_bench").mkdir(parents=True)
    (code / "tiny_mlp_bench" / "__init__.py").write_text("")
    (code / "scripts").mkdir()
    program = "import pathlib, sys, tiny_mlp_bench\npathlib.Path(sys.argv[1]).write_text(tiny_mlp_bench.__file__)\n"
    (code / "scripts" / "render_report.py").write_text(program)
    folder = tmp_path / "archive"
    folder.mkdir()
    render(code, folder, ["scripts/render_report.py", "imported.txt"])
    assert Path((folder / "imported.txt").read_text()) == code / "tiny_mlp_bench" / "__init__.py"
    assert Path(tiny_mlp_bench.__file__).parent == ROOT / "tiny_mlp_bench"  # the installed copy is this one
