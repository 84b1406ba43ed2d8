"""A busy core beside a timed run: a fixed loop in a process of its own, pinned to one core, that keeps it busy
from before the timing point to after the per-step window, and says how much CPU it got."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

# The neighbour's whole program: pin itself, say so, spin until its stdin closes, then say its CPU and wall seconds.
# Its spin holds the GIL in short slices, so the thread that waits on stdin can stop it within milliseconds.
LOOP = """
import os, sys, threading, time
os.sched_setaffinity(0, {core})
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
started, cpu = time.monotonic(), time.process_time()
print("ready", flush=True)
spun = 0
while not stop.is_set():
    for _ in range(10_000):
        spun += 1
print(time.process_time() - cpu, time.monotonic() - started, flush=True)
"""


class NeighbourError(RuntimeError):
    """The busy core could not be started or did not report."""


def neighbour_core() -> int:
    """The core the neighbour takes: the highest this job may run on (the run itself is not pinned)."""
    return max(os.sched_getaffinity(0))


@contextlib.contextmanager
def busy_core(busy: bool):
    """Within the block, one core kept busy (where ``busy``); yields a dict that holds, once the block ends, the
    record's ``neighbour``: the core, the loop's CPU and wall seconds and its share of one core (None: idle)."""
    reading: dict = {}
    if not busy:
        yield reading
        return
    core = neighbour_core()
    loop = subprocess.Popen(
        [sys.executable, "-c", LOOP.replace("{core}", f"{{{core}}}")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        if loop.stdout.readline().strip() != "ready":
            raise NeighbourError(f"the busy-core loop on core {core} did not start (exit status {loop.poll()})")
        yield reading
    finally:
        loop.stdin.close()
        said = loop.stdout.readline().split()
        loop.wait(timeout=10)
    if len(said) != 2:
        raise NeighbourError(f"the busy-core loop on core {core} ended without saying its CPU time")
    cpu_s, wall_s = (float(value) for value in said)
    reading.update(core=core, cpu_s=cpu_s, wall_s=wall_s, cpu_share=cpu_s / wall_s if wall_s > 0 else None)
