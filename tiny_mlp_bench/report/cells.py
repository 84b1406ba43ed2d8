"""How the report writes a number or a range into a cell or a sentence, and lays out a Markdown table."""

from __future__ import annotations

import math

import pandas as pd

from tiny_mlp_bench.report.inference import Interval, Ratio

UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def num(value, digits: int = 2, style: str = "f") -> str:
    """A number for a table cell or sentence (style "f" fixed, "e" scientific); a dash where there is none."""
    if value is None or pd.isna(value):
        return "–"
    return f"{value:.{digits}{style}}"


def us(seconds, digits: int = 1) -> str:
    return num(None if seconds is None else seconds * 1e6, digits)


def pct(value, digits: int = 1) -> str:
    found = num(None if value is None else value * 100, digits)
    return found if found == "–" else f"{found}%"


def span(low, high, digits: int) -> str:
    """A reading's range over the runs, one number when it did not move; a dash where none was read."""
    return num(low, digits) if num(low, digits) == num(high, digits) else f"{num(low, digits)}–{num(high, digits)}"


def table(header: list[str], rows: list[list[str]], align: str) -> str:
    """A Markdown table of text cells; ``align`` has one letter per column, l(eft) or r(ight)."""
    cells = pd.DataFrame(rows, columns=header).map(lambda c: str(c).replace("|", "\\|").replace("\n", " "))
    colalign = [{"l": "left", "r": "right"}[a] for a in align]
    return cells.to_markdown(index=False, disable_numparse=True, colalign=colalign)


def decimals(estimate: float, low: float | None = None, high: float | None = None) -> int:
    """Decimals for ``estimate`` and its interval: what the half-width supports, within 2-3 significant figures."""
    magnitude = math.floor(math.log10(abs(estimate))) if estimate else 0
    most, least = 2 - magnitude, 1 - magnitude  # three and two significant figures
    if low is None or high is None or high <= low:
        return max(most, 0)
    supported = -math.floor(math.log10((high - low) / 2))
    return max(min(supported, most), least, 0)


def figures(value: float, places: int) -> str:
    return f"{value:,.{places}f}"


def unit_for(seconds: float) -> tuple[float, str]:
    """The scale and name of the unit that writes ``seconds`` as at least 1."""
    return next(((scale, name) for scale, name in UNITS if seconds >= scale), UNITS[-1])


def interval_places(estimate: float, low: float | None, high: float | None) -> int:
    """The decimals an estimate over runs is written to: what its interval supports."""
    if low is None or high is None:  # an open interval supports two figures at most
        return decimals(estimate, estimate, estimate * 10)
    return decimals(estimate, low, high)


def with_interval(
    estimate: float, low: float | None, high: float | None, runs: int, suffix: str = "", side_of: float | None = None
) -> str:
    """``estimate`` and its interval to the digits it supports; "1 run" if measured once, a side open if unbounded.
    ``side_of``: a value (1 for a ratio) whose side each bound lies on must show: a bound gets the digits it needs not
    to read as that value ("0.9997", never "1.00")."""
    if runs == 1:
        return f"{figures(estimate, decimals(estimate))}{suffix} (1 run)"
    places = interval_places(estimate, low, high)

    def bound(value: float) -> str:
        digits = places
        while side_of is not None and value != side_of and figures(value, digits) == figures(side_of, digits):
            digits += 1
        return figures(value, digits)

    text = f"{figures(estimate, places)}{suffix}"
    if low is None and high is None:
        return f"{text} (unbounded)"
    if low is None:
        return f"{text} (up to {bound(high)})"
    if high is None:
        return f"{text} (from {bound(low)})"
    return f"{text} ({bound(low)}–{bound(high)})"


# From a minute on a single time reads as minutes and seconds: "18 min 32 s", not "1,112 s".
MINUTES_FROM_S = 60.0


def duration(found: Interval | float | None, approximate: bool = False) -> str:
    """The one way a time is written, in its own unit: over runs with its interval, as "9.2 s (8.7-11.5)" is written
    with an en dash; a single time (measured once, a median) alone, "4.4 s", or from a minute on "18 min 32 s";
    ``approximate``, an estimate, to two figures or the minute: "27 s", "4 min"; a dash for none."""
    if found is None or (not isinstance(found, Interval) and pd.isna(found)):
        return "–"
    if isinstance(found, Interval):
        scale, name = unit_for(found.estimate)
        low, high = (None if v is None else v / scale for v in (found.low, found.high))
        return with_interval(found.estimate / scale, low, high, found.runs, f" {name}")
    if found >= MINUTES_FROM_S:
        if approximate:
            return f"{round(found / 60)} min"
        minutes, rest = divmod(round(found), 60)
        return f"{minutes} min {rest} s"
    scale, name = unit_for(found) if found > 0 else UNITS[0]  # nothing left is "0 s", not "0 ns"
    value = found / scale
    return f"{approx(value) if approximate else figures(value, decimals(value))} {name}"


def spread(values: list[float]) -> str:
    """Times measured several times (over runs, or studies) as their range; one time where there is one."""
    low, high = duration(min(values)), duration(max(values))
    return low if low == high else f"{low} to {high}"


def times(found: Ratio | None) -> str:
    """A ratio over runs, with its interval: as "2.1x (1.6-2.4)" is written with the times sign."""
    if found is None:
        return "–"
    return with_interval(found.estimate, found.low, found.high, min(found.runs), "×", side_of=1.0)


def n_runs(n: int, what: str = "run") -> str:
    """A count of runs in words: "1 run", "5 runs", "1 cpu run"."""
    return f"{n} {what}{'' if n == 1 else 's'}"


def approx(value: float | None, significant: int = 2) -> str:
    """A number with no interval of its own, to ``significant`` figures: "7,200"."""
    if value is None or pd.isna(value):
        return "–"
    if value == 0:
        return "0"
    places = significant - 1 - math.floor(math.log10(abs(value)))
    if isinstance(value, int):  # a count: no decimals
        places = min(places, 0)
    return figures(round(value, places), max(places, 0))
