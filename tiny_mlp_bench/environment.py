"""Describe the machine a run happened on, for the run record's ``environment`` block."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import socket
import subprocess
from pathlib import Path

# Variables that change how many threads the numeric libraries start.
THREAD_ENV_PREFIXES = ("OMP_", "MKL_", "OPENBLAS_", "GOTO_", "VECLIB_", "NUMEXPR_", "TF_NUM_")
# Set by scripts/container_run.py for a step it runs with Docker or Podman.
ENGINE_ENV = "TINY_MLP_BENCH_CONTAINER_ENGINE"
IMAGE_ENV = "TINY_MLP_BENCH_IMAGE"
IMAGE_ID_ENV = "TINY_MLP_BENCH_IMAGE_ID"

# Signs of a GPU driver on this machine. Where none of them exists, a cuda job is skipped before its
# framework is imported; where any does, the framework's own check decides. No environment variable
# counts: a CUDA simulator (NUMBA_ENABLE_CUDASIM) or CUDA_VISIBLE_DEVICES is no driver.
GPU_DRIVER_PATHS = (
    # The NVIDIA kernel driver's /proc entry: a container sees it even without GPU passthrough, so such
    # a container falls back to the framework's own check.
    "/proc/driver/nvidia",
    # Its device nodes, which nvidia-modprobe creates lazily on some hosts (hence the /proc entry too).
    "/dev/nvidiactl",
    "/dev/nvidia0",
    "/dev/dxg",  # WSL2: CUDA reaches the Windows host's driver through it
    "/dev/kfd",  # AMD ROCm's kernel driver: torch's "cuda" device on a ROCm build
)
# What a framework that was never imported says of CUDA: nothing.
NO_CUDA = {"build_cuda": None, "build_cudnn": None, "driver": None}


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo, or platform's guess elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def thread_env(environ=os.environ) -> dict[str, str]:
    """The thread-count variables that are set, sorted by name."""
    return {k: environ[k] for k in sorted(environ) if k.startswith(THREAD_ENV_PREFIXES)}


def container(environ=os.environ) -> dict | None:
    """The engine, image and image ID the step runs in; None when it runs on the host.

    Docker and Podman steps are told by container_run.py; Apptainer says so itself (the image
    file, no ID); an engine's marker file without either still records that there was one.
    """
    if environ.get(ENGINE_ENV):
        return {"engine": environ[ENGINE_ENV], "image": environ.get(IMAGE_ENV), "image_id": environ.get(IMAGE_ID_ENV)}
    apptainer_image = environ.get("APPTAINER_CONTAINER") or environ.get("SINGULARITY_CONTAINER")
    if apptainer_image:
        return {"engine": "apptainer", "image": apptainer_image, "image_id": None}
    for marker, engine in (("/run/.containerenv", "podman"), ("/.dockerenv", "docker")):
        if Path(marker).exists():
            return {"engine": engine, "image": None, "image_id": None}
    return None


def git_commit(directory: Path = Path(__file__).parent) -> str | None:
    """The checked-out commit of the code that ran, with '-dirty' when it has local changes."""
    try:

        def git(*args):
            return subprocess.run(
                ["git", "-C", str(directory), *args], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()

        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def slurm_gpus(environ=os.environ) -> str | None:
    """GPU indices Slurm allocated to this job, or None outside a Slurm job or without GPUs."""
    if not environ.get("SLURM_JOB_ID"):
        return None
    for name in ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "CUDA_VISIBLE_DEVICES"):
        if environ.get(name):
            return environ[name]
    return None


def gpu_driver_absent() -> str | None:
    """Why no cuda job can run here when the machine shows no sign of a GPU driver at all, else None."""
    if any(Path(path).exists() for path in GPU_DRIVER_PATHS):
        return None
    return f"no CUDA device: no GPU driver on this machine (none of {', '.join(GPU_DRIVER_PATHS)})"


def installed_versions(packages) -> dict[str, str]:
    """The installed version of each distribution, keyed by its name as given; those not installed are left out."""
    found = {}
    for name in packages:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    return found


def not_imported(packages) -> dict:
    """A backend's describe() of a framework that was not imported: its packages' installed versions."""
    return {"versions": installed_versions(packages), "threads": {}, "cuda": dict(NO_CUDA), "gpu_name": None}


def nvidia_driver() -> str | None:
    """The NVIDIA driver version from nvidia-smi (frameworks do not report it), or None."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return out.stdout.splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def collect_environment(
    versions: dict[str, str],
    threads: dict[str, int],
    cuda: dict[str, str | None],
    gpu_name: str | None,
    dataset_sha256: str | None,
) -> dict:
    """The record's environment block; the framework supplies what only it can know."""
    import numpy

    return {
        "python": platform.python_version(),
        "versions": {"numpy": numpy.__version__, **versions},
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count() or 0,
        "host": socket.gethostname(),
        "threads": threads,
        "thread_env": thread_env(),
        "cuda": cuda,
        "gpu_name": gpu_name,
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_node": os.environ.get("SLURMD_NODENAME"),
        # The GPUs Slurm gave the job: its own list, else the devices it made visible.
        "slurm_gpus": slurm_gpus(),
        "container": container(),
        "git_commit": git_commit(),
        "dataset_sha256": dataset_sha256,
    }
