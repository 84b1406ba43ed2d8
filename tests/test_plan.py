"""The GPU study's plan (tiny_mlp_bench/gpu_study/plan.py): which jobs come first, and how long each is expected
to take (tiny_mlp_bench/expected_time.py), from archives made here of synthetic records."""

import json
import re
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, synthetic_record
from tiny_mlp_bench import config_check, expected_time
from tiny_mlp_bench.gpu_study import plan
from tiny_mlp_bench.gpu_study.runner import ARCHIVE_RESERVE_S

CONFIG = {
    "frameworks": ["torch", "keras_jax", "numpy"],
    "devices": ["cpu", "cuda"],
    "variants": {"torch": ["seed", "graphed", "fused_epoch"], "keras_jax": ["seed"], "numpy": ["fused"]},
    "repeats": 1,
    "claim_repeats": 3,  # torch's and Keras's seed and the numba floor: the claims' rungs
    "question_rounds": 2,
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


def names(planned) -> list[str]:
    return [p.job.name for p in planned]


def test_the_questions_pair_runs_its_rounds_first_then_keras_then_the_torch_probes_then_the_rest():
    planned = plan.plan(CONFIG, Path("/nonexistent"), "Test GPU", seed=1)
    # question_rounds rounds of the pair, back to back, the device that goes first alternating; Keras's
    # question (through JAX: the study has no Keras 2) on each device once; torch's probes, the GPU's first.
    assert names(planned)[:10] == [
        "torch-cpu-seed-1",
        "torch-cuda-seed-1",
        "torch-cuda-seed-2",
        "torch-cpu-seed-2",
        "keras_jax-cpu-seed-1",
        "keras_jax-cuda-seed-1",
        "probe-torch-cuda",
        "probe-torch-cpu",
        # The rest: the later question rounds first.
        "torch-cpu-seed-3",
        "torch-cuda-seed-3",
    ]
    assert [p.phase for p in planned[:10]] == [plan.QUESTION] * 4 + [plan.KERAS] * 2 + [plan.PROBES] * 2 + [
        plan.REST
    ] * 2
    # Then the first round's other jobs, the numba floor first (no GPU measured anything here), then the later
    # rounds; every job once.
    rest = planned[10:]
    assert {p.job.name for p in rest[:2]} == {"numpy-cpu-fused-1", "numpy-cuda-fused-1"}
    rounds = [p.round for p in rest]
    assert rounds == sorted(rounds)
    assert (
        len(names(planned))
        == len(set(names(planned)))
        == (
            2 * 3  # torch seed, each device
            + 3  # graphed on cuda, fused_epoch on each device
            + 2 * 3  # Keras's seed
            + 2 * 3  # the numba floor
            + 2  # sweeps
            + 4  # torch's and Keras on JAX's probes, each device
        )
    )


def test_a_round_of_the_pair_runs_whole_or_not_at_all():
    estimates = {"*": 10, "torch-cpu-seed-*": 4, "torch-cuda-seed-*": 6}
    planned = by_name(plan.plan(CONFIG | {"plan_estimates_s": estimates}, Path("/nonexistent"), None))
    first, second = planned["torch-cuda-seed-2"], planned["torch-cpu-seed-2"]  # round 2: cuda first
    assert (first.needs_s, first.after, second.after) == (10, None, "torch-cuda-seed-2")
    ordered = list(planned.values())
    # 4 s left after two rounds, Keras and the probes: not the 10 s round 3 needs, though its cpu run (4 s) fits.
    time_for_jobs = 2 * 10 + 2 * 10 + 2 * 10 + 4
    starts = plan.schedule(ordered, time_for_jobs)
    assert starts["torch-cpu-seed-3"] is None and starts["torch-cuda-seed-3"] is None
    assert plan.schedule(ordered, time_for_jobs + 6)["torch-cuda-seed-3"] is not None
    # A study of one device has no pair: its runs are planned as any other's.
    alone = plan.plan(CONFIG | {"devices": ["cpu"]}, Path("/nonexistent"), None)
    assert all(p.after is None and p.needs_s == 0 for p in alone)


def keras_phase(frameworks: list[str]) -> list[str]:
    variants = {**CONFIG["variants"], "tf_keras": ["seed"], "keras": ["seed"]}
    config = CONFIG | {"frameworks": frameworks, "variants": variants}
    return [p.job.name for p in plan.plan(config, Path("/nonexistent"), None) if p.phase == plan.KERAS]


def test_with_keras_2_in_the_study_the_keras_question_is_the_askers_keras():
    # Keras 2 (tf_keras) is the asker's tf.keras: Keras 3, on TensorFlow or JAX, waits for the rest.
    assert keras_phase(["torch", "tf_keras", "keras", "keras_jax"]) == ["tf_keras-cpu-seed-1", "tf_keras-cuda-seed-1"]


def test_without_keras_2_the_keras_question_is_keras_3_on_jax_even_beside_keras_3_on_tensorflow():
    assert keras_phase(["torch", "keras", "keras_jax"]) == ["keras_jax-cpu-seed-1", "keras_jax-cuda-seed-1"]


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

    def later(seed: int) -> list[str]:
        planned = plan.plan(config, Path("/nonexistent"), None, seed=seed)
        return [p.job.name for p in planned if p.round > 1 and p.phase == plan.REST and not plan.is_question_run(p.job)]

    for p in plan.plan(config, Path("/nonexistent"), None, seed=7):
        assert p.round == (p.job.repeat or 1)
    assert later(7) == later(7) != later(8)
    assert sorted(later(7)) == sorted(later(8))  # the same jobs whatever the seed
    # Everything before them keeps its order.
    first = [names(plan.plan(config, Path("/nonexistent"), None, seed=seed))[: -len(later(seed))] for seed in (7, 8)]
    assert first[0] == first[1]


def test_in_the_first_round_of_the_rest_what_no_gpu_measured_leads_the_floor_first_then_the_cheapest():
    estimates = {"*": 10, "numpy-*": 12, "torch-*-fused_epoch-*": 60, "probe-*": 60, "sweep-*": 5}
    planned = plan.plan(CONFIG | {"plan_estimates_s": estimates}, Path("/nonexistent"), None)
    first = [p.job.name for p in planned if p.phase == plan.REST and p.round == 1 and not plan.is_question_run(p.job)]
    assert first == [
        "numpy-cpu-fused-1",  # the floor: a problem only its CUDA kernel has shows early
        "numpy-cuda-fused-1",
        "sweep-cpu",
        "sweep-cuda",
        "torch-cuda-graphed-1",
        "probe-keras_jax-cpu",
        "probe-keras_jax-cuda",
        "torch-cpu-fused_epoch-1",
        "torch-cuda-fused_epoch-1",
    ]


def test_what_a_gpu_measured_before_follows_what_none_has(archives):
    write_archive(archives, "old-gpu", "2026-01-01", [on_gpu(synthetic_record("numpy", "cuda", 1, variant="fused"))])
    planned = plan.plan(CONFIG, archives, "Test GPU")
    first = [p.job.name for p in planned if p.phase == plan.REST and p.round == 1 and not plan.is_question_run(p.job)]
    assert first[-2:] == ["numpy-cpu-fused-1", "numpy-cuda-fused-1"]


def test_the_schedule_starts_no_job_that_no_longer_fits_but_a_shorter_one_after_it():
    estimates = {"*": 10, "torch-cpu-seed-*": 4, "torch-cuda-seed-*": 6, "keras_jax-cuda-*": 27}
    planned = plan.plan(CONFIG | {"plan_estimates_s": estimates}, Path("/nonexistent"), None)
    starts = plan.schedule(planned, time_for_jobs=40)
    # One after the other: two rounds of the pair, then Keras on cpu; its cuda twin no longer fits, the
    # probes' 10 s still do.
    assert [starts[name] for name in names(planned)[:8]] == [0, 4, 10, 16, 20, None, 30, None]
    assert all(start is None for start in list(starts.values())[8:])
    # A replay: each job as long as it took, not as expected.
    replayed = plan.schedule(planned, time_for_jobs=40, took_s={"torch-cpu-seed-1": 1})
    assert replayed["torch-cuda-seed-1"] == 1


def replay_name(job) -> str:
    """The archived job whose time a planned one replays: its first round's; for a rung paced as the asker's loop
    (expected_time.measure_key), that loop's first run."""
    rule, device, framework, variant = expected_time.measure_key(job)
    if rule == "train" and variant != job.variant:
        return f"{framework}-{device}-{variant}-1"
    return re.sub(r"-\d+$", "-1", job.name)


def test_a_480_s_gpu_study_at_the_last_ones_pace_runs_4_question_rounds_then_keras_then_the_cuda_probe(
    tmp_path,
):
    """The plan of config/gpu.yaml replayed with the job durations, the set-up and the machine of the second H200
    GPU study, which ran one question round in a 262 s limit; its probes come from the first GPU study,
    which ran them. Planned as a node with those two archives would plan it."""
    studied = ("2026-12-04-nvidia-h200", "2026-12-04-nvidia-h200-2")
    gpu_studies = [ROOT / "results" / "archive" / name for name in studied]
    archives = tmp_path / "archive"
    archives.mkdir()
    for folder in gpu_studies:
        (archives / folder.name).symlink_to(folder)
    logs = [json.loads((folder / "logs" / "gpu_study.json").read_text()) for folder in gpu_studies]
    took = {job["name"]: job["took_s"] for log in logs for job in log["jobs"] if job["outcome"] == "done"}
    took |= {job["name"]: job["took_s"] for job in logs[1]["jobs"] if job["outcome"] == "done"}  # the second's pace
    setup_s = logs[1]["setup_s"]
    environment = json.loads((gpu_studies[1] / "runs" / "torch-cuda-seed-1.json").read_text())["environment"]
    machine = {key: environment[key] for key in ("cpu_model", "logical_cpus", "gpu_name")}
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config = config_check.with_catalogue_defaults(config | yaml.safe_load((ROOT / "config" / "gpu.yaml").read_text()))
    planned = plan.plan(config, archives, machine["gpu_name"], seed=1, machine=machine)
    # A later round's run takes what the GPU study's first took.
    replay = {p.job.name: took[replay_name(p.job)] for p in planned if p.job.repeat or p.job.name in took}
    time_for_jobs = 480 - ARCHIVE_RESERVE_S - setup_s
    starts = plan.schedule(planned, time_for_jobs, replay)
    question_rounds = [
        f"torch-{device}-seed-{r}" for r in range(1, 5) for device in (("cpu", "cuda") if r % 2 else ("cuda", "cpu"))
    ]
    first = [*question_rounds, "keras_jax-cpu-seed-1", "keras_jax-cuda-seed-1", "probe-torch-cuda"]
    assert names(planned)[: len(first)] == first
    for name in first:
        assert starts[name] is not None and starts[name] + replay[name] <= time_for_jobs, name
