"""torch probes of every device: one small eager op, and the asker's step's time and ops (torch.profiler)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tiny_mlp_bench.timing import time_calls

EAGER_CALLS = 1000
STEP_CALLS = 50
PROFILED_STEPS = 10
LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")


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
    """What ``steps`` calls of ``step`` run, per step, as torch.profiler records it."""
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
    """Time of the asker's step on one batch on the device, and the ops it runs (count_step_ops)."""
    from tiny_mlp_bench.backends.torch_common import adam_implementation

    batch = torch.tensor(batch_rows, dtype=torch.float, device=device)
    step = SeedStep(torch, device, batch, hidden_units, learning_rate, weights)
    timed = time_calls(step, STEP_CALLS, sync=sync)
    counts = count_step_ops(torch, step, on_cuda=torch.device(device).type == "cuda")
    return timed | counts | {"adam": adam_implementation(step.optimizer)}
