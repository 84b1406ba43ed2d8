"""The answer's claims, each a sentence written once from small typed values: the report and the README's findings
both call them, so that the two never word one claim two ways."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tiny_mlp_bench.kinds import cpu_name
from tiny_mlp_bench.report import across
from tiny_mlp_bench.report.busy_core import BusyCore, Views
from tiny_mlp_bench.report.cells import decimals, duration, figures, interval_places, n_runs, spread, table, times
from tiny_mlp_bench.report.era import CauseFound, EraStudy
from tiny_mlp_bench.report.inference import Interval, Ratio
from tiny_mlp_bench.stacks import TENSORFLOW_OF, TODAY
from tiny_mlp_bench.timing import LOOP_PARTS


@dataclass(frozen=True)
class Pauses:
    """How often and how long Keras 2's `fit` paused after its last epoch, over its completed runs."""

    paused: int
    runs: int
    longest_s: float


def runs_against(found: Ratio) -> str:
    """The runs behind a ratio: "1 run a side", "5 runs a side", "3 runs against 4"."""
    a, b = found.runs
    if a == b:
        return f"{n_runs(a)} a side"
    return f"{n_runs(a)} against {b}"


def one_run_a_side(found: Ratio) -> bool:
    return max(found.runs) == 1


def ratio_said(found: Ratio) -> str:
    """A ratio as a sentence gives it: with its interval; bare where 1 run a side stands behind it, which the
    sentence then says."""
    return f"{figures(found.estimate, decimals(found.estimate))}×" if one_run_a_side(found) else times(found)


def unsettled(found: Ratio, against: str = "") -> str:
    """The one wording of a ratio its runs do not resolve: what was seen (as long as ``against``, where named), and
    that those runs cannot settle it."""
    than = f" as {against}" if against else ""
    return f"{ratio_said(found)} as long{than}, but {runs_against(found)} cannot settle it"


def settled(found: Ratio) -> str:
    return f"{ratio_said(found)} as long, {runs_against(found)}"


def comparison(found: Ratio, a: str, b: str, measure: str) -> str:
    """``a`` against ``b`` (``found``: a over b) in one sentence: which is slower, or what was seen and that it
    cannot be settled by the runs behind it."""
    if found.resolved:
        word = "slower" if found.estimate > 1 else "faster"
        return f"{measure}, {a} was {word} than {b}: {settled(found)}."
    return f"{measure}, {a} took {unsettled(found, b)}."


GPU_AGAINST = "the same machine's CPU"


def gpu_claim(found: Ratio) -> str:
    """The original torch loop on the GPU against the same machine's CPU, to a result (``found``: cuda over cpu)."""
    if not found.resolved:
        return f"to a result, the original torch loop on the GPU took {unsettled(found, 'on ' + GPU_AGAINST)}."
    if found.estimate > 1:
        verdict = "slower on the GPU than on {}, as in the question"
    else:
        verdict = "faster on the GPU than on {}, where the question saw it slower"
    said = f"{ratio_said(found)} as long to a result, {runs_against(found)}"
    return f"the original torch loop was {verdict.format(GPU_AGAINST)}: {said}."


def keras_claim(
    keras: Interval, torch: Interval, found: Ratio, without_pauses: Ratio | None = None, pauses: Pauses | None = None
) -> str:
    """Keras 2 against the original torch loop on one CPU, to a result (``found``: Keras over torch), with the pauses
    `fit` made after its last epoch and the ratio less them, where it paused."""
    head = f"Keras 2 took {duration(keras)} to a result, the torch loop {duration(torch)}"
    if not found.resolved:
        text = f"{head}: {unsettled(found)}."
    elif found.estimate > 1:
        text = f"{head}: Keras 2 was slower, {settled(found)}, the reverse of the question's order."
    else:
        text = f"{head}: Keras 2 was faster, {settled(found)}, as in the question."
    if pauses and pauses.paused and without_pauses:
        less = settled(without_pauses) if without_pauses.resolved else unsettled(without_pauses)
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
    per_step = f" and {ratio_said(step)} per step" if step else ""
    told = [view for view, found in (("to a result", result), ("per step", step)) if found and found.resolved]
    verdict = f"yet the runs tell the two apart {' and '.join(told)}" if told else "the runs cannot tell the two apart"
    return (
        f"{pair} `{control}` runs `{twin}`'s very code under another name and took {ratio_said(result)} as long to a "
        f"result{per_step} ({runs_against(result)}): {verdict}. A difference this size is what this machine fakes."
    )


# Each claim across studies as the README's answer words it: what is measured, ``a`` and ``b`` (a over b).
ACROSS_WORDS = {
    across.GPU_RESULT: ("To a result", "the original torch loop on the GPU", "the same loop on the same machine's CPU"),
    across.GPU_FIT: ("In the fit phase alone", "the original torch loop on the GPU", "the same loop on the CPU"),
    across.KERAS_STEP: ("Per step", "Keras 2's `fit`", "the original torch loop"),
    across.KERAS_RESULT: ("To a result", "Keras 2", "the original torch loop"),
    across.FIXED_COST: (
        "Per step",
        "the original torch loop",
        "the same arithmetic compiled into one numba loop (the rest of its step is fixed cost: calls, dispatch and "
        "Python)",
    ),
    # Said after "Beside one busy core," (busy_answer).
    across.BUSY_KERAS_RESULT: ("to a result", "Keras 2", "the original torch loop"),
    across.BUSY_ONE_THREAD: ("per step", "torch's loop on one thread", "its default thread pool"),
}


def machine_name(cpu_model: str, logical_cpus: int, gpu: str | None = None) -> str:
    """A machine in prose, the one way the README and the report name one: its GPU, then its CPUs."""
    cpus = f"{cpu_name(cpu_model)} with {logical_cpus} logical CPUs"
    return f"{gpu} ({cpus})" if gpu else cpus


def machine_words(kind: tuple) -> str:
    """A machine kind (kinds.archive_kind's second part) in prose."""
    return machine_name(*kind[1])


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
    lead = "it depends on the study" if any(resolved) else f"{studies} cannot settle it"
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
    return f" (pooled: {times(claim.pooled)}, p = {claim.pooled.p_value:.2g}, {runs_against(claim.pooled)})"


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


def one_time_claim(found: list[across.Across]) -> str:
    """The one-time cost of today's torch that the asker's 2020 torch did not have, the lazy import of its compiler
    stack at its first optimizer, on each device of each GPU kind in ``found``, set beside that device's time to a
    result; and CUDA's start-up on the GPU. Over the runs the GPU verdict admits."""
    parts = []
    for claim in found:
        costs = {
            device: {key: [v for study, _ in claim.studies for v in study.one_time[device][key]] for key in keys}
            for device, keys in (("cuda", ("result", "optimizer", "startup")), ("cpu", ("result", "optimizer")))
        }
        gpu, cpu = costs["cuda"], costs["cpu"]
        parts.append(
            f"on {machine_words(claim.kind)}, {spread(gpu['optimizer'])} of the GPU runs' {spread(gpu['result'])} to a "
            f"result and {spread(cpu['optimizer'])} of the CPU runs' {spread(cpu['result'])} ({len(gpu['result'])} "
            f"and {len(cpu['result'])} runs), CUDA's start-up {spread(gpu['startup'])} more on the GPU"
        )
    return (
        "Today's torch pays a one-time cost on every device that the asker's 2020 torch did not, the lazy import of "
        f"its compiler stack at its first optimizer: {'; '.join(parts)}. The GPU verdict pools only runs that ran "
        "with nothing beside them, at one thread count, converged."
    )


# The README's front door: the three claims its answer opens with, each a column of its table.
FRONT_COLUMNS = {
    across.GPU_RESULT: "GPU / CPU, torch loop, to a result",
    across.KERAS_RESULT: "Keras 2 / torch, to a result",
    across.FIXED_COST: "torch / numba floor, per step",
}


def bare(found: Ratio) -> str:
    """A ratio's estimate alone, to the digits its interval supports, where a table beside it gives the interval."""
    if one_run_a_side(found):
        return ratio_said(found)
    return f"{figures(found.estimate, interval_places(found.estimate, found.low, found.high))}×"


def estimates(found: list[across.Across]) -> str:
    """The pooled estimates of a claim's machine kinds, as one value or a range: "102x to 136x"."""
    ordered = sorted((claim.pooled for claim in found), key=lambda r: r.estimate)
    low, high = bare(ordered[0]), bare(ordered[-1])
    return low if low == high else f"{low} to {high}"


def fixed_cost_answer(found: list[across.Across]) -> str:
    """Why a step this small is slow, over the machine kinds where the fixed-cost claim holds."""
    holds = [claim for claim in found if claim.holds and claim.pooled.estimate > 1]
    if not holds:
        return "No study has yet set the original torch loop's step beside the same arithmetic compiled into one loop."
    return (
        "A step this small is almost all fixed cost (calls, dispatch, Python): the original torch loop's step took "
        f"{estimates(holds)} as long as the same arithmetic compiled into one numba loop."
    )


def settle_phrase(claim: across.Across) -> str:
    """What an unsettled claim's studies rest on, and what would settle it."""
    once = all(one_run_a_side(found) for _, found in claim.studies)
    runs = "1 run a side each" if once else "their runs"
    if claim.against:
        return f"{runs} resolve it both ways"
    if claim.runs_needed:
        return f"{runs} cannot settle it; about {claim.runs_needed} runs a side would"
    if once:
        return f"{runs} cannot settle it, as the exact test needs at least {across.fewest_runs()} runs a side"
    return f"{runs} cannot settle it"


def gpu_answer(found: list[across.Across]) -> str:
    """What the GPU studies of each GPU machine kind (named by its GPU; the table names it in full) saw of the
    original torch loop against their own CPU, as seen, with what their runs can and cannot settle."""
    if not found:
        return "No GPU study has yet run the original torch loop on both its GPU and its own CPU."
    said = []
    for claim in found:
        gpu, seen = claim.kind[1][2], [r for _, r in claim.studies]
        if claim.holds:
            word = "slower" if claim.pooled.estimate > 1 else "faster"
            said.append(
                f"On {gpu}, the torch loop was {word} on the GPU than on its own CPU: {times(claim.pooled)} as long "
                f"to a result over {len(seen)} stud{'y' if len(seen) == 1 else 'ies'}."
            )
            continue
        directions = {r.estimate > 1 for r in seen}
        studies = {1: f"The one {gpu} study", 2: f"Both {gpu} studies"}.get(len(seen), f"All {len(seen)} {gpu} studies")
        values = " and ".join(bare(r) for r in seen)
        if len(directions) == 1:
            word, asker = ("slower", ", as the asker saw") if directions == {True} else ("faster", "")
            seen_as = f"{values} as long to a result{asker}"
            head = f"{studies} saw the torch loop {word} on the GPU than on its own CPU ({seen_as})"
        else:
            head = (
                f"The {gpu} studies saw the torch loop take {values} as long to a result on the GPU as on its own CPU"
            )
        said.append(f"{head}; {settle_phrase(claim)}.")
    return " ".join(said)


def keras_answer(found: list[across.Across]) -> str:
    """Keras 2 against the original torch loop to a result, over every machine kind that ran both."""
    if not found:
        return "No study has yet run Keras 2 and the torch loop on one machine."
    directions = {claim.pooled.estimate > 1 for claim in found}
    kinds = (
        "the one machine kind that ran both"
        if len(found) == 1
        else f"each of the {len(found)} machine kinds that ran both"
    )
    if all(claim.holds for claim in found) and directions == {True}:
        return (
            "Keras 2 did not reproduce the asker's order: to a result it was slower than the torch loop on "
            f"{kinds}, {estimates(found)} as long."
        )
    if all(claim.holds for claim in found) and directions == {False}:
        return (
            f"Keras 2 reproduced the asker's order: to a result it was faster than the torch loop on {kinds}, "
            f"{estimates(found)} as long."
        )
    return "Keras 2 against the torch loop, to a result, depends on the machine kind (the table)."


def cell(claim: across.Across | None) -> str:
    """A claim of one machine kind in the front door's table: the pooled ratio where it holds, else what was seen."""
    if claim is None:
        return "–"
    n = len(claim.studies)
    studies = f"{n} stud{'y' if n == 1 else 'ies'}"
    if claim.holds:
        return f"{times(claim.pooled)}: {studies}, {runs_against(claim.pooled)}"
    if all(one_run_a_side(found) for _, found in claim.studies):
        return f"{', '.join(bare(found) for _, found in claim.studies)}: {studies}, 1 run a side each, unsettled"
    return f"{times(claim.pooled)}: {studies}, {runs_against(claim.pooled)}, unsettled"


def answer_table(found: dict[str, list[across.Across]], asker: dict[str, str]) -> str:
    """The front door's table: per machine kind (newest study first), each FRONT_COLUMNS claim, below the asker's."""
    kinds = {claim.kind: claim.studies[-1][0].day for claims in found.values() for claim in claims}
    order = sorted(kinds, key=lambda kind: kinds[kind], reverse=True)
    rows = [["the asker (2020, one run each)", *(asker.get(column, "–") for column in FRONT_COLUMNS)]]
    for kind in order:
        by_claim = {claim.claim: claim for claims in found.values() for claim in claims if claim.kind == kind}
        rows.append([machine_words(kind), *(cell(by_claim.get(column)) for column in FRONT_COLUMNS)])
    return table(["machine kind", *FRONT_COLUMNS.values()], rows, "l" + "r" * len(FRONT_COLUMNS))


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
        f"Beside one busy core, Keras 2 took {both_views(busy)} as the original torch loop; idle, "
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


ERA_VIEWS = {"result": "to a result", "training": "to a result less set-up and pause", "step": "per step"}
LOOP_NAMES = {"torch": "the torch loop", "tf_keras": "Keras 2"}


def era_answer(found: EraStudy) -> str:
    """The era study in two sentences, per step: Keras 2 against torch on the oldest stack that installs here and on
    today's, and the largest change between neighbouring stacks that its runs resolve."""
    said = []
    for stack, where in (("era", "on the oldest stack that installs here"), (TODAY, "on today's")):
        on = found.of(stack)
        if on and on.keras_over_torch.step:
            said.append(
                f"{where} ({on.versions}), {comparison(on.keras_over_torch.step, 'Keras 2', 'torch', 'per step')}"
            )
    head = " ".join(capital(sentence) for sentence in said)
    moved = [
        (abs(math.log(ratios.step.estimate)), step, loop, ratios.step)
        for step in found.steps
        if step.newer != "era_twin"
        for loop, ratios in step.loops
        if ratios.step and ratios.step.resolved
    ]
    if not moved:
        return head
    _, step, loop, ratio = max(moved, key=lambda item: item[0])
    return (
        f"{head} The largest change between neighbouring stacks: {LOOP_NAMES[loop]}'s step on `{step.newer}` took "
        f"{ratio_said(ratio)} as long as on `{step.older}` ({runs_against(ratio)}; {step.what})."
    )


def era_lines(found: EraStudy) -> list[str]:
    """The era study in sentences: Keras 2 against torch on the oldest stack and on today's, which change between
    neighbouring stacks moved which loop, and the stacks' A/A control."""
    lines = []
    for stack, where in (("era", "On the oldest stack that installs here"), (TODAY, "On today's stack")):
        on = found.of(stack)
        if on is None:
            continue
        said = [
            capital(comparison(ratio, "Keras 2", "the torch loop", ERA_VIEWS[view]))
            for view in ERA_VIEWS
            if (ratio := getattr(on.keras_over_torch, view))
        ]
        if said:
            lines.append(f"{where} ({on.versions}): {' '.join(said)}")
    for step in found.steps:
        if step.newer == "era_twin":
            continue
        moved = [
            capital(comparison(ratio, f"{LOOP_NAMES[loop]} on `{step.newer}`", f"on `{step.older}`", ERA_VIEWS[view]))
            for loop, ratios in step.loops
            for view in ERA_VIEWS
            if (ratio := getattr(ratios, view)) and ratio.resolved
        ]
        torch_step = dict(step.loops)["torch"].step
        if torch_step and torch_step.resolved:
            moved.append(part_moved(found.of(step.newer), found.of(step.older)))
        if moved:
            lines.append(f"{capital(step.what)}: {' '.join(moved)}")
    twin = next((step for step in found.steps if step.newer == "era_twin"), None)
    if twin:
        seen = [
            f"{LOOP_NAMES[loop]} {ratio_said(ratios.step)} per step ({runs_against(ratios.step)})"
            for loop, ratios in twin.loops
            if ratios.step
        ]
        told = any(r.resolved for _, ratios in twin.loops for r in (ratios.result, ratios.step) if r)
        verdict = "yet the runs tell them apart" if told else "the runs cannot tell them apart"
        lines.append(
            f"The A/A control: `era_twin` runs `era`'s very image under another name and took, over `era`, "
            f"{', '.join(seen)}: {verdict}. A difference this size between stacks is what this machine fakes."
        )
    return lines


PART_WORDS = {**LOOP_PARTS, "outside": "what lies outside the parts"}


def part_moved(newer, older) -> str:
    """The part of torch's step that moved most between two stacks, as their `parts` runs read it."""
    if not (newer.parts and older.parts):
        return "No `parts` runs on both stacks say which part of the step moved."
    part = max(PART_WORDS, key=lambda p: abs(newer.part_s(p) - older.part_s(p)))
    return (
        f"Of torch's step as the `parts` rung read it, {PART_WORDS[part]} moved most: {duration(older.part_s(part))} "
        f"a step on `{older.stack}`, {duration(newer.part_s(part))} on `{newer.stack}`."
    )


def capital(text: str) -> str:
    return text[0].upper() + text[1:]  # str.capitalize would lower every later letter


def holm_family(found: EraStudy) -> str:
    """The family a release step is corrected in, as both the report and the README say it."""
    return f"Holm's correction over the {n_runs(len(found.releases), 'step')} between neighbouring releases"


def release_lines(found: EraStudy) -> list[str]:
    """The release sweep in sentences: Keras 2 from the oldest release to the newest, which steps between neighbouring
    releases moved it after Holm's correction, view by view, and what each cause rung on today's stack took away."""
    lines = []
    if span := found.release_span:
        said = [
            capital(
                comparison(
                    ratio, f"Keras 2 on {TENSORFLOW_OF[span.newer]}", f"on {TENSORFLOW_OF[span.older]}", ERA_VIEWS[view]
                )
            )
            for view in ERA_VIEWS
            if (ratio := getattr(span.keras, view))
        ]
        lines.append(f"{capital(span.what)}, on one Python: {' '.join(said)}")
    for view, words in ERA_VIEWS.items():
        moved = [
            f"{step.what}, {ratio_said(ratio)} ({runs_against(ratio)})"
            for step in found.releases
            if (ratio := getattr(step.keras, view)) and ratio.resolved
        ]
        family = holm_family(found)
        if moved:
            lines.append(f"{capital(words)}, Keras 2 moved, after {family}, at {'; at '.join(moved)}.")
        elif found.releases:
            lines.append(f"{capital(words)}, no single release moved Keras 2 after {family}.")
    lines += [cause_line(cause) for cause in found.causes]
    return lines


def cause_line(cause: CauseFound) -> str:
    """A cause rung's effect on today's stack, per step and to a result, and whether it accounts for its release."""
    loop = LOOP_NAMES[cause.framework]
    said = [
        comparison(ratio, f"{loop}'s `seed`", f"`{cause.rung}`", ERA_VIEWS[view])
        for view in ("step", "result")
        if (ratio := getattr(cause.effect, view))
    ]
    head = f"`{cause.rung}` on today's stack takes away {cause.cause}: {' '.join(capital(s) for s in said)}"
    step = cause.suspected
    if step is None:
        return f"{head} The sweep has no release step of {loop} to set it beside."
    if step.keras.step is None:
        return head
    if cause.accounts("step"):
        return f"{head} It accounts for the step of {step.what} ({ratio_said(step.keras.step)} per step)."
    return (
        f"{head} It does not account for the step of {step.what} ({ratio_said(step.keras.step)} per step, "
        f"{'resolved' if step.keras.step.resolved else 'not resolved'} after the correction)."
    )


def release_answer(found: EraStudy) -> str:
    """The release sweep in a few sentences for the README: Keras 2's step from the oldest release to the newest,
    which steps between neighbouring releases hold that change, and which tested cause accounts for which step."""
    total = holm_family(found)
    moved = [step for step in found.releases if step.keras.step and step.keras.step.resolved]
    span = found.release_span
    head = "Per step"
    if span and span.keras.step:
        older, newer = TENSORFLOW_OF[span.older], TENSORFLOW_OF[span.newer]
        head += f", Keras 2 on TensorFlow {newer} took {ratio_said(span.keras.step)} as long as on {older}"
        head += f" ({runs_against(span.keras.step)})"
    said = [f"{step.what} ({ratio_said(step.keras.step)})" for step in moved]
    if not moved:
        return f"{head}; no single release step moved it after {total}."
    if len(moved) == 1:
        text = f"{head}; one release holds the change, after {total}: {said[0]}."
    else:
        text = f"{head}; no single release holds it: after {total}, {len(moved)} steps moved it, {'; '.join(said)}."
    causes = [cause for cause in found.causes if cause.suspected is not None]
    named = [
        f"{cause.cause} accounts for the step of {cause.suspected.what} (`{cause.rung}`: with it, Keras 2's step on "
        f"today's stack took {ratio_said(cause.effect.step)} as long as without it)"
        for cause in causes
        if cause.accounts("step")
    ]
    unnamed = [cause.cause for cause in causes if not cause.accounts("step")]
    if named:
        text += f" Of the causes tested, {'; '.join(named)}."
    else:
        text += " No tested cause accounts for any step."
    if unnamed:
        text += f" Tested and accounting for none: {', '.join(unnamed)}."
    return text
