"""What the GPU study would use, asked of the study's own Python before anything is timed."""

from __future__ import annotations

import importlib.metadata
import json
import sys
import tempfile
import traceback
from pathlib import Path

FLOOR_EPOCHS = 2  # of the floor kernel's check: one launch, compiled for the GPU first


def reason(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".strip()[:500]


def packages(needs: list[str]) -> dict[str, dict]:
    """Each need's version and where it comes from: this environment (the kit's) or the machine's own."""
    found = {}
    for name in needs:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = {"version": None, "from": None}
            continue
        where = Path(str(dist.locate_file(""))).resolve()
        found[name] = {
            "version": dist.version,
            "from": "environment" if where.is_relative_to(sys.prefix) else "machine",
        }
    return found


def torch_gpu() -> dict:
    import torch

    seen = {"torch": torch.__version__, "cuda_build": torch.version.cuda, "gpu": None, "capability": None}
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        seen |= {"gpu": torch.cuda.get_device_name(), "capability": f"{major}.{minor}"}
    return seen


def numba_cuda() -> dict:
    import numba
    from numba import cuda

    from tiny_mlp_bench.backends.numpy_loop import simulated
    from tiny_mlp_bench.backends.numpy_reference import NVIDIA_TARGET, cuda_target

    return {
        "numba": numba.__version__,
        "target": cuda_target(cuda),
        "nvidia": cuda_target(cuda) == NVIDIA_TARGET,
        "module": cuda.__file__,
        "simulator": simulated(numba),
        "available": bool(cuda.is_available()),
    }


def nvvm() -> dict:
    """Where libNVVM is, as numba-cuda looks for it (cuda-pathfinder), and whether numba loads it."""
    found = {"path": None, "found_via": None, "loads": None}
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        loaded = load_nvidia_dynamic_lib("nvvm")
        found |= {"path": loaded.abs_path, "found_via": getattr(loaded, "found_via", None)}
    except Exception as err:  # an older numba-cuda without cuda-pathfinder, or no NVVM: said below
        found["found_via"] = reason(err)
    try:
        from numba.cuda.cudadrv.nvvm import NVVM

        NVVM()
        found["loads"] = "yes"
    except Exception as err:
        found["loads"] = reason(err)
    return found


def floor_kernel() -> str:
    """The floor rung's kernel compiled for this GPU and run: its step count, or why not."""
    from tiny_mlp_bench.backends.contract import RunSpec
    from tiny_mlp_bench.backends.numpy_reference import load
    from tiny_mlp_bench.dataset import make_dataset, read_dataset, write_dataset
    from tiny_mlp_bench.initial_weights import live_initial_weights
    from tiny_mlp_bench.registry import loop
    from tiny_mlp_bench.timing import Clock

    with tempfile.TemporaryDirectory() as scratch:
        write_dataset(make_dataset(seed=1, n_rows=100), Path(scratch) / "dataset.parquet")
        data = read_dataset(Path(scratch) / "dataset.parquet")
    weights = live_initial_weights(1, 20, data.train[:, :2])
    spec = RunSpec("cuda", "fused", 1, 1, weights, FLOOR_EPOCHS, 64, 1e-3, 20, 1)
    training = loop("numpy", "fused")(load("cuda"), spec, data, Clock())
    training.fit(Clock(), FLOOR_EPOCHS)
    steps, expected = training.steps_taken(), FLOOR_EPOCHS * -(-len(data.train) // spec.batch_size)
    if steps != expected:
        raise RuntimeError(f"the kernel took {steps} steps in {FLOOR_EPOCHS} epochs, not {expected}")
    return f"compiled and ran: {steps} steps in {FLOOR_EPOCHS} epochs"


def main(needs: list[str]) -> dict:
    found: dict = {"python": sys.version.split()[0], "executable": sys.executable, "packages": packages(needs)}
    for part, measure in (("torch", torch_gpu), ("numba", numba_cuda), ("nvvm", nvvm)):
        try:
            found[part] = measure()
        except Exception as err:
            traceback.print_exc()
            found[part] = {"error": reason(err)}
    gpu = found["torch"].get("gpu")
    numba = found["numba"]
    if gpu and numba.get("nvidia") and not numba.get("simulator"):
        try:
            found["floor_kernel"] = floor_kernel()
        except Exception as err:
            traceback.print_exc()
            found["floor_kernel"] = f"failed: {reason(err)}"
    else:
        found["floor_kernel"] = None  # nothing to compile it for, or no numba-cuda to compile it with
    return found


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:]), indent=1))
