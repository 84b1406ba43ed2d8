"""Probes: the fixed costs a tiny training step pays, measured on one framework and device.

A step of the question's 2->20->1 MLP does almost no arithmetic; its time is what every op, launch,
sync and call costs whatever its size. These functions measure those costs and return numbers
(microseconds, the median over repeats of many calls each, and how many calls and repeats); the
caller (scripts/probe_fixed_costs.py) loads the framework, decides whether the device is there and
writes the results as a probe record, validated against probe_record.schema.json.

- torch, every device: one small eager op; the asker's step (time, and the ops it runs as the
  profiler counts them).
- torch, cuda: an empty synchronize, one replay of a one-kernel CUDA graph, and the cost of each
  kernel inside a graph of many.
- torch, cpu: how often the question's initialisation is dead at start (the last ReLU never fires
  on the training rows, so no gradient ever flows and the model predicts 0); and the ``fused_epoch``
  rung's compiled call, with its one fused kernel's share of it.
- keras: the fixed cost of each ``fit`` epoch, from epochs of one step and of every train row.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tiny_mlp_bench.records import PROBE_SCHEMA, read_record, validate_record, write_record

PROBE_RECORD_TYPE = "tiny-mlp-bench.probe"
PROBE_SCHEMA_VERSION = 1

# How much each probe runs. A repeat times ``calls`` calls together; the record keeps the median repeat.
REPEATS = 7
EAGER_CALLS = 1000
STEP_CALLS = 50
PROFILED_STEPS = 10
SYNC_CALLS = 1000
GRAPH_REPLAYS = 1000
GRAPH_KERNELS = 100  # kernels in the graph whose per-kernel cost is measured
GRAPH_KERNEL_REPLAYS = 50
INIT_DRAWS = 1000
FUSED_EPOCH_CALLS = 100  # compiled epoch calls of the fused_epoch rung per repeat
FUSED_EPOCH_PROFILED = 100  # calls under torch.profiler, for the kernel's own time
FIT_EPOCHS = 10  # timed epochs per fit
FIT_ROUNDS = 3  # fits of each size, alternated, so that drift in the machine's load hits both alike
INIT_SCHEME = "torch.nn.Linear default (uniform ±1/sqrt(fan_in)), torch.manual_seed(0..999)"
# CUDA runtime and driver calls that launch a kernel, as the profiler names them.
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")

Say = Callable[[str], None]


def _quiet(message: str) -> None:
    pass


# --- timing ----------------------------------------------------------------------------------


def time_calls(
    fn: Callable[[], object],
    calls: int,
    repeats: int = REPEATS,
    sync: Callable[[], object] | None = None,
    kernels_per_call: int | None = None,
) -> dict:
    """Median microseconds per call of ``fn`` over ``repeats`` repeats of ``calls`` calls each.

    One untimed repeat warms up first. ``sync`` (the device's synchronize) runs before the clock
    starts and before it stops, so on CUDA a repeat is ``calls`` launches and one wait. With
    ``kernels_per_call`` the value is per kernel: a call's time divided by it.
    """
    per = calls * (kernels_per_call or 1)

    def one_repeat() -> float:
        if sync is not None:
            sync()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        if sync is not None:
            sync()
        return (time.perf_counter() - start) * 1e6 / per

    one_repeat()  # warm-up
    found = [one_repeat() for _ in range(repeats)]
    timed = {
        "value_us": round(statistics.median(found), 4),
        "calls": calls,
        "repeats": repeats,
        "repeat_us": [round(v, 4) for v in found],
    }
    if kernels_per_call is not None:
        timed["kernels_per_call"] = kernels_per_call
    return timed


# --- torch -----------------------------------------------------------------------------------


def eager_op(torch, device, sync, batch_size: int, hidden_units: int) -> dict:
    """One small eager op: an in-place add on a batch x width tensor (a hidden activation's size)."""
    x = torch.zeros(batch_size, hidden_units, device=device)
    return time_calls(lambda: x.add_(1.0), EAGER_CALLS, sync=sync)


class SeedStep:
    """The asker's step on one batch already on the device: the model, default Adam and MSE of the question."""

    def __init__(self, torch, device, batch, hidden_units: int, learning_rate: float, weights=None):
        from tiny_mlp_bench.backends.torch_common import build_model

        self.model = build_model(torch, hidden_units, weights).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=learning_rate)
        self.loss_fn = torch.nn.MSELoss()
        self.features, self.target = batch[:, :2], batch[:, 2]

    def __call__(self):
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(self.features).squeeze(), self.target)
        loss.backward()
        self.optimizer.step()
        return loss


def count_step_ops(torch, step: Callable[[], object], on_cuda: bool, steps: int = PROFILED_STEPS) -> dict:
    """What ``steps`` calls of ``step`` run, per step, as torch.profiler records it.

    Counted, each the rounded mean per step:
    - aten_calls_per_step: every ``aten::`` operator event on the host, nested ones included (an
      op that calls other ops counts once for itself and once for each it calls).
    - leaf_aten_ops_per_step: the ``aten::`` events with no ``aten::`` event anywhere below them,
      i.e. the operators that do their work themselves rather than through other operators.
    - cuda only, kernels_per_step: device events of the profiler's "kernel" activity, i.e. the
      CUDA kernels that ran (memcpys, memsets and the device spans of annotated ranges are not
      kernels and are not counted: count_kernels).
    - cuda only, kernel_launch_calls_per_step: host calls into the CUDA runtime or driver named in
      LAUNCH_CALLS (cudaLaunchKernel and its kin), one per kernel launched outside a graph; a
      library that launches through the driver API (cuBLAS: cuLaunchKernel) is counted only where
      the profiler traces the driver API, so this can be below kernels_per_step.
    The step must have been run before (warm-up), so Adam's state exists and nothing is first-time.
    """
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_cuda else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            step()
        if on_cuda:
            torch.cuda.synchronize()  # every kernel finished, so the profiler has them all
    events = list(prof.events())

    def is_aten(event) -> bool:
        return event.device_type == DeviceType.CPU and event.name.startswith("aten::")

    def has_aten_below(event) -> bool:
        return any(is_aten(child) or has_aten_below(child) for child in event.cpu_children)

    aten = [e for e in events if is_aten(e)]
    counts = {
        "profiled_steps": steps,
        "aten_calls_per_step": len(aten),
        "leaf_aten_ops_per_step": sum(not has_aten_below(e) for e in aten),
    }
    if on_cuda:
        counts["kernels_per_step"] = count_kernels(events)
        counts["kernel_launch_calls_per_step"] = sum(e.name in LAUNCH_CALLS for e in events)
    for key in counts:
        if key != "profiled_steps":
            counts[key] = round(counts[key] / steps)
    return counts


def count_kernels(events) -> int:
    """The CUDA kernels that ran among a profiler's events (torch.profiler's FunctionEvent list)."""
    from torch.autograd import DeviceType

    return sum(is_kernel(event, DeviceType) for event in events)


def is_kernel(event, device_type) -> bool:
    """A device event of the kernel activity. Not a memcpy or memset, and not an annotation: the profiler
    also puts each annotated range (``record_function``, the optimizer's ``Optimizer.step#Adam.step``)
    on the device, as a span over the kernels inside it. Where a profiler leaves activity_type unset,
    its user-annotation flag and the name decide."""
    if event.device_type != device_type.CUDA or getattr(event, "is_user_annotation", False):
        return False
    activity = getattr(event, "activity_type", None)
    if activity:
        return activity == "kernel"
    return not event.name.startswith(("Memcpy", "Memset"))


def seed_step(
    torch, device, sync, batch_rows: np.ndarray, hidden_units: int, learning_rate: float, weights=None
) -> dict:
    """Time of the asker's step on one batch on the device, and the ops it runs (count_step_ops).

    The model starts from ``weights`` (an InitialWeights, as the runs do) or, without, from torch's own draw.
    """
    from tiny_mlp_bench.backends.torch_common import adam_implementation

    batch = torch.tensor(batch_rows, dtype=torch.float, device=device)
    step = SeedStep(torch, device, batch, hidden_units, learning_rate, weights)
    timed = time_calls(step, STEP_CALLS, sync=sync)
    counts = count_step_ops(torch, step, on_cuda=torch.device(device).type == "cuda")
    return timed | counts | {"adam": adam_implementation(step.optimizer)}


def sync_empty(torch) -> dict:
    """torch.cuda.synchronize() with nothing queued: the cost of asking the device whether it is done."""
    torch.cuda.synchronize()
    return time_calls(torch.cuda.synchronize, SYNC_CALLS)


def captured_adds(torch, kernels: int):
    """A CUDA graph of ``kernels`` in-place adds on a small tensor (one tiny kernel each), captured as the docs say."""
    x = torch.zeros(64, 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up on a side stream before capture
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            x.add_(1.0)
    torch.cuda.synchronize()
    return graph, x  # x is the graph's memory: keep it alive as long as the graph


def graph_replay_one_kernel(torch) -> dict:
    """One replay of a graph holding one tiny kernel: ``calls`` replays, one synchronize."""
    graph, _x = captured_adds(torch, 1)
    return time_calls(graph.replay, GRAPH_REPLAYS, sync=torch.cuda.synchronize)


def graph_kernel_inside(torch, kernels: int = GRAPH_KERNELS) -> dict:
    """Per kernel inside a graph of ``kernels`` tiny kernels: a replay's time / ``kernels``."""
    graph, _x = captured_adds(torch, kernels)
    return time_calls(graph.replay, GRAPH_KERNEL_REPLAYS, sync=torch.cuda.synchronize, kernels_per_call=kernels)


def dead_at_start(torch, model, features) -> bool:
    """Whether the model's final ReLU gets input <= 0 on every row: it outputs 0 and passes no gradient, ever."""
    with torch.no_grad():
        pre_activation = model.linear2(torch.nn.functional.relu(model.linear1(features)))
    return bool((pre_activation <= 0).all())


def count_dead_inits(torch, hidden_units: int, train_features: np.ndarray, draws: int = INIT_DRAWS) -> int:
    """How many of the seeds 0..draws-1 give the asker's initialisation (manual_seed, build_model) dead at start.

    Counted on one intra-op thread (the caller's count is restored after): the answer does not
    depend on it, and a thousand tiny forwards on a pool of busy cores spend most of their time
    waking the pool.
    """
    from tiny_mlp_bench.backends.torch_common import build_model

    features = torch.tensor(train_features, dtype=torch.float)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        dead = 0
        for seed in range(draws):
            torch.manual_seed(seed)
            dead += dead_at_start(torch, build_model(torch, hidden_units), features)
    finally:
        torch.set_num_threads(threads)
    return dead


def fused_epoch_call(torch, spec, data) -> dict:
    """torch, cpu: the fused_epoch rung's compiled call on one fixed permutation, and its fused kernel's own time.

    The call is what the rung pays per epoch. torch.profiler, with Inductor's kernel profiling on,
    gives the time inside the one fused C++ kernel; the rest is what calling the compiled graph costs
    whatever the kernel does: Dynamo's guards and the wrapper that allocates and passes its buffers.
    The first call compiles (cold, about a minute on a 2-core machine) and is not timed.
    """
    import torch._inductor.config as inductor_config

    from tiny_mlp_bench.backends.torch_epoch import FusedEpochLoop
    from tiny_mlp_bench.timing import Clock

    inductor_config.cpp.enable_kernel_profile = True  # the kernel shows in the profiler under its own name
    loop = FusedEpochLoop(torch, dataclasses.replace(spec, device="cpu", variant="fused_epoch"), data, Clock())
    order = torch.randperm(len(data.train))
    loop.run_epoch(order)  # compiles
    call = time_calls(lambda: loop.run_epoch(order), FUSED_EPOCH_CALLS)
    with torch.profiler.profile() as profile:
        for _ in range(FUSED_EPOCH_PROFILED):
            loop.run_epoch(order)
    kernel_us = sum(e.self_cpu_time_total for e in profile.key_averages() if "cpp_fused" in e.key)
    return {
        **call,
        "steps_per_call": math.ceil(len(data.train) / spec.batch_size),
        "profiled_calls": FUSED_EPOCH_PROFILED,
        "kernel_us": round(kernel_us / FUSED_EPOCH_PROFILED, 4),
    }


def torch_probes(
    torch,
    device: str,
    data,
    batch_size: int,
    hidden_units: int,
    learning_rate: float,
    weights,
    found: dict,
    say: Say = _quiet,
    spec=None,
) -> dict:
    """Run every torch probe of ``device``, adding each result to ``found`` as it is measured; returns ``found``.

    Threads are the caller's to set; the timed step starts from ``weights`` (the runs' InitialWeights).
    ``found`` keeps what was measured if a later probe raises. With ``spec`` (the run spec the probe
    script builds) the cpu probes also time the fused_epoch rung's compiled call.
    """
    from tiny_mlp_bench.backends.torch_common import device_sync

    on = torch.device("cuda:0" if device == "cuda" else "cpu")
    sync = device_sync(torch, device)
    found["eager_op_us"] = eager_op(torch, on, sync, batch_size, hidden_units)
    say(f"eager op {found['eager_op_us']['value_us']:.2f} µs")
    rows = data.train[:batch_size]
    step = found["seed_step"] = seed_step(torch, on, sync, rows, hidden_units, learning_rate, weights)
    ops = (
        f"{step['kernels_per_step']} kernels" if device == "cuda" else f"{step['leaf_aten_ops_per_step']} leaf aten ops"
    )
    say(f"seed step {step['value_us']:.1f} µs, {ops} per step ({step['adam']} Adam)")
    if device == "cuda":
        found["sync_empty_us"] = sync_empty(torch)
        say(f"empty synchronize {found['sync_empty_us']['value_us']:.2f} µs")
        found["graph_replay_1kernel_us"] = graph_replay_one_kernel(torch)
        say(f"one-kernel graph replay {found['graph_replay_1kernel_us']['value_us']:.2f} µs")
        found["graph_kernel_inside_us"] = graph_kernel_inside(torch)
        say(f"kernel inside a {GRAPH_KERNELS}-kernel graph {found['graph_kernel_inside_us']['value_us']:.2f} µs")
    else:
        dead = count_dead_inits(torch, hidden_units, data.train[:, :2])
        found["initialisation"] = {"draws": INIT_DRAWS, "dead": dead, "scheme": INIT_SCHEME}
        say(f"initialisation dead at start in {dead} of {INIT_DRAWS} draws")
        if spec is not None:
            say("compiling the fused_epoch rung's epoch (cold) to time its call")
            call = found["fused_epoch_call"] = fused_epoch_call(torch, spec, data)
            say(f"fused_epoch call {call['value_us']:.1f} µs, its fused kernel {call['kernel_us']:.1f} µs")
    return found


# --- keras -----------------------------------------------------------------------------------


def epoch_times_us(keras, model, x, y, batch_size: int, epochs: int) -> list[float]:
    """Microseconds of each epoch of one ``fit``: from one epoch's end to the next (the first from on_train_begin)."""
    stamps: list[float] = []

    class EpochStamps(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            stamps.append(time.perf_counter())

        def on_epoch_end(self, epoch, logs=None):
            stamps.append(time.perf_counter())

    model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=0, callbacks=[EpochStamps()])
    return [(end - start) * 1e6 for start, end in itertools.pairwise(stamps)]


def as_timed(per_epoch_us: list[float]) -> dict:
    """Epochs of one fit as a timing: each epoch one repeat of one call."""
    return {
        "value_us": round(statistics.median(per_epoch_us), 4),
        "calls": 1,
        "repeats": len(per_epoch_us),
        "repeat_us": [round(v, 4) for v in per_epoch_us],
    }


def keras_fit_epoch(
    fw, spec, data, found: dict, epochs: int = FIT_EPOCHS, rounds: int = FIT_ROUNDS, say: Say = _quiet
) -> dict:
    """The fixed cost of each ``fit`` epoch of the asker's model and compile; adds ``fit_epoch`` to ``found``.

    Epochs of one step (batch_size rows) take t1, epochs of every train row (S steps) take tS, each
    the median over ``rounds`` fits of ``epochs`` epochs, the two sizes alternated. A step inside
    fit costs (tS - t1) / (S - 1) and an epoch's fixed cost is t1 less one step. Both sizes are
    warmed up first (the short last batch traces its own train function). ``fw`` is what
    keras_fit's loader returned, already prepared and started on the device.
    """
    from tiny_mlp_bench.backends.keras_fit import FitRun
    from tiny_mlp_bench.timing import Clock

    keras = fw.keras
    model = FitRun(fw, spec, data, Clock()).model  # the asker's Sequential and compile("mse", Adam(lr))
    x, y = data.train[:, :2], data.train[:, 2]
    steps = math.ceil(len(x) / spec.batch_size)
    if steps < 2:
        raise ValueError(
            f"{len(x)} train rows make one batch of {spec.batch_size}: need two steps to tell a step's cost"
        )
    one_x, one_y = x[: spec.batch_size], y[: spec.batch_size]
    for warm_x, warm_y in ((one_x, one_y), (x, y)):
        model.fit(warm_x, warm_y, batch_size=spec.batch_size, epochs=2, verbose=0)
    one_us: list[float] = []
    many_us: list[float] = []
    for _ in range(rounds):
        one_us += epoch_times_us(keras, model, one_x, one_y, spec.batch_size, epochs)
        many_us += epoch_times_us(keras, model, x, y, spec.batch_size, epochs)
    one, many = as_timed(one_us), as_timed(many_us)
    say(f"fit epoch of 1 step {one['value_us']:.0f} µs, of {steps} steps {many['value_us']:.0f} µs")
    per_step = (many["value_us"] - one["value_us"]) / (steps - 1)
    found["fit_epoch"] = {
        "one_step_epoch": one,
        "many_step_epoch": many,
        "steps_per_epoch": steps,
        "fits": rounds,
        "per_step_us": round(per_step, 4),
        "fixed_per_epoch_us": round(one["value_us"] - per_step, 4),
    }
    say(f"a step inside fit {per_step:.0f} µs, fixed cost per epoch {found['fit_epoch']['fixed_per_epoch_us']:.0f} µs")
    return found


# --- the record ------------------------------------------------------------------------------


def validate_probe(record: dict, source: str = "probe record") -> dict:
    """Return ``record`` if it matches probe_record.schema.json; else raise RecordError naming the field."""
    return validate_record(record, source, PROBE_SCHEMA)


def write_probe(record: dict, path: Path) -> None:
    """Validate and write a probe record atomically, keys sorted so equal records give equal bytes."""
    write_record(record, path, PROBE_SCHEMA)


def read_probe(path: Path) -> dict:
    """Read and validate one probe record; errors name the file."""
    return read_record(path, PROBE_SCHEMA)
