"""`tiny-mlp-bench run` (scripts/train.py, the train rule's program): a training run's options, and the run set up,
trained and predicted inside the asker's timing point, scored and recorded; on another stack than today's
(stacks.py), measured by the era runner (era_runner.py) on the host or in the stack's image, and recorded here."""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tiny_mlp_bench import CHECKOUT, catalogue, cli, containers, registry
from tiny_mlp_bench.backends.contract import Backend, Loop, RunSpec, Training, epochs_per_call
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.dataset import Dataset
from tiny_mlp_bench.era_runner import ROWS, WEIGHTS
from tiny_mlp_bench.initial_weights import SCHEME
from tiny_mlp_bench.jobs.envelope import DeviceMissing, Measurement, run_job
from tiny_mlp_bench.jobs.identity import BUSY, CONDITIONS, DATASET, IDLE, Job
from tiny_mlp_bench.jobs.options import REQUIRE_GPU, SHARED, JobOptions, about, run_spec
from tiny_mlp_bench.machine import clocksource
from tiny_mlp_bench.neighbour import busy_core, neighbour_core
from tiny_mlp_bench.question import TORCH
from tiny_mlp_bench.records import RECORD_TYPE, SCHEMA_VERSION, write_record
from tiny_mlp_bench.stacks import RUNNER_LOOPS, STACKS, TODAY, stack_engine
from tiny_mlp_bench.timing import METHOD, Clock, per_step_window


@dataclass(frozen=True)
class TrainingJob(JobOptions):
    """A training run as the train rule asks for it and TrainingRun runs it (`tiny-mlp-bench run`)."""

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
        default=None, metadata=about("the rung (the job's {variant}); default: the framework's first")
    )
    require_gpu: bool = field(default=False, metadata=REQUIRE_GPU)
    condition: str = field(
        default=IDLE,
        metadata=about("what the run is set beside: nothing, or one busy core (the job's rule)", choices=CONDITIONS),
    )
    stack: str = field(
        default=TODAY,
        metadata=about(
            "the software the run trains on (stacks.py; the job's {stack}): today's loops here, or the era runner's "
            "copy of them on another stack",
            choices=tuple(STACKS),
        ),
    )
    stack_image: str | None = field(
        default=None,
        metadata=about("the image a run on another stack runs in (none: this machine's environment)"),
    )
    engine: str = field(
        default="podman",
        metadata=about("the container engine a run on another stack runs its image with", choices=("docker", "podman")),
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
        return Job("train", self.device, self.framework, self.variant, self.repeat, self.condition, self.stack)

    def flags(self, leave_out: tuple[str, ...] = ()) -> list[str]:
        # An idle run's options on today's stack are what they were before conditions and stacks: a finished
        # study's runs do not rerun.
        today = ("stack", "stack_image", "engine") if self.stack == TODAY else ()
        return super().flags(leave_out + (("condition",) if self.condition == IDLE else ()) + today)


def training_job(config: dict, job: Job, threads: int) -> TrainingJob:
    on_stack = {}
    if job.stack != TODAY:
        on_stack = {
            "stack": job.stack,
            "stack_image": STACKS[job.stack].image_for(job.framework, config["images"]),
            "engine": stack_engine(config),
        }
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
        **on_stack,
    )


def score(training: Training, data: Dataset, min_r2: float) -> dict:
    """Quality block: MSE on all train and test rows and whether training converged."""
    predicted = [training.predict(rows[:, :2]) for rows in (data.train, data.test)]
    return score_predictions(*predicted, training.final_train_loss(), data, min_r2)


def score_predictions(train, test, final_train_loss: float, data: Dataset, min_r2: float) -> dict:
    """The quality block of a run's predictions on every train and test row, and its last training loss."""

    def mse(pred, rows: np.ndarray) -> float:
        pred = np.asarray(pred, dtype=np.float64).reshape(-1)
        return float(np.mean((pred - rows[:, 2]) ** 2))

    def finite_or_none(value: float) -> float | None:
        return value if math.isfinite(value) else None

    train_mse, test_mse = mse(train, data.train), mse(test, data.test)
    r2 = 1.0 - train_mse / float(np.var(data.train[:, 2]))
    return {
        "final_train_loss": finite_or_none(float(final_train_loss)),
        "train_mse": finite_or_none(train_mse),
        "test_mse": finite_or_none(test_mse),
        "train_r2": finite_or_none(r2),
        "converged": bool(math.isfinite(r2) and r2 >= min_r2),
        "min_r2": min_r2,
    }


def time_and_score(
    backend: Backend, loop: Loop, fw, spec: RunSpec, data: Dataset, clock: Clock, min_r2: float, window: tuple
):
    """Time set-up, fit and predict, then score: (quality, details, steps, steady); ``window``: (window s, block s)."""
    clock.sync = backend.prepare(fw, spec)
    with clock.timing_point():
        with clock.phase("setup"):
            with clock.phase("startup"):
                missing = backend.start_device(fw, spec)
            if missing is not None:
                raise DeviceMissing(missing)
            training = loop(fw, spec, data, clock)
        with clock.phase("fit"):
            training.fit(clock, spec.epochs)
        with clock.phase("predict"):
            training.predict_test_batch()
    quality, steps = score(training, data, min_r2), training.steps_taken()
    window_s, block_s = window
    steady = None
    if window_s > 0:

        def rebuild() -> Training:  # the loop's set-up again, untimed
            return loop(fw, spec, data, Clock(clock.sync))

        per_call = epochs_per_call(training)
        steady, training = per_step_window(training, rebuild, clock, spec.epochs, per_call, window_s, block_s)
    syncs = training.host_syncs_per_epoch()
    details = training.details if syncs is None else {**training.details, "host_syncs_per_epoch": str(syncs)}
    details = {**details, **training.after_timing()}
    return quality, details, steps, steady


def prepare_compile_cache(cache: Path, first_run: bool) -> str:
    """Ready ``cache`` and return what the run finds (``method.compile_cache``): the rung's first run empties it,
    ``cold``; a later one finds the first's work, ``warm``, or an empty cache, ``cold``. Outside the timing point."""
    if first_run:
        shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    return "warm" if any(cache.iterdir()) else "cold"


class TrainingRun(Measurement):
    """One training run as the train rule asks (scripts/train.py): the envelope's measurement of a run."""

    kind = "run"

    def __init__(self, job: TrainingJob, backend: Backend | None = None, loop: Loop | None = None):
        self.job = job
        self.framework, self.device, self.require_gpu = job.framework, job.device, job.require_gpu
        self.output, self.dataset, self.write = job.output, job.dataset, write_record
        self.label = job.job.name
        # A test hands in a framework-free backend and loop; a job takes the registered ones.
        self._backend, self._loop = backend, loop
        self.started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self.quality, self.details, self.steps_taken, self.steady = None, {}, None, None
        self.neighbour = None  # beside a busy core: its core and the CPU it got (neighbour.busy_core)
        self.compile_cache = "cold"  # what the run found in its compiler cache (a run that compiles nothing: cold)

    @property
    def backend(self) -> Backend:
        return self._backend or registry.backend(self.framework)

    def read(self, data: Dataset) -> None:
        job = self.job
        self.data = data
        self.spec = run_spec(
            job,
            data,
            variant=job.variant,
            repeat=job.repeat,
            epochs=job.epochs,
            # A rung that fixes its thread count (one_thread) runs with it whatever the job was given.
            threads=registry.rung(job.framework, job.variant).threads or job.threads,
            compile_cache=None if job.compile_cache is None else str(job.compile_cache.resolve()),
        )
        self.clock = Clock(label=self.label, planned_epochs=self.spec.epochs)

    def not_on_device(self) -> str | None:
        """The catalogue decides which devices a rung runs on; starting the device, whether it is there."""
        listed = registry.rung(self.framework, self.spec.variant)
        return None if listed.runs_on(self.device) else listed.why_not_on(self.device)

    def load(self):
        rung = registry.rung(self.framework, self.spec.variant)
        imported = [name for name in catalogue.framework(self.framework).packages if name in sys.modules]
        if rung.environment and imported:
            raise RuntimeError(
                f"{self.framework} {rung.name} sets {', '.join(name for name, _ in rung.environment)} before "
                f"{imported[0]}'s import, but this process has imported it already: run it in a process of its own"
            )
        os.environ.update(dict(rung.environment))
        with self.clock.phase("import"):
            fw = super().load()
            for module in rung.imports:
                importlib.import_module(module)
            return fw

    def measure(self, fw, data: Dataset) -> None:
        self.say(f"training {self.spec.epochs} epochs on {self.device}")
        if self.spec.compile_cache is not None:
            self.compile_cache = prepare_compile_cache(Path(self.spec.compile_cache), self.spec.repeat == 1)
            self.say(f"compiler cache {self.job.compile_cache}: {self.compile_cache}")
        loop = self._loop or registry.loop(self.framework, self.spec.variant)
        window = (self.job.steady_window_s, self.job.steady_block_s)
        busy = self.job.condition == BUSY
        if busy:
            self.say(f"beside one busy core (core {neighbour_core()} of {len(os.sched_getaffinity(0))})")
        # Busy from before the timing point to after the per-step window: the whole of what is timed.
        with busy_core(busy) as reading:
            self.quality, self.details, self.steps_taken, self.steady = time_and_score(
                self.backend, loop, fw, self.spec, data, self.clock, self.job.min_r2, window
            )
        self.neighbour = reading or None

    def method(self) -> dict:
        return {**METHOD, "compile_cache": self.compile_cache}

    def record(self, status: str, reason: str | None) -> dict:
        spec, clock, data = self.spec, self.clock, self.data
        imported = {"import": clock.phases_s["import"]} if "import" in clock.phases_s else {}
        timings = clock.timings() if status == "ok" else {"phases_s": imported}
        if self.quality is not None:
            # The optimiser's own step count shows every batch ran, so that no rung is faster for doing less.
            timings["steps_per_epoch"] = math.ceil(len(data.train) / spec.batch_size)
            timings["steps_taken"] = self.steps_taken
            if self.steady is not None:
                timings["steady"] = self.steady
            expected = spec.epochs * timings["steps_per_epoch"]
            if self.steps_taken != expected:
                took = f"the loop took {self.steps_taken} optimiser steps, not the {expected} of its epochs"
                status, reason = "failed", took
            elif self.quality["train_mse"] is None:
                status, reason = "failed", "training diverged: the train MSE is not finite"
            test_mse = self.quality["test_mse"]  # the record keeps every digit; the log line, what they hold
            self.say(
                f"{clock.timing_point_s:.2f} s, test MSE {'not finite' if test_mse is None else f'{test_mse:.3g}'}"
            )
        return {
            "record_type": RECORD_TYPE,
            "schema_version": SCHEMA_VERSION,
            "identity": {
                "run_id": self.label,
                "framework": self.framework,
                "device": spec.device,
                "variant": spec.variant,
                "repeat": spec.repeat,
                "started_at": self.started_at,
                "condition": self.job.condition,
                "stack": self.job.stack,
            },
            "status": status,
            "reason": reason,
            "neighbour": self.neighbour,
            "parameters": parameters(spec, data.metadata, self.details, self.backend.own_init),
            "timings": timings,
            "quality": self.quality,
        }


def replayed_clock(timings: dict) -> Clock:
    """A clock holding what the runner's clock read, so that the record's timings are written as every run's are."""
    clock = Clock()
    clock.phases_s = dict(timings["phases_s"])
    clock.timing_point_s = timings["fit_predict_s"]
    clock.block_s, clock.block_cpu_s = list(timings["block_s"]), list(timings["block_cpu_s"])
    clock.block_epochs = list(timings["block_epochs"])
    clock.block_part_s = {part: list(seconds) for part, seconds in timings.get("block_part_s", {}).items()}
    return clock


class StackRun(TrainingRun):
    """One run of the asker's torch loop or Keras 2 `fit` on another stack, as the train_stack rule asks."""

    def __init__(self, job: TrainingJob):
        super().__init__(job)
        self.stack = STACKS[job.stack]
        self.runner: dict | None = None  # what the runner measured and reported of its stack
        self.image_id: str | None = None

    def load(self):
        return None  # the runner imports the framework, inside its own clock's import phase

    def command(self, inputs: Path, output: Path) -> list[str]:
        """The runner's command line: on the host's Python, or in the stack's image with the checkout mounted."""
        job, spec = self.job, self.spec
        args = ["-m", "tiny_mlp_bench.era_runner", "--loop", RUNNER_LOOPS[job.framework]]
        args += ["--inputs", str(inputs), "--output", str(output), "--label", self.label]
        args += ["--epochs", str(spec.epochs), "--batch-size", str(spec.batch_size)]
        args += ["--learning-rate", repr(spec.learning_rate), "--hidden-units", str(spec.hidden_units)]
        args += ["--threads", str(spec.threads), "--seed", str(spec.init_seed)]
        args += ["--steady-window-s", repr(job.steady_window_s), "--steady-block-s", repr(job.steady_block_s)]
        args += ["--parts"] if spec.variant == registry.rung_with_role(TORCH, Role.STEP_PARTS).name else []
        if job.stack_image is None:
            return [sys.executable, *args]
        image = containers.image_reference(job.stack_image)
        self.image_id = containers.image_id(job.engine, job.stack_image)
        # The checkout's package first on the image's path: the runner and its clock as this commit has them.
        environ = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
        mounts = [CHECKOUT, Path.cwd(), inputs]
        return containers.run_command(job.engine, image, ["python", *args], mounts, [], self.image_id, environ)

    def measure(self, fw, data: Dataset) -> None:
        self.say(f"training {self.spec.epochs} epochs on the {self.job.stack} stack")
        # Beside the record, so that the workspace's mount holds it; gone with the job, whatever it ends with.
        with tempfile.TemporaryDirectory(prefix=f".{self.label}-", dir=self.output.parent) as folder:
            inputs = Path(folder)
            for name in ROWS:
                np.save(inputs / f"{name}.npy", getattr(data, name).astype(np.float32))
            for name, value in zip(WEIGHTS, self.spec.weights.as_list(), strict=True):
                np.save(inputs / f"{name}.npy", value)
            os.chmod(inputs, 0o777)  # an image's own user writes the runner's output into it
            output = inputs / "result.json"
            env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
            done = subprocess.run(self.command(inputs, output), env=env, stdout=sys.stderr)
            if done.returncode != 0 or not output.is_file():
                raise RuntimeError(f"the era runner on the {self.job.stack} stack exited with {done.returncode}")
            self.runner = json.loads(output.read_text())
        timings = self.runner["timings"]
        self.steady = timings.pop("steady", None)
        self.clock = replayed_clock(timings)
        predicted = self.runner["predictions"]
        self.quality = score_predictions(
            predicted["train"], predicted["test"], self.runner["final_train_loss"], data, self.job.min_r2
        )
        self.steps_taken = self.runner["steps_taken"]
        self.details = {"stack": self.stack.what, "runner": "tiny_mlp_bench/era_runner.py", **self.runner["details"]}
        if "clock_reads_per_step" in self.details:  # read on the host: the container shares its kernel's clock
            self.details["clocksource"] = clocksource()

    def description(self, fw) -> tuple[dict, float | None]:
        """What the runner reported of its stack (nothing, where it did not finish); it hides every GPU."""
        runner = self.runner or {"versions": {}, "threads": {}}
        no_cuda = {"build_cuda": None, "build_cudnn": None, "driver": None}
        return {"versions": runner["versions"], "threads": runner["threads"], "cuda": no_cuda, "gpu_name": None}, None

    def environment(self, described: dict, dataset_sha256: str | None) -> dict:
        """This machine's, with the stack's Python and packages and the image the runner ran in."""
        found = super().environment(described, dataset_sha256)
        if self.runner is not None:
            found["python"] = self.runner["python"]
            found["versions"] = dict(self.runner["versions"])
        if self.job.stack_image is not None:
            found["container"] = {
                "engine": self.job.engine,
                "image": containers.image_reference(self.job.stack_image),
                "image_id": self.image_id,
            }
        return found


def run(job: TrainingJob, backend: Backend | None = None, loop: Loop | None = None) -> int:
    """One run as the train rule asks (scripts/train.py); writes the record. Returns the exit status."""
    if job.stack != TODAY:
        return run_job(StackRun(job))
    return run_job(TrainingRun(job, backend, loop))


def parameters(spec: RunSpec, meta: dict, details: dict[str, str], own_init: str | None = None) -> dict:
    """The record's parameters: the dataset's, the run's and what the rung used."""
    if own_init is None:
        init = {"scheme": SCHEME, "dead_draws_skipped": spec.weights.redraws}
    else:  # the framework drew its own weights: no draw of ours was skipped or used
        init = {"scheme": own_init, "dead_draws_skipped": None}
    return {
        "seed": meta["seed"],
        "init_seed": spec.init_seed,
        "init": init,
        **{key: meta[key] for key in ("n_rows", "n_train", "n_test")},
        "epochs": spec.epochs,
        "batch_size": spec.batch_size,
        "learning_rate": spec.learning_rate,
        "hidden_units": spec.hidden_units,
        "threads": spec.threads,
        "variant_details": details,
    }


def parse_args(argv=None, prog=None) -> TrainingJob:
    ladders = "; ".join(f"{f}: {', '.join(registry.rung_names(f))}" for f in catalogue.framework_names())
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Train the question's 2-20-1 MLP once, time it, and write one run record (JSON).",
        epilog=f"Frameworks and their rungs: {ladders}. {cli.CONFIG_EPILOG}",
    )
    cli.add_fields(parser, TrainingJob)
    args = parser.parse_args(argv)
    if args.variant is None:
        args.variant = registry.rung_names(args.framework)[0]
    try:
        registry.rung(args.framework, args.variant)
    except catalogue.UnknownRung as err:
        parser.error(f"argument --variant: {err.args[0]}")
    return TrainingJob(**vars(args))


def main(argv=None, prog=None) -> int:
    """`tiny-mlp-bench run` (scripts/train.py, the train rule's program): one run trained, timed and recorded."""
    return run(parse_args(argv, prog))
