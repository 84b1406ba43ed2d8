"""Train the seed question's MLP with Keras 3 on TensorFlow and write a run record.

Variants: seed (the asker's ``compile("mse", "adam")`` and ``fit``), xla (``jit_compile=True``)
and steps_per_execution (one whole epoch per call into the compiled train function).
Keras 3 resolves the seed's default ``jit_compile="auto"`` to XLA only when TensorFlow
sees a GPU; the record states what each run resolved to.

TensorFlow places work on a GPU whenever one is visible, so a cpu run hides the GPUs
and a cuda run is skipped (or fails with --require-gpu) when TensorFlow sees none.

Usage: python scripts/train_keras.py --dataset results/data/dataset.parquet --device cpu \
           --threads 2 --output results/runs/keras-cpu-seed-1.json
Run with --help for every option.
"""

from __future__ import annotations

import math
import os
import sys
import time

from environment import nvidia_driver
from training import Backend, Progress, RunSpec, TrainResult, run

VARIANTS = ("seed", "xla", "steps_per_execution")


def load():
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's start-up chatter out of the logs
    import keras
    import tensorflow as tf

    return tf, keras


def unavailable(fw, device: str, variant: str) -> str | None:
    tf, _ = fw
    if device == "cuda" and not tf.config.list_physical_devices("GPU"):
        build = "built with CUDA" if tf.test.is_built_with_cuda() else "a CPU-only build"
        return f"no CUDA device: TensorFlow {tf.__version__} ({build}) sees no GPU"
    return None


def configure(tf, spec: RunSpec) -> None:
    """Pin threads and devices; TF allows this only before its runtime starts."""
    tf.config.threading.set_intra_op_parallelism_threads(spec.threads)
    tf.config.threading.set_inter_op_parallelism_threads(spec.threads)
    if spec.device == "cpu":
        tf.config.set_visible_devices([], "GPU")


def train(fw, spec: RunSpec, data) -> TrainResult:
    """The asker's ``Sequential`` + ``compile("mse", adam)`` + ``fit`` + ``predict`` on 64 test rows."""
    tf, keras = fw
    configure(tf, spec)
    keras.utils.set_random_seed(spec.init_seed)
    x_train, y_train = data.train[:, :2], data.train[:, 2]
    progress = Progress(spec.epochs, spec.label)

    class EpochClock(keras.callbacks.Callback):
        """Wall time per epoch; fit() returns only after the device has finished."""

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch_start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            epoch_s.append(time.perf_counter() - self.epoch_start)
            progress.epoch_done(epoch)

    epoch_s: list[float] = []
    start = time.perf_counter()
    # keras.Input builds the weights here rather than inside fit, so set-up is timed on its own.
    model = keras.Sequential(
        [
            keras.Input(shape=(2,)),
            keras.layers.Dense(spec.hidden_units, activation="relu"),
            keras.layers.Dense(1, activation="relu"),
        ]
    )
    options = {
        "seed": {},
        "xla": {"jit_compile": True},
        "steps_per_execution": {"steps_per_execution": math.ceil(len(x_train) / spec.batch_size)},
    }[spec.variant]
    model.compile(loss="mse", optimizer=keras.optimizers.Adam(learning_rate=spec.learning_rate), **options)
    fit_start = time.perf_counter()
    history = model.fit(
        x_train, y_train, batch_size=spec.batch_size, epochs=spec.epochs, verbose=0, callbacks=[EpochClock()]
    )
    predict_start = time.perf_counter()
    model.predict(data.test[: spec.batch_size, :2], verbose=0)
    end = time.perf_counter()

    return TrainResult.from_clock(
        start,
        fit_start,
        epoch_s,
        predict_start,
        end,
        final_train_loss=history.history["loss"][-1],
        predict=lambda features: model.predict(features, batch_size=4096, verbose=0),
        details={
            "jit_compile": str(model.jit_compile),
            "steps_per_execution": str(model.steps_per_execution),
            "adam_epsilon": str(model.optimizer.epsilon),
            "shuffle": "fit shuffles the rows each epoch",
        },
    )


def describe(fw, device: str) -> dict:
    tf, keras = fw
    build = tf.sysconfig.get_build_info()
    gpus = tf.config.list_physical_devices("GPU") if device == "cuda" else []
    gpu_name = tf.config.experimental.get_device_details(gpus[0]).get("device_name") if gpus else None
    return {
        "versions": {
            "tensorflow": tf.__version__,
            "keras": keras.__version__,
            "keras_backend": keras.backend.backend(),
        },
        "threads": {
            "intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
            "inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
        },
        "cuda": {
            "build_cuda": build.get("cuda_version"),
            "build_cudnn": build.get("cudnn_version"),
            "driver": nvidia_driver() if gpus else None,
        },
        "gpu_name": gpu_name,
    }


BACKEND = Backend(name="keras", variants=VARIANTS, load=load, unavailable=unavailable, train=train, describe=describe)


def main(argv=None) -> int:
    return run(BACKEND, argv)


if __name__ == "__main__":
    sys.exit(main())
