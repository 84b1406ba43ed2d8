"""Verifying an archive without git: its manifest, then its report re-rendered with its own code and compared."""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from pathlib import Path

from tiny_mlp_bench.archive.layout import (
    BUSY_QUOTED,
    CODE,
    PROVENANCE,
    QUOTED,
    RECORD_FOLDERS,
    ArchiveError,
    numbers_file,
    read_json,
)
from tiny_mlp_bench.archive.manifest import check_manifest
from tiny_mlp_bench.archive.rendering import render


def version_changes(theirs: dict, ours: dict) -> list[str]:
    """What renders here with other versions than the archive's report was rendered with."""
    return [
        f"{name} {theirs.get(name)} there, {ours.get(name)} here"
        for name in sorted(theirs.keys() | ours.keys())
        if theirs.get(name) != ours.get(name)
    ]


def verify(folder: Path) -> str:
    """Check the manifest, re-render the report with the archive's code and compare: numbers always (to 1e-9 relative),
    bytes where the versions match. Returns which comparison it made; an ArchiveError names the first difference."""
    from tiny_mlp_bench.report.numbers_file import first_difference  # the report's libraries, not only Python's

    check_manifest(folder)
    rendered = read_json(folder / PROVENANCE)["render"]
    if rendered["tree_modified"]:
        raise ArchiveError(
            f"{folder}: its report was rendered from a modified tree at {rendered['commit']}; "
            "that code is in no commit, so it cannot be re-rendered"
        )
    numbers = numbers_file(folder)
    for needed in (CODE, numbers):
        if not (folder / needed).is_file():
            raise ArchiveError(f"{folder}: no {needed} (an archive sealed before archives held it: reseal it)")
    with tempfile.TemporaryDirectory(prefix="tiny-mlp-bench-verify-") as tmp:
        code, work = Path(tmp, "code"), Path(tmp, "work")
        with tarfile.open(folder / CODE) as tar:
            tar.extractall(code, filter="data")
        for kind in (*RECORD_FOLDERS, QUOTED, BUSY_QUOTED):
            if (folder / kind).is_dir():
                shutil.copytree(folder / kind, work / kind)
        render(code, work, rendered["command"])
        for rel in rendered["outputs"]:
            if not (work / rel).exists():
                raise ArchiveError(f"{folder / rel}: its re-rendering at {rendered['commit'][:12]} did not make it")
        archived, again = read_json(folder / numbers), read_json(work / numbers)
        if difference := first_difference(archived["model"], again["model"]):
            raise ArchiveError(f"{folder / numbers}: {difference}")
        if changes := version_changes(archived["versions"], again["versions"]):
            return f"numbers recomputed and equal; bytes not compared ({'; '.join(changes)})"
        compared = [rel for rel in rendered["outputs"] if rel != numbers]
        for rel in compared:
            if (folder / rel).read_bytes() != (work / rel).read_bytes():
                raise ArchiveError(f"{folder / rel}: differs from its re-rendering at {rendered['commit'][:12]}")
        return f"numbers recomputed and equal; {', '.join(compared)} byte for byte"
