"""Keras 3 on its three backends: the question's MLP trained with the asker's ``compile`` and ``fit``.

One framework per backend, so the backend is in every run id: ``keras`` is Keras on TensorFlow,
as the asker ran it; ``keras_jax`` and ``keras_torch`` are the same code on JAX and on PyTorch.
Variants: seed (the asker's ``compile("mse", "adam")`` and ``fit``), xla (``jit_compile=True``,
TensorFlow only: JAX always compiles), steps_per_execution (one whole epoch per call into the
compiled train function; not on PyTorch, where Keras allows one step per call) and epoch_blocks
(TensorFlow only: a block of epochs per ``fit`` epoch and per call, over a ``tf.data`` pipeline of
the epochs' permutations, so fit's fixed per-epoch cost is paid once a block). Keras resolves the
asker's default ``jit_compile="auto"`` by backend and device; the record states what each run
resolved to.

A cpu run hides the GPUs from its backend before they start, and a cuda run is skipped (or fails
with --require-gpu) when the backend sees none. The asker's ``fit`` call is unchanged: the timing
module's callback closes a block at every epoch's end.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from tiny_mlp_bench.driver import Backend, RunSpec
from tiny_mlp_bench.environment import nvidia_driver

KERAS_BACKENDS = {"keras": "tensorflow", "keras_jax": "jax", "keras_torch": "torch"}  # framework -> backend


@dataclass(frozen=True)
class KerasRuntime:
    """What load() returns: keras, the backend's name and its own module (tf, jax or torch)."""

    keras: object
    backend: str
    lib: object


def loader(backend: str):
    def load(device: str) -> KerasRuntime:
        """Import the backend, then Keras on it. A cpu run hides the GPUs here where the backend wants
        that before it starts (JAX, torch); TensorFlow allows it later, in prepare()."""
        os.environ["KERAS_BACKEND"] = backend
        if backend == "tensorflow":
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's start-up chatter out of the logs
            import tensorflow as lib
        elif backend == "jax":
            import jax as lib

            if device == "cpu":
                lib.config.update("jax_platforms", "cpu")
        else:
            from tiny_mlp_bench.backends import torch_common

            # Keras on torch picks its device when imported: cuda wherever torch sees a GPU.
            os.environ["KERAS_TORCH_DEVICE"] = "cuda" if device == "cuda" else "cpu"
            lib = torch_common.load(device)  # a cpu run's torch sees no GPU
        import keras

        return KerasRuntime(keras, backend, lib)

    return load


def start_device(fw: KerasRuntime, spec: RunSpec) -> str | None:
    """Start the backend's runtime on the run's device with a first op (on a GPU, its CUDA context), timed."""
    if fw.backend == "tensorflow":
        tf = fw.lib
        if spec.device == "cuda" and not tf.config.list_physical_devices("GPU"):
            build = "built with CUDA" if tf.test.is_built_with_cuda() else "a CPU-only build"
            return f"no CUDA device: TensorFlow {tf.__version__} ({build}) sees no GPU"
        with tf.device("/GPU:0" if spec.device == "cuda" else "/CPU:0"):
            tf.constant(0.0).numpy()
        return None
    if fw.backend == "jax":
        from tiny_mlp_bench.backends import jax_loops

        return jax_loops.start_device((fw.lib, None), spec)
    from tiny_mlp_bench.backends import torch_common

    missing = torch_common.start_device(fw.lib, spec)
    if missing is None and spec.device == "cuda":
        fw.lib.cuda.synchronize()
    return missing


def wait_for_device(fw: KerasRuntime, device: str) -> None:
    """Return when the device has done what the set-up part queued, so that the part's phase holds it
    and the first block does not: every backend queues GPU work, and JAX CPU work too, asynchronously."""
    if fw.backend == "jax":
        fw.lib.block_until_ready(fw.lib.live_arrays())
    elif device != "cuda":
        return  # TensorFlow's and torch's CPU ops are done when they return
    elif fw.backend == "torch":
        fw.lib.cuda.synchronize()
    else:
        fw.lib.test.experimental.sync_devices()


def prepare(fw: KerasRuntime, spec: RunSpec):
    """Pin threads (and, for TensorFlow, devices), which the backends allow only before their runtime
    starts; seed Keras (its shuffles)."""
    if fw.backend == "tensorflow":
        tf = fw.lib
        tf.config.threading.set_intra_op_parallelism_threads(spec.threads)
        tf.config.threading.set_inter_op_parallelism_threads(spec.threads)
        if spec.device == "cpu":
            tf.config.set_visible_devices([], "GPU")
    elif fw.backend == "torch":
        from tiny_mlp_bench.backends import torch_common

        torch_common.set_threads(fw.lib, spec.threads)
    # JAX: XLA's CPU runtime sizes its own thread pool (JAX has no supported setting for it).
    fw.keras.utils.set_random_seed(spec.init_seed)
    return None  # fit() and the epoch-end logs return only after the device has finished


EPOCHS_PER_BLOCK = 50  # epochs per fit epoch (and per call into the train function) of the epoch_blocks rung

# compile() options of each variant the catalogue lists for keras, from the steps per epoch.
COMPILE_OPTIONS = {
    "seed": lambda steps_per_epoch: {},
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
            # keras.Input builds the weights here rather than inside fit, so set-up is timed on its own.
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
            optimizer = keras.optimizers.Adam(learning_rate=spec.learning_rate)
            self.model.compile(loss="mse", optimizer=optimizer, **options)
            wait_for_device(fw, spec.device)
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
        return int(self.keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def host_syncs_per_epoch(self) -> int | None:
        return None  # TensorFlow has no sync debug mode to count them with

    @property
    def details(self) -> dict[str, str]:
        return {
            "keras_backend": self.fw.backend,
            "jit_compile": str(self.model.jit_compile),
            "steps_per_execution": str(self.model.steps_per_execution),
            "adam_epsilon": str(self.model.optimizer.epsilon),
            "shuffle": "fit shuffles the rows each epoch",
        }


class EpochBlocksRun(FitRun):
    """epoch_blocks: EPOCHS_PER_BLOCK epochs per ``fit`` epoch, all of a block's steps in one XLA-compiled call.

    ``fit`` pays a fixed cost at every epoch's end (its callbacks, logs and iterator bookkeeping)
    whatever ran inside it. Here one ``fit`` epoch holds a block of real epochs: a ``tf.data``
    pipeline gathers the rows in each epoch's own permutation and batches them, the last batch
    short, so the steps are the question's. The permutations are drawn with NumPy from the run's
    seed (``draw_orders``, which a test replaces) at the start of fit, inside the timing point.
    """

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

    def fit_blocks(self, clock, orders: np.ndarray, epochs_per_block: int) -> None:
        """``fit`` over ``orders``, one fit epoch per block of ``epochs_per_block`` epochs (already shuffled)."""
        self.history = self.model.fit(
            self.epochs_of_batches(orders),
            epochs=len(orders) // epochs_per_block,
            steps_per_epoch=epochs_per_block * self.steps_per_epoch,
            shuffle=False,
            verbose=0,
            callbacks=[clock.keras_callback(self.keras, epochs_per_fit_epoch=epochs_per_block)],
        )

    @property
    def details(self) -> dict[str, str]:
        return {
            **super().details,
            "shuffle": "a NumPy permutation per epoch from the run's seed, all drawn when fit starts",
            "data": f"tf.data: each epoch's rows in its order, batched; {EPOCHS_PER_BLOCK} epochs per fit epoch",
        }


def build(fw, spec: RunSpec, data, clock):
    return (EpochBlocksRun if spec.variant == "epoch_blocks" else FitRun)(fw, spec, data, clock)


def describe(fw: KerasRuntime, device: str) -> dict:
    keras_versions = {"keras": fw.keras.__version__, "keras_backend": fw.keras.backend.backend()}
    if fw.backend in ("jax", "torch"):  # the framework's own description, with Keras's versions added
        from tiny_mlp_bench.backends import jax_loops, torch_common

        own = (
            jax_loops.describe((fw.lib, None), device) if fw.backend == "jax" else torch_common.describe(fw.lib, device)
        )
        return {**own, "versions": {**own["versions"], **keras_versions}}
    tf = fw.lib
    build = tf.sysconfig.get_build_info()
    gpus = tf.config.list_physical_devices("GPU") if device == "cuda" else []
    gpu_name = tf.config.experimental.get_device_details(gpus[0]).get("device_name") if gpus else None
    return {
        "versions": {"tensorflow": tf.__version__, **keras_versions},
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


def peak_gpu_memory_mb(fw: KerasRuntime, device: str) -> float | None:
    """The most memory the backend held on the first GPU at once in this process."""
    if fw.backend == "jax":
        from tiny_mlp_bench.backends import jax_loops

        return jax_loops.peak_gpu_memory_mb((fw.lib, None), device)
    if fw.backend == "torch":
        from tiny_mlp_bench.backends import torch_common

        return torch_common.peak_gpu_memory_mb(fw.lib, device)
    tf = fw.lib
    if device != "cuda" or not tf.config.list_physical_devices("GPU"):
        return None
    return tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20


def keras_backend(framework: str) -> Backend:
    """The Backend of Keras on one of its backends (the catalogue lists which variants each runs)."""
    backend = KERAS_BACKENDS[framework]
    # xla and epoch_blocks are TensorFlow's (JAX always compiles; epoch_blocks feeds tf.data);
    # Keras on PyTorch refuses steps_per_execution above 1.
    variants = {"tensorflow": tuple(COMPILE_OPTIONS), "jax": ("seed", "steps_per_execution"), "torch": ("seed",)}
    return Backend(
        name=framework,
        variants=variants[backend],
        load=loader(backend),
        prepare=prepare,
        start_device=start_device,
        build=build,
        describe=describe,
        peak_gpu_memory_mb=peak_gpu_memory_mb,
    )


BACKENDS = {framework: keras_backend(framework) for framework in KERAS_BACKENDS}
