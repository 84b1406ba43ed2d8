"""PyTorch: what every torch rung and the crossover sweep share."""

from __future__ import annotations

import os
import sys
import warnings

from tiny_mlp_bench.backends.contract import EpochLoop, RunSpec
from tiny_mlp_bench.era_runner import load_weights, question_mlp
from tiny_mlp_bench.machine import nvidia_driver
from tiny_mlp_bench.timing import Clock


def load(device: str):
    """torch for a job on ``device``; a cpu job hides the GPUs first, or Inductor would start CUDA in its timing."""
    if device == "cpu":
        hide_gpus()
    import torch

    return torch


def hide_gpus() -> None:
    """No CUDA device for this process and its children; read by the CUDA driver when it starts."""
    os.environ["CUDA_VISIBLE_DEVICES"] = ""


def gpu_missing(torch) -> str | None:
    if torch.cuda.is_available():
        return None
    built = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    return f"no CUDA device: torch.cuda.is_available() is False (torch {torch.__version__}, {built})"


def set_threads(torch, threads: int) -> None:
    """Both of torch's CPU pools and Inductor's compile workers (else one per core, however few the job has)."""
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)
    # Inductor reads it at the first compilation: importing its config here costs every torch job over a second.
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(threads)
    if (inductor_config := sys.modules.get("torch._inductor.config")) is not None:
        inductor_config.compile_threads = threads


def device_sync(torch, device: str):
    """What the clock calls before each reading: kernels run asynchronously on CUDA."""
    if device != "cuda":
        return None
    cuda = torch.device("cuda:0")

    def sync() -> None:
        # Before start-up there is nothing to wait for, and synchronising would start CUDA, outside the clock.
        if torch.cuda.is_initialized():
            torch.cuda.synchronize(cuda)

    return sync


def prepare(torch, spec: RunSpec):
    set_threads(torch, spec.threads)
    torch.manual_seed(spec.init_seed)
    return device_sync(torch, spec.device)


def start_device(torch, spec: RunSpec) -> str | None:
    """Start CUDA for a cuda run (its driver, then the context with a first tensor), timed; None on cpu."""
    if spec.device != "cuda":
        return None  # torch's CPU runtime started with its import
    missing = gpu_missing(torch)
    if missing is None:
        torch.zeros((), device="cuda:0")
    return missing


def build_model(torch, hidden_units: int, weights=None):
    """The question's model (the last ReLU can die), one definition with the era runner's; ``weights``: an
    InitialWeights to start from."""
    model = question_mlp(torch, hidden_units)
    if weights is not None:
        load_weights(torch, model, weights.as_list())
    return model


def adam_implementation(optimizer) -> str:
    """Which Adam kernel runs: fused, foreach (multi-tensor) or the per-parameter for-loop."""
    if optimizer.defaults.get("fused"):
        return "fused"
    if optimizer.defaults.get("foreach") is not None:
        return "foreach" if optimizer.defaults["foreach"] else "for-loop"
    from torch.optim.optimizer import _default_to_fused_or_foreach  # how torch resolves the default

    params = [p for group in optimizer.param_groups for p in group["params"]]
    _, foreach = _default_to_fused_or_foreach(params, differentiable=False, use_fused=False)
    return "foreach (torch default)" if foreach else "for-loop (torch default)"


class TorchLoop(EpochLoop):
    """What every torch rung shares: device, model, loss, the asker's step and the predictions."""

    def __init__(self, torch, spec: RunSpec, data, clock: Clock):
        self.torch, self.spec, self.data = torch, spec, data
        self.device = torch.device("cuda:0" if spec.device == "cuda" else "cpu")
        self.on_gpu = spec.device == "cuda"
        self.loss_fn = torch.nn.MSELoss()
        with clock.phase("model"):
            self.model = build_model(torch, spec.hidden_units, spec.weights).to(self.device)
        self.loss = None  # the last optimiser step's loss, a tensor

    def restart(self) -> bool:
        """In place: a compiled call or a captured graph goes on reading the same tensors."""
        load_weights(self.torch, self.model, self.spec.weights.as_list())
        self.reset_optimizer()
        self.model.train()  # the closing prediction left it in eval mode
        return True

    def reset_optimizer(self) -> None:
        with self.torch.no_grad():
            for state in self.optimizer.state.values():
                for value in state.values():
                    if self.torch.is_tensor(value):
                        value.zero_()

    def adam(self, **options):
        return self.torch.optim.Adam(self.model.parameters(), lr=self.spec.learning_rate, **options)

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

    def test_batch(self):
        return self.test

    def predict_test_batch(self) -> None:
        self.model.eval()
        with self.torch.no_grad():
            self.model(self.test_batch()[:, :2]).cpu()

    def predict(self, features):
        with self.torch.no_grad():
            x = self.torch.tensor(features, dtype=self.torch.float, device=self.device)
            return self.model(x).cpu().numpy()

    def final_train_loss(self) -> float:
        return self.loss.item()

    def steps_taken(self) -> int:
        """torch.optim.Adam's own step count of the first parameter."""
        first = next(iter(self.model.parameters()))
        return int(self.optimizer.state[first]["step"])

    def host_syncs_per_epoch(self) -> int | None:
        """On CUDA, the host synchronisations of one more epoch, run after the timed ones and the scoring."""
        if not self.on_gpu:
            return None
        self.model.train()
        return count_host_syncs(self.torch, lambda: self.run_epochs(1))


def count_host_syncs(torch, run) -> int:
    """Host-GPU synchronisations while ``run()`` runs, as torch's sync debug mode warns of them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            run()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message).lower() for w in caught)


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


def peak_gpu_memory_mb(torch, device: str) -> float | None:
    if device != "cuda" or not torch.cuda.is_initialized():
        return None
    return torch.cuda.max_memory_allocated() / 2**20
