"""The variant ladders and the targets as Markdown tables: each rung's step time, spread and
speed-ups with what it removes, and each target's verdict with what the device's floor allows.

Nothing here computes a result: the cells format what ladder.py computed.
"""

from __future__ import annotations

import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.report.cells import num, pct, table, us
from tiny_mlp_bench.report.ladder import Ladder, Rung, Target
from tiny_mlp_bench.report.model import Machine


def removes(rung: Rung) -> str:
    """What a rung takes away compared with the rung before it, as the catalogue says."""
    try:
        return catalogue.variant(rung.framework, rung.variant).removes
    except catalogue.UnknownVariant:
        return ""


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
    if rung.role == Role.ASKERS or rung.vs_seed is None or rung.one_time_s is None or pd.isna(rung.step_s):
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

    Against the floor rung, what the measured compiled call of fused_epoch is made of, per step: where
    the call without its kernel exceeds the goal, no kernel could meet it with a call per epoch; where
    the kernel alone does, the rung cannot meet it until the compiler emits a faster kernel.
    """
    if target.call_parts is not None:
        kernel, rest = target.call_parts
        floor = target.baseline.step_s
        parts = (
            f"the measured {target.rung.variant} call: its fused kernel {us(kernel, 2)} µs/step "
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
