"""The fixtures and hooks the tests share; their helpers are in helpers.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from helpers import ROOT, copy_workflow, package_index_problem, skip_unless_ready, torch_has_cuda
from tiny_mlp_bench.dataset import make_dataset, write_dataset


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test marked `network` needs the package index: offline it skips with the reason; CI, which
    sets TINY_MLP_BENCH_REQUIRE_NETWORK=1, fails it instead."""
    if item.get_closest_marker("network"):
        skip_unless_ready(package_index_problem(), "TINY_MLP_BENCH_REQUIRE_NETWORK")


@pytest.fixture(autouse=True)
def gpus_stay_visible():
    """A test that loads torch for a cpu run in this process hides the GPUs from it and its children
    (torch_common.hide_gpus); the next test's programs must see them again."""
    before = os.environ.get("CUDA_VISIBLE_DEVICES")
    yield
    if before is None:
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = before


@pytest.fixture(scope="session")
def has_cuda() -> bool:
    return torch_has_cuda()


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """A 200-row dataset file (150 train rows: 3 batches of 64)."""
    path = tmp_path_factory.mktemp("data") / "dataset.parquet"
    write_dataset(make_dataset(seed=7, n_rows=200), path)
    return path


@pytest.fixture(scope="session")
def question_dataset(tmp_path_factory) -> Path:
    """A 1000-row dataset file: the question's 750 training rows, 12 batches an epoch."""
    path = tmp_path_factory.mktemp("question") / "dataset.parquet"
    write_dataset(make_dataset(seed=42, n_rows=1000), path)
    return path


def run_folder(tmp_path_factory) -> Path:
    """A folder of this test run that every pytest-xdist worker shares (make test runs several)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def compile_cache(tmp_path_factory) -> Path:
    """One compiler cache for the run's compiled rungs, on every worker: a graph one test compiled cold, a
    later test with the same shapes loads (the cache's own behaviour is tested with caches of its own)."""
    cache = run_folder(tmp_path_factory) / "compile-cache"
    cache.mkdir(exist_ok=True)
    return cache


@pytest.fixture(scope="session")
def kit_for_this_python(tmp_path_factory) -> Path:
    """The GPU kit for the Python that runs the tests (make gpu-kit KIT_PYTHON=<it>), resolved and
    fetched from PyPI once a run, as CI can: the first worker to need it fetches it, the others wait."""
    kit = run_folder(tmp_path_factory) / "gpu-kit"
    with FileLock(f"{kit}.lock"):
        if not (kit / "kit.json").is_file():
            version = f"{sys.version_info.major}.{sys.version_info.minor}"
            command = [sys.executable, "-m", "tiny_mlp_bench", "locks", "fetch-kit", "--python", version]
            command += ["--into", str(kit), "--max-mib", "200"]
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr[-3000:]
    return kit


@pytest.fixture
def workflow_dir(tmp_path) -> Path:
    """A fresh copy of the workflow for one test."""
    return copy_workflow(tmp_path)
