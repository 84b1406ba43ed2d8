"""torch probes of cpu only: how often the question's initialisation is dead at start (the last ReLU
never fires on the training rows, so no gradient ever flows and the model predicts 0); and the
``fused_epoch`` rung's compiled call, with its one fused kernel's share of it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from tiny_mlp_bench.probes.measure import time_calls

INIT_DRAWS = 1000  # initialisations drawn: seeds 0..INIT_DRAWS-1, as INIT_SCHEME says
FUSED_EPOCH_CALLS = 100  # compiled epoch calls of the fused_epoch rung per repeat
FUSED_EPOCH_PROFILED = 100  # calls under torch.profiler, for the kernel's own time
INIT_SCHEME = "torch.nn.Linear default (uniform ±1/sqrt(fan_in)), torch.manual_seed(0..999)"


def dead_at_start(torch, model, features) -> bool:
    """Whether the model's final ReLU gets input <= 0 on every row: it outputs 0 and passes no gradient, ever."""
    with torch.no_grad():
        pre_activation = model.linear2(torch.nn.functional.relu(model.linear1(features)))
    return bool((pre_activation <= 0).all())


def count_dead_inits(torch, hidden_units: int, train_features: np.ndarray, draws: int = INIT_DRAWS) -> int:
    """How many of the seeds 0..draws-1 give the asker's initialisation (manual_seed, build_model) dead at start.

    Counted on one intra-op thread (the caller's count is restored after): the answer does not
    depend on it, and a thousand tiny forwards on a pool of busy cores spend most of their time
    waking the pool.
    """
    from tiny_mlp_bench.backends.torch_common import build_model

    features = torch.tensor(train_features, dtype=torch.float)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        dead = 0
        for seed in range(draws):
            torch.manual_seed(seed)
            dead += dead_at_start(torch, build_model(torch, hidden_units), features)
    finally:
        torch.set_num_threads(threads)
    return dead


def fused_epoch_call(torch, spec, data) -> dict:
    """torch, cpu: the fused_epoch rung's compiled call on one fixed permutation, and its fused kernel's own time.

    The call is what the rung pays per epoch. torch.profiler, with Inductor's kernel profiling on,
    gives the time inside the one fused C++ kernel; the rest is what calling the compiled graph costs
    whatever the kernel does: Dynamo's guards and the wrapper that allocates and passes its buffers.
    The first call compiles (cold, about a minute on a 2-core machine) and is not timed.
    """
    import torch._inductor.config as inductor_config

    from tiny_mlp_bench.backends.torch_epoch import FusedEpochLoop
    from tiny_mlp_bench.timing import Clock

    inductor_config.cpp.enable_kernel_profile = True  # the kernel shows in the profiler under its own name
    loop = FusedEpochLoop(torch, dataclasses.replace(spec, device="cpu", variant="fused_epoch"), data, Clock())
    order = torch.randperm(len(data.train))
    loop.run_epoch(order)  # compiles
    call = time_calls(lambda: loop.run_epoch(order), FUSED_EPOCH_CALLS)
    with torch.profiler.profile() as profile:
        for _ in range(FUSED_EPOCH_PROFILED):
            loop.run_epoch(order)
    kernel_us = sum(e.self_cpu_time_total for e in profile.key_averages() if "cpp_fused" in e.key)
    return {
        **call,
        "steps_per_call": math.ceil(len(data.train) / spec.batch_size),
        "profiled_calls": FUSED_EPOCH_PROFILED,
        "kernel_us": round(kernel_us / FUSED_EPOCH_PROFILED, 4),
    }
