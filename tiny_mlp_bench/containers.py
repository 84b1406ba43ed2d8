"""Steps in Docker or Podman images: find the engine and the image, and build the `<engine> run` command."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from functools import cache
from pathlib import Path

from tiny_mlp_bench.machine import (
    ENGINE_ENV,
    GIT_COMMIT_ENV,
    IMAGE_ENV,
    IMAGE_ID_ENV,
    THREAD_ENV_PREFIXES,
    git_commit,
)

ENGINES = ("docker", "podman")
# PYTHONPATH names the workflow's own tiny_mlp_bench, mounted at the same path (the image's copy is not installed).
FORWARDED_PREFIXES = (*THREAD_ENV_PREFIXES, "SLURM_", "SLURMD_NODENAME", "CUDA_VISIBLE_DEVICES", "PYTHONPATH")
# Where Podman looks for CDI specs by default (containers.conf cdi_spec_dirs).
CDI_SPEC_DIRS = (Path("/etc/cdi"), Path("/var/run/cdi"))
GPU_FLAGS = {"docker": ["--gpus", "all"], "podman": ["--device", "nvidia.com/gpu=all"]}


class ContainerError(Exception):
    """The engine or the image is missing; the message says what to do."""


def image_reference(image: str) -> str:
    """An image name the engines understand: the config's Apptainer-style docker:// prefix dropped."""
    if image.startswith("docker://"):
        return image.removeprefix("docker://")
    if "://" in image or image.endswith((".sif", ".simg")):
        raise ContainerError(
            f"image '{image}' is an Apptainer image, not one Docker or Podman can run: set the "
            "config's images to registry names (docker://NAME:TAG or NAME:TAG)"
        )
    return image


@cache
def find_engine(engine: str) -> str:
    """The engine's executable, or a ContainerError that names the package and the config key."""
    path = shutil.which(engine)
    if path is None:
        raise ContainerError(
            f"container_engine is '{engine}', but no '{engine}' command is on PATH: install it "
            f"(Debian/Ubuntu: apt-get install {'docker.io' if engine == 'docker' else 'podman'}), "
            "or set container_engine: none to run the steps in the local environment"
        )
    info = subprocess.run([path, "info"], capture_output=True, text=True)
    if info.returncode != 0:
        raise ContainerError(
            f"container_engine is '{engine}', but `{engine} info` failed, so it cannot run containers "
            f"(is its daemon or socket running?): {info.stderr.strip() or info.stdout.strip()}"
        )
    return path


def image_id(engine: str, image: str) -> str:
    """The local image's ID; a ContainerError naming the build command when it is not there."""
    found = subprocess.run(
        [find_engine(engine), "image", "inspect", "--format", "{{.Id}}", image_reference(image)],
        capture_output=True,
        text=True,
    )
    if found.returncode != 0 or not found.stdout.strip():
        name = image_reference(image).rsplit("/", 1)[-1].split(":")[0]
        if name in ("torch", "keras"):
            build = f"make images ENGINE={engine} FLAVOR={'cpu' if image.endswith('-cpu') else 'cuda'}"
        else:  # a stack's image (docker/stack.Dockerfile)
            build = f"make image-stack-{name} ENGINE={engine}"
        raise ContainerError(
            f"image '{image_reference(image)}' is not in {engine}'s local images: build it with "
            f"`{build}` (or `{engine} pull` it), or point the "
            f"config's images at one that exists ({engine} said: {found.stderr.strip() or 'nothing'})"
        )
    return found.stdout.strip()


def gpu_flags(engine: str, cdi_dirs=CDI_SPEC_DIRS) -> tuple[list[str], str | None]:
    """The engine's flag that hands the host's GPUs to the container, or ([], why not)."""
    if engine == "podman":
        specs = [p for d in cdi_dirs if d.is_dir() for p in sorted(d.iterdir()) if p.is_file()]
        if not any("nvidia.com/gpu" in p.read_text(errors="replace") for p in specs):
            return [], (
                "no CDI spec for nvidia.com/gpu in " + " or ".join(map(str, cdi_dirs)) + " (make one with "
                "`nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`)"
            )
    elif not (shutil.which("nvidia-container-runtime-hook") or shutil.which("nvidia-container-runtime")):
        return [], "the NVIDIA Container Toolkit is not installed (Docker's --gpus needs it)"
    return GPU_FLAGS[engine], None


def forwarded_names(environ=os.environ) -> list[str]:
    return sorted(k for k in environ if k.startswith(FORWARDED_PREFIXES))


def run_command(
    engine: str,
    image: str,
    command: list[str],
    mounts: list[Path],
    gpu: list[str],
    identity: str,
    environ=os.environ,
    uid: int | None = None,
    gid: int | None = None,
) -> list[str]:
    uid = os.getuid() if uid is None else uid
    gid = os.getgid() if gid is None else gid
    # Files the step writes belong to the caller: rootless Podman maps the caller's uid only with keep-id.
    user = ["--userns=keep-id"] if engine == "podman" and uid != 0 else []
    user += ["--user", f"{uid}:{gid}"]
    volumes = [arg for d in dict.fromkeys(m.resolve() for m in mounts) for arg in ("--volume", f"{d}:{d}")]
    env = [arg for name in forwarded_names(environ) for arg in ("--env", name)]
    env += ["--env", f"{ENGINE_ENV}={engine}", "--env", f"{IMAGE_ENV}={image}", "--env", f"{IMAGE_ID_ENV}={identity}"]
    if commit := git_commit():  # this package's checkout: the workspace's, as PYTHONPATH names it
        env += ["--env", f"{GIT_COMMIT_ENV}={commit}"]
    # No network: a step reads its inputs from the mounts and must not download anything.
    return [
        engine,
        "run",
        "--rm",
        "--network=none",
        # The machine's name, not the container's: the report groups runs by host.
        "--hostname",
        socket.gethostname(),
        *user,
        *volumes,
        "--workdir",
        str(Path.cwd().resolve()),
        *env,
        *gpu,
        image,
        *command,
    ]
