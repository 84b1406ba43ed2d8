"""The timed jobs a config asks for (tiny_mlp_bench/jobs.py): how many runs each rung gets, and their order."""

from __future__ import annotations

from collections import Counter

from tiny_mlp_bench.jobs import identity, rounds
from tiny_mlp_bench.jobs.run import training_job

CONFIG = {
    "frameworks": ["torch", "tf_keras", "keras", "numpy"],
    "devices": ["cpu", "cuda"],
    "variants": {
        "torch": ["seed", "sync_free"],
        "tf_keras": ["seed"],
        "keras": ["seed"],
        "numpy": ["reference", "reference_twin", "fused"],
    },
    "repeats": 3,
    "claim_repeats": 5,
    "run_order_seed": 0,
}


def runs_per_rung(config: dict) -> dict[str, int]:
    return Counter(job.name.rsplit("-", 1)[0] for job in rounds.training_runs(config))


def test_the_rungs_the_claims_compare_get_claim_repeats_and_the_rest_repeats():
    runs = runs_per_rung(CONFIG)
    # The asker's torch loop, the asker's Keras (Keras 2 where the study has it) and the floor, on each device.
    for rung in ("torch-cpu-seed", "torch-cuda-seed", "tf_keras-cpu-seed", "tf_keras-cuda-seed", "numpy-cpu-fused"):
        assert runs[rung] == 5, rung
    # The A/A control and the reference whose code it runs: their ratio is read against the claims'.
    assert runs["numpy-cpu-reference"] == runs["numpy-cpu-reference_twin"] == 5
    # Keras 3 on TensorFlow is not the asker's Keras beside Keras 2; sync_free is an ordinary rung.
    assert runs["keras-cpu-seed"] == runs["torch-cpu-sync_free"] == 3
    # Without Keras 2, Keras 3's seed stands for the asker's; repeats above claim_repeats win.
    without = runs_per_rung(CONFIG | {"frameworks": ["torch", "keras"], "repeats": 7})
    assert without["keras-cpu-seed"] == without["torch-cpu-sync_free"] == 7


def test_the_run_order_is_every_job_once_in_rounds_drawn_from_the_seed():
    order = rounds.run_order(CONFIG)
    assert sorted(order, key=str) == sorted(rounds.timed_jobs(CONFIG), key=str)
    # Round by round: no job's repeat comes before a lower one's.
    repeats = [job.repeat or 1 for job in order]
    assert repeats == sorted(repeats)
    # The same seed, the same order; another seed, another.
    assert order == rounds.run_order(dict(CONFIG))
    assert order != rounds.run_order(CONFIG | {"run_order_seed": 1})


def test_a_compiling_rungs_later_runs_share_its_cache_and_wait_for_its_first():
    first, later = (identity.Job("train", "cpu", "torch", "fused_epoch", repeat) for repeat in (1, 2))
    assert first.compile_cache == later.compile_cache == "results/compile_cache/torch-cpu-fused_epoch"
    # The first compiles cold into it; a later one starts after it, to reuse what it compiled.
    assert first.compiled_first is None and later.compiled_first == first
    # A rung that compiles nothing has no cache and waits for nothing; nor has a sweep or a probe.
    seed = identity.Job("train", "cpu", "torch", "seed", 2)
    assert seed.compile_cache is None and seed.compiled_first is None
    assert identity.Job("sweep_crossover", "cpu").compile_cache is None
    assert identity.Job("probe_fixed_costs", "cpu", "torch").compile_cache is None


def test_a_busy_run_is_its_own_rule_file_and_id_and_an_idle_runs_options_are_as_before():
    config = CONFIG | {"frameworks": ["torch"], "devices": ["cpu"], "conditions": ["idle", "busy"]}
    runs = rounds.training_runs(config)
    assert Counter(job.condition for job in runs) == {"idle": len(runs) // 2, "busy": len(runs) // 2}
    busy = identity.Job("train", "cpu", "torch", "seed", 2, identity.BUSY)
    assert busy.workflow_rule == "train_busy" and busy.name == "torch-cpu-seed-busy-2"
    assert busy.output == "results/runs/torch-cpu-seed-busy-2.json"
    assert busy.log == "logs/train_busy/torch-cpu-seed-busy-2.log"
    idle = identity.Job("train", "cpu", "torch", "seed", 2)
    assert idle.workflow_rule == "train" and idle.output == "results/runs/torch-cpu-seed-2.json"
    # The idle run's options name no condition, so that a study finished before conditions does not rerun.
    settings = config | {"epochs": 1000, "batch_size": 64, "learning_rate": 0.001, "hidden_units": 20}
    settings |= {"convergence_min_r2": 0.99, "steady_window_s": 1.0, "steady_block_s": 0.05, "require_gpu": False}
    assert "--condition" not in training_job(settings, idle, 2).flags()
    assert training_job(settings, busy, 2).flags()[-2:] == ["--condition", "busy"]
    # A busy compiling rung keeps a cache of its own, and its later runs wait for its own first.
    later = identity.Job("train", "cpu", "torch", "fused_epoch", 2, identity.BUSY)
    assert later.compile_cache.endswith("fused_epoch-busy") and later.compiled_first.condition == identity.BUSY
    # A config from before conditions (an archive's) asks for idle runs only.
    before = {key: value for key, value in config.items() if key != "conditions"}
    assert {job.condition for job in rounds.training_runs(before)} == {identity.IDLE}
