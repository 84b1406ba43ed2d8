"""What every probe shares: timing many calls of a function, and how a probe says what it measured."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

REPEATS = 7

Say = Callable[[str], None]


def quiet(message: str) -> None:
    """A Say that says nothing: the probes' default where no one reads their progress."""


def time_calls(
    fn: Callable[[], object],
    calls: int,
    repeats: int = REPEATS,
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
    found, found_cpu = zip(*(one_repeat() for _ in range(repeats)), strict=True)
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
