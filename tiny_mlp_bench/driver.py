"""A training run: set up, trained and predicted inside the asker's timing point, scored, recorded.

The framework's backend (tiny_mlp_bench.backends) imports it, starts the device and describes it; the
variant's registered loop is the rest of the set-up and the training. This module times them with the
timing module's :class:`~tiny_mlp_bench.timing.Clock`, scores the trained model, and shapes the run
record; the job envelope (tiny_mlp_bench.envelope) does what every job does around it: the skips, the
failures, the environment and the load, and writing the record.
"""

from __future__ import annotations

import datetime
import math
import shutil
import statistics
from pathlib import Path

import numpy as np

from tiny_mlp_bench import backends, catalogue
from tiny_mlp_bench.backends.contract import GPU_EPOCHS_PER_BLOCK, Backend, Loop, RunSpec, Training
from tiny_mlp_bench.dataset import Dataset
from tiny_mlp_bench.envelope import DeviceMissing, Measurement, run_job
from tiny_mlp_bench.initial_weights import SCHEME, live_initial_weights
from tiny_mlp_bench.records import RECORD_TYPE, SCHEMA_VERSION, run_id, write_record
from tiny_mlp_bench.timing import METHOD, STEADY_MARGIN, Clock, SteadyClock


def score(training: Training, data: Dataset, min_r2: float) -> dict:
    """Quality block: MSE on all train and test rows and whether training converged."""

    def mse(rows: np.ndarray) -> float:
        pred = np.asarray(training.predict(rows[:, :2]), dtype=np.float64).reshape(-1)
        return float(np.mean((pred - rows[:, 2]) ** 2))

    def finite_or_none(value: float) -> float | None:
        return value if math.isfinite(value) else None

    train_mse, test_mse = mse(data.train), mse(data.test)
    r2 = 1.0 - train_mse / float(np.var(data.train[:, 2]))
    return {
        "final_train_loss": finite_or_none(float(training.final_train_loss())),
        "train_mse": finite_or_none(train_mse),
        "test_mse": finite_or_none(test_mse),
        "train_r2": finite_or_none(r2),
        "converged": bool(math.isfinite(r2) and r2 >= min_r2),
        "min_r2": min_r2,
    }


# The steady window trains at most this many epochs, whose permutations the cuda floor draws up front
# (60 MB at the question's 750 rows).
STEADY_MAX_EPOCHS = 20_000


def epochs_per_call(training: Training) -> int:
    """The epochs one of the loop's calls runs, as its fit makes them: a steady window of whole calls
    compiles no call of a new size."""
    per_call = getattr(training, "epochs_per_block", 1)
    return max(per_call, GPU_EPOCHS_PER_BLOCK) if getattr(training, "on_gpu", False) else per_call


def steady_epochs(clock: Clock, epochs: int, per_call: int, window_s: float, block_target_s: float) -> int:
    """Epochs for the steady window: its seconds and a first block's (the warm-up), at the pace of the timing
    point's median later block (or of its whole fit), with STEADY_MARGIN more, in whole calls of
    ``per_call`` epochs. (Paced by the fastest block instead, the windows of the archive
    2026-12-02-cpu-2core-steady ran 1.4 to 4.3 times their target.)"""
    blocks, sizes = clock.block_s, clock.block_epochs
    later = [seconds / size for seconds, size in zip(blocks[1:], sizes[1:], strict=True)]
    per_epoch = statistics.median(later) if later else clock.phases_s["fit"] / epochs
    wanted = STEADY_MARGIN * (window_s + block_target_s) / max(per_epoch, 1e-9)
    calls = max(2, math.ceil(wanted / per_call))
    return min(calls, max(2, STEADY_MAX_EPOCHS // per_call)) * per_call


def steady_window(training: Training, clock: Clock, epochs: int, window_s: float, block_target_s: float) -> dict:
    """Train on after the timing point, timed by a SteadyClock in blocks of about ``block_target_s``: the
    record's ``timings.steady``. Its first block holds the restart (Keras's fit starting again) and is
    the window's warm-up; the rest are the steady state the estimators read."""
    more = steady_epochs(clock, epochs, epochs_per_call(training), window_s, block_target_s)
    training.prepare_epochs(more)
    steady = SteadyClock(clock.sync, block_target_s)
    steady.start()
    training.fit(steady, more)
    return {"window_s": window_s, "epochs": more, **steady.window()}


def time_and_score(
    backend: Backend, loop: Loop, fw, spec: RunSpec, data: Dataset, clock: Clock, min_r2: float, window: tuple
):
    """Set up, train and predict inside the timing point, then score; returns (quality, details, steps
    taken, steady window). ``window`` is the steady window's seconds and its blocks' target seconds.

    The quality and the optimiser's steps are the asker's epochs': read before the steady window, which
    trains on. Host syncs are counted, and what a loop measures of itself after timing is measured,
    after the window, since both train further.

    Device start-up is the set-up's first part: the check that the device is there starts the
    runtime, so it runs inside the clock. Raises DeviceMissing when it is not there.
    """
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
    window_s, block_target_s = window
    steady = steady_window(training, clock, spec.epochs, window_s, block_target_s) if window_s > 0 else None
    syncs = training.host_syncs_per_epoch()
    details = training.details if syncs is None else {**training.details, "host_syncs_per_epoch": str(syncs)}
    details = {**details, **training.after_timing()}
    return quality, details, steps, steady


def prepare_compile_cache(cache: Path, first_run: bool) -> str:
    """Make ``cache`` ready for the run and say what the run will find there (``method.compile_cache``):
    the rung's first run in the study empties it, so that it compiles ``cold``; a later run finds what
    the first compiled, ``warm``, or an empty cache (the first failed before compiling, or the cache
    was deleted), ``cold`` again. Outside the timing point."""
    if first_run:
        shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    return "warm" if any(cache.iterdir()) else "cold"


class TrainingRun(Measurement):
    """One training run as the command line (scripts/train.py) asks: the envelope's measurement of a run."""

    kind = "run"

    def __init__(self, args, backend: Backend | None = None, loop: Loop | None = None):
        self.args = args
        self.framework, self.device, self.require_gpu = args.framework, args.device, args.require_gpu
        self.output, self.dataset, self.write = args.output, args.dataset, write_record
        self.label = run_id(args.framework, args.device, args.variant, args.repeat)
        # A test hands in a framework-free backend and loop; a job takes the registered ones.
        self._backend, self._loop = backend, loop
        self.started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self.quality, self.details, self.steps_taken, self.steady = None, {}, None, None
        self.compile_cache = "cold"  # what the run found in its compiler cache (a run that compiles nothing: cold)

    @property
    def backend(self) -> Backend:
        return self._backend or backends.backend(self.framework)

    def read(self, data: Dataset) -> None:
        args = self.args
        self.data = data
        init_seed = data.metadata["seed"] + args.repeat - 1
        self.spec = RunSpec(
            device=args.device,
            variant=args.variant,
            repeat=args.repeat,
            init_seed=init_seed,
            weights=live_initial_weights(init_seed, args.hidden_units, data.train[:, :2]),
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.learning_rate,
            hidden_units=args.hidden_units,
            threads=args.threads,
            compile_cache=None if args.compile_cache is None else str(args.compile_cache.resolve()),
        )
        self.clock = Clock(label=self.label, planned_epochs=self.spec.epochs)

    def not_on_device(self) -> str | None:
        """The catalogue decides which devices a variant runs on; starting the device, whether it is there."""
        listed = catalogue.variant(self.framework, self.spec.variant)
        return None if listed.runs_on(self.device) else listed.why_not_on(self.device)

    def load(self):
        with self.clock.phase("import"):
            return super().load()

    def measure(self, fw, data: Dataset) -> None:
        self.say(f"training {self.spec.epochs} epochs on {self.device}")
        if self.spec.compile_cache is not None:
            self.compile_cache = prepare_compile_cache(Path(self.spec.compile_cache), self.spec.repeat == 1)
            self.say(f"compiler cache {self.args.compile_cache}: {self.compile_cache}")
        loop = self._loop or backends.loop(self.framework, self.spec.variant)
        window = (self.args.steady_window_s, self.args.steady_block_s)
        self.quality, self.details, self.steps_taken, self.steady = time_and_score(
            self.backend, loop, fw, self.spec, data, self.clock, self.args.min_r2, window
        )

    def method(self) -> dict:
        return {**METHOD, "compile_cache": self.compile_cache}

    def record(self, status: str, reason: str | None) -> dict:
        spec, clock, data = self.spec, self.clock, self.data
        imported = {"import": clock.phases_s["import"]} if "import" in clock.phases_s else {}
        timings = clock.timings() if status == "ok" else {"phases_s": imported}
        if self.quality is not None:
            # Every loop takes the train rows in batches of batch_size, the last one short; the optimiser's
            # own count shows it did, so that no rung is faster for doing less.
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
            self.say(f"{clock.timing_point_s:.2f} s, test MSE {self.quality['test_mse']}")
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
            },
            "status": status,
            "reason": reason,
            "parameters": parameters(spec, data.metadata, self.details, self.backend.own_init),
            "timings": timings,
            "quality": self.quality,
        }


def run(args, backend: Backend | None = None, loop: Loop | None = None) -> int:
    """One run as the command line (scripts/train.py) asks; writes the record. Returns the exit status."""
    return run_job(TrainingRun(args, backend, loop))


def parameters(spec: RunSpec, meta: dict, details: dict[str, str], own_init: str | None = None) -> dict:
    """The record's parameters: the dataset's, the run's and what the variant used."""
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
