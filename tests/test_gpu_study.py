"""The locks of the environments that are not this machine's (the CUDA images, the GPU kit) and the
one command for a GPU machine without a registry (scripts/gpu_study.py), as far as they can be
checked without a GPU: the locks' contents, that pip still resolves them on PyPI, and the command
on a small config with this environment's Python."""

import json
import os
import re
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, commit_all, copy_workflow, run_snakemake
from tiny_mlp_bench import registry
from tiny_mlp_bench.locks.wheels import carried_in

REQUIREMENTS = ROOT / "requirements"


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
    # What the machine has stays out, but the candidates the study installs where a machine's own do not
    # suit: what the study's packages need other versions of, and the pure-Python needs of torch and the rest.
    carried = set(carried_in((REQUIREMENTS / "gpu-kit.txt").read_text()))
    assert {"packaging", "typing-extensions", "setuptools", "sympy", "filelock", "opt-einsum"} <= carried <= set(kit)
    assert not (present - carried) & set(kit)
    assert not {name for name in kit if name.startswith(("nvidia-", "jax", "torch", "tensorflow"))}
    assert {name: v for name, v in kit.items() if name in local and local[name] != v} == {}


@pytest.mark.network
def test_pip_still_resolves_each_lock_on_pypi():
    # The kit for CPython 3.12 (the GPU machine's), the images for 3.11: each resolved again on PyPI
    # (metadata only), held to its versions, must give the committed lock byte for byte: nothing
    # missing or extra, every hash PyPI's. Needs PyPI, as CI has. All three in one pass.
    done = subprocess.run(
        [sys.executable, "-m", "tiny_mlp_bench", "locks", "check"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert all(f"resolving {target} on" in done.stderr for target in ("torch-cuda", "keras-cuda", "gpu-kit"))


def test_the_gpu_config_runs_every_rung_but_tensorflows_on_both_devices():
    from tiny_mlp_bench import catalogue
    from tiny_mlp_bench.stacks import CAUSES

    config = yaml.safe_load((ROOT / "config" / "gpu.yaml").read_text())
    assert config["repeats"] == 1 and config["devices"] == ["cpu", "cuda"] and config["require_gpu"] is True
    # Keras on TensorFlow (keras, tf_keras) is left out: the GPU machine has no TensorFlow; so are one_thread, the
    # busy-core study's rung, and torch's cause rung, the release sweep's.
    causes = {rung for _, rung, _, _ in CAUSES}
    expected = {
        fw: [v.name for v in registry.ladder(fw) if v.role != catalogue.Role.ONE_THREAD and v.name not in causes]
        for fw in catalogue.framework_names()
        if catalogue.framework(fw).image != "keras"
    }
    assert config["frameworks"] == list(expected)
    assert {fw: registry.study_rungs(config["variants"])[fw] for fw in expected} == expected
    runs = [(fw, v, d) for fw in expected for v in map(partial(registry.rung, fw), expected[fw]) for d in v.devices]
    assert len(runs) == 31  # as docs/gpu-kit.md says


def test_the_gpu_study_dry_runs(tmp_path):
    # The config passes the workflow's schema and checks; Snakemake plans every job of it.
    directory = copy_workflow(tmp_path)
    done = run_snakemake(directory, "-n", "--cores", 16, "--configfile", "config/gpu.yaml")
    assert done.returncode == 0, done.stderr[-3000:]
    planned = dict(re.findall(r"^(\w+)\s+(\d+)$", done.stdout + done.stderr, re.MULTILINE))
    assert planned["train"] == "63" and planned["sweep_crossover"] == "2" and planned["probe_fixed_costs"] == "4"


def most_jobs_at_once(jobs: list[dict]) -> int:
    """From the study's log: the most jobs that ran at the same moment."""
    ran = [job for job in jobs if "started_s" in job]
    # Two jobs overlap when one runs at the other's start (0.15 s in: the log rounds to 0.1 s).
    return max(sum(j["started_s"] <= job["started_s"] + 0.15 < j["ended_s"] for j in ran) for job in ran)


def run_gpu_study(directory: Path, *args: str, python: str = sys._base_executable) -> subprocess.CompletedProcess:
    """The command as a GPU machine runs it: by default on a bare Python (this environment's base
    interpreter, without the study's packages)."""
    return subprocess.run(
        [python, "scripts/gpu_study.py", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=1200,
    )


def small_study(tmp_path: Path, **changes) -> Path:
    """A committed copy of the workflow with small.yaml: torch seed on both devices, numpy's rungs."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    directory = copy_workflow(tmp_path)
    small = yaml.safe_load((directory / "tiny.yaml").read_text())
    small |= {
        "repeats": 1,
        "frameworks": ["torch", "numpy"],
        "variants": {"torch": ["seed"], "numpy": ["reference", "fused"]},
        # Its jobs took 2-9 s each here.
        "plan_estimates_s": {"*": 8},
    }
    small["sweep"] |= {"batch_sizes": [8], "hidden_units": [4]}
    (directory / "small.yaml").write_text(yaml.safe_dump(small | changes, sort_keys=False))
    commit_all(directory)
    return directory


def study_args(name: str) -> list[str]:
    """The small study with this environment's Python instead of the kit, without a GPU."""
    return ["--python", sys.executable, "--allow-no-gpu", "--config", "small.yaml", "--name", name]


def verify(directory: Path, folder: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "tiny_mlp_bench", "verify", str(folder)]
    return subprocess.run(command, cwd=directory, capture_output=True, text=True)


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
    # The next check: the changed file differs from the bundle's commit, so nothing runs.
    assert "1 tracked files differ from commit" in done.stderr and "(scripts/train.py)" in done.stderr
    head = subprocess.run(["git", "-C", str(made_here), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    status = ["git", "-C", str(there), "status", "--porcelain", "--untracked-files=no"]
    assert subprocess.run(["git", "-C", str(there), "rev-parse", "HEAD"], capture_output=True, text=True).stdout == head
    # The working tree is kept: what differs from the bundle's commit shows as modified, so records say -dirty.
    assert subprocess.run(status, capture_output=True, text=True).stdout.split() == ["M", "scripts/train.py"]

    # The change is committed where the kit is made, and the new working tree and kit are copied over
    # without .git: the .git made before is an older copy's, and the error says so.
    (made_here / "scripts" / "train.py").write_text((there / "scripts" / "train.py").read_text())
    commit_all(made_here)
    new_head = subprocess.run(["git", "-C", str(made_here), "rev-parse", "HEAD"], capture_output=True, text=True)
    (kit / "kit.json").write_text(json.dumps({"commit": new_head.stdout.strip()}))
    done = run_gpu_study(there)
    assert done.returncode == 1
    assert f"the kit was made at commit {new_head.stdout[:12]}: this .git is an older copy's" in done.stderr


def test_pip_check_stops_the_study_only_on_what_the_kit_brought_or_cannot_mend():
    from tiny_mlp_bench.gpu_study.environment import judge, verdict_lines

    old_setuptools = "torch 2.13.0+cpu has requirement setuptools>=77.0.3, but you have setuptools 65.5.0."
    machines_own = "transformers 5.0.0 has requirement tokenizers<0.30, but you have tokenizers 0.31.0."
    unmet = "jax 0.10.2 requires ml-dtypes, which is not installed."
    before = [old_setuptools, machines_own, unmet, "cupy 13.0.0 is not supported on this platform"]
    after = [
        machines_own.replace("0.30", "0.29"),  # the same problem, said with other versions
        unmet,
        "snakemake 9.27.1 has requirement packaging<26,>=24.0, but you have packaging 26.0.",
    ]
    verdict = judge(before, after, {"torch", "jax", "snakemake"}, ["setuptools==84.2.1"])
    assert verdict == {
        "introduced": [after[2]],
        "unresolved": [unmet],
        "left": [after[0]],
        "resolved": [old_setuptools, before[3]],
        "carried": ["setuptools==84.2.1"],
    }
    said = verdict_lines(verdict)
    assert said[0] == "pip check: 5 problems, and what the study does about each"
    assert f"  {old_setuptools} -> resolved by the kit's carried setuptools==84.2.1" in said
    assert f"  {before[3]} -> resolved by the kit's packages" in said
    assert f"  {after[0]} -> left as it is: none of the packages the study uses" in said
    assert f"  {after[2]} -> stops the study: the kit brought it" in said
    assert f"  {unmet} -> stops the study: a package the study uses, which the kit cannot mend" in said
    assert verdict_lines(judge([], [], set(), [])) == ["pip check: no problems"]


def one_package_kit(directory: Path) -> Path:
    """A kit of tabulate alone, downloaded by pip (the tests that use it are marked network)."""
    kit = directory / "wheelhouse" / "gpu-kit"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(kit), "tabulate==0.10.0"],
        check=True,
    )
    (kit / "gpu-kit.txt").write_text("tabulate==0.10.0\n")
    return kit


@pytest.mark.network
def test_gpu_study_installs_its_kit_over_the_machines_own_packages(tmp_path):
    # A one-package kit, on a bare Python that has no torch: the kit goes into .venv-gpu, which
    # sees the machine's packages, and the command stops, naming what neither has.
    directory = copy_workflow(tmp_path)
    commit_all(directory)
    one_package_kit(directory)
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


@pytest.mark.network
@pytest.mark.slow
def test_a_venv_made_from_a_venv_sees_the_parents_packages(tmp_path):
    # A GPU machine's python3 may itself be a virtual environment holding torch: here, this one. The
    # study's environment sees its packages, and not the base interpreter's, which it does not see.
    directory = copy_workflow(tmp_path)
    commit_all(directory)
    kit = one_package_kit(directory)
    (kit / "kit.json").write_text(json.dumps({"python": f"{sys.version_info.major}.{sys.version_info.minor}"}))
    done = run_gpu_study(directory, python=sys.executable)
    # Past pip check (this environment's packages suit each other) and the study's needs, to the first
    # check that needs a GPU.
    assert "pip check: no problems" in done.stderr, done.stderr[-2000:]
    assert done.returncode == 1 and "torch sees no GPU here" in done.stderr, done.stderr[-2000:]
    python = directory / ".venv-gpu" / "bin" / "python"
    code = (
        "import sys, tabulate, torch; print(tabulate.__file__.startswith(sys.prefix),"
        f" torch.__file__.startswith({str(Path(sys.prefix))!r}))"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    # The kit's tabulate in the environment (this one has the same), torch from the parent.
    assert out.stdout.split() == ["True", "True"], out.stderr


@pytest.mark.network  # its one-package kit is downloaded
def test_a_kit_for_another_python_is_refused_naming_the_one_to_make(tmp_path):
    directory = copy_workflow(tmp_path)
    commit_all(directory)
    kit = one_package_kit(directory)
    (kit / "kit.json").write_text(json.dumps({"python": "3.99"}))
    done = run_gpu_study(directory)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert done.returncode == 1 and f"is for CPython 3.99, and this machine's Python is {here}" in done.stderr
    assert f"make gpu-kit KIT_PYTHON={here}" in done.stderr and not (directory / ".venv-gpu").exists()


def test_a_lost_run_bit_is_given_back_and_only_a_changed_file_stops_the_study(tmp_path):
    directory = copy_workflow(tmp_path)
    commit_all(directory)
    (directory / "scripts" / "train.py").chmod(0o755)  # as a copy that changed the modes would have it
    with open(directory / "scripts" / "make_dataset.py", "a") as script:
        script.write("# changed here\n")
    done = run_gpu_study(directory)
    assert "gave 1 files the mode of" in done.stderr and "(scripts/train.py)" in done.stderr
    assert not os.access(directory / "scripts" / "train.py", os.X_OK)  # as the commit keeps it
    assert done.returncode == 1 and "1 tracked files differ" in done.stderr and "make_dataset.py" in done.stderr
    assert "--allow-modified" in done.stderr
    assert not any((directory / name).exists() for name in (".venv-gpu", "results", "logs"))
    # With --allow-modified it goes on, saying so, to the next check.
    done = run_gpu_study(directory, "--allow-modified")
    assert "running from a modified tree (1 files differ" in done.stderr and "no kit at" in done.stderr


@pytest.mark.workflow
def test_a_failed_job_still_leaves_a_report_and_an_archive_that_name_it(tmp_path):
    directory = small_study(tmp_path, devices=["cpu"], variants={"torch": ["seed"], "numpy": ["reference"]})
    probe = directory / "scripts" / "probe_fixed_costs.py"
    start = 'if __name__ == "__main__":'
    assert start in probe.read_text()
    probe.write_text(probe.read_text().replace(start, f'raise SystemExit("this probe fails on purpose")\n\n{start}'))
    done = run_gpu_study(directory, *study_args("failed"), "--allow-modified")
    assert done.returncode == 1 and "1 jobs failed (probe-torch-cpu)" in done.stderr, done.stderr[-3000:]
    folder = directory / "results" / "archive" / "failed"
    runs = sorted(p.name for p in (folder / "runs").glob("*.json"))
    assert runs == ["numpy-cpu-reference-1.json", "torch-cpu-seed-1.json"]
    assert (folder / "sweep" / "cpu.json").is_file() and not list(folder.glob("probes/*.json"))
    assert "torch-cpu `seed`" in (folder / "report.md").read_text()
    readme = (folder / "README.md").read_text()
    assert "**A partial study**: 3 of its 4 jobs finished" in readme
    failed = readme.split("Failed: `probe-torch-cpu`", 1)[1]
    assert "`logs/probe_fixed_costs/torch-cpu.log` ends:" in failed and "this probe fails on purpose" in failed
    assert "**Made from a modified tree** (`--allow-modified`): `scripts/probe_fixed_costs.py`" in readme
    provenance = json.loads((folder / "provenance.json").read_text())
    assert provenance["modified_tree_allowed"] is True
    # Each Snakemake call's output is archived, and Snakemake's own log of each call that made a record: the four
    # jobs' calls one after the other (the study has no cuda).
    text = (folder / "logs" / "gpu_study" / "jobs.log").read_text()
    assert len([line for line in text.splitlines() if line.startswith("$ ")]) == 4
    assert (folder / "logs" / "gpu_study" / "prepare.log").is_file()
    own = [(folder / rel).read_text() for rel in provenance["study"]["snakemake_logs"]]
    timing = json.loads((folder / "logs" / "gpu_study.json").read_text())
    for job in timing["jobs"]:
        if job["outcome"] == "done":
            assert sum(job["output"] in log for log in own) == 1, job["output"]
    assert f"the calls that made records: {len(own)} in `logs/snakemake/`." in readme


@pytest.mark.workflow
@pytest.mark.alone
def test_the_time_limit_bounds_the_whole_command_and_the_question_comes_first(tmp_path):
    # More repeats than fit: some jobs finish, the rest are not started, and the fused_epoch runs, their
    # estimate far below their cold compilation (half a minute or more on cpu), keep being started, so
    # that one is still running when the time for jobs is up. The limit leaves the set-up (the pre-flight's
    # imports, two Snakemake calls) and a question round room on a slow machine, and the reserve the
    # report and the archive: on a 2-core one in a slow spell, the set-up took 30 s and torch's cpu seed
    # 19 s, so that 75 s left no time for its cuda twin; under a second heavy job, 20 s did not pack.
    estimates = {"torch-*-fused_epoch-*": 0.01, "*": 8}
    variants = {"torch": ["seed", "fused_epoch"], "numpy": ["reference", "fused"]}
    directory = small_study(tmp_path, repeats=4, variants=variants, plan_estimates_s=estimates)
    began = time.monotonic()
    limit = 110
    done = run_gpu_study(directory, *study_args("partial"), "--time-limit", str(limit), "--archive-reserve", "40")
    took = time.monotonic() - began
    assert done.returncode == 0, done.stderr[-4000:]
    # The whole command, from the bare Python's start to the sealed archive and its README.
    assert took <= limit + 2, f"{took:.1f} s"
    folder = directory / "results" / "archive" / "partial"
    jobs = {job["name"]: job for job in json.loads((folder / "logs" / "gpu_study.json").read_text())["jobs"]}
    outcomes = Counter(job["outcome"] for job in jobs.values())
    assert (
        outcomes["done"] and outcomes["skipped for time"] and set(outcomes) <= {"done", "skipped for time", "stopped"}
    )
    # One job at a time: the one running at the limit is stopped and leaves no record, unless it wrote its
    # record just as the time ran out (then it is done: test_runner.py holds both). Which job that is depends on
    # the machine's pace: mostly a fused_epoch run, on a slow day a seed run that outran its estimate.
    stopped = [name for name, job in jobs.items() if job["outcome"] == "stopped"]
    assert len(stopped) <= 1
    for name in stopped:
        assert not (folder / "runs" / f"{name}.json").exists()
    # The question round first, on each device.
    assert [name for name, job in jobs.items() if job["outcome"] == "done"][:2] == [
        "torch-cpu-seed-1",
        "torch-cuda-seed-1",
    ]
    readme = (folder / "README.md").read_text()
    assert f"**A partial study**: {outcomes['done']} of its {len(jobs)} jobs finished" in readme
    assert "Skipped for time (not started: its expected time no longer fit):" in readme
    for name in stopped:
        assert f"Stopped at the time limit, leaving no record: `{name}`." in readme
    records = sorted((folder / "runs").glob("*.json"))
    assert f"{len(records)} run records (" in readme
    # The report is of the records that finished, and the archive verifies as any other.
    checked = verify(directory, folder)
    assert checked.returncode == 0, checked.stderr[-3000:]
    # Nothing of a stopped job is left: every record in results/ is a whole one, and it is archived.
    assert sorted(p.name for p in (directory / "results" / "runs").iterdir()) == [p.name for p in records]
    done = {name for name, job in jobs.items() if job["outcome"] == "done"}
    assert {p.stem for p in records} == {name for name in done if not name.startswith(("probe-", "sweep-"))}
    # The probes that ran are archived too.
    probes = {f"probe-{p.stem}" for p in (folder / "probes").glob("*.json")}
    assert probes == {name for name in done if name.startswith("probe-")}


def node_python(where: Path) -> Path:
    """A stand-in for a GPU node's python3 as such nodes have it: a virtual environment made by this
    Python 3.11, with the setuptools 65.5 its ensurepip brings, whose other packages (this environment's:
    torch and the rest) it reaches only through a .pth hook; packaging at its newest release and
    typing-extensions at 4.10, both outside what the study's Snakemake and pydantic need; and a module that
    only a .pth hook puts on its path. packaging and typing-extensions are downloaded by pip."""
    node = where / "node"
    subprocess.run([sys._base_executable, "-m", "venv", str(node)], check=True)
    python = node / "bin" / "python"
    reach_parent(python, sysconfig.get_path("purelib"))
    hooked = where / "hooked"
    hooked.mkdir()
    (hooked / "node_hooked.py").write_text("FOUND = 'through the hook'\n")
    (node_site(python) / "node-hook.pth").write_text(f"import sys; sys.path.append({str(hooked)!r})\n")
    pip = [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "packaging", "typing-extensions==4.10.0"], check=True)
    versions = "import packaging, setuptools, torch; print(packaging.__version__, setuptools.__version__)"
    seen = subprocess.run([str(python), "-c", versions], capture_output=True, text=True, check=True).stdout.split()
    assert int(seen[0].split(".")[0]) >= 26, f"packaging {seen[0]} is not past what Snakemake needs"
    assert seen[1] == "65.5.0", f"setuptools {seen[1]} is not the one a Python 3.11 venv brings"
    return python


def node_site(python: Path) -> Path:
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    return Path(subprocess.run([str(python), "-c", where], capture_output=True, text=True, check=True).stdout.strip())


def reach_parent(python: Path, packages: str) -> None:
    """The node reaches ``packages`` through a .pth hook, after its own."""
    (node_site(python) / "node-packages.pth").write_text(f"import site; site.addsitedir({packages!r})\n")


def hide_setuptools(python: Path, where: Path) -> None:
    """Take setuptools from the node: its own uninstalled, and the parent environment's hidden behind a
    folder that links to everything of the parent's packages but setuptools."""
    subprocess.run([str(python), "-m", "pip", "uninstall", "--quiet", "--yes", "setuptools"], check=True)
    parent, shown = Path(sysconfig.get_path("purelib")), where / "parent-without-setuptools"
    shown.mkdir()
    hidden = ("setuptools", "_distutils_hack", "pkg_resources", "distutils-precedence.pth")
    for entry in parent.iterdir():
        if not entry.name.startswith(hidden):
            (shown / entry.name).symlink_to(entry)
    reach_parent(python, str(shown))
    found = subprocess.run([str(python), "-c", "import setuptools"], capture_output=True, text=True)
    assert found.returncode != 0 and "No module named 'setuptools'" in found.stderr, found.stderr


def rehearse(directory: Path, python: Path, kit: Path, name: str) -> tuple[str, Path]:
    """The pre-flight and then the small study, as a user runs them on a node new to them, without a GPU:
    what the pre-flight said, and the archive."""
    kit_args = ["--kit", str(kit), "--allow-no-gpu"]
    checked = run_gpu_study(directory, "--check", *kit_args, python=str(python))
    assert checked.returncode == 0, checked.stderr[-4000:]
    assert "pre-flight: nothing stops the study" in checked.stderr
    study = [*kit_args, "--config", "small.yaml", "--name", name, "--time-limit", "400"]
    done = run_gpu_study(directory, *study, python=str(python))
    assert done.returncode == 0, done.stderr[-4000:]
    # The pre-flight's environment serves the study: the kit is installed once.
    assert "the kit is in .venv-gpu/ already" in done.stderr and "installing the kit" not in done.stderr
    folder = directory / "results" / "archive" / name
    # The compiled rung ran (torch's compiler imports setuptools), and the archive is sealed like any other:
    # its manifest and its re-rendered report check out.
    compiled = json.loads((folder / "runs" / "torch-cpu-compiled-1.json").read_text())
    assert compiled["status"] == "ok", compiled.get("error")
    checked_archive = verify(directory, folder)
    assert checked_archive.returncode == 0, checked_archive.stderr[-3000:]
    return checked.stderr, folder


def from_kit(directory: Path, *modules: str) -> list[str]:
    """For each module, whether the study's environment takes it from the kit (else from the node)."""
    listed = ", ".join(modules)
    code = f"import sys, {listed}; print(*(m.__file__.startswith(sys.prefix) for m in ({listed},)))"
    done = subprocess.run([str(directory / ".venv-gpu" / "bin" / "python"), "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.network
@pytest.mark.workflow
@pytest.mark.slow
def test_the_whole_command_rehearsed_on_node_pythons_as_gpu_nodes_have_them(
    tmp_path, tmp_path_factory, kit_for_this_python
):
    # The node's python3: a Python 3.11 venv with its own setuptools 65.5, reaching torch only through a
    # .pth hook, packaging 26 and typing-extensions 4.10; then the same venv with no setuptools at all. On
    # each, the pre-flight, the study with a compiled rung, and a sealed archive; no GPU. One kit for both.
    where = tmp_path_factory.mktemp("node")  # outside the checkout, as a node's Python is
    python = node_python(where)
    variants = {"torch": ["seed", "compiled"], "numpy": ["reference", "fused"]}
    directory = small_study(tmp_path / "old-setuptools", variants=variants)
    kit = kit_for_this_python
    carried = json.loads((kit / "kit.json").read_text())["carried"]
    said, folder = rehearse(directory, python, kit, "small")
    core = len((kit / "gpu-kit.txt").read_text().split()) - len(carried)
    assert f"installing the kit: {core} packages from {kit}, then of its {len(carried)} carried ones" in said
    # What pip check found, once, and what the study did about each: the kit's carried setuptools,
    # packaging and typing-extensions mend torch, Snakemake and pydantic; no other carried wheel goes in.
    setuptools, packaging, typing_extensions = (
        next(line for line in (kit / "gpu-kit.txt").read_text().split() if line.startswith(f"{name}=="))
        for name in ("setuptools", "packaging", "typing-extensions")
    )
    assert said.count("gpu_study: pip check: ") == 1
    assert f"setuptools>=77.0.3, but you have setuptools 65.5.0. -> resolved by the kit's carried {setuptools}" in said
    assert "has requirement packaging<26" in said and f"-> resolved by the kit's carried {packaging}" in said
    assert f"-> resolved by the kit's carried {typing_extensions}" in said
    assert from_kit(directory, "setuptools", "packaging", "typing_extensions", "snakemake", "torch", "node_hooked") == [
        "True", "True", "True", "True", "False", "False"
    ]  # fmt: skip
    import torch

    timing = json.loads((folder / "logs" / "gpu_study.json").read_text())
    assert {job["outcome"] for job in timing["jobs"]} == {"done"}
    verdict = timing["pip_check"]
    assert verdict["carried"] == [packaging, setuptools, typing_extensions]
    assert not verdict["introduced"] and not verdict["unresolved"]
    # The question round first, then one job at a time: nothing ran beside a timed job.
    jobs = {job["name"]: job for job in timing["jobs"]}
    assert list(jobs)[:2] == ["torch-cpu-seed-1", "torch-cuda-seed-1"]
    assert most_jobs_at_once(timing["jobs"]) == 1
    # The node: its boot, its CPUs and how they pair into cores; no GPU here, so no warm-up kernel ran.
    assert timing["node"]["boot_id"] and set(timing["node"]["thread_siblings"]) == {
        str(cpu) for cpu in timing["node"]["logical_cpus"]
    }
    assert timing["warm_up"] is None
    # Around each cuda job, the GPU's state as nvidia-smi says it (here: that there is none).
    assert all("gpu_before" in job and "gpu_after" in job for job in jobs.values() if job["device"] == "cuda")
    # The set-up this rehearsal measured is the allowance the GPU study's plan is held to: on the machine the
    # first H200 archive's records were made on, config/gpu.yaml's plan fits the question's 4 rounds and Keras's
    # question in a 480 s limit (test_plan.py replays the last GPU study's pace, the torch probes included).
    fits = gpu_plan_fits(tmp_path, timing["setup_s"], time_limit=480)
    assert all(fits[name] for name in QUESTION_FIRST[:-1]), (timing["setup_s"], fits)
    records = [json.loads(p.read_text()) for p in sorted((folder / "runs").glob("*.json"))]
    # torch's seed and compiled rungs on both devices, numpy's two rungs on cpu and its fused on cuda
    assert len(records) == 7
    readme = (folder / "README.md").read_text()
    assert "The whole study of the config: every job finished." in readme
    assert f"then the jobs {timing['jobs_wall_s']} s" in readme
    assert f"with `{packaging}`, `{setuptools}`, `{typing_extensions}` of its carried packages" in readme
    assert f"torch {torch.__version__}." in readme and "7 run records (4 ok, 3 skipped)" in readme
    report = (folder / "report.md").read_text()
    answer = report.split("\n", 1)[1].split("\n## Details", 1)[0].strip()  # the first screen, under the title
    assert answer and answer in readme

    # The same node without setuptools: the environment is made anew for it, and the kit's carried one
    # comes in for torch's missing requirement.
    hide_setuptools(python, where)
    directory = small_study(
        tmp_path / "no-setuptools", devices=["cpu"], frameworks=["torch"], variants={"torch": ["seed", "compiled"]}
    )
    said, folder = rehearse(directory, python, kit, "small-no-setuptools")
    assert "creating .venv-gpu/" in said
    assert f"requires setuptools, which is not installed. -> resolved by the kit's carried {setuptools}" in said
    assert from_kit(directory, "setuptools", "torch") == ["True", "False"]


def gpu_plan_fits(tmp_path: Path, setup_s: float, time_limit: float) -> dict[str, bool]:
    """Which jobs of config/gpu.yaml the plan fits in ``time_limit`` after ``setup_s`` of set-up, for the
    machine the first H200 archive was made on (its CPU model and count, and its GPU), planned with that
    archive alone: as a GPU node new to the study is, where no GPU has run the floor or a probe."""
    from tiny_mlp_bench import config_check

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config |= yaml.safe_load((ROOT / "config" / "gpu.yaml").read_text())
    (tmp_path / "gpu-as-run.yaml").write_text(yaml.safe_dump(config_check.with_catalogue_defaults(config)))
    archives = tmp_path / "archives"
    archives.mkdir()
    (archives / "2026-11-29-h200").symlink_to(ROOT / "tests" / "data" / "h200-2026-11-29")
    env = json.loads(next(archives.glob("*/runs/*.json")).read_text())["environment"]
    command = [sys.executable, "-m", "tiny_mlp_bench", "plan", "--config", str(tmp_path / "gpu-as-run.yaml")]
    command += ["--archives", str(archives), "--gpu", env["gpu_name"]]
    command += ["--cpu-model", env["cpu_model"], "--logical-cpus", str(env["logical_cpus"])]
    command += ["--time-limit", str(time_limit), "--setup-s", str(setup_s)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return {job["name"]: job["fits"] for job in json.loads(done.stdout)["jobs"]}


# config/gpu.yaml's first jobs: the question's 4 rounds, Keras's question on each device, then torch's cuda probe.
QUESTION_FIRST = [
    *(f"torch-{device}-seed-{r}" for r in range(1, 5) for device in (("cpu", "cuda") if r % 2 else ("cuda", "cpu"))),
    "keras_jax-cpu-seed-1",
    "keras_jax-cuda-seed-1",
    "probe-torch-cuda",
]


def test_the_gpu_studys_plan_puts_the_questions_rounds_first_then_keras_then_the_cuda_probe(tmp_path):
    # With no set-up at all, 480 s fits them; what is left out is the rest's dearest.
    fits = gpu_plan_fits(tmp_path, 0, time_limit=480)
    assert list(fits)[: len(QUESTION_FIRST)] == QUESTION_FIRST
    assert all(fits[name] for name in QUESTION_FIRST) and not all(fits.values())


def test_the_plan_refuses_a_config_file_that_is_not_as_run_and_says_how_to_make_one():
    command = [
        sys.executable,
        "-m",
        "tiny_mlp_bench",
        "plan",
        "--config",
        "config/gpu.yaml",
        "--archives",
        "results/archive",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: config/gpu.yaml: not a config as run, which holds every key (")
    assert "`snakemake config_as_run --configfile config/gpu.yaml --cores 1` writes" in done.stderr


def test_where_the_render_or_pack_cannot_finish_the_raw_records_come_back(tmp_path, monkeypatch):
    import tarfile

    from tiny_mlp_bench.gpu_study import command as gpu_study

    monkeypatch.setattr(gpu_study, "ROOT", tmp_path)
    assert gpu_study.keep_raw_records() == "No record was written."
    monkeypatch.setattr(gpu_study, "RESULTS", tmp_path / "results")
    (tmp_path / "results" / "runs").mkdir(parents=True)
    (tmp_path / "results" / "runs" / "torch-cuda-seed-1.json").write_text("{}")
    (tmp_path / "logs" / "gpu_study").mkdir(parents=True)
    (tmp_path / "logs" / "gpu_study" / "jobs.log").write_text("the jobs' log\n")
    said = gpu_study.keep_raw_records()
    (tarball,) = tmp_path.glob("gpu-study-records-*.tar.gz")
    assert f"The raw records and logs are in {tarball.name}" in said and "sh results/pack-elsewhere.sh" in said
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        script = tar.extractfile("results/pack-elsewhere.sh").read().decode()
    assert {"results/runs/torch-cuda-seed-1.json", "logs/gpu_study/jobs.log"} <= names
    # It renders the report of exactly these records, then archives the study.
    assert (
        "python3 ../scripts/render_report.py --report report.md" in script and "runs/torch-cuda-seed-1.json" in script
    )
    assert script.rstrip().endswith('PYTHONPATH=. python3 -m tiny_mlp_bench archive "$@"')


def test_what_only_the_floor_needs_is_a_warning_and_stops_nothing(monkeypatch, capsys):
    from tiny_mlp_bench.gpu_study import command as gpu_study

    # A GPU that torch uses, with numba's own CUDA target, no libNVVM and a floor kernel that fails.
    found = {
        "python": "3.12.3",
        "executable": "python3",
        "packages": {},
        "torch": {"torch": "2.11.0", "cuda_build": "13.0", "gpu": "Some GPU", "capability": "9.0"},
        "numba": {"numba": "0.62.0", "target": "numba's built-in", "module": "numba.cuda", "nvidia": False},
        "nvvm": {"path": None, "found_via": "nowhere", "loads": "no"},
        "floor_kernel": "failed: no libNVVM",
    }
    asked = subprocess.CompletedProcess([], 0, stdout=json.dumps(found), stderr="")
    monkeypatch.setattr(gpu_study.subprocess, "run", lambda *args, **kwargs: asked)
    monkeypatch.setattr(gpu_study, "cuda_toolkit", lambda: (None, "nowhere"))
    monkeypatch.setattr(gpu_study, "gpu_state", lambda: "Some GPU, P0")
    _, problems = gpu_study.preflight(Path(sys.executable), allow_no_gpu=False)
    assert problems == []  # the question rounds and every other job run
    said = capsys.readouterr().err
    assert said.count("warning: the floor's cuda job will fail alone, the rest of the study runs: ") == 2
    assert "the floor kernel does not run on this GPU: failed: no libNVVM" in said
    assert "numba.cuda is numba's built-in, not NVIDIA's numba-cuda" in said


def test_the_preflight_says_what_the_study_would_use_and_names_what_stops_it(tmp_path):
    directory = copy_workflow(tmp_path)
    commit_all(directory)
    done = run_gpu_study(directory, "--check", "--python", sys.executable)
    said = done.stderr
    assert done.returncode == 1, said[-3000:]
    for part in ("gpu_study: Python ", "in the study's environment (the kit): torch ", "gpu_study: torch "):
        assert part in said, part
    for part in ("numba.cuda is numba's built-in", "libNVVM: ", "gpu_study: CPU: ", "gpu_study: GPU state: "):
        assert part in said, part
    assert "would stop the study: torch sees no GPU here" in said and "pre-flight: 1 would stop the study" in said
    # Nothing is timed and nothing is written but the environment's own files.
    assert not (directory / "results").exists() and not (directory / "logs").exists()
    passed = run_gpu_study(directory, "--check", "--python", sys.executable, "--allow-no-gpu")
    assert passed.returncode == 0 and "pre-flight: nothing stops the study" in passed.stderr, passed.stderr[-3000:]
    # On the machine's bare Python without a kit: named, and the checks that need none still made.
    bare = run_gpu_study(directory, "--check")
    assert bare.returncode == 1 and "would stop the study: no kit at " in bare.stderr, bare.stderr[-3000:]
