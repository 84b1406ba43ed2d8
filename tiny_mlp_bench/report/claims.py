"""The answer's claims, each a sentence written once from small typed values: the report and the README's findings
both call them, so that the two never word one claim two ways."""

from __future__ import annotations

from dataclasses import dataclass

from tiny_mlp_bench.kinds import cpu_name
from tiny_mlp_bench.report import across
from tiny_mlp_bench.report.busy_core import BusyCore, Views
from tiny_mlp_bench.report.cells import decimals, duration, figures, spread, times
from tiny_mlp_bench.report.inference import Interval, Ratio


@dataclass(frozen=True)
class Pauses:
    """How often and how long Keras 2's `fit` paused after its last epoch, over its completed runs."""

    paused: int
    runs: int
    longest_s: float


def runs_against(found: Ratio) -> str:
    a, b = found.runs
    return "1 run each" if (a, b) == (1, 1) else f"{a} runs against {b}"


def cannot_order(found: Ratio) -> str:
    """What an unresolved ratio is said as: its value, and that its runs cannot order the two."""
    return f"{times(found)} as long, but {runs_against(found)} cannot order the two"


def comparison(found: Ratio, a: str, b: str, measure: str) -> str:
    """``a`` against ``b`` (``found``: a over b) in one sentence: which is slower, or that the runs cannot tell."""
    if found.resolved:
        word = "slower" if found.estimate > 1 else "faster"
        return f"{measure}, {a} is {word} than {b}: {times(found)} as long, {runs_against(found)}."
    return f"{measure}, the runs cannot tell {a} and {b} apart: {times(found)} as long, {runs_against(found)}."


def gpu_claim(cuda: Interval, cpu: Interval, found: Ratio) -> str:
    """The original torch loop on the GPU against the same machine's CPU, to a result (``found``: cuda over cpu)."""
    head = (
        f"the original torch loop took {duration(cuda)} to a result on the GPU, {duration(cpu)} on the same "
        "machine's CPU"
    )
    if not found.resolved:
        return f"{head}: {cannot_order(found)}."
    if found.estimate > 1:
        return f"{head}: the GPU was slower, {times(found)} as long, as in the question."
    return f"{head}: the GPU was faster, {times(found)} as long, where the question saw it slower."


def keras_claim(
    keras: Interval, torch: Interval, found: Ratio, without_pauses: Ratio | None = None, pauses: Pauses | None = None
) -> str:
    """Keras 2's `fit` against the original torch loop on one CPU, to a result (``found``: Keras over torch), with
    the pauses `fit` made after its last epoch and the ratio less them, where it paused."""
    head = f"Keras 2's `fit` took {duration(keras)} to a result, the torch loop {duration(torch)}"
    if not found.resolved:
        text = f"{head}: {cannot_order(found)}."
    elif found.estimate > 1:
        text = f"{head}: Keras was slower, {times(found)} as long, the reverse of the question's order."
    else:
        text = f"{head}: Keras was faster, {times(found)} as long, as in the question."
    if pauses and pauses.paused and without_pauses:
        less = times(without_pauses) if without_pauses.resolved else cannot_order(without_pauses)
        text += (
            f" In {pauses.paused} of its {pauses.runs} runs `fit` paused after its last epoch, up to "
            f"{duration(pauses.longest_s)}, waiting on tf.data. Less those pauses: {less}."
        )
    return text


def why_claim(torch_step: Interval, floor_step: Interval | None) -> str:
    """Why a step this small is slow: the original torch loop's step on a CPU against the numba floor's."""
    head = f"the original torch loop's step took {duration(torch_step)} on the CPU"
    if floor_step is None:
        # The floor's loop runs many epochs a call: a study of a few epochs times it in one block, no step.
        return f"{head}; this study timed no steady step of the numba loop to set beside it."
    return (
        f"{head}, the same arithmetic compiled into one numba loop {duration(floor_step)}. The rest is fixed cost: "
        "calls, dispatch and Python between them."
    )


def aa_claim(pair: str, control: str, twin: str, result: Ratio, step: Ratio | None) -> str:
    """The A/A control against the rung whose code it runs: what this machine fakes between identical code."""
    per_step = f" and {times(step)} per step" if step else ""
    told = [view for view, found in (("to a result", result), ("per step", step)) if found and found.resolved]
    verdict = f"yet the runs tell the two apart {' and '.join(told)}" if told else "the runs cannot tell the two apart"
    return (
        f"{pair} `{control}` runs `{twin}`'s very code under another name and took {times(result)} as long to a "
        f"result{per_step}: {verdict}. A difference this size is what this machine fakes."
    )


# Each claim across studies as the README's answer words it: what is measured, ``a`` and ``b`` (a over b).
ACROSS_WORDS = {
    across.GPU_RESULT: ("To a result", "the original torch loop on the GPU", "the same loop on the same machine's CPU"),
    across.GPU_FIT: ("In the fit phase alone", "the original torch loop on the GPU", "the same loop on the CPU"),
    across.KERAS_STEP: ("Per step", "Keras 2's `fit`", "the original torch loop"),
    across.KERAS_RESULT: ("To a result", "Keras 2's `fit`", "the original torch loop"),
    across.FIXED_COST: (
        "Per step",
        "the original torch loop",
        "the same arithmetic compiled into one numba loop (the rest of its step is fixed cost: calls, dispatch and "
        "Python)",
    ),
    # Said after "Beside one busy core," (busy_answer).
    across.BUSY_KERAS_RESULT: ("to a result", "Keras 2's `fit`", "the original torch loop"),
    across.BUSY_ONE_THREAD: ("per step", "torch's loop on one thread", "its default thread pool"),
}


def machine_words(kind: tuple) -> str:
    """A machine kind (kinds.archive_kind's second part) in prose: its GPU, then its CPUs."""
    cpu, count, gpu = kind[1]
    cpus = f"{cpu_name(cpu)} with {count} logical CPUs"
    return f"{gpu} ({cpus})" if gpu else cpus


def one_run_a_side(found: Ratio) -> bool:
    return max(found.runs) == 1


def ratio_said(found: Ratio) -> str:
    """A ratio in an across-studies sentence: with its interval; bare where 1 run a side stands behind it, which
    the sentence says once."""
    return f"{figures(found.estimate, decimals(found.estimate))}×" if one_run_a_side(found) else times(found)


def kind_phrase(claim: across.Across, label) -> str:
    """One machine kind's part of a claim: the pooled ratio and each study's where it holds; each study's value and
    what would resolve it where it does not. ``label``: a study's name as the text links it."""
    where = machine_words(claim.kind)
    each = [f"{label(study)} {ratio_said(found)}" for study, found in claim.studies]
    if claim.holds and claim.one_study:
        study = label(claim.studies[0][0])
        return f"{times(claim.pooled)} as long on {where}, one study's finding ({study}){pooled_test(claim)}"
    if claim.holds:
        studies = f"{len(each)} studies ({', '.join(each)})"
        return f"{times(claim.pooled)} as long on {where} over {studies}{pooled_test(claim)}"
    resolved = [found.resolved for _, found in claim.studies]
    if any(resolved):
        each = [text + ("" if done else ", unresolved") for text, done in zip(each, resolved, strict=True)]
    studies = "its one study" if claim.one_study else "the studies"
    lead = "it depends on the study" if any(resolved) else f"{studies} cannot order the two"
    once = " (1 run a side in each)" if all(one_run_a_side(found) for _, found in claim.studies) else ""
    if claim.against:
        power = "; as studies resolve it both ways, more runs a side would not settle it"
    elif claim.runs_needed:
        power = f"; at the spread seen, about {claim.runs_needed} runs a side would resolve it"
    elif once:
        power = f"; the exact test needs {across.fewest_runs()} runs a side at least"
    else:
        power = ""
    return f"on {where} {lead}: {', '.join(each)}{once}{power}{pooled_test(claim)}"


def pooled_test(claim: across.Across) -> str:
    """The GPU verdict's pooled test, said whether or not it resolves: its estimate, interval, p and runs."""
    if claim.claim not in (across.GPU_RESULT, across.GPU_FIT):
        return ""
    a, b = claim.pooled.runs
    return f" (pooled: {times(claim.pooled)}, p = {claim.pooled.p_value:.2g}, {a} runs against {b})"


def across_claim(found: list[across.Across], label) -> str:
    """One claim of the README's answer over the machine kinds in ``found`` (newest study first), one sentence: which
    is slower where the claim holds on every kind and agrees, else each kind's part as it stands."""
    measure, _, _ = ACROSS_WORDS[found[0].claim]
    return f"{measure}, {claim_part(found, label)}."


def claim_part(found: list[across.Across], label) -> str:
    """One claim over its machine kinds, newest study first: "a was slower than b: ..." where it holds on every kind
    and agrees, else "a against b: " and each kind's part as it stands."""
    found = sorted(found, key=lambda claim: claim.studies[-1][0].day, reverse=True)
    _, a, b = ACROSS_WORDS[found[0].claim]
    parts = "; ".join(kind_phrase(claim, label) for claim in found)
    directions = {claim.pooled.estimate > 1 for claim in found}
    if all(claim.holds for claim in found) and len(directions) == 1:
        word = "slower than" if directions == {True} else "faster than"
        return f"{a} was {word} {b}: {parts}"
    return f"{a} against {b}: {parts}"


def gpu_costs_claim(found: list[across.Across]) -> str:
    """What the GPU verdict's cuda runs spent besides the fit, per machine kind: torch's lazy import of its compiler
    stack, which the asker's torch did not have, and CUDA's start-up, each against the time to result."""

    parts = []
    for claim in found:
        costs = {
            key: [v for study, _ in claim.studies for v in study.gpu_costs[key]]
            for key in ("result", "optimizer", "startup")
        }
        parts.append(
            f"on {machine_words(claim.kind)}, torch's lazy import of its compiler stack (its first optimizer's) "
            f"took {spread(costs['optimizer'])} and CUDA's start-up {spread(costs['startup'])} of the "
            f"{spread(costs['result'])} to a result ({len(costs['result'])} runs)"
        )
    return (
        f"Of the GPU runs' time to result, {'; '.join(parts)}; the asker's 2020 torch had no compiler stack to import. "
        "The GPU verdict pools only runs that ran with nothing beside them, at one thread count, converged."
    )


def busy_answer(found: list[across.Across], label) -> str:
    """The busy-core studies' claims, each machine kind's, in one sentence of the README's answer: Keras 2 against
    torch to a result, then torch's loop on one thread against its default pool per step."""
    parts = []
    for claim in (across.BUSY_KERAS_RESULT, across.BUSY_ONE_THREAD):
        kinds = [kind for kind in found if kind.claim == claim]
        if kinds:
            parts.append(f"{ACROSS_WORDS[claim][0]}, {claim_part(kinds, label)}")
    return f"Beside one busy core, {'; '.join(parts)}."


def both_views(found: Views) -> str:
    return f"{times(found.result)} as long to a result and {times(found.step)} per step"


def busy_lines(found: BusyCore) -> list[str]:
    """The busy-core study's answer: the question's order beside one busy core, what the core did to each loop, what
    one thread does, and how much the core count matters."""
    idle, busy = found.keras_over_torch
    if found.askers_order is None:
        verdict = "the runs cannot tell whether the asker's order (Keras faster than torch) holds beside a busy core"
    elif found.askers_order:
        verdict = "the asker's order, Keras faster than torch, reproduces beside a busy core"
    else:
        verdict = "the asker's order, Keras faster than torch, does not reproduce beside a busy core"
    lines = [
        f"Beside one busy core, Keras 2's `fit` took {both_views(busy)} as the original torch loop; idle, "
        f"{both_views(idle)}: {verdict}."
    ]
    slowed = [f"{rung.label} {times(views.step)}" for rung, views in found.busy_over_idle if views.step]
    if slowed:
        lines.append(
            f"What the busy core did, per step, each rung's runs beside it over its idle runs: {', '.join(slowed)}."
        )
    cpus = [f"{rung.label} {cpu:.2f}" for rung, cpu in found.idle_cpus if cpu is not None]
    if cpus:
        lines.append(
            f"CPUs each original loop kept busy idle, its per-step blocks' CPU time over their wall time: "
            f"{', '.join(cpus)}. Only a loop that keeps more than one busy has a thread for a busy core to hold up."
        )
    for framework, idle_views, busy_views in found.one_thread:
        lines.append(
            f"{framework} on one thread against its default pool: beside the busy core {both_views(busy_views)}; "
            f"idle {both_views(idle_views)}."
        )
    # Advice only where the runs support it: one thread made some loop faster beside the busy core, and none slower.
    ratios = [found for _, *views in found.one_thread for side in views for found in (side.result, side.step)]
    hurts = any(r and r.resolved and r.estimate > 1 for r in ratios)
    helps = [
        f"{fw} {times(busy.step)}"
        for fw, _, busy in found.one_thread
        if busy.step and busy.step.resolved and busy.step.estimate < 1
    ]
    if helps and not hurts:
        lines.append(
            f"For a model this small on a machine that does other work, use one CPU thread: it made no loop slower "
            f"here, and beside the busy core it took {', '.join(helps)} as long per step. In torch, "
            "`torch.set_num_threads(1)` and `torch.set_num_interop_threads(1)`; in TensorFlow, "
            "`tf.config.threading.set_intra_op_parallelism_threads(1)` and `set_inter_op_parallelism_threads(1)` "
            "before it starts."
        )
    share = ""
    if found.neighbour_share:
        low, high = (f"{value:.0%}" for value in found.neighbour_share)
        share = f" The busy loop got {low if low == high else f'{low} to {high}'} of its core."
    lines.append(
        f"One busy core is 1 of this machine's {found.logical_cpus} logical CPUs: the size of what it does depends "
        f"on that count, and one busy core of many takes a smaller share.{share}"
    )
    return lines
