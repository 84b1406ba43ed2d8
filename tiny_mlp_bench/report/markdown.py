"""The report model as Markdown: tables by tabulate (``DataFrame.to_markdown``), prose from report.md.j2.

Nothing here computes a result: cells and sentences format the numbers model.py (with ladder.py and crossover_map.py)
computed once. The cells are written by cells.py, the ladder and target tables by ladder_tables.py and the
environment table by environment_table.py; this module lays out the other tables of each machine and renders the
template.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.question import ASKERS_KERAS, TORCH
from tiny_mlp_bench.report.answer import ASKERS_BACKEND, PAUSED_S
from tiny_mlp_bench.report.cells import num, pct, table, us
from tiny_mlp_bench.report.environment_table import environment_table
from tiny_mlp_bench.report.fixed_costs import COMPILED_EPOCH
from tiny_mlp_bench.report.ladder import CV_WARNING
from tiny_mlp_bench.report.ladder_tables import ladder_table, removes, targets_table
from tiny_mlp_bench.report.model import Machine, Report
from tiny_mlp_bench.timing import PHASES

TEMPLATE = Path(__file__).with_name("report.md.j2")


def question_table(m: Machine) -> str:
    rows = []
    for q in m.question:
        if q.timed:
            numbers = [num(q.median_s), f"{num(q.min_s)}–{num(q.max_s)}", f"{q.timed}/{q.runs}"]
            numbers.append(f"{q.converged}/{q.timed}")
        else:
            numbers = [", ".join(q.statuses), "–", f"0/{q.runs}", "–"]
        rows.append([q.pair, q.what, num(q.asker_s, 0), *numbers])
    header = ["framework-device", "what", "asker (s)", "ours, median (s)", "ours, min–max (s)", "runs timed"]
    return table([*header, "converged"], rows, "llrrrrr")


def ratio_table(m: Machine) -> str:
    rows = [[f"{r.numerator} / {r.denominator}", num(r.asker), num(r.ours)] for r in m.ratios]
    return table(["ratio of wall times", "asker", "ours"], rows, "lrr")


def views_table(m: Machine) -> str:
    """Every completed pair and variant in the two views, ranked within its device, fastest to a result first."""
    done = m.summary.dropna(subset=["median_s"])
    rows = []
    for device in catalogue.DEVICES:
        on = done[done["device"] == device].copy()
        on["result_rank"] = on["median_s"].rank(method="min")
        on["step_rank"] = on["step_s"].rank(method="min")
        for s in on.sort_values(["median_s", "pair", "variant"]).itertuples(index=False):
            rows.append(
                [
                    f"{s.pair} ({s.variant})",
                    num(s.median_s),
                    num(s.result_rank, 0),
                    us(s.step_s),
                    num(s.step_rank, 0),
                    num(s.setup_s + s.first_block_excess_s),
                ]
            )
    header = ["framework-device (variant)", "time to result (s)", "rank", "µs / step", "rank"]
    header.append("one-time cost: set-up and first-block excess (s)")
    return table(header, rows, "lrrrrr") if rows else ""


def fixed_costs_table(m: Machine) -> str:
    """What the probes measured, one column per device; a pair of rows per Keras probed."""
    if not m.costs:
        return ""
    devices = list(m.costs)

    def field(key: str):
        return lambda costs: getattr(costs, key)

    def keras_fit(framework: str, key: str):
        return lambda costs: getattr(costs.keras(framework), key) if costs.keras(framework) else None

    def ms(value):
        return num(None if value is None else value * 1e3, 1)

    keras_probed = list(dict.fromkeys(k.framework for costs in m.costs.values() for k in costs.keras_fit))
    keras_rows = []
    for framework in keras_probed:
        name = catalogue.framework(framework).label
        keras_rows += [
            (f"{name}: fixed cost of a fit epoch (ms)", keras_fit(framework, "epoch_fixed_s"), ms),
            (f"{name}: a step inside fit (µs)", keras_fit(framework, "step_s"), us),
        ]
    readings = [
        ("one eager torch op (µs)", field("eager_op_s"), us),
        ("ops the asker's step runs (cpu: leaf aten ops; cuda: kernels)", field("ops_per_step"), lambda v: num(v, 0)),
        ("the asker's step on a batch already on the device (µs)", field("seed_step_s"), us),
        ("empty torch.cuda.synchronize() (µs)", field("sync_s"), us),
        ("replay of a one-kernel CUDA graph (µs)", field("graph_replay_s"), us),
        ("one kernel inside a CUDA graph (µs)", field("graph_kernel_s"), lambda v: us(v, 2)),
        *keras_rows,
        (
            f"{COMPILED_EPOCH.framework} `{COMPILED_EPOCH.name}` runs: one compiled epoch call (µs)",
            field("fused_call_s"),
            us,
        ),
        ("… of which inside its one fused kernel (µs)", field("fused_kernel_s"), us),
    ]
    rows = [[label, *(show(read(m.costs[d])) for d in devices)] for label, read, show in readings]
    return table(["", *devices], rows, "l" + "r" * len(devices))


def crossover_table(m: Machine) -> str:
    if m.sweep_table.empty:
        return ""
    devices = [d for d in catalogue.DEVICES if f"{d}_step_s" in m.sweep_table.columns]
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


def cuda_epochs_per_block(m: Machine) -> list[int]:
    """The epochs per clock reading of the machine's completed cuda runs: 50 since the cuda loops run
    blocks of 50, 1 in records made before."""
    done = m.runs[(m.runs["device"] == "cuda") & (m.runs["status"] == "ok") & (m.runs["blocks"] > 0)]
    return sorted({round(epochs / blocks) for epochs, blocks in zip(done["epochs"], done["blocks"], strict=True)})


def compile_note(m: Machine) -> str:
    """How the compiled rungs' first blocks and times to result were compiled, from the records' compile_cache."""
    rerun = m.summary[m.summary["cold_compile_runs"] > 0]
    if rerun.empty:
        return "compiled rungs compile cold, each run with an empty compiler cache of its own"
    firsts = "; ".join(
        f"{s.pair} `{s.variant}` {num(s.cold_compile_s)} s to a result"
        + (f" ({s.cold_compile_runs} runs)" if s.cold_compile_runs > 1 else " (1 run)")
        for s in rerun.itertuples()
    )
    return (
        "a compiled rung's first run in the study compiles cold; its later runs reuse that compilation from the "
        "compiler's cache, as a user's later runs do, and give its time to result and first-block excess here. "
        f"The first runs: {firsts}"
    )


def machine_tables(m: Machine) -> dict:
    return {
        "compile_note": compile_note(m),
        "cuda_epochs_per_block": cuda_epochs_per_block(m),
        "question": question_table(m),
        "ratios": ratio_table(m),
        "ladders": {ladder.pair: ladder_table(ladder) for ladder in m.ladders},
        "targets": targets_table(m),
        "crossover": crossover_table(m),
        "fixed_costs": fixed_costs_table(m),
        "views": views_table(m),
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
    # The question's frameworks, for the sentences that name them.
    env.globals.update(torch=TORCH, askers_keras=ASKERS_KERAS, askers_backend=ASKERS_BACKEND)
    env.globals.update(removes=removes, cv_warning=CV_WARNING)
    env.globals.update(paused_s=PAUSED_S)
    return env


def render_markdown(
    report: Report,
    plot_link: str = "report/timings.png",
    crossover_link: str = "report/crossover.png",
    ladder_link: str = "report/ladder.png",
) -> str:
    """The whole report as Markdown text; the links are the charts' paths relative to it."""
    tables = {m.label: machine_tables(m) for m in report.machines}
    template = environment().get_template(TEMPLATE.name)
    return template.render(
        report=report, tables=tables, plot_link=plot_link, crossover_link=crossover_link, ladder_link=ladder_link
    )
