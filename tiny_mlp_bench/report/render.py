"""Turn run, sweep and probe records into a tidy timings table, three charts, a Markdown report
and the report's numbers as JSON."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tiny_mlp_bench.atomic import atomic_path, write_text_atomic
from tiny_mlp_bench.records import RecordError, read_probe, read_record, read_sweep
from tiny_mlp_bench.report import busy_archive
from tiny_mlp_bench.report.gpu_archive import QUALIFIES, quote
from tiny_mlp_bench.report.html import report_page
from tiny_mlp_bench.report.markdown import render_markdown
from tiny_mlp_bench.report.model import build_report
from tiny_mlp_bench.report.numbers_file import numbers_json
from tiny_mlp_bench.report.plots import plot_crossover, plot_ladders, plot_releases, plot_seed_times, plot_step_parts
from tiny_mlp_bench.report.views import headline_frame


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


def parse_args(argv=None, prog=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path, help="run record files (.json)")
    parser.add_argument("--report", type=Path, required=True, help="Markdown report to write")
    parser.add_argument("--timings", type=Path, required=True, help="tidy Parquet table to write")
    parser.add_argument("--headline", type=Path, help="CSV file to write: the first screen's table, as numbers")
    parser.add_argument(
        "--plot", type=Path, required=True, help="PNG chart of the original loops' times to result to write"
    )
    parser.add_argument(
        "--ladder-plot", type=Path, help="PNG chart of the ladders to write; default: ladder.png beside --plot"
    )
    parser.add_argument("--sweeps", type=Path, nargs="*", default=[], help="sweep record files (.json)")
    parser.add_argument("--probes", type=Path, nargs="*", default=[], help="fixed-cost probe records (.json)")
    parser.add_argument(
        "--breakdown-plot",
        type=Path,
        help="PNG chart of the torch step's parts to write; default: breakdown.png beside --plot",
    )
    parser.add_argument("--crossover-plot", type=Path, help="PNG crossover chart to write (with --sweeps)")
    parser.add_argument("--numbers", type=Path, help="JSON file to write: the report's numbers and the versions here")
    parser.add_argument("--html", type=Path, help="HTML file to write: the report as one page, its charts inside")
    quoted = parser.add_mutually_exclusive_group()
    quoted.add_argument(
        "--gpu-archive",
        type=Path,
        help="an archived study's folder whose GPU answer to quote where no run here used cuda",
    )
    quoted.add_argument(
        "--no-archive-qualifies", action="store_true", help="say that no archived study had a GPU answer to quote"
    )
    parser.add_argument(
        "--busy-archives",
        type=Path,
        nargs="*",
        help="archived busy-core studies' folders, of which the first screen quotes the newest of each machine kind "
        "here; given without folders, it says that none was of this machine kind",
    )
    args = parser.parse_args(argv)
    if args.sweeps and not args.crossover_plot:
        parser.error("--sweeps needs --crossover-plot")
    args.ladder_plot = args.ladder_plot or args.plot.with_name("ladder.png")
    args.breakdown_plot = args.breakdown_plot or args.plot.with_name("breakdown.png")
    charts = [args.plot, args.ladder_plot, args.breakdown_plot, args.crossover_plot]
    for option, path in (("--ladder-plot", args.ladder_plot), ("--breakdown-plot", args.breakdown_plot)):
        if charts.count(path) > 1:
            parser.error(f"{option} {path} is also another chart's path")
    return args


def main(argv=None, prog=None) -> int:
    args = parse_args(argv, prog)
    try:
        records = load_records(args.records)
        sweeps = [read_sweep(path) for path in args.sweeps]
        probes = [read_probe(path) for path in args.probes]
        archived = quote(args.gpu_archive) if args.gpu_archive else None
        if args.gpu_archive and archived is None:
            raise RecordError(f"{args.gpu_archive}: --gpu-archive names an archive that does not hold {QUALIFIES}")
        busy_archives = None if args.busy_archives is None else tuple(map(busy_archive.quote, args.busy_archives))
        if busy_archives and None in busy_archives:
            folder = args.busy_archives[busy_archives.index(None)]
            raise RecordError(f"{folder}: --busy-archives names an archive that does not hold {busy_archive.QUALIFIES}")
    except RecordError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    report = build_report(
        records,
        sweeps,
        probes,
        archived_gpu=archived,
        no_archive_qualifies=args.no_archive_qualifies,
        busy_archives=busy_archives,
    )

    def link(path: Path) -> str:
        return Path(os.path.relpath(path, args.report.parent)).as_posix()

    with atomic_path(args.timings) as tmp:
        report.runs.to_parquet(tmp, index=False)
    if args.headline:
        with atomic_path(args.headline) as tmp:
            headline_frame(report.machines).to_csv(tmp, index=False)
    if report.release_sweep:  # a release sweep's chart of its original loop is over its releases
        plot_releases(report.release_sweep, args.plot)
    else:
        plot_seed_times(report.machines, args.plot)
    plot_ladders(report.machines, args.ladder_plot, report.parameters)
    plot_step_parts(report.machines, args.breakdown_plot)
    crossover_link = ""
    if sweeps:
        plot_crossover(report.sweep_points, args.crossover_plot, report.parameters)
        crossover_link = link(args.crossover_plot)
    text = render_markdown(
        report,
        link(args.plot),
        crossover_link,
        ladder_link=link(args.ladder_plot),
        breakdown_link=link(args.breakdown_plot),
    )
    write_text_atomic(args.report, text)
    if args.html:
        write_text_atomic(args.html, report_page(text, args.report.parent))
    if args.numbers:
        write_text_atomic(args.numbers, numbers_json(report))
    tables = f"{args.timings}" + (f", {args.headline}" if args.headline else "")
    charts = f"{args.plot}, {args.ladder_plot}, {args.breakdown_plot}" + (f", {args.crossover_plot}" if sweeps else "")
    print(f"wrote {args.report}, {tables} and {charts} from {len(records)} records", file=sys.stderr)
    return 0
