"""Every completed rung in both views (time to result, time per step) with its letters, and the report's headline."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.question import ASKERS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report.inference import Interval, Ratio, ratio
from tiny_mlp_bench.report.ladder import one_time_s


@dataclass(frozen=True)
class View:
    """One completed rung in both views; ratios are its runs over the original torch loop's, None for that loop."""

    pair: str
    framework: str
    device: str
    variant: str
    result: Interval | None  # times to result
    step: Interval | None  # steady-state steps
    result_vs_seed: Ratio | None
    step_vs_seed: Ratio | None
    one_time_s: float | None  # set-up and first-block excess (medians)
    result_rank: str  # its letters ("a", "ab"): rungs that share a letter cannot be ordered
    step_rank: str
    result_values: tuple[float, ...]  # each run's time to result, what a ratio to another rung is made of
    step_values: tuple[float, ...]
    slow_share: float | None  # the share of its windows' blocks the canary marked slow, over its runs
    hand_written: bool  # the NumPy and numba loops, which no library writes for a user


@dataclass(frozen=True)
class HeadlineRow:
    """A row of the first screen's table; for a device's fastest, the rungs its runs cannot be told apart from."""

    role: str  # "question", "fastest to a result", "fastest per step", or "lowest time ..." where not shown fastest
    view: View
    tied_with: tuple[str, ...] = ()  # "pair `variant`" of each rung its runs do not show it faster than


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


def ranked(rows: pd.DataFrame, estimate: str, column: str) -> pd.Series:
    """The letters of each of ``rows`` by ``column``'s runs, fastest first by ``estimate``."""
    timed = rows[rows[estimate].notna()].sort_values([estimate, "pair", "variant"])
    found = pd.Series("–", index=rows.index, dtype=object)
    found[timed.index] = letters(list(timed[column]))
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
                    result_values=s.result_values if isinstance(s.result_values, tuple) else (),
                    step_values=s.step_values if isinstance(s.step_values, tuple) else (),
                    slow_share=None if pd.isna(s.slow_share) else float(s.slow_share),
                    hand_written=s.framework in hand_written,
                )
            )
    return tuple(found)


def vs(values: tuple[float, ...], seed, column: str, is_seed: bool) -> Ratio | None:
    if is_seed or seed is None or not values or not seed[column]:
        return None
    return ratio(values, seed[column])


def shown_faster(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Whether ``a``'s runs are shown faster than ``b``'s: the exact test resolves their ratio, below 1."""
    found = ratio(a, b)
    return found.resolved and found.estimate < 1


def headline(found: tuple[View, ...]) -> tuple[HeadlineRow, ...]:
    """The first screen's rows (at most 8): the question's rungs, then each device's fastest (not the A/A control)."""
    rows = []
    for device in catalogue.DEVICES:
        on = [v for v in found if v.device == device]
        for framework in (TORCH, ASKERS_KERAS):  # the question's rungs, resolved when a report is made
            variant = askers_rung(framework)
            rows += [HeadlineRow("question", v) for v in on if (v.framework, v.variant) == (framework, variant)]
    for device in catalogue.DEVICES:
        on = [v for v in found if v.device == device and registry.role_of(v.framework, v.variant) != Role.AA_CONTROL]
        shown = {(r.view.pair, r.view.variant) for r in rows}
        for key, view in (("result", "to a result"), ("step", "per step")):
            timed = sorted((v for v in on if getattr(v, key) is not None), key=lambda v: getattr(v, key).estimate)
            if not timed:
                continue
            best, values = timed[0], f"{key}_values"
            # "Fastest" only where the runs show it faster than every other rung on the device; else the lowest
            # estimate, with the rungs its runs do not show it faster than.
            ties = tuple(
                f"{v.pair} `{v.variant}`"
                for v in timed[1:]
                if len(getattr(v, values)) and not shown_faster(getattr(best, values), getattr(v, values))
            )
            role = f"lowest time {view}" if ties else f"fastest {view}"
            if (best.pair, best.variant) not in shown:
                rows.append(HeadlineRow(role, best, ties))
                shown.add((best.pair, best.variant))
    return tuple(rows[:8])


def headline_frame(machines) -> pd.DataFrame:
    """The headline of every machine as numbers: seconds and ratios to the original torch loop, with 95% intervals."""

    def interval(name: str, found: Interval | Ratio | None, unit: str = "") -> dict:
        return {
            f"{name}{unit}": None if found is None else found.estimate,
            f"{name}_low{unit}": None if found is None else found.low,
            f"{name}_high{unit}": None if found is None else found.high,
        }

    rows = [
        {
            "host": m.label,
            "role": row.role,
            "framework": row.view.framework,
            "device": row.view.device,
            "variant": row.view.variant,
            "tied_with": "; ".join(rung.replace("`", "") for rung in row.tied_with),
            "runs": row.view.result.runs if row.view.result else 0,
            **interval("time_to_result", row.view.result, "_s"),
            **interval("time_to_result_vs_original", row.view.result_vs_seed),
            **interval("step", row.view.step, "_s"),
            **interval("step_vs_original", row.view.step_vs_seed),
            "blocks_slow_share": row.view.slow_share,
        }
        for m in machines
        for row in m.headline
    ]
    return pd.DataFrame(rows)
