"""The cuda paths measure what they claim, checked without a GPU: the environment a job starts with,
the call order around the clock, recorded event lists, and the report's reading of the records."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import helpers
from helpers import (
    A_GPU_DRIVER,
    ROOT,
    SCRIPTS,
    config_flags,
    run_seeing,
    synthetic_probes,
    synthetic_record,
    synthetic_study,
    with_driver_paths,
)
from tiny_mlp_bench import catalogue, machine, registry
from tiny_mlp_bench.backends.contract import GPU_EPOCHS_PER_BLOCK, EpochLoop, RunSpec
from tiny_mlp_bench.initial_weights import live_initial_weights
from tiny_mlp_bench.jobs import probe as probe_command
from tiny_mlp_bench.jobs import run as run_command
from tiny_mlp_bench.machine import installed_versions
from tiny_mlp_bench.probes.torch_step import count_kernels, host_self_times, launches_counted_twice
from tiny_mlp_bench.records import read_probe, read_record, read_sweep
from tiny_mlp_bench.report.markdown import render_markdown
from tiny_mlp_bench.report.model import build_report
from tiny_mlp_bench.timing import Clock

# A stand-in torch that writes down the CUDA_VISIBLE_DEVICES it was imported under, then refuses.
STAND_IN_TORCH = """import json, os
with open(os.environ["SEEN_BY_TORCH"], "w") as seen:
    json.dump(os.environ.get("CUDA_VISIBLE_DEVICES"), seen)
raise ImportError("the stand-in torch stops here")
"""


def jobs_of(device: str, dataset) -> dict[str, list[str]]:
    """Every kind of job that imports torch, for ``device``, as the rules start them."""

    def job(program: str, *args) -> list[str]:
        return [str(SCRIPTS / program), *config_flags(program), "--device", device, *map(str, args)]

    train = job("train.py", "--dataset", dataset, "--framework")
    probe = job("probe_fixed_costs.py", "--framework", "torch", "--dataset", dataset)
    sweep = job("sweep_crossover.py", "--batch-sizes", 64, "--hidden-units", 20)
    out = ["--output", "/nonexistent/never-written.json"]
    return {
        "train torch": [*train, "torch", *out],
        "train keras_torch": [*train, "keras_torch", *out],
        "probe torch": [*probe, *out],
        "sweep": [*sweep, *out],
    }


def torch_saw(command: list[str], tmp_path) -> str | None:
    """What CUDA_VISIBLE_DEVICES the job's torch was imported under (the job itself stops there)."""
    (tmp_path / "torch").mkdir(exist_ok=True)
    (tmp_path / "torch" / "__init__.py").write_text(STAND_IN_TORCH)
    seen = tmp_path / "seen.json"
    seen.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env |= {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "SEEN_BY_TORCH": str(seen)}
    # A GPU driver shows, so that a cuda job imports torch to ask it (without one it would not import it).
    done = subprocess.run(with_driver_paths(A_GPU_DRIVER, command), env=env, capture_output=True, text=True)
    assert "the stand-in torch stops here" in done.stderr, done.stderr[-2000:]
    return json.loads(seen.read_text())


@pytest.mark.parametrize("job", ["train torch", "train keras_torch", "probe torch", "sweep"])
def test_a_cpu_job_hides_the_gpu_before_torch_starts_and_a_cuda_job_does_not(job, small_dataset, tmp_path):
    assert torch_saw(jobs_of("cpu", small_dataset)[job], tmp_path) == ""
    assert torch_saw(jobs_of("cuda", small_dataset)[job], tmp_path) is None


NO_CUDA = {"build_cuda": None, "build_cudnn": None, "driver": None}


@pytest.fixture
def no_gpu_driver(monkeypatch, tmp_path) -> str:
    """No sign of a GPU driver, whatever this machine has; returns the reason a cuda job is skipped."""
    monkeypatch.setattr(machine, "GPU_DRIVER_PATHS", (str(tmp_path / "no-proc-driver"), str(tmp_path / "no-dev")))
    return machine.gpu_driver_absent()


def not_to_be_imported(*args):
    raise AssertionError("the framework was imported")


def cuda_args(program: str, framework: str, dataset, out, *extra) -> list[str]:
    """The command line of a cuda training run (``program`` train.py) or probe (probe_fixed_costs.py) of
    ``framework``, at the config's defaults."""
    job = ["--framework", framework, "--device", "cuda", "--dataset", str(dataset), "--output", str(out), *extra]
    return [*config_flags(program), *job]


def test_a_machine_shows_a_gpu_driver_by_any_one_of_its_paths_and_by_no_variable(monkeypatch, tmp_path):
    driver_paths = (tmp_path / "proc-driver-nvidia", tmp_path / "dev-kfd")
    monkeypatch.setattr(machine, "GPU_DRIVER_PATHS", tuple(map(str, driver_paths)))
    # A CUDA simulator or a device list in the environment is no run_command.
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert machine.gpu_driver_absent() == (
        f"no CUDA device: no GPU driver on this machine (none of {driver_paths[0]}, {driver_paths[1]})"
    )
    driver_paths[1].touch()
    assert machine.gpu_driver_absent() is None


@pytest.mark.parametrize(("device", "driver", "level"), [("cpu", False, "3"), ("cpu", True, "2"), ("cuda", False, "2")])
def test_a_cpu_keras_run_on_a_machine_without_a_gpu_driver_keeps_tensorflows_cuinit_error_out(
    monkeypatch, tmp_path, device, driver, level
):
    # TensorFlow's CUDA build logs its search for a driver as an error ("failed call to cuInit") where there
    # is none: a cpu run there turns TF's error messages off before the import; elsewhere only its chatter.
    from tiny_mlp_bench.backends import keras_runtime

    sign = tmp_path / "proc-driver-nvidia"
    if driver:
        sign.touch()
    monkeypatch.setattr(machine, "GPU_DRIVER_PATHS", (str(sign),))
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    for name in ("tensorflow", "tf_keras"):  # stand-ins: what load() does before the import is under test
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    keras_runtime.loader("tensorflow", "tf_keras")(device)
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == level


def test_installed_versions_are_keyed_by_the_name_asked_and_leave_out_what_is_not_installed():
    assert installed_versions(["numpy", "no-such-distribution-here"]) == {"numpy": np.__version__}


@pytest.mark.parametrize("framework", ["torch", "keras", "keras_jax", "jax"])
def test_a_cuda_run_without_a_gpu_driver_is_skipped_without_importing_its_framework(
    framework, no_gpu_driver, small_dataset, tmp_path
):
    out = tmp_path / "r.json"
    unloadable = dataclasses.replace(registry.backend(framework), load=not_to_be_imported)
    assert (
        run_command.run(run_command.parse_args(cuda_args("train.py", framework, small_dataset, out)), unloadable) == 0
    )
    record = read_record(out)
    assert record["status"] == "skipped" and record["reason"] == no_gpu_driver
    assert record["reason"].startswith("no CUDA device: no GPU driver on this machine (none of ")
    assert record["timings"] == {"phases_s": {}} and record["quality"] is None  # not even an import timed
    env = record["environment"]  # the framework's versions from its installed packages, no CUDA, no GPU
    packages = catalogue.framework(framework).packages
    assert env["versions"] == {"numpy": np.__version__} | installed_versions(packages)
    assert env["cuda"] == NO_CUDA and env["gpu_name"] is None and record["load"]["peak_gpu_memory_mb"] is None


def test_require_gpu_without_a_gpu_driver_fails_without_importing_the_framework(
    no_gpu_driver, small_dataset, tmp_path, capsys
):
    out = tmp_path / "r.json"
    unloadable = dataclasses.replace(registry.backend("keras"), load=not_to_be_imported)
    args = run_command.parse_args(cuda_args("train.py", "keras", small_dataset, out, "--require-gpu"))
    assert run_command.run(args, unloadable) == 1 and not out.exists()
    said = capsys.readouterr().err
    assert f"keras-cuda-seed-1: error: {no_gpu_driver}, and --require-gpu (config require_gpu) is set" in said


@pytest.mark.parametrize("framework", [f.name for f in catalogue.FRAMEWORKS if f.probed])
def test_a_cuda_probe_without_a_gpu_driver_is_skipped_or_required_without_importing_its_framework(
    framework, no_gpu_driver, small_dataset, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(probe_command.FixedCostsProbe, "load", not_to_be_imported)
    out = tmp_path / "p.json"
    args = cuda_args("probe_fixed_costs.py", framework, small_dataset, out)
    assert probe_command.main(args) == 0
    record = read_probe(out)
    assert record["status"] == "skipped" and record["reason"] == no_gpu_driver and record["measurements"] == {}
    env = record["environment"]
    assert env["versions"] == {"numpy": np.__version__} | installed_versions(catalogue.framework(framework).packages)
    assert env["cuda"] == NO_CUDA and record["load"]["peak_gpu_memory_mb"] is None
    out.unlink()
    assert probe_command.main([*args, "--require-gpu"]) == 1 and not out.exists()
    assert f"error: {no_gpu_driver}, and --require-gpu (config require_gpu) is set" in capsys.readouterr().err


@pytest.mark.parametrize("job", ["train keras", "probe keras", "sweep"])
def test_a_cuda_job_without_a_gpu_driver_imports_no_framework(job, small_dataset, tmp_path):
    out = tmp_path / "r.json"
    sweep = [*config_flags("sweep_crossover.py"), "--device", "cuda", "--batch-sizes", "8", "--hidden-units", "4"]
    script, args, read = {
        "train keras": ("train.py", cuda_args("train.py", "keras", small_dataset, out), read_record),
        "probe keras": (
            "probe_fixed_costs.py",
            cuda_args("probe_fixed_costs.py", "keras", small_dataset, out),
            read_probe,
        ),
        "sweep": ("sweep_crossover.py", [*sweep, "--output", out], read_sweep),
    }[job]
    done = run_seeing([tmp_path / "none"], script, *args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "imported: []" in done.stderr, done.stderr[-2000:]
    record = read(out)
    assert record["status"] == "skipped" and record["reason"].startswith("no CUDA device: no GPU driver")


@pytest.mark.parametrize("program", ["train.py", "probe_fixed_costs.py"])
def test_where_a_gpu_driver_shows_torch_itself_says_whether_there_is_a_gpu(program, small_dataset, tmp_path, has_cuda):
    if has_cuda:
        pytest.skip("a CUDA device is present: torch finds it")
    driver_sign = tmp_path / "nvidiactl"  # one sign of several is enough
    driver_sign.touch()
    out = tmp_path / "r.json"
    done = run_seeing([tmp_path / "none", driver_sign], program, *cuda_args(program, "torch", small_dataset, out))
    assert done.returncode == 0 and "imported: ['torch']" in done.stderr, done.stderr[-2000:]
    record = read_record(out) if program == "train.py" else read_probe(out)
    assert record["status"] == "skipped"
    assert record["reason"].startswith("no CUDA device: torch.cuda.is_available() is False")
    if program == "train.py":
        assert list(record["timings"]["phases_s"]) == ["import"]


@pytest.mark.slow
def test_a_torch_jobs_threads_set_its_compilers_workers():
    load = "import sys; from tiny_mlp_bench.backends import torch_common as t; torch = t.load('cpu')"
    show = "import torch._inductor.config as c; print(torch.get_num_threads(), c.compile_threads)"
    cases = {
        # As a job: set before anything compiles, and without importing Inductor (a second of start-up).
        f"{load}; t.set_threads(torch, 3); print('torch._inductor.config' in sys.modules); {show}": "False 3 3",
        f"{load}; import torch._inductor.config; t.set_threads(torch, 3); {show}": "3 3",  # Inductor imported first
    }
    for code, expected in cases.items():
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
        assert done.stdout.split() == expected.split()


class CountingLoop(EpochLoop):
    """Epochs that only count how they were asked for."""

    def __init__(self, on_gpu: bool, epochs_per_block: int = 1):
        self.on_gpu, self.epochs_per_block, self.calls = on_gpu, epochs_per_block, []

    def run_epochs(self, epochs: int) -> None:
        self.calls.append(epochs)


def test_on_a_gpu_every_loop_is_timed_in_blocks_of_many_epochs_so_the_clock_waits_once_a_block():
    waits = []
    clock = Clock(sync=lambda: waits.append(1))
    on_gpu = CountingLoop(on_gpu=True)
    on_gpu.fit(clock, 120)
    assert on_gpu.calls == [GPU_EPOCHS_PER_BLOCK, GPU_EPOCHS_PER_BLOCK, 120 - 2 * GPU_EPOCHS_PER_BLOCK]
    assert clock.block_epochs == on_gpu.calls and len(waits) == 1 + 3  # the start, then each block's end
    on_cpu = CountingLoop(on_gpu=False)
    on_cpu.fit(Clock(), 3)
    assert on_cpu.calls == [1, 1, 1]
    bigger = CountingLoop(on_gpu=True, epochs_per_block=2 * GPU_EPOCHS_PER_BLOCK)  # never fewer than its own
    bigger.fit(Clock(), 2 * GPU_EPOCHS_PER_BLOCK)
    assert bigger.calls == [2 * GPU_EPOCHS_PER_BLOCK]


def question_sized_data(rows: int = 200):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (rows, 2))
    table = np.column_stack([x, np.abs(x[:, 0]) + 0.1 * x[:, 1]]).astype(np.float32)
    return types.SimpleNamespace(train=table[:150], test=table[150:])


def spec_for(variant: str, device: str = "cpu", epochs: int = 2) -> RunSpec:
    data = question_sized_data()
    weights = live_initial_weights(0, 20, data.train[:, :2])
    return RunSpec(device, variant, 1, 0, weights, epochs, 64, 1e-3, 20, 1)


@pytest.mark.slow
def test_the_compiled_rungs_counted_epoch_trains_and_compiles_nothing_new(monkeypatch, question_dataset, compile_cache):
    from torch._dynamo.utils import counters

    from tiny_mlp_bench.backends import torch_common
    from tiny_mlp_bench.dataset import read_dataset

    torch = torch_common.load("cpu")
    data = read_dataset(question_dataset)  # the trajectory tests' run of this rung: its graphs come from the cache
    spec = helpers.spec_for("compiled", data, epochs=2, compile_cache=compile_cache)
    loop = registry.loop("torch", "compiled")(torch, spec, data, Clock())
    loop.fit(Clock(), 2)
    loop.predict_test_batch()  # as a run does before counting: the model is left in eval mode
    assert not loop.model.training
    graphs = counters["stats"]["unique_graphs"]
    seen = {}

    def count(torch, run):  # stands in for the sync debug mode, which needs CUDA
        seen["training"] = loop.model.training
        run()
        return 0

    monkeypatch.setattr(torch_common, "count_host_syncs", count)
    loop.on_gpu = True  # the count runs only on a GPU; the epoch itself runs where the loop is
    assert loop.host_syncs_per_epoch() == 0
    assert seen == {"training": True}
    assert counters["stats"]["unique_graphs"] == graphs


def test_only_the_kernels_among_profiler_events_count():
    from torch.autograd import DeviceType

    def event(name, device=DeviceType.CUDA, activity="kernel", annotation=False):
        fields = {"device_type": device, "activity_type": activity, "is_user_annotation": annotation}
        return types.SimpleNamespace(name=name, **fields)

    events = [
        event("aten::addmm", DeviceType.CPU, "cpu_op"),
        event("cudaLaunchKernel", DeviceType.CPU, "cuda_runtime"),
        event("Optimizer.step#Adam.step", DeviceType.CPU, "user_annotation", annotation=True),
        event("Optimizer.step#Adam.step", activity="gpu_user_annotation", annotation=True),  # its span on the GPU
        event("my_range", activity=None, annotation=True),  # a profiler that names no activity
        event("Memcpy HtoD (Pageable -> Device)", activity="gpu_memcpy"),
        event("Memset (Device)", activity=None),
        event("void gemv2T_kernel<float>"),
        event("void multi_tensor_apply_kernel<float>"),
        event("void elementwise_kernel<128, 4>", activity=None),
    ]
    assert count_kernels(events) == 3


def test_launch_time_counts_once_beside_the_aten_ops_self_time():
    def event(name, start, end, parent=None, self_us=0.0):
        found = types.SimpleNamespace(name=name, time_range=types.SimpleNamespace(start=start, end=end))
        found.cpu_parent, found.self_cpu_time_total = parent, self_us
        return found

    # aten::linear (0-20 µs) runs aten::addmm (2-18 µs), which launches a kernel (5-9 µs): self times 4, 12 and 4.
    linear = event("aten::linear", 0, 20, self_us=4.0)
    addmm = event("aten::addmm", 2, 18, parent=linear, self_us=12.0)
    nested = event("cudaLaunchKernel", 5, 9, parent=addmm, self_us=4.0)
    assert launches_counted_twice([linear, addmm], [nested]) == 0
    times = host_self_times([linear, addmm], [nested], steps=2)
    assert times["aten_self_us_per_step"] == 8.0 and times["launch_self_us_per_step"] == 2.0
    assert times["aten_self_by_op"]["aten::addmm"] == {"calls_per_step": 0.5, "self_us_per_step": 6.0}
    # A launch the profiler left unparented (another thread's label) inside addmm: addmm's self time holds it too.
    stray = event("cudaLaunchKernel", 10, 12, self_us=2.0)
    assert launches_counted_twice([linear, addmm], [nested, stray]) == 1
    # One whose end a clock put past addmm's is no child of it either, yet overlaps it.
    assert launches_counted_twice([linear, addmm], [event("cudaLaunchKernel", 16, 19, self_us=3.0)]) == 1
    # The record says so, per step, and keeps the probe: a GPU is had for minutes.
    assert host_self_times([linear, addmm], [nested, stray], steps=2)["launch_calls_counted_twice_per_step"] == 0.5
    # One outside every op counts once wherever it is.
    assert launches_counted_twice([linear, addmm], [event("cudaLaunchKernel", 30, 31, self_us=1.0)]) == 0


class PhaseLog(Clock):
    """A clock that also writes down where each phase starts and ends."""

    def __init__(self, events: list):
        super().__init__()
        self.events = events

    @contextlib.contextmanager
    def phase(self, name):
        self.events.append(("start", name))
        with super().phase(name):
            yield
        self.events.append(("end", name))


def waited_inside(events: list, phase: str) -> bool:
    """Whether a wait for the device came between the phase's start and its end."""
    inside = events[events.index(("start", phase)) + 1 : events.index(("end", phase))]
    return ("wait",) in inside


def test_each_jax_set_up_part_ends_when_the_device_is_done(monkeypatch):
    from tiny_mlp_bench.backends import jax_loops

    fw = jax_loops.load("cpu")
    jax, events = fw[0], []
    wait = jax.block_until_ready

    def recorded_wait(tree):
        events.append(("wait",))
        return wait(tree)

    monkeypatch.setattr(jax, "block_until_ready", recorded_wait)
    spec = spec_for("seed")
    jax_loops.prepare(fw, spec)
    registry.loop("jax", "seed")(fw, spec, question_sized_data(), PhaseLog(events))
    assert [waited_inside(events, part) for part in ("data", "model", "optimizer")] == [True, True, True]


@pytest.mark.slow
def test_each_keras_set_up_part_that_puts_work_on_the_device_waits_for_it(monkeypatch):
    from tiny_mlp_bench.backends import keras_fit

    events = []
    monkeypatch.setattr(keras_fit, "wait_for_device", lambda fw, device: events.append(("wait",)))
    # Keras on TensorFlow: a process has one Keras backend, and the other in-process Keras tests use it.
    backend, spec = registry.backend("keras"), spec_for("seed")
    fw = backend.load("cpu")
    backend.prepare(fw, spec)
    registry.loop("keras", "seed")(fw, spec, question_sized_data(), PhaseLog(events))
    assert [waited_inside(events, part) for part in ("model", "optimizer")] == [True, True]


def test_keras_waits_for_the_device_its_backend_runs_on():
    from tiny_mlp_bench.backends.keras_fit import KerasRuntime, wait_for_device

    calls, space = [], types.SimpleNamespace
    torch = space(cuda=space(synchronize=lambda: calls.append("torch")))
    tf = space(test=space(experimental=space(sync_devices=lambda: calls.append("tf"))))
    jax = space(live_arrays=lambda: ["array"], block_until_ready=lambda arrays: calls.append(("jax", arrays)))

    for backend, lib in (("torch", torch), ("tensorflow", tf), ("jax", jax)):
        for device in ("cpu", "cuda"):
            wait_for_device(KerasRuntime(None, backend, lib), device)
    # torch and TensorFlow run CPU ops to the end before they return; JAX dispatches them too.
    assert calls == ["torch", "tf", ("jax", ["array"]), ("jax", ["array"])]


def test_the_cuda_ladder_shows_each_rungs_host_syncs_per_epoch():
    cuda = []
    for variant, syncs in (("seed", [36, 36, 36]), ("sync_free", [1, 1, 2])):
        for repeat, count in enumerate(syncs, 1):
            record = synthetic_record("torch", "cuda", repeat, 17.0, variant=variant, step_ms=1.4)
            record["parameters"]["variant_details"]["host_syncs_per_epoch"] = str(count)
            cuda.append(record)
    study = [r for r in synthetic_study() if r["identity"]["run_id"] != "torch-cuda-seed-1"] + cuda
    report = build_report(study, probes=synthetic_probes(cuda=True))
    (ladder,) = [ladder for ladder in report.machines[0].ladders if ladder.pair == "torch-cuda"]
    assert [r.host_syncs_per_epoch for r in ladder.rungs] == [36, 1]  # the median over repeats
    text = render_markdown(report)
    cuda_table = text[text.index("#### torch-cuda") :].split("\n\n")[1]
    header, _, *rows = cuda_table.splitlines()
    column = [cell.strip() for cell in header.split("|")].index("host syncs / epoch")
    assert [[cell.strip() for cell in row.split("|")][column] for row in rows] == ["36", "1"]
    cpu_table = text[text.index("#### torch-cpu") :]
    assert "host syncs / epoch" not in cpu_table[: cpu_table.index("###", 5)]
    assert "each wait costs at least an empty synchronize, " in text
