"""The timed jobs a study's config asks for, and the files they write: one list for the rules
(rules/common.smk expands the report's inputs from it) and for the GPU study's plan (plan.py)."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath

from tiny_mlp_bench import catalogue, question
from tiny_mlp_bench.catalogue import Role

# The timed rules' outputs (rules/train.smk).
OUTPUTS = {
    "train": "results/runs/{framework}-{device}-{variant}-{repeat}.json",
    "sweep_crossover": "results/sweep/{device}.json",
    "probe_fixed_costs": "results/probes/{framework}-{device}.json",
}


# A compiling rung's compiler cache (catalogue.Variant.compiles), shared by the study's runs of it: its
# first run empties it and compiles cold, each later run starts after the first and reuses what it
# compiled. Each cold compilation is then measured once a study, and the other runs' records say warm.
COMPILE_CACHE = "results/compile_cache/{framework}-{device}-{variant}"


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

    @property
    def compile_cache(self) -> str | None:
        """The compiler cache a training run of a compiling rung shares with its rung's other runs; None
        for every other job."""
        if self.rule != "train" or not catalogue.variant(self.framework, self.variant).compiles:
            return None
        return COMPILE_CACHE.format(**asdict(self))

    @property
    def compiled_first(self) -> Job | None:
        """The run whose cold compilation this one's cache holds: the rung's first, for its later runs."""
        if self.compile_cache is None or self.repeat == 1:
            return None
        return Job(self.rule, self.device, self.framework, self.variant, 1)


# Besides the asker's loops: each device's floor, and the A/A control with the reference whose code it
# runs, whose ratio is read against every claim's and so needs as many runs to be bounded.
CLAIMED_ROLES = (Role.FLOOR, Role.AA_CONTROL, Role.REFERENCE)


def rung_repeats(config: dict, framework: str, variant: str) -> int:
    """How many runs a rung gets: ``claim_repeats`` for those the answer's claims compare (the asker's torch
    loop, the asker's Keras ``fit``, each device's floor, and the A/A control's pair), where it is more
    than ``repeats``, which every other rung gets."""
    role = catalogue.variant(framework, variant).role
    askers = framework in (question.TORCH, question.askers_keras(config["frameworks"])) and role is Role.ASKERS
    claimed = askers or role in CLAIMED_ROLES
    return max(config["repeats"], config["claim_repeats"]) if claimed else config["repeats"]


def training_runs(config: dict) -> list[Job]:
    """framework x device x its variants x repeat, where the catalogue says the variant runs on the device."""
    return [
        Job("train", device, framework, variant, repeat)
        for framework in config["frameworks"]
        for device in config["devices"]
        for variant in config["variants"][framework]
        if catalogue.variant(framework, variant).runs_on(device)
        for repeat in range(1, rung_repeats(config, framework, variant) + 1)
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


def run_order(config: dict) -> list[Job]:
    """Every timed job of the config in the order the study runs them: round by round, each round in the
    order ``run_order_seed`` draws (the rules give each job its place as its priority)."""
    return [job for round_jobs in in_rounds(timed_jobs(config), config["run_order_seed"]) for job in round_jobs]


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
