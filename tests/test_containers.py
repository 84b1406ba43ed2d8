"""Jobs in Docker or Podman images: the launcher, the workflow's switch, and real runs with both engines.

The real runs need the engine (Docker: a running daemon) and the CPU images built with it
(`make images ENGINE=... FLAVOR=cpu`); without them they skip with the command that fixes it. CI
builds the images with both engines and sets TINY_MLP_BENCH_REQUIRE_PODMAN=1 and
TINY_MLP_BENCH_REQUIRE_DOCKER=1, which turn those skips into failures.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import container_run
from helpers import ROOT, commit_all, run_snakemake, skip_unless_ready, write_config
from tiny_mlp_bench import catalogue, containers, machine
from tiny_mlp_bench.locks.wheels import canonical
from tiny_mlp_bench.records import PROBE_SCHEMA_VERSION, SCHEMA_VERSION, read_probe, read_record, read_sweep
from tiny_mlp_bench.timing import METHOD

VERSION = (ROOT / "VERSION").read_text().strip()
CPU_IMAGES = {
    "torch": f"docker://ghcr.io/tiny-mlp-bench/torch:{VERSION}-cpu",
    "keras": f"docker://ghcr.io/tiny-mlp-bench/keras:{VERSION}-cpu",
}


@pytest.fixture
def fake_engine(tmp_path, monkeypatch):
    """A `podman` on PATH that answers `info` and knows only the images listed in its file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    known = tmp_path / "known-images"
    known.write_text("")
    script = bin_dir / "podman"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = info ]; then exit 0; fi\n'
        'if [ "$1" = image ] && [ "$2" = inspect ]; then\n'
        f'  grep -qxF "$5" {known} && echo sha256:0123456789abcdef0123 && exit 0\n'
        '  echo "Error: $5: image not known" >&2; exit 125\n'
        "fi\n"
        "exit 3\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    containers.find_engine.cache_clear()
    yield known
    containers.find_engine.cache_clear()


def test_image_reference_drops_apptainers_prefix_and_refuses_image_files():
    assert containers.image_reference("docker://ghcr.io/x/torch:1") == "ghcr.io/x/torch:1"
    assert containers.image_reference("ghcr.io/x/torch:1") == "ghcr.io/x/torch:1"
    for apptainer_only in ("torch.sif", "oras://ghcr.io/x/torch:1"):
        with pytest.raises(containers.ContainerError, match="Apptainer image"):
            containers.image_reference(apptainer_only)


def test_a_missing_engine_says_what_to_install_and_which_key_to_change(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    containers.find_engine.cache_clear()
    with pytest.raises(containers.ContainerError) as err:
        containers.find_engine("podman")
    containers.find_engine.cache_clear()
    assert "no 'podman' command is on PATH" in str(err.value)
    assert "apt-get install podman" in str(err.value) and "container_engine: none" in str(err.value)


def test_a_missing_image_names_the_command_that_builds_it(fake_engine):
    with pytest.raises(containers.ContainerError) as err:
        containers.image_id("podman", CPU_IMAGES["torch"])
    message = str(err.value)
    assert f"'ghcr.io/tiny-mlp-bench/torch:{VERSION}-cpu' is not in podman's local images" in message
    assert "make images ENGINE=podman FLAVOR=cpu" in message and "image not known" in message
    fake_engine.write_text(f"ghcr.io/tiny-mlp-bench/torch:{VERSION}-cpu\n")
    assert containers.image_id("podman", CPU_IMAGES["torch"]) == "sha256:0123456789abcdef0123"


def test_the_launcher_exits_2_with_the_message_and_starts_nothing(fake_engine, capsys):
    assert container_run.main(["--engine", "podman", "--image", "nope:1", "--", "python", "-V"]) == 2
    assert "error: image 'nope:1' is not in podman's local images" in capsys.readouterr().err


def test_podman_gets_the_gpu_only_through_a_cdi_spec(tmp_path):
    flags, why_not = containers.gpu_flags("podman", cdi_dirs=[tmp_path / "missing", tmp_path])
    assert flags == [] and "nvidia-ctk cdi generate" in why_not
    (tmp_path / "nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n")
    assert containers.gpu_flags("podman", cdi_dirs=[tmp_path]) == (["--device", "nvidia.com/gpu=all"], None)


def test_docker_gets_the_gpu_only_with_the_container_toolkit(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    flags, why_not = containers.gpu_flags("docker")
    assert flags == [] and "NVIDIA Container Toolkit" in why_not
    hook = tmp_path / "nvidia-container-runtime-hook"
    hook.write_text("#!/bin/sh\n")
    hook.chmod(0o755)
    assert containers.gpu_flags("docker") == (["--gpus", "all"], None)


@pytest.mark.parametrize(
    ("engine", "uid", "user_flags"),
    [
        ("docker", 1000, ["--user", "1000:100"]),
        ("podman", 0, ["--user", "0:100"]),
        ("podman", 1000, ["--userns=keep-id", "--user", "1000:100"]),  # rootless
    ],
)
def test_run_command_mounts_the_workspace_and_runs_as_the_caller(engine, uid, user_flags, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    environ = {"OMP_NUM_THREADS": "2", "SLURM_JOB_ID": "7", "PYTHONPATH": str(ROOT), "HOME": "/root", "PATH": "/bin"}
    command = containers.run_command(
        engine,
        "img:1",
        ["python", "x.py"],
        [tmp_path, tmp_path, ROOT],
        ["--gpus", "all"],
        "sha256:ab",
        environ,
        uid,
        100,
    )
    assert command[:4] == [engine, "run", "--rm", "--network=none"]
    assert command[-3:] == ["img:1", "python", "x.py"]
    text = " ".join(command)
    assert " ".join(user_flags) in text
    assert text.count(f"--volume {tmp_path.resolve()}:{tmp_path.resolve()}") == 1
    assert f"--volume {ROOT}:{ROOT}" in text and f"--workdir {tmp_path.resolve()}" in text
    assert f"--hostname {socket.gethostname()}" in text  # records group by the machine, not the container
    # Thread and Slurm variables pass by name, and PYTHONPATH, which names the workspace's package (the
    # image has none installed); the rest of the caller's environment stays out.
    assert "--env OMP_NUM_THREADS" in text and "--env SLURM_JOB_ID" in text and "--env PYTHONPATH" in text
    assert "HOME" not in text and "--env PATH" not in text
    commit = machine.git_commit()  # this checkout's, read here: the image has no git
    for variable in ("CONTAINER_ENGINE=" + engine, "IMAGE=img:1", "IMAGE_ID=sha256:ab", f"GIT_COMMIT={commit}"):
        assert f"--env TINY_MLP_BENCH_{variable}" in text
    assert command.index("--gpus") < command.index("img:1")  # engine flags come before the image


def test_a_step_without_git_records_the_commit_its_launcher_read():
    elsewhere = {machine.GIT_COMMIT_ENV: "0123abc"}
    assert machine.git_commit(ROOT, elsewhere) == machine.git_commit()  # where git can read one, git's
    assert machine.git_commit(ROOT / "no-such-folder", elsewhere) == "0123abc"
    assert machine.git_commit(ROOT / "no-such-folder", {}) is None


def test_record_names_the_container_from_the_launchers_variables():
    launched = {
        machine.ENGINE_ENV: "podman",
        machine.IMAGE_ENV: "ghcr.io/x/torch:1",
        machine.IMAGE_ID_ENV: "sha256:ab",
    }
    assert machine.container(launched) == {
        "engine": "podman",
        "image": "ghcr.io/x/torch:1",
        "image_id": "sha256:ab",
    }
    apptainer = {"APPTAINER_CONTAINER": "/cache/torch.sif"}
    assert machine.container(apptainer) == {"engine": "apptainer", "image": "/cache/torch.sif", "image_id": None}
    if not any(Path(m).exists() for m in ("/run/.containerenv", "/.dockerenv")):
        assert machine.container({}) is None


def shell_commands(dry_run_output: str) -> dict[str, str]:
    """Each job's output file -> its shell command, from `snakemake -n -p`."""
    jobs = re.findall(r"output: (\S+?)(?:,.*?)?\n.*?Shell command: (.+?)\n", dry_run_output, re.S)
    return dict(jobs)


def test_the_switch_wraps_every_step_and_passes_the_gpu_to_cuda_steps_only(workflow_dir, fake_engine):
    fake_engine.write_text("".join(containers.image_reference(i) + "\n" for i in CPU_IMAGES.values()))
    config = write_config(workflow_dir, "podman.yaml", container_engine="podman", images=CPU_IMAGES)
    result = run_snakemake(workflow_dir, "-n", "-p", "--cores", 1, "--configfile", config)
    assert result.returncode == 0, result.stderr
    commands = shell_commands(result.stdout + result.stderr)
    assert len(commands) > 10 and "results/report.md" in commands
    # config_as_run writes the config from Snakemake's own Python (a run: block): no program to wrap.
    assert commands.pop("results/config.yaml") == "None"
    for output, command in commands.items():
        assert 'container_run.py" --engine podman --image docker://ghcr.io/tiny-mlp-bench/' in command, output
        image = "keras" if "/keras-" in output or "/tf_keras-" in output else "torch"
        assert f"/{image}:{VERSION}-cpu" in command, output
        assert ("--gpu " in command) == ("-cuda" in output or output.endswith("cuda.json")), output
        assert "-- python " in command, output
        # The step runs the workspace's tiny_mlp_bench: container_run.py passes PYTHONPATH into the image.
        # The checkout is named as its shell finds it when it runs: no absolute path is stored.
        assert 'env PYTHONPATH="$TINY_MLP_BENCH_HOME" ' in command, output
        assert str(workflow_dir.resolve()) not in command, output


def test_a_missing_image_stops_the_workflow_before_any_job(workflow_dir, fake_engine):
    config = write_config(workflow_dir, "podman.yaml", container_engine="podman", images=CPU_IMAGES)
    result = run_snakemake(workflow_dir, "--cores", 1, "--configfile", config)
    assert result.returncode != 0
    assert "cannot run the steps in podman containers" in result.stderr
    assert "make images ENGINE=podman FLAVOR=cpu" in result.stderr
    assert not (workflow_dir / "results").exists() and not (workflow_dir / "logs").exists()


def test_docker_or_podman_and_apptainer_exclude_each_other(workflow_dir, fake_engine):
    config = write_config(workflow_dir, "podman.yaml", container_engine="podman")
    result = run_snakemake(workflow_dir, "-n", "--cores", 1, "--configfile", config, "--sdm", "apptainer")
    assert result.returncode != 0
    assert "container_engine is 'podman' and --sdm apptainer is set" in result.stdout + result.stderr


APPTAINER_STAND_IN = """#!/bin/sh
# Stands in for Apptainer (not installed here): logs each call, "pulls" by creating the file,
# and runs `exec ... IMAGE bash -c CMD` on the host with the variable Apptainer sets.
echo "$*" >> "$(dirname "$0")/calls.log"
case "$1" in
  --version) echo "apptainer version 1.3.4" ;;
  pull) : > "$3" ;;
  exec) shift; while [ "$1" != bash ]; do image=$1; shift; done; APPTAINER_CONTAINER=$image exec "$@" ;;
esac
"""


@pytest.mark.containers
@pytest.mark.workflow
def test_apptainer_profile_runs_each_step_in_its_image_with_gpus_visible(workflow_dir, tmp_path):
    stand_in = tmp_path / "apptainer-bin"
    stand_in.mkdir()
    (stand_in / "apptainer").write_text(APPTAINER_STAND_IN)
    (stand_in / "apptainer").chmod(0o755)
    env = os.environ | {"PATH": f"{stand_in}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    targets = ["results/runs/torch-cpu-seed-1.json", "results/runs/keras-cpu-seed-1.json"]
    result = run_snakemake(
        workflow_dir, *targets, "--cores", 1, "--configfile", "tiny.yaml", "--profile", "profiles/apptainer", env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    calls = (stand_in / "calls.log").read_text().splitlines()
    pulled = sorted(c.split()[-1] for c in calls if c.startswith("pull "))
    assert pulled == [f"docker://ghcr.io/tiny-mlp-bench/{name}:{VERSION}" for name in ("keras", "torch")]
    runs = [c for c in calls if c.startswith("exec ")]
    assert len(runs) == 3 and all(" --nv " in c for c in runs)  # the dataset and the two runs
    images = {}
    for target in targets:
        container = read_record(workflow_dir / target)["environment"]["container"]
        assert container["engine"] == "apptainer" and container["image"].endswith(".simg")
        images[target] = container["image"]
    assert len(set(images.values())) == 2  # torch and keras each in its own image


def test_the_config_images_carry_the_projects_version():
    import yaml

    images = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["images"]
    assert images == {name: f"docker://ghcr.io/tiny-mlp-bench/{name}:{VERSION}" for name in ("torch", "keras")}
    # So do the package and its citation.
    assert f'\nversion = "{VERSION}"\n' in (ROOT / "pyproject.toml").read_text()
    assert yaml.safe_load((ROOT / "CITATION.cff").read_text())["version"] == VERSION


def pinned(path: Path) -> dict[str, str]:
    """name -> version of every package a requirements file pins (names as pip normalises them)."""
    found = re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", path.read_text(), re.MULTILINE)
    return {canonical(name): version for name, version in found}


def test_the_keras_image_holds_keras_3_and_tf_keras_at_tensorflows_version():
    # tf_keras (Keras 2) and keras (Keras 3) both run in the keras image, on its one TensorFlow:
    # tf-keras is released with each TensorFlow and needs that TensorFlow's major.minor.
    listed = (ROOT / "docker" / "keras.requirements.txt").read_text().split("\n")
    assert {"tensorflow", "keras", "tf-keras"} <= {line.strip() for line in listed if line[:1].isalpha()}
    requirements = ROOT / "requirements"
    local, cuda = pinned(requirements / "runtime.txt"), pinned(requirements / "keras-cuda.txt")
    assert pinned(requirements / "runtime.in")["tf-keras"] == local["tf-keras"] == cuda["tf-keras"]
    for pins in (local, cuda):
        assert pins["tf-keras"].split(".")[:2] == pins["tensorflow"].split(".")[:2], pins
    dockerfile = (ROOT / "docker" / "keras.Dockerfile").read_text()
    assert re.search(r"python -c 'import .*\btf_keras\b", dockerfile), "the build checks that tf_keras imports"


# The modules behind the programs each image runs (rules/*.smk): a train step in its framework's image, every
# other step in torch's.
IMAGE_PROGRAMS = {
    "torch": [
        "tiny_mlp_bench.dataset",
        "tiny_mlp_bench.jobs.run",
        "tiny_mlp_bench.jobs.probe",
        "tiny_mlp_bench.jobs.sweep",
        "tiny_mlp_bench.report.render",
    ],
    "keras": ["tiny_mlp_bench.jobs.run"],
}


# Imports ``sys.argv[2:]`` as a machine would that lacks the top-level modules listed in ``sys.argv[1]``: each of
# them is missing, so an optional import falls back as it would there, and a needed one fails.
IMPORT_WITHOUT = """
import importlib, json, sys
absent = set(json.loads(sys.argv[1]))
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in absent:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Absent())
for name in sys.argv[2:]:
    importlib.import_module(name)
"""


def installed_with(requirements: list[str]) -> set[str]:
    """The distributions that installing ``requirements`` brings, by their dependencies as installed here."""
    found, todo = set(), [canonical(r) for r in requirements]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            needs = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for need in map(Requirement, needs):
            if need.marker is None or need.marker.evaluate({"extra": ""}):
                todo.append(canonical(need.name))
    return found


@pytest.mark.parametrize("image", IMAGE_PROGRAMS)
def test_each_image_installs_every_package_its_programs_import(image):
    # A module the report shares with the README's tools once imported a package the torch image lacked; only a
    # container run showed it. This finds it here, with no image: the image's programs import with every package
    # its requirements do not bring made missing.
    listed = (ROOT / "docker" / f"{image}.requirements.txt").read_text().split("\n")
    installs = installed_with([line.strip() for line in listed if line[:1].isalpha()]) | {"tiny-mlp-bench"}
    owners = importlib.metadata.packages_distributions()
    absent = sorted(top for top, names in owners.items() if not {canonical(n) for n in names} & installs)
    imported = subprocess.run(
        [sys.executable, "-c", IMPORT_WITHOUT, json.dumps(absent), *IMAGE_PROGRAMS[image]],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert imported.returncode == 0, f"docker/{image}.requirements.txt lacks a package: {imported.stderr[-1500:]}"


# --- the real thing: the tiny study in Podman and in Docker ---------------------------------------

# What makes an engine ready here, said in every skip (and failure in CI).
ENGINE_SETUP = {
    "podman": "apt-get install podman runc, then docker/podman-host-setup.sh (as root)",
    "docker": "apt-get install docker.io, then docker/dockerd.sh start (as root)",
}


def engine_problem(engine: str) -> str | None:
    """Why the tiny study cannot run with ``engine`` here, or None when it can."""
    if shutil.which(engine) is None:
        return f"{engine} is not installed: {ENGINE_SETUP[engine]}"
    info = subprocess.run([engine, "info"], capture_output=True, text=True, timeout=120)
    if info.returncode != 0:
        return f"`{engine} info` fails, so {engine} cannot run containers: {ENGINE_SETUP[engine]}"
    for image in CPU_IMAGES.values():
        name = containers.image_reference(image)
        found = subprocess.run([engine, "image", "inspect", name], capture_output=True)
        if found.returncode != 0:
            return f"image {name} is not built for {engine}: make images ENGINE={engine} FLAVOR=cpu"
    return None


def require_engine(engine: str) -> None:
    skip_unless_ready(engine_problem(engine), f"TINY_MLP_BENCH_REQUIRE_{engine.upper()}")


@pytest.fixture(scope="module")
def podman():
    require_engine("podman")


def engine_image_id(engine: str, image: str) -> str:
    out = subprocess.run(
        [engine, "image", "inspect", "--format", "{{.Id}}", containers.image_reference(image)],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_a_docker_without_its_daemon_is_named_with_the_command_that_starts_it(tmp_path, monkeypatch):
    docker = tmp_path / "docker"
    docker.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert engine_problem("docker") == (
        "`docker info` fails, so docker cannot run containers: "
        "apt-get install docker.io, then docker/dockerd.sh start (as root)"
    )


@pytest.mark.containers
@pytest.mark.workflow
@pytest.mark.parametrize("engine", ["podman", "docker"])
def test_tiny_study_runs_every_job_in_its_image(engine, workflow_dir):
    require_engine(engine)
    # Every rung of the tiny study once: a second repeat runs the same command in the same image.
    config = write_config(workflow_dir, f"{engine}.yaml", container_engine=engine, images=CPU_IMAGES, repeats=1)
    commit = commit_all(workflow_dir)
    result = run_snakemake(workflow_dir, "--cores", 2, "--configfile", config)
    assert result.returncode == 0, result.stderr[-5000:]
    ids = {name: engine_image_id(engine, image) for name, image in CPU_IMAGES.items()}
    records = sorted((workflow_dir / "results" / "runs").glob("*.json"))
    assert len(records) == 16  # the tiny study's 16 framework-device-rung runs
    for path in records:
        record = read_record(path)
        image = catalogue.framework(record["identity"]["framework"]).image
        container = record["environment"]["container"]
        assert container == {
            "engine": engine,
            "image": containers.image_reference(CPU_IMAGES[image]),
            "image_id": ids[image],
        }, path.name
        # The image's interpreter and CPU builds ran, not this environment's, on the workspace's code: its
        # commit, which the image (no git there) was told.
        assert record["environment"]["host"] == socket.gethostname()
        assert record["environment"]["git_commit"] == commit, path.name
        expected = "skipped" if record["identity"]["device"] == "cuda" else "ok"
        assert record["status"] == expected, (path.name, record["reason"])
        if record["status"] == "skipped":
            assert "no CUDA device" in record["reason"]
    for device in ("cpu", "cuda"):
        sweep = read_sweep(workflow_dir / "results" / "sweep" / f"{device}.json")
        assert sweep["environment"]["container"]["engine"] == engine
    # Files the containers wrote belong to the caller, and the report names the images.
    assert all(p.stat().st_uid == os.getuid() for p in records)
    report = (workflow_dir / "results" / "report.md").read_text()
    short_id = ids["torch"].removeprefix("sha256:")[:12]
    assert f"{engine} ghcr.io/tiny-mlp-bench/torch:{VERSION}-cpu ({short_id})" in report
    log = (workflow_dir / "logs" / "train" / "torch-cuda-seed-1.log").read_text()
    assert f"warning: no GPU passed to the {engine} container" in log


def test_version_1_records_read_in_todays_shape():
    # Written on an NVIDIA H200 node before the container block had its fields (its image has /.dockerenv).
    record = read_record(ROOT / "tests" / "data" / "h200-2026-11-29" / "runs" / "torch-cuda-graphed-2.json")
    assert record["schema_version"] == SCHEMA_VERSION and record["load"] is None  # not measured then
    # Timed a block an epoch, a sync each, the compiler's shared cache, the clock's work in the next block.
    assert record["method"] == {
        "block": "epoch",
        "sync": "block end",
        "compile_cache": "shared",
        "own_work": "next block",
    }
    assert record["parameters"]["init"] is None  # nor how the weights were drawn
    assert record["environment"]["container"] == {"engine": "docker", "image": None, "image_id": None}
    # Its epochs became one-epoch blocks and its phase keys one phases_s block.
    timings = record["timings"]
    assert set(timings["phases_s"]) == {"import", "setup", "fit", "predict"}
    assert timings["block_epochs"] == [1] * 1000 and len(timings["block_s"]) == 1000


def test_version_5_records_keep_the_method_they_were_timed_with():
    # Records of version 5 (run and sweep) and probe version 1, as the archive 2026-12-02-cpu-2core holds
    # them (commit 2ce68c3): its torch-cpu fused_epoch-1 run, its cpu sweep and its torch-cpu probe.
    version5 = ROOT / "tests" / "data" / "version5"
    fused = read_record(version5 / "run.json")
    assert fused["method"] == {"block": "call", "sync": "block end", "compile_cache": "cold", "own_work": "next block"}
    assert fused["method"] != METHOD and "block_cpu_s" not in fused["timings"]  # not measured then
    assert fused["load"]["kernel"] is None and fused["load"]["started_at"] is None  # unknown, not zero
    sweep = read_sweep(version5 / "sweep.json")
    assert sweep["schema_version"] == SCHEMA_VERSION and sweep["method"] == fused["method"]
    probe = read_probe(version5 / "probe.json")
    assert probe["schema_version"] == PROBE_SCHEMA_VERSION and probe["method"]["own_work"] == "between blocks"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["FLAVOR=gpu"], "error: FLAVOR must be cuda or cpu, not 'gpu'"),
        (["ENGINE=no-such-engine"], "error: no 'no-such-engine' on PATH: install Podman"),
    ],
)
def test_make_images_refuses_a_wrong_flavor_or_engine(args, expected):
    result = subprocess.run(["make", "-s", "-C", str(ROOT), "image-keras", *args], capture_output=True, text=True)
    assert result.returncode != 0 and expected in result.stderr


@pytest.mark.parametrize(("version", "builds"), [("28.2.2", False), ("20.10.24+dfsg1", True)])
def test_make_images_names_the_docker_client_that_can_build(tmp_path, version, builds):
    # Docker clients from 23 on build with BuildKit only through the buildx plugin; Debian's 20.10
    # builds without it. This stand-in client has no buildx and echoes the build it is asked for.
    docker = tmp_path / "docker"
    docker.write_text(
        "#!/bin/sh\n"
        f'case "$1" in version) echo {version} ;; buildx) exit 1 ;;\n'
        '  build) echo "built with BuildKit=$DOCKER_BUILDKIT" ;; esac\n'
    )
    docker.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "image-keras", "ENGINE=docker", f"DOCKER={docker}"],
        capture_output=True,
        text=True,
        env=env,
    )
    if builds:
        assert result.returncode == 0 and "built with BuildKit=1" in result.stdout, result.stderr
    else:
        assert result.returncode != 0
        assert f"Docker client {version}) builds with BuildKit only through the buildx plugin" in result.stderr
        assert "make images ENGINE=docker DOCKER=/usr/bin/docker" in result.stderr


@pytest.mark.containers
def test_a_build_without_its_packages_says_how_to_build_offline(podman):
    # pip may not use the network and the wheelhouse lacks TensorFlow: the build must stop with
    # the paragraph that says what to pass, not with pip's error alone. Built on the CPU image's
    # own base, so the layers before pip come from the cache and need no network either.
    keras = containers.image_reference(CPU_IMAGES["keras"])
    label = '{{index .Labels "org.opencontainers.image.base.name"}}'
    inspect = ["podman", "image", "inspect", "--format", label, keras]
    base = subprocess.run(inspect, capture_output=True, text=True, check=True).stdout.strip()
    build_args = ["--build-arg", "FLAVOR=cpu", "--build-arg", "PIP_NO_INDEX=1", "--build-arg", f"BASE_IMAGE={base}"]
    result = subprocess.run(
        ["podman", "build", "--force-rm", "--network=none", "-f", "docker/keras.Dockerfile", *build_args, "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "ERROR: pip could not install the image's packages" in output
    assert "--secret id=ca_bundle" in output and "--build-arg PIP_NO_INDEX=1" in output


# --- the CUDA images, on a host without a GPU ------------------------------------------------------

CUDA_IMAGES = {name: image.removesuffix("-cpu") for name, image in CPU_IMAGES.items()}


@pytest.fixture(scope="module")
def cuda_images():
    """Podman with the CUDA builds of both images (`make images ENGINE=podman`, FLAVOR=cuda the default)."""
    problem = engine_problem("podman")
    for image in CUDA_IMAGES.values():
        name = containers.image_reference(image)
        if not problem and subprocess.run(["podman", "image", "inspect", name], capture_output=True).returncode:
            problem = f"image {name} is not built: make images ENGINE=podman (the CUDA flavor; docs/containers.md)"
    skip_unless_ready(problem, "TINY_MLP_BENCH_REQUIRE_CUDA_IMAGES")


def in_image(image: str, *command: str) -> str:
    done = subprocess.run(
        ["podman", "run", "--rm", containers.image_reference(CUDA_IMAGES[image]), *command],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.containers
@pytest.mark.parametrize(
    ("image", "build_check"),
    [
        ("torch", "import torch, importlib.metadata as m; print(torch.version.cuda, m.version('jax-cuda13-plugin'))"),
        (
            "keras",
            "import tensorflow as t; print(t.test.is_built_with_cuda(), t.sysconfig.get_build_info()['cuda_version'])",
        ),
    ],
)
def test_each_cuda_image_holds_exactly_its_lock_and_cuda_builds(cuda_images, image, build_check):
    lock = (ROOT / "requirements" / f"{image}-cuda.txt").read_text()
    locked = set(re.findall(r"^(\S+==\S+) --hash", lock, re.MULTILINE))
    frozen = in_image(image, "python", "-m", "pip", "freeze", "--all", "--exclude", "pip").split()
    assert {canonical(pin.split("==")[0]) + "==" + pin.split("==")[1] for pin in frozen} == locked
    built = in_image(image, "python", "-c", build_check).split()
    if image == "torch":
        assert built[0].startswith("13.") and f"jax-cuda13-plugin=={built[1]}" in locked
    else:
        assert built[0] == "True" and built[1].startswith("12.")


@pytest.mark.containers
@pytest.mark.workflow
def test_cuda_steps_in_the_cuda_images_are_skipped_naming_their_versions(cuda_images, workflow_dir):
    # No GPU here, so no GPU driver in the containers either: each cuda step runs in its CUDA image and
    # records `skipped` without importing its framework, naming the versions the image installed.
    config = write_config(workflow_dir, "cuda-images.yaml", container_engine="podman", images=CUDA_IMAGES, repeats=1)
    runs = ["torch-cuda-seed-1", "jax-cuda-scan-1", "keras_jax-cuda-seed-1", "keras-cuda-seed-1"]
    targets = [f"results/runs/{run}.json" for run in runs]
    result = run_snakemake(workflow_dir, *targets, "--cores", 2, "--configfile", config)
    assert result.returncode == 0, result.stderr[-5000:]
    for run in runs:
        record = read_record(workflow_dir / "results" / "runs" / f"{run}.json")
        assert record["status"] == "skipped" and "no GPU driver" in record["reason"], (run, record["reason"])
        listed = catalogue.framework(record["identity"]["framework"])
        lock = (ROOT / "requirements" / f"{listed.image}-cuda.txt").read_text()
        for package in listed.packages:
            pinned = re.search(rf"^{package.replace('_', '[-_]')}==(\S+) ", lock, re.MULTILINE | re.IGNORECASE)
            assert record["environment"]["versions"][package] == pinned.group(1), (run, package)
        image = CUDA_IMAGES[listed.image]
        assert record["environment"]["container"]["image"] == containers.image_reference(image)
