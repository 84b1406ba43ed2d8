"""PyTorch rungs that capture the whole step: compiled (torch.compile) and graphed (CUDA graphs)."""

from __future__ import annotations

import os
import tempfile

from tiny_mlp_bench.backends.torch_common import TorchLoop

# Covers the question's 12-step epoch; few enough that a bigger dataset does not blow up compilation.
COMPILED_STEPS_PER_CALL = 16
ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-8  # torch.optim.Adam's defaults


def use_compiler_cache(study_cache: str | None) -> tempfile.TemporaryDirectory | None:
    """Point Inductor (and Triton) at the rung's cache in the study, or at an empty one of this run's own."""
    own = None if study_cache else tempfile.TemporaryDirectory(prefix="tiny-mlp-bench-compile-")
    directory = study_cache or own.name
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory
    os.environ["TRITON_CACHE_DIR"] = os.path.join(directory, "triton")
    return own


def compiler_cache_detail(spec) -> str:
    if spec.compile_cache:
        return "the rung's own in the study: its first run compiles cold, later runs reuse it (method.compile_cache)"
    return "empty, the run's own (cold compilation)"


class FunctionalAdam:
    """torch.optim.Adam's formula as torch ops on plain tensors, updated in place, so a compiled graph holds it."""

    def __init__(self, torch, params: dict, learning_rate: float):
        self.params, self.lr = params, learning_rate
        self.moments = {name: (torch.zeros_like(p), torch.zeros_like(p)) for name, p in params.items()}
        self.count = torch.zeros((), device=next(iter(params.values())).device)

    def step(self, grads: dict) -> None:
        (beta1, beta2), lr = ADAM_BETAS, self.lr
        self.count.add_(1)
        correction1, correction2 = 1 - beta1**self.count, 1 - beta2**self.count
        for name, grad in grads.items():
            m, v = self.moments[name]
            m.mul_(beta1).add_(grad, alpha=1 - beta1)
            v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            self.params[name].sub_(lr * (m / correction1) / ((v / correction2).sqrt() + ADAM_EPS))

    def reset(self) -> None:
        """Back to no steps taken (after warm-up steps that must not count)."""
        self.count.zero_()
        for m, v in self.moments.values():
            m.zero_()
            v.zero_()


class FunctionalLoop(TorchLoop):
    """Base of the compiled rungs: resident rows, the compiler cache, FunctionalAdam on the model's parameters."""

    def __init__(self, torch, spec, data, clock):
        super().__init__(torch, spec, data, clock)
        with clock.phase("data"):
            self.rows, self.test = self.resident_rows()
        with clock.phase("optimizer"):
            self.own_cache = use_compiler_cache(spec.compile_cache)
            self.params = {name: p.detach() for name, p in self.model.named_parameters()}
            self.functional_adam = FunctionalAdam(torch, self.params, spec.learning_rate)
            self.compile()

    def compile(self) -> None:
        raise NotImplementedError

    def reset_optimizer(self) -> None:
        self.functional_adam.reset()

    def steps_taken(self) -> int:
        return int(self.functional_adam.count.item())


class CompiledLoop(FunctionalLoop):
    """compiled: whole runs of steps as one ``torch.compile(fullgraph=True)`` graph."""

    def compile(self) -> None:
        """The functional step with Adam in place, unrolled over a chunk of batches, wrapped by torch.compile."""
        t, spec, params = self.torch, self.spec, self.params

        def batch_loss(p, x, y):
            return self.loss_fn(t.func.functional_call(self.model, p, (x,)).squeeze(-1), y)

        grad_and_loss = t.func.grad_and_value(batch_loss)

        def step(x, y):
            grads, loss = grad_and_loss(params, x, y)
            self.functional_adam.step(grads)
            return loss

        @t.compile(fullgraph=True, dynamic=False)
        def run_steps(chunk):
            for batch in chunk.split(spec.batch_size):
                loss = step(batch[:, :2], batch[:, 2])
            return loss

        self.run_steps = run_steps

    def run_epochs(self, epochs: int) -> None:
        t, rows = self.torch, self.rows
        for _ in range(epochs):
            for chunk in rows[t.randperm(len(rows), device=self.device)].split(
                COMPILED_STEPS_PER_CALL * self.spec.batch_size
            ):
                self.loss = self.run_steps(chunk)

    @property
    def details(self) -> dict[str, str]:
        return {
            "data": "device-resident, one gather per epoch",
            "adam": "functional, torch.optim.Adam's formula, in place",
            "compiled": f"torch.compile(fullgraph=True), up to {COMPILED_STEPS_PER_CALL} steps per compiled call",
            "compiler_cache": compiler_cache_detail(self.spec),
        }


class GraphedLoop(TorchLoop):
    """graphed: the whole step captured once per batch shape in a CUDA graph, then replayed."""

    def __init__(self, torch, spec, data, clock):
        super().__init__(torch, spec, data, clock)
        with clock.phase("data"):
            self.rows, self.test = self.resident_rows()
            n, size = len(self.rows), spec.batch_size
            self.shapes = sorted({size, n % size} - {0}, reverse=True)
            self.static_x = {b: torch.zeros(b, 2, device=self.device) for b in self.shapes}
            self.static_y = {b: torch.zeros(b, device=self.device) for b in self.shapes}
        with clock.phase("optimizer"):
            self.optimizer = self.adam(capturable=True, foreach=True)
        with clock.phase("capture"):
            self.capture(self.optimizer)

    def capture(self, optimizer) -> None:
        """Warm up on a side stream, put weights and Adam state back, then capture one graph per shape."""
        t = self.torch
        initial = {k: v.clone() for k, v in self.model.state_dict().items()}

        def step(b):
            loss = self.loss_fn(self.model(self.static_x[b]).squeeze(-1), self.static_y[b])
            loss.backward()
            optimizer.step()
            return loss

        side = t.cuda.Stream()
        side.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(side):
            for _ in range(3):
                for b in self.shapes:
                    optimizer.zero_grad(set_to_none=True)
                    step(b)
        t.cuda.current_stream().wait_stream(side)
        with t.no_grad():
            for name, value in self.model.state_dict().items():
                value.copy_(initial[name])
            for state in optimizer.state.values():
                for value in state.values():
                    value.zero_()

        self.graphs, self.losses, pool = {}, {}, None
        for b in self.shapes:
            optimizer.zero_grad(set_to_none=True)
            self.graphs[b] = t.cuda.CUDAGraph()
            with t.cuda.graph(self.graphs[b], pool=pool):
                self.losses[b] = step(b)
            pool = self.graphs[b].pool()

    def run_epochs(self, epochs: int) -> None:
        t, rows = self.torch, self.rows
        for _ in range(epochs):
            for batch in rows[t.randperm(len(rows), device=self.device)].split(self.spec.batch_size):
                b = len(batch)
                self.static_x[b].copy_(batch[:, :2])
                self.static_y[b].copy_(batch[:, 2])
                self.graphs[b].replay()
            self.loss = self.losses[b]

    @property
    def details(self) -> dict[str, str]:
        return {
            "data": "device-resident, copied into static inputs",
            "adam": "capturable foreach",
            "graphs": f"one per batch shape: {self.shapes}",
        }
