"""The fixed-cost probes: records, skips and failures of scripts/probe_fixed_costs.py, and the dead-at-start count."""

from __future__ import annotations

import copy
import json
import math
import types

import numpy as np
import pytest

from helpers import A_GPU_DRIVER, config_flags, run_script, run_seeing, step_parts_fields, synthetic_probes
from tiny_mlp_bench.dataset import read_dataset
from tiny_mlp_bench.jobs import probe as probe_command
from tiny_mlp_bench.probes import torch_step
from tiny_mlp_bench.probes.keras_epoch import FIT_EPOCHS
from tiny_mlp_bench.probes.torch_cpu import count_dead_inits, dead_at_start
from tiny_mlp_bench.probes.torch_step import LOADER_EPOCHS, is_kernel
from tiny_mlp_bench.records import PROBE_SCHEMA_VERSION, RecordError, read_probe, validate_probe, write_probe
from tiny_mlp_bench.report.step_parts import step_parts
from tiny_mlp_bench.timing import CALL_REPEATS, time_calls


def probe(*args, check: bool = False):
    """Run scripts/probe_fixed_costs.py as its rule does at the config's defaults, with ``args`` after."""
    return run_script("probe_fixed_costs.py", *config_flags("probe_fixed_costs.py"), *args, check=check)


def positive_timing(timing: dict) -> None:
    assert timing["value_us"] > 0 and all(v > 0 for v in timing["repeat_us"])
    assert timing["repeats"] == len(timing["repeat_us"]) == len(timing["repeat_cpu_us"]) >= 1 and timing["calls"] >= 1
    assert all(cpu >= 0 for cpu in timing["repeat_cpu_us"])


@pytest.fixture(scope="module")
def torch_cpu_record(small_dataset, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("probe") / "torch-cpu.json"
    result = probe("--framework", "torch", "--device", "cpu", "--dataset", small_dataset, "--output", out)
    assert result.returncode == 0, result.stderr
    assert "probe-torch-cpu: eager op" in result.stderr
    return read_probe(out)


@pytest.mark.slow
def test_torch_cpu_probe_writes_a_valid_record(torch_cpu_record):
    record = torch_cpu_record
    assert record["record_type"] == "tiny-mlp-bench.probe" and record["schema_version"] == PROBE_SCHEMA_VERSION
    assert (record["framework"], record["device"], record["status"], record["reason"]) == ("torch", "cpu", "ok", None)
    found = record["measurements"]
    # The fused_epoch rung's call is timed by its own runs (test_training), not compiled once more here.
    assert set(found) == {"eager_op_us", "seed_step", "loader_fetch", "initialisation"}
    positive_timing(found["eager_op_us"])
    # The DataLoader alone, a batch: the small dataset's 150 training rows are 3 batches an epoch.
    positive_timing(found["loader_fetch"])
    assert found["loader_fetch"]["batches_per_call"] == LOADER_EPOCHS * 3
    # The same fetch in the parts its code runs, each timed alone: the sampler by whole epochs, as the loader.
    fetch_parts = found["loader_fetch"]["fetch_parts"]
    assert set(fetch_parts) == {"sampler", "rows", "collate"}
    for timing in fetch_parts.values():
        positive_timing(timing)
    assert fetch_parts["sampler"]["batches_per_call"] == LOADER_EPOCHS * 3
    # The loop less as many steps on one batch: the fetch and the copy between steps, with no clock inside the loop.
    between = found["loader_fetch"]["between_steps"]
    for timing in (between["loop"], between["steps"]):
        positive_timing(timing)
        assert timing["batches_per_call"] == LOADER_EPOCHS * 3
    assert between["value_us"] == pytest.approx(between["loop"]["value_us"] - between["steps"]["value_us"], abs=1e-3)
    step = found["seed_step"]
    positive_timing(step)
    for count in ("aten_calls_per_step", "leaf_aten_ops_per_step", "profiled_steps"):
        assert isinstance(step[count], int) and step[count] > 0, count
    assert step["leaf_aten_ops_per_step"] <= step["aten_calls_per_step"]
    assert "kernels_per_step" not in step and "launch_self_us_per_step" not in step  # cuda only
    init = found["initialisation"]
    assert init["draws"] == 1000 and 0 <= init["dead"] <= 1000
    assert record["environment"]["dataset_sha256"] and record["load"]["peak_host_memory_mb"] > 0


@pytest.mark.slow
def test_the_torch_cpu_probe_splits_the_step_into_the_ops_own_time_and_the_profilers_cost(torch_cpu_record):
    step = torch_cpu_record["measurements"]["seed_step"]
    aten_self, profiled = step["aten_self_us_per_step"], step["profiled_wall_us_per_step"]
    # Self time counts each microsecond of the profiled steps once, so it stays below their wall time.
    assert 0 < aten_self < profiled
    by_op = step["aten_self_by_op"]
    assert {"aten::addmm", "aten::mse_loss"} <= set(by_op)
    assert sum(op["self_us_per_step"] for op in by_op.values()) == pytest.approx(aten_self, abs=0.01)
    assert sum(op["calls_per_step"] for op in by_op.values()) == pytest.approx(step["aten_calls_per_step"], abs=0.5)
    cost = step["profiler_cost_per_op"]
    # Its sign is a measurement, the difference of two timings: beside another test it has come out below zero.
    assert cost["op"] == "aten::view" and math.isfinite(cost["per_op_us"])
    assert cost["per_op_us"] == pytest.approx(cost["profiled"]["value_us"] - cost["unprofiled"]["value_us"], abs=1e-3)
    assert cost["unprofiled"]["calls"] == step["aten_calls_per_step"] * step["profiled_steps"]
    for timing in (cost["unprofiled"], cost["profiled"]):
        positive_timing(timing)
    # The report reads the record as written. Whether the ops' own time comes out above zero is a measurement, not
    # checked here: tests run two at a time, and the report says where the profiler's cost exceeds the self time.
    parts = step_parts("cpu", step)
    assert parts.aten_self_s == pytest.approx(aten_self * 1e-6) and parts.aten_ops == step["aten_calls_per_step"]
    assert parts.aten_own_s == pytest.approx((aten_self - cost["per_op_us"] * step["aten_calls_per_step"]) * 1e-6)


@pytest.mark.slow
def test_the_recorded_dead_count_is_the_asker_initialisation_over_1000_seeds(torch_cpu_record, small_dataset):
    import torch

    features = read_dataset(small_dataset).train[:, :2]
    assert count_dead_inits(torch, 20, features) == torch_cpu_record["measurements"]["initialisation"]["dead"]


def test_dead_count_matches_a_direct_recount(small_dataset):
    import torch

    from tiny_mlp_bench.backends.torch_common import build_model

    features = read_dataset(small_dataset).train[:, :2]
    expected = 0
    for seed in range(12):  # recount by hand in NumPy, from the weights torch drew
        torch.manual_seed(seed)
        w1, b1, w2, b2 = (p.detach().numpy().astype(np.float64) for p in build_model(torch, 20).parameters())
        expected += bool(np.all(np.maximum(features @ w1.T + b1, 0) @ w2.T + b2 <= 0))
    assert count_dead_inits(torch, 20, features, draws=12) == expected
    assert 0 < expected < 12  # a few seeds of each kind on this data, so the comparison means something


def test_dead_at_start_on_hand_made_weights():
    import torch

    from tiny_mlp_bench.backends.torch_common import build_model

    features = torch.tensor([[0.25, 0.5], [0.75, 0.5], [0.0, 1.0]])  # sums exact in float32
    model = build_model(torch, 3)
    with torch.no_grad():
        model.linear1.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]))
        model.linear1.bias.zero_()
        model.linear2.weight.copy_(torch.tensor([[1.0, 1.0, 0.0]]))
        model.linear2.bias.fill_(-0.5)  # 0.75 - 0.5, 1.25 - 0.5, 1.0 - 0.5: fires on every row
    assert not dead_at_start(torch, model, features)
    with torch.no_grad():
        model.linear2.bias.fill_(-1.0)  # fires on the second row only: alive
    assert not dead_at_start(torch, model, features)
    with torch.no_grad():
        model.linear2.bias.fill_(-1.25)  # the largest input, 1.25, reaches exactly 0: dead on every row
    assert dead_at_start(torch, model, features)
    with torch.no_grad():
        model.linear2.weight.zero_()
        model.linear2.bias.fill_(0.01)  # a constant positive output is alive
    assert not dead_at_start(torch, model, features)


@pytest.mark.slow
def test_torch_cuda_probe_without_a_gpu_is_skipped_or_required(small_dataset, tmp_path, has_cuda):
    if has_cuda:
        pytest.skip("a CUDA device is present")
    out = tmp_path / "torch-cuda.json"
    args = ("--framework", "torch", "--device", "cuda", "--dataset", small_dataset, "--output", out)
    flags = config_flags("probe_fixed_costs.py")
    run_seeing(A_GPU_DRIVER, "probe_fixed_costs.py", *flags, *args, check=True)  # a GPU driver shows: torch is asked
    record = read_probe(out)
    assert record["status"] == "skipped" and record["measurements"] == {}
    assert record["reason"].startswith("no CUDA device: torch.cuda.is_available() is False")
    if "+cpu" in record["environment"]["versions"]["torch"]:
        assert "a CPU-only build" in record["reason"]

    out.unlink()
    result = probe(*args, "--require-gpu")
    assert result.returncode == 1 and not out.exists()
    assert "--require-gpu" in result.stderr and "no CUDA device" in result.stderr


def test_a_missing_dataset_is_an_error(tmp_path):
    result = probe("--framework", "torch", "--device", "cpu", "--dataset", tmp_path / "none.parquet", "--output", "x")
    assert result.returncode == 1 and "does not exist" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "field"),
    [
        (
            lambda r: r["measurements"]["seed_step"].update(leaf_aten_ops_per_step=2.5),
            "measurements/seed_step/leaf_aten_ops_per_step",
        ),
        (lambda r: r["measurements"]["eager_op_us"].update(value_us=-1.0), "measurements/eager_op_us/value_us"),
        # The step's parts come whole: self time without the profiler's cost would be read as the ops' own.
        (lambda r: r["measurements"]["seed_step"].pop("profiler_cost_per_op"), "measurements/seed_step"),
        (
            lambda r: r["measurements"]["seed_step"]["aten_self_by_op"]["aten::addmm"].pop("self_us_per_step"),
            "measurements/seed_step/aten_self_by_op/aten::addmm",
        ),
        (lambda r: r["measurements"]["initialisation"].pop("dead"), "measurements/initialisation"),
        (lambda r: r["measurements"].pop("seed_step"), "measurements"),  # an ok torch record must have it
        (lambda r: r["measurements"].update(warp_speed={}), "measurements"),
        (lambda r: r.update(reason="but it was fine"), "reason"),
        (lambda r: r.update(framework="jax"), "framework"),
        (lambda r: r["environment"].update(host=3), "environment/host"),  # the run schema's block, by $ref
        (lambda r: r["load"].pop("before"), "load"),
    ],
)
def test_a_wrong_field_fails_validation_naming_it(torch_cpu_record, tmp_path, change, field):
    record = copy.deepcopy(torch_cpu_record)
    change(record)
    with pytest.raises(RecordError, match=f"field {field}"):
        validate_probe(record)
    out = tmp_path / "bad.json"
    with pytest.raises(RecordError):
        write_probe(record, out)
    assert not out.exists()


def test_a_cuda_probe_that_splits_the_step_has_its_launch_time_and_an_older_one_need_not():
    cuda = synthetic_probes(cuda=True)[-1]
    validate_probe(cuda)  # from before the parts were measured, as the archived GPU probe
    step = cuda["measurements"]["seed_step"]
    step |= step_parts_fields(aten_self_us=500.0, cost_per_op_us=0.3)
    with pytest.raises(RecordError, match="field measurements/seed_step: 'launch_self_us_per_step' is a dependency"):
        validate_probe(cuda)
    step["launch_self_us_per_step"] = 120.0
    validate_probe(cuda)


def test_read_probe_names_an_unreadable_file(tmp_path):
    bad = tmp_path / "torch-cpu.json"
    bad.write_text("{not json")
    with pytest.raises(RecordError, match=r"torch-cpu\.json: not a readable JSON record"):
        read_probe(bad)


@pytest.mark.slow
def test_an_error_while_measuring_is_recorded_as_failed_with_what_was_measured(small_dataset, tmp_path, monkeypatch):
    def half_way(torch, device, data, *args, **kwargs):
        found = args[-2]
        found["eager_op_us"] = {"value_us": 4.0, "calls": 10, "repeats": 1, "repeat_us": [4.0]}
        raise RuntimeError("the device fell over")

    monkeypatch.setattr(probe_command, "torch_probes", half_way)
    out = tmp_path / "torch-cpu.json"
    argv = ["--framework", "torch", "--device", "cpu", "--dataset", str(small_dataset), "--output", str(out)]
    assert probe_command.main([*config_flags("probe_fixed_costs.py"), *argv]) == 0
    record = read_probe(out)
    assert record["status"] == "failed" and record["reason"] == "RuntimeError: the device fell over"
    assert record["measurements"] == {"eager_op_us": {"value_us": 4.0, "calls": 10, "repeats": 1, "repeat_us": [4.0]}}


def test_only_kernel_activities_count_as_kernels():
    from torch.autograd import DeviceType

    def event(name, device_type, activity):
        return types.SimpleNamespace(name=name, device_type=device_type, activity_type=activity)

    assert is_kernel(event("void add_kernel<float>", DeviceType.CUDA, "kernel"), DeviceType)
    assert not is_kernel(event("Memcpy HtoD (Pageable -> Device)", DeviceType.CUDA, "gpu_memcpy"), DeviceType)
    assert not is_kernel(event("aten::add_", DeviceType.CPU, "cpu_op"), DeviceType)
    assert not is_kernel(event("Memset (Device)", DeviceType.CUDA, None), DeviceType)  # no activity type
    assert is_kernel(event("void add_kernel<float>", DeviceType.CUDA, None), DeviceType)


def test_time_calls_divides_by_calls_and_kernels():
    calls = []
    timed = time_calls(lambda: calls.append(1), calls=5, repeats=3, kernels_per_call=10)
    assert len(calls) == 5 * (3 + 1)  # one warm-up repeat
    assert timed["calls"] == 5 and timed["repeats"] == 3 and timed["kernels_per_call"] == 10
    assert timed["value_us"] == sorted(timed["repeat_us"])[1]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("framework", "backend", "keras_version"),
    [
        ("tf_keras", "tensorflow", ("tf_keras", "2.")),
        ("keras", "tensorflow", ("keras", "3.")),
        ("keras_jax", "jax", ("keras", "3.")),
    ],
)
def test_keras_cpu_probe_writes_a_valid_record(small_dataset, tmp_path, framework, backend, keras_version):
    out = tmp_path / f"{framework}-cpu.json"
    result = probe("--framework", framework, "--device", "cpu", "--dataset", small_dataset, "--output", out)
    assert result.returncode == 0, result.stderr
    record = read_probe(out)
    assert (record["framework"], record["status"]) == (framework, "ok"), record["reason"]
    fit = record["measurements"]["fit_epoch"]
    assert fit["steps_per_epoch"] == 3  # 150 train rows in batches of 64
    for size in ("one_step_epoch", "many_step_epoch"):
        positive_timing(fit[size])
        assert fit[size]["repeats"] == FIT_EPOCHS * fit["fits"]
    assert fit["fixed_per_epoch_us"] > 0
    assert fit["per_step_us"] == pytest.approx(
        (fit["many_step_epoch"]["value_us"] - fit["one_step_epoch"]["value_us"]) / 2, abs=1e-3
    )
    versions = record["environment"]["versions"]
    assert versions["keras_backend"] == backend and versions[keras_version[0]].startswith(keras_version[1])
    assert json.loads(out.read_text()) == record


def test_the_profilers_cost_goes_on_past_an_event_count_mismatch_and_records_it(monkeypatch, capsys):
    # On a scarce GPU study a raise here would discard the whole probe: the mismatch is recorded instead.
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch_step, "PROFILER_COST_OP", "aten::no_such_op")  # so the profiler records none of them
    cost = torch_step.profiler_cost(torch, "cpu", False, ops=10)
    assert cost["events_mismatch"] == {"recorded": 0, "calls": 10 * (CALL_REPEATS + 1)}
    assert cost["per_op_us"] == pytest.approx(cost["profiled"]["value_us"] - cost["unprofiled"]["value_us"], abs=1e-3)
    assert "recorded 0 aten::no_such_op events of 80 calls" in capsys.readouterr().err
