"""Snakemake's own logs of a study's invocations, which packing copies into the archive's logs/snakemake/."""

from __future__ import annotations

import datetime
import re
import shutil
from pathlib import Path

from tiny_mlp_bench.archive.layout import SNAKEMAKE_LOGS, read_json, record_files

SNAKEMAKE_LOG_FOLDER = Path(".snakemake") / "log"  # Snakemake's, in the folder it ran in
LOG_NAME = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{6}(?:\.\d{1,6})?)\.snakemake\.log")
DRY_RUN = "This was a dry-run"  # what a dry run says at its end
NONE_FOUND = (
    "No Snakemake log of the study was found: .snakemake/log/ held none of an invocation that ran while "
    "its records were made or its report was rendered (Snakemake's file logging was off, or .snakemake/ "
    f"was removed since), so the archive has no {SNAKEMAKE_LOGS}/."
)

Span = tuple[datetime.datetime, datetime.datetime]


def moment(text) -> datetime.datetime | None:
    """An ISO 8601 time as an aware datetime, UTC where it names no zone; None where it is none."""
    try:
        when = datetime.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.UTC)


def modified(path: Path) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC)


def record_span(path: Path) -> Span:
    """When the record's job ran, as the record says, else as its file's modification time says."""
    record = read_json(path)
    load = record.get("load") if isinstance(record.get("load"), dict) else {}
    identity = record.get("identity") if isinstance(record.get("identity"), dict) else {}
    written = modified(path)
    start = moment(load.get("started_at")) or moment(identity.get("started_at")) or written
    end = moment(load.get("ended_at")) or written
    return start, max(start, end)


def invocation_span(log: Path) -> Span | None:
    """From the start in the log's name (local time) to its last write; None for a name not Snakemake's."""
    found = LOG_NAME.fullmatch(log.name)
    if not found:
        return None
    stamp = found.group(1)
    pattern = "%Y-%m-%dT%H%M%S.%f" if "." in stamp else "%Y-%m-%dT%H%M%S"
    start = datetime.datetime.strptime(stamp, pattern).astimezone()  # naive: the local time zone's
    return start, max(start, modified(log))


def study_logs(repo: Path) -> list[Path]:
    """Logs in ``repo``'s .snakemake/log/ of invocations that made its results/ (records or report), oldest first."""
    results, folder = repo / "results", repo / SNAKEMAKE_LOG_FOLDER
    spans = [record_span(results / rel) for rels in record_files(results).values() for rel in rels]
    report = results / "report.md"
    if not folder.is_dir() or not (spans or report.is_file()):
        return []
    records = (min(s for s, _ in spans), max(e for _, e in spans)) if spans else None
    written = modified(report) if report.is_file() else None
    found = []
    for log in sorted(folder.glob("*.snakemake.log")):
        invocation = invocation_span(log)
        if invocation is None:
            continue
        start, end = invocation
        overlaps = records is not None and start <= records[1] and records[0] <= end
        rendered = written is not None and start <= written <= end
        if (overlaps or rendered) and DRY_RUN not in log.read_text(errors="replace"):
            found.append(log)
    return found


def copy_logs(logs: list[Path], folder: Path) -> None:
    for log in logs:
        (folder / SNAKEMAKE_LOGS).mkdir(parents=True, exist_ok=True)
        shutil.copy2(log, folder / SNAKEMAKE_LOGS / log.name)


def archived_logs(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in (folder / SNAKEMAKE_LOGS).glob("*.snakemake.log"))
