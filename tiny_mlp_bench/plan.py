"""The GPU study's plan: its timed jobs in the order that matters most, each with its expected time.

A GPU machine may be had for minutes, so scripts/gpu_study.py runs what matters first and starts
no job that no longer fits its time limit. The order, in three tiers:

1. the question: the asker's torch loop and the asker's Keras ``fit`` (Keras 2, on TensorFlow, where
   the study runs it, else Keras 3 on JAX), on each device;
2. what no archived record from a GPU has measured: a rung, a probe, a sweep, on each device (the
   cpu twin gives the same machine's comparison);
3. the rest: rungs measured on a GPU before, rungs that run on cpu only, and every repeat after
   the first.

A job's expected time comes from the newest archived record of the same kind of machine (the same
CPU model and count and, for a cuda job, the same GPU): the phases its record times, the fit scaled
to this study's epochs. Where there is none, the config's ``plan_estimates_s`` says: job-name
patterns (``torch-cuda-*``, ``probe-*``) to seconds, the most specific that matches (the one
with the most characters besides ``*``: a config as run is written with its keys sorted).

    python -m tiny_mlp_bench.plan --config results/config.yaml --archives results/archive [--gpu NAME]

prints the plan as JSON, one object per job: name, output, device, tier, expected_s, expected_from.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from tiny_mlp_bench import catalogue, environment, jobs, records
from tiny_mlp_bench.question import TORCH, askers_keras, askers_rung
from tiny_mlp_bench.timing import FIT_PARTS, SETUP_PARTS

TIERS = ("the question", "never measured on a GPU", "the rest")
# Snakemake's own start and the program's, before its first phase: a nothing-to-do Snakemake call
# took 1.2 s and a one-second numpy run 3.2 s from the command on the 2-core development machine.
JOB_OVERHEAD_S = 3.0


@dataclass(frozen=True)
class Planned:
    job: jobs.Job
    tier: int  # 1, 2 or 3: the index into TIERS, plus one
    expected_s: float
    expected_from: str  # the archive whose record it comes from, or "estimate <pattern>"

    def as_dict(self) -> dict:
        return {
            "name": self.job.name,
            "output": self.job.output,
            "log": self.job.log,
            "device": self.job.device,
            "tier": self.tier,
            "tier_name": TIERS[self.tier - 1],
            "expected_s": round(self.expected_s, 1),
            "expected_from": self.expected_from,
        }


def measure_key(job: jobs.Job) -> tuple:
    """What a job measures, whatever its repeat: what an earlier study may have measured already."""
    return (job.rule, job.device, job.framework, job.variant)


def this_machine(gpu: str | None) -> dict:
    return {"cpu_model": environment.cpu_model(), "logical_cpus": os.cpu_count(), "gpu_name": gpu}


def same_machine(env: dict, machine: dict, device: str) -> bool:
    """Whether a record's environment is of this machine's kind, for a job on ``device``."""
    same_cpu = (env.get("cpu_model"), env.get("logical_cpus")) == (machine["cpu_model"], machine["logical_cpus"])
    return same_cpu and (device == "cpu" or env.get("gpu_name") == machine["gpu_name"])


def archived(archives: Path):
    """Every ok record in the archives, newest archive first, as (archive name, record path, record)."""
    folders = []
    for folder in archives.glob("*/provenance.json") if archives.is_dir() else []:
        started = json.loads(folder.read_text())["study"].get("first_run_started") or ""
        folders.append((started, folder.parent))
    for _, folder in sorted(folders, reverse=True):
        for kind in ("runs", "sweep", "probes"):
            for path in sorted((folder / kind).glob("*.json")):
                record = records.upgrade(json.loads(path.read_text()))
                if record.get("status") == "ok":
                    yield folder.name, kind, record


def record_key(kind: str, record: dict) -> tuple:
    if kind == "runs":
        identity = record["identity"]
        return ("train", identity["device"], identity["framework"], identity["variant"])
    if kind == "sweep":
        return ("sweep_crossover", record["device"], None, None)
    return ("probe_fixed_costs", record["device"], record["framework"], None)


def measured_on_gpus(ok_records: list[tuple]) -> set[tuple]:
    """What some archived record from a GPU measured on cuda, by measure_key."""
    return {
        record_key(kind, record)
        for _, kind, record in ok_records
        if record.get("environment", {}).get("gpu_name") and record_key(kind, record)[1] == "cuda"
    }


def archived_seconds(ok_records: list[tuple], machine: dict, epochs: int) -> dict[tuple, tuple[float, str]]:
    """Per measure_key, the seconds the newest training record of this machine kind took, and its archive."""
    found = {}
    for name, kind, record in ok_records:
        key = record_key(kind, record)
        if kind != "runs" or key in found or not same_machine(record["environment"], machine, key[1]):
            continue
        # The set-up's and the fit's parts lie inside them (the fit is scaled whole): counted once.
        inside = (*SETUP_PARTS, *FIT_PARTS)
        phases = {name: s for name, s in record["timings"]["phases_s"].items() if name not in inside}
        phases["fit"] = phases.get("fit", 0.0) * epochs / record["parameters"]["epochs"]
        found[key] = (JOB_OVERHEAD_S + sum(phases.values()), name)
    return found


def estimate(job: jobs.Job, estimates: dict[str, float]) -> tuple[float, str]:
    matching = [pattern for pattern in estimates if fnmatch.fnmatchcase(job.name, pattern)]
    if not matching:
        raise ValueError(f"no estimate in plan_estimates_s matches {job.name}: add a pattern, or '*'")
    pattern = max(matching, key=lambda p: (len(p.replace("*", "")), p))
    return float(estimates[pattern]), f"estimate {pattern}"


def cuda_side(job: jobs.Job) -> tuple | None:
    """The measure_key of the same measurement on cuda; None for a rung that runs on cpu only."""
    if job.rule == "train" and not catalogue.variant(job.framework, job.variant).runs_on("cuda"):
        return None
    return (job.rule, "cuda", job.framework, job.variant)


def question(frameworks: list[str]) -> set[tuple[str, str]]:
    """The (framework, variant) of the runs that answer the question, in a study of ``frameworks``:
    the asker's torch loop and the asker's `fit` in the Keras that stands for the asker's."""
    return {(framework, askers_rung(framework)) for framework in (TORCH, askers_keras(frameworks))}


def tier(job: jobs.Job, question: set[tuple], measured: set[tuple]) -> int:
    if (job.repeat or 1) > 1:
        return 3
    if job.rule == "train" and (job.framework, job.variant) in question:
        return 1
    # The cuda side no GPU has measured yet; the cpu twin is the same machine's comparison.
    return 2 if cuda_side(job) not in measured | {None} else 3


def plan(config: dict, archives: Path, gpu: str | None) -> list[Planned]:
    """The config's timed jobs in the order to run them, each with its expected time."""
    timed = jobs.timed_jobs(config)
    first = question(config["frameworks"])
    ok_records = list(archived(archives))  # read once: both questions are asked of every record
    measured = measured_on_gpus(ok_records)
    seconds = archived_seconds(ok_records, this_machine(gpu), config["epochs"])
    planned = []
    for job in timed:
        expected = seconds.get(measure_key(job)) or estimate(job, config["plan_estimates_s"])
        planned.append(Planned(job, tier(job, first, measured), *expected))
    return sorted(planned, key=lambda p: p.tier)  # stable: the config's order within a tier


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="the config as run (results/config.yaml)")
    parser.add_argument("--archives", type=Path, required=True, help="the archived studies (results/archive)")
    parser.add_argument("--gpu", help="this machine's GPU, as torch names it (none: no GPU)")
    args = parser.parse_args(argv)
    config = yaml.safe_load(args.config.read_text())
    try:
        planned = plan(config, args.archives, args.gpu)
    except ValueError as err:
        print(f"error: {args.config}: {err}", file=sys.stderr)
        return 1
    json.dump([p.as_dict() for p in planned], sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
