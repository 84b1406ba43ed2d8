"""The GPU study's plan: its timed jobs in the order that matters most, one at a time, each with its expected time,
and which of them fit its time."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from tiny_mlp_bench import CHECKOUT, registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.expected_time import archived, measure_key, newest_measured, record_key, seconds_of
from tiny_mlp_bench.gpu_study.runner import ARCHIVE_RESERVE_S
from tiny_mlp_bench.jobs import identity, rounds
from tiny_mlp_bench.kinds import this_machine
from tiny_mlp_bench.question import TORCH, askers_keras, askers_rung

# The study's phases, in the order they run. The question rounds first, one after another, then what a GPU
# study alone can say: Keras reaching the GPU without TensorFlow, and the torch probes that explain the step.
PHASES = ("the question", "Keras on a GPU", "the torch probes", "the rest")
QUESTION, KERAS, PROBES, REST = range(1, len(PHASES) + 1)
# Snakemake's and the program's start-up: a nothing-to-do Snakemake call took 1.2 s, a one-second numpy run 3.2 s.
JOB_OVERHEAD_S = 3.0


@dataclass(frozen=True)
class Planned:
    job: identity.Job
    phase: int  # QUESTION, KERAS, PROBES or REST: the index into PHASES, plus one
    expected_s: float
    expected_from: str  # the archive whose record it comes from, or "estimate <pattern>"
    round: int  # the repeat it runs in (rounds.in_rounds)
    # A question round runs whole or not at all: one run a side of a round orders nothing. Its first
    # run needs the time of both to start; its second names the first, and starts only after it ran.
    needs_s: float = 0.0
    after: str | None = None

    @property
    def time_to_start(self) -> float:
        """The time left this job needs to start: its own expected time, or its question round's (needs_s)."""
        return max(self.needs_s, self.expected_s)

    def as_dict(self) -> dict:
        return {
            "name": self.job.name,
            "output": self.job.output,
            "log": self.job.log,
            "device": self.job.device,
            "round": self.round,
            "phase": self.phase,
            "phase_name": PHASES[self.phase - 1],
            "expected_s": round(self.expected_s, 1),
            "expected_from": self.expected_from,
            "needs_s": round(self.time_to_start, 1),
            "after": self.after,
        }


def measured_on_gpus(ok_records: list[tuple]) -> set[tuple]:
    """What some archived record from a GPU measured on cuda, by measure_key."""
    return {
        record_key(kind, record)
        for _, kind, record in ok_records
        if record.get("environment", {}).get("gpu_name") and record_key(kind, record)[1] == "cuda"
    }


def archived_seconds(config: dict, job: identity.Job, newest: dict) -> tuple[float, str] | None:
    """(seconds, archive) of a job from the newest archive that measured it on a machine of this kind
    (expected_time.newest_measured), with Snakemake's start-up; None where none did."""
    archive, found = newest.get(measure_key(job), ("", []))
    seconds = seconds_of(job, found, config["epochs"], config.get("steady_window_s", 0.0))
    return None if seconds is None else (JOB_OVERHEAD_S + seconds, archive)


def estimate(job: identity.Job, estimates: dict[str, float]) -> tuple[float, str]:
    matching = [pattern for pattern in estimates if fnmatch.fnmatchcase(job.name, pattern)]
    if not matching:
        raise ValueError(f"no estimate in plan_estimates_s matches {job.name}: add a pattern, or '*'")
    pattern = max(matching, key=lambda p: (len(p.replace("*", "")), p))
    return float(estimates[pattern]), f"estimate {pattern}"


def cuda_side(job: identity.Job) -> tuple | None:
    """The measure_key of the same measurement on cuda; None for a rung that runs on cpu only."""
    if job.rule == "train" and not registry.rung(job.framework, job.variant).runs_on("cuda"):
        return None
    return (job.rule, "cuda", job.framework, job.variant)


def is_question_run(job: identity.Job) -> bool:
    """A run of a question round: the asker's torch loop on cpu or cuda, whose ratio is the GPU study's answer."""
    return job.rule == "train" and (job.framework, job.variant) == (TORCH, askers_rung(TORCH))


def phase(job: identity.Job, config: dict) -> int:
    if is_question_run(job) and job.repeat <= config["question_rounds"]:
        return QUESTION
    first = (job.repeat or 1) == 1
    if first and job.rule == "train" and (job.framework, job.variant) == keras_question(config["frameworks"]):
        return KERAS
    if job.rule == "probe_fixed_costs" and job.framework == TORCH:
        return PROBES
    return REST


def keras_question(frameworks: list[str]) -> tuple[str, str]:
    """The (framework, variant) of the question's Keras `fit`: Keras 2 where the study has it, else Keras on JAX."""
    keras = askers_keras(frameworks)
    return keras, askers_rung(keras)


def first_unmeasured(job: identity.Job, measured: set[tuple]) -> int:
    """0 for what no GPU has measured yet (the cpu twin comes with it: the same machine's comparison), else 1."""
    return 0 if cuda_side(job) not in measured | {None} else 1


def floor_first(job: identity.Job) -> int:
    """0 for the floor's run: a problem only it has (the numba CUDA kernel) shows in the first minutes."""
    return 0 if job.rule == "train" and registry.role_of(job.framework, job.variant) == Role.FLOOR else 1


# At equal expected time, probes and sweeps first: one job per device, against a ladder's many rungs.
KIND_FIRST = {"probe_fixed_costs": 0, "sweep_crossover": 1, "train": 2}


def device_order(job: identity.Job) -> int:
    """Which device goes first alternates round by round: cpu first in odd rounds. A drift in
    the machine's state over a round then falls on each device as often."""
    cpu_first = (job.repeat or 1) % 2 == 1
    return 0 if (job.device == "cpu") == cpu_first else 1


def plan(config: dict, archives: Path, gpu: str | None, seed: int = 0, machine: dict | None = None) -> list[Planned]:
    """The config's timed jobs in the order to run them, one at a time: question_rounds question rounds, Keras's
    question on each device, the torch probes (cuda first), then the rest: the later question rounds,
    then the first round's other jobs (what no GPU measured, the floor and then the cheapest first), then later
    rounds in the order ``seed`` draws."""
    ok_records = list(archived(archives))  # read once: both questions are asked of every record
    measured = measured_on_gpus(ok_records)
    newest = newest_measured(ok_records, machine or this_machine(gpu))
    timed = rounds.timed_jobs(config)
    config_order = {job: i for i, job in enumerate(timed)}
    expected = {
        job: archived_seconds(config, job, newest) or estimate(job, config["plan_estimates_s"]) for job in timed
    }
    planned = [
        Planned(job, phase(job, config), *expected[job], number)
        for number, round_jobs in enumerate(rounds.in_rounds(timed, seed), 1)
        for job in round_jobs
    ]
    drawn = {p.job: i for i, p in enumerate(planned)}  # later rounds keep the seed's order

    def priority(p: Planned) -> tuple:
        job = p.job
        if p.phase == PROBES:
            return (p.phase, job.device != "cuda", config_order[job])  # the GPU's first: it has no other source
        if p.phase != REST:
            return (p.phase, p.round, device_order(job))
        if is_question_run(job):
            return (p.phase, 0, p.round, device_order(job))
        if p.round == 1:
            cheapest = (p.expected_s, KIND_FIRST[job.rule], config_order[job])
            return (p.phase, 1, first_unmeasured(job, measured), floor_first(job), *cheapest)
        return (p.phase, 2, drawn[job])

    return whole_question_rounds(sorted(planned, key=priority))


def whole_question_rounds(planned: list[Planned]) -> list[Planned]:
    """``planned`` with each question round made whole: its first run needs both runs' time, its
    second starts only after the first (Planned.needs_s, after)."""
    question_rounds: dict[int, list[Planned]] = {}
    for p in planned:
        if is_question_run(p.job):
            question_rounds.setdefault(p.round, []).append(p)
    whole = {}  # a study of one device has no round of two runs to keep whole
    for first, second in (runs for runs in question_rounds.values() if len(runs) == 2):
        whole[first.job] = replace(first, needs_s=first.expected_s + second.expected_s)
        whole[second.job] = replace(second, after=first.job.name)
    return [whole.get(p.job, p) for p in planned]


def schedule(
    planned: list[Planned], time_for_jobs: float, took_s: dict[str, float] | None = None
) -> dict[str, float | None]:
    """Each job's start (seconds after the first), one job at a time, or None where it would not fit: as the study
    runs them (runner.py), a job whose expected time is longer than the time left is not started, and a shorter one
    after it may be. Each job takes its expected time, or what ``took_s`` says it took (a replay of a study)."""
    starts, now = {}, 0.0
    for p in planned:
        name = p.job.name
        first_ran = p.after is None or starts.get(p.after) is not None
        if first_ran and p.time_to_start <= time_for_jobs - now:
            starts[name], now = now, now + (took_s or {}).get(name, p.expected_s)
        else:
            starts[name] = None
    return starts


def main(argv=None, prog=None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="the config as run (results/config.yaml)")
    parser.add_argument("--archives", type=Path, required=True, help="the archived studies (results/archive)")
    parser.add_argument("--gpu", help="the machine's GPU, as torch names it (none: no GPU)")
    parser.add_argument("--order", type=int, default=0, help="the seed of the later rounds' order (default 0)")
    parser.add_argument("--time-limit", type=float, help="the study's --time-limit: say which jobs fit in it")
    parser.add_argument(
        "--archive-reserve",
        type=float,
        default=ARCHIVE_RESERVE_S,
        help=f"seconds of the time limit kept for the report and the archive (default {ARCHIVE_RESERVE_S:g})",
    )
    parser.add_argument("--setup-s", type=float, help="the seconds the study takes before its first job")
    parser.add_argument("--cpu-model", help="plan for a machine with this CPU model (default: this machine's)")
    parser.add_argument("--logical-cpus", type=int, help="plan for a machine with this many logical CPUs")
    args = parser.parse_args(argv)
    if args.time_limit is not None and args.setup_s is None:
        parser.error("--time-limit needs --setup-s: the seconds the study takes before its first job")
    config = yaml.safe_load(args.config.read_text())
    schema = yaml.safe_load((CHECKOUT / "config" / "config.schema.yaml").read_text())
    if missing := sorted(set(schema["properties"]) - set(config)):
        # A config file leaves keys to the schema's defaults; the study's jobs come from every key.
        print(
            f"error: {args.config}: not a config as run, which holds every key ({', '.join(missing[:3])} missing): "
            f"give results/config.yaml, which `snakemake config_as_run --configfile {args.config} --cores 1` writes",
            file=sys.stderr,
        )
        return 1
    machine = this_machine(args.gpu)
    given = {"cpu_model": args.cpu_model, "logical_cpus": args.logical_cpus}
    machine |= {key: value for key, value in given.items() if value}
    try:
        planned = plan(config, args.archives, args.gpu, args.order, machine)
    except ValueError as err:
        print(f"error: {args.config}: {err}", file=sys.stderr)
        return 1
    found = {
        "order_seed": args.order,
        "machine": machine,
        "jobs": [p.as_dict() for p in planned],
    }
    if args.time_limit is not None:
        time_for_jobs = args.time_limit - args.archive_reserve - args.setup_s
        starts = schedule(planned, time_for_jobs)
        found |= {"time_for_jobs_s": round(time_for_jobs, 1), "setup_s": args.setup_s}
        for job in found["jobs"]:
            start = starts[job["name"]]
            job |= {"fits": start is not None, "starts_s": None if start is None else round(start, 1)}
    json.dump(found, sys.stdout, indent=1)
    print()
    return 0
