"""The numbers behind the report's opening answer; each field is None where this run did not measure it."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import registry
from tiny_mlp_bench.catalogue import Role, pair_name
from tiny_mlp_bench.question import ASKERS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report.fixed_costs import FixedCosts, Floor
from tiny_mlp_bench.report.inference import SIGNIFICANCE, Ratio, ratio, share_test
from tiny_mlp_bench.report.ladder import Ladder, RungResult

# A fit_end this long is a pause: unpaused fit returns ~1 ms after its last epoch; docs/method.md quotes it.
PAUSED_S = 0.1


@dataclass(frozen=True)
class GpuAnswer:
    """The asker's loop on cuda against cpu, and the fixed costs that explain it."""

    cuda_step_s: float | None  # its steady-state step times (medians)
    kernels: int | None  # kernels the asker's step runs on cuda (profiler)
    eager_op_s: float | None
    gpu_arithmetic_s: float | None = None  # the same on the GPU: the numba floor rung's CUDA kernel, per step
    ratio: Ratio | None = None  # the GPU verdict: the admitted cuda runs' times to result over the cpu runs' (across)

    @property
    def launch_s(self) -> float | None:
        return self.kernels * self.eager_op_s if self.kernels and self.eager_op_s else None

    @property
    def gpu_split(self) -> tuple[float, float] | None:
        """The asker's cuda step as (the floor kernel's arithmetic, the rest: driving the GPU), in s per step."""
        if not (self.gpu_arithmetic_s and self.cuda_step_s):
            return None
        return self.gpu_arithmetic_s, self.cuda_step_s - self.gpu_arithmetic_s


@dataclass(frozen=True)
class ArchivedGpu:
    """Another study's GPU verdict, quoted where this machine has none: its own ratio, never its seconds beside ours."""

    archive: str
    gpu: str
    date: str  # the day its first completed cuda run of the original loop started
    ratio: Ratio | None  # its GPU verdict (across.CLAIMS); None where no pair of its runs is admitted
    modified: int = 0  # of its admitted runs, those from a modified tree


@dataclass(frozen=True)
class KerasPause:
    """Keras 2's fit_end pause on cpu, in the asker's fit and with tf.data autotuning off (docs/keras2-pause.md)."""

    runs: int  # the asker's Keras's completed seed runs that timed fit_end
    paused: int  # those whose fit_end reached PAUSED_S
    longest_s: float
    pause_free_variant: str | None  # the rung with autotuning off, where the catalogue has one
    pause_free_runs: int  # its completed runs that timed fit_end
    # Runs pausing after any fit (window passes too), per rung; two-sided Fisher p, None where a rung has no run.
    seed_paused_anywhere: int = 0
    pause_free_paused_anywhere: int = 0
    fisher_p: float | None = None

    @property
    def pause_free_removes(self) -> bool:
        """Whether the runs support a claim that the pause-free rung pauses less: Fisher's test passes."""
        fewer = self.pause_free_paused_anywhere / max(self.pause_free_runs, 1) < self.seed_paused_anywhere / self.runs
        return self.fisher_p is not None and self.fisher_p < SIGNIFICANCE and fewer


@dataclass(frozen=True)
class KerasAnswer:
    """The asker's Keras (Keras 2) against torch's loop on cpu, and its pauses after the last epoch."""

    device: str
    pause: KerasPause | None = None  # where Keras 2's seed runs timed their fit_end phase
    ratio: Ratio | None = None  # Keras 2's seed runs' times to result over torch's
    ratio_without_pauses: Ratio | None = None  # the same, each Keras 2 run less its fit_end phase


@dataclass(frozen=True)
class AAControl:
    """The A/A control: a rung's code under a second name; its ratio to that rung is a difference the machine fakes."""

    pair: str
    control: str  # the control's rung
    twin: str  # the rung whose code it runs
    result: Ratio  # the control's times to result over the twin's
    step: Ratio | None


@dataclass(frozen=True)
class PausedRun:
    run_id: str
    result_s: float
    fit_end_s: float  # the part of it after the last epoch
    paused: bool  # fit_end_s reached PAUSED_S


@dataclass(frozen=True)
class PausedRung:
    """A rung whose runs split by their pause after the last epoch, with every run, to show them all."""

    pair: str
    variant: str
    runs: tuple[PausedRun, ...]

    @property
    def paused(self) -> int:
        return sum(r.paused for r in self.runs)


@dataclass(frozen=True)
class Answer:
    gpu: GpuAnswer
    keras: KerasAnswer
    aa_control: AAControl | None = None
    paused: tuple[PausedRung, ...] = ()  # rungs with at least one paused run


def seed_of(ladders: dict[str, Ladder], pair: str) -> RungResult | None:
    ladder = ladders.get(pair)
    return ladder.with_role(Role.ASKERS) if ladder else None


def answer(
    ladders: tuple[Ladder, ...],
    costs: dict[str, FixedCosts],
    floors: dict[str, Floor],
    runs: pd.DataFrame,
    gpu_ratio: Ratio | None = None,
    keras_ratio: Ratio | None = None,
) -> Answer:
    """``runs``: a row per run; ``gpu_ratio``, ``keras_ratio``: the claims as across.CLAIMS compute them, the ones
    the README pools."""
    by_pair = {ladder.pair: ladder for ladder in ladders}
    torch_cpu = seed_of(by_pair, pair_name(TORCH, "cpu"))
    cuda_seed = seed_of(by_pair, pair_name(TORCH, "cuda"))
    cuda_costs = costs.get("cuda")
    gpu = GpuAnswer(
        cuda_step_s=cuda_seed.step_s if cuda_seed else None,
        kernels=cuda_costs.ops_per_step if cuda_costs else None,
        eager_op_s=cuda_costs.eager_op_s if cuda_costs else None,
        gpu_arithmetic_s=floors["cuda"].step_s if "cuda" in floors and floors["cuda"].measured else None,
        ratio=gpu_ratio,
    )
    keras = KerasAnswer(
        device="cpu",
        pause=keras_pause(runs),
        ratio=keras_ratio,
        ratio_without_pauses=over(
            without_pauses(runs, pair_name(ASKERS_KERAS, "cpu")), torch_cpu.result_values if torch_cpu else ()
        ),
    )
    return Answer(gpu, keras, aa_control(by_pair), tuple(paused_rungs(runs)))


def over(a: tuple[float, ...], b: tuple[float, ...]) -> Ratio | None:
    return ratio(a, b) if a and b else None


def without_pauses(runs: pd.DataFrame, pair: str) -> tuple[float, ...]:
    """The pair's seed runs' times to result, each less its pause after the last epoch."""
    seed = fit_ends(runs, askers_rung(pair.split("-")[0]), pair)
    return tuple(seed["fit_predict_s"].astype(float) - seed["fit_end_s"].astype(float))


def aa_control(by_pair: dict[str, Ladder]) -> AAControl | None:
    """The A/A control against its twin, where both completed."""
    control = registry.sole_rung(Role.AA_CONTROL)
    twin = registry.rung_with_role(control.framework, Role.REFERENCE).name
    for device in control.devices:
        ladder = by_pair.get(pair_name(control.framework, device))
        ours, theirs = (ladder.rung(name) if ladder else None for name in (control.name, twin))
        if ours and theirs and (result := over(ours.result_values, theirs.result_values)):
            return AAControl(ladder.pair, control.name, twin, result, over(ours.step_values, theirs.step_values))
    return None


def paused_rungs(runs: pd.DataFrame):
    """Every rung, on any framework and device, with a run whose fit_end reached PAUSED_S."""
    timed = runs[(runs["status"] == "ok") & runs["fit_end_s"].notna()]
    for (pair, variant), group in timed.groupby(["pair", "variant"], sort=False):
        ends = group["fit_end_s"].astype(float)
        if (ends >= PAUSED_S).any():
            found = zip(group["run_id"], group["fit_predict_s"].astype(float), ends, strict=True)
            yield PausedRung(pair, variant, tuple(PausedRun(i, r, e, bool(e >= PAUSED_S)) for i, r, e in found))


def fit_ends(runs: pd.DataFrame, variant: str | None, pair: str = pair_name(ASKERS_KERAS, "cpu")) -> pd.DataFrame:
    """The pair's (the asker's Keras on cpu's) completed runs of ``variant`` that timed fit_end."""
    chosen = (runs["pair"] == pair) & (runs["variant"] == variant)
    return runs[chosen & (runs["status"] == "ok") & runs["fit_end_s"].notna()]


def keras_pause(runs: pd.DataFrame) -> KerasPause | None:
    """How often Keras 2's fit paused after its last epoch, and its timing point without the pauses."""
    askers, pause_free_rung = (registry.rung_with_role(ASKERS_KERAS, role) for role in (Role.ASKERS, Role.PAUSE_FREE))
    pause_free_variant = pause_free_rung.name if pause_free_rung else None
    seed, pause_free = fit_ends(runs, askers.name), fit_ends(runs, pause_free_variant)
    if seed.empty:
        return None
    pauses = seed["fit_end_s"].astype(float)

    def paused_anywhere(found: pd.DataFrame) -> int:
        longest = found[["fit_end_s", "window_fit_end_s"]].astype(float).max(axis=1)
        return int((longest >= PAUSED_S).sum())

    seed_anywhere, free_anywhere = paused_anywhere(seed), paused_anywhere(pause_free)
    fisher_p = share_test(seed_anywhere, len(seed), free_anywhere, len(pause_free)) if len(pause_free) else None
    return KerasPause(
        runs=len(seed),
        paused=int((pauses >= PAUSED_S).sum()),
        longest_s=float(pauses.max()),
        pause_free_variant=pause_free_variant,
        pause_free_runs=len(pause_free),
        seed_paused_anywhere=seed_anywhere,
        pause_free_paused_anywhere=free_anywhere,
        fisher_p=fisher_p,
    )
