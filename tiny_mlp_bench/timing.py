"""The one owner of the clock: every time a run, a sweep or a probe records is read here.

It needs the standard library alone and runs on Python 3.9, so that a runner inside an older stack's image imports
this clock instead of a copy of it (tests/test_timing.py holds it to both)."""

from __future__ import annotations

import contextlib
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type only: the clock sits below the backends that define it
    from tiny_mlp_bench.backends.contract import Training

# Every phase a run records, in start order, with the report's words. The timing point holds setup, fit and predict;
# import stays outside. SETUP_PARTS lie inside setup, FIT_PARTS (Keras runs only) inside fit.
PHASES = {
    "import": "import",
    "setup": "set-up",
    "startup": "device start-up",
    "data": "data",
    "model": "model build and move",
    "optimizer": "optimizer",
    "capture": "graph capture",
    "fit": "all epochs",
    "fit_end": "Keras's pause after the last epoch",
    "predict": "predict",
}
SETUP_PARTS = ("startup", "data", "model", "optimizer", "capture")
# fit_end (Keras's last epoch's end to fit returning) stays inside fit, so fit and the timing point keep their meaning.
FIT_PARTS = ("fit_end",)

# How the clock timed a record, so records timed differently are never pooled unawares (records.upgrade() backfills).
METHOD_PARTS = {
    "block": {
        "epoch": "one epoch a block, on every device",
        "call": "runs: the rung's call on cpu (one epoch, or the epochs one call runs) and "
        "backends.contract.GPU_EPOCHS_PER_BLOCK epochs on a GPU; sweeps: a point's steps; probes: a repeat of calls",
    },
    "sync": {
        "block end": "where the device runs asynchronously, a synchronize before each reading, none inside a block"
    },
    "compile_cache": {
        "shared": "compiled rungs used the compiler's shared on-disk cache: a repeat could reuse an earlier one's work",
        "cold": "a compiled rung compiled into an empty cache (the run's own, or its rung's in the study, "
        "which the rung's first run empties); a rung that compiles nothing is cold too",
        "warm": "a compiled rung's later run reused the cache its study's first run of the rung compiled into",
    },
    "own_work": {
        "next block": "the clock's bookkeeping and progress line ran inside the next block, summing all blocks so far",
        "between blocks": "the clock's bookkeeping and progress line run between blocks, in neither: a few operations",
    },
}
METHOD = {"block": "call", "sync": "block end", "compile_cache": "cold", "own_work": "between blocks"}

# The parts of the asker's step that the torch `parts` rung reads the clock between, in step order, with the report's
# words. What lies outside them (the loop's own bookkeeping, each epoch's new iterator and its last, empty fetch) is a
# block's time less their sum.
LOOP_PARTS = {
    "fetch": "the DataLoader's fetch (sampler, 64 rows, collate)",
    "copy": "the copy to the device",
    "zero_grad": "`zero_grad`",
    "forward": "forward and loss (slices and squeeze included)",
    "backward": "backward",
    "optimizer": "Adam's step",
}


class PartTimes:
    """The seconds of each of LOOP_PARTS a loop read since its clock last closed a block: the clock takes them at
    each block's end, so that they are summed per block like the block's own time."""

    def __init__(self):
        self.open = dict.fromkeys(LOOP_PARTS, 0.0)

    def add(self, seconds: dict[str, float]) -> None:
        for part, value in seconds.items():
            self.open[part] += value

    def take(self) -> dict[str, float]:
        taken, self.open = self.open, dict.fromkeys(LOOP_PARTS, 0.0)
        return taken


class Clock:
    """Reads the time for one run (or one sweep point) and keeps what it read."""

    def __init__(self, sync: Callable[[], object] | None = None, label: str | None = None, planned_epochs: int = 0):
        self.sync = sync
        self.label, self.planned_epochs = label, planned_epochs
        self.phases_s: dict[str, float] = {}
        self._entered: set[str] = set()
        self.timing_point_s: float | None = None
        self.block_s: list[float] = []
        self.block_cpu_s: list[float] = []
        self.block_epochs: list[int] = []
        self.parts: PartTimes | None = None  # a loop that reads its parts hands them in (the `parts` rung)
        self.block_part_s: dict[str, list[float]] = {}
        self._epochs_done = 0
        self._lap = self._fit_start = time.perf_counter()
        self._lap_cpu = time.process_time()

    def now(self) -> float:
        if self.sync is not None:
            self.sync()
        return time.perf_counter()

    @contextlib.contextmanager
    def phase(self, name: str):
        """Time the block of code inside as phase ``name``; blocks started inside it count from its start."""
        if name not in PHASES:
            raise ValueError(f"unknown phase '{name}'; add it to timing.PHASES")
        if name in self._entered or name in self.phases_s:
            raise RuntimeError(
                f"phase '{name}' timed twice: its second timing would replace its first; time each phase once"
            )
        self._entered.add(name)
        start = self._lap = self._fit_start = self.now()
        self._lap_cpu = time.process_time()
        yield
        self.phases_s[name] = self.now() - start

    @contextlib.contextmanager
    def timing_point(self):
        start = self.now()
        yield
        self.timing_point_s = self.now() - start

    def run_blocks(self, run: Callable[[int], object], total: int, per_block: int) -> None:
        """Call ``run(n)`` until ``total`` units (epochs, or steps in a sweep) ran, ``per_block`` at most a call."""
        self._lap, self._lap_cpu = self.now(), time.process_time()
        done = 0
        while done < total:
            size = min(per_block, total - done)
            run(size)
            self.block_done(size)
            done += size

    def block_done(self, epochs: int) -> None:
        """Close a block of ``epochs`` epochs (or steps) that ends now, and start the next one."""
        end, end_cpu = self.now(), time.process_time()
        self.block_s.append(end - self._lap)
        self.block_cpu_s.append(end_cpu - self._lap_cpu)
        self.block_epochs.append(epochs)
        if self.parts is not None:
            for part, seconds in self.parts.take().items():
                self.block_part_s.setdefault(part, []).append(seconds)
        self._epochs_done += epochs
        self._report_progress(end, epochs)
        self._lap_cpu, self._lap = time.process_time(), time.perf_counter()

    def since_last_block(self, name: str) -> None:
        """Record phase ``name`` as the time from the last block's end (after the clock's own work) to now."""
        if name not in PHASES:
            raise ValueError(f"unknown phase '{name}'; add it to timing.PHASES")
        if not self.block_s:
            raise RuntimeError(f"phase '{name}' is timed from the last block's end, and no block has ended")
        self.phases_s[name] = self.now() - self._lap

    def timings(self) -> dict:
        """The record's ``timings`` block: phases, and for a finished run its timing point and blocks."""
        found = {"phases_s": dict(self.phases_s)}
        if self.timing_point_s is not None:
            found |= {
                "fit_predict_s": self.timing_point_s,
                "block_s": self.block_s,
                "block_cpu_s": self.block_cpu_s,
                "block_epochs": self.block_epochs,
            }
            if self.block_part_s:
                found["block_part_s"] = self.block_part_s
        return found

    def _report_progress(self, end: float, epochs: int) -> None:
        if not self.label or not self.planned_epochs:
            return
        done, every = self._epochs_done, max(1, self.planned_epochs // 10)
        before = done - epochs
        if done // every > before // every or done == self.planned_epochs:
            elapsed = end - self._fit_start
            print(f"{self.label}: epoch {done}/{self.planned_epochs}, {elapsed:.1f} s", file=sys.stderr, flush=True)


# A pass runs this much longer than its blocks need at the pace so far, so a slower episode still fills the window.
STEADY_MARGIN = 1.25
# Timed between blocks, the canary slows with the machine's slow state (docs/method.md); under 1% of a block on 2 cores.
CANARY_ITERATIONS = 4_000


def canary() -> float:
    """Seconds of one run of the canary loop, read by the host's clock alone."""
    start = time.perf_counter()
    total = 0
    for i in range(CANARY_ITERATIONS):
        total += (i * 7) % 13
    return time.perf_counter() - start


class SteadyClock(Clock):
    """The per-step window's clock: each block closes at the first call ending ``block_target_s`` past its start."""

    def __init__(self, sync: Callable[[], object] | None, block_target_s: float):
        super().__init__(sync)
        self.block_target_s = block_target_s
        self.canary_s: list[float] = []
        self.fit_end_s: list[float] = []  # Keras's pause after each pass's last epoch
        self.passes = 0
        self._open_epochs = 0  # epochs of the calls in the block still open
        self._warming_up = False
        self._last_call_end = 0.0

    def start_pass(self) -> None:
        """Begin a pass now: its first call is the warm-up, then blocks."""
        self.passes += 1
        self._warming_up, self._open_epochs = True, 0
        self.drop_parts()  # those of the last pass's short block, dropped with it
        self._lap, self._lap_cpu = self.now(), time.process_time()

    def block_done(self, epochs: int) -> None:
        if self._warming_up:
            self._warming_up = False
            self.drop_parts()
            self._lap, self._lap_cpu = self.now(), time.process_time()
        else:
            self._open_epochs += epochs
            if time.perf_counter() - self._lap >= self.block_target_s:
                super().block_done(self._open_epochs)
                self._open_epochs = 0
                self.canary_s.append(canary())
                self._lap_cpu, self._lap = time.process_time(), time.perf_counter()
        self._last_call_end = time.perf_counter()

    def drop_parts(self) -> None:
        if self.parts is not None:
            self.parts.take()

    def since_last_block(self, name: str) -> None:
        """Keras's pause after a pass's last epoch, from the end of that epoch to ``fit`` returning."""
        self.fit_end_s.append(self.now() - self._last_call_end)

    @property
    def window_s(self) -> float:
        return sum(self.block_s)

    def window(self) -> dict:
        """The record's ``steady`` block: target, passes, each block's wall and CPU time, epochs and canary."""
        found = {
            "block_target_s": self.block_target_s,
            "passes": self.passes,
            "block_s": self.block_s,
            "block_cpu_s": self.block_cpu_s,
            "block_epochs": self.block_epochs,
            "canary_s": self.canary_s,
        }
        found |= {"block_part_s": self.block_part_s} if self.block_part_s else {}
        return found | ({"fit_end_s": self.fit_end_s} if self.fit_end_s else {})


def seconds_of(run: Callable[[], object]) -> float:
    """Wall seconds of one call of ``run``: for a measurement that must not repeat, as a profiled loop, whose
    profiler has to see each step once."""
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


# How many times time_calls repeats its calls: it gives their median.
CALL_REPEATS = 7


def time_calls(
    fn: Callable[[], object],
    calls: int,
    repeats: int = CALL_REPEATS,
    sync: Callable[[], object] | None = None,
    kernels_per_call: int | None = None,
) -> dict:
    """Median microseconds per call of ``fn`` over ``repeats`` repeats of ``calls`` calls each."""
    per = calls * (kernels_per_call or 1)

    def one_repeat() -> tuple[float, float]:
        """Microseconds per call, wall and this process's CPU time."""
        if sync is not None:
            sync()
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            fn()
        if sync is not None:
            sync()
        return (time.perf_counter() - start) * 1e6 / per, (time.process_time() - start_cpu) * 1e6 / per

    one_repeat()  # warm-up
    found, found_cpu = zip(*(one_repeat() for _ in range(repeats)))  # each repeat a pair: wall, CPU
    timed = {
        "value_us": round(statistics.median(found), 4),
        "calls": calls,
        "repeats": repeats,
        "repeat_us": [round(v, 4) for v in found],
        "repeat_cpu_us": [round(v, 4) for v in found_cpu],
    }
    if kernels_per_call is not None:
        timed["kernels_per_call"] = kernels_per_call
    return timed


# The per-step window's pacing: how many epochs each pass replays, and when the window has enough.
# A window keeps at least this many blocks, whatever its seconds: its quantiles rest on them.
MIN_WINDOW_BLOCKS = 20
# A window stops at this many times its aim (passes too short to fill a block), or empty after HOPELESS_PASSES.
WINDOW_LIMIT = 5
HOPELESS_PASSES = 3


# At least this many blocks a pass, so a fit shorter than steady_block_s (the floor's) still keeps blocks every pass.
BLOCKS_PER_PASS = 3


def timing_point_pace(clock: Clock, epochs: int) -> float:
    """Seconds per epoch at the timing point: its median later block, or its whole fit."""
    later = [seconds / size for seconds, size in zip(clock.block_s[1:], clock.block_epochs[1:])]  # one per block
    return statistics.median(later) if later else clock.phases_s["fit"] / epochs


def pass_epochs(pace: float, window: SteadyClock, epochs: int, per_call: int, window_s: float) -> int:
    """Epochs for the next pass: the missing seconds and blocks at the pace so far (``pace`` before any block)
    times STEADY_MARGIN, plus the warm-up call, in whole calls, at most ``epochs``."""
    if window.block_s:
        pace = window.window_s / sum(window.block_epochs)
    missing_blocks = MIN_WINDOW_BLOCKS - len(window.block_s)
    missing_s = max(window_s - window.window_s, missing_blocks * window.block_target_s, window.block_target_s)
    calls = 1 + math.ceil(STEADY_MARGIN * missing_s / max(pace, 1e-9) / per_call)
    return min(calls * per_call, epochs)


def per_step_window(
    training: Training,
    rebuild: Callable[[], Training],
    clock: Clock,
    epochs: int,
    per_call: int,
    window_s: float,
    block_s: float,
) -> tuple[dict, Training]:
    """The question's epochs again from the initial weights, in passes timed in blocks of about ``block_s``, until
    the window holds MIN_WINDOW_BLOCKS blocks and ``window_s`` seconds; ``per_call``: the epochs one call of the
    training's loop runs. Returns (``timings.steady``, the training it ended with); ``rebuild()`` sets one up anew
    where the loop cannot restart in place."""
    pace = timing_point_pace(clock, epochs)
    window = SteadyClock(clock.sync, min(block_s, pace * epochs / BLOCKS_PER_PASS))
    started, ran = time.perf_counter(), 0
    limit_s = WINDOW_LIMIT * max(window_s, MIN_WINDOW_BLOCKS * window.block_target_s)
    while len(window.block_s) < MIN_WINDOW_BLOCKS or window.window_s < window_s:
        if time.perf_counter() - started > limit_s:
            break
        if not training.restart():
            training = rebuild()
        size = pass_epochs(pace, window, epochs, per_call, window_s)
        window.start_pass()
        training.fit(window, size)
        ran += size
        if not window.block_s and window.passes == HOPELESS_PASSES:
            break  # the question's whole fit is shorter than a block
    return {"window_s": window_s, "epochs": ran, **window.window()}, training
