"""What an archive holds: the names of its files and folders, and reading them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

MANIFEST = "MANIFEST.sha256"
PROVENANCE = "provenance.json"
CRATE_METADATA = "ro-crate-metadata.json"
NOTES = "README.md"  # written by people after sealing: outside the manifest
RECORD_FOLDERS = ("runs", "sweep", "probes")
RENDER_SCRIPT = "scripts/render_report.py"
NUMBERS = "report/numbers.json"  # the report's numbers and the versions that rendered it
OLD_NUMBERS = "report/model.json"  # its name in archives sealed by older code
HEADLINE = "headline.csv"  # the report's first table as numbers
RENDERED = (
    "report.md",
    "timings.parquet",
    "report/timings.png",
    "report/ladder.png",
    "report/crossover.png",
    "report/breakdown.png",
    NUMBERS,
    HEADLINE,
)
CODE = "workflow.tar.gz"  # `git archive` of the tracked files outside results/ at the render commit
OLD_CODE_FOLDER = "workflow"  # what archives held instead before: the code tree at the study's commit
QUOTED = "gpu-archive"  # the records of the archive whose GPU answer the report quotes: QUOTED/<name>/runs/
QUOTED_RECORDS = "runs/torch-*-seed-*.json"  # all the quoted answer reads of an archive
# The records of the busy-core studies whose answer the report quotes, one per machine kind: BUSY_QUOTED/<name>/runs/
BUSY_QUOTED = "busy-archive"
BUSY_QUOTED_RECORDS = "runs/*-cpu-seed-*.json"
SNAKEMAKE_LOGS = "logs/snakemake"  # Snakemake's own logs of the study's invocations
MAKE_RUN_TIME = "logs/make_run_time.json"  # what `make run` from a fresh clone took, where a study timed it whole


class ArchiveError(Exception):
    """Why a study cannot be archived, or why an archive does not verify."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def files_under(folder: Path) -> list[str]:
    """Every file the manifest covers, as sorted POSIX paths relative to the archive."""
    outside = {MANIFEST, NOTES}
    relative = (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return sorted(rel for rel in relative if rel not in outside)


def numbers_file(folder: Path) -> str:
    """The archive's file of the report's numbers, relative to ``folder``: today's name, or the name it had when
    the archive was sealed."""
    return OLD_NUMBERS if not (folder / NUMBERS).is_file() and (folder / OLD_NUMBERS).is_file() else NUMBERS


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ArchiveError(f"{path}: cannot be read as JSON ({err})") from err


def record_files(folder: Path) -> dict[str, list[str]]:
    return {
        kind: sorted(p.relative_to(folder).as_posix() for p in (folder / kind).glob("*.json"))
        for kind in RECORD_FOLDERS
    }


def quoted_archive(folder: Path) -> str | None:
    """The name of the archive whose GPU answer ``folder``'s report quotes, from the records packed for it."""
    names = sorted(p.name for p in (folder / QUOTED).glob("*") if p.is_dir())
    if len(names) > 1:
        raise ArchiveError(f"{folder / QUOTED}: the records of one archive are quoted, not of {', '.join(names)}")
    return names[0] if names else None


def busy_quoted_archives(folder: Path) -> list[str]:
    """The names of the busy-core studies ``folder``'s report quotes, from the records packed for them."""
    return sorted(p.name for p in (folder / BUSY_QUOTED).glob("*") if p.is_dir())
