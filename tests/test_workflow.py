"""The whole workflow, run for real by Snakemake on a tiny config in a temporary copy."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import pytest
import yaml

from helpers import copy_workflow, run_snakemake, table_rows, write_config
from tiny_mlp_bench.dataset import file_sha256
from tiny_mlp_bench.jobs import identity, rounds
from tiny_mlp_bench.records import read_probe, read_record, read_sweep


def most_timed_jobs_at_once(log_text: str) -> int:
    """Replay Snakemake's log: the most timed jobs that were running at the same moment."""
    running, most, current_rule = set(), 0, None
    for line in log_text.splitlines():
        if m := re.match(r"\s*jobid: (\d+)", line):
            if current_rule in identity.OUTPUTS:  # the timed rules
                running.add(m.group(1))
                most = max(most, len(running))
        elif m := re.match(r"(?:local)?rule (\w+):", line):
            current_rule = m.group(1)
        elif m := re.match(r"Finished jobid: (\d+)", line):
            running.discard(m.group(1))
    return most


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The tiny study, run once for this module with two cores: (directory, snakemake output)."""
    directory = copy_workflow(tmp_path_factory.mktemp("tiny_study"))
    # A clone's own commit, which the records name and an archive of the study traces them to.
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(directory), *command], check=True, capture_output=True)
    result = run_snakemake(directory, "--cores", 2, "--configfile", "tiny.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    return directory, result.stderr


@pytest.mark.workflow
def test_tiny_study_end_to_end(tiny_run):
    directory, output = tiny_run
    records = sorted((directory / "results" / "runs").glob("*.json"))
    runs = [
        "jax-cpu-scan",
        "jax-cuda-scan",
        "keras-cpu-seed",
        "keras-cuda-seed",
        "keras_jax-cpu-seed",
        "keras_jax-cuda-seed",
        "numpy-cpu-fused",
        "numpy-cuda-fused",
        "sklearn-cpu-mlp_regressor",
        "tf_keras-cpu-seed",
        "tf_keras-cuda-seed",
        "torch-cpu-seed",
        "torch-cpu-sync_free",
        "torch-cuda-graphed",
        "torch-cuda-seed",
        "torch-cuda-sync_free",
    ]  # no numpy-cuda, no sklearn-cuda, no torch-cpu-graphed
    assert [p.stem for p in records] == [f"{run}-{r}" for run in runs for r in (1, 2)]
    by_id = {p.stem: read_record(p) for p in records}
    for run_id, record in by_id.items():
        expected = "ok" if "-cpu-" in run_id else "skipped"
        assert record["status"] == expected, (run_id, record["reason"])
        # cpu_threads: 1 in the tiny config reaches the rule, Snakemake's variables and the framework.
        assert record["parameters"]["threads"] == 1
        assert record["environment"]["thread_env"]["OMP_NUM_THREADS"] == "1"
        if expected == "ok":
            assert set(record["environment"]["threads"].values()) <= {1}, run_id  # JAX reports none
    report = (directory / "results" / "report.md").read_text()
    rows = table_rows(report)  # cells, stripped of tabulate's padding
    # The asker's 9 s stands beside Keras 2 (tf_keras); Keras 3 on TensorFlow has no asker's time.
    asker = {row[0]: row[2] for row in rows if len(row) > 2}
    assert (asker["torch-cpu"], asker["tf_keras-cpu"], asker["keras-cpu"]) == ("11", "9", "–")
    # One row per reason: the cuda runs' skip, stated once with every rung it stopped.
    (skipped,) = [row for row in rows if row[0] == "skipped" and row[1].startswith("no CUDA device")]
    assert "torch-cuda-seed (2)" in skipped[2] and "the cuda crossover sweep" in skipped[2]
    assert "### Where the time goes: the ladders" in report
    assert ["[`sync_free`](#the-rungs)"] in [row[:1] for row in rows]
    assert "Where the GPU starts to win: not measured, no cuda sweep completed." in report
    # No archive in this clone: the answer says no archived GPU run qualified (gpu_answer_archive: auto), nor a
    # busy-core study of this machine kind (busy_answer_archive: auto), and the run's start said it had no estimate
    # of its time rather than guess one.
    assert "No archive holds a completed GPU run of it either." in report
    assert (
        "- **Beside one busy core**: no archived busy-core study ran on this machine kind; `make busy` runs one."
        in report
    )
    assert "Expected: no estimate; no archived study ran these jobs on a machine like this one (" in output
    numbers = json.loads((directory / "results" / "report" / "numbers.json").read_text())
    assert numbers["model"]["records"] == len(records) and numbers["model"]["no_archive_qualifies"] is True
    # The fixed-cost probes ran where the runs did: measured on cpu, skipped with the reason on cuda.
    probes = {p.stem: read_probe(p) for p in (directory / "results" / "probes").glob("*.json")}
    assert {name: probe["status"] for name, probe in probes.items()} == {
        "torch-cpu": "ok",
        "tf_keras-cpu": "ok",
        "keras-cpu": "ok",
        "keras_jax-cpu": "ok",
        "torch-cuda": "skipped",
        "tf_keras-cuda": "skipped",
        "keras-cuda": "skipped",
        "keras_jax-cuda": "skipped",
    }
    assert "- The original Keras `fit` per step on cpu, by Keras 3's backend: TensorFlow " in report
    assert "- **Keras against torch**: on the CPU" in report
    assert "- The original initialisation leaves the output ReLU dead" in report
    # Three epochs are one block of the floor rung: no steady state, so no floor, and the report says so.
    assert "The floor, the least a step can cost: on cpu not measured" in report
    sweep = read_sweep(directory / "results" / "sweep" / "cpu.json")
    assert len(sweep["points"]) == 4 and sweep["environment"]["threads"]["intra_op"] == 1
    for chart in ("timings.png", "ladder.png", "crossover.png", "breakdown.png"):
        assert (directory / "results" / "report" / chart).stat().st_size > 1000
    assert (directory / "logs" / "train" / "torch-cpu-seed-1.log").read_text().count("epoch 3/3") == 1
    assert most_timed_jobs_at_once(output) == 1
    # One at a time, in the seeded rounds' order the config as run names (its run_order_seed): the jobs
    # that read the dataset; the sweeps, which need none, may start while it is made.
    config = yaml.safe_load((directory / "results" / "config.yaml").read_text())
    timed = [directory / job.output for job in rounds.run_order(config) if job.rule != "sweep_crossover"]
    started = sorted(timed, key=lambda path: json.loads(path.read_text())["load"]["started_at"])
    assert started == timed


@pytest.mark.workflow
def test_a_copied_checkout_with_an_environment_of_its_own_reruns_nothing(tiny_run, tmp_path):
    # The finished study copied to another folder, as a user moves a clone (modes and times kept), with a
    # virtual environment of its own there: another interpreter, another checkout, the same packages.
    directory, _ = tiny_run
    moved = tmp_path / "moved"
    shutil.copytree(directory, moved, symlinks=True)
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(moved / ".venv")], check=True)
    (next((moved / ".venv" / "lib").glob("python3*/site-packages")) / "project.pth").write_text(
        sysconfig.get_path("purelib") + "\n"
    )
    plan = subprocess.run(
        [str(moved / ".venv" / "bin" / "python"), "-m", "snakemake", "-n", "--configfile", "tiny.yaml"],
        cwd=moved,
        capture_output=True,
        text=True,
    )
    assert "Nothing to be done" in plan.stdout + plan.stderr, (plan.stdout + plan.stderr)[-3000:]


@pytest.mark.workflow
def test_a_failed_run_is_redone_alone_with_the_reported_command(tiny_run):
    directory, _ = tiny_run
    # Runs before the rerun test below, which rewrites the dataset and so outdates every record.
    precheck = run_snakemake(directory, "-n", "--configfile", "tiny.yaml")
    assert "Nothing to be done" in precheck.stdout + precheck.stderr
    path = directory / "results" / "runs" / "torch-cpu-seed-2.json"
    record = json.loads(path.read_text()) | {"status": "failed", "reason": "RuntimeError: injected by the test"}
    path.write_text(json.dumps(record))
    assert (
        run_snakemake(directory, "--cores", 1, "--configfile", "tiny.yaml", "--forcerun", "render_report").returncode
        == 0
    )
    report = (directory / "results" / "report.md").read_text()
    command = re.search(r"`snakemake (--forcerun [^`]+)`", report).group(1).split()
    plan = run_snakemake(directory, "-n", "--configfile", "tiny.yaml", *command)
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", plan.stdout + plan.stderr, re.M))
    assert counts == {"all": "1", "render_report": "1", "train": "1", "total": "3"}
    result = run_snakemake(directory, "--cores", 1, "--configfile", "tiny.yaml", *command)
    assert result.returncode == 0, result.stderr[-2000:]
    assert read_record(path)["status"] == "ok"


@pytest.mark.workflow
def test_rerun_is_a_no_op_and_dataset_is_byte_identical(tiny_run):
    directory, _ = tiny_run
    dataset = directory / "results" / "data" / "dataset.parquet"
    first = file_sha256(dataset)
    assert "Nothing to be done" in run_snakemake(directory, "--cores", 1, "--configfile", "tiny.yaml").stderr
    result = run_snakemake(
        directory, "--cores", 1, "--configfile", "tiny.yaml", "--forcerun", "make_dataset", "--until", "make_dataset"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert file_sha256(dataset) == first


@pytest.mark.workflow
def test_snakemake_report_holds_the_report_charts_and_records_with_captions(tiny_run):
    directory, _ = tiny_run
    result = run_snakemake(directory, "--configfile", "tiny.yaml", "--report", "report.html")
    assert result.returncode == 0, result.stderr[-2000:]
    html = (directory / "report.html").read_text(encoding="utf-8")
    items = (
        "report.md",
        "headline.csv",
        "timings.png",
        "ladder.png",
        "crossover.png",
        "breakdown.png",
        "torch-cpu-seed-1.json",
    )
    for item in (*items, "cpu.json"):
        assert item in html, f"{item} is not in the HTML report"
    # Captions are rendered per item, with the record's own wildcards.
    assert "Run record of torch on cpu, rung" in html
    assert "The study's report, rendered from every record below" in html
    assert "The report as a page to read here, its tables and charts inside it" in html
    assert "tiny-mlp-bench asks a famous question again" in html  # the landing page: the question, not its claims


@pytest.mark.workflow
def test_the_finished_study_archives_and_verifies(tiny_run):
    directory, _ = tiny_run
    done = subprocess.run(
        [sys.executable, "-m", "tiny_mlp_bench", "archive", "--name", "tiny"],
        cwd=directory,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    archive = directory / "results" / "archive" / "tiny"
    config = yaml.safe_load((archive / "config.yaml").read_text())  # as run: tiny.yaml over the defaults
    assert config["epochs"] == 3 and config["container_engine"] == "none"
    head = subprocess.run(["git", "-C", str(directory), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert json.loads((archive / "provenance.json").read_text())["study"]["commit"] == head.strip()
    assert (archive / "logs" / "train" / "torch-cpu-seed-1.log").is_file()
    done = subprocess.run(
        [sys.executable, "-m", "tiny_mlp_bench", "verify", str(archive)],
        cwd=directory,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stdout + done.stderr


@pytest.mark.workflow
def test_the_quick_study_plans_in_a_folder_of_its_own(workflow_dir):
    # As `make quick` runs it: the workflow's own config found beside the Snakefile, every path under quick/.
    plan = run_snakemake(workflow_dir, "-n", "--directory", "quick", "--configfile", "config/quick.yaml")
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "render_report" in plan.stdout + plan.stderr
    assert (workflow_dir / "quick" / ".snakemake").is_dir()
    assert not any((workflow_dir / name).exists() for name in ("results", "logs", ".snakemake"))
    # Without --configfile too, the workflow's config is read from beside the Snakefile, not from quick/.
    assert run_snakemake(workflow_dir, "-n", "--directory", "quick").returncode == 0


@pytest.mark.workflow
def test_jobs_use_the_environment_that_runs_snakemake(workflow_dir):
    # No virtual environment on PATH: the jobs must still find the project's packages.
    bare = {**os.environ, "PATH": "/usr/bin:/bin"}
    result = run_snakemake(
        workflow_dir, "results/runs/numpy-cpu-reference-1.json", "--cores", 1, "--configfile", "tiny.yaml", env=bare
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert read_record(workflow_dir / "results" / "runs" / "numpy-cpu-reference-1.json")["status"] == "ok"


@pytest.mark.workflow
def test_corrupt_dataset_stops_training_with_the_file_named(workflow_dir):
    small = write_config(workflow_dir, "small.yaml", frameworks=["torch"], devices=["cpu"], repeats=1)
    assert run_snakemake(workflow_dir, "--cores", 1, "--configfile", small).returncode == 0
    dataset = workflow_dir / "results" / "data" / "dataset.parquet"
    dataset.write_bytes(b"not parquet at all")  # newer than the records: training reruns
    result = run_snakemake(workflow_dir, "--cores", 1, "--configfile", small)
    assert result.returncode != 0
    assert "results/data/dataset.parquet is not a readable Parquet file" in result.stderr
    # The failed job's record is removed, not left looking complete.
    failed = re.findall(r"Error in rule train:.*?output: (results/runs/\S+\.json)", result.stderr, re.S)
    assert failed and not any((workflow_dir / f).exists() for f in failed)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"epochs": -1}, "config key 'epochs': -1 is less than the minimum of 1"),
        ({"epochs": 0}, "config key 'epochs': 0 is less than the minimum of 1"),
        ({"devices": ["cpu", "tpu"]}, "config key 'devices.1': 'tpu' is not one of ['cpu', 'cuda']"),
        (
            {"frameworks": ["mxnet"]},
            "config key 'frameworks.0': 'mxnet' is not one of "
            "['torch', 'tf_keras', 'keras', 'keras_jax', 'keras_torch', 'numpy', 'sklearn', 'jax']",
        ),
        ({"batch_size": "64"}, "config key 'batch_size': '64' is not of type 'integer'"),
        ({"repeat": 3}, "config key 'repeat' is not a known key; did you mean 'repeats'?"),
        ({"gpu_answer_archive": "nope"}, "config key 'gpu_answer_archive': no archive results/archive/nope"),
        ({"busy_answer_archive": "nope"}, "config key 'busy_answer_archive': no archive results/archive/nope"),
    ],
)
def test_bad_config_stops_before_any_output(workflow_dir, change, expected):
    result = run_snakemake(workflow_dir, "--cores", 1, "--configfile", write_config(workflow_dir, "bad.yaml", **change))
    assert result.returncode != 0
    assert f"  bad.yaml: {expected}" in result.stderr  # the file that holds the bad key, then the key
    assert 'File "' not in result.stderr  # a mistake in the config, not in the workflow: no traceback
    assert not (workflow_dir / "results").exists() and not (workflow_dir / "logs").exists()


@pytest.mark.workflow
def test_a_bad_command_line_value_is_named_as_such_beside_a_bad_file(workflow_dir):
    bad_file = write_config(workflow_dir, "bad.yaml", epochs=0)
    result = run_snakemake(workflow_dir, "--cores", 1, "--configfile", bad_file, "--config", "devices=[gpu]")
    assert result.returncode != 0
    assert (
        "  --config: config key 'devices.0': 'gpu' is not one of ['cpu', 'cuda']; did you mean 'cuda'?" in result.stderr
    )
    assert "  bad.yaml: config key 'epochs': 0 is less than the minimum of 1" in result.stderr


@pytest.mark.workflow
def test_require_gpu_without_gpu_fails_the_cuda_job(workflow_dir, has_cuda):
    if has_cuda:
        pytest.skip("a CUDA device is present: the no-GPU path cannot be exercised here")
    gpu = write_config(workflow_dir, "gpu.yaml", frameworks=["torch"], devices=["cuda"], repeats=1, require_gpu=True)
    result = run_snakemake(workflow_dir, "--cores", 1, "--configfile", gpu)
    assert result.returncode != 0
    assert "no CUDA device" in result.stderr and "require_gpu" in result.stderr
    assert not (workflow_dir / "results" / "runs" / "torch-cuda-seed-1.json").exists()
    assert not (workflow_dir / "results" / "report.md").exists()


@pytest.mark.workflow
def test_a_compiling_rungs_later_runs_wait_for_its_first_and_share_its_cache(workflow_dir):
    # fused_epoch compiles, and is in the full study only: asked for by name beside the seed loop.
    rungs = "variants={torch: [seed, fused_epoch]}"
    result = run_snakemake(workflow_dir, "-n", "-p", "--cores", 2, "--config", rungs)
    assert result.returncode == 0, result.stderr[-3000:]
    # Each job of the dry run: its output, its inputs and its command.
    planned = {
        output: (inputs, command)
        for inputs, output, command in re.findall(
            r"input: (.+?)\n\s+output: (\S+)\n.*?Shell command: (.+?)\n", result.stdout + result.stderr, re.S
        )
    }
    first, later = (f"results/runs/torch-cpu-fused_epoch-{repeat}.json" for repeat in (1, 2))
    cache = "--compile-cache results/compile_cache/torch-cpu-fused_epoch"
    assert first not in planned[first][0] and cache in planned[first][1]
    assert first in planned[later][0] and cache in planned[later][1]
    seed_inputs, seed_command = planned["results/runs/torch-cpu-seed-2.json"]
    assert "torch-cpu-seed-1" not in seed_inputs and "--compile-cache" not in seed_command
