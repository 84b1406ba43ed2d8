"""torch probes of every device: one small eager op, and the asker's step's time and ops (torch.profiler)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable

import numpy as np

from tiny_mlp_bench.timing import seconds_of, time_calls

EAGER_CALLS = 1000
STEP_CALLS = 50
FETCH_CALLS = 100  # batches a repeat of a fetch part timed alone
PROFILED_STEPS = 10
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")
# The op whose calls read the profiler's own cost: a view of a tensor as itself does no work and calls no other op.
PROFILER_COST_OP = "aten::view"


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
        return self.step(self.features, self.target)

    def on(self, batch):
        """The step on another batch of rows: what the asker's loop runs on each batch it fetches."""
        return self.step(batch[:, :2], batch[:, 2])

    def step(self, features, target):
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(features).squeeze(), target)
        loss.backward()
        self.optimizer.step()
        return loss


def count_step_ops(torch, step: Callable[[], object], on_cuda: bool, steps: int = PROFILED_STEPS) -> dict:
    """What ``steps`` calls of ``step`` run, per step, as torch.profiler records it, and the host time its ops and
    launch calls took themselves (host_self_times)."""
    from torch.autograd import DeviceType
    from torch.profiler import profile

    def profiled_steps() -> None:
        for _ in range(steps):
            step()
        if on_cuda:
            torch.cuda.synchronize()  # every kernel finished, so the profiler has them all

    with profile(activities=profiled_activities(on_cuda)) as prof:
        profiled_wall_us = seconds_of(profiled_steps) * 1e6
    events = list(prof.events())

    def is_aten(event) -> bool:
        return event.device_type == DeviceType.CPU and event.name.startswith("aten::")

    def has_aten_below(event) -> bool:
        return any(is_aten(child) or has_aten_below(child) for child in event.cpu_children)

    aten = [e for e in events if is_aten(e)]
    launches = [e for e in events if e.name in LAUNCH_CALLS] if on_cuda else None
    counts = {
        "profiled_steps": steps,
        "aten_calls_per_step": len(aten),
        "leaf_aten_ops_per_step": sum(not has_aten_below(e) for e in aten),
    }
    if on_cuda:
        counts["kernels_per_step"] = count_kernels(events)
        counts["kernel_launch_calls_per_step"] = len(launches)
    for key in counts:
        if key != "profiled_steps":
            counts[key] = round(counts[key] / steps)
    return (
        counts
        | host_self_times(aten, launches, steps)
        | {"profiled_wall_us_per_step": round(profiled_wall_us / steps, 4)}
    )


def profiled_activities(on_cuda: bool) -> list:
    from torch.profiler import ProfilerActivity

    return [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_cuda else [])


def host_self_times(aten: list, launches: list | None, steps: int) -> dict:
    """Per step, the aten ops' self CPU time, in all and by op name, and with ``launches`` (cuda) the launch calls'.

    Self time is an event's time less its children's (FunctionEvent.self_cpu_time_total, read in torch 2.13: its
    cpu_time_total less each cpu_child's), and the profiler makes every host event nested inside an op on its thread
    that op's child, the CUDA runtime's launch calls included. So the ops' self times, nested and top-level summed,
    count each microsecond once and leave the launch calls' time out; launches_counted_twice checks that nesting on
    each cuda probe's events, and the record says how many per step it did not hold for (the report says so: a probe
    on a GPU had for minutes is not thrown away for it)."""
    calls, self_us = Counter(), Counter()
    for event in aten:
        calls[event.name] += 1
        self_us[event.name] += event.self_cpu_time_total
    times = {
        "aten_self_us_per_step": round(sum(self_us.values()) / steps, 4),
        "aten_self_by_op": {
            name: {"calls_per_step": round(calls[name] / steps, 2), "self_us_per_step": round(self_us[name] / steps, 4)}
            for name in sorted(calls)
        },
    }
    if launches is not None:
        times["launch_self_us_per_step"] = round(sum(e.self_cpu_time_total for e in launches) / steps, 4)
        times["launch_calls_counted_twice_per_step"] = round(launches_counted_twice(aten, launches) / steps, 2)
    return times


def launches_counted_twice(aten: list, launches: list) -> int:
    """Launch calls whose time overlaps an aten op's on the host though the profiler did not nest them below it (as
    where it labels the two with different threads, or a clock puts a launch's end past its op's): that op's self
    time holds them too."""
    counted = 0
    for launch in launches:
        above, parent = set(), launch.cpu_parent
        while parent is not None:
            above.add(id(parent))
            parent = parent.cpu_parent
        start, end = launch.time_range.start, launch.time_range.end
        counted += any(op.time_range.start < end and start < op.time_range.end and id(op) not in above for op in aten)
    return counted


def profiler_cost(torch, device, on_cuda: bool, ops: int) -> dict:
    """What torch.profiler adds to each op it records: ``ops`` views of a one-element tensor as itself (one aten op
    each, no work) timed unprofiled and then profiled as the step is (time_calls both), and the difference per op.
    Where the profiler recorded another number of events than calls, that is recorded beside the cost, not raised:
    on a GPU study it would discard the probe's every other measurement."""
    from torch.profiler import profile

    x = torch.zeros(1, device=device)

    def view():
        return x.view(1)

    unprofiled = time_calls(view, ops)
    with profile(activities=profiled_activities(on_cuda)) as prof:
        profiled = time_calls(view, ops)
    recorded = sum(e.name == PROFILER_COST_OP for e in prof.events())
    ran = ops * (profiled["repeats"] + 1)  # time_calls' warm-up repeat too
    cost = {
        "op": PROFILER_COST_OP,
        "unprofiled": unprofiled,
        "profiled": profiled,
        "per_op_us": round(profiled["value_us"] - unprofiled["value_us"], 4),
    }
    if recorded != ran:
        print(f"warning: the profiler recorded {recorded} {PROFILER_COST_OP} events of {ran} calls", file=sys.stderr)
        cost["events_mismatch"] = {"recorded": recorded, "calls": ran}
    return cost


def count_kernels(events) -> int:
    from torch.autograd import DeviceType

    return sum(is_kernel(event, DeviceType) for event in events)


def is_kernel(event, device_type) -> bool:
    """A kernel on the device: not a memcpy, memset or annotated range (the profiler puts those there too)."""
    if event.device_type != device_type.CUDA or getattr(event, "is_user_annotation", False):
        return False
    activity = getattr(event, "activity_type", None)
    if activity:
        return activity == "kernel"
    return not event.name.startswith(("Memcpy", "Memset"))


def seed_step(
    torch, device, sync, batch_rows: np.ndarray, hidden_units: int, learning_rate: float, weights=None
) -> dict:
    """Time of the asker's step on one batch on the device, the ops it runs and their own host time (count_step_ops),
    and what the profiler adds to each op it records (profiler_cost)."""
    from tiny_mlp_bench.backends.torch_common import adam_implementation

    batch = torch.tensor(batch_rows, dtype=torch.float, device=device)
    step = SeedStep(torch, device, batch, hidden_units, learning_rate, weights)
    timed = time_calls(step, STEP_CALLS, sync=sync)
    on_cuda = torch.device(device).type == "cuda"
    counts = count_step_ops(torch, step, on_cuda)
    # As many recorded ops as the profiled steps ran, so the cost per op is read at the same scale.
    cost = profiler_cost(torch, device, on_cuda, counts["aten_calls_per_step"] * counts["profiled_steps"])
    return timed | counts | {"profiler_cost_per_op": cost, "adam": adam_implementation(step.optimizer)}


# Epochs of the asker's DataLoader one timed call fetches: the loader alone, to set the `parts` rung's fetch beside.
LOADER_EPOCHS = 5


def time_epochs(batches, each: Callable[[object], object], sync: Callable[[], object] | None = None) -> dict:
    """``each`` on every item of LOADER_EPOCHS passes over ``batches`` (a loader, a sampler, a list), timed whole
    (time_calls, a call holding every pass), in microseconds a batch."""
    per_call = LOADER_EPOCHS * len(batches)

    def epochs() -> None:
        for _ in range(LOADER_EPOCHS):
            for batch in batches:
                each(batch)

    timed = time_calls(epochs, 1, sync=sync, kernels_per_call=per_call)
    timed["batches_per_call"] = timed.pop("kernels_per_call")
    return timed


def ignore(_batch) -> None:
    """What the loader alone does with each batch."""


def loader_fetch(loader) -> dict:
    """The asker's DataLoader (backends/torch_loops.askers_loader) iterated alone, whole epochs a call, in
    microseconds a batch: each epoch's new iterator and its last, empty fetch included, which the `parts` rung leaves
    outside its fetch; and the same fetch in its own parts (fetch_parts)."""
    return time_epochs(loader, ignore) | {"fetch_parts": fetch_parts(loader)}


def fetch_between_steps(loader, torch, device, sync, hidden_units: int, learning_rate: float, weights=None) -> dict:
    """The fetch and copy of a batch of the asker's DataLoader as they cost between the asker's steps, read
    without a clock inside the loop: the asker's loop (whole epochs a call) less the same number of steps on one batch
    already on the device, in microseconds a batch. The DataLoader alone runs with nothing between its fetches; in
    the loop each fetch follows a step, and what a step leaves behind can make the next fetch slower."""
    one_batch = loader.dataset[: loader.batch_size].to(device, copy=True)  # the first rows, as the probe's step
    step = SeedStep(torch, device, one_batch, hidden_units, learning_rate, weights)
    loop = time_epochs(loader, lambda batch: step.on(batch.to(device)), sync)
    # As many steps, on one batch sliced each step as the loop slices each batch it fetches.
    steps = time_epochs([one_batch] * len(loader), step.on, sync)
    return {"loop": loop, "steps": steps, "value_us": round(loop["value_us"] - steps["value_us"], 4)}


def fetch_parts(loader) -> dict:
    """The DataLoader's fetch of a batch in the parts its own code runs, each timed alone in microseconds a batch:
    the sampler's indices (whole epochs a call), the rows read one index at a time, and the collate that stacks them;
    what the loader alone takes beyond their sum is its iterator's own machinery. Timed here, not in the `parts`
    rung: a wrapper around each would cost a share of what it times."""
    batch_sampler, rows, collate = loader.batch_sampler, loader.dataset, loader.collate_fn
    indices = next(iter(batch_sampler))
    batch_rows = [rows[i] for i in indices]
    return {
        "sampler": time_epochs(batch_sampler, ignore),
        "rows": time_calls(lambda: [rows[i] for i in indices], FETCH_CALLS),
        "collate": time_calls(lambda: collate(batch_rows), FETCH_CALLS),
    }
