"""A timed job's options, declared once: each a dataclass field whose metadata the job's command parses
(cli.add_fields) and whose values its rule passes (JobOptions.flags), from the config where a field names a key."""

from __future__ import annotations

from dataclasses import fields

from tiny_mlp_bench import cli
from tiny_mlp_bench.backends.contract import RunSpec
from tiny_mlp_bench.initial_weights import live_initial_weights


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


def run_spec(job, data, *, variant: str, repeat: int, epochs: int, threads: int, compile_cache=None) -> RunSpec:
    """What a backend is told of a training run or a probe: the job's shared options as it has them, and the
    initial weights of ``repeat``, drawn from the dataset's seed, so that a probe (repeat 1) starts where a
    training run's first repeat does."""
    init_seed = data.metadata["seed"] + repeat - 1
    return RunSpec(
        device=job.device,
        variant=variant,
        repeat=repeat,
        init_seed=init_seed,
        weights=live_initial_weights(init_seed, job.hidden_units, data.train[:, :2]),
        epochs=epochs,
        batch_size=job.batch_size,
        learning_rate=job.learning_rate,
        hidden_units=job.hidden_units,
        threads=threads,
        compile_cache=compile_cache,
    )


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
