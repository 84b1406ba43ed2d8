"""The backend contract: what a framework's backend module gives the job that runs it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from tiny_mlp_bench.dataset import Dataset
from tiny_mlp_bench.initial_weights import InitialWeights
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
    # A compiling rung's cache, shared by its runs in the study; None: a cold cache of the run's own.
    compile_cache: str | None = None


class Training(Protocol):
    """A built training run: what the clock runs after set-up."""

    details: dict[str, str]  # what the rung used, e.g. which Adam

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

    def restart(self) -> bool:
        """Back to the initial weights and a fresh optimizer, untimed, before a pass of the per-step window."""


# Called inside the run's set-up phase; builds what the clock then runs.
Loop = Callable[[object, RunSpec, Dataset, Clock], Training]

# The clock waits for the GPU at each block's end: one-epoch blocks would undo a rung's host-work hiding.
GPU_EPOCHS_PER_BLOCK = 50


def epochs_per_call(training) -> int:
    """Epochs per call (a block): the loop's ``epochs_per_block``, on a GPU at least GPU_EPOCHS_PER_BLOCK."""
    per_call = getattr(training, "epochs_per_block", 1)
    return max(per_call, GPU_EPOCHS_PER_BLOCK) if getattr(training, "on_gpu", False) else per_call


class EpochLoop:
    """Base of the loops that run a number of epochs per call; the clock times each call as a block."""

    epochs_per_block = 1  # on a CPU, where reading the clock waits for nothing
    on_gpu = False

    def fit(self, clock: Clock, epochs: int) -> None:
        clock.run_blocks(self.run_epochs, epochs, epochs_per_call(self))

    def run_epochs(self, epochs: int) -> None:
        raise NotImplementedError

    def host_syncs_per_epoch(self) -> int | None:
        return None

    def after_timing(self) -> dict[str, str]:
        return {}

    def restart(self) -> bool:
        return False  # set up anew: cheap where nothing was compiled


@dataclass(frozen=True)
class Backend:
    """A framework's part of every job that runs it. ``fw`` below is whatever ``load()`` returned."""

    name: str
    load: Callable[[str], object]  # (device) -> fw; some backends must hide a GPU before they are imported
    prepare: Callable[[object, RunSpec], Callable[[], object] | None]  # threads and seeds; returns the device sync
    # Start the runtime on the run's device (timed, as for the asker); returns why it cannot be used, or None.
    start_device: Callable[[object, RunSpec], str | None]
    describe: Callable[[object, str], dict]  # (fw, device) -> versions, threads, cuda, gpu_name
    peak_gpu_memory_mb: Callable[[object, str], float | None]  # (fw, device) -> what the run allocated at most
    own_init: str | None = None  # how the framework draws its own weights, where it ignores the shared draw
