"""The asker's torch step as the `parts` rung read it: each part's time a step (timing.LOOP_PARTS) over the rung's
blocks, what lies outside the parts, and what its checks that can fail read: the rung's step against `seed`'s, and
its fetch against the DataLoader timed alone by the torch probe (report/sentences.py words them)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiny_mlp_bench import registry
from tiny_mlp_bench.catalogue import DEVICES, Role
from tiny_mlp_bench.jobs.identity import IDLE
from tiny_mlp_bench.question import TORCH
from tiny_mlp_bench.report.inference import Ratio
from tiny_mlp_bench.report.ladder import RungResult
from tiny_mlp_bench.timing import LOOP_PARTS

# How far the fetch read inside the loop may lie from the DataLoader timed alone (the probe) and still be called the
# same: the check of probes from before version 5. A step between fetches makes the next one slower, so later probes
# bracket the loop's time around the step instead (LoopParts.around_step_bracketed).
FETCH_AGREEMENT = 0.15
# The parts of the step itself; the rest of the loop (fetch, copy, bookkeeping) lies around it.
STEP_ITSELF = ("zero_grad", "forward", "backward", "optimizer")


@dataclass(frozen=True)
class LoopParts:
    """One device's parts, in seconds per step: means over every block of the rung's completed runs (loop_parts), so
    that the parts and what lies outside them add up to the mean step (a quantile of a sum is not the sum of
    quantiles)."""

    device: str
    parts_s: dict[str, float]  # in LOOP_PARTS' order
    step_s: float
    around_step_median_s: float  # the median block's step less its STEP_ITSELF parts: a median, as the probe's are
    blocks: int
    runs: int
    reads_per_step: int | None
    clocksource: str | None
    against_seed: Ratio | None  # the rung's step over seed's, per step: what reading the clock cost
    aa_band: float | None  # the study's A/A control per step, its farthest bound from 1 (>= 1): what the machine fakes
    # The torch probe's DataLoader iterated alone, a batch: the fetch measured apart; None where no probe timed it.
    loader_alone_s: float | None = None
    # The probe's parts of that fetch, each timed alone, a batch (FETCH_PARTS); None where the probe predates them.
    fetch_parts_s: dict[str, float] | None = None
    # The probe's fetch and copy between steps, a batch: its loop less as many steps on one batch, no clock inside
    # the loop; None where the probe predates it.
    between_steps_s: float | None = None

    @property
    def outside_s(self) -> float:
        """The step less its parts: the loop's own bookkeeping, each epoch's new iterator and its last, empty fetch."""
        return self.step_s - sum(self.parts_s.values())

    def share(self, seconds: float) -> float:
        return seconds / self.step_s

    @property
    def loader_machinery_s(self) -> float | None:
        """The DataLoader alone less its parts timed alone: its iterator's own machinery, each epoch's new iterator
        and last, empty fetch; None where the probe did not time the parts."""
        if self.fetch_parts_s is None or self.loader_alone_s is None:
            return None
        return self.loader_alone_s - sum(self.fetch_parts_s.values())

    @property
    def around_step_bracketed(self) -> bool | None:
        """Whether the loop's time around the step (the median block's) lies between the probe's two readings of it
        with no clock inside a loop, medians both: the DataLoader alone (nothing between its fetches, no copy) below,
        and the loop less as many steps on one batch above (which also holds what a fetch between them costs the
        step); None where the probe did not read both."""
        if self.between_steps_s is None or self.loader_alone_s is None:
            return None
        return self.loader_alone_s <= self.around_step_median_s <= self.between_steps_s

    @property
    def fetch_over_alone(self) -> float | None:
        return self.parts_s["fetch"] / self.loader_alone_s if self.loader_alone_s else None

    @property
    def fetch_agrees(self) -> bool | None:
        """Whether the fetch read between the step's parts and the loader timed alone agree within FETCH_AGREEMENT:
        the check of probes from before the probe read the loop less its steps."""
        found = self.fetch_over_alone
        return None if found is None else abs(found - 1) <= FETCH_AGREEMENT

    @property
    def largest(self) -> list[str]:
        return sorted(self.parts_s, key=self.parts_s.get, reverse=True)

    @property
    def within_aa_band(self) -> bool | None:
        """Whether the reads' cost lies inside what the A/A control shows identical code differing by."""
        if self.against_seed is None or self.aa_band is None:
            return None
        return 1 / self.aa_band <= self.against_seed.estimate <= self.aa_band


def block_steps(record: dict) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """A run's blocks in seconds per step, and each part's: its per-step window's, else its timing point's past the
    first (which holds the warm-up); None where it read no parts."""
    timings = record["timings"]
    blocks, first = timings.get("steady") or {}, 0
    if not blocks.get("block_part_s"):
        blocks, first = timings, 1
    parts = blocks.get("block_part_s")
    if not parts or not timings.get("steps_per_epoch") or len(blocks["block_s"]) <= first:
        return None
    steps = np.asarray(blocks["block_epochs"][first:], dtype=float) * timings["steps_per_epoch"]
    per_step = {part: np.asarray(parts[part][first:]) / steps for part in LOOP_PARTS}
    return np.asarray(blocks["block_s"][first:]) / steps, per_step


# The DataLoader's fetch of a batch as the torch probe times its parts alone (probes/torch_step.fetch_parts).
FETCH_PARTS = {
    "sampler": "the sampler's indices",
    "rows": "the rows read one index at a time",
    "collate": "the collate that stacks them",
}


def probed_fetch(probes: list[dict]) -> dict[str, dict]:
    """Per device, what the torch probe read of the DataLoader's fetch, as LoopParts' fields in seconds a batch: the
    loader alone, its own parts and the loop less its steps (each None where the probe predates it)."""
    found = {}
    for p in probes:
        fetch = p["measurements"].get("loader_fetch") if p["framework"] == TORCH and p["status"] == "ok" else None
        if fetch:
            parts, between = fetch.get("fetch_parts"), fetch.get("between_steps")
            found[p["device"]] = {
                "loader_alone_s": fetch["value_us"] * 1e-6,
                "fetch_parts_s": {part: parts[part]["value_us"] * 1e-6 for part in FETCH_PARTS} if parts else None,
                "between_steps_s": between["value_us"] * 1e-6 if between else None,
            }
    return found


def loop_parts(
    records: list[dict], views: tuple[RungResult, ...], aa_step: Ratio | None, probes: list[dict]
) -> dict[str, LoopParts]:
    """Per device, the `parts` rung's idle runs' parts; ``views``: the machine's, whose `parts` view holds its step
    against `seed`'s; ``aa_step``: the study's A/A control per step, if it ran; ``probes``: the study's probe
    records, for the DataLoader timed alone."""
    rung = registry.rung_with_role(TORCH, Role.STEP_PARTS).name
    against_seed = {v.device: v.step_vs_seed for v in views if (v.framework, v.variant) == (TORCH, rung)}
    band = max(abs(np.log(v)) for v in (aa_step.estimate, aa_step.low, aa_step.high) if v) if aa_step else None
    fetched, found = probed_fetch(probes), {}
    for device in DEVICES:
        chosen = [
            r
            for r in records
            if r["status"] == "ok"
            and r["identity"]["condition"] == IDLE
            and (r["identity"]["framework"], r["identity"]["device"], r["identity"]["variant"]) == (TORCH, device, rung)
        ]
        read = [(r, blocks) for r in chosen if (blocks := block_steps(r)) is not None]
        if not read:
            continue
        step = np.concatenate([total for _, (total, _) in read])
        by_block = {part: np.concatenate([p[part] for _, (_, p) in read]) for part in LOOP_PARTS}
        parts = {part: float(seconds.mean()) for part, seconds in by_block.items()}
        # Each block's step less its step parts: what the probe's medians of the loop around the step are set against.
        around = step - sum(by_block[part] for part in STEP_ITSELF)
        details = read[0][0]["parameters"]["variant_details"]
        found[device] = LoopParts(
            device=device,
            parts_s=parts,
            step_s=float(step.mean()),
            around_step_median_s=float(np.median(around)),
            blocks=len(step),
            runs=len(read),
            reads_per_step=int(details["clock_reads_per_step"]) if "clock_reads_per_step" in details else None,
            clocksource=details.get("clocksource"),
            against_seed=against_seed.get(device),
            aa_band=float(np.exp(band)) if band is not None else None,
            **fetched.get(device, {}),
        )
    return found
