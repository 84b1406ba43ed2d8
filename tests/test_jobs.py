"""The timed jobs a config asks for (tiny_mlp_bench/jobs.py): how many runs each rung gets, and their order."""

from __future__ import annotations

from collections import Counter

from tiny_mlp_bench import jobs

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
    return Counter(job.name.rsplit("-", 1)[0] for job in jobs.training_runs(config))


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
    order = jobs.run_order(CONFIG)
    assert sorted(order, key=str) == sorted(jobs.timed_jobs(CONFIG), key=str)
    # Round by round: no job's repeat comes before a lower one's.
    repeats = [job.repeat or 1 for job in order]
    assert repeats == sorted(repeats)
    # The same seed, the same order; another seed, another.
    assert order == jobs.run_order(dict(CONFIG))
    assert order != jobs.run_order(CONFIG | {"run_order_seed": 1})


def test_a_compiling_rungs_later_runs_share_its_cache_and_wait_for_its_first():
    first, later = (jobs.Job("train", "cpu", "torch", "fused_epoch", repeat) for repeat in (1, 2))
    assert first.compile_cache == later.compile_cache == "results/compile_cache/torch-cpu-fused_epoch"
    # The first compiles cold into it; a later one starts after it, to reuse what it compiled.
    assert first.compiled_first is None and later.compiled_first == first
    # A rung that compiles nothing has no cache and waits for nothing; nor has a sweep or a probe.
    seed = jobs.Job("train", "cpu", "torch", "seed", 2)
    assert seed.compile_cache is None and seed.compiled_first is None
    assert jobs.Job("sweep_crossover", "cpu").compile_cache is None
    assert jobs.Job("probe_fixed_costs", "cpu", "torch").compile_cache is None
