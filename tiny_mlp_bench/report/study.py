"""A study, read once: a results folder or an archive, its records upgraded and validated, with its study kind and
machine kind and what else the folder holds. The README's answer, its claims, its run time and its era passages
read studies through read_study, and whatever reads only run records reads them through read_runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from tiny_mlp_bench.archive.layout import MAKE_RUN_TIME, PROVENANCE
from tiny_mlp_bench.kinds import GPU_STUDY_LOG, KIND_FIELDS, archive_kind, same_machine
from tiny_mlp_bench.records import read_record


@dataclass(frozen=True, eq=False)  # compared and hashed as itself: what is computed of it may be cached by it
class Study:
    name: str
    kind: tuple  # kinds.archive_kind: (its study kind, its machine kind as KIND_FIELDS' values)
    records: tuple[dict, ...]  # its run records, every machine's
    provenance: dict  # {} where the folder holds none (a results folder, not sealed)
    config: dict  # its config as run; {} where it kept none
    make_run: dict | None  # MAKE_RUN_TIME, where its `make run` was timed whole
    ran_beside: frozenset[str]  # the runs an older GPU study ran beside another job (its side-by-side lanes)

    @property
    def own_records(self) -> list[dict]:
        """Its run records of its own machine kind (a GPU host's cpu runs included)."""
        machine = dict(zip(KIND_FIELDS, self.kind[1], strict=True))
        return [r for r in self.records if same_machine(r["environment"], machine, r["identity"]["device"])]

    @property
    def day(self) -> str:
        """The day its first run started."""
        return min(r["identity"]["started_at"] for r in self.records)[:10]

    @property
    def first_run(self) -> str:
        return (self.provenance.get("study") or {}).get("first_run_started") or min(
            r["identity"]["started_at"] for r in self.records
        )


def ran_beside(folder: Path) -> frozenset[str]:
    """The run ids a GPU study's log says ran with another job beside them (its side-by-side lanes, before it ran
    one job at a time); none for a study without that log, whose Snakemake runs one timed job at a time."""
    log = folder / GPU_STUDY_LOG
    if not log.is_file():
        return frozenset()
    return frozenset(job["name"] for job in json.loads(log.read_text()).get("jobs", []) if job.get("beside"))


def read_runs(folder: Path, pattern: str = "runs/*.json") -> tuple[dict, ...]:
    """The run records in ``folder`` that ``pattern`` names, upgraded and validated: how every part of the report
    (a quoted archive, `compare`, docs/method.md's numbers) reads a study's runs."""
    return tuple(read_record(path) for path in sorted(folder.glob(pattern)))


def read_study(folder: Path) -> Study:
    """The study in ``folder``: its run records, read as today's code reads them, and what it says of itself."""
    records = read_runs(folder)
    if not records:
        raise ValueError(f"{folder}: no run records in runs/")

    def read_json(name: str) -> dict | None:
        path = folder / name
        return json.loads(path.read_text()) if path.is_file() else None

    config = folder / "config.yaml"
    return Study(
        name=folder.name,
        kind=archive_kind(folder, list(records)),
        records=records,
        provenance=read_json(PROVENANCE) or {},
        config=yaml.safe_load(config.read_text()) if config.is_file() else {},
        make_run=read_json(MAKE_RUN_TIME),
        ran_beside=ran_beside(folder),
    )


def read_studies(folder: Path) -> list[Study]:
    """Every archive in ``folder`` (a subfolder with a provenance.json), oldest first."""
    found = [read_study(path) for path in sorted(folder.iterdir()) if (path / PROVENANCE).is_file()]
    return sorted(found, key=lambda s: (s.day, s.name))
