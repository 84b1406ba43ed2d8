"""The ladders of rungs per framework-device pair and the floors under them."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.question import TORCH, askers_rung
from tiny_mlp_bench.report.fixed_costs import Floor
from tiny_mlp_bench.report.inference import Interval, Ratio, ratio


@dataclass(frozen=True)
class RungResult:
    """One rung as its runs measured it, the one type every part of the report reads a rung through: both views
    (time to result, time per step) with each run's value, the interval, the letters within its device and the ratio
    to the original torch loop there; its place on its pair's ladder (medians, spread, speed-ups); what it pays once."""

    pair: str
    framework: str
    device: str
    variant: str
    result: Interval | None  # times to result
    result_values: tuple[float, ...]  # each run's time to result, what a ratio to another rung is made of
    step_s: float
    step_min_s: float
    step_max_s: float
    step: Interval | None  # steady-state steps
    step_values: tuple[float, ...]
    step_median_s: float | None  # the median over runs of each window's median block: what a run saw here
    slow_share: float | None  # the share of the window's blocks the canary marked slow, over the runs
    vs_seed: float | None
    first_block_excess_s: float | None
    one_time_s: float | None  # set-up plus the first block's excess: what a run pays once, whatever its epochs
    beats_seed_from: int | None  # the fewest epochs at which its time to result beats seed's; None: never
    runs: int
    converged: int
    host_syncs_per_epoch: float | None  # torch on cuda: the median over repeats of the count in an extra epoch
    # The speed-up over runs, with its interval: the rung before's steps over this rung's.
    speedup_over_previous: Ratio | None = None
    # Its runs over the original torch loop's on its device, None for that loop; its letters within its device ("a",
    # "ab"): rungs that share a letter cannot be ordered.
    result_vs_seed: Ratio | None = None
    step_vs_seed: Ratio | None = None
    result_rank: str = "–"
    step_rank: str = "–"

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

    @property
    def counts_host_syncs(self) -> bool:
        return any(r.host_syncs_per_epoch is not None for r in self.rungs)


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
    against_torch = against_the_torch_loop(summary)
    found = []
    for pair, rows in summary.groupby("pair", sort=False):
        first = rows.iloc[0]
        floor = floors.get(first.device)
        askers = askers_rung(first.framework)
        seed_rows = rows[rows["variant"] == askers]
        seed = seed_rows.iloc[0] if len(seed_rows) else None
        seed_step = seed.step_s if seed is not None else None
        seed_once = one_time_s(seed.setup_s, seed.first_block_excess_s) if seed is not None else None
        # Extrapolated waits take the mean step (docs/method.md, "Two estimators"): the median under-predicts them.
        seed_mean = seed.step_mean_s if seed is not None else None
        rungs, previous_steps = [], ()
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
                    device=row.device,
                    variant=row.variant,
                    result=row.result if isinstance(row.result, Interval) else None,
                    result_values=run_values(row.result_values),
                    step_s=row.step_s,
                    step_min_s=row.step_min_s,
                    step_max_s=row.step_max_s,
                    step=row.step,
                    step_values=run_values(row.step_values),
                    step_median_s=None if pd.isna(row.step_median_s) else row.step_median_s,
                    slow_share=None if pd.isna(row.slow_share) else row.slow_share,
                    vs_seed=seed_step / row.step_s if seed_step else None,
                    first_block_excess_s=None if pd.isna(row.first_block_excess_s) else row.first_block_excess_s,
                    one_time_s=once,
                    beats_seed_from=beats,
                    runs=int(row.runs),
                    converged=int(row.converged),
                    host_syncs_per_epoch=None if pd.isna(row.host_syncs_per_epoch) else row.host_syncs_per_epoch,
                    speedup_over_previous=speedup(previous_steps, row.step_values),
                    **against_torch[pair, row.variant],
                )
            )
            previous_steps = row.step_values
        found.append(Ladder(pair, first.device, floor, tuple(rungs)))
    return tuple(found)


def run_values(found) -> tuple[float, ...]:
    """A rung's run values, none where no run timed it (the summary's join leaves a NaN there)."""
    return found if isinstance(found, tuple) else ()


def letters(values: list[tuple[float, ...]]) -> list[str]:
    """Compact letter display of rungs sorted fastest first: two share a letter where the exact test can't part them."""

    @functools.cache
    def unresolved(i: int, j: int) -> bool:  # asked for i < j only, each pair once: a ratio inverts its test
        return not ratio(values[i], values[j]).resolved

    groups: list[range] = []
    for first in range(len(values)):
        last = first
        while last + 1 < len(values) and all(unresolved(i, last + 1) for i in range(first, last + 1)):
            last += 1
        if not groups or last > groups[-1][-1]:
            groups.append(range(first, last + 1))
    names = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(names[g] for g, group in enumerate(groups) if i in group) for i in range(len(values))]


def ranked(rows: pd.DataFrame, view: str) -> dict[tuple[str, str], str]:
    """The letters of each of ``rows`` (one device's rungs) in ``view`` (result or step), fastest first."""
    timed = [
        (found.estimate, s.pair, s.variant, s[f"{view}_values"])
        for _, s in rows.iterrows()
        if isinstance(found := s[view], Interval)
    ]
    timed.sort(key=lambda t: t[:3])
    found = dict.fromkeys(zip(rows["pair"], rows["variant"], strict=True), "–")
    found.update(zip(((p, v) for _, p, v, _ in timed), letters([t[3] for t in timed]), strict=True))
    return found


def against_the_torch_loop(summary: pd.DataFrame) -> dict[tuple[str, str], dict]:
    """Per rung (pair, variant): its letters within its device in both views, and its runs over the original torch
    loop's there (RungResult's last four fields)."""
    found = {}
    for _, rows in summary.groupby("device", sort=False):
        seed = rows[(rows["framework"] == TORCH) & (rows["variant"] == askers_rung(TORCH))]
        seed = seed.iloc[0] if len(seed) else None
        letters_of = {view: ranked(rows, view) for view in ("result", "step")}
        for _, s in rows.iterrows():
            key, is_seed = (s.pair, s.variant), seed is not None and s.name == seed.name
            found[key] = {f"{view}_rank": letters_of[view][key] for view in ("result", "step")}
            for view in ("result", "step"):
                ours, theirs = (
                    run_values(s[f"{view}_values"]),
                    () if seed is None else run_values(seed[f"{view}_values"]),
                )
                found[key][f"{view}_vs_seed"] = ratio(ours, theirs) if ours and theirs and not is_seed else None
    return found


def epoch_floors(found: tuple[Ladder, ...]) -> tuple[EpochFloor, ...]:
    """Why Keras cannot get much faster per step: a step's cost with one train-function call per epoch."""
    floors = []
    for ladder in found:
        seed, one_call = ladder.with_role(Role.ASKERS), ladder.with_role(Role.ONE_CALL_PER_EPOCH)
        if seed and one_call:
            floors.append(EpochFloor(ladder.pair, one_call.step_s, one_call.vs_seed))
    return tuple(floors)
