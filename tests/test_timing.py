"""The timing module: phases, blocks, the Keras callback, progress lines and the steady state."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from helpers import OLDEST_PYTHON, written_for_python_3_9
from tiny_mlp_bench import timing
from tiny_mlp_bench.backends.keras_fit import epoch_clock
from tiny_mlp_bench.timing import Clock, SteadyClock


class FakeTime:
    """A perf_counter and a process_time (``cpu``) that move only when told, so every reading is known."""

    def __init__(self):
        self.now = 100.0
        self.cpu = 10.0

    def __call__(self):
        return self.now

    def process_time(self):
        return self.cpu


@pytest.fixture
def fake_time(monkeypatch):
    fake = FakeTime()
    monkeypatch.setattr(timing.time, "perf_counter", fake)
    monkeypatch.setattr(timing.time, "process_time", fake.process_time)
    return fake


def test_phases_blocks_and_timing_point_come_from_the_readings(fake_time):
    clock = Clock()

    def run_epochs(n):
        fake_time.now += 2.0 * n  # two seconds an epoch
        fake_time.cpu += 1.5 * n  # of which the process ran 1.5 s

    with clock.phase("import"):
        fake_time.now += 5
    with clock.timing_point():
        with clock.phase("setup"):
            fake_time.now += 1
        with clock.phase("fit"):
            clock.run_blocks(run_epochs, total=5, per_block=2)
        with clock.phase("predict"):
            fake_time.now += 0.5
    assert clock.phases_s == {"import": 5, "setup": 1, "fit": 10, "predict": 0.5}
    assert clock.block_s == [4, 4, 2] and clock.block_epochs == [2, 2, 1]  # the last block is short
    assert clock.timings() == {
        "phases_s": {"import": 5, "setup": 1, "fit": 10, "predict": 0.5},
        "fit_predict_s": 11.5,
        "block_s": [4, 4, 2],
        "block_cpu_s": [3, 3, 1.5],
        "block_epochs": [2, 2, 1],
    }


def test_the_clocks_own_work_lies_in_no_block(fake_time, monkeypatch):
    # Our bookkeeping and progress line, made slow here, run between two blocks: in neither of them.
    clock = Clock(label="torch-cpu-seed-1", planned_epochs=4)
    slow_progress = clock._report_progress

    def report_slowly(*args):
        fake_time.now += 7.0
        fake_time.cpu += 7.0
        slow_progress(*args)

    monkeypatch.setattr(clock, "_report_progress", report_slowly)

    def run_epochs(n):
        fake_time.now += 2.0 * n
        fake_time.cpu += 0.5 * n

    with clock.phase("fit"):
        clock.run_blocks(run_epochs, total=4, per_block=1)
    assert clock.block_s == [2.0] * 4 and clock.block_cpu_s == [0.5] * 4
    assert clock.phases_s["fit"] == 4 * 2.0 + 4 * 7.0  # the phase holds all of it


def test_every_reading_waits_for_the_device(fake_time):
    calls = []
    clock = Clock(sync=lambda: calls.append(fake_time.now))
    with clock.phase("fit"):
        clock.run_blocks(lambda n: None, total=3, per_block=1)
    # one at the phase's start, one at the blocks' start, one per block, one at the phase's end
    assert len(calls) == 6


def test_a_phase_must_be_named_in_phases():
    with pytest.raises(ValueError, match=r"unknown phase 'warmup'; add it to timing\.PHASES"), Clock().phase("warmup"):
        pass


def test_a_phase_is_timed_once(fake_time):
    # A second timing would replace the first: a rung that timed its parent's phase again kept only its own part.
    clock = Clock()
    with clock.phase("optimizer"):
        fake_time.now += 2
    with pytest.raises(RuntimeError, match="phase 'optimizer' timed twice"), clock.phase("optimizer"):
        fake_time.now += 1
    assert clock.phases_s == {"optimizer": 2}
    with clock.phase("fit"), pytest.raises(RuntimeError, match="phase 'fit' timed twice"), clock.phase("fit"):
        pass  # nor inside itself, before its first timing ends


def test_keras_callback_closes_a_block_at_every_epoch_end(fake_time):
    keras = types.SimpleNamespace(callbacks=types.SimpleNamespace(Callback=object))
    clock = Clock()
    with clock.phase("fit"):
        callback = epoch_clock(keras, clock)
        for epoch in range(3):  # what fit() does: work, then on_epoch_end
            fake_time.now += 1.5 if epoch == 0 else 0.5
            callback.on_epoch_end(epoch)
    assert clock.block_s == [1.5, 0.5, 0.5] and clock.block_epochs == [1, 1, 1]


def test_keras_pause_after_the_last_epoch_is_a_phase_inside_fit(fake_time):
    keras = types.SimpleNamespace(callbacks=types.SimpleNamespace(Callback=object))
    clock = Clock()
    with clock.phase("fit"):
        callback = epoch_clock(keras, clock)
        for epoch in range(3):
            fake_time.now += 0.5
            callback.on_epoch_end(epoch)
        fake_time.now += 0.2  # fit's own pause after its last epoch, before it returns
        clock.since_last_block("fit_end")
    assert "fit_end" in timing.PHASES and timing.FIT_PARTS == ("fit_end",)
    assert clock.phases_s["fit_end"] == pytest.approx(0.2)
    # fit still holds all of fit: the blocks and the pause after them, which no block holds.
    assert clock.phases_s["fit"] == pytest.approx(sum(clock.block_s) + 0.2)
    assert clock.block_s == [0.5, 0.5, 0.5]


def test_the_pause_after_the_last_block_needs_a_block_and_a_known_phase():
    with pytest.raises(RuntimeError, match="no block has ended"):
        Clock().since_last_block("fit_end")
    clock = Clock()
    clock.block_done(1)
    with pytest.raises(ValueError, match=r"unknown phase 'pause'; add it to timing\.PHASES"):
        clock.since_last_block("pause")


def test_progress_every_tenth_of_the_epochs(fake_time, capsys):
    clock = Clock(label="torch-cpu-seed-1", planned_epochs=20)
    with clock.phase("fit"):
        clock.run_blocks(lambda n: setattr(fake_time, "now", fake_time.now + n), total=20, per_block=3)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "torch-cpu-seed-1: epoch 3/20, 3.0 s"
    assert lines[-1] == "torch-cpu-seed-1: epoch 20/20, 20.0 s"
    assert len(lines) == 7  # 3, 6, ..., 18 and the last block (20): each crosses a tenth (2 epochs)


def test_a_window_pass_warms_up_then_closes_blocks_at_the_first_call_past_the_target(fake_time, monkeypatch):
    # The canary takes 0.001 s of fake time, outside every block.
    monkeypatch.setattr(timing, "canary", lambda: setattr(fake_time, "now", fake_time.now + 0.001) or 0.001)
    clock = SteadyClock(sync=None, block_target_s=0.05)
    clock.start_pass()
    # Calls of 0.02 s: the first is the warm-up, then a block closes after every third call, 0.06 s in;
    # the pass's last call leaves a short block, dropped.
    clock.run_blocks(lambda n: setattr(fake_time, "now", fake_time.now + 0.02 * n), total=8, per_block=1)
    window = clock.window()
    assert window["passes"] == 1 and window["block_target_s"] == 0.05
    assert window["block_epochs"] == [3, 3]
    assert window["block_s"] == pytest.approx([0.06, 0.06])  # the canary's 0.001 s in neither
    assert window["canary_s"] == [0.001, 0.001] and len(window["block_cpu_s"]) == 2


def test_each_pass_of_a_window_has_its_own_warm_up(fake_time, monkeypatch):
    monkeypatch.setattr(timing, "canary", lambda: 0.0)
    clock = SteadyClock(sync=None, block_target_s=0.05)
    for seconds in (0.5, 0.03):  # a slow warm-up call in the first pass only
        clock.start_pass()
        calls = iter([seconds, 0.06, 0.06])

        def call(n, calls=calls):
            fake_time.now += next(calls)

        clock.run_blocks(call, total=3, per_block=1)
    window = clock.window()
    assert window["passes"] == 2 and window["block_s"] == pytest.approx([0.06, 0.06, 0.06, 0.06])


CLOCK = Path(timing.__file__)


def test_the_clock_is_written_for_python_3_9_and_the_standard_library_alone():
    imported = {name.split(".")[0] for name in written_for_python_3_9(CLOCK)}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported - set(sys.stdlib_module_names)


def oldest_python() -> str | None:
    """A Python 3.9 interpreter on this machine that runs, if there is one."""
    found = shutil.which("python3.9")
    if found is None:
        return None
    ran = subprocess.run([found, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    return found if ran.returncode == 0 and ran.stdout.strip() == str(OLDEST_PYTHON) else None


# Loaded by its path, as a runner in an image with no tiny_mlp_bench installed would load it.
ON_THE_OLDEST_PYTHON = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("timing", sys.argv[1])
timing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(timing)
clock = timing.Clock()
with clock.phase("setup"):
    pass
with clock.phase("fit"), clock.timing_point():
    clock.run_blocks(lambda n: sum(range(1000 * n)), total=6, per_block=2)
calls = timing.time_calls(lambda: sum(range(100)), 10, repeats=3)
print(json.dumps({"timings": clock.timings(), "pace": timing.timing_point_pace(clock, 6), "calls": calls}))
"""


def test_the_clock_runs_on_python_3_9():
    python = oldest_python()
    if python is None:
        pytest.skip("no Python 3.9 interpreter on this machine (python3.9 on PATH): the grammar test above still runs")
    ran = subprocess.run([python, "-c", ON_THE_OLDEST_PYTHON, str(CLOCK)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    assert found["timings"]["block_epochs"] == [2, 2, 2] and len(found["timings"]["block_s"]) == 3
    assert found["timings"]["fit_predict_s"] >= sum(found["timings"]["block_s"]) and found["pace"] > 0
    assert found["calls"]["repeats"] == 3 == len(found["calls"]["repeat_us"])
