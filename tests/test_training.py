"""The training programs: usage, records, skips, failures and scoring."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import run_script
from run_record import read_record, read_sweep
from training import Backend, TrainResult, run, score


def result_predicting(predict) -> TrainResult:
    return TrainResult(
        setup_s=0.0,
        epoch_s=[0.1],
        predict_s=0.0,
        fit_predict_s=0.1,
        final_train_loss=0.0,
        predict=predict,
    )


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


@pytest.mark.parametrize("script", ["train_torch.py", "train_keras.py"])
def test_help_describes_the_program(script):
    result = run_script(script, "--help")
    assert result.returncode == 0
    assert "--dataset" in result.stdout and "--require-gpu" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--epochs", "0"], "--epochs: must be a positive integer, got 0"),
        (["--learning-rate", "-1"], "--learning-rate: must be a positive number"),
        (["--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
        (["--variant", "fastest"], "argument --variant: invalid choice: 'fastest'"),
    ],
)
def test_usage_errors_name_the_option(small_dataset, tmp_path, args, message):
    out = tmp_path / "r.json"
    result = run_script("train_torch.py", "--dataset", small_dataset, "--output", out, *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert not out.exists()


def test_corrupt_dataset_fails_before_importing_and_writes_nothing(tmp_path):
    bad = tmp_path / "dataset.parquet"
    bad.write_bytes(b"garbage")
    out = tmp_path / "r.json"
    result = run_script("train_torch.py", "--dataset", bad, "--output", out)
    assert result.returncode == 1
    assert f"{bad} is not a readable Parquet file" in result.stderr
    assert "importing" not in result.stderr
    assert not out.exists()


def test_torch_cpu_run_writes_a_complete_record(small_dataset, tmp_path):
    out = tmp_path / "torch-cpu-seed-2.json"
    run_script("train_torch.py", "--dataset", small_dataset, "--output", out, "--epochs", 4, "--repeat", 2, check=True)
    record = read_record(out)
    assert record["identity"]["run_id"] == "torch-cpu-seed-2"
    assert record["status"] == "ok" and record["reason"] is None
    assert record["parameters"]["init_seed"] == 7 + 2 - 1
    t = record["timings"]
    assert len(t["epoch_s"]) == 4 and t["steps_per_epoch"] == 3  # 150 train rows / 64
    # The timing point holds set-up, every epoch and the predictions.
    assert t["fit_predict_s"] >= t["setup_s"] + t["fit_s"] + t["predict_s"] - 1e-6
    assert record["environment"]["threads"]["intra_op"] == 1
    assert record["environment"]["dataset_sha256"] and record["environment"]["versions"]["torch"]
    assert record["quality"]["test_mse"] is not None


def test_same_repeat_trains_the_same_weights(small_dataset, tmp_path):
    runs = []
    for name in ("a.json", "b.json"):
        run_script("train_torch.py", "--dataset", small_dataset, "--output", tmp_path / name, "--epochs", 2, check=True)
        runs.append(json.loads((tmp_path / name).read_text())["quality"])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("script", ["train_torch.py", "train_keras.py"])
def test_cuda_without_gpu_is_recorded_as_skipped(small_dataset, tmp_path, has_cuda, script):
    if has_cuda:
        pytest.skip("a CUDA device is present: the no-GPU path cannot be exercised here")
    out = tmp_path / "r.json"
    run_script(script, "--dataset", small_dataset, "--output", out, "--device", "cuda", check=True)
    record = read_record(out)
    assert record["status"] == "skipped"
    assert record["reason"].startswith("no CUDA device")
    assert record["quality"] is None and set(record["timings"]) == {"import_s"}


def test_require_gpu_fails_loudly_and_writes_nothing(small_dataset, tmp_path, has_cuda):
    if has_cuda:
        pytest.skip("a CUDA device is present: the no-GPU path cannot be exercised here")
    out = tmp_path / "r.json"
    result = run_script(
        "train_torch.py", "--dataset", small_dataset, "--output", out, "--device", "cuda", "--require-gpu"
    )
    assert result.returncode == 1
    assert "no CUDA device" in result.stderr and "--require-gpu" in result.stderr
    assert not out.exists()


def test_torch_cuda_run_on_a_gpu(small_dataset, tmp_path, has_cuda):
    if not has_cuda:
        pytest.skip("no CUDA device on this machine: the torch-cuda run is tested only where one exists")
    out = tmp_path / "r.json"
    run_script(
        "train_torch.py", "--dataset", small_dataset, "--output", out, "--device", "cuda", "--epochs", 2, check=True
    )
    record = read_record(out)
    assert record["status"] == "ok" and record["environment"]["gpu_name"]


def test_keras_cpu_run_writes_a_complete_record(small_dataset, tmp_path):
    out = tmp_path / "keras.json"
    result = run_script("train_keras.py", "--dataset", small_dataset, "--output", out, "--epochs", 3)
    assert result.returncode == 0, result.stderr
    record = read_record(out)
    assert record["status"] == "ok"
    assert len(record["timings"]["epoch_s"]) == 3 and record["timings"]["steps_per_epoch"] == 3
    env = record["environment"]
    assert env["versions"]["keras"].startswith("3.") and env["versions"]["keras_backend"] == "tensorflow"
    assert env["threads"] == {"intra_op": 1, "inter_op": 1}
    assert "epoch 3/3" in result.stderr  # progress reaches the log


def fake_backend(predict, unavailable=None) -> Backend:
    """A framework-free backend, to test the driver's own decisions in-process."""
    return Backend(
        name="torch",
        variants=("seed",),
        load=lambda: None,
        unavailable=lambda fw, device, variant: unavailable,
        train=lambda fw, spec, data: result_predicting(predict),
        describe=lambda fw, device: {"versions": {}, "threads": {}, "cuda": {}, "gpu_name": None},
    )


def test_driver_records_a_diverged_run_as_failed(small_dataset, tmp_path):
    out = tmp_path / "r.json"
    backend = fake_backend(lambda f: np.full(len(f), np.inf))
    assert run(backend, ["--dataset", str(small_dataset), "--output", str(out)]) == 0
    record = read_record(out)
    assert record["status"] == "failed" and "not finite" in record["reason"]
    assert record["quality"]["converged"] is False


def test_driver_records_an_unavailable_device_as_skipped(small_dataset, tmp_path):
    out = tmp_path / "r.json"
    backend = fake_backend(exact, unavailable="no CUDA device: fake")
    assert run(backend, ["--dataset", str(small_dataset), "--output", str(out), "--device", "cuda"]) == 0
    assert read_record(out)["reason"] == "no CUDA device: fake"


def test_numpy_gradients_match_torch_autograd():
    import torch

    from train_numpy import init_params, loss_and_grads

    rng = np.random.default_rng(0)
    params = init_params(rng, hidden=5)
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

    from train_numpy import Adam

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
    run_script(
        "train_numpy.py", "--dataset", small_dataset, "--output", out, "--epochs", 200, "--repeat", 3, check=True
    )
    record = read_record(out)
    assert record["identity"]["run_id"] == "numpy-cpu-reference-3"
    assert record["status"] == "ok" and record["quality"]["converged"], record["quality"]


def test_numpy_reference_on_cuda_is_skipped(small_dataset, tmp_path):
    out = tmp_path / "numpy.json"
    run_script("train_numpy.py", "--dataset", small_dataset, "--output", out, "--device", "cuda", check=True)
    assert read_record(out)["reason"] == "the NumPy reference runs on the CPU only"


@pytest.mark.parametrize(
    ("variant", "detail"),
    [
        ("batched_fetch", {"data": "DataLoader, batch fetch"}),
        ("resident", {"data": "device-resident, randperm per epoch"}),
        ("sync_free", {"adam": "fused", "zero_grad": "set_to_none"}),
        ("compiled", {"adam": "functional, torch.optim.Adam's formula, in place"}),
    ],
)
def test_torch_variants_train_the_same_model(small_dataset, tmp_path, variant, detail):
    out = tmp_path / f"{variant}.json"
    result = run_script(
        "train_torch.py",
        "--dataset",
        small_dataset,
        "--output",
        out,
        "--variant",
        variant,
        "--epochs",
        200,
        "--repeat",
        3,
    )
    assert result.returncode == 0, result.stderr
    record = read_record(out)
    assert record["identity"]["variant"] == variant and record["status"] == "ok"
    assert detail.items() <= record["parameters"]["variant_details"].items()
    assert len(record["timings"]["epoch_s"]) == 200 and record["timings"]["steps_per_epoch"] == 3
    # Weight seed 7 + 3 - 1 keeps the final ReLU alive on this data: every variant must learn the target.
    assert record["quality"]["converged"], record["quality"]


def test_graphed_on_cpu_is_skipped_with_the_reason(small_dataset, tmp_path):
    out = tmp_path / "graphed.json"
    run_script("train_torch.py", "--dataset", small_dataset, "--output", out, "--variant", "graphed", check=True)
    record = read_record(out)
    assert record["status"] == "skipped" and "cuda only" in record["reason"]


def test_graphed_on_a_gpu(small_dataset, tmp_path, has_cuda):
    if not has_cuda:
        pytest.skip("no CUDA device on this machine: CUDA graph capture can only be tested where one exists")
    out = tmp_path / "graphed.json"
    run_script(
        "train_torch.py",
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


@pytest.mark.parametrize("variant", ["seed", "xla", "steps_per_execution"])
def test_keras_variants_record_what_they_compiled(small_dataset, tmp_path, variant):
    out = tmp_path / f"{variant}.json"
    result = run_script(
        "train_keras.py", "--dataset", small_dataset, "--output", out, "--variant", variant, "--epochs", 2
    )
    assert result.returncode == 0, result.stderr
    details = read_record(out)["parameters"]["variant_details"]
    assert details["jit_compile"] == str(variant == "xla")
    assert details["steps_per_execution"] == ("3" if variant == "steps_per_execution" else "1")
    assert details["adam_epsilon"] == "1e-07"


def test_sweep_measures_every_point(tmp_path):
    out = tmp_path / "sweep.json"
    result = run_script(
        "sweep.py", "--device", "cpu", "--batch-sizes", "8,32", "--hidden-units", "4,16", "--steps", 2, "--output", out
    )
    assert result.returncode == 0, result.stderr
    record = read_sweep(out)
    assert record["status"] == "ok" and record["peak_gflops"] > 0
    assert [(p["batch_size"], p["hidden_units"]) for p in record["points"]] == [(8, 4), (32, 4), (8, 16), (32, 16)]
    assert all(len(p["block_step_s"]) == 3 and p["step_s"] > 0 for p in record["points"])
    assert "point 4/4" in result.stderr


def test_sweep_without_gpu_is_skipped_or_fails_with_require_gpu(tmp_path, has_cuda):
    if has_cuda:
        pytest.skip("a CUDA device is present: the no-GPU path cannot be exercised here")
    out = tmp_path / "sweep.json"
    args = ["--device", "cuda", "--batch-sizes", "8", "--hidden-units", "4", "--output", out]
    run_script("sweep.py", *args, check=True)
    assert read_sweep(out)["status"] == "skipped"
    out.unlink()
    result = run_script("sweep.py", *args, "--require-gpu")
    assert result.returncode == 1 and "--require-gpu" in result.stderr and not out.exists()


def test_sweep_rejects_a_bad_grid(tmp_path):
    result = run_script(
        "sweep.py", "--device", "cpu", "--batch-sizes", "8,x", "--hidden-units", "4", "--output", tmp_path / "s.json"
    )
    assert result.returncode == 2 and "expected comma-separated integers, got '8,x'" in result.stderr


def test_driver_records_an_exception_as_failed(small_dataset, tmp_path):
    def broken(fw, spec, data):
        raise RuntimeError("CUDA out of memory (test)")

    out = tmp_path / "r.json"
    backend = fake_backend(exact)
    backend = Backend(**{**backend.__dict__, "train": broken})
    assert run(backend, ["--dataset", str(small_dataset), "--output", str(out)]) == 0
    record = read_record(out)
    assert record["status"] == "failed" and record["reason"] == "RuntimeError: CUDA out of memory (test)"
    assert record["quality"] is None and set(record["timings"]) == {"import_s"}
