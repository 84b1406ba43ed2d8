"""The report's sentences, each a small function of the report model; report.md.j2 only lays them out."""

from __future__ import annotations

from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.catalogue import Role, pair_name
from tiny_mlp_bench.dataset import train_rows
from tiny_mlp_bench.question import ASKERS_KERAS, ASKERS_RUN, TODAYS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report import claims
from tiny_mlp_bench.report.answer import PAUSED_S, ArchivedGpu
from tiny_mlp_bench.report.busy_core import idle_label
from tiny_mlp_bench.report.cells import duration, n_runs, pct, times
from tiny_mlp_bench.report.crossover_map import Crossover
from tiny_mlp_bench.report.inference import Interval, Ratio
from tiny_mlp_bench.report.ladder import RungResult
from tiny_mlp_bench.report.loop_parts import FETCH_AGREEMENT, FETCH_PARTS, LoopParts
from tiny_mlp_bench.report.model import Machine, Report
from tiny_mlp_bench.report.step_parts import StepParts
from tiny_mlp_bench.timing import LOOP_PARTS

TITLE = "Why is PyTorch on a GPU slower than on a CPU, and slower than Keras?"
BUSY_TITLE = "Does a busy core change the question's order? torch and Keras 2 on a CPU, idle and beside one busy core"
ERA_TITLE = "Was Keras faster than torch on the software of the asker's time? The question's CPU loops on each stack"
RELEASES_TITLE = "Which release moved it? Keras 2's `fit` on one TensorFlow release after another"
NOT_THE_QUESTION_TITLE = "The pipeline at work on another workload than the question's: it answers nothing"
# Said once, where the report's ratios first appear: a ratio need not be the quotient of the two times beside it.
RATIOS = (
    "Times are geometric means over runs; a ratio is the median of every run-against-run ratio (Hodges–Lehmann), so "
    "it need not be the quotient of two times; each comes with its 95% interval."
)
KERAS_2 = catalogue.framework(ASKERS_KERAS).label
KERAS_3 = catalogue.framework(TODAYS_KERAS).label


def is_torch_loop(rung: RungResult) -> bool:
    """Whether the rung is the original torch loop, the rung every ratio to "the original loop" is over."""
    return (rung.framework, rung.variant) == (TORCH, askers_rung(TORCH))


def rung_name(rung: RungResult) -> str:
    """What a rung is, in plain words where it is the question's own code."""
    if is_torch_loop(rung):
        return f"the original torch loop on {rung.device}"
    if (rung.framework, rung.variant) == (ASKERS_KERAS, askers_rung(ASKERS_KERAS)):
        return f"the original Keras `fit` on {rung.device}"
    return f"{rung.pair} `{rung.variant}`"


def view_of(m: Machine, framework: str, variant: str | None, device: str) -> RungResult | None:
    pair = pair_name(framework, device)
    return next((v for v in m.views if (v.pair, v.variant) == (pair, variant)), None)


def seed_view(m: Machine, framework: str, device: str) -> RungResult | None:
    return view_of(m, framework, askers_rung(framework), device)


def title(report: Report) -> str:
    """The report's title as fits its study: the question's, the busy-core study's, or another workload's."""
    if report.busy:
        return BUSY_TITLE
    if report.era:
        return RELEASES_TITLE if report.release_sweep else ERA_TITLE
    return NOT_THE_QUESTION_TITLE if not_the_question(report.parameters) else TITLE


def setup_line(report: Report, m: Machine) -> str:
    env = m.environment
    gpu = ", ".join(name for name in env["gpu"] if name) or None
    machine = "; ".join(claims.machine_name(model, count, gpu) for model, count in env["cpu"])
    p = report.parameters
    settings = (
        f"a 2→{p['hidden_units']}→1 ReLU MLP, Adam at {p['learning_rate']:g}, batch {p['batch_size']}, "
        f"{p['epochs']:,} epochs of {p['n_train']} rows"
    )
    return f"{not_the_question(p)}{runs_line(m)} Host `{m.label}`, {machine}: {settings}."


def not_the_question(parameters: dict) -> str:
    """A warning first where the study ran another workload than the asker's; "" where it ran the asker's."""
    askers = ASKERS_RUN | {"n_train": train_rows(ASKERS_RUN["n_rows"])}
    differ = [
        f"{parameters[key]:,} {what}, not {askers[key]:,}"
        for key, what in (("epochs", "epochs"), ("n_train", "training rows"), ("batch_size", "rows a batch"))
        if parameters[key] != askers[key]
    ]
    differ += [
        f"{what} {parameters[key]:g}, not {askers[key]:g}"
        for key, what in (("hidden_units", "hidden units"), ("learning_rate", "learning rate"))
        if parameters[key] != askers[key]
    ]
    if not differ:
        return ""
    return (
        f"**Not the question's run** ({'; '.join(differ)}): its numbers show the pipeline at work and answer nothing. "
    )


def runs_line(m: Machine) -> str:
    """What completed per device, what did not and why: "37 cpu runs completed (...); the 30 cuda runs were skipped"."""
    runs = m.runs

    def count(n: int, device: str) -> str:
        return n_runs(n, f"{device} run")

    completed = [
        count(n, device) for device, n in runs[runs["status"] == "ok"].groupby("device", sort=False).size().items()
    ]
    line = f"{' and '.join(completed) or 'No run'} completed"
    counts = sorted({r.rung.result.runs for r in m.headline if r.role == "question" and r.rung.result})
    if counts:
        line += f" ({counts[0] if len(counts) == 1 else f'{counts[0]}–{counts[-1]}'} of each original loop)"
    missed = []
    for (device, status), group in runs[runs["status"] != "ok"].groupby(["device", "status"], sort=False):
        # Every backend's reason for a skip on a machine without a usable GPU begins "no CUDA device".
        why = ": no GPU" if group["reason"].fillna("").str.startswith("no CUDA device").all() else ""
        every = len(group) == (runs["device"] == device).sum()
        verb = f"{'was' if len(group) == 1 else 'were'} skipped" if status == "skipped" else status
        missed.append(f"{'the ' if every else ''}{count(len(group), device)} {verb}{why}")
    return f"{line}{'; ' if missed else ''}{'; '.join(missed)}."


def gpu_line(report: Report, m: Machine) -> str:
    """The GPU against the CPU for the original torch loop: the GPU verdict here, or another study's, quoted."""
    cuda, cpu = seed_view(m, TORCH, "cuda"), seed_view(m, TORCH, "cpu")
    if cuda and cpu and m.answer.gpu.ratio:
        return claims.gpu_claim(m.answer.gpu.ratio)
    if cuda and cpu:
        return (
            "the original torch loop completed on the GPU and on the CPU, but no pair of its runs is of the kind "
            "the GPU verdict admits (idle, converged, its per-step window the question's epochs, one thread count), "
            "so this study makes no GPU-against-CPU claim."
        )
    if cuda:
        return "the original torch loop completed on the GPU; no run on this CPU completed, so there is no ratio."
    return f"no GPU run of the original loop completed here. {archived_gpu_line(report)}"


def archived_gpu_line(report: Report) -> str:
    """Another study's GPU verdict, its own ratio of its own machine's GPU to its CPU: never its seconds beside ours."""
    g: ArchivedGpu | None = report.archived_gpu
    if g is None:
        if report.no_archive_qualifies:
            return "No archive holds a completed GPU run of it either."
        return "No archive was asked for one."
    where = f"The archive `{g.archive}` ({g.gpu}, {g.date})"
    if g.ratio is None:
        return f"{where} ran it on the GPU but has no pair of runs the GPU verdict admits, so it gives no ratio."
    modified = f" ({g.modified} of its runs from a modified tree)" if g.modified else ""
    return f"{where}, on its own machine{modified}: {claims.gpu_claim(g.ratio)}"


def archived_busy_line(report: Report, m: Machine) -> str | None:
    """The newest archived busy-core study of this machine's kind, in one line, where the config asked for one."""
    if not report.busy_quote_asked or m.label != idle_label(m.label):
        return None
    found = report.archived_busy.get(m.label)
    if found is None:
        return "no archived busy-core study ran on this machine kind; `make busy` runs one."
    said = claims.busy_lines(found.found)[0]
    return (
        f"the archive `{found.archive}` ({found.date}, this machine kind, {found.runs}+ runs a side), one study, "
        f"found: {said[0].lower()}{said[1:]}"
    )


def keras_claim_of(m: Machine) -> str | None:
    """Keras 2 against the original torch loop on the CPU, with its pauses where it paused; None where either loop
    has no completed run here."""
    k = m.answer.keras
    keras, torch = seed_view(m, ASKERS_KERAS, "cpu"), seed_view(m, TORCH, "cpu")
    if not (keras and torch and k.ratio):
        return None
    pauses = k.pause and claims.Pauses(k.pause.paused, k.pause.runs, k.pause.longest_s)
    return claims.keras_claim(keras.result, torch.result, k.ratio, k.ratio_without_pauses, pauses)


def keras_line(m: Machine) -> str:
    """The first screen's Keras line: the claim on the CPU, or which loop did not run."""
    found = keras_claim_of(m)
    if found:
        return f"on the CPU, {found}"
    missing = KERAS_2 if not seed_view(m, ASKERS_KERAS, "cpu") else "torch"
    return f"not measured here: no completed {missing} run of the original loop on the CPU."


def why_line(m: Machine) -> str:
    """Why a step this small is slow: fixed costs, not arithmetic; on the GPU, the launches or the host's share.
    The probes' split of each step into parts is in the report's fixed costs (step_parts_line)."""
    cpu = seed_view(m, TORCH, "cpu")
    floor = floor_view(m, "cpu")
    parts = []
    if cpu and cpu.step:
        parts.append(claims.why_claim(cpu.step, floor.step if floor else None))
    if "cpu" in m.loop_parts:
        parts += [largest_parts_line(m.loop_parts["cpu"]), data_on_device_gain(m, "cpu")]
    gpu = m.answer.gpu
    if gpu.launch_s:
        parts.append(
            f"On the GPU each step launches {gpu.kernels} kernels at {duration(gpu.eager_op_s)} each: "
            f"{duration(gpu.launch_s)} before any arithmetic."
        )
    parts.append(graph_removes_line(m))
    if not any(parts):
        return "not measured here: no completed run of the numba floor or of the original torch loop."
    return " ".join(filter(None, parts))


DEVICE_WORDS = {"cpu": "CPU", "cuda": "GPU"}


def part_said(p: LoopParts, part: str) -> str:
    return f"{LOOP_PARTS[part]}, {duration(p.parts_s[part])} ({share(p, p.parts_s[part])})"


def largest_parts_line(p: LoopParts) -> str:
    """The three largest parts of a device's step, as the `parts` rung read them."""
    first, second, third = p.largest[:3]
    return (
        f"Of the {DEVICE_WORDS[p.device]} step as the `parts` rung read it, {duration(p.step_s)}, the largest parts "
        f"were {part_said(p, first)}, {part_said(p, second)} and {part_said(p, third)}."
    )


def keras_step_line(m: Machine, device: str) -> str | None:
    """How the Keras probe derives Keras 2's step and fit epoch, and why the runs' step is neither: an epoch's time
    over its steps holds a share of the epoch's fixed cost; None where the probe did not measure both epochs."""
    costs = m.costs.get(device)
    fit = costs.keras(ASKERS_KERAS) if costs else None
    if fit is None or fit.one_step_epoch_s is None or fit.many_step_epoch_s is None:
        return None
    n = fit.steps_per_epoch
    runs = seed_view(m, ASKERS_KERAS, device)
    said = (
        f"{KERAS_2}'s step and epoch on the {DEVICE_WORDS[device]} are derived, not timed apart: its probe's epoch of "
        f"one step took {duration(fit.one_step_epoch_s)} and of {n} steps {duration(fit.many_step_epoch_s)} (medians "
        f"of {fit.epochs_timed} epochs each), so a step inside `fit` is their difference over {n - 1}, "
        f"{duration(fit.step_s)}, and the fit epoch's fixed cost the one-step epoch less that step, "
        f"{duration(fit.epoch_fixed_s)}"
    )
    if runs and runs.step:
        said += (
            f". The runs' step, {duration(runs.step.estimate)}, is a block's time over its steps, so it holds a "
            f"{n}th of that fixed cost, {duration(fit.epoch_fixed_s / n)}, which the derived step leaves out; the "
            f"probe's own epoch of {n} steps over {n} is {duration(fit.many_step_epoch_s / n)}"
        )
    return said + "."


def fetch_check_lines(p: LoopParts) -> list[str]:
    """The rung's fetch against the torch probe's readings of it with no clock inside a loop: between the loader
    alone and the loop less its steps, where the probe read both; else against the loader alone (older probes)."""
    on = DEVICE_WORDS[p.device]
    if p.around_step_bracketed is not None:
        verdict = (
            "between the two, as it should be" if p.around_step_bracketed else "outside them: the parts misplace time"
        )
        return [
            f"{on}: the loop's time around the step (the fetch, the copy and its bookkeeping), "
            f"{duration(p.around_step_median_s)} a step in the median block as the clock read it, against the torch "
            f"probe's medians with no clock inside a loop: the DataLoader alone, {duration(p.loader_alone_s)} a "
            f"batch, and the loop less as many steps on one batch, {duration(p.between_steps_s)}, which also holds "
            f"what a fetch between them costs the step; {verdict}."
        ]
    if p.fetch_over_alone is None:
        return []
    if p.fetch_agrees:
        verdict = f"the two agree within {FETCH_AGREEMENT:.0%}"
    else:
        more = "more" if p.fetch_over_alone > 1 else "less"
        verdict = (
            f"they are more than {FETCH_AGREEMENT:.0%} apart: the fetch costs {more} inside the loop than alone, "
            "and these runs do not say why"
        )
    return [
        f"{on}: the fetch read inside the loop, {duration(p.parts_s['fetch'])} a step, against the DataLoader "
        f"timed alone by the torch probe, {duration(p.loader_alone_s)} a batch: {p.fetch_over_alone:.2f}×; {verdict}."
    ]


def data_on_device_gain(m: Machine, device: str) -> str | None:
    """What removing the largest parts outside the arithmetic gave: the rung that keeps the data on the device against
    `seed`, per step; None where it did not run."""
    rung = registry.rung_with_role(TORCH, Role.DATA_ON_DEVICE).name
    lighter = view_of(m, TORCH, rung, device)
    if lighter is None or lighter.step_vs_seed is None:
        return None
    return f"`{rung}` keeps the data on the device, dropping the fetch and the copy; " + claims.comparison(
        lighter.step_vs_seed, f"`{rung}`", "`seed`", "per step"
    )


def data_on_device_line(m: Machine, p: LoopParts) -> str | None:
    """What the rung that keeps the data on the device saved against the parts it drops and the parts it makes
    cheaper: a check that can fail, as the saving must lie between the two sums."""
    rung = registry.rung_with_role(TORCH, Role.DATA_ON_DEVICE).name
    seed, lighter = seed_view(m, TORCH, p.device), view_of(m, TORCH, rung, p.device)
    if not (seed and seed.step and lighter and lighter.step):
        return None
    saved = seed.step.estimate - lighter.step.estimate
    dropped = p.parts_s["fetch"] + p.parts_s["copy"]
    cheaper = dropped + p.parts_s["zero_grad"] + p.parts_s["optimizer"]
    verdict = (
        "between the two, as it should be" if dropped <= saved <= cheaper else "outside them: the parts misplace time"
    )
    return (
        f"{DEVICE_WORDS[p.device]}: `{rung}` drops the fetch and the copy ({duration(dropped)} a step) and makes "
        f"`zero_grad` and Adam's step cheaper ({duration(cheaper)} with them); it saved {signed(saved)} a step "
        f"(`seed`'s step less its own, the ladder's), {verdict}."
    )


def loop_parts_lines(m: Machine, device: str) -> list[str]:
    """What the device's parts rest on, and the check that can fail: the rung's step against `seed`'s, judged against
    the study's A/A control; the fetch against the probe's readings of it; on a GPU, that the reads serialise it."""
    p = m.loop_parts.get(device)
    if p is None:
        return []
    on = DEVICE_WORDS[device]
    reads = f"{p.reads_per_step} clock reads a step" if p.reads_per_step else "its clock reads"
    said = [
        f"{on}: means over {p.blocks} blocks of {n_runs(p.runs)}, so that the parts and what lies outside "
        f"them add up to the step; {reads}, on the `{p.clocksource}` clock source."
    ]
    if p.against_seed is not None:
        cost = f"the `parts` rung's step took {claims.ratio_said(p.against_seed)} as long as `seed`'s per step "
        cost += f"({claims.runs_against(p.against_seed)}): what reading the clock costs"
        if p.within_aa_band is None:
            said.append(f"{on}: {cost}; no A/A control ran here to judge it against.")
        else:
            verdict = (
                "within what identical code differs by here, so the parts describe the uninstrumented step"
                if p.within_aa_band
                else "beyond what identical code differs by here, so the parts overstate the uninstrumented step"
            )
            said.append(f"{on}: {cost}, {verdict} (the A/A control's ×{p.aa_band:.2f} either way).")
    said += fetch_check_lines(p)
    if p.fetch_parts_s is not None:
        each = ", ".join(f"{words} {duration(p.fetch_parts_s[part])}" for part, words in FETCH_PARTS.items())
        said.append(
            f"{on}: the DataLoader's fetch of a batch in its own parts, each timed alone by the torch probe: {each}; "
            f"the loader's own machinery, the rest of its {duration(p.loader_alone_s)} alone, "
            f"{signed(p.loader_machinery_s)}."
        )
    if line := data_on_device_line(m, p):
        said.append(line)
    if device == "cuda":
        said.append(
            f"{on}: each read waits for the GPU first, which serialises the step: a part holds the kernels it "
            "launched, and the parts' step can exceed `seed`'s asynchronous one (the ratio above says by how much)."
        )
    return said


def graph_removes_line(m: Machine) -> str | None:
    """The ladder's own measure of the host's cost of a cuda step: the original loop's step less the same step
    replayed as one CUDA graph; None where either has no step here."""
    seed = seed_view(m, TORCH, "cuda")
    graphed = view_of(m, TORCH, registry.rung_with_role(TORCH, Role.GRAPHED_STEP).name, "cuda")
    if not (seed and seed.step and graphed and graphed.step):
        return None
    removed = seed.step.estimate - graphed.step.estimate
    return (
        f"The ladder's own measure of the host's cost per GPU step, `seed`'s step less `{graphed.variant}`'s (the "
        f"step replayed as one CUDA graph, the host's calls gone): {duration(seed.step.estimate)} less "
        f"{duration(graphed.step.estimate)}, {signed(removed)} ({pct(removed / seed.step.estimate, 0)} of the step; "
        f"medians of {medians_of(seed.step.runs, graphed.step.runs)})."
    )


def medians_of(a: int, b: int) -> str:
    """The runs behind two medians: "3 and 2 runs", "1 run each"."""
    return f"{n_runs(a)} each" if a == b else f"{a} and {b} runs"


def step_parts_line(m: Machine, device: str) -> str | None:
    """The device's step as its torch probe split it (report/step_parts.py); that it was not split, where the probe
    predates the parts; None where no torch probe timed the step."""
    costs = m.costs.get(device)
    if costs is None or costs.seed_step_s is None:
        return None
    on = DEVICE_WORDS[device]
    p = costs.step_parts
    if p is None:
        measures = "the next GPU study's probe measures them" if device == "cuda" else "a new probe measures them"
        return (
            f"The {on}'s torch probe predates measuring the step's parts: its aten ops' own time, launch time and "
            f"remainder were not measured; {measures}."
        )
    step = Interval(p.step_s, p.step_low_s, p.step_high_s, p.repeats)
    runs = seed_view(m, TORCH, device)
    loop = m.loop_parts.get(device)
    fetch = (
        f"the DataLoader's fetch of each batch and its copy ({duration(loop.parts_s['fetch'] + loop.parts_s['copy'])} "
        "a step as the `parts` rung read them)"
        if loop
        else "the DataLoader's fetch of each batch"
    )
    beside = (
        f"; the runs' step, {duration(runs.step)}, also holds {fetch}, which the probe's batch already in memory "
        "leaves out"
        if runs and runs.step
        else ""
    )
    timed = (
        f"The torch probe timed the {on} step on a batch already in memory at {duration(step)}: the median of "
        f"{p.repeats} repeats and their range, a {p.confidence:.0%} interval for the median{beside}"
    )
    if not p.resolved:
        return (
            f"{timed}. The aten ops' self time under torch.profiler, {duration(p.aten_self_s)}, is no more than "
            f"the profiler's measured cost of them, {signed(p.profiler_cost_s)} per op × {p.aten_ops} aten calls a "
            f"step ({signed(p.profiler_cost_s * p.aten_ops)}). The two were timed apart, and a slower stretch under "
            "either one can do this: this probe does not split the step into the ops' own time and a remainder."
        )
    said = [
        timed,
        f"The aten ops' own host time was {signed(p.aten_own_s)} ({share(p, p.aten_own_s)}): their self time under "
        f"torch.profiler, {duration(p.aten_self_s)}, less its {signed(p.profiler_cost_s)} per op × {p.aten_ops} aten "
        "calls a step, nested ones included",
    ]
    if device == "cuda":
        said.append(
            f"The CUDA runtime's {p.launch_calls} launch calls took {signed(p.launch_s)} ({share(p, p.launch_s)})"
        )
        if p.launches_counted_twice:
            said.append(
                f"{p.launches_counted_twice:g} of them a step lay inside an op's time though the profiler did not "
                "nest them below it: their time is in both parts"
            )
        owner = "no aten op or launch call owns: Python, the autograd engine's glue, other runtime calls and waits"
    else:
        owner = "no aten op owns: Python and the autograd engine's glue"
    said.append(f"The remainder, {signed(p.remainder_s)} ({share(p, p.remainder_s)}), is what {owner}")
    if p.accounts_for_step:
        said.append("The measured parts account for the step within that range")
    elif p.remainder_s > 0:
        said.append("The measured parts fall short of that range: the remainder is more than the step's spread")
    else:
        said.append(
            "The measured parts exceed that range: the remainder is negative, so the ops' profiled self time, less "
            "the profiler's measured cost, still overstates them"
        )
    return ". ".join(said) + "."


def signed(seconds: float) -> str:
    """A time that can be negative, with a minus sign."""
    return f"−{duration(-seconds)}" if seconds < 0 else duration(seconds)


def share(parts: StepParts, part_s: float) -> str:
    """A part's share of the step, with a minus sign where it is negative."""
    return pct(parts.share(part_s), 0).replace("-", "−")


def floor_view(m: Machine, device: str) -> RungResult | None:
    floor = registry.sole_rung(Role.FLOOR)
    return view_of(m, floor.framework, floor.name, device)


def aa_line(m: Machine) -> str | None:
    aa = m.answer.aa_control
    return aa and claims.aa_claim(aa.pair, aa.control, aa.twin, aa.result, aa.step)


def pause_line(m: Machine) -> list[str]:
    """How often and how long each rung paused after its last epoch, and whether autotuning off paused less (Fisher)."""
    lines = []
    for rung in m.answer.paused:
        longest = max(r.fit_end_s for r in rung.runs if r.paused)
        lines.append(
            f"{rung.pair} `{rung.variant}` paused {duration(PAUSED_S)} or more after its last epoch in "
            f"{rung.paused} of {len(rung.runs)} runs, up to {duration(longest)}."
        )
    pause = m.answer.keras.pause
    if pause and pause.fisher_p is not None:
        seen = (
            f"`{pause.pause_free_variant}` paused after the last epoch of a `fit` (the per-step window's "
            f"included) in {pause.pause_free_paused_anywhere} of {pause.pause_free_runs} runs, `seed` in "
            f"{pause.seed_paused_anywhere} of {pause.runs} (Fisher's exact test, p = {pause.fisher_p:.2g})"
        )
        verdict_text = (
            "it removes the pause" if pause.pause_free_removes else "too few runs to tell whether it removes it"
        )
        lines.append(f"{KERAS_2}: {seen}: {verdict_text}.")
    return lines


def headline_rows(m: Machine) -> list[list[str]]:
    """The first screen's table: rung, runs, time to result and per step vs the original loop, canary's slow share."""
    rows = []
    for row in m.headline:
        v = row.rung
        name = rung_name(v) if row.role == "question" else f"{row.role} on {v.device}: {v.pair} `{v.variant}`"
        if row.tied_with:
            name += f", {tied(row.tied_with)}"
        runs = str(v.result.runs if v.result else 0)
        to_result, per_step = (
            (duration(v.result), relative(v, v.result_vs_seed)),
            (duration(v.step), relative(v, v.step_vs_seed)),
        )
        rows.append([name, runs, *to_result, *per_step, pct(v.slow_share, 0)])
    return rows


def tied(rungs: tuple[str, ...]) -> str:
    """The rungs a headline row's runs do not show it faster than, in words."""
    named = " and ".join(rungs) if len(rungs) <= 2 else f"{len(rungs)} others"
    return f"not shown faster than {named}"


def relative(rung: RungResult, found: Ratio | None) -> str:
    """A cell of the tables' columns of ratios to the original loop: the rung's runs over the original torch loop's
    on its device, 1 for that loop itself, a dash where that loop has no runs there to set it against."""
    if found is not None:
        return times(found)
    return "1" if is_torch_loop(rung) else "–"


def gpu_split_line(m: Machine) -> str | None:
    """The original cuda step split into the GPU's arithmetic (the numba kernel) and the rest."""
    split = m.answer.gpu.gpu_split
    if split is None:
        return None
    arithmetic, driving = split
    return (
        f"On the GPU, the whole step's arithmetic in one numba CUDA kernel takes {duration(arithmetic)}. The other "
        f"{duration(driving)} of the original loop's cuda step is how it drives the GPU: launches, copies and waits."
    )


def keras_split_line(m: Machine) -> str | None:
    """Where Keras 3 on TensorFlow's extra time over Keras 2 goes over the question's epochs (not the probes'), from
    the cpu probes' fixed cost per fit epoch and step inside fit (the fixed costs table)."""
    costs = m.costs.get("cpu")
    old, new = (costs.keras(framework) if costs else None for framework in (ASKERS_KERAS, TODAYS_KERAS))
    if not (old and new):
        return None
    epochs = ASKERS_RUN["epochs"]
    per_epoch = (new.epoch_fixed_s - old.epoch_fixed_s) * epochs
    per_step = (new.step_s - old.step_s) * epochs * new.steps_per_epoch

    def more(value: float) -> str:
        return f"{duration(abs(value))} {'more' if value >= 0 else 'less'}"

    return (
        f"Over 1,000 epochs the probes put {KERAS_3} at {more(per_epoch)} than {KERAS_2} in `fit`'s cost per epoch "
        f"and {more(per_step)} in its steps."
    )


def epoch_floor_lines(m: Machine) -> list[str]:
    """What a Keras step costs with one train-function call per epoch: the part no per-step change removes."""
    return [
        f"{f.pair} with one train-function call per epoch still takes {duration(f.step_s)} a step (medians): the "
        "rest is the fixed cost of each `fit` epoch."
        for f in m.epoch_floors
    ]


def keras_backends_line(m: Machine) -> list[str]:
    """The original Keras `fit` per step on each Keras 3 backend, on each device where one besides Keras 2's ran it."""
    lines, askers = [], catalogue.framework(ASKERS_KERAS).keras_backend
    for device in catalogue.DEVICES:
        found = [(f.keras_backend, v) for f in catalogue.keras_frameworks(3) if (v := seed_view(m, f.name, device))]
        steps = ", ".join(f"{backend} {duration(v.step)}" for backend, v in found if v.step)
        if steps and any(backend != askers for backend, _ in found):
            lines.append(f"The original Keras `fit` per step on {device}, by Keras 3's backend: {steps}.")
    return lines


def crossover_line(m: Machine) -> str | None:
    """Where the GPU starts to win, from the crossover sweep; that it was not measured, where a sweep did not run."""
    missed = [s.device for s in m.sweeps if s.status != "ok"]
    if missed:
        return f"Where the GPU starts to win: not measured, no {' or '.join(missed)} sweep completed."
    if not m.crossovers:
        return None
    found = "; ".join(crossover_words(c) for c in m.crossovers)
    return (
        "Where the GPU starts to win, for torch `sync_free` on random rows already on the device (a win: every "
        f"cuda block faster than every cpu block): {found}."
    )


def crossover_words(c: Crossover) -> str:
    said = f"from batch {c.batch_size}" if c.batch_size is not None else f"never, up to batch {c.largest_batch}"
    if c.overlapping:
        batches = " and ".join(str(b) for b in c.overlapping)
        said += f" (at batch {batches} the two devices' blocks overlap: not ordered)"
    return f"width {c.hidden_units}: {said}"


def dead_start_line(m: Machine) -> str | None:
    """How often the original initialisation starts dead, and what the runs did about it."""
    init = m.initialisation
    if init is None:
        return None
    return (
        f"The original initialisation leaves the output ReLU dead on every row in {init.dead} of {init.draws} "
        f"draws; such a network never trains. Every run starts from a live draw ({m.dead_draws_skipped} dead "
        "ones skipped)."
    )


def reference_step_line(m: Machine) -> str | None:
    """The original torch loop's step as timed here, and its slow blocks: what every absolute time of the study moves
    with, from one machine and day to the next; None where it ran on no device."""
    found = []
    for device in catalogue.DEVICES:
        view = seed_view(m, TORCH, device)
        if view is None or view.step is None:
            continue
        slow = "" if view.slow_share is None else f", {pct(view.slow_share, 0)} of its blocks slow by the canary"
        found.append(f"{duration(view.step)} per step on {device}{slow}")
    if not found:
        return None
    return (
        f"Absolute times are this machine's on this day: the original torch loop took {'; '.join(found)}. A study "
        "on another day, or another machine of the same name, moves every rung with it; compare studies by each "
        "rung's ratio to this loop, not by their seconds."
    )


def floors_line(m: Machine) -> str:
    found = []
    for device in catalogue.DEVICES:
        floor, rung = m.floors.get(device), floor_view(m, device)
        if floor is None:
            found.append(f"on {device} not measured")
        elif floor.measured and rung:
            found.append(f"on {device} {duration(rung.step)} per step, the numba `fused` rung")
        else:
            found.append(
                f"on {device} {duration(floor.step_s)} per step, {floor.kernels} kernels at {duration(floor.kernel_s)}"
                " each inside a CUDA graph (the probes)"
            )
    return f"The floor, the least a step can cost: {'; '.join(found)}."


def host_syncs_line(m: Machine) -> str | None:
    """What the host syncs column counts, where a ladder counted them (torch on cuda)."""
    if not any(ladder.counts_host_syncs for ladder in m.ladders):
        return None
    costs = m.costs.get("cuda")
    each = f", {duration(costs.sync_s)} here" if costs and costs.sync_s else ""
    return (
        "*Host syncs / epoch* counts how often the host waited for the GPU in one more, untimed epoch, as "
        f"torch's sync debug mode counts them; each wait costs at least an empty synchronize{each}."
    )


def quality_line(m: Machine) -> str | None:
    """One line where every completed run converged; None where some did not (the table says which)."""
    done = m.runs[m.runs["status"] == "ok"]
    if done.empty or not done["converged"].eq(True).all():
        return None
    return f"Every one of the {len(done)} completed runs converged (train R² at or above the configured minimum)."


def compile_line(m: Machine) -> str | None:
    """How the compiled rungs' first runs compiled, where one compiled cold beside warm runs."""
    rerun = m.summary[m.summary["cold_compile_runs"] > 0]
    if rerun.empty:
        return None
    firsts = "; ".join(
        f"{s.pair} `{s.variant}` {duration(s.cold_compile_s)} ({n_runs(s.cold_compile_runs)})"
        for s in rerun.itertuples()
    )
    return (
        "A compiled rung's first run compiles cold and is left out of its time to result; its later runs "
        f"reuse the compiler's cache, as a user's do. The cold runs took: {firsts}."
    )
