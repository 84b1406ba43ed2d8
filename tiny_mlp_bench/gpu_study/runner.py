"""Lanes of timed jobs for the GPU study: each runs its jobs one by one as Snakemake calls, none past the time left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from tiny_mlp_bench.gpu_study.environment import gpu_readings

# Kept after the last job for the stop grace, the report's render and the archive's re-render: about twice what
# they need (on a 2-core machine renders took 2.3-3.6 s).
ARCHIVE_RESERVE_S = 45
# How long Snakemake may take to stop its job at the time limit before its process group is killed.
STOP_GRACE_S = 10
TAIL_LINES = 8  # of a failed job's log, kept for the archive's README
POLL_S = 0.2  # how often a lane looks at its job, the clock and Ctrl-C


class Interrupted(Exception):
    """Ctrl-C: the lanes stopped their jobs and started no more."""


def core_siblings(cores: set[int], sysfs: Path = Path("/sys/devices/system/cpu")) -> dict[int, str]:
    """Each core's hyper-thread siblings as the kernel lists them (``0,8`` or ``0-1``); "" where unknown."""
    found = {}
    for core in sorted(cores):
        path = sysfs / f"cpu{core}" / "topology" / "thread_siblings_list"
        found[core] = path.read_text().strip() if path.is_file() else ""
    return found


def parse_core_list(text: str) -> set[int]:
    """``0-3,8`` as the set of cores it names."""
    cores = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        cores.update(range(int(first), int(last or first) + 1))
    return cores


def physical_cores(cores: set[int], siblings: dict[int, str]) -> list[frozenset[int]]:
    """``cores`` grouped by physical core, in order of first CPU; a CPU of unknown siblings is a core of its own."""
    groups: dict[frozenset[int], None] = {}
    for cpu in sorted(cores):
        groups.setdefault(frozenset(parse_core_list(siblings.get(cpu, "")) & cores) or frozenset({cpu}), None)
    return list(groups)


def split_cores(cores: set[int], lanes: list[str], siblings: dict[int, str] | None = None) -> dict[str, set[int]]:
    """The physical cores cut into one equal run per lane (the last takes the rest), each with all its threads: no two
    lanes share a physical core. Empty where there are fewer physical cores than lanes."""
    physical = physical_cores(cores, siblings or {})
    share = len(physical) // len(lanes)
    if share == 0:
        return {}
    starts = [i * share for i in range(len(lanes))]
    ends = [*starts[1:], len(physical)]
    return {lane: set().union(*physical[a:b]) for lane, a, b in zip(lanes, starts, ends, strict=True)}


def core_list(cores: set[int]) -> str:
    """Cores as ranges, as taskset and /proc/self/status write them: 0-7,12."""
    runs, ordered = [], sorted(cores)
    for core in ordered:
        if runs and core == runs[-1][1] + 1:
            runs[-1][1] = core
        else:
            runs.append([core, core])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def snakemake_command(python: Path, config: Path, *targets: str) -> list[str]:
    # The targets come first: --configfile takes every word after it. A job stopped at the time limit
    # is marked incomplete by Snakemake; --rerun-incomplete lets the next study redo it instead of refusing.
    return [
        str(python),
        "-m",
        "snakemake",
        *targets,
        "--cores",
        "all",
        "--configfile",
        str(config),
        "--nolock",
        "--rerun-incomplete",
    ]


def jobs_take_ctrl_c() -> None:
    """Restore Python's SIGINT handler where `&` or nohup left it ignored: children would inherit that and halt()
    could not stop them. Only the main thread may."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def run_snakemake(
    command: list[str], cwd: Path, log: Path, until: float | None, stop: threading.Event | None = None
) -> str:
    """Run one Snakemake call, its output appended to ``log``, stopping it at ``until`` (monotonic
    time), when ``stop`` is set, or on Ctrl-C (raised again). What came of it: done, failed or stopped."""
    jobs_take_ctrl_c()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        # In a process group of its own with its job, so that the two can be stopped together.
        process = subprocess.Popen(
            command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, process_group=0
        )
        try:
            while process.poll() is None:
                if (stop and stop.is_set()) or (until is not None and time.monotonic() >= until):
                    break
                time.sleep(POLL_S)
            else:
                return "done" if process.returncode == 0 else "failed"
        except KeyboardInterrupt:
            halt(process)
            raise
        halt(process)
        return "stopped"


def halt(process: subprocess.Popen) -> None:
    """SIGINT to Snakemake's group, as Ctrl-C does (SIGTERM would make Snakemake wait for the job); SIGKILL after the
    grace. A job stopped before it wrote its record leaves none."""
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.is_file() else f"(no {path})"


def recorded_failure(record: Path) -> str | None:
    """Why a job's record says it failed, or None: a job that raised still succeeds for Snakemake."""
    try:
        found = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    if isinstance(found, dict) and found.get("status") == "failed":
        return f"its record says failed: {found.get('reason')}"
    return None


class Lanes:
    """The study's jobs (plan.py's, as dicts), lane by lane, in ``cwd`` with ``python``'s Snakemake."""

    def __init__(self, python: Path, config: Path, cwd: Path, logs: Path, say, readings=gpu_readings) -> None:
        self.python, self.config, self.cwd, self.logs, self.say = python, config, cwd, logs, say
        self.gpu_readings = readings  # the GPU's state around a cuda job (a test's stand-in where it has none)
        self.stop = threading.Event()  # set on Ctrl-C: the lanes stop their jobs and start no more

    def run(
        self, lanes: dict[str, list[dict]], until: float | None, t0: float, cores: dict[str, set[int]] | None = None
    ) -> list[dict]:
        """Every lane at once, each on its ``cores`` where given; each job's plan with its lane, outcome and, if it ran,
        ``started_s`` and ``ended_s`` (from ``t0``) and ``took_s``, in no particular order."""
        outcomes, cores = [], cores or {}
        jobs_take_ctrl_c()  # here, in the main thread, for the lanes' threads
        threads = [
            threading.Thread(target=self.run_lane, args=(lane, jobs, until, t0, outcomes, cores.get(lane)))
            for lane, jobs in lanes.items()
            if jobs
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(POLL_S)
        except KeyboardInterrupt:
            self.stop.set()
            for thread in threads:
                thread.join()
            raise Interrupted from None
        return outcomes

    def run_lane(
        self, lane: str, planned: list[dict], until: float | None, t0: float, outcomes: list, cores: set[int] | None
    ) -> None:
        if cores:
            # A process inherits its starting thread's affinity: this pins this lane's calls and jobs only.
            os.sched_setaffinity(0, cores)
        log = self.cwd / self.logs / f"{lane}.log"
        for number, job in enumerate(planned, 1):
            left = None if until is None else until - time.monotonic()
            outcome = dict(job, lane=lane)
            where = f"[{lane} {number}/{len(planned)}] {job['name']}"
            if self.stop.is_set():
                outcome["outcome"] = "not started (interrupted)"
            elif left is not None and job["expected_s"] > left:
                outcome["outcome"] = "skipped for time"
                self.say(f"{where}: skipped, expected {job['expected_s']:g} s with {max(left, 0):.0f} s left")
            else:
                self.say(f"{where}: tier {job['tier']}, expected {job['expected_s']:g} s ({job['expected_from']})")
                outcome["cores"] = core_list(cores) if cores else "every core"
                if job["device"] == "cuda":
                    outcome["gpu_before"] = self.gpu_readings()
                begun = time.monotonic()
                command = snakemake_command(self.python, self.config, job["output"])
                outcome["outcome"] = run_snakemake(command, self.cwd, log, until, self.stop)
                ended = time.monotonic()
                outcome |= {
                    "started_s": round(begun - t0, 1),
                    "took_s": round(ended - begun, 1),
                    "ended_s": round(ended - t0, 1),
                }
                if job["device"] == "cuda":
                    outcome["gpu_after"] = self.gpu_readings()
                if outcome["outcome"] == "stopped" and (self.cwd / job["output"]).is_file():
                    # Stopped in Snakemake's bookkeeping after the (atomic) record was written: the run finished.
                    outcome["outcome"] = "done"
                failure = recorded_failure(self.cwd / job["output"]) if outcome["outcome"] == "done" else None
                if failure:
                    outcome["outcome"] = "failed"
                if outcome["outcome"] == "failed":
                    job_log = self.cwd / job["log"]
                    outcome["log_tail"] = "\n".join(
                        filter(None, [failure, tail(job_log if job_log.is_file() else log)])
                    )
                self.say(f"{where}: {outcome['outcome']} in {outcome['took_s']} s")
            outcomes.append(outcome)


def add_beside(outcomes: list[dict]) -> None:
    """Give each job that ran its ``beside``: other lanes' jobs overlapping it, with the seconds of overlap. Uses the
    rounded ``ended_s``, not ``started_s + took_s``: two roundings could overlap the next stage's jobs by 0.1 s."""
    ran = [o for o in outcomes if "started_s" in o]
    for job in ran:
        job["beside"] = {
            other["name"]: round(overlap, 1)
            for other in ran
            if other["lane"] != job["lane"]
            and (overlap := min(job["ended_s"], other["ended_s"]) - max(job["started_s"], other["started_s"])) > 0
        }
