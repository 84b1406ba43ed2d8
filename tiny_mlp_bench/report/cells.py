"""How the report writes a number or a range into a table cell or a sentence, and how it lays out a
Markdown table of such cells (tabulate, through ``DataFrame.to_markdown``).
"""

from __future__ import annotations

import pandas as pd


def num(value, digits: int = 2, style: str = "f") -> str:
    """A number for a table cell or sentence (style "f" fixed, "e" scientific); a dash where there is none."""
    if value is None or pd.isna(value):
        return "–"
    return f"{value:.{digits}{style}}"


def us(seconds, digits: int = 1) -> str:
    """Seconds as microseconds."""
    return num(None if seconds is None else seconds * 1e6, digits)


def pct(value, digits: int = 1) -> str:
    return num(None if value is None else value * 100, digits) + "%"


def span(low, high, digits: int) -> str:
    """A reading's range over the runs, one number when it did not move; a dash where none was read."""
    return num(low, digits) if num(low, digits) == num(high, digits) else f"{num(low, digits)}–{num(high, digits)}"


def table(header: list[str], rows: list[list[str]], align: str) -> str:
    """A Markdown table of text cells; ``align`` has one letter per column, l(eft) or r(ight)."""
    cells = pd.DataFrame(rows, columns=header).map(lambda c: str(c).replace("|", "\\|").replace("\n", " "))
    colalign = [{"l": "left", "r": "right"}[a] for a in align]
    return cells.to_markdown(index=False, disable_numparse=True, colalign=colalign)
