"""PyTorch: the question's MLP trained by each torch rung of the catalogue's ladder.

Each rung removes one kind of overhead from the one before (the catalogue says which):

- seed: the asker's loop. DataLoader over one tensor with a SubsetRandomSampler (64
  ``__getitem__`` calls and a ``stack`` per batch), a ``.to(device)`` per batch.
- batched_fetch: the loader fetches each batch with one indexing op (a BatchSampler).
- resident: no DataLoader; the rows live on the device, a ``randperm`` per epoch, slices per step.
- sync_free: resident, plus one gather per epoch, ``zero_grad(set_to_none=True)`` and the fused
  Adam (one kernel for all parameters; torch's default is a per-parameter loop on cpu and the
  multi-tensor ``foreach`` on cuda).

On cuda every rung's record counts the host synchronisations of one extra, untimed epoch
(``TorchLoop.host_syncs_per_epoch``), so the ladder shows where they go.
- compiled: the step written functionally (``torch.func`` gradients, Adam as torch ops) and
  compiled with ``torch.compile(fullgraph=True)``, up to 16 steps per compiled call; the compile
  time shows as the first epoch's excess over the later ones.
- graphed (cuda only): the whole step (forward, backward, capturable Adam) captured once per batch
  shape in a CUDA graph and replayed.
- fused_epoch: the forward as broadcast products, and the epoch's gather and all its steps in one
  compiled call (torch_epoch.py).
- graphed_epoch (cuda only): that compiled epoch captured in one CUDA graph, one replay per epoch.

Constructing a loop is the run's set-up phase; the timing module times everything after it.
"""

from __future__ import annotations

from functools import partial

from tiny_mlp_bench.backends import register_backend, register_loops
from tiny_mlp_bench.backends.contract import Backend
from tiny_mlp_bench.backends.torch_captured import CompiledLoop, GraphedLoop
from tiny_mlp_bench.backends.torch_common import (
    TorchLoop,
    adam_implementation,
    describe,
    load,
    peak_gpu_memory_mb,
    prepare,
    start_device,
)
from tiny_mlp_bench.backends.torch_epoch import FusedEpochLoop, GraphedEpochLoop


class LoaderLoop(TorchLoop):
    """seed (batched=False) and batched_fetch: a DataLoader feeding host batches to the device."""

    def __init__(self, torch, spec, data, clock, batched: bool):
        super().__init__(torch, spec, data, clock)
        self.batched = batched
        with clock.phase("data"):
            self.train_loader = self.loader(torch.tensor(data.train, dtype=torch.float))
            self.test_loader = self.loader(torch.tensor(data.test, dtype=torch.float))
        with clock.phase("optimizer"):
            self.optimizer = self.adam()

    def loader(self, rows):
        t = self.torch
        indices = t.utils.data.SubsetRandomSampler(range(len(rows)))
        if self.batched:  # the sampler yields whole batches of indices; one tensor indexing op each
            sampler = t.utils.data.BatchSampler(indices, self.spec.batch_size, drop_last=False)
            return t.utils.data.DataLoader(rows, sampler=sampler, batch_size=None)
        return t.utils.data.DataLoader(rows, batch_size=self.spec.batch_size, sampler=indices)

    def run_epochs(self, epochs: int) -> None:
        for _ in range(epochs):
            for batch in self.train_loader:
                self.loss = self.seed_step(self.optimizer, batch.to(self.device))

    def test_batch(self):
        return next(iter(self.test_loader)).to(self.device)

    @property
    def details(self) -> dict[str, str]:
        fetch = "batch fetch" if self.batched else "per-row fetch"
        return {"data": f"DataLoader, {fetch}", "adam": adam_implementation(self.optimizer)}


class ResidentLoop(TorchLoop):
    """resident: rows on the device, a randperm per epoch and a gather per step; the asker's optimiser."""

    def __init__(self, torch, spec, data, clock):
        super().__init__(torch, spec, data, clock)
        with clock.phase("data"):
            self.rows, self.test = self.resident_rows()
        with clock.phase("optimizer"):
            self.optimizer = self.make_optimizer()

    def make_optimizer(self):
        return self.adam()  # the asker's Adam

    def run_epochs(self, epochs: int) -> None:
        t, rows, size = self.torch, self.rows, self.spec.batch_size
        for _ in range(epochs):
            perm = t.randperm(len(rows), device=self.device)
            for i in range(0, len(rows), size):
                self.loss = self.seed_step(self.optimizer, rows[perm[i : i + size]])

    @property
    def details(self) -> dict[str, str]:
        return {"data": "device-resident, randperm per epoch", "adam": adam_implementation(self.optimizer)}


class SyncFreeLoop(ResidentLoop):
    """sync_free: one gather per epoch, set_to_none and the fused Adam."""

    def make_optimizer(self):
        return self.adam(fused=True)

    def run_epochs(self, epochs: int) -> None:
        t, rows = self.torch, self.rows
        for _ in range(epochs):
            for batch in rows[t.randperm(len(rows), device=self.device)].split(self.spec.batch_size):
                self.optimizer.zero_grad(set_to_none=True)
                self.loss = self.loss_fn(self.model(batch[:, :2]).squeeze(-1), batch[:, 2])
                self.loss.backward()
                self.optimizer.step()

    @property
    def details(self) -> dict[str, str]:
        return {
            "data": "device-resident, one gather per epoch",
            "adam": adam_implementation(self.optimizer),
            "zero_grad": "set_to_none",
        }


register_backend(
    Backend(
        name="torch",
        load=load,
        prepare=prepare,
        start_device=start_device,
        describe=describe,
        peak_gpu_memory_mb=peak_gpu_memory_mb,
    )
)
register_loops(
    "torch",
    {
        "seed": partial(LoaderLoop, batched=False),
        "batched_fetch": partial(LoaderLoop, batched=True),
        "resident": ResidentLoop,
        "sync_free": SyncFreeLoop,
        "compiled": CompiledLoop,
        "graphed": GraphedLoop,
        "fused_epoch": FusedEpochLoop,
        "graphed_epoch": GraphedEpochLoop,
    },
)
