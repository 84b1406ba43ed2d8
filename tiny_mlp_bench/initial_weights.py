"""A run's initial weights: one live draw, shared by every framework and rung."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SCHEME = "torch.nn.Linear's default: weights and biases uniform in ±1/√fan_in, drawn with NumPy from the run's seed"
MAX_DRAWS = 1000  # a width whose draws are all dead is a wrong config, not bad luck


@dataclass(frozen=True)
class InitialWeights:
    """The 2-h-1 network's weights, laid out for ``x @ w + b`` (torch keeps the transposes)."""

    w1: np.ndarray  # (2, h)
    b1: np.ndarray  # (h,)
    w2: np.ndarray  # (h, 1)
    b2: np.ndarray  # (1,)
    redraws: int  # dead draws thrown away before this one

    def as_list(self) -> list[np.ndarray]:
        """In Keras's order for ``set_weights``: kernel and bias of each layer."""
        return [self.w1, self.b1, self.w2, self.b2]


def draw(rng: np.random.Generator, hidden: int) -> list[np.ndarray]:
    """One draw of torch.nn.Linear's default initialisation, float32: w1, b1, w2, b2."""

    def uniform(fan_in, shape):
        bound = 1.0 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    return [uniform(2, (2, hidden)), uniform(2, hidden), uniform(hidden, (hidden, 1)), uniform(hidden, 1)]


def output_is_dead(weights: list[np.ndarray], features: np.ndarray) -> bool:
    """Whether the final ReLU's input is ≤ 0 on every row, so the network outputs 0 and gets no gradient."""
    w1, b1, w2, b2 = weights
    hidden = np.maximum(features.astype(np.float32) @ w1 + b1, 0)
    return bool(np.all(hidden @ w2 + b2 <= 0))


def live_initial_weights(seed: int, hidden: int, features: np.ndarray) -> InitialWeights:
    """The first draw from ``seed`` whose output unit is alive on at least one of ``features``' rows."""
    rng = np.random.default_rng(seed)
    for redraws in range(MAX_DRAWS):
        weights = draw(rng, hidden)
        if not output_is_dead(weights, features):
            return InitialWeights(*weights, redraws=redraws)
    raise ValueError(f"all {MAX_DRAWS} initial draws of a 2-{hidden}-1 network from seed {seed} are dead at start")
