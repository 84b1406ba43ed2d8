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
    """The ladder's rungs, with the host synchronisations of each rung's epoch where they were counted."""
    syncs = ladder.counts_host_syncs
    rows = [
        [
            f"`{r.variant}`",
            us(r.step_s),
            f"{us(r.step_min_s)}–{us(r.step_max_s)}",
            pct(r.cv) + (" ⚠" if r.noisy else "") if pd.notna(r.cv) else "–",
            num(r.vs_seed),
            num(r.vs_previous),
            num(r.first_block_excess_s),
            num(r.one_time_s),
            beats_seed(r),
            f"{r.converged}/{r.runs}",
            f"{r.above_floor:,.0f}" if r.above_floor else "–",
            *([num(r.host_syncs_per_epoch, 6, "g")] if syncs else []),
            removes(r),
        ]
        for r in ladder.rungs
    ]
    header = ["variant", "µs / step", "min–max", "CV", "× vs seed", "× vs rung before", "first-block excess (s)"]
    header += ["one-time cost (s)", "beats seed to a result from (epochs)", "converged", "× above floor"]
    header += [*(["host syncs / epoch"] if syncs else []), "what this rung removes"]
    return table(header, rows, "lrrrrrrrrrr" + ("r" if syncs else "") + "l")


def beats_seed(rung: Rung) -> str:
    """From how many epochs on a rung's time to result beats its ladder's seed's, its one-time cost included."""
    if rung.variant == "seed" or rung.vs_seed is None or rung.one_time_s is None or pd.isna(rung.step_s):
        return "–"
    return "never" if rung.beats_seed_from is None else f"{rung.beats_seed_from:,}"


def target_name(target: Target) -> str:
    spec = target.spec
    who = f"{spec.pair} {spec.variant}" if spec.variant else f"best {spec.pair} variant"
    baseline = f"{spec.baseline_pair} {spec.baseline_variant}"
    if spec.kind == "within":
        return f"{who} within {spec.goal:g}× of {baseline} per step"
    return f"{who} ≥ {spec.goal:g}× faster per step than {baseline}"


def target_measured(target: Target) -> str:
    spec, rung, base = target.spec, target.rung, target.baseline
    if target.ratio is None:
        return f"no completed runs of {spec.baseline_pair} {spec.baseline_variant} and {spec.variant or 'a variant'}"
    return f"{rung.variant} {us(rung.step_s)} µs/step vs {base.variant} {us(base.step_s)} µs/step: {num(target.ratio)}×"


def target_bound(target: Target) -> str:
    """What the device's floor allows a speed-up target, and whether that makes it impossible here.

    Against the floor rung, what the probed compiled call of fused_epoch is made of, per step: where
    the call without its kernel exceeds the goal, no kernel could meet it with a call per epoch; where
    the kernel alone does, the rung cannot meet it until the compiler emits a faster kernel.
    """
    if target.call_parts is not None:
        kernel, rest = target.call_parts
        floor = target.baseline.step_s
        parts = (
            f"the probed {target.rung.variant} call: its fused kernel {us(kernel, 2)} µs/step "
            f"({num(kernel / floor)}× the floor), the rest of the call {us(rest, 2)} µs/step ({num(rest / floor)}×)"
        )
        if rest / floor >= target.spec.goal:
            return f"impossible here with one compiled call per epoch: {parts}"
        if kernel / floor >= target.spec.goal:
            return f"out of this rung's reach while its kernel is this slow: {parts}"
        return parts
    if target.bound is None:
        return "–"
    floor = target.rung.pair.split("-")[-1]
    allows = f"the {floor} floor allows up to {target.bound:,.0f}×"
    return f"impossible here: {allows}" if target.bound < target.spec.goal else allows


def targets_table(m: Machine) -> str:
    verdicts = {True: "met", False: "not met", None: "not measured"}
    rows = [[target_name(t), verdicts[t.met], target_measured(t), target_bound(t)] for t in m.targets]
    return table(["target", "verdict", "measured", "what the floor allows"], rows, "llll")


def views_table(m: Machine) -> str:
    """Every completed pair and variant in the two views, ranked within its device, fastest to a result first."""
    done = m.summary.dropna(subset=["median_s"])
    rows = []
    for device in ("cpu", "cuda"):
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
    """What the probes measured, one column per device."""
    if not m.costs:
        return ""
    devices = list(m.costs)
    readings = [
        ("one eager torch op (µs)", "eager_op_s", us),
        ("ops the asker's step runs (cpu: leaf aten ops; cuda: kernels)", "ops_per_step", lambda v: num(v, 0)),
        ("the asker's step on a batch already on the device (µs)", "seed_step_s", us),
        ("empty torch.cuda.synchronize() (µs)", "sync_s", us),
        ("replay of a one-kernel CUDA graph (µs)", "graph_replay_s", us),
        ("one kernel inside a CUDA graph (µs)", "graph_kernel_s", lambda v: us(v, 2)),
        ("fixed cost of a Keras fit epoch (ms)", "keras_epoch_s", lambda v: num(None if v is None else v * 1e3, 1)),
        ("a step inside Keras fit (µs)", "keras_step_s", us),
        ("torch `fused_epoch`: one compiled epoch call (µs)", "fused_call_s", us),
        ("… of which inside its one fused kernel (µs)", "fused_kernel_s", us),
    ]
    rows = [[label, *(show(getattr(m.costs[d], key)) for d in devices)] for label, key, show in readings]
    return table(["", *devices], rows, "l" + "r" * len(devices))


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


def cuda_epochs_per_block(m: Machine) -> list[int]:
    """The epochs per clock reading of the machine's completed cuda runs: 50 since the cuda loops run
    blocks of 50, 1 in records made before."""
    done = m.runs[(m.runs["device"] == "cuda") & (m.runs["status"] == "ok") & (m.runs["blocks"] > 0)]
    return sorted({round(epochs / blocks) for epochs, blocks in zip(done["epochs"], done["blocks"], strict=True)})


def machine_tables(m: Machine) -> dict:
    return {
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
    env.globals.update(removes=removes, cv_warning=CV_WARNING)
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
