"""The question's facts (tiny_mlp_bench/question.py): the asker's frameworks, wall times and steps."""

from __future__ import annotations

import pytest

from helpers import schema_defaults
from tiny_mlp_bench import catalogue, question


def test_the_askers_keras_is_keras_2_and_todays_is_keras_3_on_tensorflow():
    assert catalogue.framework(question.ASKERS_KERAS).keras == 2
    todays = catalogue.framework(question.TODAYS_KERAS)
    assert (todays.keras, todays.keras_backend) == (3, catalogue.framework(question.ASKERS_KERAS).keras_backend)
    # The Keras for a study without TensorFlow needs none of it.
    assert "tensorflow" not in catalogue.framework(question.KERAS_WITHOUT_TENSORFLOW).packages


def test_the_askers_seconds_are_the_questions_per_pair():
    assert question.ASKER_SECONDS == {"torch-cuda": 17.0, "torch-cpu": 11.0, "tf_keras-cpu": 9.0, "tf_keras-cuda": 9.0}


@pytest.mark.parametrize(
    ("frameworks", "keras"),
    [
        (["torch", "tf_keras", "keras", "keras_jax"], "tf_keras"),
        (["torch", "keras", "keras_jax"], "keras_jax"),  # Keras 3 on TensorFlow is not the asker's
        (["torch", "keras_jax", "numpy"], "keras_jax"),
    ],
)
def test_the_keras_that_stands_for_the_askers(frameworks, keras):
    assert question.askers_keras(frameworks) == keras


def test_steps_per_run_split_the_rows_as_the_dataset_does_and_batch_them():
    assert question.ASKER_STEPS == question.steps_per_run(question.ASKERS_RUN) == 1000 * 12
    assert question.steps_per_run({"epochs": 4, "n_rows": 1000, "batch_size": 64}) == 48
    # 101 rows: 26 test rows (a quarter, rounded up), 75 training rows, two batches of 64.
    assert question.steps_per_run({"epochs": 3, "n_rows": 101, "batch_size": 64}) == 6


def test_the_askers_rung_of_each_framework():
    assert question.askers_rung("torch") == "seed" and question.askers_rung("sklearn") is None


def test_the_config_schemas_defaults_are_the_askers_run():
    defaults = schema_defaults()
    assert {key: defaults[key] for key in question.ASKERS_RUN} == question.ASKERS_RUN
