"""The timed jobs a study's config asks for and the files they write, for the rules and the GPU study's plan."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path, PurePosixPath

from tiny_mlp_bench import catalogue, cli, question, registry
from tiny_mlp_bench.catalogue import Role

DATASET = "results/data/dataset.parquet"  # rules/dataset.smk's output, which every training run reads
OUTPUTS = {
    "train": "results/runs/{framework}-{device}-{variant}-{repeat}.json",
    # A run beside one busy core (neighbour.py): a rule of its own, so that its file name and run id say so.
    "train_busy": "results/runs/{framework}-{device}-{variant}-busy-{repeat}.json",
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

    @property
    def workflow_rule(self) -> str:
        """The Snakemake rule that makes it: a busy run's is train_busy."""
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
        if self.rule != "train" or not registry.variant(self.framework, self.variant).compiles:
            return None
        return COMPILE_CACHE.format(**asdict(self)) + (f"-{BUSY}" if self.condition == BUSY else "")

    @property
    def compiled_first(self) -> Job | None:
        """The run whose cold compilation this one's cache holds: the rung's first, for its later runs."""
        if self.compile_cache is None or self.repeat == 1:
            return None
        return Job(self.rule, self.device, self.framework, self.variant, 1, self.condition)


def about(help: str, kind=str, config: str | None = None, choices=None) -> dict:
    """A job option's metadata: help, type, choices and dotted config key (no default: a required option)."""
    return {"help": help, "type": kind, "config": config, "choices": choices}


# threads names no config key: the rule passes cpu_threads, or with 0 every core Snakemake gives the job.
SHARED = {
    "batch_size": about("rows per optimiser step: the config's batch_size", cli.positive_int, "batch_size"),
    "learning_rate": about("Adam's learning rate: the config's learning_rate", cli.positive_float, "learning_rate"),
    "hidden_units": about("width of the hidden layer: the config's hidden_units", cli.positive_int, "hidden_units"),
    "threads": about(
        "CPU threads for the framework: the config's cpu_threads, or with 0 the job's cores", cli.positive_int
    ),
}


class JobOptions:
    """A timed job's options, one field per command-line option: its rule passes ``flags``, cli builds the parser."""

    def flags(self, leave_out: tuple[str, ...] = ()) -> list[str]:
        """The options that ask the job's command for this job (less the fields named in ``leave_out``)."""
        found = []
        for spec in (spec for spec in fields(self) if spec.name not in leave_out):
            value, flag = getattr(self, spec.name), "--" + spec.name.replace("_", "-")
            if spec.metadata["type"] is bool:
                found += [flag] if value else []
            elif isinstance(value, list):
                found += [flag, ",".join(map(str, value))]
            elif value is not None:
                found += [flag, str(value)]
        return found

    @classmethod
    def of_config(cls, config: dict, **job):
        """The job ``job`` names, with the config's values for the other fields."""
        from_config = {}
        for spec in fields(cls):
            if spec.metadata["config"]:
                value = config
                for key in spec.metadata["config"].split("."):
                    value = value[key]
                from_config[spec.name] = value
        return cls(**job, **from_config)


REQUIRE_GPU = about(
    "fail instead of recording 'skipped' when the GPU is missing: the config's require_gpu", bool, "require_gpu"
)


@dataclass(frozen=True)
class TrainingJob(JobOptions):
    """A training run as the train rule asks for it and the driver runs it (`tiny-mlp-bench run`)."""

    framework: str = field(metadata=about("the framework (the job's {framework})", choices=catalogue.framework_names()))
    device: str = field(metadata=about("device to train on (the job's {device})", choices=catalogue.DEVICES))
    repeat: int = field(
        metadata=about(
            "repeat number (the job's {repeat}); the weights are drawn from seed + repeat - 1", cli.positive_int
        )
    )
    dataset: Path = field(metadata=about("Parquet file from make_dataset.py", Path))
    output: Path = field(metadata=about("run record to write (.json)", Path))
    epochs: int = field(
        metadata=about("passes over the training rows: the config's epochs", cli.positive_int, "epochs")
    )
    batch_size: int = field(metadata=SHARED["batch_size"])
    learning_rate: float = field(metadata=SHARED["learning_rate"])
    hidden_units: int = field(metadata=SHARED["hidden_units"])
    threads: int = field(metadata=SHARED["threads"])
    min_r2: float = field(
        metadata=about(
            "train R^2 at or above which a run counts as converged: the config's convergence_min_r2",
            float,
            "convergence_min_r2",
        )
    )
    steady_window_s: float = field(
        metadata=about(
            "seconds of steady blocks after the timing point (0: none): the config's steady_window_s",
            cli.non_negative_float,
            "steady_window_s",
        )
    )
    steady_block_s: float = field(
        metadata=about(
            "wall seconds of one steady block: the config's steady_block_s", cli.positive_float, "steady_block_s"
        )
    )
    variant: str | None = field(
        default=None, metadata=about("training-loop variant (the job's {variant}); default: the framework's first")
    )
    require_gpu: bool = field(default=False, metadata=REQUIRE_GPU)
    condition: str = field(
        default=IDLE,
        metadata=about("what the run is set beside: nothing, or one busy core (the job's rule)", choices=CONDITIONS),
    )
    compile_cache: Path | None = field(
        default=None,
        metadata=about(
            "the compiler cache a compiling rung's runs share (the workflow gives results/compile_cache/<rung>): "
            "repeat 1 empties it and compiles cold, a later repeat reuses what it compiled; the record's "
            "method.compile_cache says which. Default: an empty cache of the run's own",
            Path,
        ),
    )

    @property
    def job(self) -> Job:
        return Job("train", self.device, self.framework, self.variant, self.repeat, self.condition)

    def flags(self, leave_out: tuple[str, ...] = ()) -> list[str]:
        # An idle run's options are what they were before conditions: a finished study's runs do not rerun.
        return super().flags(leave_out + (("condition",) if self.condition == IDLE else ()))


def training_job(config: dict, job: Job, threads: int) -> TrainingJob:
    return TrainingJob.of_config(
        config,
        framework=job.framework,
        device=job.device,
        variant=job.variant,
        repeat=job.repeat,
        dataset=Path(DATASET),
        output=Path(job.output),
        threads=threads,
        condition=job.condition,
        compile_cache=None if job.compile_cache is None else Path(job.compile_cache),
    )


@dataclass(frozen=True)
class SweepJob(JobOptions):
    """One device's crossover sweep as the sweep rule asks for it (`tiny-mlp-bench sweep`)."""

    device: str = field(metadata=about("device to sweep (the job's {device})", choices=catalogue.DEVICES))
    output: Path = field(metadata=about("sweep record to write (.json)", Path))
    batch_sizes: list[int] = field(
        metadata=about(
            "the grid's batch sizes, comma-separated (e.g. 64,1024): the config's sweep.batch_sizes",
            cli.csv_ints,
            "sweep.batch_sizes",
        )
    )
    hidden_units: list[int] = field(
        metadata=about(
            "the grid's widths, comma-separated: the config's sweep.hidden_units", cli.csv_ints, "sweep.hidden_units"
        )
    )
    steps: int = field(
        metadata=about("timed steps per block: the config's sweep.steps", cli.positive_int, "sweep.steps")
    )
    threads: int = field(metadata=SHARED["threads"])
    require_gpu: bool = field(default=False, metadata=REQUIRE_GPU)


def sweep_job(config: dict, job: Job, threads: int) -> SweepJob:
    return SweepJob.of_config(config, device=job.device, output=Path(job.output), threads=threads)


@dataclass(frozen=True)
class ProbeJob(JobOptions):
    """One framework's fixed-cost probes on one device as the probe rule asks for them (`tiny-mlp-bench probe`)."""

    framework: str = field(
        metadata=about(
            "the framework (the job's {framework})", choices=[f.name for f in catalogue.FRAMEWORKS if f.probed]
        )
    )
    device: str = field(metadata=about("device to probe (the job's {device})", choices=catalogue.DEVICES))
    dataset: Path = field(metadata=about("the dataset's Parquet file", Path))
    output: Path = field(metadata=about("probe record to write (.json)", Path))
    batch_size: int = field(metadata=SHARED["batch_size"])
    hidden_units: int = field(metadata=SHARED["hidden_units"])
    learning_rate: float = field(metadata=SHARED["learning_rate"])
    threads: int = field(metadata=SHARED["threads"])
    require_gpu: bool = field(default=False, metadata=REQUIRE_GPU)


def probe_job(config: dict, job: Job, threads: int) -> ProbeJob:
    return ProbeJob.of_config(
        config,
        framework=job.framework,
        device=job.device,
        dataset=Path(DATASET),
        output=Path(job.output),
        threads=threads,
    )


# Besides the asker's loops; the A/A ratio is read against every claim's, so it and its reference need as many runs.
CLAIMED_ROLES = (Role.FLOOR, Role.AA_CONTROL, Role.REFERENCE)


def rung_repeats(config: dict, framework: str, variant: str) -> int:
    """Runs a rung gets: ``claim_repeats`` (if larger) for rungs the answer's claims compare, else ``repeats``."""
    role = registry.variant(framework, variant).role
    askers = framework in (question.TORCH, question.askers_keras(config["frameworks"])) and role is Role.ASKERS
    claimed = askers or role in CLAIMED_ROLES
    return max(config["repeats"], config["claim_repeats"]) if claimed else config["repeats"]


def training_runs(config: dict) -> list[Job]:
    """framework x device x its variants x repeat x condition, where the catalogue says the variant runs on the
    device."""
    return [
        Job("train", device, framework, variant, repeat, condition)
        for framework in config["frameworks"]
        for device in config["devices"]
        for variant in config["variants"][framework]
        if registry.variant(framework, variant).runs_on(device)
        for repeat in range(1, rung_repeats(config, framework, variant) + 1)
        for condition in config.get("conditions", (IDLE,))  # a config from before conditions: idle
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
