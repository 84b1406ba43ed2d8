"""JAX with optax: the question's MLP as one small pure function, trained two ways; ``scan``'s first block compiles."""

from __future__ import annotations

import re

import numpy as np

from tiny_mlp_bench.backends.contract import Backend, EpochLoop, RunSpec
from tiny_mlp_bench.catalogue import DEVICES, Role, Rung
from tiny_mlp_bench.machine import nvidia_driver

SCAN_EPOCHS_PER_BLOCK = 50  # the scan rung: epochs per jitted call, on either device


def load(device: str | None = None):
    import jax
    import optax

    return jax, optax


def gpu_missing(jax) -> str | None:
    try:
        jax.devices("gpu")
    except RuntimeError:
        backends = ", ".join(available_backends(jax))
        return f"no CUDA device: JAX {jax.__version__} sees no GPU (backends: {backends}; {cuda_plugin()})"
    return None


def cuda_plugin() -> str:
    """JAX's installed CUDA plugins (jax-cuda13-plugin and the like), or that it has none: CPU-only."""
    from importlib import metadata

    names = {dist.metadata["Name"].lower().replace("_", "-"): dist.version for dist in metadata.distributions()}
    plugins = [
        f"{name} {version}" for name, version in sorted(names.items()) if re.fullmatch(r"jax-cuda\d+-plugin", name)
    ]
    return ", ".join(plugins) if plugins else "no CUDA plugin installed"


def available_backends(jax) -> list[str]:
    found = []
    for platform in ("cpu", "gpu"):
        try:
            jax.devices(platform)
            found.append(platform)
        except RuntimeError:
            pass
    return found


def prepare(fw, spec: RunSpec):
    """A cpu run hides any GPU from JAX (its runtime has not started yet); the weights come from the spec."""
    jax, _ = fw
    if spec.device == "cpu":
        jax.config.update("jax_platforms", "cpu")
    return None  # each block ends with block_until_ready: JAX dispatches asynchronously


def start_device(fw, spec: RunSpec) -> str | None:
    jax, _ = fw
    if spec.device == "cuda":
        missing = gpu_missing(jax)
        if missing:
            return missing
    jax.device_put(np.zeros(1, np.float32), device(jax, spec.device)).block_until_ready()
    return None


def device(jax, name: str):
    return jax.devices("gpu" if name == "cuda" else "cpu")[0]


class JaxRun(EpochLoop):
    """What both JAX rungs share: rows and weights on the device, the loss, the step, the predictions."""

    def __init__(self, fw, spec: RunSpec, data, clock):
        jax, optax = fw
        self.jax, self.spec, self.data = jax, spec, data
        self.device = device(jax, spec.device)
        jnp = jax.numpy
        self.on_gpu = spec.device == "cuda"
        # device_put and optax's init are asynchronous: each part waits, so its phase holds the work.
        with clock.phase("data"):
            self.rows = jax.block_until_ready(jax.device_put(data.train.astype(np.float32), self.device))
        with clock.phase("model"):
            w1, b1, w2, b2 = spec.weights.as_list()
            params = jax.device_put({"w1": w1, "b1": b1, "w2": w2, "b2": b2}, self.device)
            self.params = jax.block_until_ready(params)
        with clock.phase("optimizer"):
            self.optimizer = optax.adam(spec.learning_rate, b1=0.9, b2=0.999, eps=1e-8)
            self.opt_state = jax.block_until_ready(jax.device_put(self.optimizer.init(self.params), self.device))
        self.key = jax.block_until_ready(jax.random.key(spec.init_seed))
        self.permutations = jax.jit(jax.vmap(lambda key: jax.random.permutation(key, len(data.train))))
        self.loss = float("nan")

        def predict(params, x):
            hidden = jax.nn.relu(x @ params["w1"] + params["b1"])
            return jax.nn.relu(hidden @ params["w2"] + params["b2"])[:, 0]

        def loss_fn(params, batch):
            error = predict(params, batch[:, :2]) - batch[:, 2]
            return jnp.mean(error * error)

        def step(params, opt_state, batch):
            loss, grads = jax.value_and_grad(loss_fn)(params, batch)
            updates, opt_state = self.optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        self.predict_fn, self.step_fn = jax.jit(predict), step

    def restart(self) -> bool:
        """The initial weights and a fresh optax state, of the shapes the jitted calls were traced for."""
        w1, b1, w2, b2 = self.spec.weights.as_list()
        self.params = self.jax.device_put({"w1": w1, "b1": b1, "w2": w2, "b2": b2}, self.device)
        self.opt_state = self.jax.device_put(self.optimizer.init(self.params), self.device)
        return True

    def draw_orders(self, epochs: int):
        """One permutation of the train rows per epoch, (epochs, rows), from the run's JAX key."""
        self.key, block_key = self.jax.random.split(self.key)
        return self.permutations(self.jax.random.split(block_key, epochs))

    def predict_test_batch(self) -> None:
        test = self.data.test[: self.spec.batch_size, :2].astype(np.float32)
        np.asarray(self.predict_fn(self.params, test))

    def predict(self, features):
        return np.asarray(self.predict_fn(self.params, features.astype(np.float32)))

    def final_train_loss(self) -> float:
        return float(self.loss)

    def steps_taken(self) -> int:
        return int(self.opt_state[0].count)


class SeedLoop(JaxRun):
    """seed: one jitted step per batch, called from Python, the epoch's permutation gathered per batch."""

    def __init__(self, fw, spec, data, clock):
        super().__init__(fw, spec, data, clock)
        jax = self.jax

        def batch_step(params, opt_state, rows, index):
            return self.step_fn(params, opt_state, rows[index])

        self.batch_step = jax.jit(batch_step)

    def run_epochs(self, epochs: int) -> None:
        size = self.spec.batch_size
        for order in self.draw_orders(epochs):
            for start in range(0, len(self.data.train), size):
                self.params, self.opt_state, self.loss = self.batch_step(
                    self.params, self.opt_state, self.rows, order[start : start + size]
                )
        self.jax.block_until_ready(self.params)

    @property
    def details(self) -> dict[str, str]:
        return {"data": "device-resident, a permutation per epoch", "step": "jax.jit, one call per batch"}


class ScanLoop(JaxRun):
    """scan: each block's epochs in one jitted call, lax.scan over epochs and over each epoch's batches."""

    epochs_per_block = SCAN_EPOCHS_PER_BLOCK

    def __init__(self, fw, spec, data, clock):
        super().__init__(fw, spec, data, clock)
        jax, step = self.jax, self.step_fn
        full, rest = divmod(len(data.train), spec.batch_size)

        def run_block(params, opt_state, rows, orders):
            def epoch(carry, order):
                def batch(carry, index):
                    params, opt_state, loss = step(*carry, rows[index])
                    return (params, opt_state), loss

                batches = order[: full * spec.batch_size].reshape(full, spec.batch_size)
                (params, opt_state), losses = jax.lax.scan(batch, carry, batches)
                loss = losses[-1]
                if rest:  # the short last batch, as every other rung takes it
                    params, opt_state, loss = step(params, opt_state, rows[order[full * spec.batch_size :]])
                return (params, opt_state), loss

            (params, opt_state), losses = jax.lax.scan(epoch, (params, opt_state), orders)
            return params, opt_state, losses[-1]

        self.run_block = jax.jit(run_block)

    def run_epochs(self, epochs: int) -> None:
        orders = self.draw_orders(epochs)
        self.params, self.opt_state, self.loss = self.run_block(self.params, self.opt_state, self.rows, orders)
        self.jax.block_until_ready(self.params)

    @property
    def details(self) -> dict[str, str]:
        return {
            "data": "device-resident, a permutation per epoch",
            "step": f"jax.jit of lax.scan over epochs and batches, up to {SCAN_EPOCHS_PER_BLOCK} epochs per call",
        }


def describe(fw, device_name: str) -> dict:
    """``fw``: (jax, optax), or (jax, None) for Keras on JAX, which has no optax."""
    jax, optax = fw
    on_gpu = device_name == "cuda" and gpu_missing(jax) is None
    versions = {"jax": jax.__version__, "jaxlib": jax.lib.__version__}
    return {
        "versions": versions | ({"optax": optax.__version__} if optax else {}),
        "threads": {},
        "cuda": {"build_cuda": None, "build_cudnn": None, "driver": nvidia_driver() if on_gpu else None},
        "gpu_name": jax.devices("gpu")[0].device_kind if on_gpu else None,
    }


def peak_gpu_memory_mb(fw, device_name: str) -> float | None:
    jax, _ = fw
    if device_name != "cuda" or gpu_missing(jax):
        return None
    stats = jax.devices("gpu")[0].memory_stats() or {}
    return stats["peak_bytes_in_use"] / 2**20 if "peak_bytes_in_use" in stats else None


BACKENDS = (
    Backend(
        name="jax",
        load=load,
        prepare=prepare,
        start_device=start_device,
        describe=describe,
        peak_gpu_memory_mb=peak_gpu_memory_mb,
    ),
)
RUNGS = (
    Rung(
        "jax",
        "seed",
        DEVICES,
        "— (the asker's loop shape in JAX and optax: one jitted step per batch)",
        role=Role.ASKERS,
        loop=SeedLoop,
    ),
    Rung(
        "jax",
        "scan",
        DEVICES,
        f"per-batch dispatch from Python: each block of {SCAN_EPOCHS_PER_BLOCK} epochs in one jitted `lax.scan` "
        "over epochs and batches",
        call_epochs=SCAN_EPOCHS_PER_BLOCK,
        loop=ScanLoop,
    ),
)
