"""The GPU study's plan: its timed jobs in the order that matters most, each with its expected time, in the stages it
runs in, and which of them fit its time."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from tiny_mlp_bench import CHECKOUT, jobs, registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.expected_time import archived, measure_key, newest_measured, record_key, seconds_of
from tiny_mlp_bench.gpu_study.lanes import ARCHIVE_RESERVE_S
from tiny_mlp_bench.kinds import this_machine
from tiny_mlp_bench.question import TORCH, askers_keras, askers_rung

TIERS = ("the question", "never measured on a GPU", "the rest")
ALONE = "alone"  # the lane of the jobs that run with nothing beside them: the question's pair
# Snakemake's and the program's start-up: a nothing-to-do Snakemake call took 1.2 s, a one-second numpy run 3.2 s.
JOB_OVERHEAD_S = 3.0


@dataclass(frozen=True)
class Planned:
    job: jobs.Job
    tier: int  # 1, 2 or 3: the index into TIERS, plus one
    expected_s: float
    expected_from: str  # the archive whose record it comes from, or "estimate <pattern>"
    round: int  # the repeat it runs in (jobs.in_rounds)
    lane: str  # ALONE, or its device's lane

    def as_dict(self) -> dict:
        return {
            "name": self.job.name,
            "output": self.job.output,
            "log": self.job.log,
            "device": self.job.device,
            "round": self.round,
            "lane": self.lane,
            "tier": self.tier,
            "tier_name": TIERS[self.tier - 1],
            "expected_s": round(self.expected_s, 1),
            "expected_from": self.expected_from,
        }


def measured_on_gpus(ok_records: list[tuple]) -> set[tuple]:
    """What some archived record from a GPU measured on cuda, by measure_key."""
    return {
        record_key(kind, record)
        for _, kind, record in ok_records
        if record.get("environment", {}).get("gpu_name") and record_key(kind, record)[1] == "cuda"
    }


def archived_seconds(config: dict, job: jobs.Job, newest: dict) -> tuple[float, str] | None:
    """(seconds, archive) of a job from the newest archive that measured it on a machine of this kind
    (expected_time.newest_measured), with Snakemake's start-up; None where none did."""
    archive, found = newest.get(measure_key(job), ("", []))
    seconds = seconds_of(job, found, config["epochs"], config.get("steady_window_s", 0.0))
    return None if seconds is None else (JOB_OVERHEAD_S + seconds, archive)


def estimate(job: jobs.Job, estimates: dict[str, float]) -> tuple[float, str]:
    matching = [pattern for pattern in estimates if fnmatch.fnmatchcase(job.name, pattern)]
    if not matching:
        raise ValueError(f"no estimate in plan_estimates_s matches {job.name}: add a pattern, or '*'")
    pattern = max(matching, key=lambda p: (len(p.replace("*", "")), p))
    return float(estimates[pattern]), f"estimate {pattern}"


def cuda_side(job: jobs.Job) -> tuple | None:
    """The measure_key of the same measurement on cuda; None for a rung that runs on cpu only."""
    if job.rule == "train" and not registry.variant(job.framework, job.variant).runs_on("cuda"):
        return None
    return (job.rule, "cuda", job.framework, job.variant)


def question(frameworks: list[str]) -> set[tuple[str, str]]:
    """The (framework, variant) of the runs that answer the question: the asker's torch loop and Keras `fit`."""
    return {(framework, askers_rung(framework)) for framework in (TORCH, askers_keras(frameworks))}


def tier(job: jobs.Job, question: set[tuple], measured: set[tuple]) -> int:
    if (job.repeat or 1) > 1:
        return 3
    if job.rule == "train" and (job.framework, job.variant) in question:
        return 1
    # The cuda side no GPU has measured yet; the cpu twin is the same machine's comparison.
    return 2 if cuda_side(job) not in measured | {None} else 3


def lane(job: jobs.Job) -> str:
    """ALONE for the question's pair (torch's loop on cpu and cuda, timed with nothing beside it); else its device."""
    pair = job.rule == "train" and (job.framework, job.variant) == (TORCH, askers_rung(TORCH))
    return ALONE if pair else job.device


# At equal expected time, probes and sweeps first: one job per device, against a ladder's many rungs.
KIND_FIRST = {"probe_fixed_costs": 0, "sweep_crossover": 1, "train": 2}


def leads_its_lane(planned: Planned) -> int:
    """0 for the floor's run, 1 for torch's probe, where no GPU has measured them (tier 2); 2 for the rest."""
    job = planned.job
    if planned.tier == 2 and job.rule == "train" and registry.role_of(job.framework, job.variant) == Role.FLOOR:
        return 0
    if planned.tier == 2 and job.rule == "probe_fixed_costs" and job.framework == TORCH:
        return 1
    return 2


def plan(config: dict, archives: Path, gpu: str | None, seed: int = 0, machine: dict | None = None) -> list[Planned]:
    """The config's timed jobs in the order to run them, each with its expected time, round and lane."""
    first = question(config["frameworks"])
    ok_records = list(archived(archives))  # read once: both questions are asked of every record
    measured = measured_on_gpus(ok_records)
    newest = newest_measured(ok_records, machine or this_machine(gpu))
    timed = jobs.timed_jobs(config)
    config_order = {job: i for i, job in enumerate(timed)}
    expected = {
        job: archived_seconds(config, job, newest) or estimate(job, config["plan_estimates_s"]) for job in timed
    }
    planned = []
    for number, round_jobs in enumerate(jobs.in_rounds(timed, seed), 1):
        in_round = [Planned(job, tier(job, first, measured), *expected[job], number, lane(job)) for job in round_jobs]
        if number == 1:  # by priority; later rounds keep the seed's order
            in_round.sort(
                key=lambda p: (
                    (p.lane != ALONE, leads_its_lane(p), p.tier, config_order[p.job])
                    if p.tier == 1
                    else (
                        p.lane != ALONE,
                        leads_its_lane(p),
                        p.tier,
                        p.expected_s,
                        KIND_FIRST[p.job.rule],
                        config_order[p.job],
                    )
                )
            )
        planned += in_round
    return planned


def stages(planned: list[Planned], serial: bool = False) -> list[dict[str, list[Planned]]]:
    """The plan as run: per round, its ALONE jobs, then the rest in lanes side by side (``serial``: all in one lane)."""
    if serial:
        return [{"serial": list(planned)}]
    found = []
    for number in sorted({p.round for p in planned}):
        in_round = [p for p in planned if p.round == number]
        alone = [p for p in in_round if p.lane == ALONE]
        side_by_side = {
            device: [p for p in in_round if p.lane == device]
            for device in ("cpu", "cuda")
            if device in {p.lane for p in in_round}
        }
        found += [stage for stage in ({ALONE: alone} if alone else None, side_by_side or None) if stage]
    return found


def schedule(planned: list[Planned], time_for_jobs: float, serial: bool = False) -> dict[str, float | None]:
    """Each job's start (seconds after the first) were each to take its expected time, or None where it would not fit:
    as in lanes.py, a lane starts no job longer than the time left, and a stage waits for every lane of the last."""
    starts, stage_start = {}, 0.0
    for stage in stages(planned, serial):
        stage_end = stage_start
        for lane_jobs in stage.values():
            now = stage_start
            for p in lane_jobs:
                if p.expected_s <= time_for_jobs - now:
                    starts[p.job.name], now = now, now + p.expected_s
                else:
                    starts[p.job.name] = None
            stage_end = max(stage_end, now)
        stage_start = stage_end
    return starts


def main(argv=None, prog=None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="the config as run (results/config.yaml)")
    parser.add_argument("--archives", type=Path, required=True, help="the archived studies (results/archive)")
    parser.add_argument("--gpu", help="the machine's GPU, as torch names it (none: no GPU)")
    parser.add_argument("--order", type=int, default=0, help="the seed of the later rounds' order (default 0)")
    parser.add_argument("--serial", action="store_true", help="one timed job at a time, as gpu_study.py --serial")
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
        "stages": [
            {lane: [p.job.name for p in in_lane] for lane, in_lane in stage.items()}
            for stage in stages(planned, args.serial)
        ],
    }
    if args.time_limit is not None:
        time_for_jobs = args.time_limit - args.archive_reserve - args.setup_s
        starts = schedule(planned, time_for_jobs, args.serial)
        found |= {"time_for_jobs_s": round(time_for_jobs, 1), "setup_s": args.setup_s}
        for job in found["jobs"]:
            start = starts[job["name"]]
            job |= {"fits": start is not None, "starts_s": None if start is None else round(start, 1)}
    json.dump(found, sys.stdout, indent=1)
    print()
    return 0
