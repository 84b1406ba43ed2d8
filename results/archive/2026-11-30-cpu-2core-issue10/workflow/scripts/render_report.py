#!/usr/bin/env python3
"""Turn run and sweep records into a tidy timings table, two charts and a Markdown report.

The report is a pure function of the records: the same records, in any order, give the same bytes.
The numbers are computed once (tiny_mlp_bench/report/model.py, with ladder.py and crossover_map.py);
the table, the charts and the Markdown only render them.

Usage: python scripts/render_report.py --report results/report.md --timings results/timings.parquet \
           --plot results/report/timings.png --crossover-plot results/report/crossover.png \
           --sweeps results/sweep/*.json -- results/runs/*.json
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tiny_mlp_bench package beside scripts/

from tiny_mlp_bench.atomic import atomic_path, write_text_atomic
from tiny_mlp_bench.records import RecordError, read_record, read_sweep
from tiny_mlp_bench.report.markdown import render_markdown
from tiny_mlp_bench.report.model import build_report
from tiny_mlp_bench.report.plots import plot_crossover, plot_seed_times


def load_records(paths: list[Path]) -> list[dict]:
    """Read every record; refuse duplicates, which would be counted twice."""
    records, seen = [], {}
    for path in paths:
        record = read_record(path)
        rid = record["identity"]["run_id"]
        if rid in seen:
            raise RecordError(f"{path}: run {rid} is also in {seen[rid]}")
        seen[rid] = path
        records.append(record)
    return records


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path, help="run record files (.json)")
    parser.add_argument("--report", type=Path, required=True, help="Markdown report to write")
    parser.add_argument("--timings", type=Path, required=True, help="tidy Parquet table to write")
    parser.add_argument("--plot", type=Path, required=True, help="PNG bar chart to write")
    parser.add_argument("--sweeps", type=Path, nargs="*", default=[], help="sweep record files (.json)")
    parser.add_argument("--crossover-plot", type=Path, help="PNG crossover chart to write (with --sweeps)")
    args = parser.parse_args(argv)
    if args.sweeps and not args.crossover_plot:
        parser.error("--sweeps needs --crossover-plot")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        records = load_records(args.records)
        sweeps = [read_sweep(path) for path in args.sweeps]
    except RecordError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    report = build_report(records, sweeps)

    def link(path: Path) -> str:
        return Path(os.path.relpath(path, args.report.parent)).as_posix()

    with atomic_path(args.timings) as tmp:
        report.runs.to_parquet(tmp, index=False)
    plot_seed_times(report.machines, args.plot)
    crossover_link = ""
    if sweeps:
        plot_crossover(report.sweep_points, args.crossover_plot)
        crossover_link = link(args.crossover_plot)
    write_text_atomic(args.report, render_markdown(report, link(args.plot), crossover_link))
    print(f"wrote {args.report}, {args.timings} and {args.plot} from {len(records)} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
