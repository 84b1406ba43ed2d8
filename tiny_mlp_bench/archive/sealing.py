"""Sealing an archive: render its report, pack its code, write provenance, RO-Crate and manifest; publish it whole."""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import tempfile
from pathlib import Path

from tiny_mlp_bench.archive.crate import write_crate
from tiny_mlp_bench.archive.layout import (
    CODE,
    OLD_CODE_FOLDER,
    PROVENANCE,
    RENDERED,
    ArchiveError,
    busy_quoted_archives,
    quoted_archive,
)
from tiny_mlp_bench.archive.manifest import write_manifest
from tiny_mlp_bench.archive.provenance import study_commit, study_facts
from tiny_mlp_bench.archive.rendering import render, render_command
from tiny_mlp_bench.archive.repository import extract, git, modified_files, write_code
from tiny_mlp_bench.archive.snakemake_logs import archived_logs
from tiny_mlp_bench.atomic import write_text_atomic


def seal(folder: Path, repo: Path, *, name: str, allow_modified: bool, notes: list[str] = (), **quoting) -> dict:
    """Render ``folder``'s report with ``repo``'s code at HEAD, pack that code, write provenance, crate and manifest.
    Refuses a modified tree or records made in one unless ``allow_modified`` (then provenance.json says so);
    ``quoting``: render_command's options on the archived answers the report quotes."""
    changed = modified_files(repo)
    facts = study_facts(folder)
    if not allow_modified and (changed or facts["records_from_modified_tree"]):
        what = [f"the working tree has changes to tracked files: {', '.join(changed[:5])}"] if changed else []
        if facts["records_from_modified_tree"]:
            names = ", ".join(facts["records_from_modified_tree"][:5])
            what.append(f"{len(facts['records_from_modified_tree'])} records were made from a modified tree ({names})")
        raise ArchiveError(
            "refusing to archive: " + "; ".join(what) + ". Commit the changes and run the study again, or "
            "archive it as it is with --allow-modified (the archive then says so)."
        )
    commit = study_commit(facts)
    if commit is None:
        raise ArchiveError(
            f"{folder}: the records name no git commit (made outside a git checkout): nothing to trace them to"
        )
    # The lock files at the study's commit, where the archive does not hold them yet; the code that renders.
    if not (folder / "requirements").exists():
        extract(repo, commit, ["requirements"], folder)
    head = git(repo, "rev-parse", "HEAD").strip()
    shutil.rmtree(folder / OLD_CODE_FOLDER, ignore_errors=True)
    write_code(repo, head, folder / CODE)
    command = render_command(folder, **quoting)
    render(repo, folder, command)
    provenance = {
        "archive": name,
        "archived_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "archived_on": platform.node(),
        "study": {"commit": commit, **facts, "snakemake_logs": archived_logs(folder)},
        "render": {
            "commit": head,
            "code": CODE,
            "tree_modified": bool(changed),
            "modified_files": changed,
            "command": command,
            "outputs": [rel for rel in RENDERED if (folder / rel).exists()],  # no crossover chart without sweeps
            "gpu_archive_quoted": quoted_archive(folder),
            "busy_archives_quoted": busy_quoted_archives(folder),
        },
        "modified_tree_allowed": allow_modified,
        "notes": list(notes),
    }
    write_text_atomic(folder / PROVENANCE, json.dumps(provenance, indent=1) + "\n")
    write_crate(folder, provenance)
    write_manifest(folder)
    return provenance


def publish(partial: Path, destination: Path) -> None:
    """Move a finished archive into place; an archive already there is replaced only after that."""
    if destination.exists():
        old = destination.with_name(f".{destination.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(destination, old)
        os.replace(partial, destination)
        shutil.rmtree(old)
    else:
        os.replace(partial, destination)


def build(destination: Path, fill, repo: Path, *, allow_modified: bool, notes=(), check=None, **options) -> dict:
    """Fill a partial folder beside ``destination``, seal, ``check`` and publish it: nothing half-written is left."""
    partial = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".partial", dir=destination.parent))
    try:
        fill(partial)
        provenance = seal(partial, repo, name=destination.name, allow_modified=allow_modified, notes=notes, **options)
        if check:
            check(partial)
        publish(partial, destination)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return provenance
