"""Shared fixtures: the repository's paths, a small dataset, a copy of the workflow to run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dataset import make_dataset, write_dataset

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
TEST_DATA = ROOT / "tests" / "data"
# What a user's clone needs to run the workflow.
WORKFLOW_FILES = ["Snakefile", "rules", "scripts", "config", "profiles"]


def torch_has_cuda() -> bool:
    """Whether a CUDA device is usable, asked in a subprocess so tests don't import torch."""
    probe = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def has_cuda() -> bool:
    return torch_has_cuda()


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """A 200-row dataset file (150 train rows: 3 batches of 64)."""
    path = tmp_path_factory.mktemp("data") / "dataset.parquet"
    write_dataset(make_dataset(seed=7, n_rows=200), path)
    return path


def run_script(name: str, *args, check: bool = False) -> subprocess.CompletedProcess:
    """Run one of the command-line programs the way a rule does."""
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *map(str, args)], capture_output=True, text=True, check=check
    )


@pytest.fixture
def workflow_dir(tmp_path) -> Path:
    """A fresh copy of the workflow, as a user's clone would have it, with no results."""
    for name in WORKFLOW_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, tmp_path / name)
    shutil.copy2(TEST_DATA / "tiny_config.yaml", tmp_path / "tiny.yaml")
    return tmp_path


def run_snakemake(directory: Path, *args) -> subprocess.CompletedProcess:
    """Run the snakemake of this environment in ``directory``; output in .stdout."""
    snakemake = Path(sys.executable).with_name("snakemake")
    return subprocess.run(
        [str(snakemake), *map(str, args)], cwd=directory, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )


def synthetic_record(
    framework,
    device,
    repeat,
    fit_predict_s=None,
    status="ok",
    reason=None,
    converged=True,
    host="bench-host",
    variant="seed",
) -> dict:
    """A valid run record with round, hand-checkable numbers, for report and schema tests."""
    ok = status == "ok"
    timings = {"import_s": 1.5}
    if ok:
        epochs = [0.5, 0.01, 0.02, 0.01]
        timings |= {
            "setup_s": 0.25,
            "fit_predict_s": fit_predict_s,
            "fit_s": sum(epochs),
            "predict_s": 0.004,
            "epoch_s": epochs,
            "steps_per_epoch": 12,
        }
    return {
        "record_type": "tiny-mlp-bench.run",
        "schema_version": 1,
        "identity": {
            "run_id": f"{framework}-{device}-{variant}-{repeat}",
            "framework": framework,
            "device": device,
            "variant": variant,
            "repeat": repeat,
            "started_at": f"2026-01-01T00:0{repeat}:00+00:00",
        },
        "status": status,
        "reason": reason,
        "parameters": {
            "seed": 42,
            "init_seed": 41 + repeat,
            "n_rows": 1000,
            "n_train": 750,
            "n_test": 250,
            "epochs": 4,
            "batch_size": 64,
            "learning_rate": 0.001,
            "hidden_units": 20,
            "threads": 2,
        },
        "quality": {
            "final_train_loss": 1e-5 if converged else 0.25,
            "train_mse": 1e-5 if converged else 0.29,
            "test_mse": 2e-5 if converged else 0.31,
            "train_r2": 0.9998 if converged else -5.35,
            "converged": converged,
            "min_r2": 0.99,
        }
        if ok
        else None,
        "timings": timings,
        "environment": {
            "python": "3.11.7",
            "versions": {"numpy": "2.4.6", framework: "1.0"},
            "cpu_model": "Test CPU",
            "logical_cpus": 2,
            "host": host,
            "threads": {"intra_op": 2, "inter_op": 2},
            "thread_env": {"OMP_NUM_THREADS": "2"},
            "cuda": {"build_cuda": None, "build_cudnn": None, "driver": None},
            "gpu_name": None,
            "slurm_job_id": None,
            "container": None,
            "git_commit": "abc123",
            "dataset_sha256": "0" * 64,
        },
    }


def synthetic_study() -> list[dict]:
    """torch-cpu 6/7/8 s (one not converged), keras-cpu 3/4/5 s, both cuda steps skipped."""
    no_gpu = "no CUDA device: test"
    return [
        synthetic_record("torch", "cpu", 1, 7.0, converged=False),
        synthetic_record("torch", "cpu", 2, 6.0),
        synthetic_record("torch", "cpu", 3, 8.0),
        synthetic_record("keras", "cpu", 1, 4.0),
        synthetic_record("keras", "cpu", 2, 3.0),
        synthetic_record("keras", "cpu", 3, 5.0),
        synthetic_record("torch", "cuda", 1, status="skipped", reason=no_gpu),
        synthetic_record("keras", "cuda", 1, status="skipped", reason=no_gpu),
    ]
