"""The training program, `tiny-mlp-bench run` (tiny_mlp_bench/jobs/run.py): usage, records, skips, failures and
scoring."""

from __future__ import annotations

import collections
import datetime
import json
import math
import os
import types

import numpy as np
import pytest

from helpers import A_GPU_DRIVER, config_flags, run_script, run_seeing, spec_for
from tiny_mlp_bench import machine, registry, timing
from tiny_mlp_bench.backends.contract import Backend, EpochLoop, RunSpec
from tiny_mlp_bench.backends.torch_epoch import SPLIT_CALLS
from tiny_mlp_bench.jobs.run import parse_args, run, score
from tiny_mlp_bench.records import read_record, read_sweep
from tiny_mlp_bench.timing import LOOP_PARTS, METHOD, SETUP_PARTS, Clock


class FakeTraining(EpochLoop):
    """A framework-free trained model: predicts with ``predict``; its epochs only count their steps."""

    @property
    def details(self):
        return {"adam": "none"}

    def __init__(self, predict, steps_per_epoch=3):
        self.predict, self.steps_per_epoch, self.steps = predict, steps_per_epoch, 0

    def run_epochs(self, epochs):
        self.steps += epochs * self.steps_per_epoch

    def steps_taken(self):
        return self.steps

    def predict_test_batch(self):
        pass

    def final_train_loss(self):
        return 0.0


def result_predicting(predict) -> FakeTraining:
    return FakeTraining(predict)


def train(framework: str, *args, check: bool = False):
    """Run scripts/train.py for one framework, as the train rule does at the config's defaults."""
    return run_script("train.py", *config_flags("train.py"), "--framework", framework, *args, check=check)


class Data:
    train = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.9], [0.7, 0.1, 0.6]])
    test = np.array([[0.2, 0.2, 0.4]])


def exact(features):
    table = {tuple(r[:2]): r[2] for r in (*Data.train, *Data.test)}
    return np.array([table[tuple(f)] for f in features])


def test_score_perfect_predictions_converge():
    quality = score(result_predicting(exact), Data, min_r2=0.99)
    assert quality["train_mse"] == 0.0 and quality["train_r2"] == 1.0 and quality["converged"]


def test_score_flags_a_dead_relu():
    quality = score(result_predicting(lambda f: np.zeros((len(f), 1))), Data, min_r2=0.99)
    assert quality["train_mse"] == pytest.approx(np.mean(Data.train[:, 2] ** 2))
    assert quality["train_r2"] < 0 and not quality["converged"]


def test_score_turns_non_finite_values_into_null():
    quality = score(result_predicting(lambda f: np.full(len(f), np.nan)), Data, min_r2=0.99)
    assert quality["train_mse"] is None and quality["train_r2"] is None and not quality["converged"]


def test_help_describes_the_program_and_lists_the_catalogue():
    result = run_script("train.py", "--help")
    assert result.returncode == 0
    assert "--dataset" in result.stdout and "--require-gpu" in result.stdout
    said = " ".join(result.stdout.split())
    assert "keras: seed, xla, steps_per_execution, epoch_blocks" in said
    assert "the config's batch_size" in said and "config/config.schema.yaml gives its default" in said


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--epochs", "0"], "--epochs: must be a positive integer, got 0"),
        (["--learning-rate", "-1"], "--learning-rate: must be a positive number"),
        (["--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
        (["--variant", "fastest"], "argument --variant: unknown torch rung 'fastest'; known: seed, batched_fetch"),
    ],
)
def test_usage_errors_name_the_option(small_dataset, tmp_path, args, message):
    out = tmp_path / "r.json"
    result = train("torch", "--dataset", small_dataset, "--output", out, *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert not out.exists()


def test_corrupt_dataset_fails_before_importing_and_writes_nothing(tmp_path):
    bad = tmp_path / "dataset.parquet"
    bad.write_bytes(b"garbage")
    out = tmp_path / "r.json"
    result = train("torch", "--dataset", bad, "--output", out)
    assert result.returncode == 1
    assert f"{bad} is not a readable Parquet file" in result.stderr
    assert "importing" not in result.stderr
    assert not out.exists()


@pytest.mark.slow
def test_torch_cpu_run_writes_a_complete_record(small_dataset, tmp_path):
    out = tmp_path / "torch-cpu-seed-2.json"
    train("torch", "--dataset", small_dataset, "--output", out, "--epochs", 4, "--repeat", 2, check=True)
    record = read_record(out)
    assert record["identity"]["run_id"] == "torch-cpu-seed-2"
    assert record["status"] == "ok" and record["reason"] is None
    assert record["parameters"]["init_seed"] == 7 + 2 - 1
    t = record["timings"]
    assert t["block_epochs"] == [1, 1, 1, 1] and t["steps_per_epoch"] == 3  # 150 train rows / 64
    phases = t["phases_s"]
    # Every phase the asker's loop goes through (it captures no graph); keys are sorted in the file.
    assert list(phases) == ["data", "fit", "import", "model", "optimizer", "predict", "setup", "startup"]
    assert sum(phases.get(part, 0) for part in SETUP_PARTS) <= phases["setup"]
    # The timing point holds set-up, every epoch and the predictions; the blocks make up the fit phase.
    assert t["fit_predict_s"] >= phases["setup"] + phases["fit"] + phases["predict"] - 1e-6
    assert sum(t["block_s"]) <= phases["fit"] + 1e-6
    assert record["environment"]["threads"]["intra_op"] == 1
    assert record["environment"]["dataset_sha256"] and record["environment"]["versions"]["torch"]
    assert record["quality"]["test_mse"] is not None


@pytest.mark.slow
def test_same_repeat_trains_the_same_weights(small_dataset, tmp_path):
    runs = []
    for name in ("a.json", "b.json"):
        train("torch", "--dataset", small_dataset, "--output", tmp_path / name, "--epochs", 2, check=True)
        runs.append(json.loads((tmp_path / name).read_text())["quality"])
    assert runs[0] == runs[1]


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["torch", "keras"])
def test_cuda_without_gpu_is_recorded_as_skipped(small_dataset, tmp_path, has_cuda, framework):
    if has_cuda:
        pytest.skip("a CUDA device is present: the no-GPU path cannot be exercised here")
    out = tmp_path / "r.json"
    args = ("--framework", framework, "--dataset", small_dataset, "--output", out, "--device", "cuda")
    # A GPU driver shows, so that the framework itself is asked (test_cuda_paths: a machine without one).
    run_seeing(A_GPU_DRIVER, "train.py", *config_flags("train.py"), *args, check=True)
    record = read_record(out)
    assert record["status"] == "skipped"
    assert record["reason"].startswith("no CUDA device") and "no GPU driver" not in record["reason"]
    assert record["quality"] is None and list(record["timings"]) == ["phases_s"]
    assert list(record["timings"]["phases_s"]) == ["import"]  # skipped before any timed phase


def test_require_gpu_fails_loudly_and_writes_nothing(small_dataset, tmp_path, has_cuda):
    if has_cuda:
        pytest.skip("a CUDA device is present: the no-GPU path cannot be exercised here")
    out = tmp_path / "r.json"
    result = train("torch", "--dataset", small_dataset, "--output", out, "--device", "cuda", "--require-gpu")
    assert result.returncode == 1
    assert "no CUDA device" in result.stderr and "--require-gpu" in result.stderr
    assert not out.exists()


def test_torch_cuda_run_on_a_gpu(small_dataset, tmp_path, has_cuda):
    if not has_cuda:
        pytest.skip("no CUDA device on this machine: the torch-cuda run is tested only where one exists")
    out = tmp_path / "r.json"
    train("torch", "--dataset", small_dataset, "--output", out, "--device", "cuda", "--epochs", 2, check=True)
    record = read_record(out)
    assert record["status"] == "ok" and record["environment"]["gpu_name"]


def test_the_numba_cuda_floor_run_on_a_gpu(small_dataset, tmp_path, has_cuda):
    if not has_cuda:
        pytest.skip("no CUDA device on this machine: the numba CUDA kernel is run only where one exists")
    out = tmp_path / "r.json"
    args = ("--variant", "fused", "--epochs", 200, "--require-gpu")
    train("numpy", "--dataset", small_dataset, "--output", out, "--device", "cuda", *args, check=True)
    record = read_record(out)
    assert record["status"] == "ok" and record["environment"]["gpu_name"]
    assert record["timings"]["block_epochs"] == [100, 100]  # one launch per block of 100 epochs
    assert record["timings"]["steps_taken"] == 200 * record["timings"]["steps_per_epoch"]  # the kernel's count


def test_a_cuda_floor_run_on_a_machine_without_a_gpu_is_skipped_saying_why(small_dataset, tmp_path, has_cuda):
    if has_cuda:
        pytest.skip("a CUDA device is present: the no-GPU path cannot be exercised here")
    out = tmp_path / "r.json"
    train("numpy", "--dataset", small_dataset, "--output", out, "--device", "cuda", "--variant", "fused", check=True)
    record = read_record(out)
    assert record["status"] == "skipped" and "no CUDA device" in record["reason"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("framework", "backend", "threads"),
    [
        ("keras", "tensorflow", {"intra_op": 1, "inter_op": 1}),
        ("keras_jax", "jax", {}),  # XLA's CPU runtime sizes its own pool
        ("keras_torch", "torch", {"intra_op": 1, "inter_op": 1}),
    ],
)
def test_keras_cpu_run_on_each_backend_writes_a_complete_record(small_dataset, tmp_path, framework, backend, threads):
    out = tmp_path / "keras.json"
    result = train(framework, "--dataset", small_dataset, "--output", out, "--epochs", 3)
    assert result.returncode == 0, result.stderr
    record = read_record(out)
    assert record["status"] == "ok" and record["identity"]["run_id"] == f"{framework}-cpu-seed-1"
    # fit() runs every epoch in one call; the clock's callback closes a block at each epoch's end.
    assert record["timings"]["block_epochs"] == [1, 1, 1] and record["timings"]["steps_per_epoch"] == 3
    assert record["timings"]["steps_taken"] == 9  # the optimizer's own count, read the same on every backend
    env = record["environment"]
    assert env["versions"]["keras"].startswith("3.") and env["versions"]["keras_backend"] == backend
    assert record["parameters"]["variant_details"]["keras_backend"] == backend
    assert env["threads"] == threads
    assert record["quality"]["train_r2"] is not None
    assert f"{framework}-cpu-seed-1: epoch 3/3" in result.stderr  # progress reaches the log
    assert_fit_end_inside_fit(record["timings"])


def assert_fit_end_inside_fit(timings: dict) -> None:
    """Keras's pause after its last epoch is a phase of its own: inside fit, after every block."""
    phases = timings["phases_s"]
    assert 0 <= phases["fit_end"] < phases["fit"]
    assert sum(timings["block_s"]) + phases["fit_end"] <= phases["fit"]


@pytest.mark.slow
def test_keras_2_times_its_pause_after_the_last_epoch(small_dataset, tmp_path):
    out = tmp_path / "tf_keras.json"
    result = train("tf_keras", "--dataset", small_dataset, "--output", out, "--epochs", 2)
    assert result.returncode == 0, result.stderr
    record = read_record(out)
    assert record["status"] == "ok" and record["timings"]["block_epochs"] == [1, 1]
    assert_fit_end_inside_fit(record["timings"])


@pytest.mark.slow
def test_keras_2_autotune_off_changes_only_the_option_on_fits_own_dataset(small_dataset, monkeypatch):
    # Keras 2's fit hands the dataset its array adapter built to DataHandler._infer_steps: what fit iterates.
    from tf_keras.src.engine import data_adapter

    from tiny_mlp_bench.backends.contract import RunSpec
    from tiny_mlp_bench.dataset import read_dataset
    from tiny_mlp_bench.initial_weights import live_initial_weights
    from tiny_mlp_bench.registry import backend, loop
    from tiny_mlp_bench.timing import Clock

    data, seen = read_dataset(small_dataset), []
    infer_steps = data_adapter.DataHandler._infer_steps

    def infer_and_keep(handler, steps, dataset):
        seen.append(dataset)
        return infer_steps(handler, steps, dataset)

    monkeypatch.setattr(data_adapter.DataHandler, "_infer_steps", infer_and_keep)
    adapters_dataset = data_adapter.TensorLikeDataAdapter.get_dataset
    fw = backend("tf_keras").load("cpu")
    weights = live_initial_weights(5, 20, data.train[:, :2])
    for variant in ("seed", "autotune_off"):
        spec = RunSpec(
            device="cpu",
            variant=variant,
            repeat=1,
            init_seed=5,
            weights=weights,
            epochs=2,
            batch_size=64,
            learning_rate=0.001,
            hidden_units=20,
            threads=1,
        )
        clock = Clock()
        with clock.phase("fit"):
            loop("tf_keras", variant)(fw, spec, data, clock).fit(clock, 2)
    seed, autotune_off = (dataset.options().autotune.enabled for dataset in seen)
    assert seed is not False and autotune_off is False  # the asker's: autotuning on (its default)
    assert data_adapter.TensorLikeDataAdapter.get_dataset is adapters_dataset  # put back after fit


@pytest.mark.slow
def test_keras_on_jax_runs_an_epoch_per_call(small_dataset, tmp_path):
    framework = "keras_jax"
    out = tmp_path / "spe.json"
    result = train(
        framework, "--dataset", small_dataset, "--output", out, "--variant", "steps_per_execution", "--epochs", 2
    )
    assert result.returncode == 0, result.stderr
    record = read_record(out)
    assert record["parameters"]["variant_details"]["steps_per_execution"] == "3"
    assert record["timings"]["steps_taken"] == record["parameters"]["epochs"] * 3


def test_keras_on_jax_has_no_tensorflow_only_rung(small_dataset, tmp_path):
    out = tmp_path / "blocks.json"
    result = train("keras_jax", "--dataset", small_dataset, "--output", out, "--variant", "epoch_blocks")
    assert result.returncode != 0 and "unknown keras_jax rung 'epoch_blocks'" in result.stderr


def fake_backend(gpu_missing=None) -> Backend:
    """A framework-free backend, to test the run's own decisions in-process."""
    return Backend(
        name="torch",
        load=lambda device: None,
        prepare=lambda fw, spec: None,
        start_device=lambda fw, spec: gpu_missing if spec.device == "cuda" else None,
        describe=lambda fw, device: {"versions": {}, "threads": {}, "cuda": {}, "gpu_name": None},
        peak_gpu_memory_mb=lambda fw, device: None,
    )


def fake_loop(predict):
    """A framework-free loop whose set-up has every part."""

    def build(fw, spec, data, clock):
        for part in ("data", "model", "optimizer"):
            with clock.phase(part):
                pass
        return result_predicting(predict)

    return build


def run_args(small_dataset, out, *extra):
    command = ["--framework", "torch", "--dataset", str(small_dataset), "--output", str(out), *map(str, extra)]
    return parse_args([*config_flags("train.py"), *command])


def test_a_run_records_a_diverged_run_as_failed(small_dataset, tmp_path):
    out = tmp_path / "r.json"
    assert run(run_args(small_dataset, out), fake_backend(), fake_loop(lambda f: np.full(len(f), np.inf))) == 0
    record = read_record(out)
    assert record["status"] == "failed" and "not finite" in record["reason"]
    assert record["quality"]["converged"] is False


def test_a_run_times_every_phase_and_one_block_per_epoch(small_dataset, tmp_path):
    out = tmp_path / "r.json"
    assert run(run_args(small_dataset, out, "--epochs", 5), fake_backend(), fake_loop(lambda f: np.zeros(len(f)))) == 0
    record = read_record(out)
    assert record["status"] == "ok", record["reason"]
    timings = record["timings"]
    phases = timings["phases_s"]
    assert set(phases) == {"import", "setup", "startup", "data", "model", "optimizer", "fit", "predict"}
    # The set-up is made of its parts (the clock's own readings between them are all that is left).
    parts = sum(phases.get(part, 0) for part in SETUP_PARTS)
    assert parts <= phases["setup"] and phases["setup"] - parts < 0.01
    assert timings["block_epochs"] == [1] * 5 and len(timings["block_s"]) == 5
    # The process's CPU time beside each block's wall time; the clock's own work between blocks in neither.
    assert len(timings["block_cpu_s"]) == 5 and all(cpu >= 0 for cpu in timings["block_cpu_s"])
    assert sum(timings["block_s"]) <= timings["phases_s"]["fit"]
    assert record["method"] == METHOD
    # When the job ran and what else the machine was doing, read at the program's start and end.
    load = record["load"]
    assert len(load["before"]["load_average"]) == 3 and len(load["after"]["load_average"]) == 3
    assert load["peak_host_memory_mb"] > 10 and load["peak_gpu_memory_mb"] is None
    started, ended = (datetime.datetime.fromisoformat(load[key]) for key in ("started_at", "ended_at"))
    assert started.utcoffset() == datetime.timedelta(0) and started < ended
    assert (ended - started).total_seconds() >= timings["fit_predict_s"]
    assert load["kernel"]["involuntary_switches"] >= 0


def test_a_rungs_first_run_empties_the_shared_compiler_cache_and_a_later_run_says_it_reused_it(small_dataset, tmp_path):
    cache, out = tmp_path / "compile_cache" / "torch-cpu-fused_epoch", tmp_path / "r.json"
    cache.mkdir(parents=True)
    (cache / "left by an earlier study").write_text("stale")

    def method(repeat: int) -> dict:
        args = run_args(small_dataset, out, "--repeat", repeat, "--compile-cache", cache)
        assert run(args, fake_backend(), fake_loop(lambda f: np.zeros(len(f)))) == 0
        return read_record(out)["method"]

    # The first run finds the cache emptied, compiles cold; what it compiled stays for the later runs.
    assert method(1) == METHOD and cache.is_dir() and not any(cache.iterdir())
    (cache / "compiled by the first run").write_text("kernel")
    assert method(2) == METHOD | {"compile_cache": "warm"}
    assert (cache / "compiled by the first run").exists()
    # A later run that finds nothing there (the first failed before compiling) says so: cold.
    (cache / "compiled by the first run").unlink()
    assert method(3) == METHOD


def test_a_run_records_an_unavailable_device_as_skipped(small_dataset, tmp_path, monkeypatch):
    monkeypatch.setattr(machine, "GPU_DRIVER_PATHS", tuple(map(str, A_GPU_DRIVER)))  # the backend is asked
    out = tmp_path / "r.json"
    backend = fake_backend(gpu_missing="no CUDA device: fake")
    assert run(run_args(small_dataset, out, "--device", "cuda"), backend, fake_loop(exact)) == 0
    assert read_record(out)["reason"] == "no CUDA device: fake"


def test_a_loop_that_skips_steps_is_recorded_as_failed(small_dataset, tmp_path):
    # 150 train rows in batches of 64 are 3 steps an epoch; a loop that takes 2 does less work.
    def short(fw, spec, data, clock):
        return FakeTraining(lambda f: np.zeros(len(f)), steps_per_epoch=2)

    out = tmp_path / "r.json"
    assert run(run_args(small_dataset, out, "--epochs", 4), fake_backend(), short) == 0
    record = read_record(out)
    assert (
        record["status"] == "failed" and record["reason"] == "the loop took 8 optimiser steps, not the 12 of its epochs"
    )


def test_the_catalogue_decides_where_a_variant_runs(small_dataset, tmp_path):
    # graphed is listed for cuda only: on cpu it is skipped before the backend is asked anything.
    out = tmp_path / "r.json"
    args = run_args(small_dataset, out, "--variant", "graphed", "--require-gpu")
    assert run(args, fake_backend(), fake_loop(exact)) == 0
    record = read_record(out)
    assert record["status"] == "skipped" and record["reason"] == "torch graphed runs on cuda only"


@pytest.fixture
def thread_limits_put_back():
    """The numpy backend's prepare() limits this process's BLAS and OpenMP pools: put them back after."""
    import threadpoolctl

    with threadpoolctl.threadpool_limits(limits=None):
        yield


@pytest.mark.parametrize("variant", ["reference", pytest.param("fused", marks=pytest.mark.slow)])
def test_each_numpy_phase_is_timed_once(small_dataset, tmp_path, monkeypatch, thread_limits_put_back, variant):
    # Through the real run command and the registered rung: a rung that timed a set-up phase again would
    # replace the first timing with the second's, keeping only part of the phase's work.
    entered = collections.Counter()
    phase = Clock.phase

    def counted(clock, name):
        entered[name] += 1
        return phase(clock, name)

    monkeypatch.setattr(Clock, "phase", counted)
    out = tmp_path / "r.json"
    command = ["--framework", "numpy", "--variant", variant, "--epochs", "2"]
    args = parse_args([*config_flags("train.py"), *command, "--dataset", str(small_dataset), "--output", str(out)])
    assert run(args) == 0
    record = read_record(out)
    assert record["status"] == "ok", record["reason"]
    phases = ("import", "setup", "startup", "data", "model", "optimizer", "fit", "predict")
    assert entered == dict.fromkeys(phases, 1)
    assert set(record["timings"]["phases_s"]) == set(phases)


class CountingCuda:
    """numba.cuda as the numpy backend's start-up and sync use it, writing down each call; no GPU needed."""

    def __init__(self):
        self.calls = []

    def is_available(self):
        return True

    def current_context(self):
        self.calls.append("current_context")

    def synchronize(self):
        self.calls.append("synchronize")


def test_the_cuda_floors_sync_leaves_cuda_alone_until_the_startup_phase_starts_it(monkeypatch):
    from tiny_mlp_bench.backends import numpy_reference

    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    fw = types.SimpleNamespace(
        threadpoolctl=types.SimpleNamespace(threadpool_limits=lambda threads: None),
        numba=types.SimpleNamespace(config=types.SimpleNamespace(ENABLE_CUDASIM=0)),
        cuda=CountingCuda(),
        device_started=False,
    )
    spec = RunSpec("cuda", "fused", 1, 1, None, 1, 64, 1e-3, 20, 1)
    clock = Clock(sync=numpy_reference.prepare(fw, spec))
    with clock.timing_point(), clock.phase("setup"):
        assert fw.cuda.calls == []  # the readings before start-up made no context
        with clock.phase("startup"):
            assert fw.cuda.calls == []
            assert numpy_reference.start_device(fw, spec) is None
        assert fw.cuda.calls == ["current_context", "synchronize"]  # made inside the phase; its end waits
    assert fw.cuda.calls[-1] == "synchronize" and fw.cuda.calls.count("current_context") == 1


def test_numpy_gradients_match_torch_autograd():
    import torch

    from tiny_mlp_bench.backends.numpy_loop import loss_and_grads
    from tiny_mlp_bench.initial_weights import draw

    rng = np.random.default_rng(0)
    params = dict(zip(("w1", "b1", "w2", "b2"), draw(rng, hidden=5), strict=True))
    params["b2"] += 1.0  # keep the final ReLU alive so every gradient is non-zero
    x = rng.random((7, 2), dtype=np.float32)
    y = rng.random(7, dtype=np.float32)
    loss, grads = loss_and_grads(params, x, y)

    p = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    hidden = torch.relu(torch.tensor(x) @ p["w1"] + p["b1"])
    pred = torch.relu(hidden @ p["w2"] + p["b2"])[:, 0]
    expected = torch.nn.functional.mse_loss(pred, torch.tensor(y))
    expected.backward()
    assert loss == pytest.approx(expected.item(), rel=1e-6)
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, p[name].grad.numpy(), rtol=1e-5, atol=1e-7)


def test_numpy_adam_matches_torch_adam():
    import torch

    from tiny_mlp_bench.backends.numpy_loop import Adam

    start = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    ours = {"w": start.copy()}
    adam = Adam(ours, lr=0.01)
    theirs = torch.tensor(start, requires_grad=True)
    optimizer = torch.optim.Adam([theirs], lr=0.01)
    for grad in ([0.1, -0.2, 0.3], [0.05, 0.4, -1.0], [1.0, 1.0, 1.0]):
        adam.step(ours, {"w": np.array(grad, dtype=np.float32)})
        theirs.grad = torch.tensor(grad)
        optimizer.step()
    np.testing.assert_allclose(ours["w"], theirs.detach().numpy(), rtol=1e-6)


def test_numpy_reference_run_converges(small_dataset, tmp_path):
    out = tmp_path / "numpy.json"
    # Weight seed 7 + 3 - 1 keeps the final ReLU alive on this data (seeds 7, 8, 10 and 11 kill it).
    train("numpy", "--dataset", small_dataset, "--output", out, "--epochs", 200, "--repeat", 3, check=True)
    record = read_record(out)
    assert record["identity"]["run_id"] == "numpy-cpu-reference-3"
    assert record["status"] == "ok" and record["quality"]["converged"], record["quality"]


def test_numpy_reference_on_cuda_is_skipped(small_dataset, tmp_path):
    out = tmp_path / "numpy.json"
    train("numpy", "--dataset", small_dataset, "--output", out, "--device", "cuda", check=True)
    assert read_record(out)["reason"] == "numpy reference runs on cpu only"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "detail"),
    [
        ("batched_fetch", {"data": "DataLoader, batch fetch"}),
        ("resident", {"data": "device-resident, randperm per epoch"}),
        ("sync_free", {"adam": "fused", "zero_grad": "set_to_none"}),
        ("compiled", {"adam": "functional, torch.optim.Adam's formula, in place"}),
        ("fused_epoch", {"forward": "broadcast products and sums in place of matmuls"}),
    ],
)
def test_torch_variants_train_the_same_model(small_dataset, tmp_path, variant, detail, compile_cache):
    out = tmp_path / f"{variant}.json"
    # A later repeat keeps the cache it is given; the other compiled tests' learning rate lets it reuse their graphs.
    shared = ["--compile-cache", compile_cache, "--learning-rate", 0.01]
    flags = ["--variant", variant, "--epochs", 200, "--repeat", 3, *shared]
    result = train("torch", "--dataset", small_dataset, "--output", out, *flags)
    assert result.returncode == 0, result.stderr
    record = read_record(out)
    assert record["identity"]["variant"] == variant and record["status"] == "ok"
    assert detail.items() <= record["parameters"]["variant_details"].items()
    assert len(record["timings"]["block_s"]) == 200 and record["timings"]["steps_per_epoch"] == 3
    assert record["timings"]["steps_taken"] == 600  # counted by the rung's optimiser
    # Weight seed 7 + 3 - 1 keeps the final ReLU alive on this data: every rung must learn the target.
    assert record["quality"]["converged"], record["quality"]
    if variant == "fused_epoch":  # its compiled call, timed after the run: the kernel is part of it, never all
        details = record["parameters"]["variant_details"]
        assert 0 < float(details["epoch_kernel_us"]) < float(details["epoch_call_us"]), details
        assert details["split_calls"] == str(SPLIT_CALLS)


@pytest.mark.slow
def test_a_compiled_rungs_later_run_compiles_from_the_cache_its_first_run_filled(small_dataset, tmp_path):
    cache = tmp_path / "compile_cache"
    for repeat in (1, 2):
        out = tmp_path / f"compiled-{repeat}.json"
        flags = ["--variant", "compiled", "--epochs", 3, "--repeat", repeat, "--compile-cache", cache]
        result = train("torch", "--dataset", small_dataset, "--output", out, *flags)
        assert result.returncode == 0, result.stderr
        record = read_record(out)
        assert record["status"] == "ok", record["reason"]
        assert record["method"]["compile_cache"] == ("cold" if repeat == 1 else "warm")
        # Inductor compiled into the study's cache, not into a cache of the run's own or the user's default.
        assert (cache / "fxgraph").is_dir(), sorted(p.name for p in cache.iterdir())
        assert "reuse" in record["parameters"]["variant_details"]["compiler_cache"]


def test_graphed_on_cpu_is_skipped_with_the_reason(small_dataset, tmp_path):
    out = tmp_path / "graphed.json"
    train("torch", "--dataset", small_dataset, "--output", out, "--variant", "graphed", check=True)
    record = read_record(out)
    assert record["status"] == "skipped" and record["reason"] == "torch graphed runs on cuda only"


def test_graphed_on_a_gpu(small_dataset, tmp_path, has_cuda):
    if not has_cuda:
        pytest.skip("no CUDA device on this machine: CUDA graph capture can only be tested where one exists")
    out = tmp_path / "graphed.json"
    train(
        "torch",
        "--dataset",
        small_dataset,
        "--output",
        out,
        "--device",
        "cuda",
        "--variant",
        "graphed",
        "--epochs",
        200,
        "--repeat",
        3,
        check=True,
    )
    record = read_record(out)
    assert record["status"] == "ok" and record["quality"]["converged"], record["quality"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "jit_compile", "steps_per_execution"),
    [("seed", False, 1), ("xla", True, 1), ("steps_per_execution", False, 3), ("epoch_blocks", True, 150)],
)
def test_keras_variants_record_what_they_compiled(small_dataset, tmp_path, variant, jit_compile, steps_per_execution):
    out = tmp_path / f"{variant}.json"
    result = train("keras", "--dataset", small_dataset, "--output", out, "--variant", variant, "--epochs", 2)
    assert result.returncode == 0, result.stderr
    record = read_record(out)
    assert record["status"] == "ok" and record["timings"]["steps_taken"] == 6  # Keras's own iterations
    details = record["parameters"]["variant_details"]
    assert details["jit_compile"] == str(jit_compile)
    assert details["steps_per_execution"] == str(steps_per_execution)  # epoch_blocks: 50 epochs of 3 steps
    assert details["adam_epsilon"] == "1e-07"
    assert_fit_end_inside_fit(record["timings"])


@pytest.mark.slow
def test_keras_epoch_blocks_time_blocks_of_fifty_epochs(small_dataset, tmp_path):
    out = tmp_path / "blocks.json"
    result = train("keras", "--dataset", small_dataset, "--output", out, "--variant", "epoch_blocks", "--epochs", 120)
    assert result.returncode == 0, result.stderr
    timings = read_record(out)["timings"]
    assert timings["block_epochs"] == [50, 50, 20]  # two full fit epochs, then the rest in a fit call of its own
    assert timings["steps_taken"] == 120 * 3
    assert_fit_end_inside_fit(timings)  # the pause after the second fit call's last epoch


@pytest.mark.slow
def test_sweep_measures_every_point(tmp_path):
    out = tmp_path / "sweep.json"
    result = run_script(
        "sweep_crossover.py",
        *config_flags("sweep_crossover.py"),
        "--device",
        "cpu",
        "--batch-sizes",
        "8,32",
        "--hidden-units",
        "4,16",
        "--steps",
        2,
        "--output",
        out,
    )
    assert result.returncode == 0, result.stderr
    record = read_sweep(out)
    assert record["status"] == "ok" and record["peak_gflops"] > 0
    assert [(p["batch_size"], p["hidden_units"]) for p in record["points"]] == [(8, 4), (32, 4), (8, 16), (32, 16)]
    assert all(len(p["block_step_s"]) == 3 and p["step_s"] > 0 for p in record["points"])
    assert all(len(p["block_cpu_step_s"]) == 3 and min(p["block_cpu_step_s"]) >= 0 for p in record["points"])
    assert "point 4/4" in result.stderr


@pytest.mark.slow
def test_sweep_without_gpu_is_skipped_or_fails_with_require_gpu(tmp_path, has_cuda):
    if has_cuda:
        pytest.skip("a CUDA device is present: the no-GPU path cannot be exercised here")
    out = tmp_path / "sweep.json"
    args = [*config_flags("sweep_crossover.py"), "--device", "cuda", "--batch-sizes", "8", "--hidden-units", "4"]
    args += ["--output", out]
    run_script("sweep_crossover.py", *args, check=True)
    assert read_sweep(out)["status"] == "skipped"
    out.unlink()
    result = run_script("sweep_crossover.py", *args, "--require-gpu")
    assert result.returncode == 1 and "--require-gpu" in result.stderr and not out.exists()


def test_sweep_rejects_a_bad_grid(tmp_path):
    result = run_script(
        "sweep_crossover.py",
        *config_flags("sweep_crossover.py"),
        "--device",
        "cpu",
        "--batch-sizes",
        "8,x",
        "--hidden-units",
        "4",
        "--output",
        tmp_path / "s.json",
    )
    assert result.returncode == 2 and "expected comma-separated integers, got '8,x'" in result.stderr


def test_a_run_records_an_exception_as_failed(small_dataset, tmp_path):
    def broken(fw, spec, data, clock):
        raise RuntimeError("CUDA out of memory (test)")

    out = tmp_path / "r.json"
    assert run(run_args(small_dataset, out), fake_backend(), broken) == 0
    record = read_record(out)
    assert record["status"] == "failed" and record["reason"] == "RuntimeError: CUDA out of memory (test)"
    assert record["quality"] is None and set(record["timings"]) == {"phases_s"}


def test_sklearn_mlp_regressor_trains_and_says_how_it_differs(small_dataset, tmp_path):
    out = tmp_path / "sklearn.json"
    args = ["--dataset", small_dataset, "--output", out, "--variant", "mlp_regressor", "--epochs", 200]
    train("sklearn", *args, check=True)
    record = read_record(out)
    assert record["status"] == "ok" and record["quality"]["converged"], record["quality"]
    assert record["timings"]["steps_taken"] == 600 and len(record["timings"]["block_s"]) == 200  # its Adam's count
    assert "linear output" in record["parameters"]["variant_details"]["model"]
    init = record["parameters"]["init"]  # its own draw, not the shared one
    assert init["scheme"].startswith("scikit-learn's own") and init["dead_draws_skipped"] is None
    assert record["environment"]["versions"]["scikit-learn"]


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["seed", "scan"])
def test_jax_rungs_train_the_question_model(small_dataset, tmp_path, variant):
    out = tmp_path / f"jax-{variant}.json"
    args = ["--dataset", small_dataset, "--output", out, "--variant", variant, "--epochs", 200, "--learning-rate", 0.01]
    train("jax", *args, check=True)
    record = read_record(out)
    assert record["status"] == "ok" and record["quality"]["converged"], record["quality"]
    assert record["timings"]["steps_taken"] == 600  # optax's own count
    blocks = 200 if variant == "seed" else 4  # scan runs 50 epochs per compiled call
    assert len(record["timings"]["block_s"]) == blocks and sum(record["timings"]["block_epochs"]) == 200


def test_jax_on_cuda_without_a_gpu_is_skipped_with_the_reason(small_dataset, tmp_path, has_cuda):
    if has_cuda:
        pytest.skip("a CUDA device is present: the no-GPU path cannot be exercised here")
    out = tmp_path / "jax.json"
    args = ("--framework", "jax", "--dataset", small_dataset, "--output", out, "--device", "cuda")
    # A GPU driver shows: JAX itself is asked.
    run_seeing(A_GPU_DRIVER, "train.py", *config_flags("train.py"), *args, check=True)
    record = read_record(out)
    assert record["status"] == "skipped" and record["reason"].startswith("no CUDA device: JAX ")


@pytest.mark.parametrize(
    ("variant", "epochs", "window_s"), [("reference", 40, 0.1), ("fused", 400, 0.1), ("reference", 40, 0.0)]
)
def test_the_per_step_window_replays_the_asker_epochs_after_they_are_scored(
    small_dataset, tmp_path, monkeypatch, thread_limits_put_back, variant, epochs, window_s
):
    out = tmp_path / "r.json"
    # The window's wall-clock limit is lifted: on a machine loaded by other tests it can end a window one block
    # short, and that limit is tested on its own below.
    monkeypatch.setattr(timing, "WINDOW_LIMIT", 1000)
    # Passes of 10 ms or so, shorter than a block of the config's: the window takes several, of shorter blocks.
    command = [
        "--framework",
        "numpy",
        "--variant",
        variant,
        "--epochs",
        str(epochs),
        "--steady-window-s",
        str(window_s),
    ]
    args = parse_args([*config_flags("train.py"), *command, "--dataset", str(small_dataset), "--output", str(out)])
    assert run(args) == 0
    record = read_record(out)
    timings = record["timings"]
    # The optimiser's steps are the asker's epochs' alone, counted before the window.
    assert timings["steps_taken"] == epochs * timings["steps_per_epoch"]
    if not window_s:
        assert "steady" not in timings
        return
    steady = timings["steady"]
    assert steady["window_s"] == window_s
    # No pass runs past the question's last epoch: a window longer than one pass takes several.
    assert steady["passes"] > 1 and steady["epochs"] <= epochs * steady["passes"]
    # At least 20 blocks of the target length, about the window's seconds, a canary after each.
    assert len(steady["block_s"]) >= 20 and sum(steady["block_s"]) >= window_s
    assert all(seconds >= steady["block_target_s"] for seconds in steady["block_s"])
    assert len(steady["canary_s"]) == len(steady["block_s"]) and min(steady["canary_s"]) > 0


def test_the_per_step_window_stops_at_its_wall_clock_limit(small_dataset, tmp_path, monkeypatch):
    # A limit of no time at all: the window stops before its first pass, and the run still succeeds.
    monkeypatch.setattr(timing, "WINDOW_LIMIT", 0)
    out = tmp_path / "r.json"
    command = ["--framework", "numpy", "--variant", "reference", "--epochs", "40", "--steady-window-s", "10"]
    args = parse_args([*config_flags("train.py"), *command, "--dataset", str(small_dataset), "--output", str(out)])
    assert run(args) == 0
    steady = read_record(out)["timings"]["steady"]
    assert steady["passes"] == 0 and steady["epochs"] == 0 and steady["block_s"] == []


def test_a_restart_puts_back_the_initial_weights_and_a_fresh_optimizer(small_dataset):
    from tiny_mlp_bench.dataset import read_dataset

    data = read_dataset(small_dataset)
    rows = data.train[:, :2]
    for framework, variant in (("numpy", "reference"), ("numpy", "fused"), ("torch", "seed"), ("torch", "sync_free")):
        spec = spec_for(variant, data)
        fw = registry.backend(framework).load("cpu")  # threads left as they are: the process is shared
        loop = registry.loop(framework, variant)
        untrained = np.asarray(loop(fw, spec, data, Clock()).predict(rows))
        training = loop(fw, spec, data, Clock())
        training.fit(Clock(), 3)
        assert not np.allclose(np.asarray(training.predict(rows)), untrained)
        assert training.restart(), f"{framework} {variant} restarts in place"
        np.testing.assert_array_equal(np.asarray(training.predict(rows)), untrained, err_msg=f"{framework} {variant}")
        training.fit(Clock(), 1)  # a fresh optimizer counts from no steps
        assert training.steps_taken() == math.ceil(len(data.train) / spec.batch_size), f"{framework} {variant}"


def test_a_busy_run_records_its_neighbour_and_one_thread_runs_on_one_thread(small_dataset, tmp_path):
    out = tmp_path / "r.json"
    args = run_args(small_dataset, out, "--variant", "one_thread", "--threads", 2, "--condition", "busy")
    assert run(args, fake_backend(), fake_loop(lambda f: 4 * f[:, 0] + 3 * f[:, 1] + 10)) == 0
    record = read_record(out)
    assert record["status"] == "ok", record["reason"]
    assert record["identity"]["condition"] == "busy" and record["identity"]["run_id"] == "torch-cpu-one_thread-busy-1"
    assert record["parameters"]["threads"] == 1  # the rung's count, whatever the job was given
    neighbour = record["neighbour"]
    assert (
        neighbour["core"] == max(os.sched_getaffinity(0)) and neighbour["wall_s"] >= record["timings"]["fit_predict_s"]
    )
    assert 0 < neighbour["cpu_share"] <= 1.1  # it kept its core busy while the run was timed
    idle = tmp_path / "idle.json"
    assert run(run_args(small_dataset, idle), fake_backend(), fake_loop(lambda f: 4 * f[:, 0] + 3 * f[:, 1] + 10)) == 0
    assert read_record(idle)["neighbour"] is None and read_record(idle)["identity"]["run_id"] == "torch-cpu-seed-1"


def test_the_parts_rung_sums_its_steps_parts_per_block_within_each_block(small_dataset, tmp_path):
    out = tmp_path / "torch-cpu-parts-1.json"
    window = ("--steady-window-s", 0.2, "--steady-block-s", 0.02)
    train(
        "torch", "--variant", "parts", "--dataset", small_dataset, "--output", out, "--epochs", 4, *window, check=True
    )
    record = read_record(out)
    assert record["status"] == "ok", record["reason"]
    assert record["parameters"]["variant_details"]["clock_reads_per_step"] == "7"
    for blocks in (record["timings"], record["timings"]["steady"]):
        parts = blocks["block_part_s"]
        assert set(parts) == set(LOOP_PARTS)  # keys are sorted in the file
        # One sum per block, each inside its block: a warm-up's or a dropped block's parts would spill over.
        for i, block_s in enumerate(blocks["block_s"]):
            within = sum(part[i] for part in parts.values())
            assert 0 < within <= block_s, (i, within, block_s)
        assert all(len(part) == len(blocks["block_s"]) for part in parts.values())
