"""A timed job's identity and the files it writes: what the rules, the rounds and the GPU study's plan name it by."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import PurePosixPath

from tiny_mlp_bench import registry
from tiny_mlp_bench.stacks import TODAY

DATASET = "results/data/dataset.parquet"  # rules/dataset.smk's output, which every training run reads
OUTPUTS = {
    "train": "results/runs/{framework}-{device}-{variant}-{repeat}.json",
    # A run beside one busy core (neighbour.py): a rule of its own, so that its file name and run id say so.
    "train_busy": "results/runs/{framework}-{device}-{variant}-busy-{repeat}.json",
    # A run on another stack than today's (stacks.py, the era study's): its file name and run id say which.
    "train_stack": "results/runs/{framework}-{device}-{variant}-{stack}-{repeat}.json",
    # A stack's untimed warm-up, before its first timed run of a framework: its record is not a run's.
    "warm_up_stack": "results/stacks/warm-up-{framework}-{device}-{stack}.json",
    "sweep_crossover": "results/sweep/{device}.json",
    "probe_fixed_costs": "results/probes/{framework}-{device}.json",
}


# Shared by a compiling rung's runs: the first compiles cold, later ones reuse it, so cold is measured once a study.
COMPILE_CACHE = "results/compile_cache/{framework}-{device}-{variant}"

# What a training run is set beside (the config's `conditions`): nothing, or one busy core.
IDLE, BUSY = "idle", "busy"
CONDITIONS = (IDLE, BUSY)


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
    condition: str = IDLE  # a training run's: what it is set beside
    stack: str = TODAY  # a training run's: the software it trains on (stacks.py)

    @property
    def workflow_rule(self) -> str:
        """The Snakemake rule that makes it: a busy run's is train_busy, another stack's run's train_stack."""
        if self.stack != TODAY:
            return f"{self.rule}_stack"
        return f"{self.rule}_{BUSY}" if self.condition == BUSY else self.rule

    @property
    def output(self) -> str:
        return OUTPUTS[self.workflow_rule].format(**asdict(self))

    @property
    def log(self) -> str:
        return log_pattern(self.workflow_rule).format(**asdict(self))

    @property
    def name(self) -> str:
        """How the study's log and the archive's README name it: the run id (its record's file stem),
        sweep-<device>, probe-<pair>."""
        if self.rule == "train":
            return PurePosixPath(self.output).stem
        if self.rule == "sweep_crossover":
            return f"sweep-{self.device}"
        return f"probe-{self.framework}-{self.device}"

    @property
    def compile_cache(self) -> str | None:
        """The compiler cache a compiling rung's training runs share (per condition); None for every other job."""
        if self.rule != "train" or not registry.rung(self.framework, self.variant).compiles:
            return None
        return COMPILE_CACHE.format(**asdict(self)) + (f"-{BUSY}" if self.condition == BUSY else "")

    @property
    def compiled_first(self) -> Job | None:
        """The run whose cold compilation this one's cache holds: the rung's first, for its later runs."""
        if self.compile_cache is None or self.repeat == 1:
            return None
        return Job(self.rule, self.device, self.framework, self.variant, 1, self.condition)
