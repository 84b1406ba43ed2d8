"""The GPU study's lanes (tiny_mlp_bench/gpu_study/lanes.py) with stand-in commands for Snakemake: a job that
no longer fits is not started, one running at the time limit is stopped (killed if it ignores
Ctrl-C), and a failed one keeps the end of its log."""

import signal
import sys
import threading
import time

import pytest

from tiny_mlp_bench.gpu_study import lanes


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_call_is_done_failed_or_stopped_at_its_time(tmp_path):
    log, never = tmp_path / "lane.log", threading.Event()
    assert lanes.run_snakemake(python("print('hello')"), tmp_path, log, None, never) == "done"
    assert lanes.run_snakemake(python("raise SystemExit(3)"), tmp_path, log, None, never) == "failed"
    began = time.monotonic()
    assert lanes.run_snakemake(python("import time; time.sleep(60)"), tmp_path, log, began + 1, never) == "stopped"
    assert time.monotonic() - began < 1 + 2  # stopped by Ctrl-C's signal, at once
    assert "hello" in log.read_text() and log.read_text().count("$ ") == 3


def test_a_call_is_stopped_at_once_where_the_study_was_started_ignoring_ctrl_c(tmp_path):
    # As `python3 scripts/gpu_study.py &` from a script, or under nohup, starts: SIGINT ignored.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        began = time.monotonic()
        sleeper = python("import time; time.sleep(60)")
        assert lanes.run_snakemake(sleeper, tmp_path, tmp_path / "lane.log", began + 1) == "stopped"
        assert time.monotonic() - began < 1 + 2  # by the Ctrl-C signal, not killed after the grace
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_call_that_ignores_ctrl_c_is_killed_after_the_grace(tmp_path, monkeypatch):
    monkeypatch.setattr(lanes, "STOP_GRACE_S", 1)
    stubborn = (
        "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    )
    began = time.monotonic()
    assert lanes.run_snakemake(python(stubborn), tmp_path, tmp_path / "log", began + 1, threading.Event()) == "stopped"
    assert 1 + 1 <= time.monotonic() - began < 1 + 1 + 2


@pytest.fixture
def stand_in(monkeypatch):
    """Each job's 'Snakemake call' sleeps the seconds its output names, and fails where it says fail."""

    def command(python_path, config, output):
        seconds, _, fail = output.partition(":")
        return python(
            f"import time; time.sleep({seconds}); print('the job says why'); raise SystemExit({int(bool(fail))})"
        )

    monkeypatch.setattr(lanes, "snakemake_command", command)


def job(name, seconds, expected, device="cpu", fail=False) -> dict:
    """A planned job as plan.py writes it, whose stand-in call sleeps ``seconds``."""
    output = f"{seconds}:fail" if fail else str(seconds)
    fields = {"name": name, "output": output, "log": f"logs/{name}.log", "device": device, "tier": 1}
    return fields | {"expected_s": expected, "expected_from": "estimate *"}


@pytest.mark.slow
def test_lanes_run_side_by_side_and_start_nothing_that_no_longer_fits(tmp_path, stand_in):
    said = []
    running = lanes.Lanes(sys.executable, tmp_path / "config.yaml", tmp_path, "logs", said.append)
    t0 = time.monotonic()
    planned = {
        "cpu": [job("a", 0.5, 1), job("b", 0.1, 1, fail=True), job("too-long", 0.1, 30), job("c", 0.1, 1)],
        "cuda": [job("d", 0.5, 1, "cuda"), job("late", 30, 1, "cuda")],
    }
    outcomes = {o["name"]: o for o in running.run(planned, until=t0 + 4, t0=t0)}
    assert {name: o["outcome"] for name, o in outcomes.items()} == {
        "a": "done",
        "b": "failed",
        "too-long": "skipped for time",
        "c": "done",
        "d": "done",
        "late": "stopped",
    }
    # The lanes overlapped: d started before a ended.
    assert outcomes["d"]["started_s"] < outcomes["a"]["started_s"] + outcomes["a"]["took_s"]
    assert "the job says why" in outcomes["b"]["log_tail"]  # its own log is missing: the lane's
    assert outcomes["late"]["started_s"] + outcomes["late"]["took_s"] < 4 + 1
    assert any("too-long: skipped, expected 30 s" in line for line in said)


def test_a_job_whose_record_says_failed_is_failed_though_snakemake_succeeded(tmp_path, monkeypatch):
    # A job that raised writes a failed record and exits 0, so Snakemake reports success.
    def command(python_path, config, output):
        status = "failed" if output.endswith("oom.json") else "ok"
        record = {"status": status, "reason": "RuntimeError: CUDA out of memory (test)" if status == "failed" else None}
        return python(f"import json; open({output!r}, 'w').write(json.dumps({record!r})); print('the job says why')")

    monkeypatch.setattr(lanes, "snakemake_command", command)
    running = lanes.Lanes(sys.executable, tmp_path / "config.yaml", tmp_path, "logs", lambda line: None)
    failing = dict(job("oom", 0, 1), output=str(tmp_path / "oom.json"))
    ok = dict(job("fine", 0, 1), output=str(tmp_path / "fine.json"))
    outcomes = {o["name"]: o for o in running.run({"cuda": [failing, ok]}, until=None, t0=time.monotonic())}
    assert outcomes["oom"]["outcome"] == "failed" and outcomes["fine"]["outcome"] == "done"
    assert outcomes["oom"]["log_tail"].startswith("its record says failed: RuntimeError: CUDA out of memory (test)")


def test_a_job_that_wrote_its_record_as_the_time_ran_out_is_done(tmp_path, monkeypatch):
    # Both calls are still busy when the time for jobs is up; only one's job has written its record.
    def command(python_path, config, output):
        write = f"open({output!r}, 'w').write('{{}}'); " if output.endswith("wrote.json") else ""
        return python(f"import time; {write}time.sleep(60)")

    monkeypatch.setattr(lanes, "snakemake_command", command)
    running = lanes.Lanes(sys.executable, tmp_path / "config.yaml", tmp_path, "logs", lambda line: None)
    t0 = time.monotonic()
    wrote = dict(job("wrote", 60, 1), output=str(tmp_path / "wrote.json"))
    running_on = dict(job("running_on", 60, 1, "cuda"), output=str(tmp_path / "running_on.json"))
    outcomes = {o["name"]: o["outcome"] for o in running.run({"cpu": [wrote], "cuda": [running_on]}, t0 + 2, t0)}
    assert outcomes == {"wrote": "done", "running_on": "stopped"}


def test_a_call_reruns_what_a_stopped_job_left_incomplete():
    assert "--rerun-incomplete" in lanes.snakemake_command("python", "config.yaml", "results/runs/a.json")


def topology(sysfs, siblings: dict[int, str]):
    for cpu, listed in siblings.items():
        (sysfs / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (sysfs / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(listed + "\n")
    return lanes.core_siblings(set(siblings), sysfs)


def test_lanes_get_whole_physical_cores_however_the_machine_numbers_its_threads(tmp_path):
    # Threads numbered core by core (0-3 the first thread of each core, 4-7 their siblings): halves of the
    # logical numbering would put a core's two threads in two lanes.
    by_core = topology(tmp_path / "by-core", {cpu: f"{cpu % 4},{cpu % 4 + 4}" for cpu in range(8)})
    assert lanes.split_cores(set(range(8)), ["cpu", "cuda"], by_core) == {"cpu": {0, 1, 4, 5}, "cuda": {2, 3, 6, 7}}
    # Siblings side by side (0-1 one core): the same halves as the numbering.
    adjacent = topology(tmp_path / "adjacent", {cpu: f"{cpu - cpu % 2}-{cpu - cpu % 2 + 1}" for cpu in range(8)})
    assert lanes.split_cores(set(range(8)), ["cpu", "cuda"], adjacent) == {"cpu": {0, 1, 2, 3}, "cuda": {4, 5, 6, 7}}
    # One physical core with two threads cannot be shared out; a topology the kernel does not show
    # counts each CPU as a core of its own.
    assert lanes.split_cores({0, 1}, ["cpu", "cuda"], topology(tmp_path / "one", {0: "0-1", 1: "0-1"})) == {}
    unknown = lanes.core_siblings({0, 1}, tmp_path / "nothing")
    assert unknown == {0: "", 1: ""}
    assert lanes.split_cores({0, 1}, ["cpu", "cuda"], unknown) == {"cpu": {0}, "cuda": {1}}
    assert lanes.parse_core_list("0-2,8") == {0, 1, 2, 8}


def test_each_job_says_what_ran_beside_it_and_for_how_long():
    outcomes = [
        {"name": "a", "lane": "cpu", "started_s": 0.0, "took_s": 10.0, "ended_s": 10.0},
        {"name": "b", "lane": "cuda", "started_s": 4.0, "took_s": 2.0, "ended_s": 6.0},
        {"name": "c", "lane": "cuda", "started_s": 10.0, "took_s": 5.0, "ended_s": 15.0},  # starts as a ends
        {"name": "d", "lane": "cuda", "started_s": 14.9, "took_s": 1.0, "ended_s": 15.9},  # after c, times rounded
        {"name": "skipped", "lane": "cpu", "outcome": "skipped for time"},
    ]
    lanes.add_beside(outcomes)
    assert [o.get("beside") for o in outcomes] == [{"b": 2.0}, {"a": 2.0}, {}, {}, None]
    # A job ran alone 12.26-16.84 s, and the next stage's jobs began at 16.85 s: its start and length
    # round up, their sum to 16.9 s, but its own end rounds to 16.8 s, where the next jobs start.
    stages = [
        {"name": "alone", "lane": "cpu", "started_s": 12.3, "took_s": 4.6, "ended_s": 16.8},
        {"name": "next", "lane": "cuda", "started_s": 16.8, "took_s": 2.0, "ended_s": 18.8},
    ]
    lanes.add_beside(stages)
    assert [o["beside"] for o in stages] == [{}, {}]


def test_a_cuda_job_keeps_the_gpus_state_before_and_after_and_every_job_its_cores(tmp_path, stand_in):
    readings = []

    def read():
        readings.append(len(readings))
        return [{"pstate": "P0", "reading": str(len(readings))}]

    running = lanes.Lanes(sys.executable, tmp_path / "config.yaml", tmp_path, "logs", lambda line: None, read)
    planned = {"cpu": [job("c", 0, 1)], "cuda": [job("g", 0, 1, "cuda")]}
    outcomes = {o["name"]: o for o in running.run(planned, until=None, t0=time.monotonic())}
    assert outcomes["g"]["gpu_before"] != outcomes["g"]["gpu_after"] and len(readings) == 2
    assert "gpu_before" not in outcomes["c"] and "gpu_after" not in outcomes["c"]
    assert outcomes["c"]["cores"] == outcomes["g"]["cores"] == "every core"
