"""Claims across studies: each study's ratio from its own run records with today's estimator, pooled over the
studies of one kind (study kind and machine kind), and the one rule for when a claim holds."""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from tiny_mlp_bench import registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.jobs.identity import BUSY, IDLE
from tiny_mlp_bench.question import ASKERS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report.inference import SIGNIFICANCE, Ratio, pooled_ratio, rank_sum_null, ratio
from tiny_mlp_bench.report.runs import reference_canary, run_row, summarize
from tiny_mlp_bench.report.study import Study
from tiny_mlp_bench.stacks import TODAY
from tiny_mlp_bench.timing import METHOD

SUMMARY_KEYS = ("pair", "framework", "device", "variant")  # an empty summary's columns: no rung ran

# The claims, each an id: Keras 2's `fit` against the original torch loop on a CPU per step and to a result; torch's
# loop on the GPU against the same machine's CPU, to a result and in the fit phase alone; torch's step against the
# numba floor's, the same arithmetic with every per-operation call gone; and a busy-core study's, from its runs beside
# one busy core: Keras 2 against torch to a result, torch's loop on one thread against its default pool per step.
KERAS_STEP, KERAS_RESULT, GPU_RESULT, FIXED_COST = "keras_step", "keras_result", "gpu_result", "fixed_cost"
GPU_FIT, BUSY_KERAS_RESULT, BUSY_ONE_THREAD = "gpu_fit", "busy_keras_result", "busy_one_thread"
GPU_VERDICT = "the GPU verdict's runs"  # what a GPU claim admits: gpu_question_runs, not every completed run


@dataclass(frozen=True)
class Side:
    """One side of a claim: the rung with ``role`` on ``device``, of ``framework`` (None: the one rung with it)."""

    role: Role
    device: str = "cpu"
    framework: str | None = TORCH

    def rung(self):
        if self.framework is None:
            return registry.sole_rung(self.role)
        return registry.rung_with_role(self.framework, self.role)


@dataclass(frozen=True)
class Claim:
    """What a claim compares: ``a`` over ``b`` in ``view`` (to a "result", per "step", or the "fit" phase), over the
    runs it ``admits`` (a condition's completed runs, or GPU_VERDICT's)."""

    a: Side
    b: Side
    view: str
    admits: str


TORCH_LOOP, TORCH_ON_GPU = Side(Role.ASKERS), Side(Role.ASKERS, "cuda")
KERAS_2 = Side(Role.ASKERS, framework=ASKERS_KERAS)
CLAIMS = {
    KERAS_STEP: Claim(KERAS_2, TORCH_LOOP, "step", IDLE),
    KERAS_RESULT: Claim(KERAS_2, TORCH_LOOP, "result", IDLE),
    GPU_RESULT: Claim(TORCH_ON_GPU, TORCH_LOOP, "result", GPU_VERDICT),
    GPU_FIT: Claim(TORCH_ON_GPU, TORCH_LOOP, "fit", GPU_VERDICT),
    FIXED_COST: Claim(TORCH_LOOP, Side(Role.FLOOR, framework=None), "step", IDLE),
    BUSY_KERAS_RESULT: Claim(KERAS_2, TORCH_LOOP, "result", BUSY),
    BUSY_ONE_THREAD: Claim(Side(Role.ONE_THREAD), TORCH_LOOP, "step", BUSY),
}
POWER = 0.8  # the chance a study of the runs named by the power line resolves a ratio the size of the pooled one
# What the answer says of every device's question runs besides the fit: torch's lazy import of its compiler stack on its
# first optimizer (the `optimizer` phase; the asker's 2020 torch had none to import) and CUDA's start-up.
ONE_TIME_PHASES = ("optimizer", "startup")


@dataclass(frozen=True)
class Claims:
    """One study's claims: each claim's two sides' run values, from its run records of its own machine kind."""

    study: Study
    sides: dict[str, tuple[tuple[float, ...], tuple[float, ...]]]
    # The GPU verdict's runs (gpu_question_runs) per device: their time to result and ONE_TIME_PHASES, run by run.
    one_time: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.study.name

    @property
    def day(self) -> str:
        return self.study.day

    @property
    def kind(self) -> tuple:
        return self.study.kind

    def ratio(self, claim: str) -> Ratio | None:
        return claim_ratio(self.sides.get(claim, ((), ())))


def rung_values(summary: pd.DataFrame, framework: str, device: str, variant: str | None, view: str) -> tuple:
    """A rung's completed runs' values in ``view`` ("result" or "step"); empty where it has none."""
    rows = summary[
        (summary["framework"] == framework) & (summary["device"] == device) & (summary["variant"] == variant)
    ]
    found = rows.iloc[0][f"{view}_values"] if len(rows) else ()
    return found if isinstance(found, tuple) else ()  # NaN where no run of the rung measured the view


def side_values(claim: Claim, side: Side, summaries: dict[str, pd.DataFrame], question: list[dict]) -> tuple:
    """One side's run values as ``claim`` admits them: from the summary of its condition's runs (none where the study
    has no such runs), or from the GPU verdict's ``question`` runs."""
    rung = side.rung()
    if claim.admits != GPU_VERDICT:
        summary = summaries.get(claim.admits)
        return () if summary is None else rung_values(summary, rung.framework, side.device, rung.name, claim.view)
    ran = [
        r
        for r in question
        if (r["identity"]["framework"], r["identity"]["variant"], r["identity"]["device"])
        == (rung.framework, rung.name, side.device)
    ]
    if claim.view == "result":
        return tuple(r["timings"]["fit_predict_s"] for r in ran)
    return tuple(r["timings"]["phases_s"][claim.view] for r in ran)


def claim_sides(summaries: dict[str, pd.DataFrame], question: list[dict]) -> dict[str, tuple[tuple, tuple]]:
    """Every claim's two sides, each claim computed one way for one study's claims and for its report alike."""
    return {
        claim: (side_values(spec, spec.a, summaries, question), side_values(spec, spec.b, summaries, question))
        for claim, spec in CLAIMS.items()
    }


def claim_ratio(sides: tuple[tuple, tuple]) -> Ratio | None:
    a, b = sides
    return ratio(a, b) if a and b else None


def trains_only_the_question(record: dict) -> bool:
    """Whether a run trained the question's epochs alone: its per-step window, where it has one, replayed them from
    the initial weights with a canary beside each block (record version 8 on). A version-7 window trained on past
    them, so that run's work was more than the question's."""
    window = record["timings"].get("steady")
    return window is None or "canary_s" in window


def gpu_question_runs(records: list[dict], beside: set[str] = frozenset()) -> list[dict]:
    """The question rounds' runs the GPU verdict pools, of a study's run records: idle, completed and converged, with
    nothing ``beside`` them (ran_beside), training the question's epochs alone, timed by today's method, at one
    thread count (the most common among them: a study's jobs all take the same). The report and the README both
    admit by it."""
    runs = [
        record
        for record in records
        if (record["identity"]["framework"], record["identity"]["variant"]) == (TORCH, askers_rung(TORCH))
        and record["identity"]["condition"] == IDLE
        and record["status"] == "ok"
        and (record.get("quality") or {}).get("converged")
        and record["identity"]["run_id"] not in beside
        and trains_only_the_question(record)
        and record["method"] == METHOD
    ]
    threads = Counter(record["parameters"]["threads"] for record in runs).most_common(1)
    return [record for record in runs if record["parameters"]["threads"] == threads[0][0]] if threads else []


def one_time_costs(runs: list[dict]) -> dict[str, dict[str, tuple[float, ...]]]:
    """Per device, the runs' times to result and each of ONE_TIME_PHASES, run by run (0 where a run had no phase)."""
    found = {}
    for device in sorted({r["identity"]["device"] for r in runs}):
        on = [r for r in runs if r["identity"]["device"] == device]
        found[device] = {"result": tuple(r["timings"]["fit_predict_s"] for r in on)}
        found[device] |= {
            phase: tuple(r["timings"]["phases_s"].get(phase, 0.0) for r in on) for phase in ONE_TIME_PHASES
        }
    return found


@functools.cache
def claims_of(study: Study) -> Claims:
    """A study's claims' run values, from its run records of its own machine kind on today's stack, with today's
    estimator: no two stacks' runs pool as one rung (an era study's other stacks are its report's own)."""
    records = [r for r in study.own_records if r["identity"]["stack"] == TODAY]
    if not records:
        raise ValueError(f"{study.name}: no run records of its own machine kind")
    idle = [r for r in records if r["identity"]["condition"] == IDLE]
    canary = reference_canary(idle)  # a busy core slows the canary too: only idle runs say what fast is

    def summary(condition: str) -> pd.DataFrame:
        rows = [run_row(r, study.name, canary) for r in records if r["identity"]["condition"] == condition]
        return summarize(pd.DataFrame(rows)) if rows else pd.DataFrame(columns=SUMMARY_KEYS)

    question = gpu_question_runs(records, study.ran_beside)
    sides = claim_sides({condition: summary(condition) for condition in (IDLE, BUSY)}, question)
    return Claims(study, sides, one_time_costs(question))


@dataclass(frozen=True)
class Across:
    """One claim over the studies of one kind that ran both its sides: each study's ratio and the pooled one."""

    claim: str
    kind: tuple
    studies: tuple[tuple[Claims, Ratio], ...]  # oldest first
    pooled: Ratio
    runs_needed: int | None = None  # the power line: where no study disagrees, yet it does not hold

    @property
    def against(self) -> tuple[Claims, ...]:
        """Studies that resolve the claim the other way from the pooled estimate."""
        slower = self.pooled.estimate > 1
        return tuple(s for s, found in self.studies if found.resolved and (found.estimate > 1) != slower)

    @property
    def holds(self) -> bool:
        """The one rule: the pooled test resolves it, and no study resolves it the other way."""
        return self.pooled.resolved and not self.against

    @property
    def one_study(self) -> bool:
        """A claim resting on one study: stated as that study's finding until a second agrees."""
        return len(self.studies) == 1


def fewest_runs() -> int:
    """The fewest runs a side at which the exact rank test can resolve anything at all (4: p = 2/70)."""
    return next(n for n in range(2, 20) if 2 * rank_sum_null(n, n)[0] < SIGNIFICANCE)


def runs_needed(studies: list[tuple[tuple, tuple]], estimate: float) -> int | None:
    """Runs a side for a study to resolve a ratio of ``estimate`` with POWER, at the within-study spread of logs
    seen (both sides, every study with two runs or more): the normal approximation for a t-test on logs, less the
    rank test's asymptotic efficiency 3/pi, and never below the fewest runs the exact test needs.
    None where no spread was seen (1 run a side everywhere) or the estimate is 1."""
    groups = [np.log(side) for pair in studies for side in pair if len(side) > 1]
    if not groups or estimate == 1:
        return None
    freedom = sum(len(g) - 1 for g in groups)
    variance = sum(float(np.sum((g - g.mean()) ** 2)) for g in groups) / freedom
    z = stats.norm.ppf(1 - SIGNIFICANCE / 2) + stats.norm.ppf(POWER)
    normal = 2 * z**2 * variance / math.log(estimate) ** 2
    return max(math.ceil(normal / (3 / math.pi)), fewest_runs())


def across(studies: list[Study], claim: str) -> list[Across]:
    """``claim`` per study kind and machine kind, over that kind's studies that ran both its sides."""
    found = []
    for kind in dict.fromkeys(s.kind for s in studies):
        ran = [(claims, claims.ratio(claim)) for claims in map(claims_of, studies) if claims.kind == kind]
        ran = [(c, r) for c, r in ran if r is not None]
        if not ran:
            continue
        sides = [c.sides[claim] for c, _ in ran]
        pooled = pooled_ratio(sides)
        result = Across(claim, kind, tuple(ran), pooled)
        if not result.holds and not result.against:  # where studies disagree, more runs would not settle it
            result = Across(claim, kind, tuple(ran), pooled, runs_needed(sides, pooled.estimate))
        found.append(result)
    return found
