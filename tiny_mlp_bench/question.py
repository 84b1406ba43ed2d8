"""The question's facts: the asker's frameworks, the wall times the asker saw, and a run's optimiser steps."""

from __future__ import annotations

import math

from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.dataset import train_rows

TORCH = "torch"  # the asker's PyTorch
ASKERS_KERAS = "tf_keras"  # Keras 2: the asker's tf.keras (the question is from 2020)
TODAYS_KERAS = "keras"  # Keras 3 on TensorFlow: what tf.keras is today
# The Keras to run where the study has no TensorFlow (the torch image has JAX, not TensorFlow).
KERAS_WITHOUT_TENSORFLOW = "keras_jax"

# The asker's wall times (s) per pair; the question doesn't say Keras's device, so its 9 s stands beside both.
ASKER_SECONDS = {
    catalogue.pair_name(TORCH, "cuda"): 17.0,
    catalogue.pair_name(TORCH, "cpu"): 11.0,
    catalogue.pair_name(ASKERS_KERAS, "cpu"): 9.0,
    catalogue.pair_name(ASKERS_KERAS, "cuda"): 9.0,
}
# The asker's run (750 training rows, Adam's default rate); the config schema's defaults match (test_question.py).
ASKERS_RUN = {"epochs": 1000, "n_rows": 1000, "batch_size": 64, "hidden_units": 20, "learning_rate": 0.001}


def steps_per_run(config: dict) -> int:
    """Optimiser steps of one run of ``config``: its epochs of training rows in batches, the last one short."""
    return config["epochs"] * math.ceil(train_rows(config["n_rows"]) / config["batch_size"])


ASKER_STEPS = steps_per_run(ASKERS_RUN)  # 12,000: 12 steps an epoch


def askers_rung(framework: str) -> str | None:
    """The name of a framework's rung that is the asker's loop; None where its ladder has none."""
    found = registry.rung_with_role(framework, catalogue.Role.ASKERS)
    return found.name if found else None


def askers_keras(frameworks: list[str]) -> str:
    """The Keras standing for the asker's: the asker's own where the study runs it, else one needing no TensorFlow."""
    return ASKERS_KERAS if ASKERS_KERAS in frameworks else KERAS_WITHOUT_TENSORFLOW
