"""The run driver shared by every framework: one training run, timed, scored and recorded.

A framework's backend module (tiny_mlp_bench.backends) supplies a :class:`Backend`: how to import
it, whether a GPU is usable, how to set the run up, what its built run does, and what to say about
its environment. This module reads the dataset, asks the catalogue whether the variant runs on the
device, times the run with the timing module's :class:`~tiny_mlp_bench.timing.Clock`, scores the
trained model and writes the run record, so every framework's record is made the same way.
"""

from __future__ import annotations

import datetime
import math
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.dataset import Dataset, DatasetError, read_dataset
from tiny_mlp_bench.environment import collect_environment, gpu_driver_absent, not_imported
from tiny_mlp_bench.initial_weights import SCHEME, InitialWeights, live_initial_weights
from tiny_mlp_bench.load import load_block, snapshot
from tiny_mlp_bench.records import RECORD_TYPE, SCHEMA_VERSION, run_id, write_record
from tiny_mlp_bench.timing import Clock


@dataclass(frozen=True)
class RunSpec:
    """Everything a backend needs to know about the run it is asked to do."""

    device: str
    variant: str
    repeat: int
    init_seed: int
    weights: InitialWeights  # every framework and rung starts from these (initial_weights.py)
    epochs: int
    batch_size: int
    learning_rate: float
    hidden_units: int
    threads: int


class Training(Protocol):
    """A built training run: what the clock runs after set-up."""

    details: dict[str, str]  # what the variant used, e.g. which Adam

    def fit(self, clock: Clock, epochs: int) -> None:
        """Train ``epochs`` epochs, letting ``clock`` time them in blocks."""

    def predict_test_batch(self) -> None:
        """The asker's closing prediction of one batch of test rows (timed)."""

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Predictions for any feature rows (untimed, for scoring)."""

    def final_train_loss(self) -> float:
        """The last training loss the framework reported."""

    def steps_taken(self) -> int:
        """Optimiser steps the run took, as the optimiser itself counted them."""

    def host_syncs_per_epoch(self) -> int | None:
        """Host synchronisations in one more, untimed epoch on a GPU; None where not counted."""

    def after_timing(self) -> dict[str, str]:
        """What the loop measures of itself after the timed run and the scoring, for its details."""


class DeviceMissing(Exception):
    """The run's device cannot be used here; the message says why."""


# Epochs per block of every loop on a GPU. The clock waits for the device at each block's end, so the
# host cannot queue the next block's work while the device finishes the last; a rung whose host work
# hides behind the device's (a graph replayed per epoch) would have that hiding undone at every epoch.
GPU_EPOCHS_PER_BLOCK = 50


class EpochLoop:
    """Base of the loops that run a number of epochs per call; the clock times each call as a block."""

    epochs_per_block = 1  # on a CPU, where reading the clock waits for nothing
    on_gpu = False  # a loop that runs on a GPU sets it

    def fit(self, clock: Clock, epochs: int) -> None:
        per_block = max(self.epochs_per_block, GPU_EPOCHS_PER_BLOCK) if self.on_gpu else self.epochs_per_block
        clock.run_blocks(self.run_epochs, epochs, per_block)

    def run_epochs(self, epochs: int) -> None:
        raise NotImplementedError

    def host_syncs_per_epoch(self) -> int | None:
        return None  # counted by the loops that run on a GPU

    def after_timing(self) -> dict[str, str]:
        return {}  # the fused_epoch rung times its compiled call here


@dataclass(frozen=True)
class Backend:
    """A framework's part of a run. ``fw`` below is whatever ``load()`` returned."""

    name: str
    variants: tuple[str, ...]  # the catalogue's variants of this framework it implements
    load: Callable[[str], object]  # (device) -> fw; some backends must hide a GPU before they are imported
    prepare: Callable[[object, RunSpec], Callable[[], object] | None]  # threads and seeds; returns the device sync
    # Start the runtime on the run's device (timed, as for the asker); returns why it cannot be used, or None.
    start_device: Callable[[object, RunSpec], str | None]
    build: Callable[[object, RunSpec, Dataset, Clock], Training]  # the rest of set-up, in its parts' phases
    describe: Callable[[object, str], dict]  # (fw, device) -> versions, threads, cuda, gpu_name
    peak_gpu_memory_mb: Callable[[object, str], float | None]  # (fw, device) -> what the run allocated at most
    own_init: str | None = None  # how the framework draws its own weights, where it ignores the shared draw


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


def say(label: str, message: str) -> None:
    print(f"{label}: {message}", file=sys.stderr, flush=True)


def time_and_score(backend: Backend, fw, spec: RunSpec, data: Dataset, clock: Clock, min_r2: float):
    """Set up, train and predict inside the timing point, then score; returns (quality, details, steps taken).

    Host syncs are counted, and what a loop measures of itself after timing is measured, after the
    steps and the scoring, since both train further.

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
            training = backend.build(fw, spec, data, clock)
        with clock.phase("fit"):
            training.fit(clock, spec.epochs)
        with clock.phase("predict"):
            training.predict_test_batch()
    quality, steps = score(training, data, min_r2), training.steps_taken()
    syncs = training.host_syncs_per_epoch()
    details = training.details if syncs is None else {**training.details, "host_syncs_per_epoch": str(syncs)}
    details = {**details, **training.after_timing()}
    return quality, details, steps


def run(backend: Backend, args) -> int:
    """One run as the command line (scripts/train.py) asks; writes the record. Returns the exit status."""
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    load_before = snapshot()
    label = run_id(backend.name, args.device, args.variant, args.repeat)
    try:
        data = read_dataset(args.dataset)
    except DatasetError as err:
        say(label, f"error: {err}")
        return 1
    init_seed = data.metadata["seed"] + args.repeat - 1
    spec = RunSpec(
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
    )

    clock = Clock(label=label, planned_epochs=spec.epochs)
    status, quality, details = "ok", None, {}
    # The catalogue decides which devices a variant runs on; starting the device, whether it is there.
    listed = catalogue.variant(backend.name, spec.variant)
    reason = None if listed.runs_on(spec.device) else listed.why_not_on(spec.device)
    # A cuda job on a machine with no GPU driver at all would pay the framework's import (seconds) only
    # to record skipped: it is skipped without importing it. Where there is a driver, the framework decides.
    no_driver = gpu_driver_absent() if reason is None and spec.device == "cuda" else None
    if no_driver and args.require_gpu:
        say(label, f"error: {no_driver}, and --require-gpu (config require_gpu) is set")
        return 1
    if no_driver:
        fw, reason = None, no_driver
    else:
        say(label, f"importing {backend.name}")
        with clock.phase("import"):
            fw = backend.load(spec.device)
    if reason is None:
        say(label, f"training {spec.epochs} epochs on {spec.device}")
        try:
            quality, details, steps_taken = time_and_score(backend, fw, spec, data, clock, args.min_r2)
        except DeviceMissing as missing:
            if args.require_gpu:
                say(label, f"error: {missing}, and --require-gpu (config require_gpu) is set")
                return 1
            reason = str(missing)
        except Exception as err:  # any error inside the framework: report it, let the other runs finish
            traceback.print_exc()
            status, reason = "failed", f"{type(err).__name__}: {err}".strip()[:500]
            say(label, f"recorded as failed: {reason}")
    if reason is not None and status == "ok":
        status = "skipped"
        say(label, f"skipped: {reason}")
    imported = {} if no_driver else {"import": clock.phases_s["import"]}
    timings = clock.timings() if status == "ok" else {"phases_s": imported}
    if quality is not None:
        # Every loop takes the train rows in batches of batch_size, the last one short; the optimiser's
        # own count shows it did, so that no rung is faster for doing less.
        timings["steps_per_epoch"] = math.ceil(len(data.train) / spec.batch_size)
        timings["steps_taken"] = steps_taken
        if steps_taken != spec.epochs * timings["steps_per_epoch"]:
            expected = spec.epochs * timings["steps_per_epoch"]
            status, reason = "failed", f"the loop took {steps_taken} optimiser steps, not the {expected} of its epochs"
        elif quality["train_mse"] is None:
            status, reason = "failed", "training diverged: the train MSE is not finite"
        say(label, f"{clock.timing_point_s:.2f} s, test MSE {quality['test_mse']}")

    if no_driver:
        described, peak_gpu_mb = not_imported(catalogue.framework(backend.name).packages), None
    else:
        described, peak_gpu_mb = backend.describe(fw, spec.device), backend.peak_gpu_memory_mb(fw, spec.device)
    record = {
        "record_type": RECORD_TYPE,
        "schema_version": SCHEMA_VERSION,
        "identity": {
            "run_id": label,
            "framework": backend.name,
            "device": spec.device,
            "variant": spec.variant,
            "repeat": spec.repeat,
            "started_at": started_at,
        },
        "status": status,
        "reason": reason,
        "parameters": parameters(spec, data.metadata, details, backend.own_init),
        "timings": timings,
        "quality": quality,
        "environment": collect_environment(dataset_sha256=data.sha256, **described),
        "load": load_block(load_before, snapshot(), peak_gpu_mb),
    }
    write_record(record, args.output)
    return 0


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
