"""Every run starts from a live network: the shared initial weights are redrawn while the output unit is dead."""

from __future__ import annotations

import numpy as np
import pytest

from tiny_mlp_bench.dataset import make_dataset
from tiny_mlp_bench.initial_weights import draw, live_initial_weights, output_is_dead


@pytest.fixture(scope="module")
def features() -> np.ndarray:
    table = make_dataset(seed=42, n_rows=1000).to_pandas()
    return table[table["split"] == "train"][["x", "y"]].to_numpy(np.float32)


def test_a_dead_output_unit_is_recognised():
    weights = [np.ones((2, 3), np.float32), np.zeros(3, np.float32), -np.ones((3, 1), np.float32), np.zeros(1)]
    rows = np.array([[0.5, 0.5], [0.1, 0.9]], np.float32)
    assert output_is_dead(weights, rows)  # every hidden unit is positive, every output weight negative
    weights[3] = np.array([10.0], np.float32)
    assert not output_is_dead(weights, rows)


def test_dead_draws_are_skipped_and_counted(features):
    seeds = range(40)
    first_draw_dead = [s for s in seeds if output_is_dead(draw(np.random.default_rng(s), 20), features)]
    assert first_draw_dead, "no seed in 0..39 draws a dead network first: the test would prove nothing"
    for seed in seeds:
        weights = live_initial_weights(seed, 20, features)
        assert not output_is_dead(weights.as_list(), features)
        assert (weights.redraws > 0) == (seed in first_draw_dead)
        assert [w.shape for w in weights.as_list()] == [(2, 20), (20,), (20, 1), (1,)]
        assert all(w.dtype == np.float32 for w in weights.as_list())


def test_the_same_seed_gives_the_same_weights(features):
    first, again = live_initial_weights(3, 20, features), live_initial_weights(3, 20, features)
    assert all(np.array_equal(a, b) for a, b in zip(first.as_list(), again.as_list(), strict=True))


def test_a_network_that_is_never_live_is_refused(features, monkeypatch):
    import tiny_mlp_bench.initial_weights as initial_weights

    monkeypatch.setattr(initial_weights, "output_is_dead", lambda weights, rows: True)
    with pytest.raises(ValueError, match="all 1000 initial draws of a 2-20-1 network from seed 0 are dead at start"):
        live_initial_weights(0, 20, features)
