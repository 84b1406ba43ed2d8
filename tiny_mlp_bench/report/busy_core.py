"""What a study beside one busy core found: the question's two loops idle and beside it, and what one thread does.
Its numbers only; claims.busy_lines words them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.question import ASKERS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report.across import rung_values
from tiny_mlp_bench.report.inference import Ratio, ratio

if TYPE_CHECKING:
    from tiny_mlp_bench.report.model import Machine

BESIDE_BUSY_CORE = ", beside one busy core"  # what a machine's label adds for its runs beside a busy core


def idle_label(label: str) -> str:
    """The label of the machine whose runs beside a busy core ``label`` names: itself for an idle machine."""
    return label.removesuffix(BESIDE_BUSY_CORE)


@dataclass(frozen=True)
class Views:
    """One ratio in both views: to a result and per step (None where a side has no run of it)."""

    result: Ratio | None
    step: Ratio | None


@dataclass(frozen=True)
class RungName:
    """A rung by its framework's label and its name: ``Keras 2 `one_thread```."""

    framework: str
    variant: str

    @property
    def label(self) -> str:
        return f"{catalogue.framework(self.framework).label} `{self.variant}`"


@dataclass(frozen=True)
class BusyCore:
    """A host's runs idle and beside one busy core."""

    host: str
    logical_cpus: int
    neighbour_share: tuple[float, float] | None  # the lowest and highest share of its core the busy loop got
    keras_over_torch: tuple[Views, Views]  # Keras 2's original `fit` over torch's original loop: idle, busy
    one_thread: tuple[tuple[str, Views, Views], ...]  # per framework label, one_thread over its seed: idle, busy
    busy_over_idle: tuple[tuple[RungName, Views], ...]  # per rung, its runs beside the busy core over its idle runs
    # Per original loop, the median over its idle runs of the CPUs its per-step window kept busy (None: not timed).
    idle_cpus: tuple[tuple[RungName, float | None], ...] = ()

    @property
    def askers_order(self) -> bool | None:
        """Whether Keras 2 was faster than torch to a result beside the busy core, as the asker saw; None where the
        runs cannot tell."""
        found = self.keras_over_torch[1].result
        return None if found is None or not found.resolved else found.estimate < 1


@dataclass(frozen=True)
class ArchivedBusy:
    """An archived busy-core study, quoted in one line by a default study of its machine kind."""

    archive: str
    date: str  # the day its first quoted run started
    cpu: tuple[str, int]  # its machine kind: CPU model and logical CPUs
    runs: int  # the fewest completed runs of the question's two loops in one condition
    found: BusyCore


def newest_of_kind(offered: Iterable[ArchivedBusy], cpus: Iterable[tuple]) -> ArchivedBusy | None:
    """The newest offered archive that ran on one of ``cpus`` (CPU model, logical CPUs); None where none did."""
    cpus = {tuple(cpu) for cpu in cpus}
    found = [(quoted.date, quoted.archive, quoted) for quoted in offered if quoted.cpu in cpus]
    return max(found)[2] if found else None


def over(a: pd.DataFrame, rung_a: RungName, b: pd.DataFrame, rung_b: RungName) -> Views:
    """``rung_a``'s runs in summary ``a`` over ``rung_b``'s in ``b``, in both views."""

    def one(view: str) -> Ratio | None:
        mine = rung_values(a, rung_a.framework, "cpu", rung_a.variant, view)
        theirs = rung_values(b, rung_b.framework, "cpu", rung_b.variant, view)
        return ratio(mine, theirs) if mine and theirs else None

    return Views(one("result"), one("step"))


def median_cpus(machine: Machine, rung: RungName) -> float | None:
    runs = machine.runs
    found = runs.loc[(runs["framework"] == rung.framework) & (runs["variant"] == rung.variant), "window_cpus"]
    found = found.dropna().astype(float)
    return float(found.median()) if len(found) else None


def busy_core(machines: tuple[Machine, ...]) -> BusyCore | None:
    """The first host (by label) with runs both idle and beside a busy core; None where no run was busy."""
    by_label = {m.label: m for m in machines}
    pairs = [(by_label.get(idle_label(m.label)), m) for m in machines if m.label != idle_label(m.label)]
    pair = next(((idle, busy) for idle, busy in pairs if idle), None)
    if pair is None:
        return None
    idle, busy = pair
    seeds = {f: RungName(f, askers_rung(f)) for f in (TORCH, ASKERS_KERAS)}
    threaded = {f: registry.rung_with_role(f, Role.ONE_THREAD) for f in seeds}
    one_thread = {f: RungName(f, found.name) for f, found in threaded.items() if found}
    shares = busy.runs["neighbour_share"].dropna().astype(float)
    return BusyCore(
        host=idle.label,
        logical_cpus=int(busy.runs["logical_cpus"].iloc[0]),
        neighbour_share=(float(shares.min()), float(shares.max())) if len(shares) else None,
        keras_over_torch=tuple(over(m.summary, seeds[ASKERS_KERAS], m.summary, seeds[TORCH]) for m in (idle, busy)),
        one_thread=tuple(
            (catalogue.framework(f).label, *(over(m.summary, rung, m.summary, seeds[f]) for m in (idle, busy)))
            for f, rung in one_thread.items()
        ),
        idle_cpus=tuple((rung, median_cpus(idle, rung)) for rung in seeds.values()),
        busy_over_idle=tuple(
            (rung, over(busy.summary, rung, idle.summary, rung))
            for f in seeds
            for rung in (seeds[f], one_thread.get(f))
            if rung is not None
        ),
    )
