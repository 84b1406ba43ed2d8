"""Every completed rung in the two views a user chooses by, time to result and time per step, each
over its runs with its interval; each rung's rank, shared with the neighbours its runs cannot order;
and the headline, the few rows the report's first screen shows.

Numbers only: the wording and the cells are markdown.py's and sentences.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.question import ASKERS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report.inference import Interval, Ratio, ratio
from tiny_mlp_bench.report.ladder import one_time_s

# The question's rungs, in the order the headline shows them: the original torch loop and Keras 2's fit.
QUESTION_RUNGS = ((TORCH, askers_rung(TORCH)), (ASKERS_KERAS, askers_rung(ASKERS_KERAS)))


@dataclass(frozen=True)
class View:
    """One completed rung in both views. The ratios are this rung's runs over the original torch loop's
    on its device (below 1: faster); None for that loop itself or where it did not complete."""

    pair: str
    framework: str
    device: str
    variant: str
    result: Interval | None  # times to result
    step: Interval | None  # steady-state steps
    result_vs_seed: Ratio | None
    step_vs_seed: Ratio | None
    one_time_s: float | None  # set-up and first-block excess (medians)
    result_rank: str  # "3", or "2-4" (an en dash) where its runs cannot be ordered against a neighbour's
    step_rank: str
    hand_written: bool  # the NumPy and numba loops, which no library writes for a user


@dataclass(frozen=True)
class HeadlineRow:
    """A row of the first screen's table: what it is, and its view."""

    role: str  # "question", "fastest to a result" or "fastest per step"
    view: View


def ranks(values: list[tuple[float, ...]]) -> list[str]:
    """Ranks of rungs already sorted fastest first; a run of neighbours whose ratio the exact test does not
    resolve shares one span of ranks, "2-4" (an en dash)."""
    groups: list[list[int]] = []
    for i, found in enumerate(values):
        if groups and not ratio(found, values[i - 1]).resolved:
            groups[-1].append(i)
        else:
            groups.append([i])
    text = {}
    for group in groups:
        first, last = group[0] + 1, group[-1] + 1
        for i in group:
            text[i] = str(first) if first == last else f"{first}–{last}"
    return [text[i] for i in range(len(values))]


def ranked(rows: pd.DataFrame, estimate: str, column: str) -> pd.Series:
    """The rank text of each of ``rows`` by ``column``'s runs, fastest first by ``estimate``."""
    timed = rows[rows[estimate].notna()].sort_values([estimate, "pair", "variant"])
    found = pd.Series("–", index=rows.index, dtype=object)
    found[timed.index] = ranks(list(timed[column]))
    return found


def views(summary: pd.DataFrame) -> tuple[View, ...]:
    """Every completed rung, device by device, fastest to a result first."""
    hand_written = {f.name for f in catalogue.FRAMEWORKS if f.hand_written}
    found = []
    for device in catalogue.DEVICES:
        rows = summary[summary["device"] == device].copy()
        if rows.empty:
            continue
        rows["result_estimate"] = [r.estimate if r else None for r in rows["result"]]
        rows["step_estimate"] = [s.estimate if s else None for s in rows["step"]]
        rows["result_rank"] = ranked(rows, "result_estimate", "result_values")
        rows["step_rank"] = ranked(rows, "step_estimate", "step_values")
        seed = rows[(rows["framework"] == TORCH) & (rows["variant"] == askers_rung(TORCH))]
        seed = seed.iloc[0] if len(seed) else None
        for s in rows.sort_values(["result_estimate", "pair", "variant"], na_position="last").itertuples():
            is_seed = seed is not None and s.Index == seed.name
            found.append(
                View(
                    pair=s.pair,
                    framework=s.framework,
                    device=device,
                    variant=s.variant,
                    result=s.result,
                    step=s.step,
                    result_vs_seed=vs(s.result_values, seed, "result_values", is_seed),
                    step_vs_seed=vs(s.step_values, seed, "step_values", is_seed),
                    one_time_s=one_time_s(s.setup_s, s.first_block_excess_s),
                    result_rank=s.result_rank,
                    step_rank=s.step_rank,
                    hand_written=s.framework in hand_written,
                )
            )
    return tuple(found)


def vs(values: tuple[float, ...], seed, column: str, is_seed: bool) -> Ratio | None:
    if is_seed or seed is None or not values or not seed[column]:
        return None
    return ratio(values, seed[column])


def headline(found: tuple[View, ...]) -> tuple[HeadlineRow, ...]:
    """The first screen's rows: the question's rungs measured here, then each device's fastest rung to a
    result and per step where another rung is; eight at most."""
    rows = []
    for device in catalogue.DEVICES:
        on = [v for v in found if v.device == device]
        for framework, variant in QUESTION_RUNGS:
            rows += [HeadlineRow("question", v) for v in on if (v.framework, v.variant) == (framework, variant)]
    for device in catalogue.DEVICES:
        on = [v for v in found if v.device == device]
        shown = {(r.view.pair, r.view.variant) for r in rows}
        for role, key in (("fastest to a result", "result"), ("fastest per step", "step")):
            timed = [v for v in on if getattr(v, key) is not None]
            if timed:
                best = min(timed, key=lambda v: getattr(v, key).estimate)
                if (best.pair, best.variant) not in shown:
                    rows.append(HeadlineRow(role, best))
                    shown.add((best.pair, best.variant))
    return tuple(rows[:8])
