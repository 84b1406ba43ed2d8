"""When a job ran and what else the machine was doing meanwhile: load average, CPU clock, peak
memory, and what the kernel counted over the job (stolen time, CPU pressure, run-queue wait,
involuntary context switches).

The machines this runs on are often shared; a record that carries these lets a reader tell a
disturbed run from a slow one. Each reading is None where the system does not offer it: unknown,
never guessed.
"""

from __future__ import annotations

import datetime
import os
import resource
import statistics
from pathlib import Path

CPU_SYSFS = Path("/sys/devices/system/cpu")
CPUINFO = Path("/proc/cpuinfo")
PROC = Path("/proc")
STEAL_FIELD = 8  # /proc/stat's cpu line: user nice system idle iowait irq softirq steal ..., after "cpu"


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
    """Time so far in which some runnable task waited for a CPU (the "some" total of /proc/pressure/cpu),
    machine-wide, or for the job's cgroup where a container confines the view."""
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
        """The job's span, the snapshots from its start and end, the kernel's counts over it, peak memory."""
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
