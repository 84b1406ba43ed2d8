"""The numbers behind the report's opening answer: why the GPU is slower, why Keras is slower or faster,
the fastest choice on each device in both views. Each field is None where this run did not measure
it; the template then says so.

Numbers only: the wording is in report.md.j2.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench.report.fixed_costs import FixedCosts, Floor
from tiny_mlp_bench.report.ladder import Ladder, Rung

HAND_WRITTEN = "numpy"  # the framework of the hand-written reference and floor loops
KERAS_BACKENDS = {"keras": "TensorFlow", "keras_jax": "JAX", "keras_torch": "PyTorch"}  # framework -> backend


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
class ArchivedGpu:
    """The asker's loop on cuda against cpu from an archived study of one GPU host: the GPU answer
    a report quotes where its own run has no completed cuda run."""

    archive: str  # the archive's folder name
    host: str
    gpu: str
    date: str  # the day its first quoted run started
    cuda_s: float  # seed timing points (medians)
    cpu_s: float
    cuda_step_s: float | None  # seed steady-state step times (medians)
    cpu_step_s: float | None
    runs: int  # the seed runs quoted, cuda and cpu


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
class KerasBackend:
    """The asker's Keras `fit` (the seed rung) on one Keras backend and device."""

    device: str
    backend: str  # TensorFlow, JAX or PyTorch
    step_s: float  # steady-state step (median)
    step_min_s: float
    step_max_s: float
    vs_tensorflow: float | None  # TensorFlow's step over this one: above 1, faster than the asker's backend


@dataclass(frozen=True)
class Fastest:
    """A device's fastest choice in the two views: time to result (the timing point, one-time costs
    included) and steady-state time per step. None where nothing completed on the device."""

    device: str
    to_result: tuple[str, str, float] | None  # pair, variant, median timing point (s)
    per_step: tuple[str, str, float] | None  # pair, variant, median steady-state step (s)
    seed_step_s: float | None  # the asker's torch loop on the device, per step
    # The same among libraries a user would pick up, leaving out the hand-written NumPy and numba loops.
    library_to_result: tuple[str, str, float] | None
    library_per_step: tuple[str, str, float] | None

    @property
    def speedup(self) -> float | None:
        """How many times faster per step the fastest choice is than the asker's torch loop."""
        return self.seed_step_s / self.per_step[2] if self.per_step and self.seed_step_s else None


@dataclass(frozen=True)
class Answer:
    gpu: GpuAnswer
    keras: KerasAnswer
    keras_backends: tuple[KerasBackend, ...]  # per device (cpu first), TensorFlow first; the measured ones
    fastest: tuple[Fastest, ...]  # cpu, then cuda


def seed_of(ladders: dict[str, Ladder], pair: str) -> Rung | None:
    ladder = ladders.get(pair)
    return ladder.rung("seed") if ladder else None


def fastest(summary: pd.DataFrame, device: str, seed: Rung | None) -> Fastest:
    """The device's fastest pair and variant to a result and per step, from the per-variant medians."""
    rows = summary[summary["device"] == device]
    libraries = rows[rows["framework"] != HAND_WRITTEN]

    def best(column: str, rows=rows) -> tuple[str, str, float] | None:
        timed = rows.dropna(subset=[column])
        if timed.empty:
            return None
        row = timed.loc[timed[column].idxmin()]
        return row["pair"], row["variant"], float(row[column])

    return Fastest(
        device,
        best("median_s"),
        best("step_s"),
        seed.step_s if seed else None,
        best("median_s", libraries),
        best("step_s", libraries),
    )


def answer(
    ladders: tuple[Ladder, ...],
    summary: pd.DataFrame,
    timing_points: dict[str, float],
    costs: dict[str, FixedCosts],
    floors: dict[str, Floor],
) -> Answer:
    """``summary``: model.summarize's medians per pair and variant; ``timing_points``: the seed runs' per pair."""
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
    choices = tuple(fastest(summary, device, seed_of(by_pair, f"torch-{device}")) for device in ("cpu", "cuda"))
    return Answer(gpu, keras, keras_backends(by_pair), choices)


def keras_backends(by_pair: dict[str, Ladder]) -> tuple[KerasBackend, ...]:
    """The asker's `fit` on each Keras backend that ran it, per device where a backend besides
    TensorFlow did, beside TensorFlow's."""
    found = []
    for device in ("cpu", "cuda"):
        tensorflow = seed_of(by_pair, f"keras-{device}")
        ran = []
        for framework, backend in KERAS_BACKENDS.items():
            if seed := seed_of(by_pair, f"{framework}-{device}"):
                vs = tensorflow.step_s / seed.step_s if tensorflow else None
                ran.append(KerasBackend(device, backend, seed.step_s, seed.step_min_s, seed.step_max_s, vs))
        if any(b.backend != "TensorFlow" for b in ran):
            found += ran
    return tuple(found)
