"""Packing a finished study into a new archive, and resealing an existing one with this commit's code."""

from __future__ import annotations

import datetime
import platform
import re
import shutil
from pathlib import Path

import yaml

from tiny_mlp_bench.archive.layout import (
    BUSY_QUOTED,
    BUSY_QUOTED_RECORDS,
    NUMBERS,
    OLD_NUMBERS,
    PROVENANCE,
    QUOTED,
    QUOTED_RECORDS,
    RECORD_FOLDERS,
    ArchiveError,
    numbers_file,
    quoted_archive,
    read_json,
    record_files,
)
from tiny_mlp_bench.archive.sealing import build
from tiny_mlp_bench.archive.snakemake_logs import NONE_FOUND, copy_logs, study_logs


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def archive_name(folder: Path, today: datetime.date) -> str:
    """<date>-<gpu model> where a record names a GPU, else <date>-<host>."""
    gpus, hosts = set(), set()
    for paths in record_files(folder).values():
        for rel in paths:
            env = read_json(folder / rel).get("environment", {})
            gpus.add(env.get("gpu_name") or "")
            hosts.add(env.get("host") or "")
    machine = min(gpus - {""}, default=None) or min(hosts - {""}, default=platform.node())
    return f"{today.isoformat()}-{slug(machine)}"


def unused_name(archives: Path, name: str) -> str:
    """``name``, or ``name-2``, ``name-3``, … where an archive has it already."""
    found, number = name, 1
    while (archives / found).exists():
        number += 1
        found = f"{name}-{number}"
    return found


def copy_quoted(archives: Path, name: str, folder: Path, into: str = QUOTED, pattern: str = QUOTED_RECORDS) -> None:
    """The records the report quotes of archive ``name`` (``pattern``), into ``folder``'s ``into``/<name>/runs/:
    the GPU answer's by default, or a busy-core study's."""
    source = archives / name
    records = sorted(source.glob(pattern))
    if not records:
        raise ArchiveError(
            f"the report quotes the answer of archive {name}, but {source} holds no {pattern}: "
            "render the report again (snakemake --cores all --forcerun render_report), then archive"
        )
    (folder / into / name / "runs").mkdir(parents=True)
    for record in records:
        shutil.copy2(record, folder / into / name / "runs" / record.name)


def pack(
    repo: Path, archives: Path, *, name: str | None = None, allow_modified: bool = False, study: Path | None = None
) -> Path:
    """Pack the finished study in ``study``'s results/ and logs/ (by default ``repo``'s), with its Snakemake logs,
    into ``archives``/<name>; ``repo`` is the checkout whose code it ran."""
    study = (study or repo).resolve()
    results = study / "results"
    needed = (results / "report.md", results / NUMBERS, results / "runs", results / "config.yaml")
    missing = [p for p in needed if not p.exists()]
    if missing:
        raise ArchiveError(
            f"no finished study to archive: {', '.join(str(p) for p in missing)} missing. Run the study "
            "first (make run, or snakemake --cores all)"
        )
    sources = {kind: results / kind for kind in (*RECORD_FOLDERS, "data")}
    sources |= {"logs": study / "logs", "config.yaml": results / "config.yaml"}
    model = read_json(results / NUMBERS)["model"]
    snakemake_logs = study_logs(study)
    quoted = (model.get("archived_gpu") or {}).get("archive")
    busy_quoted = sorted({found["archive"] for found in model.get("archived_busy", {}).values()})
    if name is None:  # a second study of the same machine on the same day gets the next free name
        name = unused_name(archives, archive_name(results, datetime.date.today()))
    destination = archives / name
    if destination.exists():
        raise ArchiveError(f"{destination} already exists: choose another name with --name")
    archives.mkdir(parents=True, exist_ok=True)

    def fill(folder: Path) -> None:
        for rel, source in sources.items():
            if source.is_dir():
                shutil.copytree(source, folder / rel)
            elif source.is_file():
                shutil.copy2(source, folder / rel)
        copy_logs(snakemake_logs, folder)
        if quoted:
            copy_quoted(archives, quoted, folder)
        for busy in busy_quoted:
            copy_quoted(archives, busy, folder, BUSY_QUOTED, BUSY_QUOTED_RECORDS)

    def same_report(folder: Path) -> None:
        # The shown report must be what its records render to; else results/ mixes configs or code.
        if (folder / "report.md").read_bytes() != (results / "report.md").read_bytes():
            raise ArchiveError(
                "results/report.md is not what this commit renders from the records in results/: results/ "
                "holds records the report was not made from (another config's), or the report was made by "
                "other code. Run the study again (snakemake --cores all --forcerun render_report), or remove "
                "the stray records, then archive."
            )

    build(
        destination,
        fill,
        repo,
        allow_modified=allow_modified,
        check=same_report,
        notes=[] if snakemake_logs else [NONE_FOUND],
        no_archive_qualifies=bool(model.get("no_archive_qualifies")),
        busy_quote_asked=bool(model.get("busy_quote_asked")),
    )
    return destination


def reseal(folder: Path, repo: Path, *, allow_modified: bool = False, notes=()) -> dict:
    """Re-render and re-seal an archive in place with this commit's code, keeping its notes and adding ``notes``; one
    quoting no GPU answer gets its newest qualifying neighbour's, as the report's gpu_answer_archive default does."""
    from tiny_mlp_bench.report.gpu_archive import newest_qualifying  # the report's libraries, not only Python's

    if (folder / PROVENANCE).is_file():
        notes = [*read_json(folder / PROVENANCE).get("notes", []), *notes]

    # A study whose config quoted no GPU answer (a busy-core study's: a GPU says nothing about a busy CPU core) gets
    # none at a reseal either.
    config = folder / "config.yaml"
    asks = not config.is_file() or yaml.safe_load(config.read_text()).get("gpu_answer_archive") != "none"
    neighbour = newest_qualifying(folder.parent, leave_out=folder.name) if asks else None
    quoted = quoted_archive(folder) or getattr(neighbour, "name", None)

    def fill(partial: Path) -> None:
        shutil.copytree(folder, partial, dirs_exist_ok=True)
        (partial / OLD_NUMBERS).unlink(missing_ok=True)  # rendered again, under today's name
        if quoted and not (partial / QUOTED).exists():
            copy_quoted(folder.parent, quoted, partial)

    # An archive keeps the busy-core answers it quoted; one rendered before reports quoted them asks for none.
    numbers = folder / numbers_file(folder)
    busy_quote_asked = bool(read_json(numbers)["model"].get("busy_quote_asked")) if numbers.is_file() else False
    return build(
        folder,
        fill,
        repo,
        allow_modified=allow_modified,
        notes=notes,
        no_archive_qualifies=quoted is None and asks,
        busy_quote_asked=busy_quote_asked,
    )
