#!/usr/bin/env python3
"""Compare this study's run records with an archived study's, rung by rung, per step.

For every rung timed on either side: each side's geometric mean over its runs with a 95% interval,
the ratio of this study's step to the archive's with its 95% interval and the exact Mann-Whitney
p-value, and a verdict that says "faster" or "slower" only where the interval excludes 1 and the test
passes at 5% (tiny_mlp_bench/report/compare.py). Then, for every Keras rung, its pause at the end of
fit (the fit_end phase) on both sides. Writes Markdown to stdout, or to --output.

Usage: python scripts/compare_runs.py results/archive/2026-11-30-cpu-2core/runs [--this results/runs]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tiny_mlp_bench.atomic import write_text_atomic
from tiny_mlp_bench.records import RecordError
from tiny_mlp_bench.report.cells import num, span, table, us
from tiny_mlp_bench.report.compare import FitEndPause, RungChange, compare, fit_end_pauses, read_runs, versions
from tiny_mlp_bench.report.inference import Interval, Ratio


def bounds(low, high, cell) -> str:
    """An interval's two ends; "unbounded" on a side too few runs bound."""
    return f"{'unbounded' if low is None else cell(low)}–{'unbounded' if high is None else cell(high)}"


def side_cells(side: Interval | None) -> list[str]:
    if side is None:
        return ["–", "–", "0"]
    interval = "–" if side.runs < 2 else bounds(side.low, side.high, us)
    return [us(side.estimate), interval, str(side.runs)]


def ratio_cells(found: Ratio | None) -> list[str]:
    if found is None:
        return ["–", "–", "–"]
    return [num(found.estimate), bounds(found.low, found.high, num), num(found.p_value, 3)]


def pause_cells(side: tuple[float, float, float] | None) -> list[str]:
    if side is None:
        return ["–", "–"]
    median, low, high = side
    return [num(median, 3), span(low, high, 3)]


def pause_section(pauses: list[FitEndPause]) -> list[str]:
    """The Keras rungs' fit_end phase, this study's and the archive's; nothing where neither ran Keras."""
    if not pauses:
        return []
    rows = [[f"{p.pair} `{p.variant}`", *pause_cells(p.this), *pause_cells(p.archive)] for p in pauses]
    header = ["Keras rung", "this fit_end (s)", "min–max", "archive fit_end (s)", "min–max"]
    return [
        "## Keras's pause at the end of fit",
        "",
        "Seconds from the last epoch's end to `fit` returning (the `fit_end` phase, part of all epochs and of "
        "the timing point), the median over repeats. Keras 2 at times pauses there for many seconds. A dash marks "
        "a side without the rung, or whose records are from before the pause was timed.",
        "",
        table(header, rows, "lrrrr"),
        "",
    ]


def row(change: RungChange) -> list[str]:
    sides = [*side_cells(change.side(change.this)), *side_cells(change.side(change.archive))]
    return [f"{change.pair} `{change.variant}`", *sides, *ratio_cells(change.ratio), change.verdict]


def render(
    changes: list[RungChange], pauses: list[FitEndPause], this: list[dict], archive: list[dict], archive_dir: Path
) -> str:
    rows = [row(c) for c in changes]
    header = ["rung", "this µs / step", "95% interval", "runs", "archive µs / step", "95% interval", "runs"]
    header += ["this / archive", "95% interval", "p", "verdict"]
    return "\n".join(
        [
            f"# This study against {archive_dir}",
            "",
            f"- This study: {versions(this)}",
            f"- The archive: {versions(archive)}",
            "",
            "Steady-state µs per optimiser step: the geometric mean of the runs, with a 95% t-interval on their "
            "logs. The ratio is Hodges–Lehmann's, with the 95% interval of the exact Mann–Whitney test inverted, "
            "and p is that test's. A change is called faster or slower only where the interval excludes 1 and "
            "p < 0.05; 3 runs against 3 cannot get there (their least p is 0.10).",
            "",
            table(header, rows, "lrrrrrrrrrl"),
            "",
            *pause_section(pauses),
        ]
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", type=Path, help="the archived study's run records (its runs/ folder)")
    parser.add_argument("--this", type=Path, default=Path("results/runs"), help="this study's run records")
    parser.add_argument("--output", type=Path, help="Markdown file to write instead of stdout")
    args = parser.parse_args(argv)
    try:
        this, archive = read_runs(args.this), read_runs(args.archive)
    except RecordError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    text = render(compare(this, archive), fit_end_pauses(this, archive), this, archive, args.archive)
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
