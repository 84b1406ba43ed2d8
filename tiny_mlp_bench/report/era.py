"""What the era study found: the question's two CPU loops on each software stack (stacks.py), Keras 2 against torch
within each, and each loop across each change between neighbouring stacks; and what the release sweep found: Keras 2
from one TensorFlow release to the next, and each cause rung on today's stack beside the step it is suspected of. Its
numbers only; claims.era_lines and claims.release_lines word them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tiny_mlp_bench.question import ASKERS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report.inference import Interval, Ratio, holm, ratio, rung_interval
from tiny_mlp_bench.report.loop_parts import LoopParts
from tiny_mlp_bench.stacks import CAUSES, RELEASE_STEPS, RELEASES, STACKS, STEPS, TODAY, release_change

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


def loop_values(m: Machine, framework: str, view: str, variant: str | None = None) -> tuple[float, ...]:
    """The completed runs' values of ``framework``'s original loop (or its rung ``variant``) in ``view`` on machine
    page ``m``."""
    runs = m.runs[(m.runs["framework"] == framework) & (m.runs["variant"] == (variant or askers_rung(framework)))]
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
class ReleaseStep:
    """Keras 2 from one TensorFlow release to the next, the newer's runs over the older's, in each view: corrected
    (inference.holm) over the sweep's steps, view by view."""

    newer: str
    older: str
    what: str
    keras: Ratios


@dataclass(frozen=True)
class CauseFound:
    """A cause rung on today's stack (stacks.CAUSES): its loop's `seed` over the rung, what the cause costs, in each
    view; and the release step it is suspected of (None where the sweep has no step of that loop)."""

    framework: str
    rung: str
    cause: str  # in the report's words
    effect: Ratios
    suspected: ReleaseStep | None

    def accounts(self, view: str) -> bool:
        """Whether the cause accounts for its release step in ``view``: both resolved, the same way, and the two
        intervals overlap, so that taking the cause away moves the loop by as much as the release did."""
        release = getattr(self.suspected.keras, view) if self.suspected else None
        effect = getattr(self.effect, view)
        if not (release and effect and release.resolved and effect.resolved):
            return False
        if None in (effect.low, effect.high, release.low, release.high):  # too few runs to bound a side
            return False
        same_way = (release.estimate > 1) == (effect.estimate > 1)
        return same_way and effect.low <= release.high and release.low <= effect.high


@dataclass(frozen=True)
class EraStudy:
    host: str
    stacks: tuple[StackFound, ...]  # in stacks.STACKS order
    steps: tuple[StepFound, ...]  # the stacks.STEPS whose two stacks both ran
    releases: tuple[ReleaseStep, ...] = ()  # the stacks.RELEASE_STEPS whose two stacks both ran Keras 2
    release_span: ReleaseStep | None = None  # the newest release that ran over the oldest, uncorrected
    causes: tuple[CauseFound, ...] = ()  # the stacks.CAUSES whose rung ran on today's stack beside its `seed`

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
    releases = release_steps(on)
    causes = ()
    if TODAY in on:
        by_step = {(step.newer, step.older): step for step in releases}
        causes = tuple(
            CauseFound(framework, rung, cause, effect, by_step.get(suspected))
            for framework, rung, suspected, cause in CAUSES
            if (effect := rung_effect(on[TODAY], framework, rung)).step or effect.result
        )
    ran = [s.stack for s in found if s.stack in RELEASES and s.step[ASKERS_KERAS]]  # in release order, as STACKS
    span = None
    if len(ran) > 1:
        newest, oldest = ran[-1], ran[0]
        span = ReleaseStep(
            newest, oldest, release_change(newest, oldest), over(on[newest], ASKERS_KERAS, on[oldest], ASKERS_KERAS)
        )
    return EraStudy(host, found, steps, releases, span, causes)


def release_steps(on: dict) -> tuple[ReleaseStep, ...]:
    """Keras 2's runs on each release over the release before, Holm-corrected over the steps in each view."""
    ran = [
        step
        for step in RELEASE_STEPS
        if all(step[i] in on and loop_values(on[step[i]], ASKERS_KERAS, "step") for i in (0, 1))
    ]
    by_view = {
        view: holm([tuple(loop_values(on[stack], ASKERS_KERAS, view) for stack in step[:2]) for step in ran])
        for view in VIEWS
    }
    return tuple(
        ReleaseStep(newer, older, what, Ratios(*(by_view[view][i] for view in VIEWS)))
        for i, (newer, older, what) in enumerate(ran)
    )


def rung_effect(m: Machine, framework: str, rung: str) -> Ratios:
    """``framework``'s `seed` over its ``rung`` on page ``m``, in each view: what the rung's cause costs."""

    def one(view: str) -> Ratio | None:
        seed, without = loop_values(m, framework, view), loop_values(m, framework, view, rung)
        return ratio(seed, without) if seed and without else None

    return Ratios(*(one(view) for view in VIEWS))
