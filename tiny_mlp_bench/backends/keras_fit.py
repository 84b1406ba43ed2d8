"""Keras 2 and Keras 3: the question's MLP trained with the asker's ``compile`` and ``fit``, and the Keras rungs."""

from __future__ import annotations

import math
import os

import numpy as np

from tiny_mlp_bench.backends.contract import Backend, RunSpec
from tiny_mlp_bench.backends.keras_runtime import (
    KerasRuntime,
    describe,
    loader,
    peak_gpu_memory_mb,
    prepare,
    start_device,
    wait_for_device,
)
from tiny_mlp_bench.catalogue import DEVICES, Role, Rung, one_thread

# framework -> (backend, the module Keras is imported as)
KERAS_BACKENDS = {
    "tf_keras": ("tensorflow", "tf_keras"),
    "keras": ("tensorflow", "keras"),
    "keras_jax": ("jax", "keras"),
    "keras_torch": ("torch", "keras"),
}

EPOCHS_PER_BLOCK = 50


def epoch_clock(keras, clock, epochs_per_fit_epoch: int = 1):
    """A Keras callback closing a block of ``epochs_per_fit_epoch`` epochs at the end of every ``fit`` epoch."""

    class EpochClock(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            clock.block_done(epochs_per_fit_epoch)

    return EpochClock()


COMPILE_OPTIONS = {
    "seed": lambda steps_per_epoch: {},
    "autotune_off": lambda steps_per_epoch: {},  # the asker's compile: only fit's dataset differs
    "one_thread": lambda steps_per_epoch: {},  # the asker's compile: only TensorFlow's thread pools differ
    "onednn_off": lambda steps_per_epoch: {},  # the asker's compile: only TensorFlow's CPU kernels differ
    "legacy_adam": lambda steps_per_epoch: {},  # the asker's compile: only the Adam differs
    "xla": lambda steps_per_epoch: {"jit_compile": True},
    "steps_per_execution": lambda steps_per_epoch: {"steps_per_execution": steps_per_epoch},
    "epoch_blocks": lambda steps_per_epoch: {
        "steps_per_execution": steps_per_epoch * EPOCHS_PER_BLOCK,
        "jit_compile": True,
    },
}


class FitRun:
    """The asker's ``Sequential`` + ``compile("mse", adam)``, then ``fit`` and ``predict`` on 64 test rows."""

    def __init__(self, fw: KerasRuntime, spec: RunSpec, data, clock):
        keras = fw.keras
        self.fw, self.keras, self.spec, self.data = fw, keras, spec, data
        with clock.phase("data"):
            self.x_train, self.y_train = data.train[:, :2], data.train[:, 2]  # host arrays: nothing to wait for
        with clock.phase("model"):
            # keras.Input builds the weights here, not inside fit, so set-up is timed on its own.
            self.model = keras.Sequential(
                [
                    keras.Input(shape=(2,)),
                    keras.layers.Dense(spec.hidden_units, activation="relu"),
                    keras.layers.Dense(1, activation="relu"),
                ]
            )
            self.model.set_weights(spec.weights.as_list())  # the run's shared live draw, not Glorot's
            wait_for_device(fw, spec.device)
        self.steps_per_epoch = math.ceil(len(self.x_train) / spec.batch_size)
        with clock.phase("optimizer"):
            options = COMPILE_OPTIONS[spec.variant](self.steps_per_epoch)
            optimizer = self.adam()(learning_rate=spec.learning_rate)
            self.model.compile(loss="mse", optimizer=optimizer, **options)
            wait_for_device(fw, spec.device)
        self.history = None

    def adam(self):
        return self.keras.optimizers.Adam

    def fit(self, clock, epochs: int) -> None:
        self.history = self.model.fit(
            self.x_train,
            self.y_train,
            batch_size=self.spec.batch_size,
            epochs=epochs,
            verbose=0,
            callbacks=[epoch_clock(self.keras, clock)],
        )
        clock.since_last_block("fit_end")  # fit's pause after its last epoch, on every Keras and backend

    def predict_test_batch(self) -> None:
        self.model.predict(self.data.test[: self.spec.batch_size, :2], verbose=0)

    def predict(self, features):
        return self.model.predict(features, batch_size=4096, verbose=0)

    def final_train_loss(self) -> float:
        return self.history.history["loss"][-1]

    def steps_taken(self) -> int:
        iterations = self.model.optimizer.iterations
        if self.fw.keras_2:  # a tf.Variable; Keras 2 has no keras.ops
            return int(iterations.numpy())
        return int(self.keras.ops.convert_to_numpy(iterations))

    def host_syncs_per_epoch(self) -> int | None:
        return None  # TensorFlow has no sync debug mode to count them with

    def after_timing(self) -> dict[str, str]:
        return {}

    def restart(self) -> bool:
        return False  # a new model and optimizer: Keras's own state is not ours to zero

    @property
    def details(self) -> dict[str, str]:
        steps_per_execution = (
            int(self.model._steps_per_execution.numpy()) if self.fw.keras_2 else self.model.steps_per_execution
        )
        return {
            "keras": f"{self.keras.__version__} ({'Keras 2, tf-keras' if self.fw.keras_2 else 'Keras 3'})",
            "keras_backend": self.fw.backend,
            # Keras 2's default None compiles without XLA.
            "jit_compile": str(bool(self.model.jit_compile) if self.fw.keras_2 else self.model.jit_compile),
            "steps_per_execution": str(steps_per_execution),
            "adam_epsilon": str(self.model.optimizer.epsilon),
            "optimizer": f"{type(self.model.optimizer).__module__}.{type(self.model.optimizer).__name__}",
            "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "unset: TensorFlow's default"),
            "shuffle": "fit shuffles the rows each epoch",
        }


class LegacyAdamRun(FitRun):
    """legacy_adam (Keras 2): the asker's ``fit`` with the Adam that Keras 2 had as its default before TensorFlow 2.11
    made the new optimizers it, and keeps as ``optimizers.legacy.Adam``."""

    def adam(self):
        return self.keras.optimizers.legacy.Adam


class AutotuneOffRun(FitRun):
    """autotune_off (Keras 2): the asker's ``fit`` with tf.data autotuning off on tf-keras's own dataset."""

    def fit(self, clock, epochs: int) -> None:
        from tf_keras.src.engine import data_adapter

        adapters_dataset = data_adapter.TensorLikeDataAdapter.get_dataset
        options = self.fw.lib.data.Options()
        options.autotune.enabled = False
        data_adapter.TensorLikeDataAdapter.get_dataset = lambda adapter: adapters_dataset(adapter).with_options(options)
        try:
            super().fit(clock, epochs)
        finally:
            data_adapter.TensorLikeDataAdapter.get_dataset = adapters_dataset

    @property
    def details(self) -> dict[str, str]:
        return {**super().details, "data": "tf-keras's array adapter's dataset, tf.data autotuning off"}


class EpochBlocksRun(FitRun):
    """epoch_blocks: EPOCHS_PER_BLOCK epochs per ``fit`` epoch, all of a block's steps in one XLA-compiled call."""

    epochs_per_block = EPOCHS_PER_BLOCK  # one fit epoch's epochs: fit's own calls, a block each

    def __init__(self, fw, spec: RunSpec, data, clock):
        super().__init__(fw, spec, data, clock)
        self.rng = np.random.default_rng(spec.init_seed)

    def draw_orders(self, epochs: int) -> np.ndarray:
        """One permutation of the train rows per epoch, (epochs, rows)."""
        return np.stack([self.rng.permutation(len(self.x_train)) for _ in range(epochs)])

    def epochs_of_batches(self, orders: np.ndarray):
        """A tf.data pipeline of each epoch's batches in its order: epoch after epoch, each ending short."""
        tf = self.fw.lib
        x, y = tf.constant(self.x_train), tf.constant(self.y_train)

        def one_epoch(order):
            rows = (tf.gather(x, order), tf.gather(y, order))
            return tf.data.Dataset.from_tensor_slices(rows).batch(self.spec.batch_size)

        return tf.data.Dataset.from_tensor_slices(orders).flat_map(one_epoch).prefetch(tf.data.AUTOTUNE)

    def fit(self, clock, epochs: int) -> None:
        orders = self.draw_orders(epochs)
        blocks, rest = divmod(epochs, EPOCHS_PER_BLOCK)
        if blocks:
            self.fit_blocks(clock, orders[: blocks * EPOCHS_PER_BLOCK], EPOCHS_PER_BLOCK)
        if rest:  # the epochs left over: one shorter fit epoch on a pipeline of their own
            self.fit_blocks(clock, orders[blocks * EPOCHS_PER_BLOCK :], rest)
        clock.since_last_block("fit_end")  # the last fit call's pause (an earlier call's is in the next block)

    def fit_blocks(self, clock, orders: np.ndarray, epochs_per_block: int) -> None:
        """``fit`` over ``orders``, one fit epoch per block of ``epochs_per_block`` epochs (already shuffled)."""
        self.history = self.model.fit(
            self.epochs_of_batches(orders),
            epochs=len(orders) // epochs_per_block,
            steps_per_epoch=epochs_per_block * self.steps_per_epoch,
            shuffle=False,
            verbose=0,
            callbacks=[epoch_clock(self.keras, clock, epochs_per_block)],
        )

    @property
    def details(self) -> dict[str, str]:
        return {
            **super().details,
            "shuffle": "a NumPy permutation per epoch from the run's seed, all drawn when fit starts",
            "data": f"tf.data: each epoch's rows in its order, batched; {EPOCHS_PER_BLOCK} epochs per fit epoch",
        }


def keras_backend(framework: str) -> Backend:
    backend, keras_module = KERAS_BACKENDS[framework]
    return Backend(
        name=framework,
        load=loader(backend, keras_module),
        prepare=prepare,
        start_device=start_device,
        describe=describe,
        peak_gpu_memory_mb=peak_gpu_memory_mb,
    )


def backend_of(framework: str) -> str:
    return KERAS_BACKENDS[framework][0]


BACKENDS = tuple(keras_backend(keras_framework) for keras_framework in KERAS_BACKENDS)


def askers_fit(framework: str, which: str) -> Rung:
    return Rung(framework, "seed", DEVICES, f"— (the asker's `fit`, {which})", role=Role.ASKERS, loop=FitRun)


def xla(framework: str) -> Rung:  # JAX always compiles: xla is TensorFlow's
    return Rung(
        framework, "xla", DEVICES, "TensorFlow op dispatch, by compiling the step with XLA", default=False, loop=FitRun
    )


def one_call_per_epoch(framework: str) -> Rung:  # full study only: the Keras probes measure its cost
    about = "per-step calls into the train function: one call per epoch"
    return Rung(
        framework, "steps_per_execution", DEVICES, about, default=False, role=Role.ONE_CALL_PER_EPOCH, loop=FitRun
    )


RUNGS = (
    askers_fit("tf_keras", "Keras 2 as the asker ran it"),
    # Only Keras 2 makes the iterator once per fit, whose deletion can pause.
    Rung(
        "tf_keras",
        "autotune_off",
        DEVICES,
        "the pause at the end of `fit`, which it aims at (the report says whether its runs paused less; not "
        "the steps: the same pipeline and steps): tf.data autotuning off on the dataset tf-keras builds, whose "
        "model thread `fit` can wait seconds for when it ends",
        default=False,  # full study only: the pauses it removes come and go; one study resolved its effect, one not
        role=Role.PAUSE_FREE,
        loop=AutotuneOffRun,
    ),
    xla("tf_keras"),
    one_call_per_epoch("tf_keras"),
    one_thread("tf_keras", FitRun),
    # The release sweep's cause rungs (stacks.CAUSES): each takes away one change of a TensorFlow release.
    Rung(
        "tf_keras",
        "onednn_off",
        ("cpu",),
        "oneDNN's CPU kernels, on by default from TensorFlow 2.9 on CPUs with AVX512_VNNI: the asker's `fit` with "
        "TF_ENABLE_ONEDNN_OPTS=0 set before TensorFlow's import",
        default=False,  # the release sweep's (config/era-sweep.yaml)
        environment=(("TF_ENABLE_ONEDNN_OPTS", "0"),),
        loop=FitRun,
    ),
    Rung(
        "tf_keras",
        "legacy_adam",
        DEVICES,
        "the optimizers that became Keras 2's default in TensorFlow 2.11: the asker's `fit` with "
        "`optimizers.legacy.Adam`, the Adam of the releases before",
        default=False,  # the release sweep's
        loop=LegacyAdamRun,
    ),
    askers_fit("keras", "Keras 3 on TensorFlow"),
    xla("keras"),
    one_call_per_epoch("keras"),
    Rung(
        "keras",
        "epoch_blocks",
        DEVICES,
        f"fit's fixed cost per epoch: {EPOCHS_PER_BLOCK} epochs per `fit` epoch from a `tf.data` "
        "pipeline of each epoch's own permutation, a block's steps in one XLA-compiled call",
        default=False,  # full study only: the Keras probes measure fit's fixed cost per epoch in the default one
        call_epochs=EPOCHS_PER_BLOCK,
        loop=EpochBlocksRun,
    ),
    askers_fit("keras_jax", "Keras on JAX"),
    one_call_per_epoch("keras_jax"),
    # Keras on PyTorch refuses steps_per_execution above 1: its one rung is the asker's.
    askers_fit("keras_torch", "Keras on PyTorch"),
)
