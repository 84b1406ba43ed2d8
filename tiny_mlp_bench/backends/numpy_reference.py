"""NumPy: the question's MLP written out by hand, the no-framework reference.

Variant ``reference``: forward, backward and Adam written out in float32 NumPy, from the run's
shared initial weights (initial_weights.py), a fresh permutation of the rows every
epoch and the same batch size, learning rate and Adam constants (betas 0.9/0.999, eps 1e-8).
It runs on the CPU only. The framework's floor rung, ``fused``, is the same arithmetic compiled by
numba: on cpu one loop (numpy_fused.py), on cuda one kernel (numba_cuda_fused.py).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tiny_mlp_bench.backends import register_backend
from tiny_mlp_bench.backends.contract import Backend, EpochLoop, RunSpec
from tiny_mlp_bench.catalogue import DEVICES, Role, Variant
from tiny_mlp_bench.machine import NO_CUDA, nvidia_driver

BETA1, BETA2, EPS = 0.9, 0.999, 1e-8
# The fused rung: epochs per compiled call on cpu (numpy_fused.py), per kernel launch on cuda (numba_cuda_fused.py).
FUSED_EPOCHS_PER_CALL = 20
FUSED_EPOCHS_PER_LAUNCH = 100


def load(device: str | None = None):
    """threadpoolctl to pin NumPy's BLAS threads, numba for the fused rung and, on cuda, its CUDA
    target (imported here, outside the clock)."""
    import numba
    import threadpoolctl

    cuda = None
    if device == "cuda":
        from numba import cuda
    # device_started: set by start_device once it has made the CUDA context (see device_sync).
    return SimpleNamespace(threadpoolctl=threadpoolctl, numba=numba, cuda=cuda, device_started=False)


def forward(p: dict, x: np.ndarray):
    """Predictions and the activations backward() needs."""
    z1 = x @ p["w1"] + p["b1"]
    a1 = np.maximum(z1, 0)
    z2 = a1 @ p["w2"] + p["b2"]
    return np.maximum(z2, 0)[:, 0], (z1, a1, z2)


def loss_and_grads(p: dict, x: np.ndarray, y: np.ndarray):
    """Mean squared error and its gradient for every parameter."""
    pred, (z1, a1, z2) = forward(p, x)
    diff = pred - y
    dz2 = (2.0 / len(y)) * diff[:, None] * (z2 > 0)
    da1 = dz2 @ p["w2"].T
    dz1 = da1 * (z1 > 0)
    grads = {"w2": a1.T @ dz2, "b2": dz2.sum(0), "w1": x.T @ dz1, "b1": dz1.sum(0)}
    return float(np.mean(diff * diff)), grads


class Adam:
    """Adam as torch.optim.Adam computes it (bias-corrected, eps added after the square root)."""

    def __init__(self, params: dict, lr: float):
        self.lr, self.t = lr, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict, grads: dict) -> None:
        self.t += 1
        c1, c2 = 1 - BETA1**self.t, 1 - BETA2**self.t
        for k, g in grads.items():
            self.m[k] = BETA1 * self.m[k] + (1 - BETA1) * g
            self.v[k] = BETA2 * self.v[k] + (1 - BETA2) * g * g
            params[k] -= (self.lr / c1) * self.m[k] / (np.sqrt(self.v[k] / c2) + EPS)


class ReferenceRun(EpochLoop):
    """One NumPy run; its constructor is the rest of the set-up: float32 rows, weights from the run's seed, Adam.

    Each part of the set-up is a method, timed here in its phase: the fused rungs extend or replace these
    methods, since a phase timed again after this constructor would replace its first timing.
    """

    def __init__(self, fw, spec: RunSpec, data, clock):
        self.fw, self.spec, self.data = fw, spec, data
        self.rng = np.random.default_rng(spec.init_seed)
        with clock.phase("data"):
            self.set_up_data()
        with clock.phase("model"):
            self.set_up_model()
        with clock.phase("optimizer"):
            self.set_up_optimizer()
        self.loss = float("nan")

    def set_up_data(self) -> None:
        self.rows = self.data.train.astype(np.float32)

    def set_up_model(self) -> None:
        w1, b1, w2, b2 = (value.copy() for value in self.spec.weights.as_list())
        self.params = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}

    def set_up_optimizer(self) -> None:
        self.adam = Adam(self.params, self.spec.learning_rate)

    def restart(self) -> bool:
        """The initial weights into the same arrays (a compiled loop keeps them), then a fresh Adam."""
        for value, initial in zip(self.params.values(), self.spec.weights.as_list(), strict=True):
            value[...] = initial
        self.reset_optimizer()
        return True

    def reset_optimizer(self) -> None:
        self.adam = Adam(self.params, self.spec.learning_rate)

    def run_epochs(self, epochs: int) -> None:
        rows, size = self.rows, self.spec.batch_size
        for _ in range(epochs):
            for idx in np.array_split(self.rng.permutation(len(rows)), range(size, len(rows), size)):
                batch = rows[idx]
                self.loss, grads = loss_and_grads(self.params, batch[:, :2], batch[:, 2])
                self.adam.step(self.params, grads)

    def draw_orders(self, epochs: int) -> np.ndarray:
        """The fused rungs' permutations: one of the rows per epoch, (epochs, rows), from the run's stream."""
        return np.stack([self.rng.permutation(len(self.rows)) for _ in range(epochs)])

    def predict_test_batch(self) -> None:
        self.predict(self.data.test[: self.spec.batch_size, :2])

    def predict(self, features):
        return forward(self.params, features.astype(np.float32))[0]

    def final_train_loss(self) -> float:
        return self.loss

    def steps_taken(self) -> int:
        return self.adam.t

    @property
    def details(self) -> dict[str, str]:
        return {"implementation": "hand-written float32 NumPy", "adam": "written out, torch's constants"}


def device_sync(fw, device: str):
    """What the clock calls before each reading: on cuda, numba's kernels run asynchronously."""
    if device != "cuda":
        return None  # NumPy computes synchronously

    def sync() -> None:
        # Before start-up there is nothing to wait for, and cuda.synchronize() would make the context,
        # outside the clock. A flag set where start_device makes it, rather than asking numba: its public
        # API has no way to ask for the current context that does not make one.
        if fw.device_started:
            fw.cuda.synchronize()

    return sync


def prepare(fw, spec: RunSpec):
    fw.threadpoolctl.threadpool_limits(spec.threads)
    return device_sync(fw, spec.device)


def gpu_missing(fw) -> str | None:
    """Why numba cannot run a kernel on a GPU here, or None. Its CUDA simulator runs kernels on the
    CPU, in Python: it is never taken for a GPU."""
    from tiny_mlp_bench.backends.numba_cuda_fused import simulated

    if simulated(fw.numba):
        return "no CUDA device: numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM), which runs kernels on the CPU"
    if not fw.cuda.is_available():
        return "no CUDA device: numba's CUDA target finds no usable GPU (numba.cuda.is_available() is False)"
    return None


def start_device(fw, spec: RunSpec) -> str | None:
    """On cuda, the GPU's context (timed, as the asker's device start is); plain NumPy starts nothing."""
    if spec.device != "cuda":
        return None
    if missing := gpu_missing(fw):
        return missing
    fw.cuda.current_context()
    fw.device_started = True
    return None


# What numba.cuda is: NVIDIA's numba-cuda, which takes the name over through a .pth hook where it is
# installed and its hook runs, or the CUDA target built into numba, which numba-cuda replaces.
NVIDIA_TARGET = "numba-cuda (NVIDIA)"
BUILT_IN_TARGET = "numba's built-in"


def cuda_target(cuda) -> str:
    """Which implementation the imported ``numba.cuda`` module is."""
    return NVIDIA_TARGET if "numba_cuda" in Path(cuda.__file__).parts else BUILT_IN_TARGET


def describe(fw, device: str) -> dict:
    pools = {f"{p['internal_api']}": p["num_threads"] for p in fw.threadpoolctl.threadpool_info()}
    versions = {"numba": fw.numba.__version__}
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):  # numba's CUDA target, where installed
        versions["numba-cuda"] = importlib.metadata.version("numba-cuda")
    if fw.cuda is not None:  # the one that ran, whichever is installed
        versions["numba.cuda"] = cuda_target(fw.cuda)
    on_gpu = device == "cuda" and fw.cuda is not None and gpu_missing(fw) is None
    gpu_name = fw.cuda.get_current_device().name if on_gpu else None
    return {
        "versions": versions,
        "threads": pools,
        "cuda": {**NO_CUDA, "driver": nvidia_driver()} if on_gpu else {},
        "gpu_name": gpu_name.decode() if isinstance(gpu_name, bytes) else gpu_name,
    }


def fused(fw, spec: RunSpec, data, clock):
    """The floor rung: numba's compiled loop on cpu, its CUDA kernel on cuda. Both build on ReferenceRun,
    defined here, and are imported only when they run: the CUDA kernel's module imports numba."""
    if spec.device == "cuda":
        from tiny_mlp_bench.backends.numba_cuda_fused import CudaFusedRun, simulated

        if (target := cuda_target(fw.cuda)) != NVIDIA_TARGET and not simulated(fw.numba):
            # numba's own CUDA target is deprecated and lags the GPUs and toolkits it meets: the floor is
            # measured with numba-cuda, whose hook a Python that skips .pth files never runs.
            raise RuntimeError(
                f"numba.cuda is {target} (numba {fw.numba.__version__}), not {NVIDIA_TARGET}: install numba-cuda, "
                "and run from a Python that runs its .pth hook"
            )
        return CudaFusedRun(fw, spec, data, clock)
    from tiny_mlp_bench.backends.numpy_fused import FusedRun

    return FusedRun(fw, spec, data, clock)


register_backend(
    Backend(
        name="numpy",
        load=load,
        prepare=prepare,
        start_device=start_device,
        describe=describe,
        peak_gpu_memory_mb=lambda fw, device: None,
    )
)
# The A/A control runs the reference's very loop under its own name.
RUNGS = (
    Variant(
        "numpy",
        "reference",
        ("cpu",),
        "the framework itself: hand-written forward, backward and Adam",
        role=Role.REFERENCE,
        loop=ReferenceRun,
    ),
    # The A/A control: runs of identical code under two names differ only by what the machine did to
    # them, so their ratio is the largest difference this machine fakes. The reference is cheap.
    Variant(
        "numpy",
        "reference_twin",
        ("cpu",),
        "nothing: `reference`'s very code under a second name, the A/A control (their ratio is what this "
        "machine fakes between identical code)",
        role=Role.AA_CONTROL,
        loop=ReferenceRun,
    ),
    # On cuda the same arithmetic in one numba CUDA kernel: the framework is the hand-written loops,
    # NumPy's and numba's, so its name stays (and so do the archives' run ids).
    Variant(
        "numpy",
        "fused",
        DEVICES,
        "every per-operation call and launch: forward, backward and Adam fused into one numba-compiled loop "
        f"on cpu, one numba CUDA kernel per {FUSED_EPOCHS_PER_LAUNCH} epochs on cuda (each device's floor)",
        role=Role.FLOOR,
        call_epochs=(("cpu", FUSED_EPOCHS_PER_CALL), ("cuda", FUSED_EPOCHS_PER_LAUNCH)),
        loop=fused,
    ),
)
