"""Which archived study gives the report its GPU answer where this run has no completed cuda run. Choosing reads
the records' identities only: Snakemake chooses while it parses the workflow, and builds no report then."""

from __future__ import annotations

from pathlib import Path

from tiny_mlp_bench.archive.layout import QUOTED_RECORDS
from tiny_mlp_bench.question import TORCH, askers_rung
from tiny_mlp_bench.report.study import read_runs

QUALIFIES = "a completed torch `seed` run on cuda"


class GpuArchiveError(Exception):
    """The gpu_answer_archive setting names an archive that is missing or does not qualify."""


def cuda_seed_day(records: tuple[dict, ...]) -> str | None:
    """The day the first completed torch `seed` run on cuda started; None where none completed: the archive has no
    GPU answer to quote."""
    days = [
        r["identity"]["started_at"][:10]
        for r in records
        if (r["identity"]["framework"], r["identity"]["variant"], r["identity"]["device"])
        == (TORCH, askers_rung(TORCH), "cuda")
        and r["status"] == "ok"
    ]
    return min(days) if days else None


def quote(folder: Path):
    """The archive's GPU verdict (answer.ArchivedGpu): its own ratio, from its quoted records of the original torch
    loop; None where none of them completed on cuda."""
    # The report's stack, imported only where a report is rendered.
    from tiny_mlp_bench.report import across
    from tiny_mlp_bench.report.answer import ArchivedGpu

    records = read_runs(folder, QUOTED_RECORDS)
    day = cuda_seed_day(records)
    if day is None:
        return None
    admitted = across.gpu_question_runs(records)
    return ArchivedGpu(
        archive=folder.name,
        gpu=", ".join(sorted({r["environment"]["gpu_name"] for r in records if r["environment"].get("gpu_name")})),
        date=day,
        ratio=across.claim_ratio(across.claim_sides({}, admitted)[across.GPU_RESULT]),
        modified=sum(str(r["environment"].get("git_commit") or "").endswith("-dirty") for r in admitted),
    )


def newest_qualifying(archives: Path, leave_out: str | None = None) -> Path | None:
    """The archive whose quoted runs started on the latest day, of those that qualify; None where none does."""
    found = []
    folders = (p for p in archives.glob("*") if p.is_dir() and p.name[0] != "." and p.name != leave_out)
    for folder in sorted(folders):
        if day := cuda_seed_day(read_runs(folder, QUOTED_RECORDS)):
            found.append((day, folder.name, folder))
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
    if cuda_seed_day(read_runs(folder, QUOTED_RECORDS)) is None:
        raise GpuArchiveError(f"config key 'gpu_answer_archive': {folder} does not hold {QUALIFIES}")
    return folder
