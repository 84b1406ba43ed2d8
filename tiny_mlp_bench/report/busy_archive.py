"""Which archived busy-core study a default study's first screen quotes: the newest of the same machine kind. Choosing
reads the records' identities only: Snakemake chooses while it parses the workflow, and builds no report then."""

from __future__ import annotations

from pathlib import Path

from tiny_mlp_bench import kinds
from tiny_mlp_bench.archive.layout import BUSY_QUOTED_RECORDS
from tiny_mlp_bench.jobs.identity import BUSY, IDLE
from tiny_mlp_bench.question import ASKERS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report.study import read_runs

QUALIFIES = "completed runs of torch's and Keras 2's original loops on cpu, idle and beside one busy core"
SETTING = "config key 'busy_answer_archive'"


class BusyArchiveError(Exception):
    """The busy_answer_archive setting names an archive that is missing or does not qualify."""


def qualifies(records: tuple[dict, ...]) -> bool:
    """Whether torch's and Keras 2's original loops each completed on cpu, idle and beside one busy core."""
    done = {
        (r["identity"]["framework"], r["identity"]["condition"])
        for r in records
        if r["status"] == "ok"
        and r["identity"]["device"] == "cpu"
        and r["identity"]["variant"] == askers_rung(r["identity"]["framework"])
    }
    return all((framework, condition) in done for framework in (TORCH, ASKERS_KERAS) for condition in (IDLE, BUSY))


def quote(folder: Path):
    """The archive's busy-core answer (busy_core.ArchivedBusy), None where it does not qualify."""
    # The report's stack, imported only where a report is rendered.
    from tiny_mlp_bench.report.busy_core import ArchivedBusy
    from tiny_mlp_bench.report.model import build_report

    records = read_runs(folder, BUSY_QUOTED_RECORDS)
    found = build_report(records).busy if qualifies(records) else None
    if found is None or found.keras_over_torch[1].result is None:
        return None
    ok = [r for r in records if r["status"] == "ok"]
    sides = {(r["identity"]["framework"], r["identity"]["condition"]) for r in ok}
    runs = min(sum((r["identity"]["framework"], r["identity"]["condition"]) == side for r in ok) for side in sides)
    kind = kinds.machine_of(records)
    return ArchivedBusy(
        archive=folder.name,
        date=min(r["identity"]["started_at"] for r in records)[:10],
        cpu=(kind["cpu_model"], kind["logical_cpus"]),
        runs=runs,
        found=found,
    )


def busy_archives(archives: Path) -> list[Path]:
    """The archived busy-core studies, by name."""
    folders = (p for p in sorted(archives.glob("*")) if p.is_dir() and p.name[0] != ".")
    return [folder for folder in folders if kinds.study_kind(folder) == kinds.BUSY_STUDY]


def choose(setting: str, archives: Path) -> list[Path] | None:
    """The archives the setting offers the report, which quotes the newest of each machine kind it ran on; None
    where it asks for none."""
    if setting == "none":
        return None
    if setting == "auto":
        return [folder for folder in busy_archives(archives) if qualifies(read_runs(folder, BUSY_QUOTED_RECORDS))]
    folder = archives / setting
    if not folder.is_dir():
        raise BusyArchiveError(f"{SETTING}: no archive {folder} (auto picks one, none quotes none)")
    if not qualifies(read_runs(folder, BUSY_QUOTED_RECORDS)):
        raise BusyArchiveError(f"{SETTING}: {folder} does not hold {QUALIFIES}")
    return [folder]
