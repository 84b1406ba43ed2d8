"""Keras 3 on TensorFlow: the question's MLP trained with the asker's ``compile`` and ``fit``.

Variants: seed (the asker's ``compile("mse", "adam")`` and ``fit``), xla (``jit_compile=True``)
and steps_per_execution (one whole epoch per call into the compiled train function).
Keras 3 resolves the asker's default ``jit_compile="auto"`` to XLA only when TensorFlow
sees a GPU; the record states what each run resolved to.

TensorFlow places work on a GPU whenever one is visible, so a cpu run hides the GPUs
and a cuda run is skipped (or fails with --require-gpu) when TensorFlow sees none. The asker's
``fit`` call is unchanged: the timing module's callback closes a block at every epoch's end.
"""

from __future__ import annotations

import math
import os

from tiny_mlp_bench.driver import Backend, RunSpec
from tiny_mlp_bench.environment import nvidia_driver


def load():
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's start-up chatter out of the logs
    import keras
    import tensorflow as tf

    return tf, keras


def start_device(fw, spec: RunSpec) -> str | None:
    """Start TensorFlow's runtime on the run's device with a first op (on a GPU, its CUDA context), timed."""
    tf, _ = fw
    if spec.device == "cuda" and not tf.config.list_physical_devices("GPU"):
        build = "built with CUDA" if tf.test.is_built_with_cuda() else "a CPU-only build"
        return f"no CUDA device: TensorFlow {tf.__version__} ({build}) sees no GPU"
    with tf.device("/GPU:0" if spec.device == "cuda" else "/CPU:0"):
        tf.constant(0.0).numpy()
    return None


def prepare(fw, spec: RunSpec):
    """Pin threads and devices, which TF allows only before its runtime starts; seed the weights."""
    tf, keras = fw
    tf.config.threading.set_intra_op_parallelism_threads(spec.threads)
    tf.config.threading.set_inter_op_parallelism_threads(spec.threads)
    if spec.device == "cpu":
        tf.config.set_visible_devices([], "GPU")
    keras.utils.set_random_seed(spec.init_seed)
    return None  # fit() and the epoch-end logs return only after the device has finished


# compile() options of each variant the catalogue lists for keras, from the steps per epoch.
COMPILE_OPTIONS = {
    "seed": lambda steps_per_epoch: {},
    "xla": lambda steps_per_epoch: {"jit_compile": True},
    "steps_per_execution": lambda steps_per_epoch: {"steps_per_execution": steps_per_epoch},
}


class FitRun:
    """The asker's ``Sequential`` + ``compile("mse", adam)``, then ``fit`` and ``predict`` on 64 test rows."""

    def __init__(self, fw, spec: RunSpec, data, clock):
        _, keras = fw
        self.keras, self.spec, self.data = keras, spec, data
        with clock.phase("data"):
            self.x_train, self.y_train = data.train[:, :2], data.train[:, 2]
        with clock.phase("model"):
            # keras.Input builds the weights here rather than inside fit, so set-up is timed on its own.
            self.model = keras.Sequential(
                [
                    keras.Input(shape=(2,)),
                    keras.layers.Dense(spec.hidden_units, activation="relu"),
                    keras.layers.Dense(1, activation="relu"),
                ]
            )
            self.model.set_weights(spec.weights.as_list())  # the run's shared live draw, not Glorot's
        with clock.phase("optimizer"):
            options = COMPILE_OPTIONS[spec.variant](math.ceil(len(self.x_train) / spec.batch_size))
            optimizer = keras.optimizers.Adam(learning_rate=spec.learning_rate)
            self.model.compile(loss="mse", optimizer=optimizer, **options)
        self.history = None

    def fit(self, clock, epochs: int) -> None:
        self.history = self.model.fit(
            self.x_train,
            self.y_train,
            batch_size=self.spec.batch_size,
            epochs=epochs,
            verbose=0,
            callbacks=[clock.keras_callback(self.keras)],
        )

    def predict_test_batch(self) -> None:
        self.model.predict(self.data.test[: self.spec.batch_size, :2], verbose=0)

    def predict(self, features):
        return self.model.predict(features, batch_size=4096, verbose=0)

    def final_train_loss(self) -> float:
        return self.history.history["loss"][-1]

    def steps_taken(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def host_syncs_per_epoch(self) -> int | None:
        return None  # TensorFlow has no sync debug mode to count them with

    @property
    def details(self) -> dict[str, str]:
        return {
            "jit_compile": str(self.model.jit_compile),
            "steps_per_execution": str(self.model.steps_per_execution),
            "adam_epsilon": str(self.model.optimizer.epsilon),
            "shuffle": "fit shuffles the rows each epoch",
        }


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


def peak_gpu_memory_mb(fw, device: str) -> float | None:
    """The most memory TensorFlow held on the first GPU at once in this process."""
    tf, _ = fw
    if device != "cuda" or not tf.config.list_physical_devices("GPU"):
        return None
    return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20


BACKEND = Backend(
    name="keras",
    variants=tuple(COMPILE_OPTIONS),
    load=load,
    prepare=prepare,
    start_device=start_device,
    build=FitRun,
    describe=describe,
    peak_gpu_memory_mb=peak_gpu_memory_mb,
)
