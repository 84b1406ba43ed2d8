"""Train the seed question's MLP with PyTorch and write a run record, one loop variant per run.

The variants form a ladder; each removes one kind of overhead from the one before:

- seed: the asker's loop. DataLoader over one tensor with a SubsetRandomSampler (64
  ``__getitem__`` calls and a ``stack`` per batch), a ``.to(device)`` per batch.
- batched_fetch: the loader fetches each batch with one indexing op (a BatchSampler).
- resident: no DataLoader; the rows live on the device, a ``randperm`` per epoch, slices per step.
- sync_free: resident, plus one gather per epoch, ``zero_grad(set_to_none=True)`` and the fused
  Adam; on CUDA the epochs run under ``torch.cuda.set_sync_debug_mode("warn")`` and the record
  counts the host synchronisations it reported.
- compiled: the step written functionally (``torch.func`` gradients, Adam as torch ops) and
  compiled with ``torch.compile(fullgraph=True)``, up to 16 steps per compiled call; the compile
  time shows as the first epoch's excess over the later ones.
- graphed (cuda only): the whole step (forward, backward, capturable Adam) captured once per batch
  shape in a CUDA graph and replayed.

Usage: python scripts/train_torch.py --dataset results/data/dataset.parquet --device cpu \
           --variant seed --threads 2 --output results/runs/torch-cpu-seed-1.json
Run with --help for every option.
"""

from __future__ import annotations

import sys
import time
import warnings

from environment import nvidia_driver
from training import Backend, RunSpec, TrainResult, run, timed_epochs

VARIANTS = ("seed", "batched_fetch", "resident", "sync_free", "compiled", "graphed")


def load():
    import torch

    return torch


def unavailable(torch, device: str, variant: str) -> str | None:
    if device == "cuda" and not torch.cuda.is_available():
        built = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        return f"no CUDA device: torch.cuda.is_available() is False (torch {torch.__version__}, {built})"
    if variant == "graphed" and device != "cuda":
        return "graphed captures CUDA graphs: it runs on cuda only"
    return None


def build_model(torch, hidden_units: int):
    """Linear(2, h) -> ReLU -> Linear(h, 1) -> ReLU, as in the question (the last ReLU can die)."""

    class SeedMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = torch.nn.Linear(2, hidden_units)
            self.linear2 = torch.nn.Linear(hidden_units, 1)

        def forward(self, x):
            x = torch.nn.functional.relu(self.linear1(x))
            return torch.nn.functional.relu(self.linear2(x))

    return SeedMLP()


def adam_implementation(torch, optimizer) -> str:
    """Which Adam kernel runs: fused, foreach (multi-tensor) or the per-parameter for-loop."""
    if optimizer.defaults.get("fused"):
        return "fused"
    if optimizer.defaults.get("foreach") is not None:
        return "foreach" if optimizer.defaults["foreach"] else "for-loop"
    from torch.optim.optimizer import _default_to_fused_or_foreach  # how torch resolves the default

    params = [p for group in optimizer.param_groups for p in group["params"]]
    _, foreach = _default_to_fused_or_foreach(params, differentiable=False, use_fused=False)
    return "foreach (torch default)" if foreach else "for-loop (torch default)"


class Session:
    """What every variant shares: device, synchronising clock, model, loss and data tensors."""

    def __init__(self, torch, spec: RunSpec, data):
        self.torch, self.spec, self.data = torch, spec, data
        self.device = torch.device("cuda:0" if spec.device == "cuda" else "cpu")
        self.loss_fn = torch.nn.MSELoss()
        self.model = None

    def now(self) -> float:
        # Kernels run asynchronously on CUDA: wait for them before reading the clock.
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def build(self, **adam_options):
        self.model = build_model(self.torch, self.spec.hidden_units).to(self.device)
        return self.torch.optim.Adam(self.model.parameters(), lr=self.spec.learning_rate, **adam_options)

    def resident_rows(self):
        """Train rows, and the first batch of test rows, as tensors on the device."""
        t = self.torch
        train = t.tensor(self.data.train, dtype=t.float, device=self.device)
        test = t.tensor(self.data.test[: self.spec.batch_size], dtype=t.float, device=self.device)
        return train, test

    def seed_step(self, optimizer, batch):
        """The asker's step: zero_grad, forward, loss of ``pred.squeeze()``, backward, Adam step."""
        optimizer.zero_grad()
        loss = self.loss_fn(self.model(batch[:, :2]).squeeze(), batch[:, 2])
        loss.backward()
        optimizer.step()
        return loss

    def fit_and_predict(self, fit_start: float, epoch, test_batch):
        """Train for spec.epochs timed epochs, then predict one test batch, as the question does.

        Returns the epoch times, the last loss and the clock readings around the prediction.
        """
        self.model.train()
        epoch_s, loss = timed_epochs(self.spec, self.now, fit_start, epoch)
        predict_start = self.now()
        self.model.eval()
        with self.torch.no_grad():
            self.model(test_batch()[:, :2]).cpu()
        return epoch_s, loss, predict_start, self.now()

    def predict_all(self, features):
        with self.torch.no_grad():
            x = self.torch.tensor(features, dtype=self.torch.float, device=self.device)
            return self.model(x).cpu().numpy()

    def result(self, start, fit_start, epoch_s, predict_start, end, loss, details) -> TrainResult:
        return TrainResult.from_clock(
            start,
            fit_start,
            epoch_s,
            predict_start,
            end,
            final_train_loss=loss.item(),
            predict=self.predict_all,
            details=details,
        )


def loader_loop(s: Session, batched: bool) -> TrainResult:
    """seed (batched=False) and batched_fetch: a DataLoader feeding host batches to the device."""
    t, spec = s.torch, s.spec
    start = s.now()
    train_rows = t.tensor(s.data.train, dtype=t.float)
    test_rows = t.tensor(s.data.test, dtype=t.float)

    def loader(rows):
        indices = t.utils.data.SubsetRandomSampler(range(len(rows)))
        if batched:  # the sampler yields whole batches of indices; one tensor indexing op each
            sampler = t.utils.data.BatchSampler(indices, spec.batch_size, drop_last=False)
            return t.utils.data.DataLoader(rows, sampler=sampler, batch_size=None)
        return t.utils.data.DataLoader(rows, batch_size=spec.batch_size, sampler=indices)

    train_loader, test_loader = loader(train_rows), loader(test_rows)
    optimizer = s.build()
    fit_start = s.now()

    def epoch():
        for batch in train_loader:
            loss = s.seed_step(optimizer, batch.to(s.device))
        return loss

    epoch_s, loss, predict_start, end = s.fit_and_predict(
        fit_start, epoch, lambda: next(iter(test_loader)).to(s.device)
    )
    details = {
        "data": "DataLoader, " + ("batch fetch" if batched else "per-row fetch"),
        "adam": adam_implementation(t, optimizer),
    }
    return s.result(start, fit_start, epoch_s, predict_start, end, loss, details)


def resident_loop(s: Session) -> TrainResult:
    """resident: rows on the device, a randperm per epoch and a gather per step; the seed's optimiser."""
    t, spec = s.torch, s.spec
    start = s.now()
    rows, test = s.resident_rows()
    optimizer = s.build()
    fit_start = s.now()
    n, size = len(rows), spec.batch_size

    def epoch():
        perm = t.randperm(n, device=s.device)
        for i in range(0, n, size):
            loss = s.seed_step(optimizer, rows[perm[i : i + size]])
        return loss

    epoch_s, loss, predict_start, end = s.fit_and_predict(fit_start, epoch, lambda: test)
    details = {"data": "device-resident, randperm per epoch", "adam": adam_implementation(t, optimizer)}
    return s.result(start, fit_start, epoch_s, predict_start, end, loss, details)


def sync_free_loop(s: Session) -> TrainResult:
    """sync_free: one gather per epoch, set_to_none and the fused Adam; host syncs counted on CUDA."""
    t, spec = s.torch, s.spec
    start = s.now()
    rows, test = s.resident_rows()
    optimizer = s.build(fused=True)
    fit_start = s.now()
    n = len(rows)

    def epoch():
        watch_syncs(t, s.device, True)
        for batch in rows[t.randperm(n, device=s.device)].split(spec.batch_size):
            optimizer.zero_grad(set_to_none=True)
            loss = s.loss_fn(s.model(batch[:, :2]).squeeze(-1), batch[:, 2])
            loss.backward()
            optimizer.step()
        watch_syncs(t, s.device, False)  # the clock's own synchronize is not counted
        return loss

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        epoch_s, loss, predict_start, end = s.fit_and_predict(fit_start, epoch, lambda: test)
    syncs = [w for w in caught if "synchroniz" in str(w.message).lower()]
    details = {
        "data": "device-resident, one gather per epoch",
        "adam": adam_implementation(t, optimizer),
        "zero_grad": "set_to_none",
    }
    if s.device.type == "cuda":
        details["host_syncs_during_epochs"] = str(len(syncs))
    return s.result(start, fit_start, epoch_s, predict_start, end, loss, details)


# Steps unrolled into one compiled call: enough to cover the question's 12-step epoch, few
# enough that a bigger dataset does not make compilation explode.
COMPILED_STEPS_PER_CALL = 16
ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-8  # torch.optim.Adam's defaults


def compiled_loop(s: Session) -> TrainResult:
    """compiled: whole runs of steps as one ``torch.compile(fullgraph=True)`` graph.

    ``loss.backward()`` and ``optimizer.step()`` break a compiled graph (measured here: a plainly
    compiled step was slower than sync_free), so the step is written functionally: gradients
    from ``torch.func.grad_and_value`` and Adam as torch ops updating weights and state in place,
    with torch.optim.Adam's formula. Up to COMPILED_STEPS_PER_CALL steps are unrolled into one
    call, so per-call overhead (guards, wrapper) is paid once per call, not once per step.
    """
    t, spec = s.torch, s.spec
    start = s.now()
    rows, test = s.resident_rows()
    s.build()
    params = {name: p.detach() for name, p in s.model.named_parameters()}
    moments = {name: (t.zeros_like(p), t.zeros_like(p)) for name, p in params.items()}
    count = t.zeros((), device=s.device)
    (beta1, beta2), lr = ADAM_BETAS, spec.learning_rate

    def batch_loss(p, x, y):
        return s.loss_fn(t.func.functional_call(s.model, p, (x,)).squeeze(-1), y)

    grad_and_loss = t.func.grad_and_value(batch_loss)

    def step(x, y):
        grads, loss = grad_and_loss(params, x, y)
        count.add_(1)
        correction1, correction2 = 1 - beta1**count, 1 - beta2**count
        for name, grad in grads.items():
            m, v = moments[name]
            m.mul_(beta1).add_(grad, alpha=1 - beta1)
            v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            params[name].sub_(lr * (m / correction1) / ((v / correction2).sqrt() + ADAM_EPS))
        return loss

    @t.compile(fullgraph=True, dynamic=False)
    def run_steps(chunk):
        for batch in chunk.split(spec.batch_size):
            loss = step(batch[:, :2], batch[:, 2])
        return loss

    fit_start = s.now()
    n, rows_per_call = len(rows), COMPILED_STEPS_PER_CALL * spec.batch_size

    def epoch():
        for chunk in rows[t.randperm(n, device=s.device)].split(rows_per_call):
            loss = run_steps(chunk)
        return loss

    epoch_s, loss, predict_start, end = s.fit_and_predict(fit_start, epoch, lambda: test)
    details = {
        "data": "device-resident, one gather per epoch",
        "adam": "functional, torch.optim.Adam's formula, in place",
        "compiled": f"torch.compile(fullgraph=True), up to {COMPILED_STEPS_PER_CALL} steps per compiled call",
    }
    return s.result(start, fit_start, epoch_s, predict_start, end, loss, details)


def watch_syncs(torch, device, on: bool) -> None:
    """On CUDA, have torch warn about every host synchronisation while ``on``."""
    if device.type == "cuda":
        torch.cuda.set_sync_debug_mode("warn" if on else "default")


def graphed_loop(s: Session) -> TrainResult:
    """graphed: the whole step captured once per batch shape in a CUDA graph, then replayed.

    Capture needs a few warm-up steps on a side stream; they would change the weights, so
    weights and Adam state are put back in place (same tensors, as the graphs require) after.
    """
    t, spec = s.torch, s.spec
    start = s.now()
    rows, test = s.resident_rows()
    optimizer = s.build(capturable=True, foreach=True)
    n, size = len(rows), spec.batch_size
    shapes = sorted({size, n % size} - {0}, reverse=True)
    static_x = {b: t.zeros(b, 2, device=s.device) for b in shapes}
    static_y = {b: t.zeros(b, device=s.device) for b in shapes}
    initial = {k: v.clone() for k, v in s.model.state_dict().items()}

    def step(b):
        loss = s.loss_fn(s.model(static_x[b]).squeeze(-1), static_y[b])
        loss.backward()
        optimizer.step()
        return loss

    side = t.cuda.Stream()
    side.wait_stream(t.cuda.current_stream())
    with t.cuda.stream(side):
        for _ in range(3):
            for b in shapes:
                optimizer.zero_grad(set_to_none=True)
                step(b)
    t.cuda.current_stream().wait_stream(side)
    with t.no_grad():
        for name, value in s.model.state_dict().items():
            value.copy_(initial[name])
        for state in optimizer.state.values():
            for value in state.values():
                value.zero_()

    graphs, losses, pool = {}, {}, None
    for b in shapes:
        optimizer.zero_grad(set_to_none=True)
        graphs[b] = t.cuda.CUDAGraph()
        with t.cuda.graph(graphs[b], pool=pool):
            losses[b] = step(b)
        pool = graphs[b].pool()
    fit_start = s.now()

    def epoch():
        for batch in rows[t.randperm(n, device=s.device)].split(size):
            b = len(batch)
            static_x[b].copy_(batch[:, :2])
            static_y[b].copy_(batch[:, 2])
            graphs[b].replay()
        return losses[b]

    epoch_s, loss, predict_start, end = s.fit_and_predict(fit_start, epoch, lambda: test)
    details = {
        "data": "device-resident, copied into static inputs",
        "adam": "capturable foreach",
        "graphs": f"one per batch shape: {shapes}",
    }
    return s.result(start, fit_start, epoch_s, predict_start, end, loss, details)


def set_threads(torch, threads: int) -> None:
    """Both of torch's CPU pools: intra-op (inside one op) and inter-op (between ops)."""
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)


def train(torch, spec: RunSpec, data) -> TrainResult:
    set_threads(torch, spec.threads)
    torch.manual_seed(spec.init_seed)
    session = Session(torch, spec, data)
    loops = {
        "seed": lambda: loader_loop(session, batched=False),
        "batched_fetch": lambda: loader_loop(session, batched=True),
        "resident": lambda: resident_loop(session),
        "sync_free": lambda: sync_free_loop(session),
        "compiled": lambda: compiled_loop(session),
        "graphed": lambda: graphed_loop(session),
    }
    return loops[spec.variant]()


def describe(torch, device: str) -> dict:
    on_gpu = device == "cuda" and torch.cuda.is_available()
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "versions": {"torch": torch.__version__},
        "threads": {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()},
        "cuda": {
            "build_cuda": torch.version.cuda,
            "build_cudnn": str(cudnn) if cudnn else None,
            "driver": nvidia_driver() if on_gpu else None,
        },
        "gpu_name": torch.cuda.get_device_name(0) if on_gpu else None,
    }


BACKEND = Backend(name="torch", variants=VARIANTS, load=load, unavailable=unavailable, train=train, describe=describe)


def main(argv=None) -> int:
    return run(BACKEND, argv)


if __name__ == "__main__":
    sys.exit(main())
