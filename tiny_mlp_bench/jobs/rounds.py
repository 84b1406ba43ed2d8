"""The timed jobs a study's config asks for, and the seeded rounds they run in: the rules and the GPU study's plan
read them."""

from __future__ import annotations

import random

from tiny_mlp_bench import catalogue, question, registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.jobs.identity import IDLE, Job
from tiny_mlp_bench.stacks import TODAY, runs_on_stack

# Besides the asker's loops; the A/A ratio is read against every claim's, so it and its reference need as many runs.
CLAIMED_ROLES = (Role.FLOOR, Role.AA_CONTROL, Role.REFERENCE)


def rung_repeats(config: dict, framework: str, variant: str) -> int:
    """Runs a rung gets: ``claim_repeats`` (if larger) for rungs the answer's claims compare, else ``repeats``."""
    role = registry.rung(framework, variant).role
    askers = framework in (question.TORCH, question.askers_keras(config["frameworks"])) and role is Role.ASKERS
    claimed = askers or role in CLAIMED_ROLES
    return max(config["repeats"], config["claim_repeats"]) if claimed else config["repeats"]


def training_runs(config: dict) -> list[Job]:
    """framework x device x its rungs x repeat x condition x stack, where the catalogue says the rung runs on the
    device; on a stack other than today's, idle runs of the rungs the era runner runs (stacks.runs_on_stack)."""
    return [
        Job("train", device, framework, variant, repeat, condition, stack)
        for framework in config["frameworks"]
        for device in config["devices"]
        for variant in config["variants"][framework]
        if registry.rung(framework, variant).runs_on(device)
        for repeat in range(1, rung_repeats(config, framework, variant) + 1)
        for condition in config.get("conditions", (IDLE,))  # a config from before conditions: idle
        for stack in config.get("stacks", (TODAY,))  # a config from before stacks: today's
        if stack == TODAY or (condition == IDLE and runs_on_stack(framework, variant, device, stack))
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
    """Every timed job in study order: round by round, each shuffled by ``run_order_seed`` (the rules' priority)."""
    return [job for round_jobs in in_rounds(timed_jobs(config), config["run_order_seed"]) for job in round_jobs]


def in_rounds(timed: list[Job], seed: int) -> list[list[Job]]:
    """Round r holds every job's r-th repeat (sweeps and probes in the first), shuffled by ``seed`` and r."""
    rounds: dict[int, list[Job]] = {}
    for job in timed:
        rounds.setdefault(job.repeat or 1, []).append(job)
    ordered = []
    for number in sorted(rounds):
        jobs = list(rounds[number])
        random.Random(f"{seed}:{number}").shuffle(jobs)
        ordered.append(jobs)
    return ordered
