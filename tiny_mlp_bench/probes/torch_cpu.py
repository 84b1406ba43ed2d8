"""torch probe of cpu only: how often the question's initialisation is dead at start (the last ReLU never fires).
fused_epoch's call is split by the rung's own runs: a probe would compile it cold again, a minute."""

from __future__ import annotations

import numpy as np

INIT_DRAWS = 1000  # initialisations drawn: seeds 0..INIT_DRAWS-1, as INIT_SCHEME says
INIT_SCHEME = "torch.nn.Linear default (uniform ±1/sqrt(fan_in)), torch.manual_seed(0..999)"


def dead_at_start(torch, model, features) -> bool:
    """Whether the model's final ReLU gets input <= 0 on every row: it outputs 0 and passes no gradient, ever."""
    with torch.no_grad():
        pre_activation = model.linear2(torch.nn.functional.relu(model.linear1(features)))
    return bool((pre_activation <= 0).all())


def count_dead_inits(torch, hidden_units: int, train_features: np.ndarray, draws: int = INIT_DRAWS) -> int:
    """How many of the seeds 0..draws-1 give the asker's initialisation (manual_seed, build_model) dead at start."""
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
