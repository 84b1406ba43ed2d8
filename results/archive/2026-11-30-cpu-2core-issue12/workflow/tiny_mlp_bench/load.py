"""What else the machine was doing around a measurement: load average, CPU clock, peak memory.

The machines this runs on are often shared; a record that carries these lets a reader tell a
disturbed run from a slow one. Each reading is None where the system does not offer it.
"""

from __future__ import annotations

import os
import resource
import statistics
from pathlib import Path

CPU_SYSFS = Path("/sys/devices/system/cpu")
CPUINFO = Path("/proc/cpuinfo")


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


def peak_host_memory_mb() -> float:
    """This process's peak resident memory so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_block(before: dict, after: dict, peak_gpu_memory_mb: float | None) -> dict:
    """The record's ``load`` block: snapshots from the program's start and end, and peak memory."""
    return {
        "before": before,
        "after": after,
        "peak_host_memory_mb": round(peak_host_memory_mb(), 1),
        "peak_gpu_memory_mb": None if peak_gpu_memory_mb is None else round(peak_gpu_memory_mb, 1),
    }
