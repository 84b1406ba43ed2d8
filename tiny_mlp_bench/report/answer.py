"""The numbers behind the report's opening answer: why the GPU is slower, why Keras is slower or faster,
what to use instead. Each field is None where this run did not measure it; the template then says so.

Numbers only: the wording is in report.md.j2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tiny_mlp_bench.report.fixed_costs import FixedCosts, Floor
from tiny_mlp_bench.report.ladder import Ladder, Rung


@dataclass(frozen=True)
class GpuAnswer:
    """The asker's loop on cuda against cpu, and the fixed costs that explain it."""

    cuda_s: float | None  # seed timing points (medians)
    cpu_s: float | None
    cuda_step_s: float | None  # seed steady-state step times (medians)
    cpu_step_s: float | None
    kernels: int | None  # kernels the asker's step runs on cuda (profiler)
    eager_op_s: float | None  # one eager cuda op
    arithmetic_s: float | None  # the whole step's arithmetic on this CPU: the numba floor rung

    @property
    def launch_s(self) -> float | None:
        """The step's launch cost: its kernels at one eager op each."""
        return self.kernels * self.eager_op_s if self.kernels and self.eager_op_s else None


@dataclass(frozen=True)
class KerasAnswer:
    """Keras's `fit` against torch's loop on the same device, and Keras's cost per epoch."""

    device: str
    keras_s: float | None  # seed timing points (medians)
    torch_s: float | None
    keras_step_s: float | None  # Keras seed's steady-state step (median)
    epoch_fixed_s: float | None  # the probe's fixed cost of one fit epoch
    steps_per_epoch: int | None

    @property
    def epoch_share(self) -> float | None:
        """The part of a Keras step that is its epoch's fixed cost spread over the epoch's steps."""
        if not (self.epoch_fixed_s and self.steps_per_epoch and self.keras_step_s):
            return None
        return self.epoch_fixed_s / self.steps_per_epoch / self.keras_step_s


@dataclass(frozen=True)
class BestRung:
    """The fastest rung on a device, against the asker's torch loop there."""

    device: str
    rung: Rung | None
    seed_step_s: float | None  # torch seed on that device

    @property
    def speedup(self) -> float | None:
        return self.seed_step_s / self.rung.step_s if self.rung and self.seed_step_s else None


@dataclass(frozen=True)
class Answer:
    gpu: GpuAnswer
    keras: KerasAnswer
    best: tuple[BestRung, ...]  # cpu, then cuda


def seed_of(ladders: dict[str, Ladder], pair: str) -> Rung | None:
    ladder = ladders.get(pair)
    return ladder.rung("seed") if ladder else None


def answer(
    ladders: tuple[Ladder, ...], timing_points: dict[str, float], costs: dict[str, FixedCosts], floors: dict[str, Floor]
) -> Answer:
    """``timing_points``: the seed runs' median timing point per pair."""
    by_pair = {ladder.pair: ladder for ladder in ladders}
    cuda_seed, cpu_seed = seed_of(by_pair, "torch-cuda"), seed_of(by_pair, "torch-cpu")
    cuda_costs, cpu_costs = costs.get("cuda"), costs.get("cpu")
    gpu = GpuAnswer(
        cuda_s=timing_points.get("torch-cuda"),
        cpu_s=timing_points.get("torch-cpu"),
        cuda_step_s=cuda_seed.step_s if cuda_seed else None,
        cpu_step_s=cpu_seed.step_s if cpu_seed else None,
        kernels=cuda_costs.ops_per_step if cuda_costs else None,
        eager_op_s=cuda_costs.eager_op_s if cuda_costs else None,
        arithmetic_s=floors["cpu"].step_s if "cpu" in floors else None,
    )
    keras_seed = seed_of(by_pair, "keras-cpu")
    keras = KerasAnswer(
        device="cpu",
        keras_s=timing_points.get("keras-cpu"),
        torch_s=timing_points.get("torch-cpu"),
        keras_step_s=keras_seed.step_s if keras_seed else None,
        epoch_fixed_s=cpu_costs.keras_epoch_s if cpu_costs else None,
        steps_per_epoch=cpu_costs.keras_steps_per_epoch if cpu_costs else None,
    )
    best = []
    for device in ("cpu", "cuda"):
        rungs = [r for ladder in ladders if ladder.device == device for r in ladder.rungs if not math.isnan(r.step_s)]
        seed = seed_of(by_pair, f"torch-{device}")
        best.append(
            BestRung(device, min(rungs, key=lambda r: r.step_s) if rungs else None, seed.step_s if seed else None)
        )
    return Answer(gpu, keras, tuple(best))
