"""The report model as Markdown: tables by tabulate (``DataFrame.to_markdown``), prose from report.md.j2.

Nothing here computes a result: cells and sentences format the numbers model.py (with ladder.py and crossover_map.py)
computed once.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.report.ladder import CV_WARNING, Ladder, Rung, Target
from tiny_mlp_bench.report.model import Machine, Report
from tiny_mlp_bench.timing import PHASES

TEMPLATE = Path(__file__).with_name("report.md.j2")


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


def removes(rung: Rung) -> str:
    """What a rung takes away compared with the rung before it, as the catalogue says."""
    try:
        return catalogue.variant(rung.framework, rung.variant).removes
    except catalogue.UnknownVariant:
        return ""


def table(header: list[str], rows: list[list[str]], align: str) -> str:
    """A Markdown table of text cells; ``align`` has one letter per column, l(eft) or r(ight)."""
    cells = pd.DataFrame(rows, columns=header).map(lambda c: str(c).replace("|", "\\|").replace("\n", " "))
    colalign = [{"l": "left", "r": "right"}[a] for a in align]
    return cells.to_markdown(index=False, disable_numparse=True, colalign=colalign)


def question_table(m: Machine) -> str:
    rows = []
    for q in m.question:
        if q.timed:
            numbers = [num(q.median_s), f"{num(q.min_s)}–{num(q.max_s)}", f"{q.timed}/{q.runs}"]
            numbers.append(f"{q.converged}/{q.timed}")
        else:
            numbers = [", ".join(q.statuses), "–", f"0/{q.runs}", "–"]
        rows.append([q.pair, num(q.asker_s, 0), *numbers])
    header = ["framework-device", "asker (s)", "ours, median (s)", "ours, min–max (s)", "runs timed", "converged"]
    return table(header, rows, "lrrrrr")


def ratio_table(m: Machine) -> str:
    rows = [[f"{r.numerator} / {r.denominator}", num(r.asker), num(r.ours)] for r in m.ratios]
    return table(["ratio of wall times", "asker", "ours"], rows, "lrr")


def ladder_table(ladder: Ladder) -> str:
    rows = [
        [
            f"`{r.variant}`",
            us(r.step_s),
            f"{us(r.step_min_s)}–{us(r.step_max_s)}",
            pct(r.cv) + (" ⚠" if r.noisy else "") if pd.notna(r.cv) else "–",
            num(r.vs_seed),
            num(r.vs_previous),
            num(r.first_block_excess_s),
            f"{r.converged}/{r.runs}",
            f"{r.above_floor:,.0f}" if r.above_floor else "–",
            removes(r),
        ]
        for r in ladder.rungs
    ]
    header = ["variant", "µs / step", "min–max", "CV", "× vs seed", "× vs rung before", "first-block excess (s)"]
    header += ["converged", "× above floor", "what this rung removes"]
    return table(header, rows, "lrrrrrrrrl")


def target_name(target: Target) -> str:
    spec = target.spec
    if spec.kind == "within":
        return f"best {spec.pair} variant within {spec.goal:g}× of the NumPy reference per step"
    who = f"{spec.pair} {spec.variant}" if spec.variant else f"best {spec.pair} variant"
    return f"{who} ≥ {spec.goal:g}× faster per step than {spec.baseline_pair} {spec.baseline_variant}"


def target_measured(target: Target) -> str:
    spec, rung, base = target.spec, target.rung, target.baseline
    if spec.kind == "within":
        if target.ratio is None:
            return f"no completed {spec.pair} variant and NumPy reference runs"
        return f"{rung.variant} {us(rung.step_s)} µs/step vs NumPy {us(base.step_s)}: {num(target.ratio)}×"
    if target.ratio is None:
        return f"no completed {spec.pair} runs of {spec.baseline_variant} and {spec.variant or 'another variant'}"
    return f"{rung.variant} {us(rung.step_s)} µs/step vs {base.variant} {us(base.step_s)} µs/step: {num(target.ratio)}×"


def targets_table(m: Machine) -> str:
    verdicts = {True: "met", False: "not met", None: "not measured"}
    rows = [[target_name(t), verdicts[t.met], target_measured(t)] for t in m.targets]
    return table(["target", "verdict", "measured"], rows, "lll")


def crossover_table(m: Machine) -> str:
    if m.sweep_table.empty:
        return ""
    devices = [d for d in ("cpu", "cuda") if f"{d}_step_s" in m.sweep_table.columns]
    rows = []
    for row in m.sweep_table.itertuples(index=False):
        times = [num(getattr(row, f"{d}_step_s") * 1e3, 3) for d in devices]
        rows.append([str(row.hidden_units), str(row.batch_size), *times, num(row.cpu_over_cuda)])
    header = ["width", "batch", *(f"{d} (ms/step)" for d in devices), "cpu / cuda"]
    return table(header, rows, "r" * len(header))


def phases_table(m: Machine) -> str:
    rows = [
        [f"{s.pair} ({s.variant})", *(num(getattr(s, f"{phase}_s"), 3) for phase in PHASES), num(s.median_s)]
        for s in m.summary.itertuples(index=False)
    ]
    header = ["framework-device (variant)", *(f"{label} (s)" for label in PHASES.values()), "timing point (s)"]
    return table(header, rows, "l" + "r" * (len(header) - 1))


def quality_table(m: Machine) -> str:
    rows = [
        [f"{s.pair} ({s.variant})", num(s.test_mse, 2, "e"), num(s.train_r2, 4), f"{int(s.converged)}/{s.runs}"]
        for s in m.summary.itertuples(index=False)
    ]
    return table(["framework-device (variant)", "test MSE", "train R²", "converged"], rows, "lrrr")


def attention_table(m: Machine) -> str:
    rows = [
        [r.run_id, r.status, "" if pd.isna(r.reason) else r.reason]
        if r.status != "ok"
        else [r.run_id, "not converged", f"train R² {num(r.train_r2, 4)}"]
        for r in m.attention.itertuples(index=False)
    ]
    return table(["run", "status", "reason"], rows, "lll") if rows else ""


def describe_container(container: tuple | None) -> str:
    """One cell: engine, image and short image ID, or that the run was on the host."""
    if container is None:
        return "none (host)"
    engine, image, image_id = container
    short = (image_id or "").removeprefix("sha256:")[:12]
    return " ".join(filter(None, [engine, image or "(image not named)", short and f"({short})"]))


def span(low, high, digits: int) -> str:
    """A reading's range over the runs, one number when it did not move; a dash where none was read."""
    return num(low, digits) if num(low, digits) == num(high, digits) else f"{num(low, digits)}–{num(high, digits)}"


def load_rows(load: dict[str, tuple[float, float]]) -> list[list[str]]:
    """What else the machine was doing, as ranges over its runs."""

    def at_start_and_end(reading: str, digits: int) -> str:
        start, end = load[f"{reading}_before"], load[f"{reading}_after"]
        if pd.isna(start[0]) and pd.isna(end[0]):
            return "not recorded"
        return f"{span(*start, digits)} at start, {span(*end, digits)} at end"

    host, gpu = load["peak_host_memory_mb"], load["peak_gpu_memory_mb"]
    memory = "not recorded" if pd.isna(host[1]) else f"host {num(host[1], 0)}, GPU {num(gpu[1], 0)}"
    return [
        ["load average (1 min)", at_start_and_end("load_1min", 2)],
        ["CPU clock (MHz)", at_start_and_end("cpu_mhz", 0)],
        ["peak memory of a run (MB)", memory],
    ]


def environment_table(facts: dict[str, tuple], load: dict[str, tuple[float, float]]) -> str:
    def values(fact: str, show=str) -> str:
        return ", ".join(sorted({show(value) for value in facts[fact]}))

    rows = [
        ["CPU", values("cpu", lambda c: f"{c[0]} ({c[1]} logical CPUs)")],
        ["GPU", values("gpu", lambda g: g or "none")],
        ["Python", values("python")],
        ["packages", values("packages", " ".join)],
        ["CUDA (framework build; driver)", values("cuda", " ".join) or "none"],
        ["framework threads", values("threads", lambda t: f"{t[0]}={t[1]}")],
        ["thread variables", values("thread_env", lambda env: " ".join(f"{k}={v}" for k, v in env) or "none")],
        ["container", values("container", describe_container)],
        ["Slurm job", values("slurm_job_id", lambda j: str(j or "none"))],
        ["git commit", values("git_commit", lambda c: c or "unknown")],
        ["dataset sha256", values("dataset_sha256")],
        *load_rows(load),
    ]
    return table(["", ""], rows, "ll")


def machine_tables(m: Machine) -> dict:
    return {
        "question": question_table(m),
        "ratios": ratio_table(m),
        "ladders": {ladder.pair: ladder_table(ladder) for ladder in m.ladders},
        "targets": targets_table(m),
        "crossover": crossover_table(m),
        "phases": phases_table(m),
        "quality": quality_table(m),
        "attention": attention_table(m),
        "environment": environment_table(m.environment, m.load),
    }


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE.parent),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # Markdown, not HTML
    )
    env.filters.update(num=num, us=us, pct=pct)
    env.globals.update(removes=removes, cv_warning=CV_WARNING)
    return env


def render_markdown(
    report: Report, plot_link: str = "report/timings.png", crossover_link: str = "report/crossover.png"
) -> str:
    """The whole report as Markdown text; the links are the charts' paths relative to it."""
    tables = {m.label: machine_tables(m) for m in report.machines}
    template = environment().get_template(TEMPLATE.name)
    return template.render(report=report, tables=tables, plot_link=plot_link, crossover_link=crossover_link)
