"""The locks of the environments that are not this machine's (the CUDA images, the GPU kit) and the
one command for a GPU machine without a registry (scripts/gpu_study.py), as far as they can be
checked without a GPU: the locks' contents, that pip still resolves them on PyPI, and the command
on a small config with this environment's Python."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, copy_workflow, run_snakemake

REQUIREMENTS = ROOT / "requirements"
TIMED_RULES = ("train", "sweep_crossover", "probe_fixed_costs")


def pins(path: Path) -> dict[str, str]:
    """name -> version of every package a lock or runtime.txt pins (names as pip normalises them)."""
    found = re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", path.read_text(), re.MULTILINE)
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in found}


@pytest.mark.parametrize(
    ("lock", "cuda_packages"),
    [
        ("torch-cuda.txt", {"torch", "jax-cuda13-plugin", "nvidia-cublas", "nvidia-cudnn-cu13", "nvidia-cuda-runtime"}),
        ("keras-cuda.txt", {"tensorflow", "nvidia-cublas-cu12", "nvidia-cudnn-cu12", "nvidia-cuda-runtime-cu12"}),
    ],
)
def test_each_cuda_image_has_an_exact_hashed_lock_at_the_local_versions(lock, cuda_packages):
    text = (REQUIREMENTS / lock).read_text()
    entries = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert entries and all(re.fullmatch(r"\S+==\S+ --hash=sha256:[0-9a-f]{64}", e) for e in entries)
    locked, local = pins(REQUIREMENTS / lock), pins(REQUIREMENTS / "runtime.txt")
    assert cuda_packages <= set(locked)
    # The CUDA images run the versions the local environment runs; only what CUDA adds is new.
    assert {name: v for name, v in locked.items() if name in local and local[name] != v} == {}
    assert not any(name.startswith("nvidia-") for name in local), "the local lock stays the CPU one"


def test_the_gpu_kit_carries_what_the_gpu_machine_lacks_and_nothing_it_has():
    kit, local = pins(REQUIREMENTS / "gpu-kit.txt"), pins(REQUIREMENTS / "runtime.txt")
    assert {"snakemake", "keras", "jsonschema", "rocrate", "connection-pool"} <= set(kit)
    present = {line for line in (REQUIREMENTS / "gpu-present.txt").read_text().splitlines() if line[:1].isalpha()}
    assert not present & set(kit)
    assert not {name for name in kit if name.startswith(("nvidia-", "jax", "torch", "tensorflow"))}
    assert {name: v for name, v in kit.items() if name in local and local[name] != v} == {}


@pytest.mark.parametrize("target", ["torch-cuda", "keras-cuda", "gpu-kit"])
def test_pip_still_resolves_each_lock_on_pypi(target):
    # The kit for CPython 3.12 (the GPU machine's), the images for 3.11: each resolved again on PyPI
    # (metadata only), held to its versions, must give the committed lock byte for byte: nothing
    # missing or extra, every hash PyPI's. Needs PyPI, as CI has.
    done = subprocess.run(
        [sys.executable, "scripts/wheel_locks.py", "check", target], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_gpu_config_runs_every_rung_but_tensorflows_on_both_devices():
    from tiny_mlp_bench import catalogue

    config = yaml.safe_load((ROOT / "config" / "gpu.yaml").read_text())
    assert config["repeats"] == 1 and config["devices"] == ["cpu", "cuda"] and config["require_gpu"] is True
    expected = {fw: catalogue.variant_names(fw) for fw in catalogue.framework_names() if fw != "keras"}
    assert config["variants"] == expected and config["frameworks"] == list(expected)
    runs = [(fw, v, d) for fw in expected for v in catalogue.ladder(fw) for d in v.devices]
    assert len(runs) == 27  # as the README says


def test_the_gpu_study_dry_runs_with_its_resources(tmp_path):
    # The config passes the workflow's schema and checks; Snakemake plans every job of it.
    directory = copy_workflow(tmp_path)
    resources = ["--resources", "timed_slot=2", "cpu_timed_slot=1", "cuda_timed_slot=1"]
    done = run_snakemake(directory, "-n", "--cores", 16, "--configfile", "config/gpu.yaml", *resources)
    assert done.returncode == 0, done.stderr[-3000:]
    planned = dict(re.findall(r"^(\w+)\s+(\d+)$", done.stdout + done.stderr, re.MULTILINE))
    assert planned["train"] == "27" and planned["sweep_crossover"] == "2" and planned["probe_fixed_costs"] == "2"


def most_timed_jobs_at_once(log_text: str) -> dict[str, int]:
    """Replay Snakemake's log: per device, the most timed jobs running at the same moment."""
    running, most, rule, jobid = {}, {"cpu": 0, "cuda": 0}, None, None
    for line in log_text.splitlines():
        if m := re.match(r"(?:local)?rule (\w+):", line):
            rule, jobid = m.group(1), None
        elif m := re.match(r"\s*jobid: (\d+)", line):
            jobid = m.group(1)
        elif (m := re.match(r"\s*wildcards: .*device=(\w+)", line)) and jobid and rule in TIMED_RULES:
            running[jobid] = m.group(1)
            for device in most:
                most[device] = max(most[device], list(running.values()).count(device))
        elif m := re.match(r"Finished jobid: (\d+)", line):
            running.pop(m.group(1), None)
    return most


def run_gpu_study(directory: Path, *args: str) -> subprocess.CompletedProcess:
    """The command as a GPU machine runs it: on a bare Python (this environment's base interpreter,
    without the study's packages), the study itself in ``--python``, this environment's."""
    return subprocess.run(
        [sys._base_executable, "scripts/gpu_study.py", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=1200,
    )


def small_study(tmp_path: Path, **changes) -> Path:
    """A committed copy of the workflow with small.yaml: torch seed on both devices, numpy's rungs."""
    directory = copy_workflow(tmp_path)
    small = yaml.safe_load((directory / "tiny.yaml").read_text())
    small |= {
        "repeats": 1,
        "frameworks": ["torch", "numpy"],
        "variants": {"torch": ["seed"], "numpy": ["reference", "fused"]},
    }
    small["sweep"] |= {"batch_sizes": [8], "hidden_units": [4]}
    (directory / "small.yaml").write_text(yaml.safe_dump(small | changes))
    commit_all(directory)
    return directory


def verify(directory: Path, folder: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "scripts/archive_study.py", "verify", str(folder)]
    return subprocess.run(command, cwd=directory, capture_output=True, text=True)


def commit_all(directory: Path) -> None:
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(directory), *command], check=True, capture_output=True)


def test_gpu_study_refuses_a_copy_without_git_and_a_missing_kit(tmp_path):
    directory = copy_workflow(tmp_path)
    done = run_gpu_study(directory)
    assert done.returncode == 1
    assert "is not a git checkout, and there is no" in done.stderr and "with its .git folder" in done.stderr
    commit_all(directory)
    done = run_gpu_study(directory)
    assert done.returncode == 1
    assert "no kit at" in done.stderr and "run `make gpu-kit`" in done.stderr
    assert not (directory / ".venv-gpu").exists() and not (directory / "results").exists()


def test_gpu_study_makes_a_copy_without_git_a_checkout_from_the_kits_bundle(tmp_path):
    # The repository reaches the GPU machine without .git; the kit carries a bundle of HEAD.
    made_here, there = tmp_path / "here", tmp_path / "there"
    for directory in (made_here, there):
        directory.mkdir()
        copy_workflow(directory)
    commit_all(made_here)
    (there / "scripts" / "train.py").write_text((there / "scripts" / "train.py").read_text() + "\n# changed there\n")
    kit = there / "wheelhouse" / "gpu-kit"
    kit.mkdir(parents=True)
    subprocess.run(
        ["git", "-C", str(made_here), "bundle", "create", "-q", str(kit / "source.bundle"), "HEAD"], check=True
    )
    done = run_gpu_study(there)
    assert done.returncode == 1 and "no .git here: making one from" in done.stderr
    assert "no kit at" in done.stderr  # the next check: the bundle alone is no kit
    head = subprocess.run(["git", "-C", str(made_here), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    status = ["git", "-C", str(there), "status", "--porcelain", "--untracked-files=no"]
    assert subprocess.run(["git", "-C", str(there), "rev-parse", "HEAD"], capture_output=True, text=True).stdout == head
    # The working tree is kept: what differs from the bundle's commit shows as modified, so records say -dirty.
    assert subprocess.run(status, capture_output=True, text=True).stdout.split() == ["M", "scripts/train.py"]


def test_only_pip_check_problems_of_the_studys_packages_stop_it():
    import gpu_study

    report = (
        "snakemake 9.27.1 requires pulp, which is not installed.\n"
        "keras 3.15.1 has requirement optree>=0.21, but you have optree 0.20.0.\n"
        "transformers 5.0.0 has requirement tokenizers<0.30, but you have tokenizers 0.31.0.\n"
    )
    ours, theirs = gpu_study.study_problems(report, {"snakemake", "keras", "optree"})
    assert ours == report.splitlines()[:2] and theirs == report.splitlines()[2:]
    assert gpu_study.study_problems("No broken requirements found.\n", {"keras"}) == ([], [])


def test_gpu_study_installs_its_kit_over_the_machines_own_packages(tmp_path):
    # A one-package kit, on a bare Python that has no torch: the kit goes into .venv-gpu, which
    # sees the machine's packages, and the command stops, naming what neither has.
    directory = copy_workflow(tmp_path)
    commit_all(directory)
    kit = directory / "wheelhouse" / "gpu-kit"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(kit), "tabulate==0.10.0"],
        check=True,
    )
    (kit / "gpu-kit.txt").write_text("tabulate==0.10.0\n")
    done = run_gpu_study(directory)
    assert done.returncode == 1 and "installing the kit: 1 packages" in done.stderr
    # The bare Python lacks the rest of what the study needs: named, before anything runs.
    assert "lacks torch, keras, pandas," in done.stderr and "tabulate" not in done.stderr.split("lacks")[1]
    python = directory / ".venv-gpu" / "bin" / "python"
    # tabulate from the kit, in the environment; pip (made --without-pip) from the machine's Python.
    code = (
        "import sys, tabulate, pip; print(tabulate.__version__,"
        " tabulate.__file__.startswith(sys.prefix), pip.__file__.startswith(sys.base_prefix))"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True).stdout.split()
    assert out == ["0.10.0", "True", "True"]


def test_gpu_study_runs_a_small_config_and_archives_it(tmp_path):
    directory = small_study(tmp_path)
    study = ["--python", sys.executable, "--allow-no-gpu", "--config", "small.yaml", "--name", "small"]
    done = run_gpu_study(directory, *study)
    assert done.returncode == 0, done.stderr[-4000:]
    folder = directory / "results" / "archive" / "small"
    timing = json.loads((folder / "logs" / "gpu_study.json").read_text())
    # One cpu and one cuda timed job may overlap: the command asks Snakemake for that, and no two
    # timed jobs on one device ever ran together.
    assert "cpu_timed_slot=1" in timing["command"] and "cuda_timed_slot=1" in timing["command"]
    assert timing["snakemake_exit"] == 0 and timing["overlap"] == "one cpu and one cuda timed job at a time"
    assert most_timed_jobs_at_once(done.stderr) == {"cpu": 1, "cuda": 1}
    records = [json.loads(p.read_text()) for p in sorted((folder / "runs").glob("*.json"))]
    assert len(records) == 4  # torch seed on both devices, numpy's two rungs on cpu
    readme = (folder / "README.md").read_text()
    assert "The whole study of the config." in readme
    assert f"Wall time of the study: {timing['wall_s']} s" in readme
    torch_version = records[-1]["environment"]["versions"]["torch"]  # torch-cuda-seed-1, sorted last
    assert f"torch {torch_version}." in readme
    assert "4 run records (3 ok, 1 skipped)" in readme
    report = (folder / "report.md").read_text()
    answer = report.split("## The answer\n", 1)[1].split("\n## ", 1)[0].strip()
    assert answer and answer in readme
    # The archive is sealed like any other: its manifest and its re-rendered report check out.
    checked = verify(directory, folder)
    assert checked.returncode == 0, checked.stderr[-3000:]


def test_gpu_study_stops_at_its_time_limit_and_archives_what_finished(tmp_path):
    # More repeats than fit in the limit: Snakemake is stopped with some runs done and others not.
    directory = small_study(tmp_path, repeats=4)
    study = ["--python", sys.executable, "--allow-no-gpu", "--config", "small.yaml", "--name", "partial"]
    done = run_gpu_study(directory, *study, "--serial", "--time-limit", "45")
    assert done.returncode == 0, done.stderr[-4000:]
    assert "the time limit of 45 s is up" in done.stderr
    folder = directory / "results" / "archive" / "partial"
    timing = json.loads((folder / "logs" / "gpu_study.json").read_text())
    assert timing["stopped_at_time_limit"] is True and timing["overlap"] == "one timed job at a time"
    records = sorted((folder / "runs").glob("*.json"))
    assert 0 < len(records) < 4 * 4
    readme = (folder / "README.md").read_text()
    assert "**A partial study**: stopped at the time limit of 45 s" in readme
    assert f"{len(records)} run records (" in readme
    # The report is of the records that finished, and the archive verifies as any other.
    checked = verify(directory, folder)
    assert checked.returncode == 0, checked.stderr[-3000:]
    # Nothing of a stopped job is left: every record in results/ is a whole one, and it is archived.
    assert sorted(p.name for p in (directory / "results" / "runs").iterdir()) == [p.name for p in records]
