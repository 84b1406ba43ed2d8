"""The arithmetic floor: the question's step with nothing but its arithmetic, compiled by numba."""

from __future__ import annotations

import numpy as np

from tiny_mlp_bench.backends.numpy_loop import BETA1, BETA2, EPS, FUSED_EPOCHS_PER_CALL, ReferenceRun

EPOCHS_PER_BLOCK = FUSED_EPOCHS_PER_CALL


def fused_epochs(numba):
    """The compiled loop: ``train(w1, b1, w2, b2, m, v, step, rows, orders, batch_size, lr)``."""

    @numba.njit(cache=False)
    def train(w1, b1, w2, b2, m, v, step, rows, orders, batch_size, lr):
        hidden = w1.shape[1]
        # Adam's constants in float32: a float64 constant would carry every per-element operation into float64.
        beta1, beta2 = np.float32(BETA1), np.float32(BETA2)
        one_minus_beta1, one_minus_beta2 = np.float32(1 - BETA1), np.float32(1 - BETA2)
        eps = np.float32(EPS)
        g1 = np.zeros((2, hidden), np.float32)
        gb1 = np.zeros(hidden, np.float32)
        g2 = np.zeros(hidden, np.float32)
        z1 = np.zeros(hidden, np.float32)
        loss = np.float32(0.0)
        n = orders.shape[1]
        for epoch in range(orders.shape[0]):
            for start in range(0, n, batch_size):
                stop = min(start + batch_size, n)
                g1[:] = 0
                gb1[:] = 0
                g2[:] = 0
                gb2 = np.float32(0.0)
                loss = np.float32(0.0)
                scale = np.float32(2.0 / (stop - start))  # d(mean squared error)/d(prediction)
                for r in range(start, stop):
                    x0, x1, y = rows[orders[epoch, r], 0], rows[orders[epoch, r], 1], rows[orders[epoch, r], 2]
                    z2 = b2[0]
                    for j in range(hidden):
                        z1[j] = x0 * w1[0, j] + x1 * w1[1, j] + b1[j]
                        if z1[j] > 0:
                            z2 += z1[j] * w2[j, 0]
                    diff = max(z2, np.float32(0.0)) - y
                    loss += diff * diff
                    if z2 > 0:  # the final ReLU passes the gradient only where it is open
                        dz2 = scale * diff
                        gb2 += dz2
                        for j in range(hidden):
                            if z1[j] > 0:
                                g2[j] += z1[j] * dz2
                                dz1 = dz2 * w2[j, 0]
                                g1[0, j] += x0 * dz1
                                g1[1, j] += x1 * dz1
                                gb1[j] += dz1
                loss /= stop - start
                # Step scalars in float64 (torch's host arithmetic), then float32, as the reference rounds them.
                step[0] += 1
                step_size = np.float32(lr / (1 - BETA1 ** step[0]))
                c2 = np.float32(1 - BETA2 ** step[0])
                k = 0
                for which in range(4):
                    size = 2 * hidden if which == 0 else (hidden if which < 3 else 1)
                    for i in range(size):
                        if which == 0:
                            grad = g1[i // hidden, i % hidden]
                        elif which == 1:
                            grad = gb1[i]
                        elif which == 2:
                            grad = g2[i]
                        else:
                            grad = gb2
                        m[k] = beta1 * m[k] + one_minus_beta1 * grad
                        v[k] = beta2 * v[k] + one_minus_beta2 * grad * grad
                        update = step_size * m[k] / (np.sqrt(v[k] / c2) + eps)
                        if which == 0:
                            w1[i // hidden, i % hidden] -= update
                        elif which == 1:
                            b1[i] -= update
                        elif which == 2:
                            w2[i, 0] -= update
                        else:
                            b2[0] -= update
                        k += 1
        return loss

    return train


class FusedRun(ReferenceRun):
    """The reference's set-up (rows, weights, the same random stream); its epochs run in the compiled loop."""

    epochs_per_block = EPOCHS_PER_BLOCK

    def __init__(self, fw, spec, data, clock):
        super().__init__(fw, spec, data, clock)
        self.numba_version = fw.numba.__version__

    def set_up_optimizer(self) -> None:
        """Adam's state, flat in order w1, b1, w2, b2 (the reference's Adam goes unused), and the loop."""
        size = sum(p.size for p in self.params.values())
        self.m, self.v = np.zeros(size, np.float32), np.zeros(size, np.float32)
        self.step = np.zeros(1, np.int64)
        self.train = fused_epochs(self.fw.numba)

    def reset_optimizer(self) -> None:
        for state in (self.m, self.v, self.step):
            state[...] = 0

    def run_epochs(self, epochs: int) -> None:
        orders = self.draw_orders(epochs)
        p = self.params
        self.loss = float(
            self.train(
                p["w1"], p["b1"], p["w2"], p["b2"], self.m, self.v, self.step, self.rows, orders,
                self.spec.batch_size, float(self.spec.learning_rate),
            )
        )  # fmt: skip

    def steps_taken(self) -> int:
        return int(self.step[0])

    @property
    def details(self) -> dict[str, str]:
        return {
            "implementation": "numba-compiled loop over scalars: forward, backward and Adam fused",
            "adam": "written out, torch's constants",
            "compiled": f"numba {self.numba_version}, {EPOCHS_PER_BLOCK} epochs per compiled call, no disk cache",
        }
