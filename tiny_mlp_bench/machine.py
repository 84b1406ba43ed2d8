"""A record's ``environment`` block (what the machine is) and ``load`` block (what it did while the job ran)."""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import importlib.metadata
import os
import platform
import resource
import socket
import statistics
import subprocess
from pathlib import Path

THREAD_ENV_PREFIXES = ("OMP_", "MKL_", "OPENBLAS_", "GOTO_", "VECLIB_", "NUMEXPR_", "TF_NUM_")
# Set by scripts/container_run.py for a step it runs with Docker or Podman.
ENGINE_ENV = "TINY_MLP_BENCH_CONTAINER_ENGINE"
IMAGE_ENV = "TINY_MLP_BENCH_IMAGE"
IMAGE_ID_ENV = "TINY_MLP_BENCH_IMAGE_ID"
# The workspace's commit, read on the host by container_run.py: an image has no git to read it with.
GIT_COMMIT_ENV = "TINY_MLP_BENCH_GIT_COMMIT"

# With none of these a cuda job is skipped before import; env vars (a CUDA simulator, CUDA_VISIBLE_DEVICES) don't count.
GPU_DRIVER_PATHS = (
    # A container sees this even without GPU passthrough; it then falls back to the framework's own check.
    "/proc/driver/nvidia",
    # Its device nodes, which nvidia-modprobe creates lazily on some hosts (hence the /proc entry too).
    "/dev/nvidiactl",
    "/dev/nvidia0",
    "/dev/dxg",  # WSL2: CUDA reaches the Windows host's driver through it
    "/dev/kfd",  # AMD ROCm's kernel driver: torch's "cuda" device on a ROCm build
)
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
    return {k: environ[k] for k in sorted(environ) if k.startswith(THREAD_ENV_PREFIXES)}


def container(environ=os.environ) -> dict | None:
    """The engine, image and image ID the step runs in; None when it runs on the host."""
    if environ.get(ENGINE_ENV):
        return {"engine": environ[ENGINE_ENV], "image": environ.get(IMAGE_ENV), "image_id": environ.get(IMAGE_ID_ENV)}
    apptainer_image = environ.get("APPTAINER_CONTAINER") or environ.get("SINGULARITY_CONTAINER")
    if apptainer_image:
        return {"engine": "apptainer", "image": apptainer_image, "image_id": None}
    for marker, engine in (("/run/.containerenv", "podman"), ("/.dockerenv", "docker")):
        if Path(marker).exists():
            return {"engine": engine, "image": None, "image_id": None}
    return None


def git_commit(directory: Path = Path(__file__).parent, environ=os.environ) -> str | None:
    """The checked-out commit (+'-dirty'); without git (an image), the one the launcher read on the host, else None."""
    try:

        def git(*args):
            return subprocess.run(
                ["git", "-C", str(directory), *args], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()

        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return environ.get(GIT_COMMIT_ENV) or None


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


def nvidia_smi(field: str) -> str | None:
    """``field`` of the first GPU as nvidia-smi reports it, or None where there is no nvidia-smi or GPU."""
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return out.stdout.splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def nvidia_driver() -> str | None:
    """The NVIDIA driver version (frameworks do not report it), or None."""
    return nvidia_smi("driver_version")


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
        "cpu": cpu_identity(),
        "cpu_mhz": cpu_mhz(),
        "logical_cpus": os.cpu_count() or 0,
        "kernel": platform.release() or None,
        "virtualization": virtualization(),
        "host": socket.gethostname(),
        "threads": threads,
        "thread_env": thread_env(),
        "cuda": cuda,
        "gpu_name": gpu_name,
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_node": os.environ.get("SLURMD_NODENAME"),
        "slurm_gpus": slurm_gpus(),
        "container": container(),
        "git_commit": git_commit(),
        "dataset_sha256": dataset_sha256,
    }


CPU_SYSFS = Path("/sys/devices/system/cpu")
CPUINFO = Path("/proc/cpuinfo")
PROC = Path("/proc")
HYPERVISOR_TYPE = Path("/sys/hypervisor/type")
STEAL_FIELD = 8  # /proc/stat's cpu line: user nice system idle iowait irq softirq steal ..., after "cpu"


CLOCKSOURCE = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")


def clocksource(path: Path = CLOCKSOURCE) -> str:
    """The kernel's clock source, which time.perf_counter reads through: a read costs tens of nanoseconds on `tsc`
    (in the vDSO) and a system call on others."""
    try:
        return path.read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def cpu_mhz(sysfs: Path = CPU_SYSFS, cpuinfo: Path = CPUINFO) -> float | None:
    """The mean current clock over the CPUs: cpufreq's reading, else /proc/cpuinfo's (which a VM may fix)."""
    try:
        khz = [int(p.read_text()) for p in sysfs.glob("cpu[0-9]*/cpufreq/scaling_cur_freq")]
        if khz:
            return statistics.fmean(khz) / 1000
        mhz = [float(line.split(":", 1)[1]) for line in cpuinfo.read_text().splitlines() if line.startswith("cpu MHz")]
        return statistics.fmean(mhz) if mhz else None
    except (OSError, ValueError):
        return None


def parse_cpuinfo(text: str) -> dict:
    """The first CPU's vendor, family, model, stepping and flags hash in /proc/cpuinfo text; None where it lacks one."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        name, colon, value = line.partition(":")
        if colon:
            fields.setdefault(name.strip(), value.strip())

    def number(name: str) -> int | None:
        try:
            return int(fields[name])
        except (KeyError, ValueError):
            return None

    flags = fields.get("flags") or fields.get("Features")  # Arm's cpuinfo names its flags Features
    return {
        "vendor": fields.get("vendor_id") or None,
        "family": number("cpu family"),
        "model": number("model"),
        "stepping": number("stepping"),
        "flags_sha256": hashlib.sha256(" ".join(sorted(flags.split())).encode()).hexdigest()[:12] if flags else None,
    }


def cpu_identity(cpuinfo: Path = CPUINFO) -> dict:
    """parse_cpuinfo of this machine's /proc/cpuinfo; every field None where there is none."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        text = ""
    return parse_cpuinfo(text)


def virtualization(hypervisor: Path = HYPERVISOR_TYPE) -> str | None:
    """The hypervisor this machine runs under ("none" on bare metal) as systemd-detect-virt names it, else
    as /sys/hypervisor/type does; None where neither says."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        # --vm: a container is the record's container block; exits 1 when it prints "none"
        found = subprocess.run(["systemd-detect-virt", "--vm"], capture_output=True, text=True, timeout=5)
        if found.stdout.strip():
            return found.stdout.strip()
    try:
        return hypervisor.read_text().strip() or None
    except OSError:
        return None


def snapshot() -> dict:
    """The load average (1, 5 and 15 minutes) and the CPU clock now."""
    try:
        load_average = [round(value, 2) for value in os.getloadavg()]
    except OSError:
        load_average = None
    return {"load_average": load_average, "cpu_mhz": cpu_mhz()}


def utc_now() -> str:
    """The time now in UTC, ISO 8601 to the microsecond: records of jobs side by side can be ordered."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds")


def stolen_s(proc: Path = PROC) -> float | None:
    """CPU time a hypervisor gave to other guests so far, summed over this machine's CPUs (/proc/stat)."""
    try:
        fields = (proc / "stat").read_text().splitlines()[0].split()
        return int(fields[STEAL_FIELD]) / os.sysconf("SC_CLK_TCK") if fields[0] == "cpu" else None
    except (OSError, IndexError, ValueError):
        return None


def cpu_pressure_s(proc: Path = PROC) -> float | None:
    """Seconds some runnable task waited for a CPU (/proc/pressure/cpu "some"); the cgroup's in a container."""
    try:
        for line in (proc / "pressure" / "cpu").read_text().splitlines():
            kind, *fields = line.split()
            if kind == "some":
                return int(dict(f.split("=") for f in fields)["total"]) / 1e6
    except (OSError, KeyError, ValueError):
        pass
    return None


def run_queue_wait_s(proc: Path = PROC) -> float | None:
    """Time this process's main thread (the one that runs the timed loop) has waited on a run queue."""
    try:
        return int((proc / "self" / "schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def kernel_counters(proc: Path = PROC) -> dict[str, float | None]:
    """What the kernel has counted so far; a job's share is the difference of two readings (kernel_block)."""
    return {
        "stolen_s": stolen_s(proc),
        "cpu_pressure_s": cpu_pressure_s(proc),
        "run_queue_wait_s": run_queue_wait_s(proc),
        "involuntary_switches": resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw,
    }


def kernel_block(before: dict, after: dict) -> dict:
    """What the kernel counted between two readings of kernel_counters; None where either lacks it."""
    return {
        key: None if before[key] is None or after[key] is None else round(after[key] - before[key], 6) for key in before
    }


def peak_host_memory_mb() -> float:
    """This process's peak resident memory so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class JobWatch:
    """Readings at a job's start; :meth:`block` takes the end's and gives the record's ``load`` block."""

    def __init__(self) -> None:
        self.started_at, self.before, self.counters = utc_now(), snapshot(), kernel_counters()

    def block(self, peak_gpu_memory_mb: float | None) -> dict:
        counters, after = kernel_counters(), snapshot()
        return {
            "started_at": self.started_at,
            "ended_at": utc_now(),
            "before": self.before,
            "after": after,
            "kernel": kernel_block(self.counters, counters),
            "peak_host_memory_mb": round(peak_host_memory_mb(), 1),
            "peak_gpu_memory_mb": None if peak_gpu_memory_mb is None else round(peak_gpu_memory_mb, 1),
        }
