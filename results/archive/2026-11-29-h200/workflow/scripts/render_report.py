"""Turn run and sweep records into a tidy timings table, two charts and a Markdown report.

The report is a pure function of the records: the same records give the same bytes. Every
sentence that states a result is built from the numbers (report_data.py); the only fixed text
describes the method and what each variant changes.

Usage: python scripts/render_report.py --report results/report.md --timings results/timings.parquet \
           --plot results/report/timings.png --crossover-plot results/report/crossover.png \
           --sweeps results/sweep/*.json -- results/runs/*.json
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

from atomic import atomic_path, write_text_atomic
from report_data import (
    ASKER_SECONDS,
    CV_WARNING,
    RATIOS,
    crossovers,
    flops_per_step,
    ladders,
    records_to_frame,
    summarize,
    sweep_frame,
    targets,
    us,
)
from report_plots import plot_crossover, plot_steps
from run_record import RecordError, read_record, read_sweep

# Differences between frameworks that no variant removes; the report lists them beside the ladder.
KNOWN_DIFFERENCES = [
    "Keras Adam uses epsilon 1e-7, torch and the NumPy reference 1e-8.",
    "Keras `fit` shuffles the rows itself each epoch; torch variants draw their own permutation.",
    "Keras initialises with Glorot-uniform weights and zero biases; torch and NumPy use "
    "uniform ±1/√fan_in for both, from different random streams.",
    "Keras 3 on TensorFlow compiles `fit` with XLA by default only when a GPU is visible "
    "(`jit_compile` in each record's variant details says what a run used).",
]


def fmt(value, digits: int = 2, style: str = "f") -> str:
    """A number for a table cell (style "f" fixed, "e" scientific); a dash where there is none."""
    if value is None or pd.isna(value):
        return "–"
    return f"{value:.{digits}{style}}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def quality_section(summary: pd.DataFrame) -> str:
    rows = [
        [f"{s.step} ({s.variant})", fmt(s.test_mse, 2, "e"), fmt(s.train_r2, 4), f"{int(s.converged)}/{s.runs}"]
        for s in summary.itertuples(index=False)
    ]
    return (
        "## Quality\n\nMSE in scaled units, medians over completed runs. A run converged when its "
        "train R² reached the configured minimum; a dead final ReLU predicts 0 everywhere.\n\n"
        + table(["step (variant)", "test MSE", "train R²", "converged"], rows)
    )


def environment_section(records: list[dict]) -> str:
    """One block per host, so results from different machines are never mixed up."""
    by_host: dict[str, list[dict]] = {}
    for r in records:
        by_host.setdefault(r["environment"]["host"], []).append(r["environment"])

    def values(envs, get) -> str:
        found = sorted({str(get(e)) for e in envs})
        return ", ".join(found)

    parts = ["## Environment"]
    for host in sorted(by_host):
        envs = by_host[host]
        versions = sorted({f"{k} {v}" for e in envs for k, v in e["versions"].items()})
        cuda = sorted({f"{k} {v}" for e in envs for k, v in e["cuda"].items() if v})
        threads = sorted({f"{k}={v}" for e in envs for k, v in e["threads"].items()})
        rows = [
            ["CPU", values(envs, lambda e: f"{e['cpu_model']} ({e['logical_cpus']} logical CPUs)")],
            ["GPU", values(envs, lambda e: e["gpu_name"] or "none")],
            ["Python", values(envs, lambda e: e["python"])],
            ["packages", ", ".join(versions)],
            ["CUDA (framework build; driver)", ", ".join(cuda) or "none"],
            ["framework threads", ", ".join(threads)],
            [
                "thread variables",
                values(envs, lambda e: " ".join(f"{k}={v}" for k, v in e["thread_env"].items()) or "none"),
            ],
            ["container", values(envs, lambda e: e["container"] or "none (host)")],
            ["Slurm job", values(envs, lambda e: e["slurm_job_id"] or "none")],
            ["git commit", values(envs, lambda e: e["git_commit"] or "unknown")],
            ["dataset sha256", values(envs, lambda e: e["dataset_sha256"])],
        ]
        parts.append(f"### Host `{host}` ({len(envs)} runs)\n\n" + table(["", ""], rows))
    return "\n\n".join(parts)


def attention_section(frame: pd.DataFrame) -> str:
    rows = []
    for r in frame.itertuples(index=False):
        if r.status != "ok":
            rows.append([r.run_id, r.status, r.reason or ""])
        elif not r.converged:
            rows.append([r.run_id, "not converged", f"train R² {fmt(r.train_r2, 4)}"])
    body = table(["run", "status", "reason"], rows) if rows else "None: every run completed and converged."
    failed = frame[frame["status"] == "failed"]["run_id"]
    if len(failed):
        targets = " ".join(f"results/runs/{run_id}.json" for run_id in failed)
        body += f"\n\nTo rerun only the failed runs (and this report): `snakemake --forcerun {targets}`"
    return "## Runs to look at\n\nSkipped, failed and non-converged runs.\n\n" + body


def seed_medians(summary: pd.DataFrame) -> dict:
    """The seed variant's summary row for each question step that has one."""
    seed = summary[(summary["variant"] == "seed") & summary["step"].isin(list(ASKER_SECONDS))]
    return {row.step: row for row in seed.itertuples(index=False)}


def headline_section(frame: pd.DataFrame, summary: pd.DataFrame, plot_link: str) -> str:
    ours = seed_medians(summary)
    rows = []
    for step in ASKER_SECONDS:
        runs = frame[(frame["step"] == step) & (frame["variant"] == "seed")]
        if runs.empty:
            continue
        asker = fmt(ASKER_SECONDS[step], 0)
        if step in ours:
            s = ours[step]
            timed, converged = f"{s.runs}/{len(runs)}", f"{int(s.converged)}/{s.runs}"
            rows.append([step, asker, fmt(s.median_s), f"{fmt(s.min_s)}–{fmt(s.max_s)}", timed, converged])
        else:
            statuses = ", ".join(sorted(set(runs["status"])))
            rows.append([step, asker, statuses, "–", f"0/{len(runs)}", "–"])
    text = table(["step", "asker (s)", "ours, median (s)", "ours, min–max (s)", "runs timed", "converged"], rows)

    ratio_rows = []
    for num, den in RATIOS:
        ours_ratio = ours[num].median_s / ours[den].median_s if num in ours and den in ours else None
        ratio_rows.append([f"{num} / {den}", fmt(ASKER_SECONDS[num] / ASKER_SECONDS[den]), fmt(ours_ratio)])
    ratios = table(["ratio of wall times", "asker", "ours"], ratio_rows)
    return (
        "## The question's table\n\n"
        "Wall time from the start of the fit function (model build and device set-up included) "
        "to the end of one batch of test predictions, as the asker timed it, for the asker's own "
        "loops (variant `seed`). Imports and data creation are outside it. The question does not "
        "say which device Keras used, so its 9 s stands beside both Keras rows.\n\n"
        f"{text}\n\n{ratios}\n\n"
        "Runs that did not converge are timed like the others (their computation is the same) "
        "and are listed under *Runs to look at*.\n\n"
        f"![median wall time per step, with min–max over repeats, beside the asker's]({plot_link})"
    )


def findings_section(summary: pd.DataFrame, ladder: dict, found_crossovers: list, sweep_notes: list[str]) -> str:
    """Sentences derived from the medians; nothing here is written by hand."""
    ours = seed_medians(summary)
    lines = []
    for num, den in RATIOS:
        if num in ours and den in ours:
            a, b = ours[num].median_s, ours[den].median_s
            verdict = "slower than" if a > b else "faster than"
            lines.append(f"- {num} took {fmt(a)} s, {max(a, b) / min(a, b):.2f}× {verdict} {den} ({fmt(b)} s).")
        else:
            missing = " and ".join(s for s in (num, den) if s not in ours)
            lines.append(f"- {num} vs {den}: not compared, no completed {missing} run.")
    for step, rungs in ladder.items():
        if len(rungs) < 2 or rungs[0].variant != "seed":
            continue
        fastest = min(rungs, key=lambda r: r.step_s)
        biggest = max(rungs[1:], key=lambda r: r.vs_previous)
        line = (
            f"- {step}: from {us(rungs[0].step_s)} µs per step (seed) to {us(fastest.step_s)} µs "
            f"({fastest.variant}), {fastest.vs_seed:.2f}× faster; the largest single rung was "
            f"{biggest.variant} ({biggest.vs_previous:.2f}×: {biggest.removes})."
        )
        slower = [r.variant for r in rungs[1:] if r.vs_previous < 1]
        if slower:
            line += f" Slower than the rung before: {', '.join(slower)}."
        lines.append(line)
    noisy = [
        f"{step} {r.variant} (CV {r.cv:.1%})" for step, rungs in ladder.items() for r in rungs if r.cv > CV_WARNING
    ]
    if noisy:
        lines.append(f"- Spread too large to compare reliably: {', '.join(noisy)}; rerun with more repeats.")
    lines += keras_floor_notes(ladder)
    for c in found_crossovers:
        if c.batch_size is None:
            lines.append(f"- Width {c.hidden_units}: cuda was never faster than cpu, up to batch {c.largest_batch}.")
        else:
            lines.append(f"- Width {c.hidden_units}: cuda is faster than cpu from batch {c.batch_size} on.")
    lines += [f"- {note}" for note in sweep_notes]
    return "## What this run shows\n\n" + "\n".join(lines)


def keras_floor_notes(ladder: dict) -> list[str]:
    """Why Keras cannot get much faster per step: what one fit() epoch costs with a single call."""
    notes = []
    for step, rungs in ladder.items():
        by_variant = {r.variant: r for r in rungs}
        if not step.startswith("keras") or not {"seed", "steps_per_execution"} <= by_variant.keys():
            continue
        seed, one_call = by_variant["seed"], by_variant["steps_per_execution"]
        notes.append(
            f"- {step}: with one train-function call per epoch (`steps_per_execution`), a step still "
            f"costs {us(one_call.step_s)} µs, {one_call.vs_seed:.2f}× the seed's speed; what is left is "
            f"the fixed cost of each `fit` epoch (iterator, callbacks, logs), which no per-step change "
            f"removes. A 10× speed-up would need {us(seed.step_s / 10)} µs per step."
        )
    return notes


def ladder_section(ladder: dict, summary: pd.DataFrame, peaks: dict[str, float]) -> str:
    """One table per step, seed to leanest, with speed-ups, spread and distance from the floor."""
    parts = [
        "## Where the time goes: the variant ladder\n\n"
        "Steady-state time per optimiser step: each run's median epoch after the first, divided by "
        "its steps per epoch; then the median (and min–max) over repeats. CV is the coefficient of "
        f"variation over repeats; ⚠ marks a CV above {CV_WARNING:.0%}, where the spread makes a "
        "comparison unreliable. *First-epoch excess* is the first epoch's time beyond a later "
        "one: warm-up, tracing and compilation. The floor is the step's floating-point work at the "
        "device's measured float32 matmul rate (from the sweep)."
    ]
    header = [
        "variant",
        "µs / step",
        "min–max",
        "CV",
        "× vs seed",
        "× vs rung before",
        "first-epoch excess (s)",
        "converged",
        "× above floor",
        "what this rung removes",
    ]
    shapes = summary.set_index("step")[["batch_size", "hidden_units"]]
    for step, rungs in ladder.items():
        device = step.split("-")[1]
        shape = shapes.loc[[step]].iloc[0]
        flops = flops_per_step(int(shape.batch_size), int(shape.hidden_units))
        floor = flops / (peaks[device] * 1e9) if device in peaks else None
        rows = []
        for r in rungs:
            cv = "–" if pd.isna(r.cv) else f"{r.cv:.1%}" + (" ⚠" if r.cv > CV_WARNING else "")
            rows.append(
                [
                    f"`{r.variant}`",
                    us(r.step_s),
                    f"{us(r.step_min_s)}–{us(r.step_max_s)}",
                    cv,
                    fmt(r.vs_seed),
                    fmt(r.vs_previous),
                    fmt(r.first_epoch_excess_s),
                    f"{r.converged}/{r.runs}",
                    f"{r.step_s / floor:,.0f}" if floor else "–",
                    r.removes,
                ]
            )
        floor_text = f"{floor * 1e6:.3f} µs" if floor else "not known (no sweep on this device)"
        parts.append(f"### {step}\n\n{flops:,} FLOPs per step; floor {floor_text}.\n\n" + table(header, rows))
    parts.append("Known differences no variant removes:\n\n" + "\n".join(f"- {d}" for d in KNOWN_DIFFERENCES))
    return "\n\n".join(parts)


def targets_section(found: list) -> str:
    rows = [[t.name, t.verdict, t.detail] for t in found]
    return "## Targets\n\nJudged from the per-step medians above, in this run on this machine.\n\n" + table(
        ["target", "verdict", "measured"], rows
    )


def crossover_section(points: pd.DataFrame, sweeps: list[dict], plot_link: str) -> str:
    intro = (
        "## Crossover map\n\n"
        "Steady-state time per step of torch `sync_free` on random device-resident rows, over batch "
        "size × hidden width; each point is the median of three timed blocks."
    )
    skipped = [f"{s['device']}: {s['status']} ({s['reason']})" for s in sweeps if s["status"] != "ok"]
    if skipped:
        intro += " Not measured here: " + "; ".join(skipped) + "."
    if points.empty:
        return intro
    wide = points.pivot_table(index=["hidden_units", "batch_size"], columns="device", values="step_s")
    devices = [d for d in ("cpu", "cuda") if d in wide.columns]
    rows = []
    for (width, batch), values in wide.iterrows():
        cells = [fmt(values[d] * 1e3, 3) for d in devices]
        ratio = fmt(values["cpu"] / values["cuda"]) if len(devices) == 2 else "–"
        rows.append([str(width), str(batch), *cells, ratio])
    header = ["width", "batch", *[f"{d} (ms/step)" for d in devices], "cpu / cuda"]
    return f"{intro}\n\n![time per step over batch size and width]({plot_link})\n\n" + table(header, rows)


def phases_section(summary: pd.DataFrame) -> str:
    rows = [
        [
            f"{s.step} ({s.variant})",
            fmt(s.import_s),
            fmt(s.setup_s),
            fmt(s.first_epoch_s * 1e3, 1),
            fmt(s.median_epoch_s * 1e3, 1),
            fmt(s.fit_s),
            fmt(s.predict_s * 1e3, 1),
            fmt(s.median_s),
        ]
        for s in summary.itertuples(index=False)
    ]
    header = [
        "step (variant)",
        "import (s)",
        "set-up (s)",
        "first epoch (ms)",
        "later epochs, median (ms)",
        "all epochs (s)",
        "predict (ms)",
        "timing point (s)",
    ]
    return "## Phases\n\nMedians over completed runs.\n\n" + table(header, rows)


def records_by_host(records: list[dict]) -> dict[str, list[dict]]:
    hosts: dict[str, list[dict]] = {}
    for r in records:
        hosts.setdefault(r["environment"]["host"], []).append(r)
    return dict(sorted(hosts.items()))


def results_sections(records: list[dict], sweeps: list[dict], plot_link: str, crossover_link: str) -> list[str]:
    """Every result section for records from one host."""
    frame = records_to_frame(records)
    summary = summarize(frame)
    ladder = ladders(summary)
    points = sweep_frame(sweeps)
    peaks = {s["device"]: s["peak_gflops"] for s in sweeps if s["peak_gflops"]}
    sweep_notes = [
        f"Crossover map: not measured on {s['device']} ({s['reason']}), so no crossover is stated."
        for s in sweeps
        if s["status"] != "ok"
    ]
    sections = [
        headline_section(frame, summary, plot_link),
        findings_section(summary, ladder, crossovers(points), sweep_notes),
        ladder_section(ladder, summary, peaks),
        targets_section(targets(ladder)),
    ]
    if sweeps:
        sections.append(crossover_section(points, sweeps, crossover_link))
    return [*sections, phases_section(summary), quality_section(summary), attention_section(frame)]


def render_markdown(
    records: list[dict],
    sweeps: list[dict] = (),
    plot_link: str = "report/timings.png",
    crossover_link: str = "report/crossover.png",
) -> str:
    """The whole report as Markdown text; the links are the charts' paths relative to it.

    Records from several hosts get one set of result sections per host: timings from different
    machines are never averaged together.
    """
    first = records[0]["parameters"]
    sections = [
        "# tiny-mlp-bench report\n\n"
        "Why is a 2→20→1 MLP slower in PyTorch on a GPU than on a CPU, and slower in PyTorch than in "
        f"Keras? {len(records)} run records; {first['epochs']} epochs of {first['n_train']} training "
        f"rows, batch {first['batch_size']}, Adam lr {first['learning_rate']}, "
        f"{first['hidden_units']} hidden units."
    ]
    hosts = records_by_host(records)
    if len(hosts) == 1:
        sections += results_sections(records, list(sweeps), plot_link, crossover_link)
    else:
        for host, host_records in hosts.items():
            host_sweeps = [s for s in sweeps if s["environment"]["host"] == host]
            sections.append(f"# Results on host `{host}`\n\nEach host's runs are summarised on their own.")
            sections += results_sections(host_records, host_sweeps, plot_link, crossover_link)
    sections.append(environment_section(records))
    return "\n\n".join(sections) + "\n"


def load_records(paths: list[Path]) -> list[dict]:
    """Read every record; refuse duplicates, which would be averaged twice."""
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
    frame = records_to_frame(records)
    with atomic_path(args.timings) as tmp:
        frame.to_parquet(tmp, index=False)
    per_host = {host: seed_medians(summarize(records_to_frame(rs))) for host, rs in records_by_host(records).items()}
    plot_steps(per_host, args.plot)

    def link(path: Path) -> str:
        return Path(os.path.relpath(path, args.report.parent)).as_posix()

    crossover_link = ""
    if sweeps:
        plot_crossover(sweep_frame(sweeps), args.crossover_plot)
        crossover_link = link(args.crossover_plot)
    write_text_atomic(args.report, render_markdown(records, sweeps, link(args.plot), crossover_link))
    print(f"wrote {args.report}, {args.timings} and {args.plot} from {len(records)} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
