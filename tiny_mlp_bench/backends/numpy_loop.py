"""The question's MLP by hand in float32 NumPy, with torch's Adam constants: the loop every numpy rung builds on."""

from __future__ import annotations

import os

import numpy as np

from tiny_mlp_bench.backends.contract import EpochLoop, RunSpec

BETA1, BETA2, EPS = 0.9, 0.999, 1e-8
# The fused rung's epochs per compiled call on cpu and per kernel launch on cuda.
FUSED_EPOCHS_PER_CALL = 20
FUSED_EPOCHS_PER_LAUNCH = 100


def simulated(numba) -> bool:
    """Whether numba's CUDA target is its simulator (NUMBA_ENABLE_CUDASIM), which runs kernels on the CPU."""
    from_environment = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
    return bool(getattr(numba.config, "ENABLE_CUDASIM", 0)) or from_environment


def forward(p: dict, x: np.ndarray):
    """Predictions and the activations backward() needs."""
    z1 = x @ p["w1"] + p["b1"]
    a1 = np.maximum(z1, 0)
    z2 = a1 @ p["w2"] + p["b2"]
    return np.maximum(z2, 0)[:, 0], (z1, a1, z2)


def loss_and_grads(p: dict, x: np.ndarray, y: np.ndarray):
    """Mean squared error and its gradient for every parameter."""
    pred, (z1, a1, z2) = forward(p, x)
    diff = pred - y
    dz2 = (2.0 / len(y)) * diff[:, None] * (z2 > 0)
    da1 = dz2 @ p["w2"].T
    dz1 = da1 * (z1 > 0)
    grads = {"w2": a1.T @ dz2, "b2": dz2.sum(0), "w1": x.T @ dz1, "b1": dz1.sum(0)}
    return float(np.mean(diff * diff)), grads


class Adam:
    """Adam as torch.optim.Adam computes it (bias-corrected, eps added after the square root)."""

    def __init__(self, params: dict, lr: float):
        self.lr, self.t = lr, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict, grads: dict) -> None:
        self.t += 1
        c1, c2 = 1 - BETA1**self.t, 1 - BETA2**self.t
        for k, g in grads.items():
            self.m[k] = BETA1 * self.m[k] + (1 - BETA1) * g
            self.v[k] = BETA2 * self.v[k] + (1 - BETA2) * g * g
            params[k] -= (self.lr / c1) * self.m[k] / (np.sqrt(self.v[k] / c2) + EPS)


class ReferenceRun(EpochLoop):
    """One NumPy run; its constructor is the rest of the set-up: float32 rows, weights from the run's seed, Adam."""

    def __init__(self, fw, spec: RunSpec, data, clock):
        self.fw, self.spec, self.data = fw, spec, data
        self.rng = np.random.default_rng(spec.init_seed)
        with clock.phase("data"):
            self.set_up_data()
        with clock.phase("model"):
            self.set_up_model()
        with clock.phase("optimizer"):
            self.set_up_optimizer()
        self.loss = float("nan")

    def set_up_data(self) -> None:
        self.rows = self.data.train.astype(np.float32)

    def set_up_model(self) -> None:
        w1, b1, w2, b2 = (value.copy() for value in self.spec.weights.as_list())
        self.params = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}

    def set_up_optimizer(self) -> None:
        self.adam = Adam(self.params, self.spec.learning_rate)

    def restart(self) -> bool:
        """The initial weights into the same arrays (a compiled loop keeps them), then a fresh Adam."""
        for value, initial in zip(self.params.values(), self.spec.weights.as_list(), strict=True):
            value[...] = initial
        self.reset_optimizer()
        return True

    def reset_optimizer(self) -> None:
        self.adam = Adam(self.params, self.spec.learning_rate)

    def run_epochs(self, epochs: int) -> None:
        rows, size = self.rows, self.spec.batch_size
        for _ in range(epochs):
            for idx in np.array_split(self.rng.permutation(len(rows)), range(size, len(rows), size)):
                batch = rows[idx]
                self.loss, grads = loss_and_grads(self.params, batch[:, :2], batch[:, 2])
                self.adam.step(self.params, grads)

    def draw_orders(self, epochs: int) -> np.ndarray:
        """One permutation of the rows per epoch, (epochs, rows), from the run's stream."""
        return np.stack([self.rng.permutation(len(self.rows)) for _ in range(epochs)])

    def predict_test_batch(self) -> None:
        self.predict(self.data.test[: self.spec.batch_size, :2])

    def predict(self, features):
        return forward(self.params, features.astype(np.float32))[0]

    def final_train_loss(self) -> float:
        return self.loss

    def steps_taken(self) -> int:
        return self.adam.t

    @property
    def details(self) -> dict[str, str]:
        return {"implementation": "hand-written float32 NumPy", "adam": "written out, torch's constants"}
