"""The command line and run driver shared by the training programs (train_torch, train_keras, train_numpy).

A framework module supplies a :class:`Backend`: how to import it, whether a device is
usable, how to train, and what to say about its environment. This module parses the
command line, reads the dataset, times the import, scores the trained model and writes
the run record, so every framework's record is made the same way.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dataset import DatasetError, read_dataset
from environment import collect_environment
from run_record import RECORD_TYPE, SCHEMA_VERSION, run_id, write_record

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class RunSpec:
    """Everything a backend needs to know about the run it is asked to do."""

    device: str
    variant: str
    repeat: int
    init_seed: int
    epochs: int
    batch_size: int
    learning_rate: float
    hidden_units: int
    threads: int
    label: str  # the run id, for progress lines


@dataclass
class TrainResult:
    """What a backend's train() measured; ``predict`` maps feature rows to predictions, untimed."""

    setup_s: float
    epoch_s: list[float]
    predict_s: float
    fit_predict_s: float
    final_train_loss: float
    predict: Callable[[np.ndarray], np.ndarray]
    details: dict[str, str] = field(default_factory=dict)  # what the variant used, e.g. which Adam

    @classmethod
    def from_clock(
        cls, start: float, fit_start: float, epoch_s: list[float], predict_start: float, end: float, **rest
    ) -> TrainResult:
        """Build the phase times from the four clock readings every loop takes."""
        return cls(
            setup_s=fit_start - start, epoch_s=epoch_s, predict_s=end - predict_start, fit_predict_s=end - start, **rest
        )


@dataclass(frozen=True)
class Backend:
    """A framework's part of a run. ``fw`` below is whatever ``load()`` returned."""

    name: str
    variants: tuple[str, ...]
    load: Callable[[], object]
    unavailable: Callable[[object, str, str], str | None]  # (fw, device, variant) -> why it can't run
    train: Callable[[object, RunSpec, object], TrainResult]  # (fw, spec, dataset)
    describe: Callable[[object, str], dict]  # (fw, device) -> versions, threads, cuda, gpu_name


class Progress:
    """Prints a line about every tenth of the epochs, so a log shows a run is alive."""

    def __init__(self, epochs: int, label: str):
        self.epochs, self.label, self.every = epochs, label, max(1, epochs // 10)
        self.start = time.perf_counter()

    def epoch_done(self, epoch: int) -> None:
        done = epoch + 1
        if done % self.every == 0 or done == self.epochs:
            elapsed = time.perf_counter() - self.start
            print(f"{self.label}: epoch {done}/{self.epochs}, {elapsed:.1f} s", file=sys.stderr, flush=True)


def timed_epochs(spec: RunSpec, now: Callable[[], float], fit_start: float, one_epoch: Callable[[], object]):
    """Run ``one_epoch`` spec.epochs times; return each epoch's wall time and its last return value.

    ``now`` must synchronise the device before reading the clock; it is read once per epoch.
    """
    progress = Progress(spec.epochs, spec.label)
    epoch_s, lap, last = [], fit_start, None
    for epoch in range(spec.epochs):
        last = one_epoch()
        end = now()
        epoch_s.append(end - lap)
        lap = end
        progress.epoch_done(epoch)
    return epoch_s, last


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def parse_args(backend: Backend, argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"train_{backend.name}.py",
        description=f"Train the seed question's 2-20-1 MLP with {backend.name}, time it, "
        "and write one run record (JSON).",
    )
    parser.add_argument("--dataset", type=Path, required=True, help="Parquet file from dataset.py")
    parser.add_argument("--output", type=Path, required=True, help="run record to write (.json)")
    parser.add_argument("--device", choices=DEVICES, default="cpu")
    parser.add_argument(
        "--variant", choices=backend.variants, default=backend.variants[0], help="training-loop variant"
    )
    parser.add_argument("--repeat", type=positive_int, default=1, help="repeat number; weights use seed + repeat - 1")
    parser.add_argument("--epochs", type=positive_int, default=1000)
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--learning-rate", type=positive_float, default=1e-3)
    parser.add_argument("--hidden-units", type=positive_int, default=20)
    parser.add_argument("--threads", type=positive_int, default=1, help="CPU threads for the framework")
    parser.add_argument(
        "--min-r2", type=float, default=0.99, help="train R^2 at or above which a run counts as converged"
    )
    parser.add_argument(
        "--require-gpu", action="store_true", help="fail instead of recording 'skipped' when the device is missing"
    )
    return parser.parse_args(argv)


def score(result: TrainResult, data, min_r2: float) -> dict:
    """Quality block: MSE on all train and test rows and whether training converged."""

    def mse(rows: np.ndarray) -> float:
        pred = np.asarray(result.predict(rows[:, :2]), dtype=np.float64).reshape(-1)
        return float(np.mean((pred - rows[:, 2]) ** 2))

    def finite_or_none(value: float) -> float | None:
        return value if math.isfinite(value) else None

    train_mse, test_mse = mse(data.train), mse(data.test)
    r2 = 1.0 - train_mse / float(np.var(data.train[:, 2]))
    return {
        "final_train_loss": finite_or_none(float(result.final_train_loss)),
        "train_mse": finite_or_none(train_mse),
        "test_mse": finite_or_none(test_mse),
        "train_r2": finite_or_none(r2),
        "converged": bool(math.isfinite(r2) and r2 >= min_r2),
        "min_r2": min_r2,
    }


def run(backend: Backend, argv=None) -> int:
    """Parse the command line, run once, write the record. Returns the exit status."""
    args = parse_args(backend, argv)
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    label = run_id(backend.name, args.device, args.variant, args.repeat)
    try:
        data = read_dataset(args.dataset)
    except DatasetError as err:
        print(f"{label}: error: {err}", file=sys.stderr)
        return 1
    meta = data.metadata
    spec = RunSpec(
        device=args.device,
        variant=args.variant,
        repeat=args.repeat,
        init_seed=meta["seed"] + args.repeat - 1,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        hidden_units=args.hidden_units,
        threads=args.threads,
        label=label,
    )

    print(f"{label}: importing {backend.name}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    fw = backend.load()
    timings = {"import_s": time.perf_counter() - start}

    status, reason, quality, details, result = "ok", None, None, {}, None
    reason = backend.unavailable(fw, args.device, args.variant)
    if reason is not None:
        if args.require_gpu:
            print(f"{label}: error: {reason}, and --require-gpu (config require_gpu) is set", file=sys.stderr)
            return 1
        status = "skipped"
        print(f"{label}: skipped: {reason}", file=sys.stderr)
    else:
        print(f"{label}: training {args.epochs} epochs on {args.device}", file=sys.stderr, flush=True)
        try:
            result = backend.train(fw, spec, data)
        except Exception as err:  # any error inside the framework: report it, let the other runs finish
            traceback.print_exc()
            status, reason = "failed", f"{type(err).__name__}: {err}".strip()[:500]
            print(f"{label}: recorded as failed: {reason}", file=sys.stderr)
            result = None
    if result is not None:
        timings |= {
            "setup_s": result.setup_s,
            "fit_predict_s": result.fit_predict_s,
            "fit_s": float(sum(result.epoch_s)),
            "predict_s": result.predict_s,
            "epoch_s": result.epoch_s,
            # Every loop takes the train rows in batches of batch_size, the last one short.
            "steps_per_epoch": math.ceil(len(data.train) / spec.batch_size),
        }
        quality = score(result, data, args.min_r2)
        details = result.details
        if quality["train_mse"] is None:
            status, reason = "failed", "training diverged: the train MSE is not finite"
        print(f"{label}: {result.fit_predict_s:.2f} s, test MSE {quality['test_mse']}", file=sys.stderr)

    record = {
        "record_type": RECORD_TYPE,
        "schema_version": SCHEMA_VERSION,
        "identity": {
            "run_id": label,
            "framework": backend.name,
            "device": args.device,
            "variant": args.variant,
            "repeat": args.repeat,
            "started_at": started_at,
        },
        "status": status,
        "reason": reason,
        "parameters": {
            "seed": meta["seed"],
            "init_seed": spec.init_seed,
            "n_rows": meta["n_rows"],
            "n_train": meta["n_train"],
            "n_test": meta["n_test"],
            "epochs": spec.epochs,
            "batch_size": spec.batch_size,
            "learning_rate": spec.learning_rate,
            "hidden_units": spec.hidden_units,
            "threads": spec.threads,
            "variant_details": details,
        },
        "timings": timings,
        "quality": quality,
        "environment": collect_environment(dataset_sha256=data.sha256, **backend.describe(fw, args.device)),
    }
    write_record(record, args.output)
    return 0
