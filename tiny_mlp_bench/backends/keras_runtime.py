"""The runtime around a Keras run (Keras 3 on TensorFlow, JAX or PyTorch; Keras 2 on TensorFlow)."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

from tiny_mlp_bench.backends.contract import RunSpec
from tiny_mlp_bench.machine import gpu_driver_absent, nvidia_driver


@dataclass(frozen=True)
class KerasRuntime:
    """What load() returns: the keras module (tf_keras for Keras 2), the backend's name and its module."""

    keras: object
    backend: str
    lib: object

    @property
    def keras_2(self) -> bool:
        return self.keras.__name__ == "tf_keras"


def loader(backend: str, keras_module: str = "keras"):
    """load() of Keras on ``backend``; ``keras_module`` "tf_keras" is Keras 2, TensorFlow's only."""

    def load(device: str) -> KerasRuntime:
        """Import the backend, then Keras; JAX and torch hide the GPUs here on cpu, TensorFlow in prepare()."""
        os.environ["KERAS_BACKEND"] = backend
        if backend == "tensorflow":
            # Quiet TF's chatter; with no GPU driver also its errors, as its CUDA build logs cuInit failing as one.
            quiet = "3" if device == "cpu" and gpu_driver_absent() else "2"
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", quiet)
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
        # tf_keras needs no TF_USE_LEGACY_KERAS, which only redirects tf.keras.
        keras = importlib.import_module(keras_module)

        return KerasRuntime(keras, backend, lib)

    return load


def start_device(fw: KerasRuntime, spec: RunSpec) -> str | None:
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
    """Wait for the set-up part's queued device work, so its phase holds it and the first block does not."""
    if fw.backend == "jax":
        fw.lib.block_until_ready(fw.lib.live_arrays())
    elif device != "cuda":
        return  # TensorFlow's and torch's CPU ops are done when they return
    elif fw.backend == "torch":
        fw.lib.cuda.synchronize()
    else:
        fw.lib.test.experimental.sync_devices()


def prepare(fw: KerasRuntime, spec: RunSpec):
    """Pin threads (and TensorFlow's devices) before the runtime starts; seed Keras's shuffles."""
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


def describe(fw: KerasRuntime, device: str) -> dict:
    keras_versions = {
        "tf_keras" if fw.keras_2 else "keras": fw.keras.__version__,
        "keras_backend": fw.keras.backend.backend(),
    }
    if fw.backend in ("jax", "torch"):
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
