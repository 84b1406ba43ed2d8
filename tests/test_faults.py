"""Faults, with real processes: killed jobs, a writer killed mid-publish, a corrupt record, a full disk,
and a second Snakemake run on a directory in use.

The Snakemake tests run a tiny NumPy study (one rung on the CPU) in a temporary copy of the workflow;
the writer test runs the training program alone, with the fault-injection point of
tiny_mlp_bench/atomic.py switched on. The full-disk test mounts a tmpfs, which needs root: elsewhere
it skips with the reason; CI sets TINY_MLP_BENCH_REQUIRE_ROOT_MOUNTS=1, which turns that skip into a
failure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import psutil
import pytest

from helpers import config_flags, run_script, run_snakemake, skip_unless_ready, table_rows, write_config
from tiny_mlp_bench.atomic import FAULT_BEFORE_PUBLISH, FAULT_VARIABLE
from tiny_mlp_bench.records import read_record, read_sweep

# Every test here runs Snakemake, or the training program, for real and breaks it on purpose.
pytestmark = pytest.mark.workflow

# One framework, one rung, one device: jobs of a second or two, plus the cpu sweep and the report.
NUMPY_ONLY = {"frameworks": ["numpy"], "devices": ["cpu"], "variants": {"numpy": ["reference"]}}
TIMEOUT_S = 300  # for a whole Snakemake run of the tiny study on a busy two-core machine


def wait_for(condition, what: str, timeout: float = TIMEOUT_S):
    """Poll ``condition`` until it returns something true, and return that; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.01)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def training_processes(directory: Path) -> list[psutil.Process]:
    """The live training programs of the workflow copy in ``directory`` (`python .../scripts/train.py ...`)."""
    script = str((directory / "scripts" / "train.py").resolve())
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if (process.info["cmdline"] or [])[1:2] == [script] and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


def record_of(process: psutil.Process) -> str:
    """The record a training process was started to write (its --output)."""
    cmdline = process.cmdline()
    return cmdline[cmdline.index("--output") + 1]


@dataclasses.dataclass
class Background:
    """A Snakemake run started by snakemake_in_background."""

    process: subprocess.Popen
    output: IO[str]

    def wait(self) -> tuple[int, str]:
        """Its exit status and its log (stdout and stderr together)."""
        returncode = self.process.wait(timeout=TIMEOUT_S)
        self.output.seek(0)
        return returncode, self.output.read()


@contextlib.contextmanager
def snakemake_in_background(directory: Path, *args):
    """Start the environment's snakemake in ``directory`` in a session of its own, its output in a file (a
    pipe could fill up); on the way out, kill that session if the run is still going, whatever the test did."""
    snakemake = Path(sys.executable).with_name("snakemake")
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(
            [str(snakemake), *map(str, args)],
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            text=True,
            start_new_session=True,
        )
        try:
            yield Background(process, output)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def failed_outputs(log: str, rule: str) -> list[str]:
    """The outputs of the jobs of ``rule`` that Snakemake reports as failed."""
    return re.findall(rf"Error in rule {rule}:.*?output: (results/[^\s,]+)", log, re.S)


def jobs_run(log: str, rule: str) -> int:
    return len(re.findall(rf"^(?:local)?rule {rule}:$", log, re.M))


def test_a_killed_training_process_fails_only_its_job_and_a_rerun_redoes_only_it(workflow_dir):
    config = write_config(workflow_dir, "numpy.yaml", **NUMPY_ONLY, repeats=3)
    runs = workflow_dir / "results" / "runs"
    with snakemake_in_background(workflow_dir, "--cores", 2, "--configfile", config) as run:
        # The first training process seen: the timed slot runs the other two after it, so they
        # start only after it has failed, and finish only if the profile keeps going.
        victim = wait_for(lambda: training_processes(workflow_dir)[:1], "a training process")[0]
        record = record_of(victim)
        victim.kill()  # SIGKILL: no handler runs, nothing is flushed
        returncode, log = run.wait()
    assert returncode != 0
    assert failed_outputs(log, "train") == [record], log[-3000:]
    assert not (workflow_dir / record).exists()
    others = sorted(f"numpy-cpu-reference-{r}.json" for r in (1, 2, 3) if f"-{r}.json" not in record)
    assert sorted(p.name for p in runs.glob("*")) == others  # the two others; nothing of the killed one
    for name in others:
        assert read_record(runs / name)["status"] == "ok"
    assert read_sweep(workflow_dir / "results" / "sweep" / "cpu.json")["status"] == "ok"
    assert not (workflow_dir / "results" / "report.md").exists()  # it needs every record

    before = {name: (runs / name).stat().st_mtime_ns for name in others}
    rerun = run_snakemake(workflow_dir, "--cores", 2, "--configfile", config)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert jobs_run(rerun.stderr, "train") == 1 and jobs_run(rerun.stderr, "render_report") == 1
    assert f"output: {record}" in rerun.stderr
    assert read_record(workflow_dir / record)["status"] == "ok"
    assert {name: (runs / name).stat().st_mtime_ns for name in others} == before  # not redone
    assert (workflow_dir / "results" / "report.md").exists()


def test_killing_a_jobs_shell_leaves_no_training_process_to_write_its_record(workflow_dir):
    config = write_config(workflow_dir, "numpy.yaml", **NUMPY_ONLY, repeats=1)
    record = "results/runs/numpy-cpu-reference-1.json"
    with snakemake_in_background(workflow_dir, record, "--cores", 1, "--configfile", config) as run:
        trainer = wait_for(lambda: training_processes(workflow_dir)[:1], "a training process")[0]
        # The job's shell: the process Snakemake started for the job, the trainer or one of its parents.
        shell = trainer
        while shell.ppid() != run.process.pid:
            shell = shell.parent()
        shell.kill()
        returncode, log = run.wait()
        # A trainer that outlived its shell would finish its run and write the record: wait it out.
        psutil.wait_procs([trainer], timeout=TIMEOUT_S)
    assert returncode != 0
    assert failed_outputs(log, "train") == [record], log[-3000:]
    assert list((workflow_dir / "results" / "runs").glob("*")) == []  # no record, no temporary file


def test_a_writer_killed_before_publishing_leaves_no_record_and_the_next_run_cleans_up(
    small_dataset, tmp_path, monkeypatch
):
    output = tmp_path / "runs" / "numpy-cpu-reference-1.json"
    args = [*config_flags("train.py"), "--framework", "numpy", "--variant", "reference", "--dataset", small_dataset]
    args += ["--epochs", 3]
    monkeypatch.setenv(FAULT_VARIABLE, FAULT_BEFORE_PUBLISH)
    killed = run_script("train.py", *args, "--output", output)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert "numpy-cpu-reference-1: " in killed.stderr and ", test MSE " in killed.stderr  # it trained and scored
    said = re.search(r", test MSE (\S+)$", killed.stderr, re.MULTILINE).group(1)
    assert said == f"{float(said):.3g}"  # the digits it holds, not float's sixteen
    assert not output.exists()
    assert list(output.parent.glob("*.json")) == []  # what the report's inputs and Snakemake look at
    (leftover,) = output.parent.iterdir()  # the complete temporary file it could not publish or remove
    assert re.fullmatch(r"\.numpy-cpu-reference-1\.json\.\w+\.part", leftover.name)

    monkeypatch.delenv(FAULT_VARIABLE)
    rerun = run_script("train.py", *args, "--output", output)
    assert rerun.returncode == 0, rerun.stderr
    assert read_record(output)["status"] == "ok"
    assert os.listdir(output.parent) == [output.name]  # the leftover is gone


def test_a_corrupt_record_stops_the_report_naming_the_file(workflow_dir):
    config = write_config(workflow_dir, "numpy.yaml", **NUMPY_ONLY, repeats=1)
    assert run_snakemake(workflow_dir, "--cores", 2, "--configfile", config).returncode == 0
    record = workflow_dir / "results" / "runs" / "numpy-cpu-reference-1.json"
    text = record.read_text()
    record.write_text(text[: len(text) // 2])  # cut off mid-way, newer than the report: it is redone
    result = run_snakemake(workflow_dir, "--cores", 2, "--configfile", config)
    assert result.returncode != 0
    assert failed_outputs(result.stderr, "render_report") == ["results/report.md"], result.stderr[-3000:]
    # The job's log, shown by the profile's show-failed-logs: the file, what is wrong, what to do.
    message = re.search(r"error: (\S+): not a readable JSON record \(.+\); delete it to rerun that job", result.stderr)
    assert message and message.group(1) == "results/runs/numpy-cpu-reference-1.json", result.stderr[-3000:]
    assert not (workflow_dir / "results" / "report.md").exists()  # no report from the other records

    record.unlink()  # as the message says: delete it to rerun that job
    result = run_snakemake(workflow_dir, "--cores", 2, "--configfile", config)
    assert result.returncode == 0, result.stderr[-3000:]
    assert jobs_run(result.stderr, "train") == 1 and jobs_run(result.stderr, "render_report") == 1
    assert read_record(record)["status"] == "ok"


@pytest.fixture
def full_runs_dir(workflow_dir):
    """results/runs/ of the workflow copy on a 64 KiB tmpfs, filled to the last byte (needs root)."""
    runs = workflow_dir / "results" / "runs"
    runs.mkdir(parents=True)
    problem = None
    if os.geteuid() != 0:
        problem = "mounting a tmpfs needs root (CI runs this test as root)"
    elif shutil.which("mount") is None:
        problem = "no mount command"
    else:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(runs)], capture_output=True)
        if mounted.returncode != 0:
            problem = f"cannot mount a tmpfs: {mounted.stderr.decode(errors='replace').strip()}"
    skip_unless_ready(problem, "TINY_MLP_BENCH_REQUIRE_ROOT_MOUNTS")
    try:
        with open(runs / "filler", "wb", buffering=0) as filler, contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * 4096)
        assert os.statvfs(runs).f_bavail == 0
        yield runs
    finally:
        subprocess.run(["umount", "--lazy", str(runs)], check=True)


def test_a_full_disk_fails_the_job_with_a_clear_error_and_no_half_written_record(workflow_dir, full_runs_dir):
    config = write_config(workflow_dir, "numpy.yaml", **NUMPY_ONLY, repeats=1)
    record = "results/runs/numpy-cpu-reference-1.json"
    result = run_snakemake(workflow_dir, record, "--cores", 1, "--configfile", config)
    assert result.returncode != 0
    assert failed_outputs(result.stderr, "train") == [record], result.stderr[-3000:]
    said = f"numpy-cpu-reference-1: error: cannot write the run record {record}: {os.strerror(errno.ENOSPC)}"
    assert said in result.stderr
    assert "Traceback" not in result.stderr
    assert os.listdir(full_runs_dir) == ["filler"]  # no record, no temporary file


def test_a_second_snakemake_on_a_directory_in_use_is_refused_and_the_first_finishes(workflow_dir):
    config = write_config(workflow_dir, "numpy.yaml", **NUMPY_ONLY, repeats=1)
    with snakemake_in_background(workflow_dir, "--cores", 2, "--configfile", config) as first:
        # Hold the first run mid-job, so that it certainly holds its lock while the second one starts.
        trainer = wait_for(lambda: training_processes(workflow_dir)[:1], "a training process")[0]
        trainer.suspend()
        try:
            second = run_snakemake(workflow_dir, "--cores", 2, "--configfile", config)
        finally:
            trainer.resume()
        returncode, log = first.wait()
    assert second.returncode != 0
    assert "LockException" in second.stderr and "Directory cannot be locked" in second.stderr
    assert returncode == 0, log[-3000:]
    assert read_record(workflow_dir / "results" / "runs" / "numpy-cpu-reference-1.json")["status"] == "ok"
    # The report holds the run: its rung's row in the two views, from one run.
    rows = table_rows((workflow_dir / "results" / "report.md").read_text())
    assert ["numpy-cpu `reference`", "1"] in [row[:2] for row in rows]
    again = run_snakemake(workflow_dir, "-n", "--configfile", config)
    assert "Nothing to be done" in again.stdout + again.stderr  # nothing the first run made was lost
