"""Every completed rung in both views (time to result, time per step) with its letters, and the report's headline."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.question import ASKERS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report.inference import Interval, Ratio, ratio
from tiny_mlp_bench.report.ladder import Ladder, RungResult


@dataclass(frozen=True)
class HeadlineRow:
    """A row of the first screen's table; for a device's fastest, the rungs its runs cannot be told apart from."""

    role: str  # "question", "fastest to a result", "fastest per step", or "lowest time ..." where not shown fastest
    rung: RungResult
    tied_with: tuple[str, ...] = ()  # "pair `variant`" of each rung its runs do not show it faster than


def views(ladders: tuple[Ladder, ...]) -> tuple[RungResult, ...]:
    """Every completed rung, device by device, fastest to a result first."""
    rungs = [rung for ladder in ladders for rung in ladder.rungs]
    found = []
    for device in catalogue.DEVICES:
        on = sorted((r for r in rungs if r.device == device), key=lambda r: (r.pair, r.variant))
        found += sorted((r for r in on if r.result), key=lambda r: r.result.estimate) + [r for r in on if not r.result]
    return tuple(found)


def shown_faster(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Whether ``a``'s runs are shown faster than ``b``'s: the exact test resolves their ratio, below 1."""
    found = ratio(a, b)
    return found.resolved and found.estimate < 1


def headline(found: tuple[RungResult, ...]) -> tuple[HeadlineRow, ...]:
    """The first screen's rows (at most 8): the question's rungs, then each device's fastest (not the A/A control)."""
    rows = []
    for device in catalogue.DEVICES:
        on = [v for v in found if v.device == device]
        for framework in (TORCH, ASKERS_KERAS):  # the question's rungs, resolved when a report is made
            variant = askers_rung(framework)
            rows += [HeadlineRow("question", v) for v in on if (v.framework, v.variant) == (framework, variant)]
    for device in catalogue.DEVICES:
        on = [v for v in found if v.device == device and registry.role_of(v.framework, v.variant) != Role.AA_CONTROL]
        shown = {(r.rung.pair, r.rung.variant) for r in rows}
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
            "framework": row.rung.framework,
            "device": row.rung.device,
            "variant": row.rung.variant,
            "tied_with": "; ".join(rung.replace("`", "") for rung in row.tied_with),
            "runs": row.rung.result.runs if row.rung.result else 0,
            **interval("time_to_result", row.rung.result, "_s"),
            **interval("time_to_result_vs_original", row.rung.result_vs_seed),
            **interval("step", row.rung.step, "_s"),
            **interval("step_vs_original", row.rung.step_vs_seed),
            "blocks_slow_share": row.rung.slow_share,
        }
        for m in machines
        for row in m.headline
    ]
    return pd.DataFrame(rows)
