"""Compare this study's run records with an archived study's, rung by rung, in time to result and per step."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tiny_mlp_bench.atomic import write_text_atomic
from tiny_mlp_bench.records import RecordError
from tiny_mlp_bench.report.cells import duration, num, span, table
from tiny_mlp_bench.report.compare import (
    VIEWS,
    FitEndPause,
    NoiseBand,
    RungChange,
    compare,
    fit_end_pauses,
    noise_band,
    read_runs,
    versions,
)
from tiny_mlp_bench.report.inference import Interval, Ratio


def bounds(low, high, cell) -> str:
    """An interval's two ends; "unbounded" on a side too few runs bound."""
    return f"{'unbounded' if low is None else cell(low)}–{'unbounded' if high is None else cell(high)}"


def side_cells(side: Interval | None) -> list[str]:
    if side is None:
        return ["–", "0"]
    return [duration(side), str(side.runs)]


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


VIEW_NAMES = {"result": "time to result", "step": "per step"}


def rows(change: RungChange, band: NoiseBand | None) -> list[list[str]]:
    found = []
    for view in VIEWS:
        ours, theirs = change.this.get(view, ()), change.archive.get(view, ())
        if not ours and not theirs:
            continue
        sides = [*side_cells(change.side(ours)), *side_cells(change.side(theirs))]
        cells = [*sides, *ratio_cells(change.ratio(view)), change.verdict(view, band)]
        found.append([f"{change.pair} `{change.variant}`", VIEW_NAMES[view], *cells])
    return found


def band_line(band: NoiseBand | None) -> str:
    if band is None:
        return "No noise band has been measured (results/archive/noise-band.json): a resolved change is called."
    return (
        f"A resolved ratio inside the noise band, ×{band.ratio:.2f} either way, is not called a change: two "
        f"studies of the same code on one machine kind ({band.source}) were that far apart in a rung's ratio to "
        "the seed. A band from two studies says what those two differed by; more studies of the kind would widen it."
    )


def render(
    changes: list[RungChange],
    pauses: list[FitEndPause],
    this: list[dict],
    archive: list[dict],
    archive_dir: Path,
    band: NoiseBand | None,
) -> str:
    found = [row for c in changes for row in rows(c, band)]
    header = ["rung", "view", "this study", "runs", "archive", "runs", "this / archive, to seed", "95% interval", "p"]
    header += ["verdict"]
    return "\n".join(
        [
            f"# This study against {archive_dir}",
            "",
            f"- This study: {versions(this)}",
            f"- The archive: {versions(archive)}",
            "",
            "Each rung's time to result and time per step: the geometric mean of the runs, with a 95% t-interval "
            "on their logs. Absolute times belong to the day, so a rung is judged by its ratio to torch's original "
            "loop (`seed`) on its device in its own study: each run over the geometric mean of that study's torch "
            "seed runs, this study's against the archive's. The torch seed's own row shows its raw times' ratio, "
            "the day's difference, and is never judged. The ratio is Hodges–Lehmann's, with the 95% interval of the "
            "exact Mann–Whitney test inverted, and p is that test's. A change is called faster or slower only where "
            "the interval excludes 1 and p < 0.05; 3 runs against 3 cannot get there (their least p is 0.10). "
            + band_line(band),
            "",
            table(header, found, "llrrrrrrrl"),
            "",
            *pause_section(pauses),
        ]
    )


def main(argv=None, prog=None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", type=Path, help="the archived study's run records (its runs/ folder)")
    parser.add_argument("--this", type=Path, default=Path("results/runs"), help="this study's run records")
    parser.add_argument("--output", type=Path, help="Markdown file to write instead of stdout")
    parser.add_argument(
        "--write-noise-band",
        type=Path,
        metavar="PATH",
        help="take the two sides as studies of the same code and write the noise band they show to PATH",
    )
    args = parser.parse_args(argv)
    try:
        this, archive = read_runs(args.this), read_runs(args.archive)
    except RecordError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.write_noise_band:
        studies = tuple(study(folder, records) for folder, records in ((args.this, this), (args.archive, archive)))
        found = noise_band(compare(this, archive), studies)
        write_text_atomic(args.write_noise_band, json.dumps(found, indent=1, ensure_ascii=False) + "\n")
        print(f"{args.write_noise_band}: a noise band of ×{found['band']:.2f}")
        return 0
    band = NoiseBand.read()
    text = render(compare(this, archive), fit_end_pauses(this, archive), this, archive, args.archive, band)
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def study(runs: Path, records: list[dict]) -> dict:
    """Where a side of a noise band comes from: its folder's name and the commits its records ran at."""
    folder = runs.resolve().parent if runs.name == "runs" else runs.resolve()
    commits = sorted({str(r["environment"].get("git_commit")) for r in records})
    return {"name": folder.name, "commits": commits}
