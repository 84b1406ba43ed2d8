"""The variant ladders per framework-device pair, the floors under them and the targets judged from them.

ladders() turns the per-pair, per-variant summary (model.summarize) into one Ladder per pair: its rungs
with per-step medians, speed-ups and spread, and how far each is above its device's floor
(fixed_costs.py). judge() measures a TargetSpec against the ladders; epoch_floors() states what a Keras step costs
with a single train-function call per epoch. Numbers only: no wording and no formatting.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench.report.fixed_costs import Floor

# A spread above this coefficient of variation makes a comparison unreliable.
CV_WARNING = 0.10


@dataclass(frozen=True)
class TargetSpec:
    """One of the study's speed targets: a rung of ``pair`` against a baseline rung.

    kind "speedup": baseline time / rung time ≥ goal; kind "within": rung time / baseline time ≤ goal.
    variant None means the pair's fastest rung other than seed.
    """

    kind: str
    pair: str
    variant: str | None
    goal: float
    baseline_pair: str
    baseline_variant: str


TARGETS = (
    TargetSpec("speedup", "torch-cpu", None, 5.0, "torch-cpu", "seed"),
    TargetSpec("within", "torch-cpu", None, 1.5, "numpy-cpu", "reference"),
    TargetSpec("speedup", "keras-cpu", None, 10.0, "keras-cpu", "seed"),
    TargetSpec("speedup", "keras-cuda", None, 10.0, "keras-cuda", "seed"),
    TargetSpec("speedup", "torch-cuda", "graphed", 50.0, "torch-cuda", "seed"),
)


@dataclass(frozen=True)
class Rung:
    """One variant on a pair's ladder: per-step medians over repeats, speed-ups and spread."""

    pair: str
    framework: str
    variant: str
    step_s: float
    step_min_s: float
    step_max_s: float
    cv: float  # NaN with fewer than two timed repeats
    vs_seed: float | None
    vs_previous: float | None
    first_block_excess_s: float | None
    runs: int
    converged: int
    above_floor: float | None  # step time over the device's floor

    @property
    def noisy(self) -> bool:
        return bool(self.cv > CV_WARNING)


@dataclass(frozen=True)
class Ladder:
    """A pair's rungs in ladder order, and its device's floor (None where not measured)."""

    pair: str
    device: str
    floor: Floor | None
    rungs: tuple[Rung, ...]

    def rung(self, variant: str) -> Rung | None:
        return next((r for r in self.rungs if r.variant == variant), None)

    def fastest(self, exclude: tuple[str, ...] = ()) -> Rung | None:
        timed = [r for r in self.rungs if r.variant not in exclude and pd.notna(r.step_s)]
        return min(timed, key=lambda r: r.step_s) if timed else None

    @property
    def from_seed(self) -> bool:
        """Whether the ladder starts at the asker's loop and climbs at least one rung."""
        return len(self.rungs) > 1 and self.rungs[0].variant == "seed"

    @property
    def biggest_rung(self) -> Rung:
        return max(self.rungs[1:], key=lambda r: r.vs_previous)

    @property
    def slower_rungs(self) -> list[Rung]:
        """Rungs slower than the rung before them."""
        return [r for r in self.rungs[1:] if r.vs_previous is not None and r.vs_previous < 1]


@dataclass(frozen=True)
class EpochFloor:
    """A Keras pair's step time with one train-function call per epoch, against its seed."""

    pair: str
    step_s: float
    vs_seed: float
    tenfold_step_s: float  # the step time a ten-fold speed-up over seed would need


@dataclass(frozen=True)
class Target:
    """A target as measured on one machine; rung and baseline are None when not measured."""

    spec: TargetSpec
    rung: Rung | None
    baseline: Rung | None
    ratio: float | None
    met: bool | None


def ladders(summary: pd.DataFrame, floors: dict[str, Floor]) -> tuple[Ladder, ...]:
    """For each pair that has completed runs, its rungs in ladder order with speed-ups and times above floor."""
    found = []
    for pair, rows in summary.groupby("pair", sort=False):
        first = rows.iloc[0]
        floor = floors.get(first.device)
        seed = rows[rows["variant"] == "seed"]["step_s"]
        seed_step = seed.iloc[0] if len(seed) else None
        rungs, previous = [], None
        for row in rows.itertuples(index=False):
            rungs.append(
                Rung(
                    pair=pair,
                    framework=row.framework,
                    variant=row.variant,
                    step_s=row.step_s,
                    step_min_s=row.step_min_s,
                    step_max_s=row.step_max_s,
                    cv=row.step_cv,
                    vs_seed=seed_step / row.step_s if seed_step else None,
                    vs_previous=previous / row.step_s if previous else None,
                    first_block_excess_s=None if pd.isna(row.first_block_excess_s) else row.first_block_excess_s,
                    runs=int(row.runs),
                    converged=int(row.converged),
                    above_floor=row.step_s / floor.step_s if floor and pd.notna(row.step_s) else None,
                )
            )
            previous = row.step_s
        found.append(Ladder(pair, first.device, floor, tuple(rungs)))
    return tuple(found)


def judge(spec: TargetSpec, by_pair: dict[str, Ladder]) -> Target:
    """A target judged from the per-step medians."""
    ladder, base_ladder = by_pair.get(spec.pair), by_pair.get(spec.baseline_pair)
    rung = None
    if ladder is not None:
        rung = ladder.rung(spec.variant) if spec.variant else ladder.fastest(exclude=("seed",))
    baseline = base_ladder.rung(spec.baseline_variant) if base_ladder else None
    if rung is None or baseline is None:
        return Target(spec, rung, baseline, None, None)
    if spec.kind == "speedup":
        ratio = baseline.step_s / rung.step_s
        return Target(spec, rung, baseline, ratio, bool(ratio >= spec.goal))
    ratio = rung.step_s / baseline.step_s
    return Target(spec, rung, baseline, ratio, bool(ratio <= spec.goal))


def epoch_floors(found: tuple[Ladder, ...]) -> tuple[EpochFloor, ...]:
    """Why Keras cannot get much faster per step: a step's cost with a single call per epoch."""
    floors = []
    for ladder in found:
        seed, one_call = ladder.rung("seed"), ladder.rung("steps_per_execution")
        if ladder.pair.startswith("keras") and seed and one_call:
            floors.append(EpochFloor(ladder.pair, one_call.step_s, one_call.vs_seed, seed.step_s / 10))
    return tuple(floors)
