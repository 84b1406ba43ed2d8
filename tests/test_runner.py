"""The GPU study's runner (tiny_mlp_bench/gpu_study/runner.py) with stand-in commands for Snakemake: jobs run one at
a time, a job that no longer fits is not started, one running at the time limit is stopped (killed if it ignores
Ctrl-C), and a failed one keeps the end of its log; and the node's CPU topology as its log records it."""

import itertools
import signal
import sys
import time

import pytest

from tiny_mlp_bench.gpu_study import environment, runner


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_call_is_done_failed_or_stopped_at_its_time(tmp_path):
    log = tmp_path / "jobs.log"
    assert runner.run_snakemake(python("print('hello')"), tmp_path, log, None) == "done"
    assert runner.run_snakemake(python("raise SystemExit(3)"), tmp_path, log, None) == "failed"
    began = time.monotonic()
    assert runner.run_snakemake(python("import time; time.sleep(60)"), tmp_path, log, began + 1) == "stopped"
    assert time.monotonic() - began < 1 + 2  # stopped by Ctrl-C's signal, at once
    assert "hello" in log.read_text() and log.read_text().count("$ ") == 3


def test_a_call_is_stopped_at_once_where_the_study_was_started_ignoring_ctrl_c(tmp_path):
    # As `python3 scripts/gpu_study.py &` from a script, or under nohup, starts: SIGINT ignored.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        began = time.monotonic()
        sleeper = python("import time; time.sleep(60)")
        assert runner.run_snakemake(sleeper, tmp_path, tmp_path / "jobs.log", began + 1) == "stopped"
        assert time.monotonic() - began < 1 + 2  # by the Ctrl-C signal, not killed after the grace
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_call_that_ignores_ctrl_c_is_killed_after_the_grace(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "STOP_GRACE_S", 1)
    stubborn = (
        "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    )
    began = time.monotonic()
    assert runner.run_snakemake(python(stubborn), tmp_path, tmp_path / "log", began + 1) == "stopped"
    assert 1 + 1 <= time.monotonic() - began < 1 + 1 + 2


@pytest.fixture
def stand_in(monkeypatch):
    """Each job's 'Snakemake call' sleeps the seconds its output names, and fails where it says fail."""

    def command(python_path, config, output):
        seconds, _, fail = output.partition(":")
        return python(
            f"import time; time.sleep({seconds}); print('the job says why'); raise SystemExit({int(bool(fail))})"
        )

    monkeypatch.setattr(runner, "snakemake_command", command)


def job(name, seconds, expected, device="cpu", fail=False) -> dict:
    """A planned job as plan.py writes it, whose stand-in call sleeps ``seconds``."""
    output = f"{seconds}:fail" if fail else str(seconds)
    fields = {"name": name, "output": output, "log": f"logs/{name}.log", "device": device, "phase_name": "the rest"}
    return fields | {"expected_s": expected, "expected_from": "estimate *"}


@pytest.mark.slow
def test_jobs_run_one_at_a_time_and_none_starts_that_no_longer_fits(tmp_path, stand_in):
    said = []
    running = runner.Runner(sys.executable, tmp_path / "config.yaml", tmp_path, "logs/jobs.log", said.append)
    t0 = time.monotonic()
    planned = [
        job("a", 0.5, 1),
        job("b", 0.1, 1, fail=True),
        job("too-long", 0.1, 30),
        job("c", 0.1, 1),
        job("d", 0.5, 1, "cuda"),
        job("late", 30, 1, "cuda"),
    ]
    outcomes = running.run(planned, until=t0 + 4, t0=t0)
    assert [(o["name"], o["outcome"]) for o in outcomes] == [
        ("a", "done"),
        ("b", "failed"),
        ("too-long", "skipped for time"),
        ("c", "done"),  # shorter, after one that did not fit
        ("d", "done"),
        ("late", "stopped"),
    ]
    # One after the other: each starts after the one before it ended.
    ran = [o for o in outcomes if "started_s" in o]
    assert all(later["started_s"] >= earlier["ended_s"] for earlier, later in itertools.pairwise(ran))
    assert "the job says why" in outcomes[1]["log_tail"]  # its own log is missing: the calls' log
    assert outcomes[-1]["ended_s"] < 4 + 1
    assert any("too-long: skipped, needs 30 s" in line for line in said)


@pytest.mark.slow
def test_a_pair_rounds_second_run_starts_only_after_its_first_ran(tmp_path, stand_in):
    said = []
    running = runner.Runner(sys.executable, tmp_path / "config.yaml", tmp_path, "logs/jobs.log", said.append)
    t0 = time.monotonic()
    # The first needs both runs' time (40 s) where 3 s are left: neither runs; a job after them still does.
    first = job("torch-cpu-seed-5", 0.1, 1) | {"needs_s": 40}
    second = job("torch-cuda-seed-5", 0.1, 1, "cuda") | {"after": "torch-cpu-seed-5"}
    outcomes = running.run([first, second, job("next", 0.1, 1)], until=t0 + 3, t0=t0)
    assert [o["outcome"] for o in outcomes] == ["skipped for time", "skipped for time", "done"]
    assert any("torch-cuda-seed-5: skipped, torch-cpu-seed-5 (its round's first run) did not run" in s for s in said)


def test_a_job_whose_record_says_failed_is_failed_though_snakemake_succeeded(tmp_path, monkeypatch):
    # A job that raised writes a failed record and exits 0, so Snakemake reports success.
    def command(python_path, config, output):
        status = "failed" if output.endswith("oom.json") else "ok"
        record = {"status": status, "reason": "RuntimeError: CUDA out of memory (test)" if status == "failed" else None}
        return python(f"import json; open({output!r}, 'w').write(json.dumps({record!r})); print('the job says why')")

    monkeypatch.setattr(runner, "snakemake_command", command)
    running = runner.Runner(sys.executable, tmp_path / "config.yaml", tmp_path, "logs/jobs.log", lambda line: None)
    failing = dict(job("oom", 0, 1), output=str(tmp_path / "oom.json"))
    ok = dict(job("fine", 0, 1), output=str(tmp_path / "fine.json"))
    outcomes = {o["name"]: o for o in running.run([failing, ok], until=None, t0=time.monotonic())}
    assert outcomes["oom"]["outcome"] == "failed" and outcomes["fine"]["outcome"] == "done"
    assert outcomes["oom"]["log_tail"].startswith("its record says failed: RuntimeError: CUDA out of memory (test)")


def test_a_job_that_wrote_its_record_as_the_time_ran_out_is_done(tmp_path, monkeypatch):
    # The call is still busy when the time for jobs is up, but its job has written its record.
    def command(python_path, config, output):
        write = f"open({output!r}, 'w').write('{{}}'); " if output.endswith("wrote.json") else ""
        return python(f"import time; {write}time.sleep(60)")

    monkeypatch.setattr(runner, "snakemake_command", command)
    running = runner.Runner(sys.executable, tmp_path / "config.yaml", tmp_path, "logs/jobs.log", lambda line: None)
    t0 = time.monotonic()
    wrote = dict(job("wrote", 60, 1), output=str(tmp_path / "wrote.json"))
    running_on = dict(job("running_on", 60, 1, "cuda"), output=str(tmp_path / "running_on.json"))
    assert [o["outcome"] for o in running.run([wrote], t0 + 2, t0)] == ["done"]
    t0 = time.monotonic()
    assert [o["outcome"] for o in running.run([running_on], t0 + 2, t0)] == ["stopped"]


def test_a_call_reruns_what_a_stopped_job_left_incomplete():
    assert "--rerun-incomplete" in runner.snakemake_command("python", "config.yaml", "results/runs/a.json")


def topology(sysfs, siblings: dict[int, str]):
    for cpu, listed in siblings.items():
        (sysfs / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (sysfs / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(listed + "\n")
    return environment.core_siblings(set(siblings), sysfs)


def test_the_node_record_names_its_boot_its_cpus_and_how_they_pair_into_cores(tmp_path):
    # Threads numbered core by core (0-3 the first thread of each core, 4-7 their siblings).
    by_core = topology(tmp_path / "by-core", {cpu: f"{cpu % 4},{cpu % 4 + 4}" for cpu in range(8)})
    groups = environment.physical_cores(set(range(8)), by_core)
    assert groups == [frozenset({0, 4}), frozenset({1, 5}), frozenset({2, 6}), frozenset({3, 7})]
    # A topology the kernel does not show (a microVM's guest may not) counts each CPU as a core of its own.
    unknown = environment.core_siblings({0, 1}, tmp_path / "nothing")
    assert unknown == {0: "", 1: ""}
    assert environment.physical_cores({0, 1}, unknown) == [frozenset({0}), frozenset({1})]
    assert environment.parse_core_list("0-2,8") == {0, 1, 2, 8}
    assert environment.core_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11"
    proc = tmp_path / "proc"
    (proc / "sys" / "kernel" / "random").mkdir(parents=True)
    (proc / "sys" / "kernel" / "random" / "boot_id").write_text("a-boot-id\n")
    node = environment.node_record(tmp_path / "by-core", proc)
    assert node["boot_id"] == "a-boot-id"
    assert set(node) == {"boot_id", "cpu", "virtualization", "logical_cpus", "thread_siblings", "lscpu", "gpus"}
    assert node["lscpu"] and node["gpus"]  # what the command printed, or why it printed nothing
    assert set(node["cpu"]) >= {"vendor", "family", "model"}


def test_a_cuda_job_keeps_the_gpus_state_before_and_after(tmp_path, stand_in):
    readings = []

    def read():
        readings.append(len(readings))
        return [{"pstate": "P0", "reading": str(len(readings))}]

    running = runner.Runner(
        sys.executable, tmp_path / "config.yaml", tmp_path, "logs/jobs.log", lambda line: None, read
    )
    planned = [job("c", 0, 1), job("g", 0, 1, "cuda")]
    outcomes = {o["name"]: o for o in running.run(planned, until=None, t0=time.monotonic())}
    assert outcomes["g"]["gpu_before"] != outcomes["g"]["gpu_after"] and len(readings) == 2
    assert "gpu_before" not in outcomes["c"] and "gpu_after" not in outcomes["c"]
