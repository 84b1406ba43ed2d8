"""Which archived study gives the report its GPU answer where this run has no completed cuda run."""

from __future__ import annotations

from pathlib import Path

from tiny_mlp_bench.archive.layout import QUOTED_RECORDS
from tiny_mlp_bench.records import read_record
from tiny_mlp_bench.report.answer import ArchivedGpu
from tiny_mlp_bench.report.model import archived_gpu

QUALIFIES = "a completed torch `seed` run on cuda"


class GpuArchiveError(Exception):
    """The gpu_answer_archive setting names an archive that is missing or does not qualify."""


def seed_records(folder: Path) -> list[dict]:
    return [read_record(path) for path in sorted(folder.glob(QUOTED_RECORDS))]


def quote(folder: Path) -> ArchivedGpu | None:
    """The archive's GPU answer, None where it does not qualify."""
    return archived_gpu(folder.name, seed_records(folder))


def newest_qualifying(archives: Path, leave_out: str | None = None) -> Path | None:
    """The archive whose quoted runs started on the latest day, of those that qualify; None where none does."""
    found = []
    folders = (p for p in archives.glob("*") if p.is_dir() and p.name[0] != "." and p.name != leave_out)
    for folder in sorted(folders):
        if answer := quote(folder):
            found.append((answer.date, folder.name, folder))
    return max(found)[2] if found else None


def choose(setting: str, archives: Path) -> Path | None:
    """The archive folder the setting picks, or None where it picks none."""
    if setting == "none":
        return None
    if setting == "auto":
        return newest_qualifying(archives)
    folder = archives / setting
    if not folder.is_dir():
        raise GpuArchiveError(
            f"config key 'gpu_answer_archive': no archive {folder} (auto picks one, none quotes none)"
        )
    if quote(folder) is None:
        raise GpuArchiveError(f"config key 'gpu_answer_archive': {folder} does not hold {QUALIFIES}")
    return folder
