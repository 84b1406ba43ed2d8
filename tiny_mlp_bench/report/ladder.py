"""The ladders of rungs per framework-device pair, the floors under them and the targets judged from them."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import registry
from tiny_mlp_bench.catalogue import Role, pair_name
from tiny_mlp_bench.question import TODAYS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report.fixed_costs import FixedCosts, Floor
from tiny_mlp_bench.report.inference import Interval, Ratio, ratio


@dataclass(frozen=True)
class TargetSpec:
    """One of the study's speed targets: a rung of ``pair`` against a baseline rung."""

    kind: str
    pair: str
    variant: str | None
    goal: float
    baseline_pair: str
    baseline_variant: str


def beyond_the_askers(framework: str, device: str, goal: float) -> TargetSpec:
    """A pair's best rung at least ``goal`` times faster per step than its asker's loop."""
    pair = pair_name(framework, device)
    return TargetSpec("speedup", pair, None, goal, pair, askers_rung(framework))


def within(framework: str, device: str, goal: float, role: Role) -> TargetSpec:
    """A pair's best rung within ``goal`` times the step of the one rung with ``role``."""
    baseline = registry.sole_rung(role)
    return TargetSpec(
        "within", pair_name(framework, device), None, goal, pair_name(baseline.framework, device), baseline.name
    )


@functools.cache
def targets() -> tuple[TargetSpec, ...]:
    """The ladders' targets, read from the rungs when a report is made, never at import."""
    return (
        beyond_the_askers(TORCH, "cpu", 5.0),
        within(TORCH, "cpu", 1.5, Role.REFERENCE),
        within(TORCH, "cpu", 3.0, Role.FLOOR),
        beyond_the_askers(TODAYS_KERAS, "cpu", 10.0),
        beyond_the_askers(TODAYS_KERAS, "cuda", 10.0),
        beyond_the_askers(TORCH, "cuda", 50.0),
    )


@dataclass(frozen=True)
class RungResult:
    """One rung on a pair's ladder, as measured: per-step medians over repeats, speed-ups and spread."""

    pair: str
    framework: str
    variant: str
    step_s: float
    step_min_s: float
    step_max_s: float
    step: Interval | None
    step_median_s: float | None  # the median over runs of each window's median block: what a run saw here
    slow_share: float | None  # the share of the window's blocks the canary marked slow, over the runs
    vs_seed: float | None
    vs_previous: float | None
    first_block_excess_s: float | None
    one_time_s: float | None  # set-up plus the first block's excess: what a run pays once, whatever its epochs
    beats_seed_from: int | None  # the fewest epochs at which its time to result beats seed's; None: never
    runs: int
    converged: int
    above_floor: float | None  # step time over the device's floor
    host_syncs_per_epoch: float | None  # torch on cuda: the median over repeats of the count in an extra epoch
    # The speed-ups over runs, with their intervals: the seed's steps over this rung's, and the rung before's.
    speedup: Ratio | None = None
    speedup_over_previous: Ratio | None = None

    @property
    def role(self) -> Role | None:
        return registry.role_of(self.framework, self.variant)


@dataclass(frozen=True)
class Ladder:
    """A pair's rungs in ladder order, and its device's floor (None where not measured)."""

    pair: str
    device: str
    floor: Floor | None
    rungs: tuple[RungResult, ...]

    def rung(self, variant: str) -> RungResult | None:
        return next((r for r in self.rungs if r.variant == variant), None)

    def with_role(self, role: Role) -> RungResult | None:
        return next((r for r in self.rungs if r.role == role), None)

    def fastest(self, leave_out: Role | None = None) -> RungResult | None:
        timed = [r for r in self.rungs if (leave_out is None or r.role != leave_out) and pd.notna(r.step_s)]
        return min(timed, key=lambda r: r.step_s) if timed else None

    @property
    def counts_host_syncs(self) -> bool:
        return any(r.host_syncs_per_epoch is not None for r in self.rungs)

    @property
    def from_seed(self) -> bool:
        """Whether the ladder starts at the asker's loop and climbs at least one rung."""
        return len(self.rungs) > 1 and self.rungs[0].role == Role.ASKERS

    @property
    def biggest_rung(self) -> RungResult:
        return max(self.rungs[1:], key=lambda r: r.vs_previous)

    @property
    def slower_rungs(self) -> list[RungResult]:
        return [r for r in self.rungs[1:] if r.vs_previous is not None and r.vs_previous < 1]


@dataclass(frozen=True)
class EpochFloor:
    """A Keras pair's step time with one train-function call per epoch, against its asker's loop."""

    pair: str
    step_s: float
    vs_seed: float
    tenfold_step_s: float  # the step time a ten-fold speed-up over seed would need


@dataclass(frozen=True)
class Target:
    """A target as measured on one machine; rung and baseline are None when not measured."""

    spec: TargetSpec
    rung: RungResult | None
    baseline: RungResult | None
    ratio: float | None
    met: bool | None
    bound: float | None = None  # for a speed-up, the most the device's floor allows: baseline / floor
    # The compiled epoch (torch cpu) against the floor: its call as (fused kernel, rest: Dynamo guards), s per step.
    call_parts: tuple[float, float] | None = None


def one_time_s(setup_s: float, first_block_excess_s: float) -> float | None:
    found = setup_s + first_block_excess_s
    return None if pd.isna(found) else float(found)


def break_even_epochs(rung_once: float, rung_epoch: float, seed_once: float, seed_epoch: float) -> int | None:
    """Fewest epochs from which a rung's time to result stays below the asker's loop's; None: it never does."""
    extra_once, saved_per_epoch = rung_once - seed_once, seed_epoch - rung_epoch
    if saved_per_epoch <= 0:
        return 1 if extra_once < 0 and saved_per_epoch == 0 else None
    return max(1, math.floor(extra_once / saved_per_epoch) + 1)


def speedup(before: tuple[float, ...], after: tuple[float, ...]) -> Ratio | None:
    return ratio(before, after) if before and after else None


def ladders(summary: pd.DataFrame, floors: dict[str, Floor]) -> tuple[Ladder, ...]:
    """For each pair that has completed runs, its rungs in ladder order with speed-ups and times above floor."""
    found = []
    for pair, rows in summary.groupby("pair", sort=False):
        first = rows.iloc[0]
        floor = floors.get(first.device)
        askers = askers_rung(first.framework)
        seed_rows = rows[rows["variant"] == askers]
        seed = seed_rows.iloc[0] if len(seed_rows) else None
        seed_step = seed.step_s if seed is not None else None
        seed_steps = seed.step_values if seed is not None else ()
        seed_once = one_time_s(seed.setup_s, seed.first_block_excess_s) if seed is not None else None
        # Extrapolated waits take the mean step (docs/method.md, "Two estimators"): the median under-predicts them.
        seed_mean = seed.step_mean_s if seed is not None else None
        rungs, previous, previous_steps = [], None, ()
        for row in rows.itertuples(index=False):
            once, beats = one_time_s(row.setup_s, row.first_block_excess_s), None
            timed = pd.notna(row.step_mean_s) and seed_mean is not None and pd.notna(seed_mean)
            if once is not None and seed_once is not None and timed and row.variant != askers:
                per_epoch = row.steps_per_epoch
                beats = break_even_epochs(once, row.step_mean_s * per_epoch, seed_once, seed_mean * per_epoch)
            rungs.append(
                RungResult(
                    pair=pair,
                    framework=row.framework,
                    variant=row.variant,
                    step_s=row.step_s,
                    step_min_s=row.step_min_s,
                    step_max_s=row.step_max_s,
                    step=row.step,
                    step_median_s=None if pd.isna(row.step_median_s) else row.step_median_s,
                    slow_share=None if pd.isna(row.slow_share) else row.slow_share,
                    vs_seed=seed_step / row.step_s if seed_step else None,
                    vs_previous=previous / row.step_s if previous else None,
                    first_block_excess_s=None if pd.isna(row.first_block_excess_s) else row.first_block_excess_s,
                    one_time_s=once,
                    beats_seed_from=beats,
                    runs=int(row.runs),
                    converged=int(row.converged),
                    above_floor=row.step_s / floor.step_s if floor and pd.notna(row.step_s) else None,
                    host_syncs_per_epoch=None if pd.isna(row.host_syncs_per_epoch) else row.host_syncs_per_epoch,
                    speedup=speedup(seed_steps, row.step_values) if row.variant != askers else None,
                    speedup_over_previous=speedup(previous_steps, row.step_values),
                )
            )
            previous, previous_steps = row.step_s, row.step_values
        found.append(Ladder(pair, first.device, floor, tuple(rungs)))
    return tuple(found)


def judge(spec: TargetSpec, by_pair: dict[str, Ladder], costs: dict[str, FixedCosts] | None = None) -> Target:
    """A target judged from the per-step medians; ``costs`` (the probes) explain a compiled rung against the floor."""
    ladder, base_ladder = by_pair.get(spec.pair), by_pair.get(spec.baseline_pair)
    rung = None
    if ladder is not None:
        rung = ladder.rung(spec.variant) if spec.variant else ladder.fastest(leave_out=Role.ASKERS)
    baseline = base_ladder.rung(spec.baseline_variant) if base_ladder else None
    if rung is None or baseline is None:
        return Target(spec, rung, baseline, None, None)
    if spec.kind == "speedup":
        ratio = baseline.step_s / rung.step_s
        # A measured floor is arithmetic, any framework's; a computed cuda floor counts the asker's torch kernels.
        floor = ladder.floor
        applies = floor is not None and (floor.measured or rung.framework == TORCH)
        bound = baseline.step_s / floor.step_s if applies else None
        return Target(spec, rung, baseline, ratio, bool(ratio >= spec.goal), bound)
    ratio = rung.step_s / baseline.step_s
    cpu = (costs or {}).get("cpu")
    parts = None
    if rung.role == Role.COMPILED_EPOCH and baseline.role == Role.FLOOR and cpu and cpu.fused_call_s:
        kernel = cpu.fused_kernel_s / cpu.fused_steps_per_call
        parts = (kernel, cpu.fused_call_s / cpu.fused_steps_per_call - kernel)
    return Target(spec, rung, baseline, ratio, bool(ratio <= spec.goal), call_parts=parts)


def epoch_floors(found: tuple[Ladder, ...]) -> tuple[EpochFloor, ...]:
    """Why Keras cannot get much faster per step: a step's cost with one train-function call per epoch."""
    floors = []
    for ladder in found:
        seed, one_call = ladder.with_role(Role.ASKERS), ladder.with_role(Role.ONE_CALL_PER_EPOCH)
        if seed and one_call:
            floors.append(EpochFloor(ladder.pair, one_call.step_s, one_call.vs_seed, seed.step_s / 10))
    return tuple(floors)
