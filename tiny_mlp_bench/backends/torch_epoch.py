"""PyTorch rungs that run a whole epoch per call: fused_epoch (one compiled call), graphed_epoch (one replay)."""

from __future__ import annotations

from tiny_mlp_bench.backends.torch_captured import FunctionalLoop, compiler_cache_detail
from tiny_mlp_bench.timing import time_calls

# cpu: C++ wrapper and one-thread kernels (64 x 20 loops are too small to share). Measured on 2 cores,
# µs per step: Python wrapper 22.5, C++ 20.2; with two threads 25.9, single-threaded kernels 21.3.
COMPILER_OPTIONS = {"cpu": {"cpp_wrapper": True, "cpp.threads": 1}, "cuda": {}}
# For after_timing's untimed second compilation, which names the fused kernel in torch.profiler.
PROFILED_OPTIONS = {"cpp.enable_kernel_profile": True}
SPLIT_CALLS = 100  # epoch calls timed, then as many of the profiled compilation's, after the run


def broadcast_forward(torch, params: dict, x):
    """Linear -> ReLU -> Linear -> ReLU, each x @ W.T as (x[:, :, None] * W.T).sum(1), so it fuses."""
    hidden = torch.relu((x[:, :, None] * params["linear1.weight"].T).sum(1) + params["linear1.bias"])
    return torch.relu((hidden[:, :, None] * params["linear2.weight"].T).sum(1) + params["linear2.bias"])


class FusedEpochLoop(FunctionalLoop):
    """fused_epoch: the epoch's gather and all its steps (forward, backward, Adam) in one compiled call."""

    def compile(self) -> None:
        self.grad_and_loss = self.torch.func.grad_and_value(self.batch_loss)
        options = COMPILER_OPTIONS[self.device.type]
        self.run_epoch = self.torch.compile(self.epoch, fullgraph=True, dynamic=False, options=options)

    def batch_loss(self, params, x, y):
        return self.loss_fn(broadcast_forward(self.torch, params, x).squeeze(-1), y)

    def epoch(self, order):
        """One epoch in ``order``: batches of batch_size, the last one short; returns the last step's loss."""
        for batch in self.rows[order].split(self.spec.batch_size):
            grads, loss = self.grad_and_loss(self.params, batch[:, :2], batch[:, 2])
            self.functional_adam.step(grads)
        return loss

    def run_epochs(self, epochs: int) -> None:
        for _ in range(epochs):
            self.loss = self.run_epoch(self.torch.randperm(len(self.rows), device=self.device))

    def after_timing(self) -> dict[str, str]:
        """cpu, untimed after scoring: the epoch call's µs and its fused kernel's part (the rest: guards, wrapper)."""
        if self.device.type != "cpu":
            return {}
        order = self.torch.randperm(len(self.rows))
        call_us = time_calls(lambda: self.run_epoch(order), SPLIT_CALLS)["value_us"]
        options = COMPILER_OPTIONS["cpu"] | PROFILED_OPTIONS
        profiled_epoch = self.torch.compile(self.epoch, fullgraph=True, dynamic=False, options=options)
        profiled_epoch(order)  # compiles
        with self.torch.profiler.profile() as profile:
            for _ in range(SPLIT_CALLS):
                profiled_epoch(order)
        kernel_us = sum(e.self_cpu_time_total for e in profile.key_averages() if "cpp_fused" in e.key) / SPLIT_CALLS
        return {
            "epoch_call_us": f"{call_us:.4f}",
            "epoch_kernel_us": f"{kernel_us:.4f}",
            "split_calls": str(SPLIT_CALLS),
        }

    @property
    def details(self) -> dict[str, str]:
        options = ", ".join(f"{k}={v}" for k, v in COMPILER_OPTIONS[self.device.type].items()) or "defaults"
        return {
            "data": "device-resident, gathered by the epoch's permutation inside the compiled call",
            "forward": "broadcast products and sums in place of matmuls",
            "adam": "functional, torch.optim.Adam's formula, in place",
            "compiled": f"torch.compile(fullgraph=True), one call per epoch, Inductor options: {options}",
            "compiler_cache": compiler_cache_detail(self.spec),
        }


class GraphedEpochLoop(FusedEpochLoop):
    """graphed_epoch (cuda): the fused epoch captured once in a CUDA graph and replayed once per epoch."""

    def __init__(self, torch, spec, data, clock):
        super().__init__(torch, spec, data, clock)
        with clock.phase("capture"):  # compilation happens here too, at the first warm-up epoch
            self.order = torch.arange(len(self.rows), device=self.device)
            self.capture()

    def capture(self) -> None:
        t = self.torch
        initial = {name: p.clone() for name, p in self.params.items()}
        side = t.cuda.Stream()
        side.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(side):
            for _ in range(3):
                self.run_epoch(self.order)
        t.cuda.current_stream().wait_stream(side)
        for name, p in self.params.items():
            p.copy_(initial[name])
        self.functional_adam.reset()
        self.graph = t.cuda.CUDAGraph()
        with t.cuda.graph(self.graph):
            self.epoch_loss = self.run_epoch(self.order)

    def run_epochs(self, epochs: int) -> None:
        for _ in range(epochs):
            self.order.copy_(self.torch.randperm(len(self.rows), device=self.device))
            self.graph.replay()
        self.loss = self.epoch_loss

    @property
    def details(self) -> dict[str, str]:
        return {**super().details, "graphs": "one CUDA graph of the whole compiled epoch, one replay per epoch"}
