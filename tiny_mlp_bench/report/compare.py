"""This study against an archived one, rung by rung: did a new torch, driver or machine make it faster?

Each side's runs are summarised as the report summarises them (median steady-state step over the
repeats, with its min-max). A rung's change is flagged only where the two sides' min-max ranges do
not overlap: inside the spread of the repeats a difference is noise. With a single run on either
side there is no spread to judge by, and the rung is not judged.

Beside the steps, each Keras rung's pause at the end of ``fit`` (the fit_end phase, from the last
epoch's end to ``fit`` returning, inside all epochs): Keras 2 at times pauses there for many seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.records import RecordError, read_record
from tiny_mlp_bench.report.runs import run_row, summarize

SIDES = ("this", "archive")
KERAS_FRAMEWORKS = frozenset(f.name for f in catalogue.FRAMEWORKS if f.keras is not None)


@dataclass(frozen=True)
class RungChange:
    """One rung as measured on both sides; ``ratio`` is this side's step over the archive's."""

    pair: str
    variant: str
    this: tuple[float, float, float, int] | None  # median, min, max step (s) and runs timed
    archive: tuple[float, float, float, int] | None

    @property
    def ratio(self) -> float | None:
        return self.this[0] / self.archive[0] if self.this and self.archive else None

    @property
    def verdict(self) -> str:
        if self.this is None or self.archive is None:
            return f"only in {'the archive' if self.this is None else 'this study'}"
        if min(self.this[3], self.archive[3]) < 2:
            return "not judged: one run, no spread"
        if self.this[2] < self.archive[1]:
            return "faster"
        if self.this[1] > self.archive[2]:
            return "slower"
        return "within the noise"


def read_runs(folder: Path) -> list[dict]:
    """Every run record in ``folder`` (a study's results/runs or an archive's runs/)."""
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise RecordError(f"{folder}: no run records (*.json) here")
    return [read_record(path) for path in paths]


def step_spread(records: list[dict]) -> dict[tuple[str, str], tuple[float, float, float, int]]:
    """Per (pair, variant): the median, min and max steady-state step over completed runs, and their count."""
    runs = pd.DataFrame([run_row(r, "") for r in records])
    summary = summarize(runs).dropna(subset=["step_s"])
    return {(s.pair, s.variant): (s.step_s, s.step_min_s, s.step_max_s, int(s.runs)) for s in summary.itertuples()}


def compare(this: list[dict], archive: list[dict]) -> list[RungChange]:
    """Every rung timed on either side, in this study's ladder order, then the archive's leftovers."""
    ours, theirs = step_spread(this), step_spread(archive)
    keys = list(ours) + [key for key in theirs if key not in ours]
    return [RungChange(pair, variant, ours.get((pair, variant)), theirs.get((pair, variant))) for pair, variant in keys]


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
