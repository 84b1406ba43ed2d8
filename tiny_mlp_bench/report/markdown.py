"""The report model as Markdown: its tables and sentences, laid out by report.md.j2."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pandas as pd

from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.report import claims, sentences
from tiny_mlp_bench.report.busy_core import BusyCore
from tiny_mlp_bench.report.cells import approx, duration, n_runs, num, pct, span, table, times
from tiny_mlp_bench.report.era import EraStudy
from tiny_mlp_bench.report.inference import SIGNIFICANCE
from tiny_mlp_bench.report.ladder import Ladder, RungResult
from tiny_mlp_bench.report.model import Machine, Report
from tiny_mlp_bench.stacks import RELEASES
from tiny_mlp_bench.timing import LOOP_PARTS, PHASES

TEMPLATE = Path(__file__).with_name("report.md.j2")
RUNGS_ANCHOR = "#the-rungs"  # the appendix's heading, where each rung's description lives


def headline_table(m: Machine) -> str:
    header = ["rung", "runs", "time to result", "× the original loop", "per step", "× the original loop"]
    header += ["blocks slow"]
    rows = sentences.headline_rows(m)
    return table(header, rows, "lrrrrrr") if rows else ""


def question_table(m: Machine) -> str:
    rows = []
    for q in m.question:
        ours = duration(q.result) if q.timed else ", ".join(q.statuses)
        rows.append([q.pair, q.what, num(q.asker_s, 0), ours, f"{q.timed}/{q.runs}"])
    header = ["framework-device", "what", "asker (s)", "ours: time to result", "runs completed"]
    return table(header, rows, "llrrr")


def ratio_table(m: Machine) -> str:
    rows = [[f"{r.numerator} / {r.denominator}", num(r.asker), times(r.ours)] for r in m.ratios]
    return table(["ratio of wall times", "asker", "ours"], rows, "lrr")


def views_table(m: Machine) -> str:
    """Every completed rung in the two views, ranked within its device, fastest to a result first: each view's time,
    its ratio to the original torch loop on the same device and its letters."""
    rows = [
        [
            f"{v.pair} `{v.variant}`",
            str(v.result.runs if v.result else 0),
            duration(v.result),
            sentences.relative(v, v.result_vs_seed),
            v.result_rank,
            duration(v.step),
            sentences.relative(v, v.step_vs_seed),
            v.step_rank,
            pct(v.slow_share, 0),
            num(v.one_time_s),
        ]
        for v in m.views
    ]
    header = ["rung", "runs", "time to result", "× the original loop", "letters", "per step", "× the original loop"]
    header += ["letters", "blocks slow", "one-time cost (s)"]
    return table(header, rows, "l" + "r" * (len(header) - 1)) if rows else ""


def beats_seed(rung: RungResult) -> str:
    """Epochs from which a rung's time to result beats its seed's, one-time cost included (from medians: 2 figures)."""
    if rung.role == Role.ASKERS or rung.vs_seed is None or rung.one_time_s is None or pd.isna(rung.step_s):
        return "–"
    return "never" if rung.beats_seed_from is None else approx(rung.beats_seed_from)


def speedup(found) -> str:
    return "–" if found is None else times(found)


def ladder_table(ladder: Ladder) -> str:
    """The ladder's rungs, each linked to its description, by what each gains over the rung before; host syncs where
    they were counted. A rung's ratio to the original loop, blocks slow and one-time cost: the views table's."""
    syncs = ladder.counts_host_syncs
    rows = [
        [
            f"[`{r.variant}`]({RUNGS_ANCHOR})",
            duration(r.step),
            duration(r.step_median_s),
            speedup(r.speedup_over_previous),
            beats_seed(r),
            *([num(r.host_syncs_per_epoch, 6, "g")] if syncs else []),
        ]
        for r in ladder.rungs
    ]
    header = ["rung", "per step", "median block (what runs saw here)", "speed-up over the rung before"]
    header += ["faster to a result from (epochs)"]
    header += ["host syncs / epoch"] if syncs else []
    return table(header, rows, "l" + "r" * (len(header) - 1))


def loop_parts_table(m: Machine) -> str:
    """The asker's torch step by part as the `parts` rung read it, one column per device that ran it."""
    if not m.loop_parts:
        return ""
    found = list(m.loop_parts.values())
    header = ["part of the original torch step", *(f"{sentences.DEVICE_WORDS[p.device]}, a step" for p in found)]

    def cell(p, seconds: float) -> str:
        return f"{sentences.signed(seconds)} ({sentences.share(p, seconds)})"

    rows = [[words, *(cell(p, p.parts_s[part]) for p in found)] for part, words in LOOP_PARTS.items()]
    rows.append(
        ["outside the parts: the loop's bookkeeping, each epoch's iterator", *(cell(p, p.outside_s) for p in found)]
    )
    rows.append(["the step", *(duration(p.step_s) for p in found)])
    return table(header, rows, "l" + "r" * len(found))


def fixed_costs_table(m: Machine) -> str:
    """What the probes measured, one column per device; a pair of rows per Keras probed."""
    if not m.costs:
        return ""
    devices, compiled = list(m.costs), registry.sole_rung(Role.COMPILED_EPOCH)

    def field(key: str):
        return lambda costs: getattr(costs, key)

    def keras_fit(framework: str, key: str):
        return lambda costs: getattr(costs.keras(framework), key) if costs.keras(framework) else None

    keras_probed = list(dict.fromkeys(k.framework for costs in m.costs.values() for k in costs.keras_fit))
    keras_rows = []
    for framework in keras_probed:
        name = catalogue.framework(framework).label
        keras_rows += [
            (f"{name}: fixed cost of a fit epoch (derived)", keras_fit(framework, "epoch_fixed_s"), duration),
            (f"{name}: a step inside fit (derived)", keras_fit(framework, "step_s"), duration),
        ]
    readings = [
        ("one eager torch op", field("eager_op_s"), duration),
        (
            "ops the original step runs (cpu: leaf aten ops, none below them; cuda: kernels)",
            field("ops_per_step"),
            lambda v: num(v, 0),
        ),
        ("the original step on a batch already on the device", field("seed_step_s"), duration),
        ("empty torch.cuda.synchronize()", field("sync_s"), duration),
        ("replay of a one-kernel CUDA graph", field("graph_replay_s"), duration),
        ("one kernel inside a CUDA graph", field("graph_kernel_s"), duration),
        *keras_rows,
        (
            f"{compiled.framework} `{compiled.name}`: one compiled epoch call",
            field("fused_call_s"),
            duration,
        ),
        ("… of which inside its one fused kernel", field("fused_kernel_s"), duration),
    ]
    rows = [[label, *(show(read(m.costs[d])) for d in devices)] for label, read, show in readings]
    rows = [row for row in rows if any(cell != "–" for cell in row[1:])]  # readings no device took
    return table(["median of repeated timings", *devices], rows, "l" + "r" * len(devices))


def paused_table(m: Machine) -> str:
    """Every run of each rung whose runs paused after their last epoch: not one number, but both groups."""
    rows = [
        [f"{rung.pair} `{rung.variant}`", run.run_id, duration(run.result_s), duration(run.fit_end_s)]
        for rung in m.answer.paused
        for run in rung.runs
    ]
    return table(["rung", "run", "time to result", "pause after the last epoch"], rows, "llrr") if rows else ""


def crossover_table(m: Machine) -> str:
    if m.sweep_table.empty:
        return ""
    devices = [d for d in catalogue.DEVICES if f"{d}_step_s" in m.sweep_table.columns]
    rows = []
    for row in m.sweep_table.itertuples(index=False):
        step_times = [duration(getattr(row, f"{d}_step_s")) for d in devices]
        rows.append([str(row.hidden_units), str(row.batch_size), *step_times, num(row.cpu_over_cuda)])
    header = ["width", "batch", *(f"{d} per step" for d in devices), "cpu / cuda"]
    return table(header, rows, "r" * len(header))


def phases_table(m: Machine) -> str:
    rows = [
        [f"{s.pair} `{s.variant}`", *(num(getattr(s, f"{phase}_s"), 3) for phase in PHASES), num(s.median_s)]
        for s in m.summary.itertuples(index=False)
    ]
    header = ["rung", *PHASES.values(), "timing point"]
    return table(header, rows, "l" + "r" * (len(header) - 1))


def quality_table(m: Machine) -> str:
    rows = [
        [f"{s.pair} `{s.variant}`", num(s.test_mse, 2, "e"), num(s.train_r2, 4), f"{int(s.converged)}/{s.runs}"]
        for s in m.summary.itertuples(index=False)
    ]
    return table(["rung", "test MSE", "train R²", "converged"], rows, "lrrr")


def not_completed_table(m: Machine) -> str:
    """Runs that did not complete or converge and probes that did not measure: a row per status and reason."""
    found: dict[tuple[str, str], list[str]] = {}
    for r in m.attention.itertuples():
        why = (r.status, "" if pd.isna(r.reason) else r.reason) if r.status != "ok" else ("not converged", "")
        found.setdefault(why, []).append(r.run_id.rsplit("-", 1)[0])
    rows = []
    for (status, reason), rungs in found.items():
        counts = pd.Series(rungs).value_counts(sort=False)
        rows.append([status, reason, f"{n_runs(len(rungs))}: " + ", ".join(f"{k} ({n})" for k, n in counts.items())])
    for p in m.probes_not_measured:
        rows.append([p.status, p.reason or "", f"the {p.framework} {p.device} probe"])
    for sweep in m.sweeps:
        if sweep.status != "ok":
            rows.append([sweep.status, sweep.reason or "", f"the {sweep.device} crossover sweep"])
    merged: dict[tuple[str, str], list[str]] = {}
    for status, reason, what in rows:
        merged.setdefault((status, reason), []).append(what)
    rows = [[status, reason, "; ".join(what)] for (status, reason), what in merged.items()]
    return table(["status", "reason", "what"], rows, "lll") if rows else ""


def rungs_table(m: Machine) -> str:
    """The description of every rung this machine ran, where the ladders' links lead."""
    rows = []
    for s in m.summary.drop_duplicates(["framework", "variant"]).itertuples():
        try:
            what = registry.rung(s.framework, s.variant).removes
        except catalogue.UnknownRung:
            what = "(not in this commit's catalogue)"
        rows.append([s.framework, f"`{s.variant}`", what])
    return table(["framework", "rung", "what it removes, from the rung before"], rows, "lll") if rows else ""


def cuda_epochs_per_block(m: Machine) -> list[int]:
    """The epochs per clock reading of the machine's completed cuda runs: 50, or 1 in older records."""
    done = m.runs[(m.runs["device"] == "cuda") & (m.runs["status"] == "ok") & (m.runs["blocks"] > 0)]
    return sorted({round(epochs / blocks) for epochs, blocks in zip(done["epochs"], done["blocks"], strict=True)})


def describe_container(container: tuple | None) -> str:
    if container is None:
        return "none (host)"
    engine, image, image_id = container
    short = (image_id or "").removeprefix("sha256:")[:12]
    return " ".join(filter(None, [engine, image or "(image not named)", short and f"({short})"]))


def describe_cpu(cpu: tuple | None) -> str:
    if cpu is None:
        return "not recorded"
    vendor, family, model, stepping, flags = ("?" if part is None else part for part in cpu)
    return f"{vendor} {family}/{model}/{stepping}, flags {flags}"


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
        ["load average (1 min): what else ran, not the slow state", at_start_and_end("load_1min", 2)],
        ["CPU clock (MHz), as the machine reports it", at_start_and_end("cpu_mhz", 0)],
        ["peak memory of a run (MB)", memory],
    ]


def environment_table(facts: dict[str, tuple], load: dict[str, tuple[float, float]]) -> str:
    """What one machine's runs ran on and alongside: hardware, software, container, job, commit and load."""

    def values(fact: str, show=str) -> str:
        return ", ".join(sorted({show(value) for value in facts[fact]}))

    clock = [mhz for mhz in facts["cpu_mhz"] if mhz is not None]
    rows = [
        ["CPU", values("cpu", lambda c: f"{c[0]} ({c[1]} logical CPUs)")],
        ["CPU vendor family/model/stepping, flags sha256", values("cpu_id", describe_cpu)],
        ["reported CPU clock (MHz)", span(min(clock), max(clock), 0) if clock else "not recorded"],
        ["kernel", values("kernel", lambda k: k or "not recorded")],
        [
            "virtualization",
            values("virtualization", lambda v: {"none": "none (bare metal)"}.get(v, v or "not recorded")),
        ],
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


def machine_page(report: Report, m: Machine) -> dict:
    extra = [
        sentences.gpu_split_line(m),
        sentences.keras_split_line(m),
        *sentences.epoch_floor_lines(m),
        *sentences.keras_backends_line(m),
        sentences.crossover_line(m),
        sentences.dead_start_line(m),
        sentences.compile_line(m),
    ]
    return {
        "setup": sentences.setup_line(report, m),
        "gpu": sentences.gpu_line(report, m),
        "keras": sentences.keras_line(m),
        "why": sentences.why_line(m),
        "aa": sentences.aa_line(m),
        "busy": sentences.archived_busy_line(report, m),
        "headline": headline_table(m),
        "question": question_table(m),
        "ratios": ratio_table(m),
        "views": views_table(m),
        "reference_step": sentences.reference_step_line(m),
        "floors": sentences.floors_line(m),
        "host_syncs": sentences.host_syncs_line(m),
        "ladders": {ladder.pair: ladder_table(ladder) for ladder in m.ladders},
        "cuda_epochs_per_block": cuda_epochs_per_block(m),
        "loop_parts": loop_parts_table(m),
        "loop_parts_lines": [line for device in catalogue.DEVICES for line in sentences.loop_parts_lines(m, device)],
        "fixed_costs": fixed_costs_table(m),
        "step_parts": [
            line
            for device in catalogue.DEVICES
            for line in (sentences.step_parts_line(m, device), sentences.keras_step_line(m, device))
            if line
        ],
        "paused": sentences.pause_line(m),
        "paused_runs": paused_table(m),
        "more": [line for line in extra if line],
        "crossover": crossover_table(m),
        "phases": phases_table(m),
        "quality_line": sentences.quality_line(m),
        "quality": quality_table(m),
        "not_completed": not_completed_table(m),
        "failed_runs": [f"results/runs/{run_id}.json" for run_id in m.failed_runs],
        "rungs": rungs_table(m),
        "environment": environment_table(m.environment, m.load),
    }


def busy_table(found: BusyCore) -> str:
    """The busy-core study's ratios, idle and beside the busy core, then what the busy core did to each rung."""
    rows = []
    pairs = [("Keras 2 `seed` / torch `seed`", *found.keras_over_torch)]
    pairs += [(f"{framework} `one_thread` / `seed`", idle, busy) for framework, idle, busy in found.one_thread]
    for name, idle, busy in pairs:
        rows += [[name, "to a result", times(idle.result), times(busy.result)]]
        rows += [["", "per step", times(idle.step), times(busy.step)]]
    for rung, views in found.busy_over_idle:
        rows += [[f"{rung.label}: busy / idle", "to a result", "", times(views.result)]]
        rows += [["", "per step", "", times(views.step)]]
    return table(["ratio", "view", "idle", "beside one busy core"], rows, "llrr")


def era_tables(found: EraStudy) -> tuple[str, str, str]:
    """The era study's tables: each stack's loops and Keras 2 over torch; each change's newer over older stack; torch's
    step part by part on each stack that ran `parts` ("" where none did)."""
    views = list(claims.ERA_VIEWS.values())
    rows = [
        [
            f"`{s.stack}`",
            s.versions,
            duration(s.step["torch"]),
            duration(s.step["tf_keras"]),
            *(times(getattr(s.keras_over_torch, view)) for view in claims.ERA_VIEWS),
        ]
        for s in found.stacks
    ]
    header = ["stack", "Python and frameworks", "torch per step", "Keras 2 per step"]
    stacks = table(header + [f"Keras 2 / torch, {view}" for view in views], rows, "llrrrrr")
    rows = [
        [
            f"`{step.newer}` / `{step.older}`: {step.what}" if number == 0 else "",
            claims.LOOP_NAMES[loop],
            *(times(getattr(ratios, view)) for view in claims.ERA_VIEWS),
        ]
        for step in found.steps
        for number, (loop, ratios) in enumerate(step.loops)
    ]
    steps = table(["newer / older stack: what changed", "loop", *views], rows, "llrrr")
    read = [s for s in found.stacks if s.parts]
    rows = [[words, *(duration(s.part_s(part)) for s in read)] for part, words in claims.PART_WORDS.items()]
    rows.append(["the step", *(duration(s.parts.step_s) for s in read)])
    parts = table(["part of torch's step, a step", *(f"`{s.stack}`" for s in read)], rows, "l" + "r" * len(read))
    return stacks, steps, parts if read else ""


def release_tables(found: EraStudy) -> tuple[str, str, str]:
    """The release sweep's tables: Keras 2 on each release; each step between neighbouring releases, Holm-corrected;
    each cause rung's effect on today's stack beside the step it is suspected of."""
    views = list(claims.ERA_VIEWS.values())
    releases = [s for s in found.stacks if s.stack in RELEASES]
    rows = [
        [f"`{s.stack}`", s.versions, duration(s.step["tf_keras"]), duration(s.result["tf_keras"])] for s in releases
    ]
    stacks = table(["release", "Python and TensorFlow", "Keras 2 per step", "Keras 2 to a result"], rows, "llrr")
    rows = [
        [step.what, *(times(getattr(step.keras, view)) for view in claims.ERA_VIEWS), approx(step.keras.step.p_value)]
        for step in found.releases
    ]
    steps = table(["newer / older release", *views, "Holm's p, per step"], rows, "lrrrr")
    rows = [
        [
            f"{cause.cause}: `{cause.rung}`",
            claims.LOOP_NAMES[cause.framework],
            times(cause.effect.step),
            times(cause.effect.result),
            cause.suspected.what if cause.suspected else "–",
            times(cause.suspected.keras.step) if cause.suspected else "–",
        ]
        for cause in found.causes
    ]
    header = ["cause: its rung", "loop", "`seed` / rung, per step", "to a result", "release step", "its step, per step"]
    return stacks, steps, table(header, rows, "llrrlr") if rows else ""


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE.parent),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # Markdown, not HTML
    )


def render_markdown(
    report: Report,
    plot_link: str = "report/timings.png",
    crossover_link: str = "report/crossover.png",
    ladder_link: str = "report/ladder.png",
    breakdown_link: str = "report/breakdown.png",
) -> str:
    """The whole report as Markdown text; the links are the charts' paths relative to it."""
    pages = [(m, machine_page(report, m)) for m in report.machines]
    sweep = report.release_sweep
    era = report.era if not sweep else None  # an era study's, not a release sweep's
    template = environment().get_template(TEMPLATE.name)
    return template.render(
        title=sentences.title(report),
        ratios=sentences.RATIOS,
        significance=SIGNIFICANCE,
        busy=claims.busy_lines(report.busy) if report.busy else None,
        busy_table=busy_table(report.busy) if report.busy else None,
        era=claims.era_lines(era) if era else None,
        era_tables=era_tables(era) if era else None,
        releases=claims.release_lines(sweep) if sweep else None,
        release_tables=release_tables(sweep) if sweep else None,
        report=report,
        pages=pages,
        plot_link=plot_link,
        crossover_link=crossover_link,
        ladder_link=ladder_link,
        breakdown_link=breakdown_link,
    )
