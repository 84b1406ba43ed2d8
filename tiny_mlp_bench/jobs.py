"""The timed jobs a study's config asks for, and the files they write: one list for the rules
(rules/common.smk expands the report's inputs from it) and for the GPU study's plan (plan.py)."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath

from tiny_mlp_bench import catalogue

# The timed rules' outputs (rules/train.smk).
OUTPUTS = {
    "train": "results/runs/{framework}-{device}-{variant}-{repeat}.json",
    "sweep_crossover": "results/sweep/{device}.json",
    "probe_fixed_costs": "results/probes/{framework}-{device}.json",
}


def log_pattern(rule: str) -> str:
    """A timed rule's log: logs/<rule>/<its output's file stem>.log."""
    return f"logs/{rule}/{PurePosixPath(OUTPUTS[rule]).stem}.log"


@dataclass(frozen=True)
class Job:
    """One timed job: a training run, a device's crossover sweep, or a framework's probe on a device."""

    rule: str
    device: str
    framework: str | None = None
    variant: str | None = None
    repeat: int | None = None

    @property
    def output(self) -> str:
        return OUTPUTS[self.rule].format(**asdict(self))

    @property
    def log(self) -> str:
        return log_pattern(self.rule).format(**asdict(self))

    @property
    def name(self) -> str:
        """How the study's log and the archive's README name it: the run id, sweep-<device>, probe-<pair>."""
        if self.rule == "train":
            return f"{self.framework}-{self.device}-{self.variant}-{self.repeat}"
        if self.rule == "sweep_crossover":
            return f"sweep-{self.device}"
        return f"probe-{self.framework}-{self.device}"


def training_runs(config: dict) -> list[Job]:
    """framework x device x its variants x repeat, where the catalogue says the variant runs on the device."""
    return [
        Job("train", device, framework, variant, repeat)
        for framework in config["frameworks"]
        for device in config["devices"]
        for variant in config["variants"][framework]
        if catalogue.variant(framework, variant).runs_on(device)
        for repeat in range(1, config["repeats"] + 1)
    ]


def sweeps(config: dict) -> list[Job]:
    return [Job("sweep_crossover", device) for device in config["devices"]]


def probes(config: dict) -> list[Job]:
    """A fixed-cost probe per probed framework of the study (the catalogue says which) and device."""
    return [
        Job("probe_fixed_costs", device, framework)
        for framework in config["frameworks"]
        if catalogue.framework(framework).probed
        for device in config["devices"]
    ]


def timed_jobs(config: dict) -> list[Job]:
    return training_runs(config) + sweeps(config) + probes(config)


def in_rounds(timed: list[Job], seed: int) -> list[list[Job]]:
    """The jobs in rounds, round r holding every job's r-th repeat (a sweep or a probe, which has none,
    in the first), each round in an order drawn from ``seed`` and the round's number.

    Run round by round, every rung's runs spread over the study's time, so that a repeat's number
    and the time of day go with no rung; the seed, recorded, makes the order again.
    """
    rounds: dict[int, list[Job]] = {}
    for job in timed:
        rounds.setdefault(job.repeat or 1, []).append(job)
    ordered = []
    for number in sorted(rounds):
        jobs = list(rounds[number])
        random.Random(f"{seed}:{number}").shuffle(jobs)
        ordered.append(jobs)
    return ordered
