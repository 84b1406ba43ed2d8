#!/usr/bin/env python3
"""Compare this study's run records with an archived study's, rung by rung, per step.

For every rung timed on either side: both medians with their min-max over repeats, the ratio of
this study's step to the archive's, and a verdict that says "faster" or "slower" only where the two
min-max ranges do not overlap (tiny_mlp_bench/report/compare.py). Writes Markdown to stdout, or to
--output.

Usage: python scripts/compare_runs.py results/archive/2026-11-30-cpu-2core/runs [--this results/runs]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tiny_mlp_bench package beside scripts/

from tiny_mlp_bench.atomic import write_text_atomic
from tiny_mlp_bench.records import RecordError
from tiny_mlp_bench.report.cells import num, table, us
from tiny_mlp_bench.report.compare import RungChange, compare, read_runs, versions


def spread(side: tuple[float, float, float, int] | None) -> list[str]:
    if side is None:
        return ["–", "–", "0"]
    median, low, high, runs = side
    return [us(median), f"{us(low)}–{us(high)}", str(runs)]


def render(changes: list[RungChange], this: list[dict], archive: list[dict], archive_dir: Path) -> str:
    rows = [[f"{c.pair} `{c.variant}`", *spread(c.this), *spread(c.archive), num(c.ratio), c.verdict] for c in changes]
    header = ["rung", "this µs / step", "min–max", "runs", "archive µs / step", "min–max", "runs"]
    header += ["this / archive", "verdict"]
    return "\n".join(
        [
            f"# This study against {archive_dir}",
            "",
            f"- This study: {versions(this)}",
            f"- The archive: {versions(archive)}",
            "",
            "Steady-state µs per optimiser step, the median over repeats. A change is called faster or slower only "
            "where the two min–max ranges do not overlap; with one run on a side there is no spread to judge by.",
            "",
            table(header, rows, "lrrrrrrrl"),
            "",
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
    text = render(compare(this, archive), this, archive, args.archive)
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
