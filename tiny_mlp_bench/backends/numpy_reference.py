"""NumPy and numba, the hand-written loops: the framework's backend and its rungs."""

from __future__ import annotations

import contextlib
import importlib.metadata
from pathlib import Path
from types import SimpleNamespace

from tiny_mlp_bench.backends.contract import Backend, RunSpec
from tiny_mlp_bench.backends.numpy_loop import FUSED_EPOCHS_PER_CALL, FUSED_EPOCHS_PER_LAUNCH, ReferenceRun, simulated
from tiny_mlp_bench.catalogue import DEVICES, Role, Rung
from tiny_mlp_bench.machine import NO_CUDA, nvidia_driver


def load(device: str | None = None):
    """threadpoolctl, numba and, on cuda, its CUDA target, imported here, outside the clock."""
    import numba
    import threadpoolctl

    cuda = None
    if device == "cuda":
        from numba import cuda
    return SimpleNamespace(threadpoolctl=threadpoolctl, numba=numba, cuda=cuda, device_started=False)


def device_sync(fw, device: str):
    """What the clock calls before each reading: on cuda, numba's kernels run asynchronously."""
    if device != "cuda":
        return None  # NumPy computes synchronously

    def sync() -> None:
        # Syncing before start-up would make the context outside the clock; numba can't ask without making one.
        if fw.device_started:
            fw.cuda.synchronize()

    return sync


def prepare(fw, spec: RunSpec):
    fw.threadpoolctl.threadpool_limits(spec.threads)
    return device_sync(fw, spec.device)


def gpu_missing(fw) -> str | None:
    """Why numba cannot run a kernel on a GPU here (its CUDA simulator never counts as one), or None."""
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


# numba.cuda is NVIDIA's numba-cuda where its .pth hook ran, else the target built into numba.
NVIDIA_TARGET = "numba-cuda (NVIDIA)"
BUILT_IN_TARGET = "numba's built-in"


def cuda_target(cuda) -> str:
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
    """The floor rung: numba's compiled loop on cpu, its CUDA kernel on cuda, each imported only when run."""
    if spec.device == "cuda":
        from tiny_mlp_bench.backends.numba_cuda_fused import CudaFusedRun

        if (target := cuda_target(fw.cuda)) != NVIDIA_TARGET and not simulated(fw.numba):
            # numba's own CUDA target is deprecated and lags new GPUs and toolkits.
            raise RuntimeError(
                f"numba.cuda is {target} (numba {fw.numba.__version__}), not {NVIDIA_TARGET}: install numba-cuda, "
                "and run from a Python that runs its .pth hook"
            )
        return CudaFusedRun(fw, spec, data, clock)
    from tiny_mlp_bench.backends.numpy_fused import FusedRun

    return FusedRun(fw, spec, data, clock)


BACKENDS = (
    Backend(
        name="numpy",
        load=load,
        prepare=prepare,
        start_device=start_device,
        describe=describe,
        peak_gpu_memory_mb=lambda fw, device: None,
    ),
)
RUNGS = (
    Rung(
        "numpy",
        "reference",
        ("cpu",),
        "the framework itself: hand-written forward, backward and Adam",
        role=Role.REFERENCE,
        loop=ReferenceRun,
    ),
    Rung(
        "numpy",
        "reference_twin",
        ("cpu",),
        "nothing: `reference`'s very code under a second name, the A/A control (their ratio is what this "
        "machine fakes between identical code)",
        role=Role.AA_CONTROL,
        loop=ReferenceRun,
    ),
    # Named numpy on cuda too: the framework is the hand-written loops, and the archives' run ids stay.
    Rung(
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
