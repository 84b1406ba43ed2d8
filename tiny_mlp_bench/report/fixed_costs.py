"""The fixed costs the probes measured, and the floor each device's rungs are judged against."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.report.step_parts import StepParts, step_parts

US = 1e-6
# A floor's kind: the floor rung's name (as report/numbers.json has it) where measured, or computed from kernels.
COMPUTED = "kernels"


@dataclass(frozen=True)
class Floor:
    """The least a step can cost on a device, and how that was found."""

    device: str
    step_s: float
    kind: str  # the floor rung's name: its measured time; COMPUTED: kernels per step x in-graph kernel cost
    kernels: int | None = None
    kernel_s: float | None = None

    @property
    def measured(self) -> bool:
        """Whether the floor rung measured it: arithmetic alone, any framework's floor."""
        return self.kind != COMPUTED


@dataclass(frozen=True)
class KerasFit:
    """What the Keras probe measured of one Keras framework's ``fit``, in seconds."""

    framework: str  # tf_keras (Keras 2), keras (Keras 3 on TensorFlow), keras_jax (Keras 3 on JAX)
    epoch_fixed_s: float  # the fixed cost of one fit epoch, whatever it runs: derived, one_step_epoch_s less step_s
    step_s: float  # derived: (many_step_epoch_s - one_step_epoch_s) / (steps_per_epoch - 1)
    steps_per_epoch: int
    one_step_epoch_s: float | None = None  # measured: the median epoch of one step and of every train row
    many_step_epoch_s: float | None = None
    epochs_timed: int | None = None  # epochs of each size behind each median


@dataclass(frozen=True)
class FixedCosts:
    """One device's probe numbers, in seconds; None where not measured there."""

    device: str
    eager_op_s: float | None = None  # one small eager torch op
    ops_per_step: int | None = None  # the asker's step: kernels on cuda, leaf aten ops on cpu
    seed_step_s: float | None = None  # the asker's step on a batch already on the device
    step_parts: StepParts | None = None  # that step split into measured parts; None where its probe predates them
    sync_s: float | None = None  # an empty torch.cuda.synchronize()
    graph_replay_s: float | None = None  # replay of a one-kernel CUDA graph
    graph_kernel_s: float | None = None  # one kernel inside a graph of many
    keras_fit: tuple[KerasFit, ...] = ()  # per Keras framework probed, in the catalogue's order
    # One compiled-epoch call (an epoch of steps): its runs' medians, or in older studies the torch cpu probe's.
    fused_call_s: float | None = None
    fused_kernel_s: float | None = None  # the part of that call inside its one fused kernel

    def keras(self, framework: str) -> KerasFit | None:
        return next((k for k in self.keras_fit if k.framework == framework), None)


@dataclass(frozen=True)
class Initialisation:
    """How often the asker's initialisation is dead at start on this dataset (torch-cpu probe)."""

    draws: int
    dead: int

    @property
    def share(self) -> float:
        return self.dead / self.draws


@dataclass(frozen=True)
class ProbeStatus:
    framework: str
    device: str
    status: str
    reason: str | None


def microseconds(block: dict | None, key: str = "value_us") -> float | None:
    return None if block is None or block.get(key) is None else block[key] * US


def fixed_costs(probes: list[dict], runs: pd.DataFrame | None = None) -> dict[str, FixedCosts]:
    """Per device, what the completed probes measured, and the compiled epoch's call its cpu runs measured."""
    found: dict[str, dict] = {}
    for probe in probes:
        if probe["status"] != "ok":
            continue
        m, costs = probe["measurements"], found.setdefault(probe["device"], {})
        if probe["framework"] == "torch":
            step = m.get("seed_step") or {}
            costs |= {
                "eager_op_s": microseconds(m.get("eager_op_us")),
                "ops_per_step": step.get("kernels_per_step", step.get("leaf_aten_ops_per_step")),
                "seed_step_s": microseconds(step),
                "step_parts": step_parts(probe["device"], step),
                "sync_s": microseconds(m.get("sync_empty_us")),
                "graph_replay_s": microseconds(m.get("graph_replay_1kernel_us")),
                "graph_kernel_s": microseconds(m.get("graph_kernel_inside_us")),
            }
            if call := m.get("fused_epoch_call"):
                costs |= {
                    "fused_call_s": microseconds(call),
                    "fused_kernel_s": microseconds(call, "kernel_us"),
                }
        elif "fit_epoch" in m:  # a Keras probe
            epoch = m["fit_epoch"]
            fit = KerasFit(
                probe["framework"],
                microseconds(epoch, "fixed_per_epoch_us"),
                microseconds(epoch, "per_step_us"),
                epoch["steps_per_epoch"],
                microseconds(epoch["one_step_epoch"]),
                microseconds(epoch["many_step_epoch"]),
                epoch["one_step_epoch"]["repeats"],
            )
            fits = sorted(
                (*costs.get("keras_fit", ()), fit), key=lambda k: catalogue.framework_names().index(k.framework)
            )
            costs["keras_fit"] = tuple(fits)
    if runs is not None and "epoch_call_us" in runs:
        compiled = registry.sole_rung(catalogue.Role.COMPILED_EPOCH)  # its cpu runs time their compiled call
        pair = catalogue.pair_name(compiled.framework, "cpu")
        ran = runs[(runs["pair"] == pair) & (runs["variant"] == compiled.name) & (runs["status"] == "ok")]
        ran = ran.dropna(subset=["epoch_call_us", "epoch_kernel_us"])
        if len(ran):
            found.setdefault("cpu", {}).update(
                {
                    "fused_call_s": float(ran["epoch_call_us"].median()) * US,
                    "fused_kernel_s": float(ran["epoch_kernel_us"].median()) * US,
                }
            )
    return {device: FixedCosts(device, **costs) for device, costs in sorted(found.items())}


def initialisation(probes: list[dict]) -> Initialisation | None:
    for probe in probes:
        init = probe["measurements"].get("initialisation") if probe["status"] == "ok" else None
        if init:
            return Initialisation(init["draws"], init["dead"])
    return None


def not_measured(probes: list[dict]) -> tuple[ProbeStatus, ...]:
    return tuple(
        ProbeStatus(p["framework"], p["device"], p["status"], p["reason"]) for p in probes if p["status"] != "ok"
    )


def floors(summary: pd.DataFrame, costs: dict[str, FixedCosts]) -> dict[str, Floor]:
    """Each device's floor: the floor rung's median step where it ran, else on cuda kernels x in-graph kernel cost."""
    found, rung = {}, registry.sole_rung(catalogue.Role.FLOOR)
    for device in catalogue.DEVICES:
        pair = catalogue.pair_name(rung.framework, device)
        ran = summary[(summary["pair"] == pair) & (summary["variant"] == rung.name)]["step_s"].dropna()
        if len(ran):
            found[device] = Floor(device, float(ran.iloc[0]), rung.name)
    cuda = costs.get("cuda")
    if cuda and cuda.ops_per_step and cuda.graph_kernel_s:
        computed = cuda.ops_per_step * cuda.graph_kernel_s
        floor = found.get("cuda") or Floor("cuda", computed, COMPUTED)
        found["cuda"] = replace(floor, kernels=cuda.ops_per_step, kernel_s=cuda.graph_kernel_s)
    return found
