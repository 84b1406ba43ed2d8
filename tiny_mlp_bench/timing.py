"""The one owner of the clock: every time a run or a sweep records is read here.

A training run is timed in phases (PHASES, in the order they run) and its fit in *blocks*: one
epoch per block for loops that run an epoch per call, several for rungs that run several epochs
per call and for every loop on a GPU (backends.contract.GPU_EPOCHS_PER_BLOCK), and one per ``fit`` epoch for
Keras, through the callback :meth:`Clock.keras_callback` provides. Callers say what to run; they
never read a clock or pass readings around. Where the device runs asynchronously the caller sets
``sync``, which is called before every reading.

Adding a phase is one edit: name it in PHASES and wrap the code in ``clock.phase(name)``.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections.abc import Callable

# Every phase a run records, in the order they start, with the words the report uses for it.
# The question's timing point holds setup, fit and predict (Clock.timing_point); import stays
# outside. The set-up holds the phases in SETUP_PARTS; a run records those it goes through.
PHASES = {
    "import": "import",
    "setup": "set-up",
    "startup": "device start-up",
    "data": "data",
    "model": "model build and move",
    "optimizer": "optimizer",
    "capture": "graph capture",
    "fit": "all epochs",
    "predict": "predict",
}
SETUP_PARTS = ("startup", "data", "model", "optimizer", "capture")


class Clock:
    """Reads the time for one run (or one sweep point) and keeps what it read.

    ``sync`` waits for the device before each reading (None on a synchronous device).
    ``label`` and ``planned_epochs``, when given, make it print a progress line about every tenth
    of the epochs, so a log shows a run is alive.
    """

    def __init__(self, sync: Callable[[], object] | None = None, label: str | None = None, planned_epochs: int = 0):
        self.sync = sync
        self.label, self.planned_epochs = label, planned_epochs
        self.phases_s: dict[str, float] = {}
        self.timing_point_s: float | None = None
        self.block_s: list[float] = []
        self.block_epochs: list[int] = []
        self._lap = self._fit_start = time.perf_counter()

    def now(self) -> float:
        if self.sync is not None:
            self.sync()
        return time.perf_counter()

    @contextlib.contextmanager
    def phase(self, name: str):
        """Time the block of code inside as phase ``name``; blocks started inside it count from its start."""
        if name not in PHASES:
            raise ValueError(f"unknown phase '{name}'; add it to timing.PHASES")
        start = self._lap = self._fit_start = self.now()
        yield
        self.phases_s[name] = self.now() - start

    @contextlib.contextmanager
    def timing_point(self):
        """Time the question's timing point around the phases inside it."""
        start = self.now()
        yield
        self.timing_point_s = self.now() - start

    def run_blocks(self, run: Callable[[int], object], total: int, per_block: int) -> None:
        """Call ``run(n)`` until ``total`` units (epochs, or steps in a sweep) ran, ``per_block`` at most a call.

        Each call is one block, timed from the end of the one before.
        """
        self._lap = self.now()
        done = 0
        while done < total:
            size = min(per_block, total - done)
            run(size)
            self.block_done(size)
            done += size

    def block_done(self, epochs: int) -> None:
        """Close a block of ``epochs`` epochs (or steps) that ends now."""
        end = self.now()
        self.block_s.append(end - self._lap)
        self.block_epochs.append(epochs)
        self._lap = end
        self._report_progress(end)

    def keras_callback(self, keras, epochs_per_fit_epoch: int = 1):
        """A Keras callback that closes a block at the end of every epoch of ``fit``.

        A block is one epoch, or ``epochs_per_fit_epoch`` where one ``fit`` epoch runs several of the question's.
        """
        clock = self

        class EpochClock(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                clock.block_done(epochs_per_fit_epoch)

        return EpochClock()

    def timings(self) -> dict:
        """The record's ``timings`` block: phases, and for a finished run its timing point and blocks."""
        found = {"phases_s": dict(self.phases_s)}
        if self.timing_point_s is not None:
            found |= {"fit_predict_s": self.timing_point_s, "block_s": self.block_s, "block_epochs": self.block_epochs}
        return found

    def _report_progress(self, end: float) -> None:
        if not self.label or not self.planned_epochs:
            return
        done, every = sum(self.block_epochs), max(1, self.planned_epochs // 10)
        before = done - self.block_epochs[-1]
        if done // every > before // every or done == self.planned_epochs:
            elapsed = end - self._fit_start
            print(f"{self.label}: epoch {done}/{self.planned_epochs}, {elapsed:.1f} s", file=sys.stderr, flush=True)


def steady_step_s(block_s: list[float], block_steps: list[int]) -> float | None:
    """Steady-state seconds per step: the median block after the first, per step it ran.

    None with a single block: the first one holds warm-up and compilation and is never steady.
    """
    later = [seconds / steps for seconds, steps in zip(block_s[1:], block_steps[1:], strict=True)]
    return statistics.median(later) if later else None
