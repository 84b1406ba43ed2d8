"""This study against an archived one, rung by rung: did a new torch, driver or machine make it faster?

Absolute times belong to the day: two studies of the same code on one machine kind can differ twofold in every
rung, while each rung's ratio to torch's original loop agrees far closer. So a change is judged by each rung's runs
over its own study's torch seed (their geometric mean, on the rung's device), this study's against the archive's."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.catalogue import pair_name
from tiny_mlp_bench.question import TORCH, askers_rung
from tiny_mlp_bench.records import RecordError
from tiny_mlp_bench.report import study
from tiny_mlp_bench.report.inference import Interval, Ratio, ratio, rung_interval
from tiny_mlp_bench.report.runs import run_row, summarize

KERAS_FRAMEWORKS = frozenset(f.name for f in catalogue.FRAMEWORKS if f.keras is not None)


NOISE_BAND = Path(__file__).resolve().parents[2] / "results" / "archive" / "noise-band.json"
VIEWS = ("result", "step")


@dataclass(frozen=True)
class NoiseBand:
    """The largest ratio (above 1) that two studies of the same code showed, and where it was measured."""

    ratio: float
    source: str

    @classmethod
    def read(cls, path: Path = NOISE_BAND) -> NoiseBand | None:
        """The band written at ``path``; None where none was measured."""
        if not path.is_file():
            return None
        found = json.loads(path.read_text())
        return cls(float(found["band"]), f"{found['studies'][0]['name']} and {found['studies'][1]['name']}")


@dataclass(frozen=True)
class RungChange:
    """One rung on both sides: each side's run times per view (``result``, ``step``), in s, empty where absent;
    and each side's yardstick per view, the geometric mean of its own torch seed runs on the rung's device."""

    pair: str
    variant: str
    this: dict[str, tuple[float, ...]]
    archive: dict[str, tuple[float, ...]]
    this_yardstick: dict[str, float] = field(default_factory=dict)
    archive_yardstick: dict[str, float] = field(default_factory=dict)

    @property
    def is_yardstick(self) -> bool:
        return (self.pair, self.variant) == yardstick_of(self.pair)

    def side(self, values: tuple[float, ...]) -> Interval | None:
        return rung_interval(values) if values else None

    def relative(self, view: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Each side's runs over its own study's yardstick: what a change is judged by (empty where a side lacks
        the rung or the yardstick)."""
        sides = ((self.this, self.this_yardstick), (self.archive, self.archive_yardstick))
        ours, theirs = (
            tuple(v / yardstick[view] for v in runs.get(view, ())) if view in yardstick else ()
            for runs, yardstick in sides
        )
        return ours, theirs

    def ratio(self, view: str) -> Ratio | None:
        """This side's ratio to its torch seed over the archive's, with its interval and the exact test; for the
        torch seed itself, its raw times' ratio, shown but never judged."""
        ours, theirs = (
            (self.this.get(view, ()), self.archive.get(view, ())) if self.is_yardstick else self.relative(view)
        )
        return ratio(ours, theirs) if ours and theirs else None

    def verdict(self, view: str, band: NoiseBand | None) -> str:
        ours, theirs = self.this.get(view, ()), self.archive.get(view, ())
        if not ours or not theirs:
            return f"only in {'the archive' if not ours else 'this study'}"
        if self.is_yardstick:
            return "the yardstick: raw times, never judged"
        if not all(self.relative(view)):
            return f"no torch seed on {self.pair.split('-')[-1]} on both sides to judge by"
        found = self.ratio(view)
        if not found.resolved:
            return f"not resolved by {len(ours)} and {len(theirs)} runs"
        if band is not None and 1 / band.ratio <= found.estimate <= band.ratio:
            return f"within the noise band (×{band.ratio:.2f})"
        return "faster" if found.estimate < 1 else "slower"


def yardstick_of(pair: str) -> tuple[str, str]:
    """The rung every rung on ``pair``'s device is judged against: torch's original loop there."""
    return pair_name(TORCH, pair.split("-")[-1]), askers_rung(TORCH)


def read_runs(folder: Path) -> tuple[dict, ...]:
    """The run records in ``folder`` (a study's runs/), refused where it holds none."""
    if not (found := study.read_runs(folder, "*.json")):
        raise RecordError(f"{folder}: no run records (*.json) here")
    return found


def values_per_rung(records: list[dict]) -> dict[tuple[str, str], dict[str, tuple[float, ...]]]:
    """Per (pair, variant) in ladder order: its runs' times to result (as the report's) and per-step times."""
    summary = summarize(pd.DataFrame([run_row(r, "") for r in records]))
    found = {}
    for s in summary.itertuples():
        views = {view: getattr(s, f"{view}_values") for view in VIEWS}
        views = {view: tuple(v) for view, v in views.items() if isinstance(v, tuple) and v}
        if views:
            found[s.pair, s.variant] = views
    return found


def yardsticks(found: dict[tuple[str, str], dict[str, tuple[float, ...]]], pair: str) -> dict[str, float]:
    """The geometric mean of the study's torch seed runs on ``pair``'s device, per view it timed."""
    runs = found.get(yardstick_of(pair), {})
    return {view: float(np.exp(np.mean(np.log(values)))) for view, values in runs.items()}


def compare(this: list[dict], archive: list[dict]) -> list[RungChange]:
    """Every rung timed on either side, in this study's ladder order, then the archive's leftovers."""
    ours, theirs = values_per_rung(this), values_per_rung(archive)
    keys = list(ours) + [key for key in theirs if key not in ours]
    return [
        RungChange(
            pair,
            variant,
            ours.get((pair, variant), {}),
            theirs.get((pair, variant), {}),
            yardsticks(ours, pair),
            yardsticks(theirs, pair),
        )
        for pair, variant in keys
    ]


def noise_band(changes: list[RungChange], names: tuple[dict, dict]) -> dict:
    """Two same-code studies' noise band: their largest change in a rung's ratio to its torch seed (made above 1),
    the yardstick and compiled rungs (cache timed) left out."""
    ratios = {}
    for change in changes:
        listed = registry.rung(change.pair.split("-")[0], change.variant)
        if listed.compiles or change.is_yardstick:
            continue
        for view in VIEWS:
            if found := change.ratio(view):
                ratios[f"{change.pair} `{change.variant}` {view}"] = round(found.estimate, 4)
    band = max((max(r, 1 / r) for r in ratios.values()), default=1.0)
    return {"band": round(band, 4), "studies": list(names), "ratios": ratios}


@dataclass(frozen=True)
class FitEndPause:
    """One Keras rung's fit_end (median, min, max s) per side; None where absent or recorded before fit_end was."""

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
