"""The answer's claims, each a sentence written once from small typed values: the report and the README's findings
both call them, so that the two never word one claim two ways."""

from __future__ import annotations

from dataclasses import dataclass

from tiny_mlp_bench.report.cells import duration, times
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
