"""PyTorch: torch's rungs, in ladder order, each removing one kind of overhead from the one before."""

from __future__ import annotations

import time
from functools import partial

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
from tiny_mlp_bench.catalogue import DEVICES, Role, Rung, one_thread
from tiny_mlp_bench.era_runner import step_parts
from tiny_mlp_bench.machine import clocksource
from tiny_mlp_bench.timing import PartTimes


def askers_loader(torch, rows, batch_size: int, batched: bool = False):
    """The asker's DataLoader over ``rows``: a random sampler, ``batch_size`` rows a batch, the default collate;
    ``batched``: the sampler yields whole batches of indices instead, one tensor indexing op each."""
    indices = torch.utils.data.SubsetRandomSampler(range(len(rows)))
    if batched:
        sampler = torch.utils.data.BatchSampler(indices, batch_size, drop_last=False)
        return torch.utils.data.DataLoader(rows, sampler=sampler, batch_size=None)
    return torch.utils.data.DataLoader(rows, batch_size=batch_size, sampler=indices)


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
        return askers_loader(self.torch, rows, self.spec.batch_size, self.batched)

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


class PartsLoop(LoaderLoop):
    """parts: the asker's loop with the clock read at each boundary of its step's parts (timing.LOOP_PARTS), and on
    cuda a synchronisation before each read. The loop is era_runner.step_parts, which the era study runs on older
    stacks too: only the standard library's clock and torch run in it."""

    READS_PER_STEP = 7

    def __init__(self, torch, spec, data, clock):
        super().__init__(torch, spec, data, clock, batched=False)
        self.parts = PartTimes()

    def fit(self, clock, epochs: int) -> None:
        clock.parts = self.parts  # the clock sums the parts per block, as it times the block
        super().fit(clock, epochs)

    def run_epochs(self, epochs: int) -> None:
        model, loss_fn, optimizer, device = self.model, self.loss_fn, self.optimizer, self.device
        if self.on_gpu:
            sync, perf = self.torch.cuda.synchronize, time.perf_counter

            def now() -> float:
                sync()  # the kernels a part launched run inside it, not inside the next
                return perf()

        else:
            now = time.perf_counter
        parts, self.loss = step_parts(self.train_loader, model, loss_fn, optimizer, device, now, epochs)
        self.parts.add(parts)

    @property
    def details(self) -> dict[str, str]:
        return super().details | {"clock_reads_per_step": str(self.READS_PER_STEP), "clocksource": clocksource()}


class ResidentLoop(TorchLoop):
    """resident: rows on the device, a randperm per epoch and a gather per step; the asker's optimiser."""

    def __init__(self, torch, spec, data, clock):
        super().__init__(torch, spec, data, clock)
        with clock.phase("data"):
            self.rows, self.test = self.resident_rows()
        with clock.phase("optimizer"):
            self.optimizer = self.make_optimizer()

    def make_optimizer(self):
        return self.adam()

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


BACKENDS = (
    Backend(
        name="torch",
        load=load,
        prepare=prepare,
        start_device=start_device,
        describe=describe,
        peak_gpu_memory_mb=peak_gpu_memory_mb,
    ),
)
RUNGS = (
    Rung("torch", "seed", DEVICES, "— (the asker's loop)", role=Role.ASKERS, loop=partial(LoaderLoop, batched=False)),
    # batched_fetch and resident are in the full study only: the report's answer does not need them.
    Rung(
        "torch",
        "batched_fetch",
        DEVICES,
        "data loading: 64 `__getitem__` calls and a `stack` per batch",
        default=False,
        loop=partial(LoaderLoop, batched=True),
    ),
    Rung(
        "torch",
        "resident",
        DEVICES,
        "the DataLoader and the host-to-device copy of every batch",
        default=False,
        loop=ResidentLoop,
    ),
    Rung(
        "torch",
        "sync_free",
        DEVICES,
        "per-step gathers (one gather per epoch) and Adam's many small kernels (the fused Adam: one for all "
        "parameters, where torch's default is a per-parameter loop on cpu and a multi-tensor foreach on cuda)",
        role=Role.DATA_ON_DEVICE,
        loop=SyncFreeLoop,
    ),
    Rung(
        "torch",
        "compiled",
        DEVICES,
        "per-op dispatch and per-call overhead: forward, backward and Adam in one `torch.compile` graph, "
        "up to 16 steps per call",
        default=False,  # full study only: fused_epoch compiles the same step, and each cold compilation is ~1 min
        compiles=True,
        loop=CompiledLoop,
    ),
    Rung(
        "torch",
        "graphed",
        ("cuda",),
        "kernel launch latency: each step replays one captured CUDA graph",
        role=Role.GRAPHED_STEP,
        loop=GraphedLoop,
    ),
    Rung(
        "torch",
        "fused_epoch",
        DEVICES,
        "per-step calls: the forward as broadcast products the compiler fuses (no matmul calls), the epoch's "
        "gather and all its steps in one compiled call (on cpu with Inductor's C++ wrapper)",
        default=False,  # full study only: on a 2-core machine its first run's cold compilation is most of its time
        role=Role.COMPILED_EPOCH,
        compiles=True,
        loop=FusedEpochLoop,
    ),
    Rung(
        "torch",
        "graphed_epoch",
        ("cuda",),
        "per-step launches: the `fused_epoch` graph captured in one CUDA graph, one replay per epoch",
        compiles=True,
        loop=GraphedEpochLoop,
    ),
    Rung(
        "torch",
        "parts",
        DEVICES,
        "nothing, against `seed`: the same loop with the clock read at each part of its step (on cuda after a "
        "synchronisation), so that its step says where the time goes and its ratio to `seed` what the reads cost",
        role=Role.STEP_PARTS,
        loop=PartsLoop,
    ),
    one_thread("torch", partial(LoaderLoop, batched=False)),
    Rung(
        "torch",
        "optimizer_imported",
        DEVICES,
        "the import of torch 2's compiler stack (`torch._dynamo`) that the optimizer's first call makes: the asker's "
        "loop with it imported with torch, before the timing point",
        default=False,  # the release sweep's cause rung (stacks.CAUSES): on torch 1, nothing to take away
        imports=("torch._dynamo",),
        loop=partial(LoaderLoop, batched=False),
    ),
)
