"""Turn run records into a tidy timings table, a bar chart and a Markdown report.

The report is a pure function of the records: the same records give the same bytes.

Usage: python scripts/render_report.py --report results/report.md \
           --timings results/timings.parquet --plot results/report/timings.png results/runs/*.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import pandas as pd

from atomic import atomic_path, write_text_atomic
from run_record import RecordError, read_record

# The asker's wall times in seconds, from the question ("~17 s", "~11 s", "~9 s").
# The question does not say which device Keras used, so its 9 s stands beside both.
ASKER_SECONDS = {"torch-cuda": 17.0, "torch-cpu": 11.0, "keras-cpu": 9.0, "keras-cuda": 9.0}
# Rows of the headline table, in the question's order.
STEP_ORDER = ["torch-cuda", "torch-cpu", "keras-cpu", "keras-cuda"]
# Ratios the question implies, as (numerator, denominator) steps.
RATIOS = [("torch-cuda", "torch-cpu"), ("torch-cpu", "keras-cpu"), ("torch-cuda", "keras-cuda")]


def records_to_frame(records: list[dict]) -> pd.DataFrame:
    """One row per run, sorted by framework, device, variant and repeat."""
    rows = []
    for r in records:
        ident, timings, quality, env = r["identity"], r["timings"], r["quality"] or {}, r["environment"]
        epochs = timings.get("epoch_s") or []
        rows.append(
            {
                "run_id": ident["run_id"],
                "step": f"{ident['framework']}-{ident['device']}",
                "framework": ident["framework"],
                "device": ident["device"],
                "variant": ident["variant"],
                "repeat": ident["repeat"],
                "status": r["status"],
                "reason": r["reason"],
                "converged": quality.get("converged"),
                "fit_predict_s": timings.get("fit_predict_s"),
                "import_s": timings["import_s"],
                "setup_s": timings.get("setup_s"),
                "first_epoch_s": epochs[0] if epochs else None,
                "median_epoch_s": statistics.median(epochs[1:]) if len(epochs) > 1 else None,
                "fit_s": timings.get("fit_s"),
                "predict_s": timings.get("predict_s"),
                "steps_per_epoch": timings.get("steps_per_epoch"),
                "epochs": r["parameters"]["epochs"],
                "threads": r["parameters"]["threads"],
                "test_mse": quality.get("test_mse"),
                "train_r2": quality.get("train_r2"),
                "host": env["host"],
                "cpu_model": env["cpu_model"],
                "gpu_name": env["gpu_name"],
                "started_at": ident["started_at"],
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame = frame.sort_values(["framework", "device", "variant", "repeat"], kind="stable")
    return frame.reset_index(drop=True)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Median and min-max over the completed runs of each step and variant."""
    done = frame[frame["status"] == "ok"]
    grouped = done.groupby(["step", "variant"], sort=True)
    summary = grouped.agg(
        runs=("run_id", "size"),
        converged=("converged", "sum"),
        median_s=("fit_predict_s", "median"),
        min_s=("fit_predict_s", "min"),
        max_s=("fit_predict_s", "max"),
        import_s=("import_s", "median"),
        setup_s=("setup_s", "median"),
        first_epoch_s=("first_epoch_s", "median"),
        median_epoch_s=("median_epoch_s", "median"),
        fit_s=("fit_s", "median"),
        predict_s=("predict_s", "median"),
        test_mse=("test_mse", "median"),
        train_r2=("train_r2", "median"),
    )
    summary = summary.reset_index()
    order = summary["step"].map({step: i for i, step in enumerate(STEP_ORDER)})
    return summary.assign(_order=order).sort_values(["_order", "variant"]).drop(columns="_order").reset_index(drop=True)


def fmt(value, digits: int = 2, style: str = "f") -> str:
    """A number for a table cell (style "f" fixed, "e" scientific); a dash where there is none."""
    if value is None or pd.isna(value):
        return "–"
    return f"{value:.{digits}{style}}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def seed_medians(summary: pd.DataFrame) -> dict[str, pd.Series]:
    """The seed variant's summary row for each step that has one."""
    seed = summary[summary["variant"] == "seed"]
    return {row.step: row for row in seed.itertuples(index=False)}


def headline_section(frame: pd.DataFrame, summary: pd.DataFrame, plot_link: str) -> str:
    ours = seed_medians(summary)
    rows = []
    for step in STEP_ORDER:
        runs = frame[(frame["step"] == step) & (frame["variant"] == "seed")]
        if runs.empty:
            continue
        if step in ours:
            s = ours[step]
            spread = f"{fmt(s.min_s)}–{fmt(s.max_s)}"
            rows.append(
                [
                    step,
                    fmt(ASKER_SECONDS[step], 0),
                    fmt(s.median_s),
                    spread,
                    f"{s.runs}/{len(runs)}",
                    f"{int(s.converged)}/{s.runs}",
                ]
            )
        else:
            statuses = ", ".join(sorted(set(runs["status"])))
            rows.append([step, fmt(ASKER_SECONDS[step], 0), statuses, "–", f"0/{len(runs)}", "–"])
    text = table(["step", "asker (s)", "ours, median (s)", "ours, min–max (s)", "runs timed", "converged"], rows)

    ratio_rows = []
    for num, den in RATIOS:
        ours_ratio = ours[num].median_s / ours[den].median_s if num in ours and den in ours else None
        ratio_rows.append([f"{num} / {den}", fmt(ASKER_SECONDS[num] / ASKER_SECONDS[den]), fmt(ours_ratio)])
    ratios = table(["ratio of wall times", "asker", "ours"], ratio_rows)
    return (
        "## The question's table\n\n"
        "Wall time from the start of the fit function (model build and device set-up included) "
        "to the end of one batch of test predictions, as the asker timed it. Imports and data "
        "creation are outside it. The question does not say which device Keras used, so its 9 s "
        "stands beside both Keras rows.\n\n"
        f"{text}\n\n{ratios}\n\n"
        "Runs that did not converge are timed like the others (their computation is the same) "
        "and are listed under *Runs to look at*.\n\n"
        f"![median wall time per step, with min–max over repeats, beside the asker's]({plot_link})"
    )


def findings_section(summary: pd.DataFrame) -> str:
    """Sentences derived from the medians; nothing here is written by hand."""
    ours = seed_medians(summary)
    lines = []
    for num, den in RATIOS:
        if num in ours and den in ours:
            a, b = ours[num].median_s, ours[den].median_s
            verdict = "slower than" if a > b else "faster than"
            factor = max(a, b) / min(a, b)
            lines.append(f"- {num} took {fmt(a)} s, {factor:.2f}× {verdict} {den} ({fmt(b)} s).")
        else:
            missing = " and ".join(s for s in (num, den) if s not in ours)
            lines.append(f"- {num} vs {den}: not compared, no completed {missing} run.")
    for step, s in ours.items():
        if s.median_epoch_s and s.first_epoch_s:
            lines.append(
                f"- {step}: set-up {fmt(s.setup_s)} s, first epoch {fmt(s.first_epoch_s * 1e3, 1)} ms, "
                f"later epochs {fmt(s.median_epoch_s * 1e3, 1)} ms each (median)."
            )
    return "## What this run shows\n\n" + "\n".join(lines)


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
    return "## Where the time goes, by phase\n\nMedians over completed runs.\n\n" + table(header, rows)


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
    return "## Runs to look at\n\nSkipped, failed and non-converged runs.\n\n" + body


def render_markdown(records: list[dict], plot_link: str = "report/timings.png") -> str:
    """The whole report as Markdown text; ``plot_link`` is the chart's path relative to it."""
    frame = records_to_frame(records)
    summary = summarize(frame)
    first = records[0]["parameters"]
    intro = (
        "# tiny-mlp-bench report\n\n"
        "Why is a 2→20→1 MLP slower in PyTorch on a GPU than on a CPU, and slower in PyTorch than in "
        f"Keras? {len(records)} run records; {first['epochs']} epochs of {first['n_train']} training "
        f"rows, batch {first['batch_size']}, Adam lr {first['learning_rate']}, "
        f"{first['hidden_units']} hidden units."
    )
    sections = [
        intro,
        headline_section(frame, summary, plot_link),
        findings_section(summary),
        phases_section(summary),
        quality_section(summary),
        attention_section(frame),
        environment_section(records),
    ]
    return "\n\n".join(sections) + "\n"


def plot_steps(summary: pd.DataFrame, path: Path) -> None:
    """Bar chart of the seed variant's median wall time per step, min-max whiskers, asker beside."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ours = seed_medians(summary)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    width = 0.38
    for i, step in enumerate(STEP_ORDER):
        ax.bar(i - width / 2, ASKER_SECONDS[step], width, color="#bbbbbb", label="asker")
        if step in ours:
            s = ours[step]
            err = [[s.median_s - s.min_s], [s.max_s - s.median_s]]
            ax.bar(
                i + width / 2,
                s.median_s,
                width,
                yerr=err,
                capsize=4,
                color="#1f77b4",
                label="this run (median, min–max)",
            )
        else:
            ax.text(i + width / 2, 0.3, "no timed\nrun", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(STEP_ORDER)), STEP_ORDER)
    ax.set_ylabel("seconds, fit start to predictions")
    ax.set_title("Seed experiment: wall time per step")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))  # one legend entry per label, not per bar
    ax.legend(unique.values(), unique.keys())
    fig.tight_layout()
    with atomic_path(path) as tmp:
        # No Software/date metadata, so the same records give the same bytes.
        fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)


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
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        records = load_records(args.records)
    except RecordError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    frame = records_to_frame(records)
    with atomic_path(args.timings) as tmp:
        frame.to_parquet(tmp, index=False)
    plot_steps(summarize(frame), args.plot)
    plot_link = Path(os.path.relpath(args.plot, args.report.parent)).as_posix()
    write_text_atomic(args.report, render_markdown(records, plot_link))
    print(f"wrote {args.report}, {args.timings} and {args.plot} from {len(records)} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
