"""What the era study found: the question's two CPU loops on each software stack (stacks.py), Keras 2 against torch
within each, and each loop across each change between neighbouring stacks. Its numbers only; claims.era_lines words
them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tiny_mlp_bench.question import ASKERS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report.inference import Interval, Ratio, ratio, rung_interval
from tiny_mlp_bench.report.loop_parts import LoopParts
from tiny_mlp_bench.stacks import STACKS, STEPS, TODAY

if TYPE_CHECKING:
    from tiny_mlp_bench.report.model import Machine

# The three views of a loop: the asker's timing point; the same less its set-up (where today's torch pays its lazy
# compiler import, at its first optimizer) and Keras 2's pause after its last epoch, so the epochs and the closing
# prediction alone; and a steady step.
VIEWS = ("result", "training", "step")
LOOPS = (TORCH, ASKERS_KERAS)


def stack_label(label: str, stack: str) -> str:
    """A machine's label for its runs on ``stack``: its own for today's."""
    return label if stack == TODAY else f"{label} on the {stack} stack"


def loop_values(m: Machine, framework: str, view: str) -> tuple[float, ...]:
    """The completed runs' values of ``framework``'s original loop in ``view`` on machine page ``m``."""
    runs = m.runs[(m.runs["framework"] == framework) & (m.runs["variant"] == askers_rung(framework))]
    runs = runs[runs["status"] == "ok"]
    if view == "result":
        found = runs["fit_predict_s"]
    elif view == "training":
        found = runs["fit_predict_s"] - runs["setup_s"] - runs["fit_end_s"].fillna(0.0)
    else:
        found = runs["step_s"]
    return tuple(float(v) for v in found.dropna() if v > 0)


@dataclass(frozen=True)
class Ratios:
    """One ratio in each of VIEWS (None where a side has no run)."""

    result: Ratio | None
    training: Ratio | None
    step: Ratio | None


def over(a: Machine, a_loop: str, b: Machine, b_loop: str) -> Ratios:
    """``a_loop``'s runs on page ``a`` over ``b_loop``'s on page ``b``, in each view."""

    def one(view: str) -> Ratio | None:
        mine, theirs = loop_values(a, a_loop, view), loop_values(b, b_loop, view)
        return ratio(mine, theirs) if mine and theirs else None

    return Ratios(*(one(view) for view in VIEWS))


@dataclass(frozen=True)
class StackFound:
    """One stack's runs: what it is, Keras 2 over torch, and each loop's step and time to a result."""

    stack: str
    what: str
    versions: str  # Python and the frameworks, as its runs recorded them
    keras_over_torch: Ratios
    step: dict[str, Interval | None]  # per loop
    result: dict[str, Interval | None]
    parts: LoopParts | None = None  # torch's step as its `parts` rung read it on this stack

    def part_s(self, part: str) -> float:
        """A part of torch's step (timing.LOOP_PARTS, or "outside" them), a step."""
        return self.parts.outside_s if part == "outside" else self.parts.parts_s[part]


@dataclass(frozen=True)
class StepFound:
    """One change between neighbouring stacks: each loop's runs on the newer over the older."""

    newer: str
    older: str
    what: str
    loops: tuple[tuple[str, Ratios], ...]  # per loop


@dataclass(frozen=True)
class EraStudy:
    host: str
    stacks: tuple[StackFound, ...]  # in stacks.STACKS order
    steps: tuple[StepFound, ...]  # the stacks.STEPS whose two stacks both ran

    def of(self, stack: str) -> StackFound | None:
        return next((found for found in self.stacks if found.stack == stack), None)


def interval(values: tuple[float, ...]) -> Interval | None:
    return rung_interval(values) if values else None


def versions_of(m: Machine) -> str:
    env = m.environment
    packages = [f"{name} {version}" for name, version in env["packages"] if name in ("torch", "tensorflow")]
    return ", ".join([f"Python {version}" for version in env["python"]] + packages)


def era_study(machines: tuple[Machine, ...]) -> EraStudy | None:
    """The stacks of the first host (by label) that ran more than today's; None where every run was on today's."""
    pages = {(m.host, m.stack): m for m in machines}
    hosts = sorted({host for host, stack in pages if stack != TODAY})
    if not hosts:
        return None
    host = hosts[0]
    on = {stack: pages[(host, stack)] for stack in STACKS if (host, stack) in pages}
    found = tuple(
        StackFound(
            stack=stack,
            what=STACKS[stack].what,
            versions=versions_of(m),
            keras_over_torch=over(m, ASKERS_KERAS, m, TORCH),
            step={loop: interval(loop_values(m, loop, "step")) for loop in LOOPS},
            result={loop: interval(loop_values(m, loop, "result")) for loop in LOOPS},
            parts=m.loop_parts.get("cpu"),
        )
        for stack, m in on.items()
    )
    steps = tuple(
        StepFound(newer, older, what, tuple((loop, over(on[newer], loop, on[older], loop)) for loop in LOOPS))
        for newer, older, what in STEPS
        if newer in on and older in on
    )
    return EraStudy(host=host, stacks=found, steps=steps)
