"""Which of the machine's two speeds each run mostly got: its slowed share, against its rung's fast mode.

On the 2-core machine the time of a block is bimodal inside one process: a fast state and a slow one
about 1.7x slower, in episodes of 10-60 s that slow every rung running then. A run's median follows
the share of its blocks that fell in the slow state, so that share tells a run that was unlucky from
a rung that is slow. The rule (docs/method.md, "Two speeds"):

- a block's *per-step time* is its seconds over the optimiser steps it ran (its epochs times the
  steps per epoch); the first block holds warm-up, tracing and compilation, so only later blocks count;
- a rung's *fast mode* is the 10th percentile of the per-step times of all its runs' later blocks,
  pooled;
- a run's *slowed share* is the fraction of its own later blocks slower than 1.35 times that mode.

The share says which speed a run mostly got; it corrects nothing. Numbers only: no wording.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiny_mlp_bench.catalogue import pair_name

# The two speeds are about 1.7x apart: 1.35 lies between them, a little above their middle on a log
# scale (sqrt(1.7) = 1.30), so a block up to 35 % slower than the fast mode still counts as fast.
SLOW_THRESHOLD = 1.35
# The fast mode is the pooled 10th percentile: it lies in the fast state whenever at least a tenth of a
# rung's blocks are fast, and unlike the minimum it is not one lucky block.
FAST_QUANTILE = 10
# Blocks after the first a run needs before its blocks tell a mode: with 100 the share moves in steps
# of 1 %, and a rung with one run still finds its fast mode among its ten fastest blocks rather than at
# its single fastest. Rungs that run many epochs per block (20 or 50) have tens of blocks: too few.
MIN_STEADY_BLOCKS = 100

TOO_FEW_BLOCKS = f"fewer than {MIN_STEADY_BLOCKS} blocks after the first"
NO_RUN_WITH_ENOUGH_BLOCKS = f"no run with {MIN_STEADY_BLOCKS} blocks after the first"


@dataclass(frozen=True)
class RunShare:
    """One run's slowed share; None with the reason where its blocks are too few to tell."""

    run_id: str
    steady_blocks: int  # blocks after the first
    share: float | None
    reason: str | None = None


@dataclass(frozen=True)
class RungShares:
    """A rung's fast mode (seconds per step) and each of its completed runs' slowed share."""

    pair: str
    variant: str
    fast_step_s: float | None
    runs: tuple[RunShare, ...]
    reason: str | None = None  # why there is no fast mode


def steady_per_step_s(record: dict) -> np.ndarray:
    """A run's per-step time of every block after the first, in the order they ran (empty without blocks)."""
    timings = record["timings"]
    blocks, epochs = timings.get("block_s") or [], timings.get("block_epochs") or []
    steps = timings.get("steps_per_epoch")
    if len(blocks) < 2 or len(epochs) != len(blocks) or not steps:
        return np.empty(0)
    return np.asarray(blocks[1:], dtype=float) / (np.asarray(epochs[1:], dtype=float) * steps)


def rung_shares(pair: str, variant: str, records: list[dict]) -> RungShares:
    """One rung's fast mode, pooled over its runs with enough blocks, and each run's share against it."""
    # A list, not a dict by run id: records pooled from two studies may share their run ids.
    per_step = [(r["identity"]["run_id"], steady_per_step_s(r)) for r in records]
    enough = [steps for _, steps in per_step if len(steps) >= MIN_STEADY_BLOCKS]
    if not enough:
        runs = tuple(RunShare(run_id, len(steps), None, TOO_FEW_BLOCKS) for run_id, steps in per_step)
        return RungShares(pair, variant, None, runs, NO_RUN_WITH_ENOUGH_BLOCKS)
    fast = float(np.percentile(np.concatenate(enough), FAST_QUANTILE))
    runs = tuple(
        RunShare(run_id, len(steps), float(np.mean(steps > SLOW_THRESHOLD * fast)))
        if len(steps) >= MIN_STEADY_BLOCKS
        else RunShare(run_id, len(steps), None, TOO_FEW_BLOCKS)
        for run_id, steps in per_step
    )
    return RungShares(pair, variant, fast, runs)


def slowed_shares(records: list[dict]) -> dict[tuple[str, str], RungShares]:
    """Per (pair, variant), as the report's summary keys its rungs: the fast mode and every completed
    run's slowed share. Skipped and failed runs are left out; the rungs come sorted, their runs in the
    records' order."""
    by_rung: dict[tuple[str, str], list[dict]] = {}
    for record in records:
        if record["status"] != "ok":
            continue
        ident = record["identity"]
        by_rung.setdefault((pair_name(ident["framework"], ident["device"]), ident["variant"]), []).append(record)
    return {key: rung_shares(*key, by_rung[key]) for key in sorted(by_rung)}
