"""What the tests share besides their fixtures: the repository's paths, the config's defaults as flags,
the programs run as a rule or a user runs them, synthetic records, and a copy of the workflow to run."""

from __future__ import annotations

import ast
import functools
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tiny_mlp_bench.backends.contract import RunSpec
from tiny_mlp_bench.initial_weights import live_initial_weights
from tiny_mlp_bench.jobs import identity
from tiny_mlp_bench.jobs.probe import probe_job
from tiny_mlp_bench.jobs.run import training_job
from tiny_mlp_bench.jobs.sweep import sweep_job
from tiny_mlp_bench.kinds import BUSY_STUDY, DEFAULT_STUDY, GPU_STUDY
from tiny_mlp_bench.records import PROBE_SCHEMA_VERSION, SCHEMA_VERSION
from tiny_mlp_bench.timing import METHOD

ROOT = Path(__file__).resolve().parents[1]


SCRIPTS = ROOT / "scripts"


CONFIG_SCHEMA = ROOT / "config" / "config.schema.yaml"


TEST_DATA = ROOT / "tests" / "data"


# What a user's clone needs to run the workflow.
WORKFLOW_FILES = ["Snakefile", "rules", "scripts", "tiny_mlp_bench", "config", "profiles", "requirements"]


def torch_has_cuda() -> bool:
    """Whether a CUDA device is usable, asked in a subprocess so tests don't import torch."""
    probe = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def skip_unless_ready(problem: str | None, require_variable: str) -> None:
    """Skip with the reason when a test's service is missing; fail instead where CI sets the variable to 1."""
    if problem and os.environ.get(require_variable) == "1":
        pytest.fail(f"{require_variable}=1 but {problem}")
    if problem:
        pytest.skip(problem)


@functools.cache
def package_index_problem() -> str | None:
    """Why the package index pip uses cannot be reached, or None: pip itself asks it, as the network
    tests' pip calls do (tiny_mlp_bench/locks/pip_index.py: the configured index-url, else pip's own default)."""
    from tiny_mlp_bench.locks import pip_index

    command = pip_index.pip_command("index", "versions", "--retries", "0", "--timeout", "20", "pip")
    done = subprocess.run(command, env=pip_index.pip_env(), capture_output=True, text=True)
    if done.returncode == 0:
        return None
    said = (done.stderr.strip().splitlines() or ["no message"])[-1]
    return f"the package index ({pip_index.index_name()}) cannot be reached: {said}"


def schema_default(spec: dict):
    """A schema node's default as Snakemake's validate fills it in: an object's own default, with
    what it leaves out taken from its properties' defaults; None where neither gives one."""
    parts = {name: schema_default(part) for name, part in spec.get("properties", {}).items()}
    parts = {name: value for name, value in parts.items() if value is not None}
    if "default" in spec and not isinstance(spec["default"], dict):
        return spec["default"]
    if "default" not in spec and not parts:
        return None
    return parts | spec.get("default", {})


@functools.cache
def schema_defaults() -> dict:
    """The workflow's config at the schema's defaults (keys without one left out)."""
    return schema_default(yaml.safe_load(CONFIG_SCHEMA.read_text()))


def config_flags(program: str) -> list[str]:
    """The flags the rules pass ``program`` (a file in scripts/) from the config, at the schema's
    defaults, with --threads 1 (the rules' cpu_threads 0 means every core). The programs have no
    defaults of their own for these, so a test starts from this and appends its own flags: argparse
    keeps the last. train.py's also name a job, as its rule's wildcards do: on cpu, repeat 1, the
    framework's first rung; probe_fixed_costs.py's and sweep_crossover.py's name cpu too."""
    config = schema_defaults()
    # A tenth of a second of steady state, not the default's second: every test run would pay it.
    job = identity.Job("train", "cpu", "torch", "seed", 1)
    train = training_job(config | {"steady_window_s": 0.1}, job, threads=1)
    probe = probe_job(config, identity.Job("probe_fixed_costs", "cpu", "torch"), threads=1)
    sweep = sweep_job(config, identity.Job("sweep_crossover", "cpu"), threads=1)
    flags = {
        "make_dataset.py": ["--seed", config["seed"], "--n-rows", config["n_rows"]],
        "train.py": train.flags(leave_out=("framework", "variant", "dataset", "output")),
        "probe_fixed_costs.py": probe.flags(leave_out=("framework", "dataset", "output")),
        "sweep_crossover.py": sweep.flags(leave_out=("output",)),
    }[program]
    return [str(flag) for flag in flags]


def run_script(name: str, *args, check: bool = False) -> subprocess.CompletedProcess:
    """Run one of the command-line programs the way a rule does."""
    return subprocess.run(
        [sys.executable, str(SCRIPTS / name), *map(str, args)], capture_output=True, text=True, check=check
    )


def program_module(program: str):
    """The package module whose ``main`` a rule's program in scripts/ runs (the thin file imports it)."""
    module = re.search(r"^from (\S+) import main$", (SCRIPTS / program).read_text(), re.MULTILINE).group(1)
    return importlib.import_module(module)


def run_command(name: str, *args) -> subprocess.CompletedProcess:
    """Run one of the program's commands the way a user does: `tiny-mlp-bench <name> ...`."""
    return subprocess.run(
        [sys.executable, "-m", "tiny_mlp_bench", name, *map(str, args)], capture_output=True, text=True, cwd=ROOT
    )


def copy_workflow(directory: Path) -> Path:
    """Copy the workflow as a user's clone would have it, with no results, plus tiny.yaml."""
    for name in WORKFLOW_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, directory / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, directory / name)
    shutil.copy2(ROOT / "config" / "quick.yaml", directory / "tiny.yaml")
    return directory


def commit_all(directory: Path) -> str:
    """Make ``directory`` a git repository with everything in it committed; returns the commit."""
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(directory), *command], check=True, capture_output=True)
    head = ["git", "-C", str(directory), "rev-parse", "HEAD"]
    return subprocess.run(head, check=True, capture_output=True, text=True).stdout.strip()


def run_snakemake(directory: Path, *args, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the snakemake of this environment in ``directory``; its log is in .stderr."""
    snakemake = Path(sys.executable).with_name("snakemake")
    return subprocess.run(
        [str(snakemake), *map(str, args)],
        cwd=directory,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def table_rows(text: str) -> list[list[str]]:
    """Every Markdown table row in ``text`` as its stripped cells (tabulate pads them)."""
    return [[cell.strip() for cell in line.strip()[1:-1].split("|")] for line in text.splitlines() if line[:1] == "|"]


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
    step_ms=1.0,
    stack="today",
) -> dict:
    """A valid run record with round, hand-checkable numbers, for report and schema tests.

    Epochs: a 0.5 s first epoch, then epochs of 12 steps at ``step_ms`` (one of them twice as slow).
    """
    ok = status == "ok"
    timings = {"phases_s": {"import": 1.5}}
    if ok:
        later = step_ms * 12 / 1000
        epochs = [0.5, later, 2 * later, later]
        timings = {
            "phases_s": {
                "import": 1.5,
                "setup": 0.25,
                **{"startup": 0.05, "data": 0.05, "model": 0.1, "optimizer": 0.05},  # the set-up's parts
                "fit": sum(epochs),
                "predict": 0.004,
            },
            "fit_predict_s": fit_predict_s,
            "block_s": epochs,
            "block_cpu_s": [0.9 * seconds for seconds in epochs],
            "block_epochs": [1, 1, 1, 1],
            "steps_per_epoch": 12,
        }
    return {
        "record_type": "tiny-mlp-bench.run",
        "schema_version": SCHEMA_VERSION,
        "identity": {
            "run_id": f"{framework}-{device}-{variant}-{'' if stack == 'today' else stack + '-'}{repeat}",
            "framework": framework,
            "device": device,
            "variant": variant,
            "repeat": repeat,
            "started_at": f"2026-01-01T00:0{repeat}:00+00:00",
            "condition": "idle",
            "stack": stack,
        },
        "status": status,
        "reason": reason,
        "parameters": {
            "seed": 42,
            "init_seed": 41 + repeat,
            "init": {"scheme": "test draw", "dead_draws_skipped": 0},
            "n_rows": 1000,
            "n_train": 750,
            "n_test": 250,
            "epochs": 4,
            "batch_size": 64,
            "learning_rate": 0.001,
            "hidden_units": 20,
            "threads": 2,
            "variant_details": {"adam": "test"} if ok else {},
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
        "method": dict(METHOD),
        "environment": {
            "python": "3.11.7",
            "versions": {"numpy": "2.4.6", framework: "1.0"},
            "cpu_model": "Test CPU",
            "cpu": {"vendor": "GenuineIntel", "family": 6, "model": 85, "stepping": 7, "flags_sha256": "0123456789ab"},
            "cpu_mhz": 2100.0,
            "logical_cpus": 2,
            "kernel": "6.1.0-test",
            "virtualization": "kvm",
            "host": host,
            "threads": {"intra_op": 2, "inter_op": 2},
            "thread_env": {"OMP_NUM_THREADS": "2"},
            "cuda": {"build_cuda": None, "build_cudnn": None, "driver": None},
            "gpu_name": None,
            "slurm_job_id": None,
            "slurm_node": None,
            "slurm_gpus": None,
            "container": None,
            "git_commit": "abc123",
            "dataset_sha256": "0" * 64,
        },
        "load": {
            "started_at": f"2026-01-01T00:0{repeat}:00.250000+00:00",
            "ended_at": f"2026-01-01T00:0{repeat}:09.500000+00:00",
            "before": {"load_average": [0.5, 0.75, 1.0], "cpu_mhz": 2100.0},
            "after": {"load_average": [1.5, 1.0, 1.0], "cpu_mhz": 2000.0},
            "kernel": {"stolen_s": 0.0, "cpu_pressure_s": 0.5, "run_queue_wait_s": 0.25, "involuntary_switches": 40},
            "peak_host_memory_mb": 512.0,
            "peak_gpu_memory_mb": None,
        },
    }


def synthetic_study() -> list[dict]:
    """torch-cpu seed 6/7/8 s at 1 ms/step (one not converged), sync_free 0.25 ms/step, compiled
    0.1 ms/step, tf_keras-cpu (Keras 2) seed 3/4/5 s at 2 ms/step, keras-cpu (Keras 3) seed 3/4/5 s at
    2 ms/step, steps_per_execution 1.6 ms/step, NumPy 0.08 ms/step, its numba floor rung 0.005 ms/step;
    the cuda seed runs skipped."""
    no_gpu = "no CUDA device: test"
    return [
        synthetic_record("torch", "cpu", 1, 7.0, converged=False),
        synthetic_record("torch", "cpu", 2, 6.0),
        synthetic_record("torch", "cpu", 3, 8.0),
        *(synthetic_record("torch", "cpu", r, 2.0, variant="sync_free", step_ms=0.25) for r in (1, 2, 3)),
        *(synthetic_record("torch", "cpu", r, 2.0, variant="compiled", step_ms=s) for r, s in ((1, 0.1), (2, 0.2))),
        *(synthetic_record("tf_keras", "cpu", r, t, step_ms=2.0) for r, t in ((1, 4.0), (2, 3.0), (3, 5.0))),
        synthetic_record("keras", "cpu", 1, 4.0, step_ms=2.0),
        synthetic_record("keras", "cpu", 2, 3.0, step_ms=2.0),
        synthetic_record("keras", "cpu", 3, 5.0, step_ms=2.0),
        synthetic_record("keras", "cpu", 1, 3.5, variant="steps_per_execution", step_ms=1.6),
        synthetic_record("numpy", "cpu", 1, 1.0, variant="reference", step_ms=0.08),
        synthetic_record("numpy", "cpu", 1, 0.5, variant="fused", step_ms=0.005),
        synthetic_record("torch", "cuda", 1, status="skipped", reason=no_gpu),
        synthetic_record("tf_keras", "cuda", 1, status="skipped", reason=no_gpu),
        synthetic_record("keras", "cuda", 1, status="skipped", reason=no_gpu),
    ]


def synthetic_sweeps() -> list[dict]:
    """cpu and cuda sweeps: at width 20 cuda wins from batch 4096 on; at width 4 it never does."""
    run = synthetic_record("torch", "cpu", 1, 1.0)
    env, load = run["environment"], run["load"]
    cpu = {(4, 64): 0.1, (4, 4096): 0.2, (20, 64): 0.1, (20, 4096): 2.0, (20, 65536): 30.0}
    cuda = {(4, 64): 0.5, (4, 4096): 0.5, (20, 64): 0.5, (20, 4096): 0.6, (20, 65536): 0.9}

    def sweep(device, times):
        points = [
            {
                "batch_size": b,
                "hidden_units": w,
                "step_s": ms / 1e3,
                "block_step_s": [ms / 1e3] * 3,
                "block_cpu_step_s": [ms / 1e3] * 3,
            }
            for (w, b), ms in times.items()
        ]
        return {
            "record_type": "tiny-mlp-bench.sweep",
            "schema_version": SCHEMA_VERSION,
            "device": device,
            "variant": "sync_free",
            "steps": 10,
            "blocks": 3,
            "status": "ok",
            "reason": None,
            "peak_gflops": 100.0 if device == "cpu" else 10000.0,
            "points": points,
            "method": dict(METHOD),
            "environment": env,
            "load": load,
        }

    return [sweep("cpu", cpu), sweep("cuda", cuda)]


def synthetic_probes(cuda: bool = False) -> list[dict]:
    """Probe records: torch-cpu (eager op 5 µs; a 300 µs step (290-320 over 3 repeats) of 200 aten ops, 100 of them
    leaves, whose self time is 160 µs under the profiler at 0.3 µs per op; 315 of 1000 draws dead, and as its probe
    measured before the fused_epoch runs did, fused_epoch's call 240 µs for 12 steps, 120 of them in its
    kernel), keras-cpu (Keras 3: 24 ms per fit epoch, 250 µs per step) and tf_keras-cpu (Keras 2: 3 ms
    per fit epoch, 300 µs per step); torch-cuda measured (25 kernels, 9 µs eager, 0.9 µs in a graph)
    with ``cuda`` as a probe from before the step's parts were measured, else skipped."""
    run = synthetic_record("torch", "cpu", 1, 1.0)

    def probe(framework, device, measurements, status="ok", reason=None):
        return {
            "record_type": "tiny-mlp-bench.probe",
            "schema_version": PROBE_SCHEMA_VERSION,
            "framework": framework,
            "device": device,
            "status": status,
            "reason": reason,
            "parameters": {"batch_size": 64, "hidden_units": 20, "learning_rate": 0.001, "threads": 2, "init_seed": 42},
            "measurements": measurements,
            "method": dict(METHOD),
            "environment": run["environment"],
            "load": run["load"],
        }

    def timed(us):
        return {"value_us": us, "calls": 10, "repeats": 3, "repeat_us": [us] * 3, "repeat_cpu_us": [us] * 3}

    torch_cpu = {
        "eager_op_us": timed(5.0),
        "seed_step": timed(300.0)
        | {"repeat_us": [290.0, 300.0, 320.0]}
        | {"adam": "for-loop", "profiled_steps": 10, "aten_calls_per_step": 200, "leaf_aten_ops_per_step": 100}
        | step_parts_fields(aten_self_us=160.0, cost_per_op_us=0.3),
        "initialisation": {"draws": 1000, "dead": 315, "scheme": "test"},
        # fused_epoch's compiled call: 20 µs a step, half of it in its fused kernel.
        "fused_epoch_call": timed(240.0) | {"steps_per_call": 12, "profiled_calls": 100, "kernel_us": 120.0},
    }
    keras_cpu = {
        "fit_epoch": {
            "one_step_epoch": timed(24250.0),
            "many_step_epoch": timed(27000.0),
            "steps_per_epoch": 12,
            "fits": 3,
            "per_step_us": 250.0,
            "fixed_per_epoch_us": 24000.0,
        }
    }
    tf_keras_cpu = {
        "fit_epoch": {
            "one_step_epoch": timed(3300.0),
            "many_step_epoch": timed(6600.0),
            "steps_per_epoch": 12,
            "fits": 3,
            "per_step_us": 300.0,
            "fixed_per_epoch_us": 3000.0,
        }
    }
    torch_cuda = {
        "eager_op_us": timed(9.0),
        "seed_step": timed(1100.0)
        | {"adam": "foreach", "profiled_steps": 10, "aten_calls_per_step": 200, "leaf_aten_ops_per_step": 100}
        | {"kernels_per_step": 25, "kernel_launch_calls_per_step": 24},
        "sync_empty_us": timed(7.0),
        "graph_replay_1kernel_us": timed(4.4),
        "graph_kernel_inside_us": timed(0.9) | {"kernels_per_call": 100},
    }
    cuda_probe = probe("torch", "cuda", torch_cuda) if cuda else probe("torch", "cuda", {}, "skipped", "no GPU: test")
    keras_probes = [probe("tf_keras", "cpu", tf_keras_cpu), probe("keras", "cpu", keras_cpu)]
    return [probe("torch", "cpu", torch_cpu), *keras_probes, cuda_probe]


def step_parts_fields(aten_self_us: float, cost_per_op_us: float, launch_us: float | None = None) -> dict:
    """A probe's seed_step fields that split the step into parts (probes/torch_step.py); ``launch_us`` on cuda."""

    def timed(us):
        return {"value_us": us, "calls": 2000, "repeats": 3, "repeat_us": [us] * 3, "repeat_cpu_us": [us] * 3}

    found = {
        "profiled_wall_us_per_step": 450.0,
        "aten_self_us_per_step": aten_self_us,
        "aten_self_by_op": {
            "aten::addmm": {"calls_per_step": 2.0, "self_us_per_step": aten_self_us / 2},
            "aten::t": {"calls_per_step": 198.0, "self_us_per_step": aten_self_us / 2},
        },
        "profiler_cost_per_op": {
            "op": "aten::view",
            "unprofiled": timed(1.0),
            "profiled": timed(1.0 + cost_per_op_us),
            "per_op_us": cost_per_op_us,
        },
    }
    return found | ({} if launch_us is None else {"launch_self_us_per_step": launch_us})


# Runs a program (argv[2:]) as its rule does, but with the GPU driver's signs (GPU_DRIVER_PATHS) the
# JSON list argv[1], whatever this machine has; then says on stderr which frameworks it imported.
WITH_DRIVER_PATHS = """import json, runpy, sys
from tiny_mlp_bench import machine
machine.GPU_DRIVER_PATHS = tuple(json.loads(sys.argv[1]))
sys.argv = sys.argv[2:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    print("imported:", sorted(m for m in ("jax", "keras", "tensorflow", "torch") if m in sys.modules), file=sys.stderr)
"""


# A path that exists, as the GPU driver's sign: a cuda job seeing it asks its framework for the GPU.
A_GPU_DRIVER = (ROOT,)


def with_driver_paths(paths, command) -> list[str]:
    """The command line that runs ``command`` (a program and its arguments) seeing ``paths`` as the driver's signs."""
    return [sys.executable, "-c", WITH_DRIVER_PATHS, json.dumps([str(p) for p in paths]), *map(str, command)]


def run_seeing(driver_paths, program: str, *args, check: bool = False) -> subprocess.CompletedProcess:
    """Run scripts/<program> as run_script does, seeing ``driver_paths`` as the GPU driver's signs."""
    command = with_driver_paths(driver_paths, [SCRIPTS / program, *args])
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    return subprocess.run(command, env=env, capture_output=True, text=True, check=check)


def write_config(directory, name: str, **changes) -> str:
    """tiny.yaml with some keys changed, saved as ``name``; returns the name for --configfile."""
    config = yaml.safe_load((directory / "tiny.yaml").read_text()) | changes
    (directory / name).write_text(yaml.safe_dump(config))
    return name


# The trajectory tests' few epochs, and the run they train each rung with.
TRAJECTORY_EPOCHS = 3


def spec_for(
    variant: str, data, seed: int = 5, device: str = "cpu", epochs: int = TRAJECTORY_EPOCHS, compile_cache=None
) -> RunSpec:
    return RunSpec(
        device=device,
        variant=variant,
        repeat=1,
        init_seed=seed,
        weights=live_initial_weights(seed, 20, data.train[:, :2]),
        epochs=epochs,
        batch_size=64,
        learning_rate=0.01,  # larger than the question's, so three epochs move the weights visibly
        hidden_units=20,
        threads=1,
        compile_cache=None if compile_cache is None else str(compile_cache),
    )


def write_study(
    root, name: str, keras_s=(), torch_s=(), cuda_s=(), gpu: str | None = None, day="2026-01-01", condition="idle"
):
    """An archive of Keras 2's and torch's original loops on cpu (and torch's on cuda) with these times to a
    result; each run's step is its time over 4000, so that per step and to a result agree. Called again for the
    same folder with ``condition="busy"``, it adds runs beside a busy core and makes it a busy-core study."""
    folder = root / name
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    kind = GPU_STUDY if gpu else BUSY_STUDY if condition == "busy" else DEFAULT_STUDY
    (folder / "provenance.json").write_text(json.dumps({"study": {"kind": kind}}))
    sides = (("tf_keras", "cpu", keras_s), ("torch", "cpu", torch_s), ("torch", "cuda", cuda_s))
    for framework, device, times in sides:
        for repeat, seconds in enumerate(times, start=1):
            record = synthetic_record(framework, device, repeat, seconds, step_ms=seconds / 4)
            record["identity"]["started_at"] = f"{day}T00:0{repeat}:00+00:00"
            record["environment"]["gpu_name"] = gpu if device == "cuda" else None
            if condition == "busy":
                record["identity"] |= {"condition": "busy", "run_id": f"{framework}-{device}-seed-busy-{repeat}"}
            path = folder / "runs" / f"{record['identity']['run_id']}.json"
            path.write_text(json.dumps(record))
    return folder


PARTS_SHARES = {"fetch": 0.25, "copy": 0.05, "zero_grad": 0.1, "forward": 0.2, "backward": 0.2, "optimizer": 0.1}


def parts_run(repeat: int, shares: dict = PARTS_SHARES, device: str = "cpu") -> dict:
    """A torch `parts` run whose parts are fixed shares of every block: hand-checkable means."""
    record = synthetic_record("torch", device, repeat, 6.0, variant="parts")
    timings = record["timings"]
    timings["block_part_s"] = {part: [s * block for block in timings["block_s"]] for part, s in shares.items()}
    record["parameters"]["variant_details"] |= {"clock_reads_per_step": "7", "clocksource": "tsc"}
    return record


# An older stack's runner imports the clock on the oldest Python its image has (Debian bullseye's).
OLDEST_PYTHON = (3, 9)


def written_for_python_3_9(path: Path) -> set[str]:
    """Fails where ``path`` uses grammar or calls newer than Python 3.9; returns the top-level modules it imports at run
    time (those under an ``if TYPE_CHECKING:`` at module level left out)."""
    tree = ast.parse(path.read_text(), feature_version=OLDEST_PYTHON)  # no match statements, no newer grammar
    # Grammar 3.9 parses, but 3.10's calls fail there at run time: zip(strict=...), itertools.pairwise.
    strict = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.keyword) and node.arg == "strict"]
    assert strict == [], f"zip(strict=...) is Python 3.10: {path.name} lines {strict}"
    newer = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, (ast.Name, ast.Attribute))
        and (getattr(node, "id", None) == "pairwise" or getattr(node, "attr", None) == "pairwise")
    ]
    assert newer == [], f"itertools.pairwise is Python 3.10: {path.name} lines {newer}"
    checked_only = {id(n) for node in tree.body if isinstance(node, ast.If) for n in ast.walk(node)}  # TYPE_CHECKING
    return {
        alias.name if isinstance(node, ast.Import) else node.module
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in checked_only
        for alias in node.names
    }
