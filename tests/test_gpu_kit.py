"""The GPU kit (tiny-mlp-bench locks fetch-kit): the wheels a GPU machine without a
registry lacks, for its Python, with the lock's pins, a git bundle of HEAD and kit.json, and an error
when it outgrows its cap. These fetch from PyPI, as CI can: the kit for another Python than 3.12 is
resolved there (about 50 s, once a session: the kit_for_this_python fixture), the committed 3.12 one
only downloaded."""

import json
import re
import subprocess
import sys

import pytest

from helpers import ROOT
from tiny_mlp_bench.locks.pip_index import pip_env, platform_args

THIS_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def fetch_kit(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tiny_mlp_bench", "locks", "fetch-kit", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def installs(kit, target, *python_args) -> subprocess.CompletedProcess:
    """pip, from the kit alone and without this machine's pip config, installing gpu-kit.txt (a dry run)."""
    offline = ["--no-index", "--no-deps", "--find-links", str(kit), "-r", str(kit / "gpu-kit.txt")]
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", *offline, "--target", str(target), *python_args],
        capture_output=True,
        text=True,
        env=pip_env(),
    )


def head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


@pytest.mark.network
def test_a_kit_for_this_python_installs_here(kit_for_this_python):
    kit = kit_for_this_python
    meta = json.loads((kit / "kit.json").read_text())
    lock = "requirements/gpu-kit.txt" if THIS_PYTHON == "3.12" else "resolved at fetch time"
    assert set(meta) == {"python", "lock", "present", "packages", "carried", "bytes", "commit"}
    assert {"setuptools", "packaging", "typing-extensions"} <= set(meta["carried"])
    assert (meta["python"], meta["lock"], meta["present"]) == (THIS_PYTHON, lock, "requirements/gpu-present.txt")
    assert meta["commit"] == head()
    lines = (kit / "gpu-kit.txt").read_text().splitlines()
    assert len(lines) == meta["packages"] > 0
    assert all(re.fullmatch(r"[a-z0-9-]+==\S+", line) for line in lines), lines
    assert meta["bytes"] > 2**20
    # Every wheel is one this Python installs, and the kit has one for every pin.
    done = installs(kit, kit.parent / "target")
    assert done.returncode == 0, done.stderr
    heads = subprocess.run(["git", "bundle", "list-heads", str(kit / "source.bundle")], capture_output=True, text=True)
    assert heads.stdout.split() == [head(), "HEAD"], heads.stderr


@pytest.mark.network
def test_the_default_kit_is_the_committed_lock_and_past_its_cap_an_error_that_leaves_it(tmp_path):
    kit = tmp_path / "kit"
    done = fetch_kit("--into", kit, "--max-mib", 1)
    assert done.returncode != 0
    assert "more than the 1 MiB cap" in done.stderr and "--max-mib" in done.stderr, done.stderr
    # The kit stays, whole.
    meta = json.loads((kit / "kit.json").read_text())
    assert meta["python"] == "3.12" and meta["lock"] == "requirements/gpu-kit.txt"
    committed = re.findall(r"^(\S+==\S+)", (ROOT / "requirements" / "gpu-kit.txt").read_text(), re.MULTILINE)
    assert (kit / "gpu-kit.txt").read_text().splitlines() == committed
    # Its wheels are CPython 3.12's for manylinux x86_64, whatever Python runs the tests.
    done = installs(kit, tmp_path / "target", *platform_args("3.12"))
    assert done.returncode == 0, done.stderr
    # docs/gpu-kit.md's table is this kit's: its wheels, versions, sizes and carried marks.
    table = kit_table("--check", "--kit", kit)
    assert table.returncode == 0, table.stdout + table.stderr


def kit_table(*args) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "tiny_mlp_bench", "locks", "kit-table", *map(str, args)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


def test_the_docs_kit_table_is_the_committed_locks_and_a_stale_one_is_named(tmp_path, monkeypatch):
    from tiny_mlp_bench.locks import wheels

    done = kit_table("--check")
    assert done.returncode == 0, done.stdout + done.stderr
    stale = tmp_path / "gpu-kit.md"
    stale.write_text(wheels.KIT_DOC.read_text().replace("| setuptools | ", "| setuptools | 0", 1))
    monkeypatch.setattr(wheels, "KIT_DOC", stale)
    assert wheels.write_kit_table(None, check=True) == 1


def test_fetch_kit_empties_no_folder_that_holds_more_than_a_kit(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    done = fetch_kit("--into", tmp_path)
    assert done.returncode != 0 and "not a kit's" in done.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_lock_and_check_refuse_fetch_kit_options():
    done = subprocess.run(
        [sys.executable, "-m", "tiny_mlp_bench", "locks", "lock", "gpu-kit", "--python", "3.11"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "fetch-kit's options" in done.stderr
