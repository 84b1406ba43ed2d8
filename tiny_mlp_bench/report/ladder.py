"""The ladders of rungs per framework-device pair and the floors under them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.question import askers_rung
from tiny_mlp_bench.report.fixed_costs import Floor
from tiny_mlp_bench.report.inference import Interval, Ratio, ratio


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


@dataclass(frozen=True)
class EpochFloor:
    """A Keras pair's step time with one train-function call per epoch, against its asker's loop."""

    pair: str
    step_s: float
    vs_seed: float


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
                    host_syncs_per_epoch=None if pd.isna(row.host_syncs_per_epoch) else row.host_syncs_per_epoch,
                    speedup=speedup(seed_steps, row.step_values) if row.variant != askers else None,
                    speedup_over_previous=speedup(previous_steps, row.step_values),
                )
            )
            previous, previous_steps = row.step_s, row.step_values
        found.append(Ladder(pair, first.device, floor, tuple(rungs)))
    return tuple(found)


def epoch_floors(found: tuple[Ladder, ...]) -> tuple[EpochFloor, ...]:
    """Why Keras cannot get much faster per step: a step's cost with one train-function call per epoch."""
    floors = []
    for ladder in found:
        seed, one_call = ladder.with_role(Role.ASKERS), ladder.with_role(Role.ONE_CALL_PER_EPOCH)
        if seed and one_call:
            floors.append(EpochFloor(ladder.pair, one_call.step_s, one_call.vs_seed))
    return tuple(floors)
