"""The GPU study's timed jobs, run one at a time as Snakemake calls, none past the time left."""

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
POLL_S = 0.2  # how often the runner looks at its job, the clock and Ctrl-C


class Interrupted(Exception):
    """Ctrl-C: the running job was stopped and no more were started."""


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


def run_snakemake(command: list[str], cwd: Path, log: Path, until: float | None) -> str:
    """Run one Snakemake call, its output appended to ``log``, stopping it at ``until`` (monotonic
    time) or on Ctrl-C (raised again). What came of it: done, failed or stopped."""
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
                if until is not None and time.monotonic() >= until:
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


class Runner:
    """The study's jobs (plan.py's, as dicts), one at a time on every core, in ``cwd`` with ``python``'s Snakemake:
    nothing runs beside a timed job."""

    def __init__(self, python: Path, config: Path, cwd: Path, log: Path, say, readings=gpu_readings) -> None:
        self.python, self.config, self.cwd, self.log, self.say = python, config, cwd, log, say
        self.gpu_readings = readings  # the GPU's state around a cuda job (a test's stand-in where it has none)

    def run(self, planned: list[dict], until: float | None, t0: float) -> list[dict]:
        """Each job's plan with its outcome and, if it ran, ``started_s`` and ``ended_s`` (from ``t0``) and
        ``took_s``, in the plan's order. A job whose expected time no longer fits is skipped; a shorter one after
        it may still start. Ctrl-C stops the running job and raises Interrupted."""
        outcomes, ran = [], set()
        try:
            for number, job in enumerate(planned, 1):
                where = f"[{number}/{len(planned)}] {job['name']}"
                if job.get("after") and job["after"] not in ran:
                    self.say(f"{where}: skipped, {job['after']} (its round's first run) did not run")
                    outcomes.append(dict(job, outcome="skipped for time"))
                    continue
                outcomes.append(self.run_one(job, where, until, t0))
                if "started_s" in outcomes[-1]:
                    ran.add(job["name"])
        except KeyboardInterrupt:
            raise Interrupted from None
        return outcomes

    def run_one(self, job: dict, where: str, until: float | None, t0: float) -> dict:
        left = None if until is None else until - time.monotonic()
        outcome = dict(job)
        needs = job.get("needs_s", job["expected_s"])  # a question round's first run: both runs' time (plan.py)
        if left is not None and needs > left:
            self.say(f"{where}: skipped, needs {needs:g} s with {max(left, 0):.0f} s left")
            return outcome | {"outcome": "skipped for time"}
        self.say(f"{where}: {job['phase_name']}, expected {job['expected_s']:g} s ({job['expected_from']})")
        if job["device"] == "cuda":
            outcome["gpu_before"] = self.gpu_readings()
        begun = time.monotonic()
        command = snakemake_command(self.python, self.config, job["output"])
        outcome["outcome"] = run_snakemake(command, self.cwd, self.cwd / self.log, until)
        ended = time.monotonic()
        took = {"started_s": round(begun - t0, 1), "took_s": round(ended - begun, 1), "ended_s": round(ended - t0, 1)}
        outcome |= took
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
            log = job_log if job_log.is_file() else self.cwd / self.log
            outcome["log_tail"] = "\n".join(filter(None, [failure, tail(log)]))
        self.say(f"{where}: {outcome['outcome']} in {outcome['took_s']} s")
        return outcome
