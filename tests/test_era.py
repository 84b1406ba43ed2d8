"""The era study: the runner for older stacks, a run on another stack, its jobs, its study kind and its report.

The runs in a stack's image need Podman and the era image (`make image-stack-era`); without them they skip with the
command that fixes it. CI builds the era image and sets TINY_MLP_BENCH_REQUIRE_PODMAN=1, which turns the skip into a
failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers import (
    ROOT,
    commit_all,
    run_snakemake,
    skip_unless_ready,
    synthetic_record,
    write_config,
    written_for_python_3_9,
)
from tiny_mlp_bench import era_runner, kinds, machine
from tiny_mlp_bench.containers import image_reference
from tiny_mlp_bench.dataset import make_dataset, read_dataset, write_dataset
from tiny_mlp_bench.initial_weights import live_initial_weights
from tiny_mlp_bench.jobs import rounds
from tiny_mlp_bench.jobs.identity import Job
from tiny_mlp_bench.jobs.run import StackRun, TrainingJob, run
from tiny_mlp_bench.records import read_record
from tiny_mlp_bench.report import claims
from tiny_mlp_bench.report.markdown import render_markdown
from tiny_mlp_bench.report.model import build_report
from tiny_mlp_bench.stacks import RELEASE_STEPS, RELEASES, STACKS, STEPS, TODAY
from tiny_mlp_bench.timing import LOOP_PARTS

RUNNER = Path(era_runner.__file__)
# What the runner may import besides the standard library: the clock, numpy, and the loop's framework.
RUNNER_IMPORTS = {"tiny_mlp_bench.timing", "numpy", "torch", "tensorflow", "tf_keras"}


def test_the_era_runner_is_written_for_python_3_9_and_imports_only_the_clock_of_the_project():
    imported = written_for_python_3_9(RUNNER)
    outside = {name for name in imported if name.split(".")[0] not in sys.stdlib_module_names | {"__future__"}}
    assert outside <= RUNNER_IMPORTS, outside - RUNNER_IMPORTS


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "dataset.parquet"
    write_dataset(make_dataset(42, 1000), path)
    return path


def runner_inputs(folder: Path, dataset: Path) -> Path:
    """The inputs a host job hands the runner: the rows and a live draw of initial weights, as .npy files."""
    data = read_dataset(dataset)
    for name in era_runner.ROWS:
        np.save(folder / f"{name}.npy", getattr(data, name).astype(np.float32))
    weights = live_initial_weights(42, 20, data.train[:, :2]).as_list()
    for name, value in zip(era_runner.WEIGHTS, weights, strict=True):
        np.save(folder / f"{name}.npy", value)
    return folder


def run_runner(*args: str) -> None:
    """The runner as a host job starts it: a process of its own, whose framework sets its thread pools once."""
    done = subprocess.run([sys.executable, "-m", "tiny_mlp_bench.era_runner", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("loop", era_runner.LOOPS)
def test_the_era_runner_trains_each_loop_on_todays_stack_as_the_project_times_a_run(loop, dataset, tmp_path):
    inputs = runner_inputs(tmp_path, dataset)
    output = tmp_path / "result.json"
    args = ["--loop", loop, "--inputs", str(inputs), "--output", str(output), "--epochs", "3", "--threads", "1"]
    run_runner(*args, "--steady-window-s", "0.05", "--steady-block-s", "0.01")
    found = json.loads(output.read_text())
    timings = found["timings"]
    # Every epoch a block, each of the 12 steps an epoch counted by the optimiser itself.
    assert timings["block_epochs"] == [1, 1, 1] and found["steps_taken"] == 3 * 12
    assert {"import", "setup", "startup", "data", "model", "optimizer", "fit", "predict"} <= timings["phases_s"].keys()
    assert timings["fit_predict_s"] >= timings["phases_s"]["fit"] > sum(timings["block_s"][1:])
    assert ("fit_end" in timings["phases_s"]) == (loop == "keras")  # Keras 2's pause after its last epoch
    window = timings["steady"]  # Keras 2's passes are whole new fits: a tiny one may stop short of 20 blocks
    assert window["block_s"] and len(window["block_s"]) == len(window["block_epochs"]) and window["passes"] >= 1
    assert [len(found["predictions"][name]) for name in era_runner.ROWS] == [750, 250]
    assert found["python"] == ".".join(map(str, sys.version_info[:3]))
    assert found["threads"] == {"intra_op": 1, "inter_op": 1}


def test_the_era_runners_torch_loop_reads_its_steps_parts_per_block(dataset, tmp_path):
    inputs = runner_inputs(tmp_path, dataset)
    output = tmp_path / "result.json"
    args = ["--loop", "torch", "--parts", "--inputs", str(inputs), "--output", str(output), "--epochs", "3"]
    run_runner(*args)
    found = json.loads(output.read_text())
    parts = found["timings"]["block_part_s"]
    assert list(parts) == list(LOOP_PARTS) and all(len(seconds) == 3 for seconds in parts.values())
    # The parts lie inside each block, with the loop's own bookkeeping outside them.
    for block, seconds in enumerate(found["timings"]["block_s"]):
        assert 0 < sum(parts[part][block] for part in LOOP_PARTS) < seconds
    assert found["details"] == {"clock_reads_per_step": "7"} and found["steps_taken"] == 36


def test_the_era_runner_names_the_inputs_it_lacks(tmp_path, capsys):
    with pytest.raises(SystemExit):
        era_runner.main(["--loop", "torch", "--inputs", str(tmp_path), "--output", str(tmp_path / "out.json")])
    assert f"--inputs {tmp_path} lacks train.npy, test.npy, w1.npy" in capsys.readouterr().err


def stack_job(dataset: Path, output: Path, **changes) -> TrainingJob:
    options = dict(
        framework="torch",
        device="cpu",
        repeat=1,
        dataset=dataset,
        output=output,
        epochs=3,
        batch_size=64,
        learning_rate=0.001,
        hidden_units=20,
        threads=1,
        min_r2=-1e9,
        steady_window_s=0.05,
        steady_block_s=0.01,
        variant="seed",
        stack="today_runner",
    )
    return TrainingJob(**(options | changes))


def test_a_run_on_another_stack_records_that_stack_and_what_its_runner_measured(dataset, tmp_path):
    output = tmp_path / "runs" / "torch-cpu-seed-today_runner-1.json"
    output.parent.mkdir()
    assert run(stack_job(dataset, output)) == 0
    record = read_record(output)
    assert record["status"] == "ok", record["reason"]
    assert record["identity"]["stack"] == "today_runner" and record["identity"]["run_id"] == output.stem
    assert record["timings"]["steps_taken"] == 36 and record["timings"]["block_epochs"] == [1, 1, 1]
    assert len(record["timings"]["steady"]["block_s"]) >= 20
    assert record["quality"]["test_mse"] > 0 and record["environment"]["container"] == machine.container()
    assert record["environment"]["versions"]["torch"].startswith("2.")
    assert record["parameters"]["variant_details"]["runner"] == "tiny_mlp_bench/era_runner.py"
    assert "block_part_s" not in record["timings"]  # seed reads no parts


def test_a_parts_run_on_another_stack_records_its_parts_per_block(dataset, tmp_path):
    output = tmp_path / "torch-cpu-parts-today_runner-1.json"
    assert run(stack_job(dataset, output, variant="parts")) == 0
    record = read_record(output)
    assert record["status"] == "ok", record["reason"]
    assert [len(record["timings"]["block_part_s"][part]) for part in LOOP_PARTS] == [3] * len(LOOP_PARTS)
    assert set(record["timings"]["steady"]["block_part_s"]) == set(LOOP_PARTS)
    details = record["parameters"]["variant_details"]
    assert details["clock_reads_per_step"] == "7" and details["clocksource"] == machine.clocksource()
    assert [p.name for p in output.parent.iterdir()] == [output.name]  # the runner's inputs are gone


def test_a_runner_that_fails_is_recorded_as_failed_and_leaves_no_inputs_behind(dataset, tmp_path, monkeypatch):
    output = tmp_path / "torch-cpu-seed-today_runner-1.json"
    monkeypatch.setattr(StackRun, "command", lambda self, inputs, out: [sys.executable, "-c", "raise SystemExit(3)"])
    assert run(stack_job(dataset, output)) == 0
    record = read_record(output)
    assert record["status"] == "failed"
    assert record["reason"] == "RuntimeError: the era runner on the today_runner stack exited with 3"
    assert [p.name for p in tmp_path.iterdir()] == [output.name]


def test_a_stack_job_runs_its_image_with_the_checkout_mounted(dataset, tmp_path, monkeypatch):
    monkeypatch.setattr("tiny_mlp_bench.containers.image_id", lambda engine, image: "sha256:abc")
    job = stack_job(dataset, tmp_path / "x.json", stack="era", stack_image=STACKS["era"].image)
    stack_run = StackRun(job)
    stack_run.read(read_dataset(dataset))
    command = stack_run.command(tmp_path / "in", tmp_path / "in" / "result.json")
    assert command[:3] == ["podman", "run", "--rm"] and "--network=none" in command
    assert f"{ROOT}:{ROOT}" in command and "PYTHONPATH" in " ".join(command)
    image = command.index(image_reference(STACKS["era"].image))
    assert command[image + 1 : image + 6] == ["python", "-m", "tiny_mlp_bench.era_runner", "--loop", "torch"]


ERA_CONFIG = {
    "frameworks": ["torch", "tf_keras", "numpy"],
    "devices": ["cpu", "cuda"],
    "variants": {"torch": ["seed", "parts", "sync_free"], "tf_keras": ["seed", "one_thread"], "numpy": ["reference"]},
    "repeats": 2,
    "claim_repeats": 2,
    "stacks": ["today", "era"],
}


def test_another_stack_runs_only_the_runners_loops_idle_on_the_cpu():
    jobs = rounds.training_runs(ERA_CONFIG)
    on_era = sorted({(j.framework, j.device, j.variant) for j in jobs if j.stack == "era"})
    expected = [("tf_keras", "one_thread"), ("tf_keras", "seed"), ("torch", "parts"), ("torch", "seed")]
    assert on_era == [(framework, "cpu", variant) for framework, variant in expected]
    today = {(j.framework, j.device, j.variant) for j in jobs if j.stack == TODAY}
    assert ("numpy", "cpu", "reference") in today and ("torch", "cuda", "sync_free") in today
    era = Job("train", "cpu", "torch", "seed", 2, stack="era")
    assert era.workflow_rule == "train_stack" and era.output == "results/runs/torch-cpu-seed-era-2.json"
    assert era in jobs and Job("train", "cpu", "torch", "seed", 2).output == "results/runs/torch-cpu-seed-2.json"


def test_each_change_between_stacks_names_two_stacks_that_exist():
    assert all(newer in STACKS and older in STACKS and newer != older for newer, older, _ in STEPS)


def era_records(torch_ms: dict, keras_ms: dict) -> list[dict]:
    """Five runs of each original loop on each stack named, at the steps given in ms (with a small spread)."""
    return [
        synthetic_record(framework, "cpu", repeat, 2.0 + repeat / 100, step_ms=ms * (1 + repeat / 1000), stack=stack)
        for framework, per_stack in (("torch", torch_ms), ("tf_keras", keras_ms))
        for stack, ms in per_stack.items()
        for repeat in range(1, 6)
    ]


def test_the_era_report_says_where_keras_2_was_faster_and_which_change_moved_a_loop(tmp_path):
    # On the era stack Keras 2 steps faster than torch (the asker's order); today it is slower; the twin agrees.
    records = era_records({"today": 1.0, "era": 1.0, "era_twin": 1.0}, {"today": 2.0, "era": 0.5, "era_twin": 0.5})
    report = build_report(records)
    found = report.era
    assert [s.stack for s in found.stacks] == ["today", "era", "era_twin"]
    assert found.of("era").keras_over_torch.step.estimate == pytest.approx(0.5, rel=0.01)
    assert found.of("today").keras_over_torch.step.estimate == pytest.approx(2.0, rel=0.01)
    lines = claims.era_lines(found)
    assert lines[0].startswith("On the oldest stack that installs here (Python 3.11.7, ")
    assert "Per step, Keras 2 was faster than the torch loop: 0.500× (0.499–0.501) as long, 5 runs a side." in lines[0]
    assert "Per step, Keras 2 was slower than the torch loop: 2.00× (1.99–2.01) as long, 5 runs a side." in lines[1]
    assert lines[-1].startswith("The A/A control: `era_twin` runs `era`'s very image under another name")
    assert "the runs cannot tell them apart" in lines[-1]
    answer = claims.era_answer(found)
    assert answer.startswith("On the oldest stack that installs here (Python 3.11.7, torch 1.0), per step, Keras 2")
    assert answer.endswith("per step, Keras 2 was slower than torch: 2.00× (1.99–2.01) as long, 5 runs a side.")
    assert "largest change" not in answer  # no two neighbouring stacks ran: the twin is the control, not a change
    text = render_markdown(report)
    assert text.startswith("# Was Keras faster than torch on the software of the asker's time?")
    assert "## Host `bench-host on the era stack`" in text and "## Host `bench-host`" in text
    assert "| `era_twin` / `era`: the same image under two names: what the machine fakes |" in text


def test_a_study_with_runs_on_another_stack_is_of_the_era_kind(tmp_path):
    (tmp_path / "runs").mkdir()
    for record in era_records({"today": 1.0, "era": 1.0}, {"today": 2.0}):
        (tmp_path / "runs" / f"{record['identity']['run_id']}.json").write_text(json.dumps(record))
    assert kinds.study_kind(tmp_path) == kinds.ERA_STUDY


def image_missing(engine: str, image: str) -> str | None:
    """Why a stack's image cannot run here, with the command that builds it; None where it is there."""
    from test_containers import engine_problem

    problem = engine_problem(engine)
    if problem is None and subprocess.run([engine, "image", "exists", image_reference(image)]).returncode != 0:
        problem = f"no image {image_reference(image)} in {engine}: build it with `make image-stack-era`"
    return problem


@pytest.mark.containers
@pytest.mark.workflow
def test_a_tiny_era_study_runs_the_era_image_beside_todays_stack(workflow_dir):
    from test_containers import engine_image_id

    image = STACKS["era"].image
    skip_unless_ready(image_missing("podman", image), "TINY_MLP_BENCH_REQUIRE_PODMAN")
    config = write_config(
        workflow_dir,
        "era-tiny.yaml",
        frameworks=["torch", "tf_keras"],
        devices=["cpu"],
        variants={"torch": ["seed"], "tf_keras": ["seed"]},
        stacks=["today", "era"],
        repeats=1,
        claim_repeats=1,
    )
    commit_all(workflow_dir)
    result = run_snakemake(workflow_dir, "--cores", 2, "--configfile", config)
    assert result.returncode == 0, result.stderr[-5000:]
    runs = workflow_dir / "results" / "runs"
    keras, torch = (read_record(runs / f"{f}-cpu-seed-era-1.json") for f in ("tf_keras", "torch"))
    assert keras["status"] == "ok" and torch["status"] == "ok", (keras["reason"], torch["reason"])
    assert (
        keras["environment"]["python"].startswith("3.9.") and keras["environment"]["versions"]["tensorflow"] == "2.5.0"
    )
    assert torch["environment"]["versions"]["torch"] == "1.7.1"
    assert torch["environment"]["container"]["image_id"] == engine_image_id("podman", image)
    report = (workflow_dir / "results" / "report.md").read_text()
    assert "## The question's CPU loops on each stack" in report and "| `era` " in report


def release_records(keras_ms: dict, rungs_ms: dict) -> list[dict]:
    """Eight runs of Keras 2's `seed` on each release stack named, and of each (framework, rung) on today's stack, at
    the steps given in ms (with a small spread)."""
    runs = [(("tf_keras", "seed"), stack, ms) for stack, ms in keras_ms.items()]
    runs += [(rung, "today", ms) for rung, ms in rungs_ms.items()]
    return [
        synthetic_record(framework, "cpu", r, 2.0 + r / 100, variant=variant, step_ms=ms * (1 + r / 1000), stack=stack)
        for (framework, variant), stack, ms in runs
        for r in range(1, 9)
    ]


def test_the_release_sweep_names_the_step_that_moved_keras_2_and_the_cause_that_accounts_for_it(tmp_path):
    # Keras 2's step doubles at 2.9 alone; on today's stack oneDNN off halves it again, the legacy Adam changes nothing.
    keras = {stack: 1.0 if stack in ("tf_2_5", "tf_2_6", "tf_2_8") else 2.0 for stack in RELEASES}
    rungs = {("tf_keras", "seed"): 2.0, ("tf_keras", "onednn_off"): 1.0, ("tf_keras", "legacy_adam"): 2.0}
    rungs |= {("torch", "seed"): 1.0, ("torch", "optimizer_imported"): 1.0}
    records = release_records(keras, rungs)
    report = build_report(records)
    found = report.era
    assert [step.what for step in found.releases] == [what for _, _, what in RELEASE_STEPS]
    moved = [step.what for step in found.releases if step.keras.step.resolved]
    assert moved == ["TensorFlow 2.8.4 to 2.9.3"]
    assert all(step.keras.step.p_value >= 7 * 0.0001 for step in found.releases)  # adjusted for 7 comparisons
    causes = {cause.rung: cause for cause in found.causes}
    assert causes["onednn_off"].accounts("step") and not causes["legacy_adam"].accounts("step")
    assert causes["optimizer_imported"].suspected is None
    lines = claims.release_lines(found)
    assert lines[0].startswith("TensorFlow 2.5.0 to 2.20.0, on one Python: To a result")
    assert "Per step, Keras 2 on 2.20.0 was slower than on 2.5.0: 2.00× (1.99–2.01) as long, 8 runs a side." in lines[0]
    assert any(
        line.startswith(
            "Per step, Keras 2 moved, after Holm's correction over the 7 steps between neighbouring "
            "releases, at TensorFlow 2.8.4 to 2.9.3, 2.00×"
        )
        for line in lines
    )
    said = {rung: next(line for line in lines if f"`{rung}`" in line) for rung in ("onednn_off", "legacy_adam")}
    assert "It accounts for the step of TensorFlow 2.8.4 to 2.9.3" in said["onednn_off"]
    assert "It does not account for" in said["legacy_adam"]
    answer = claims.release_answer(found)
    assert answer.startswith(
        "Per step, Keras 2 on TensorFlow 2.20.0 took 2.00× (1.99–2.01) as long as on 2.5.0 (8 runs a side); one "
        "release holds the change, after Holm's correction over the 7 steps between neighbouring releases: "
        "TensorFlow 2.8.4 to 2.9.3 (2.00× (1.99–2.01))."
    )
    assert "Of the causes tested, oneDNN's CPU kernels (on from 2.9) accounts for the step of TensorFlow" in answer
    assert answer.endswith("Tested and accounting for none: the new Adam (the default from 2.11).")
    text = render_markdown(report)
    assert text.startswith("# Which release moved it?") and "## Keras 2 on each TensorFlow release" in text
    assert "## The question's CPU loops on each stack" not in text


def test_no_release_step_is_named_where_the_correction_leaves_none(tmp_path):
    # Half of 2.16's runs 3% slower than 2.15's, and all of 2.20's: runs that overlap name no step.
    keras = {stack: 1.03 if stack in ("tf_2_16", "tf_2_20") else 1.0 for stack in RELEASES}
    records = release_records(keras, {})
    for record in records:
        if record["identity"]["stack"] == "tf_2_16" and record["identity"]["repeat"] % 2:
            record["timings"]["block_s"] = [v / 1.03 for v in record["timings"]["block_s"]]
    found = build_report(records).era
    step = next(s for s in found.releases if s.newer == "tf_2_16")
    assert not step.keras.step.resolved
    assert "; no single release step moved it after Holm's correction" in claims.release_answer(found)


def test_a_study_with_runs_on_a_release_stack_is_of_the_releases_kind(tmp_path):
    (tmp_path / "runs").mkdir()
    for record in release_records({"tf_2_5": 1.0, "tf_2_6": 1.0}, {("torch", "seed"): 1.0}):
        (tmp_path / "runs" / f"{record['identity']['run_id']}.json").write_text(json.dumps(record))
    assert kinds.study_kind(tmp_path) == kinds.RELEASES_STUDY


def test_a_release_stack_runs_keras_2_alone():
    config = {**ERA_CONFIG, "stacks": ["today", "tf_2_9"], "frameworks": ["torch", "tf_keras"]}
    on_release = {(j.framework, j.variant) for j in rounds.training_runs(config) if j.stack == "tf_2_9"}
    assert on_release == {("tf_keras", "seed"), ("tf_keras", "one_thread")}


def test_every_stack_is_one_the_record_and_config_schemas_allow():
    record = json.loads((ROOT / "tiny_mlp_bench" / "run_record.schema.json").read_text())
    config = yaml.safe_load((ROOT / "config" / "config.schema.yaml").read_text())
    assert record["properties"]["identity"]["properties"]["stack"]["enum"] == list(STACKS)
    assert config["properties"]["stacks"]["items"]["enum"] == list(STACKS)


def test_the_era_runner_reads_keras_2s_version_where_its_module_has_none():
    # TensorFlow 2.15's tf.keras is keras.api._v2.keras, which has no __version__; the keras package has one.
    api = type(sys)("json.decoder")
    assert era_runner.keras_version(api) == json.__version__
    api.__version__ = "2.15.0"
    assert era_runner.keras_version(api) == "2.15.0"
