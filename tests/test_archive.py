"""Archives: packing a finished study, refusing what cannot be traced, and verifying against a commit.

Each test packs a synthetic study in a throwaway git repository holding a copy of the workflow, so
commits, modified trees and later code changes are real.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from rocrate.rocrate import ROCrate

from conftest import ROOT, copy_workflow, synthetic_probes, synthetic_study, synthetic_sweeps
from tiny_mlp_bench.archive import (
    PROFILES,
    ArchiveError,
    check_manifest,
    pack,
    render,
    render_command,
    verify,
    write_manifest,
)


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


@pytest.fixture
def study(tmp_path):
    """A git repository with the workflow committed and a finished synthetic study in results/ and logs/."""
    (tmp_path / "repo").mkdir()
    repo = copy_workflow(tmp_path / "repo")  # the lock files in requirements/ too
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


def archive(repo, **options):
    return pack(repo, repo / "results" / "archive", name="study", **options)


def commit_change(repo, path: str, text: str) -> None:
    (repo / path).write_text((repo / path).read_text() + text)
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", f"change {path}")


def test_pack_writes_records_code_provenance_crate_and_manifest(study):
    folder = archive(study)
    head = git(study, "rev-parse", "HEAD").strip()
    assert (folder / "runs" / "torch-cpu-seed-1.json").is_file() and (
        folder / "logs/train/torch-cpu-seed-1.log"
    ).is_file()
    assert (folder / "config.yaml").read_text() == "epochs: 4\n"
    assert (folder / "report.md").read_bytes() == (study / "results" / "report.md").read_bytes()
    assert (folder / "workflow" / "Snakefile").read_bytes() == (study / "Snakefile").read_bytes()
    provenance = json.loads((folder / "provenance.json").read_text())
    made = len(synthetic_study()) + len(synthetic_sweeps()) + len(synthetic_probes())
    assert provenance["study"]["commit"] == head and provenance["study"]["commits"] == {head: made}
    assert provenance["render"]["commit"] == head and provenance["render"]["tree_modified"] is False
    assert provenance["archive"] == "study" and (folder / "requirements" / "runtime.txt").is_file()
    # The manifest is what sha256sum itself checks, and covers every file but the notes.
    assert subprocess.run(["sha256sum", "--check", "--quiet", "MANIFEST.sha256"], cwd=folder).returncode == 0
    listed = {line.split("  ", 1)[1] for line in (folder / "MANIFEST.sha256").read_text().splitlines()}
    assert {"provenance.json", "ro-crate-metadata.json", "report/ladder.png", "timings.parquet"} <= listed
    # The rocrate library reads the crate back: the Workflow Run Crate profiles, the workflow, the run.
    crate = ROCrate(folder)
    assert set(PROFILES) <= {profile.id for profile in crate.root_dataset["conformsTo"]}
    assert crate.mainEntity.id == "workflow/Snakefile" and "ComputationalWorkflow" in crate.mainEntity.type
    (run,) = crate.get_by_type("CreateAction")
    assert run["instrument"] is crate.mainEntity
    assert "runs/torch-cpu-seed-1.json" in {entity.id for entity in run["result"]}
    assert "config.yaml" in {entity.id for entity in run["object"]}
    assert not list((study / "results" / "archive").glob(".*"))  # no partial folder left


def test_pack_refuses_a_modified_tree_unless_told_and_then_says_so(study):
    (study / "rules" / "report.smk").write_text("# changed\n")
    with pytest.raises(ArchiveError, match=r"tracked files: rules/report.smk.*--allow-modified"):
        archive(study)
    assert list((study / "results" / "archive").iterdir()) == []
    folder = archive(study, allow_modified=True)
    rendered = json.loads((folder / "provenance.json").read_text())["render"]
    assert rendered["tree_modified"] is True and rendered["modified_files"] == ["rules/report.smk"]
    with pytest.raises(ArchiveError, match="rendered from a modified tree"):
        verify(folder, study)


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


def test_pack_refuses_records_the_report_was_not_made_from(study):
    stray = json.loads((study / "results" / "runs" / "torch-cpu-seed-1.json").read_text())
    stray["identity"] |= {"run_id": "torch-cpu-seed-9", "repeat": 9}
    (study / "results" / "runs" / "torch-cpu-seed-9.json").write_text(json.dumps(stray))
    with pytest.raises(ArchiveError, match=r"results/report\.md is not what this commit renders"):
        archive(study)
    assert list((study / "results" / "archive").iterdir()) == []


def test_verify_re_renders_at_the_archive_commit_not_at_head(study):
    folder = archive(study)
    commit_change(study, "tiny_mlp_bench/report/report.md.j2", "\nA line that later code adds.\n")
    verify(folder, study)  # the archive's commit renders what it holds, whatever HEAD renders now
    git(study, "add", "-f", "results/archive")
    git(study, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "archive")
    done = subprocess.run(
        [sys.executable, str(study / "scripts" / "archive_study.py"), "verify"], capture_output=True, text=True
    )
    assert done.returncode == 0 and f"ok      {folder}" in done.stdout, done.stdout + done.stderr


def test_verify_names_the_first_file_that_differs(study):
    folder = archive(study)
    record = folder / "runs" / "torch-cpu-seed-2.json"
    record.write_text(record.read_text().replace('"repeat": 2', '"repeat": 2 '))
    with pytest.raises(ArchiveError, match=r"runs/torch-cpu-seed-2.json: its SHA-256 differs"):
        check_manifest(folder)
    record.unlink()
    with pytest.raises(ArchiveError, match=r"runs/torch-cpu-seed-2.json: listed in MANIFEST.sha256 but missing"):
        verify(folder, study)


def test_verify_compares_charts_by_bytes_and_parquet_by_content(study):
    folder = archive(study)
    # The same table written with another compression: other bytes, same content.
    pd.read_parquet(folder / "timings.parquet").to_parquet(folder / "timings.parquet", compression="gzip", index=False)
    write_manifest(folder)
    verify(folder, study)
    (folder / "report" / "ladder.png").write_bytes((folder / "report" / "timings.png").read_bytes())
    write_manifest(folder)
    with pytest.raises(ArchiveError, match=r"report/ladder.png: differs from its re-rendering"):
        verify(folder, study)


def test_the_repository_archives_verify():
    """Every archive in results/archive/ verifies (also `make verify`, which CI runs)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "archive_study.py"), "verify"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
