"""A study's expected time at an archived study's pace: each timed job's from its records, the study's own
time around its timed jobs (Snakemake, the dataset, the report) and `.venv`'s set-up; then the time left."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tiny_mlp_bench import catalogue, question, records, registry
from tiny_mlp_bench.archive.layout import MAKE_RUN_TIME
from tiny_mlp_bench.jobs import identity
from tiny_mlp_bench.kinds import (
    DEFAULT_STUDY,
    KIND_FIELDS,
    archive_kind,
    archive_machine,
    in_words,
    same_machine,
    this_machine,
)
from tiny_mlp_bench.report.cells import duration
from tiny_mlp_bench.timing import FIT_PARTS, SETUP_PARTS, STEADY_MARGIN

KINDS = ("runs", "sweep", "probes")  # an archive's folders of timed jobs' records
# Rungs that run the asker's loop with only its threads fixed or its clock read more often: paced as that loop.
ASKERS_LOOP_PACED = (catalogue.Role.ONE_THREAD, catalogue.Role.STEP_PARTS)


class EstimateArchiveError(ValueError):
    """The archive a config names for the estimate is not there."""


def measure_key(job: identity.Job) -> tuple:
    """What a job measures, whatever its repeat and condition: what an earlier study may have measured already. A
    rung that runs the asker's loop with only its threads fixed (one_thread) or its clock read more often (parts) is
    paced as that loop, which every default study ran."""
    variant = job.variant
    if job.rule == "train" and registry.role_of(job.framework, job.variant) in ASKERS_LOOP_PACED:
        variant = question.askers_rung(job.framework)
    return (job.rule, job.device, job.framework, variant)


def record_key(kind: str, record: dict) -> tuple:
    if kind == "runs":
        identity = record["identity"]
        return ("train", identity["device"], identity["framework"], identity["variant"])
    if kind == "sweep":
        return ("sweep_crossover", record["device"], None, None)
    return ("probe_fixed_costs", record["device"], record["framework"], None)


def newest_first(archives: Path) -> list[Path]:
    """The archived studies' folders, the newest study first."""
    folders = []
    for provenance in archives.glob("*/provenance.json") if archives.is_dir() else []:
        started = json.loads(provenance.read_text())["study"].get("first_run_started") or ""
        folders.append((started, provenance.parent))
    return [folder for _, folder in sorted(folders, reverse=True)]


def records_in(folder: Path):
    """Every timed job's record in an archive, as (kind, record), whatever its status."""
    for kind in KINDS:
        for path in sorted((folder / kind).glob("*.json")):
            yield kind, records.upgrade(json.loads(path.read_text()))


def archived(archives: Path):
    """Every ok record in the archives of every study kind, newest archive first, as (archive name, kind,
    record): the GPU study's plan reads what any study measured."""
    for folder in newest_first(archives):
        for kind, record in records_in(folder):
            if record.get("status") == "ok":
                yield folder.name, kind, record


def span_s(record: dict) -> float | None:
    """The seconds between a record's load.started_at and ended_at: its job's program, start to end."""
    load = record.get("load") or {}
    if not (load.get("started_at") and load.get("ended_at")):
        return None
    return (datetime.fromisoformat(load["ended_at"]) - datetime.fromisoformat(load["started_at"])).total_seconds()


def job_seconds(kind: str, record: dict, epochs: int, steady_window_s: float) -> float | None:
    """The seconds a record's job would take in a study of ``epochs`` and ``steady_window_s``: its span (where an
    older record has none, its phases), the fit scaled to the epochs, the per-step window to the study's."""
    span = span_s(record)
    if kind != "runs":
        return span
    phases = record["timings"]["phases_s"]
    fit = phases.get("fit", 0.0)
    scaled = fit * (epochs / record["parameters"]["epochs"] - 1)
    if span is not None:
        window = (record["timings"].get("steady") or {}).get("window_s", 0.0)
        return span + scaled + STEADY_MARGIN * (steady_window_s - window)
    # The set-up's and the fit's parts lie inside them: counted once.
    outer = sum(s for name, s in phases.items() if name not in (*SETUP_PARTS, *FIT_PARTS))
    return outer + scaled + STEADY_MARGIN * steady_window_s


def compile_cache(job: identity.Job) -> str | None:
    """What a job's run finds in its compiler cache (jobs/run.py's prepare_compile_cache): its rung's first run empties
    it, ``cold``; a later one reuses the first's, ``warm``; None for a job that compiles nothing."""
    if job.compile_cache is None:
        return None
    return "cold" if job.repeat == 1 else "warm"


def like_repeats(job: identity.Job, found: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """Of a rung's records, those that model ``job``: its own repeat's, else every repeat's; a compiling rung's
    of the same cache (a cold compilation never models a warm run, nor a warm run a cold one)."""
    cache = compile_cache(job)
    if cache is not None:
        found = [(kind, r) for kind, r in found if r.get("method", {}).get("compile_cache") == cache]
    own = [(kind, r) for kind, r in found if kind == "runs" and r["identity"]["repeat"] == job.repeat]
    return own or found


def seconds_of(job: identity.Job, found: list[tuple[str, dict]], epochs: int, steady_window_s: float) -> float | None:
    """A job's seconds from its rung's (or sweep's, or probe's) records, the mean of those that model it."""
    seconds = [job_seconds(kind, r, epochs, steady_window_s) for kind, r in like_repeats(job, found)]
    seconds = [s for s in seconds if s is not None]
    return sum(seconds) / len(seconds) if seconds else None


def newest_measured(ok_records: list[tuple], machine: dict) -> dict[tuple, tuple[str, list[tuple[str, dict]]]]:
    """Per measure_key, (archive, its (kind, record)s): of the newest archive with an ok record of it from a
    machine of this kind."""
    found: dict[tuple, tuple[str, list]] = {}
    for name, kind, record in ok_records:
        key = record_key(kind, record)
        if not same_machine(record["environment"], machine, key[1]) or found.get(key, (name,))[0] != name:
            continue
        found.setdefault(key, (name, []))[1].append((kind, record))
    return found


@dataclass(frozen=True)
class Pace:
    """An archived study's pace: its ok records by what they measure, and its time besides its timed jobs."""

    archive: str
    machine: dict  # the machine kind its records ran on (kinds.archive_machine)
    like_this_one: bool  # whether that machine is of this one's kind
    measured: dict[tuple, list[tuple[str, dict]]]  # per measure_key, its (kind, record)s
    between_jobs_s: float  # a timed job's share of the time between timed jobs: Snakemake's, the untimed rules'
    around_s: float | None  # the study's time before its first timed job and after its last; None: not recorded
    setup_s: float | None  # `make run`'s set-up of .venv from a fresh clone; None: not recorded


def read_pace(folder: Path, machine: dict | None = None) -> Pace:
    """An archive's pace; with ``machine``, of its records from a machine of that kind only."""
    every = list(records_in(folder))
    spans = sorted(
        (datetime.fromisoformat(r["load"]["started_at"]), datetime.fromisoformat(r["load"]["ended_at"]))
        for _, r in every
        if span_s(r) is not None
    )
    measured: dict[tuple, list] = {}
    for kind, record in every:
        key = record_key(kind, record)
        if record.get("status") == "ok" and (machine is None or same_machine(record["environment"], machine, key[1])):
            measured.setdefault(key, []).append((kind, record))
    # The time no timed job ran, between the first's start and the last's end (an older GPU study's lanes overlap).
    between, reached = 0.0, None
    for start, end in spans:
        if reached is not None and start > reached:
            between += (start - reached).total_seconds()
        reached = end if reached is None else max(reached, end)
    make_run = folder / MAKE_RUN_TIME
    around_s = setup_s = None
    if make_run.is_file() and spans:
        took = json.loads(make_run.read_text())
        setup_s = float(took["setup_s"])
        around_s = max(0.0, took["study_s"] - (reached - spans[0][0]).total_seconds())
    ran_on = archive_machine(folder)
    like = machine is not None and same_machine(ran_on, machine, "cuda" if machine["gpu_name"] else "cpu")
    return Pace(folder.name, ran_on, like, measured, between / max(len(spans), 1), around_s, setup_s)


def choose_archive(setting: str, archives: Path, machine: dict | None) -> Path | None:
    """The archive whose pace the estimate takes: ``auto``, the newest default study of this machine's kind (None
    where there is none); else the archive folder the setting names."""
    if setting != "auto":
        folder = archives / setting
        if not (folder / "provenance.json").is_file():
            raise EstimateArchiveError(
                f"config key 'estimate_archive': no archived study {folder} (auto takes the newest of a like machine)"
            )
        return folder
    device = "cuda" if machine["gpu_name"] else "cpu"
    for folder in newest_first(archives):
        study, kind = archive_kind(folder)  # the one definition the README's claims pool by
        if study == DEFAULT_STUDY and same_machine(dict(zip(KIND_FIELDS, kind, strict=True)), machine, device):
            return folder
    return None


def expected_seconds(config: dict, pace: Pace | None, pending: list[identity.Job], gpu: str | None) -> dict:
    """Per pending timed job's output, (seconds, archive) at ``pace``, with its share of the time between jobs;
    for a cuda job without a GPU the moment its skip takes; None where the archive has no record that models it."""
    if pace is None:
        return {job.output: None for job in pending}
    expected = {}
    for job in pending:
        if job.device == "cuda" and gpu is None:
            expected[job.output] = (pace.between_jobs_s, "")  # skipped as soon as it starts
            continue
        found = pace.measured.get(measure_key(job), [])
        seconds = seconds_of(job, found, config["epochs"], config.get("steady_window_s", 0.0))
        expected[job.output] = None if seconds is None else (pace.between_jobs_s + seconds, pace.archive)
    return expected


@dataclass(frozen=True)
class Estimate:
    """A study's expected time: its timed jobs', the study's own around them, and `.venv`'s set-up."""

    pace: Pace | None
    jobs: dict  # expected_seconds' answer
    around_s: float  # 0 where the archive did not record it
    setup_s: float  # 0 where .venv is set up

    @property
    def between_s(self) -> float:
        """The estimated jobs' shares of the time between timed jobs."""
        return self.pace.between_jobs_s * sum(1 for found in self.jobs.values() if found) if self.pace else 0.0

    @property
    def timed_s(self) -> float:
        """The estimated timed jobs' own time, start to end."""
        return sum(found[0] for found in self.jobs.values() if found) - self.between_s

    @property
    def overhead_s(self) -> float:
        """The study's own time: Snakemake's, the dataset's and the report's, around and between timed jobs."""
        return self.around_s + self.between_s

    @property
    def total_s(self) -> float:
        return self.setup_s + self.overhead_s + self.timed_s

    @property
    def measured(self) -> bool:
        return any(found and found[1] for found in self.jobs.values())


def estimate(
    config: dict, archives: Path, pending: list[identity.Job], gpu: str | None, venv_set_up: bool = True
) -> Estimate:
    """The pending jobs' study at the pace of the archive ``estimate_archive`` names; ``venv_set_up``: no set-up."""
    machine = this_machine(gpu)
    setting = config.get("estimate_archive", "auto")
    folder = choose_archive(setting, archives, machine)
    pace = None if folder is None else read_pace(folder, machine if setting == "auto" else None)
    expected = expected_seconds(config, pace, pending, gpu)
    around_s = (pace.around_s or 0.0) if pace and pending else 0.0
    setup_s = 0.0 if venv_set_up or pace is None else pace.setup_s or 0.0
    return Estimate(pace, expected, around_s, setup_s)


def about(seconds: float) -> str:
    """An estimate, written as every time is (cells.duration), to two figures or the minute."""
    return duration(seconds, approximate=True)


def expected_line(found: Estimate, pending: list[identity.Job], gpu: str | None) -> str:
    """The run's opening line of what the study should take; unmeasured jobs are named, not guessed."""
    if not pending:
        return "Expected: no timed job in this run."
    machine, pace = this_machine(gpu), found.pace
    if pace is None or not found.measured:
        return (
            f"Expected: no estimate; no archived study ran these jobs on a machine like this one ({in_words(machine)})."
        )
    unmeasured = [job.name for job in pending if found.jobs[job.output] is None]
    parts = [f"{about(found.timed_s)} for {len(pending) - len(unmeasured)} of the {len(pending)} timed jobs"]
    if pace.around_s is None:
        parts.append(f"{about(found.between_s)} between them (the time around them not recorded in {pace.archive})")
    else:
        parts.append(f"{about(found.overhead_s)} of Snakemake, the dataset and the report")
    if found.setup_s:
        parts.append(f"{about(found.setup_s)} to set up .venv")
    else:
        parts.append("no set-up (.venv is set up)")
    line = f"Expected: about {about(found.total_s)}: {', '.join(parts)}; at the pace of {pace.archive}, "
    if pace.like_this_one:
        line += f"whose machine is like this one ({in_words(machine)})"
    else:
        line += f"made on {in_words(pace.machine)} (this one: {in_words(machine)})"
    if unmeasured:
        line += f"; no archived run of the other {len(unmeasured)} there ({', '.join(unmeasured[:3])}"
        line += ", ...)" if len(unmeasured) > 3 else ")"
    return line + "."


def time_left(expected: dict, done: set[str]) -> str:
    """The time the timed jobs not yet ``done`` (outputs) are expected to take, of ``expected``'s."""
    left = [found for output, found in expected.items() if output not in done]
    line = (
        f"about {about(sum(found[0] for found in left if found))} left ({len(done)} of {len(expected)} timed jobs done"
    )
    unmeasured = sum(1 for found in left if found is None)
    return line + (f"; {unmeasured} more not estimated)" if unmeasured else ")")


def follow(expected: dict, say, every_s: float = 5.0) -> threading.Thread:
    """Say time_left each time a timed job's output appears, from a daemon thread that ends when all are done."""

    def watch() -> None:
        done: set[str] = set()
        while len(done) < len(expected):
            time.sleep(every_s)
            now = {output for output in expected if Path(output).exists()}
            if now != done:
                done = now
                say(time_left(expected, done))

    thread = threading.Thread(target=watch, name="time-left", daemon=True)
    thread.start()
    return thread
