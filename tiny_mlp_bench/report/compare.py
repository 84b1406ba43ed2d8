"""This study against an archived one, rung by rung: did a new torch, driver or machine make it faster?

Each side's rung is its runs' steady-state steps: their geometric mean with a t-interval on their logs,
and the ratio of this study's to the archive's by Hodges-Lehmann, with the interval from inverting the
exact Mann-Whitney test (report/inference.py). A rung is called faster or slower only where that
interval excludes 1 and the exact test passes at 5%; otherwise the runs do not resolve it, and the
verdict says with how many. 3 runs against 3 never resolve anything (the exact test's least p is 0.10).

Beside the steps, each Keras rung's pause at the end of ``fit`` (the fit_end phase, from the last
epoch's end to ``fit`` returning, inside all epochs): Keras 2 at times pauses there for many seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.records import RecordError, read_record
from tiny_mlp_bench.report.inference import Interval, Ratio, ratio, rung_interval
from tiny_mlp_bench.report.runs import fast_canary, run_row, summarize

SIDES = ("this", "archive")
KERAS_FRAMEWORKS = frozenset(f.name for f in catalogue.FRAMEWORKS if f.keras is not None)


@dataclass(frozen=True)
class RungChange:
    """One rung as measured on both sides: each side's runs' steady steps (s), empty on a side without it."""

    pair: str
    variant: str
    this: tuple[float, ...]
    archive: tuple[float, ...]

    def side(self, steps: tuple[float, ...]) -> Interval | None:
        return rung_interval(steps) if steps else None

    @property
    def ratio(self) -> Ratio | None:
        """This side's step over the archive's, with its interval and the exact test."""
        return ratio(self.this, self.archive) if self.this and self.archive else None

    @property
    def verdict(self) -> str:
        if not self.this or not self.archive:
            return f"only in {'the archive' if not self.this else 'this study'}"
        found = self.ratio
        if found.resolved:
            return "faster" if found.estimate < 1 else "slower"
        return f"not resolved by {len(self.this)} and {len(self.archive)} runs"


def read_runs(folder: Path) -> list[dict]:
    """Every run record in ``folder`` (a study's results/runs or an archive's runs/)."""
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise RecordError(f"{folder}: no run records (*.json) here")
    return [read_record(path) for path in paths]


def steps_per_rung(records: list[dict]) -> dict[tuple[str, str], tuple[float, ...]]:
    """Per (pair, variant), in ladder order: the steady-state step of each completed run that has one."""
    canary = fast_canary(records)  # each side's per-step window scaled to its own machine's fast state
    runs = pd.DataFrame([run_row(r, "", canary) for r in records])
    done = runs[runs["status"] == "ok"].dropna(subset=["step_s"])
    found = {}
    for s in summarize(runs).itertuples():
        steps = done[(done["pair"] == s.pair) & (done["variant"] == s.variant)]["step_s"].astype(float)
        if len(steps):
            found[s.pair, s.variant] = tuple(steps)
    return found


def compare(this: list[dict], archive: list[dict]) -> list[RungChange]:
    """Every rung timed on either side, in this study's ladder order, then the archive's leftovers."""
    ours, theirs = steps_per_rung(this), steps_per_rung(archive)
    keys = list(ours) + [key for key in theirs if key not in ours]
    return [
        RungChange(pair, variant, ours.get((pair, variant), ()), theirs.get((pair, variant), ()))
        for pair, variant in keys
    ]


@dataclass(frozen=True)
class FitEndPause:
    """One Keras rung's fit_end phase on both sides: median, min and max seconds over its completed runs;
    None on a side without the rung, or whose records of it are from before fit_end was timed."""

    pair: str
    variant: str
    this: tuple[float, float, float] | None
    archive: tuple[float, float, float] | None


def fit_end_spread(records: list[dict]) -> dict[tuple[str, str], tuple[float, float, float] | None]:
    """Per Keras (pair, variant) with completed runs, in ladder order: the median, min and max fit_end."""
    runs = pd.DataFrame([run_row(r, "") for r in records])
    done = runs[runs["status"] == "ok"]
    found = {}
    for s in summarize(runs).itertuples():
        if s.framework not in KERAS_FRAMEWORKS:
            continue
        rung = done[(done["pair"] == s.pair) & (done["variant"] == s.variant)]
        pauses = rung["fit_end_s"].dropna().astype(float)
        found[s.pair, s.variant] = (pauses.median(), pauses.min(), pauses.max()) if len(pauses) else None
    return found


def fit_end_pauses(this: list[dict], archive: list[dict]) -> list[FitEndPause]:
    """Every Keras rung run on either side, in this study's ladder order, then the archive's leftovers."""
    ours, theirs = fit_end_spread(this), fit_end_spread(archive)
    keys = list(ours) + [key for key in theirs if key not in ours]
    return [
        FitEndPause(pair, variant, ours.get((pair, variant)), theirs.get((pair, variant))) for pair, variant in keys
    ]


def versions(records: list[dict]) -> str:
    """The framework versions and machines a side's records name, for the comparison's heading."""
    found = sorted({f"{k} {v}" for r in records for k, v in r["environment"]["versions"].items()})
    hosts = sorted({f"{r['environment']['cpu_model']} ({r['environment']['gpu_name'] or 'no GPU'})" for r in records})
    return f"{'; '.join(hosts)}; {', '.join(found)}"
