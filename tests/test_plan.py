"""The GPU study's plan (tiny_mlp_bench/gpu_study/plan.py): which jobs come first, and how long each is expected
to take (tiny_mlp_bench/expected_time.py), from archives made here of synthetic records."""

import json
from pathlib import Path

import pytest

from helpers import synthetic_record
from tiny_mlp_bench import expected_time
from tiny_mlp_bench.gpu_study import plan

CONFIG = {
    "frameworks": ["torch", "keras_jax", "numpy"],
    "devices": ["cpu", "cuda"],
    "variants": {"torch": ["seed", "graphed", "fused_epoch"], "keras_jax": ["seed"], "numpy": ["fused"]},
    "repeats": 2,
    "claim_repeats": 1,  # every rung runs repeats times
    "epochs": 8,
    # In sorted order, as a config as run has them: the most specific pattern wins, not the first.
    "plan_estimates_s": {"*": 10, "probe-*": 90, "torch-cuda-*": 30},
}
GPU_MACHINE = {"cpu_model": "Test CPU", "logical_cpus": 2, "gpu_name": "Test GPU"}


def write_archive(archives: Path, name: str, started: str, records: list[dict]) -> None:
    folder = archives / name
    (folder / "runs").mkdir(parents=True)
    (folder / "provenance.json").write_text(json.dumps({"study": {"first_run_started": started}}))
    for record in records:
        (folder / "runs" / f"{record['identity']['run_id']}.json").write_text(json.dumps(record))


def on_gpu(record: dict, gpu: str = "Test GPU") -> dict:
    record["environment"]["gpu_name"] = gpu
    return record


@pytest.fixture
def archives(tmp_path, monkeypatch) -> Path:
    # This machine is the synthetic records' kind: their CPU model and count.
    monkeypatch.setattr(plan, "this_machine", lambda gpu: dict(GPU_MACHINE, gpu_name=gpu))
    return tmp_path / "archive"


def by_name(planned) -> dict[str, plan.Planned]:
    return {p.job.name: p for p in planned}


def test_the_question_comes_first_then_what_no_gpu_measured_then_the_rest(archives):
    # graphed was measured on a GPU before; fused_epoch never was.
    write_archive(archives, "old-gpu", "2026-01-01", [on_gpu(synthetic_record("torch", "cuda", 1, variant="graphed"))])
    planned = plan.plan(CONFIG, archives, "Test GPU")
    tiers = {p.job.name: p.tier for p in planned}
    # torch seed and, as the study has no Keras on TensorFlow, Keras seed through JAX, on each device.
    assert [name for name, tier in tiers.items() if tier == 1] == [
        "torch-cpu-seed-1",
        "torch-cuda-seed-1",
        "keras_jax-cpu-seed-1",
        "keras_jax-cuda-seed-1",
    ]
    # fused_epoch, the sweeps and the probes: no GPU measured them; the cpu twin comes with each.
    assert {tiers["torch-cuda-fused_epoch-1"], tiers["torch-cpu-fused_epoch-1"]} == {2}
    assert {tiers["sweep-cuda"], tiers["probe-torch-cpu"], tiers["probe-torch-cuda"]} == {2}
    # The numba floor on cuda neither, and its cpu twin comes with it.
    assert tiers["numpy-cuda-fused-1"] == tiers["numpy-cpu-fused-1"] == 2
    # measured before, or a repeat after the first (the question's too): the rest.
    assert tiers["torch-cuda-graphed-1"] == 3
    assert tiers["torch-cuda-fused_epoch-2"] == tiers["torch-cuda-seed-2"] == 3
    # The question's pair first (in --serial too), then the floor's runs and torch's probes that no GPU
    # measured (they lead their lanes), then by tier.
    leaders = ["numpy-cpu-fused-1", "numpy-cuda-fused-1", "probe-torch-cpu", "probe-torch-cuda"]
    assert [p.job.name for p in planned[:6]] == ["torch-cpu-seed-1", "torch-cuda-seed-1", *leaders]
    assert [p.tier for p in planned[6:]] == sorted(p.tier for p in planned[6:])
    # Per repeat torch 5 runs (graphed on cuda only), Keras 2, numpy's fused 2; then 2
    # sweeps and 4 probes (torch's and Keras on JAX's, each on cpu and cuda).
    assert len(planned) == 2 * (5 + 2 + 2) + 2 + 4


def first_tier(frameworks: list[str]) -> list[str]:
    variants = {**CONFIG["variants"], "tf_keras": ["seed"], "keras": ["seed"]}
    config = CONFIG | {"frameworks": frameworks, "variants": variants}
    return [p.job.name for p in plan.plan(config, Path("/nonexistent"), None) if p.tier == 1]


def test_with_keras_2_in_the_study_the_question_is_the_askers_keras():
    # Keras 2 (tf_keras) is the asker's tf.keras: Keras 3, on TensorFlow or JAX, waits for a later tier.
    assert first_tier(["torch", "tf_keras", "keras", "keras_jax"]) == [
        "torch-cpu-seed-1",
        "torch-cuda-seed-1",
        "tf_keras-cpu-seed-1",
        "tf_keras-cuda-seed-1",
    ]


def test_without_keras_2_the_question_is_keras_3_on_jax_even_beside_keras_3_on_tensorflow():
    assert first_tier(["torch", "keras", "keras_jax"]) == [
        "torch-cpu-seed-1",
        "torch-cuda-seed-1",
        "keras_jax-cpu-seed-1",
        "keras_jax-cuda-seed-1",
    ]


def test_expected_times_come_from_the_newest_archive_of_this_machine_kind(archives):
    old = synthetic_record("torch", "cuda", 1, variant="graphed")
    new = synthetic_record("torch", "cuda", 1, variant="graphed", step_ms=2.0)
    other_gpu = synthetic_record("torch", "cuda", 1, variant="fused_epoch")
    write_archive(archives, "old", "2026-01-01", [on_gpu(old)])
    write_archive(archives, "new", "2026-02-01", [on_gpu(new), on_gpu(other_gpu, "Other GPU")])
    planned = by_name(plan.plan(CONFIG, archives, "Test GPU"))
    graphed = planned["torch-cuda-graphed-1"]
    # Its span (load.started_at to ended_at), the fit scaled from the record's 4 epochs to the config's 8,
    # and Snakemake's start-up.
    span = expected_time.span_s(new)
    expected = plan.JOB_OVERHEAD_S + span + new["timings"]["phases_s"]["fit"] * (8 / 4 - 1)
    assert graphed.expected_s == pytest.approx(expected) and graphed.expected_from == "new"
    # Another GPU's record is not this machine's: the config's estimate, the most specific pattern.
    fused = planned["torch-cuda-fused_epoch-1"]
    assert (fused.expected_s, fused.expected_from) == (30, "estimate torch-cuda-*")
    assert planned["probe-torch-cpu"].expected_from == "estimate probe-*"
    assert planned["numpy-cpu-fused-1"].expected_s == 10


def test_a_job_no_estimate_matches_is_named():
    config = CONFIG | {"plan_estimates_s": {"torch-*": 5}}
    with pytest.raises(ValueError, match="no estimate in plan_estimates_s matches keras_jax-cpu-seed-1"):
        plan.plan(config, Path("/nonexistent"), None)


def test_later_rounds_run_in_the_order_the_seed_draws_and_round_r_holds_repeat_r():
    config = CONFIG | {"repeats": 3}
    planned = plan.plan(config, Path("/nonexistent"), None, seed=7)
    assert {p.round for p in planned} == {1, 2, 3}
    for p in planned:
        assert p.round == (p.job.repeat or 1)
    later = [p.job.name for p in planned if p.round > 1]
    assert later == [p.job.name for p in plan.plan(config, Path("/nonexistent"), None, seed=7) if p.round > 1]
    assert later != [p.job.name for p in plan.plan(config, Path("/nonexistent"), None, seed=8) if p.round > 1]
    # The same jobs whatever the seed; the first round keeps its priority order.
    other = plan.plan(config, Path("/nonexistent"), None, seed=8)
    assert sorted(later) == sorted(p.job.name for p in other if p.round > 1)
    assert [p.job.name for p in planned if p.round == 1] == [p.job.name for p in other if p.round == 1]


def test_the_questions_pair_runs_alone_then_the_lanes_side_by_side_round_by_round():
    planned = plan.plan(CONFIG, Path("/nonexistent"), None, seed=1)
    staged = [{lane: [p.job.name for p in jobs] for lane, jobs in stage.items()} for stage in plan.stages(planned)]
    assert [list(stage) for stage in staged] == [["alone"], ["cpu", "cuda"], ["alone"], ["cpu", "cuda"]]
    assert staged[0]["alone"] == ["torch-cpu-seed-1", "torch-cuda-seed-1"]
    assert sorted(staged[2]["alone"]) == ["torch-cpu-seed-2", "torch-cuda-seed-2"]
    # The floor and torch's probe head their lanes, then Keras's question rungs; every job of a lane is of
    # its device.
    for device in ("cpu", "cuda"):
        assert staged[1][device][:3] == [
            f"numpy-{device}-fused-1",
            f"probe-torch-{device}",
            f"keras_jax-{device}-seed-1",
        ]
    for stage in staged[1::2]:
        assert all(f"-{lane}" in name for lane, names in stage.items() for name in names)
    # --serial: one lane, the plan's order.
    assert plan.stages(planned, serial=True) == [{"serial": planned}]


def test_after_the_question_the_cheapest_first_probes_and_sweeps_before_rungs_as_long():
    estimates = {"*": 10, "numpy-*": 2, "torch-*-fused_epoch-*": 60, "probe-*": 60, "sweep-*": 5}
    planned = plan.plan(CONFIG | {"plan_estimates_s": estimates, "repeats": 1}, Path("/nonexistent"), None)
    cuda = [p.job.name for p in planned if p.lane == "cuda" and p.tier == 2]
    assert cuda == [
        "numpy-cuda-fused-1",  # the floor, then torch's probe, lead the lane: no GPU measured them
        "probe-torch-cuda",
        "sweep-cuda",
        "torch-cuda-graphed-1",
        "probe-keras_jax-cuda",
        "torch-cuda-fused_epoch-1",
    ]


def test_the_cuda_lane_starts_with_the_floor_then_the_torch_probe_before_the_keras_question():
    planned = plan.plan(CONFIG | {"repeats": 1}, Path("/nonexistent"), None)
    lane = [p.job.name for p in planned if p.lane == "cuda"]
    assert lane[:3] == ["numpy-cuda-fused-1", "probe-torch-cuda", "keras_jax-cuda-seed-1"]


def test_a_floor_measured_on_a_gpu_before_keeps_its_tiers_place(archives):
    write_archive(archives, "old-gpu", "2026-01-01", [on_gpu(synthetic_record("numpy", "cuda", 1, variant="fused"))])
    floor = by_name(plan.plan(CONFIG | {"repeats": 1}, archives, "Test GPU"))["numpy-cuda-fused-1"]
    assert floor.tier == 3 and plan.leads_its_lane(floor) == 2


def test_the_schedule_starts_no_job_that_no_longer_fits_and_a_stage_waits_for_every_lane():
    estimates = {"*": 10, "numpy-*": 1, "probe-torch-*": 1, "torch-cpu-seed-*": 4, "torch-cuda-seed-*": 6}
    estimates |= {"keras_jax-cuda-*": 27}
    planned = plan.plan(CONFIG | {"plan_estimates_s": estimates, "repeats": 1}, Path("/nonexistent"), None)
    starts = plan.schedule(planned, time_for_jobs=40)
    # Alone, one after the other; then both lanes start together, when the alone stage has ended.
    assert (starts["torch-cpu-seed-1"], starts["torch-cuda-seed-1"]) == (0, 4)
    assert starts["numpy-cpu-fused-1"] == starts["numpy-cuda-fused-1"] == 10
    assert starts["keras_jax-cpu-seed-1"] == starts["keras_jax-cuda-seed-1"] == 12  # after the floor and the probe
    # The cuda lane's Keras run takes it to the end: nothing after it fits. The cpu lane fits four of 10.
    leaders = {"numpy-cuda-fused-1", "probe-torch-cuda", "keras_jax-cuda-seed-1"}
    cuda_after = [p.job.name for p in planned if p.lane == "cuda" and p.job.name not in leaders]
    assert all(starts[name] is None for name in cuda_after) and starts["keras_jax-cuda-seed-1"] is not None
    cpu = [starts[p.job.name] for p in planned if p.lane == "cpu"]
    assert cpu == [10, 11, 12, 22] + [None] * (len(cpu) - 4)
