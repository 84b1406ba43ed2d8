"""The GPU's own floor: the numpy ``fused`` rung on cuda, the whole training in numba CUDA kernel launches."""

from __future__ import annotations

import math

import numpy as np

# numba-cuda 0.30 overloads np.row_stack, which NumPy 2.5 removed (NVIDIA/numba-cuda#907): give the alias back.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda, float32  # a kernel must name the module itself: the simulator swaps it in its globals

from tiny_mlp_bench.backends.numpy_loop import BETA1, BETA2, EPS, FUSED_EPOCHS_PER_LAUNCH, ReferenceRun

EPOCHS_PER_LAUNCH = FUSED_EPOCHS_PER_LAUNCH
MAX_THREADS = 1024  # one thread per row of a batch, in one block
SHARED_BYTES = 48 * 1024  # the shared memory any CUDA GPU gives a block without opting in to more


def row_length(threads: int) -> int:
    """Floats in one row of the shared gradient: one per thread, plus one so a warp's 32 owners, each
    summing its own row at the same position, hit 32 different banks instead of one."""
    return threads + 1


def threads_for(batch_size: int, hidden: int) -> int:
    """The batch's rows rounded up to whole warps; ValueError where its gradient overflows shared memory."""
    if batch_size > MAX_THREADS:
        raise ValueError(f"the cuda fused rung takes batches of {MAX_THREADS} rows at most, not {batch_size}")
    threads = 32 * math.ceil(batch_size / 32)
    needed = (4 * hidden + 2) * row_length(threads) * 4  # float32: the parameters' rows and the squared error's
    if needed > SHARED_BYTES:
        raise ValueError(
            f"the cuda fused rung keeps a batch's gradient in one block's shared memory: {hidden} hidden units at "
            f"batch {batch_size} need {needed // 1024} KiB, over the {SHARED_BYTES // 1024} KiB a block has"
        )
    return threads


def fused_kernel(hidden: int, threads: int):
    """The kernel ``train(w1, b1, w2, b2, m, v, step, loss, rows, orders, batch_size, lr)`` for one width."""
    params = 4 * hidden + 1  # w1 (2 x hidden), b1, w2 (hidden x 1), b2
    columns = params + 1  # each row's gradient of every parameter, and its squared error
    row = row_length(threads)
    # Adam's constants in float32: a float64 constant would carry every per-element operation into float64.
    beta1, beta2 = float32(BETA1), float32(BETA2)
    one_minus_beta1, one_minus_beta2 = float32(1 - BETA1), float32(1 - BETA2)
    eps = float32(EPS)

    @cuda.jit
    def train(w1, b1, w2, b2, m, v, step, loss, rows, orders, batch_size, lr):
        t = cuda.threadIdx.x
        share = cuda.shared.array((columns, row), float32)
        z1 = cuda.local.array(hidden, float32)
        n = orders.shape[1]
        # Every thread counts the same steps: read step[0] once, so no barrier in the loop waits for it.
        count = step[0]
        for epoch in range(orders.shape[0]):
            for start in range(0, n, batch_size):
                rows_in = min(batch_size, n - start)
                if t < rows_in:
                    r = orders[epoch, start + t]
                    x0, x1, y = rows[r, 0], rows[r, 1], rows[r, 2]
                    z2 = b2[0]
                    for j in range(hidden):
                        z1[j] = x0 * w1[0, j] + x1 * w1[1, j] + b1[j]
                        if z1[j] > 0:
                            z2 += z1[j] * w2[j, 0]
                    diff = max(z2, float32(0.0)) - y
                    scale = float32(2.0 / rows_in)  # d(mean squared error)/d(prediction)
                    dz2 = scale * diff if z2 > 0 else float32(0.0)  # the final ReLU passes it only where open
                    for j in range(hidden):
                        dz1 = dz2 * w2[j, 0] if z1[j] > 0 else float32(0.0)
                        share[j, t] = x0 * dz1
                        share[hidden + j, t] = x1 * dz1
                        share[2 * hidden + j, t] = dz1
                        share[3 * hidden + j, t] = max(z1[j], float32(0.0)) * dz2
                    share[4 * hidden, t] = dz2
                    share[params, t] = diff * diff
                # All rows' terms written, and all weights read, before the owners sum and update.
                cuda.syncthreads()
                # Step scalars in float64 (torch's host arithmetic), then float32, as the reference rounds them.
                count += 1
                step_size = float32(lr / (1.0 - BETA1**count))
                c2 = float32(1.0 - BETA2**count)
                for k in range(t, columns, threads):
                    grad = float32(0.0)
                    for i in range(rows_in):
                        grad += share[k, i]
                    if k == params:
                        loss[0] = grad / rows_in
                    else:
                        m[k] = beta1 * m[k] + one_minus_beta1 * grad
                        v[k] = beta2 * v[k] + one_minus_beta2 * grad * grad
                        # float32() on the square root: the simulator's math.sqrt returns a Python float.
                        update = step_size * m[k] / (float32(math.sqrt(v[k] / c2)) + eps)
                        if k < 2 * hidden:
                            w1[k // hidden, k % hidden] -= update
                        elif k < 3 * hidden:
                            b1[k - 2 * hidden] -= update
                        elif k < 4 * hidden:
                            w2[k - 3 * hidden, 0] -= update
                        else:
                            b2[0] -= update
                # Updates visible, and the gradient read, before the next batch reads weights and overwrites it.
                cuda.syncthreads()
        # Safe: every thread read step[0] before its first barrier; with no batch, this writes back the same value.
        if t == 0:
            step[0] = count

    return train


class CudaFusedRun(ReferenceRun):
    """The reference's set-up on the host; rows, permutations, weights and Adam's state on the device."""

    epochs_per_block = EPOCHS_PER_LAUNCH
    on_gpu = True  # the clock waits for the GPU at each block's end

    def __init__(self, fw, spec, data, clock):
        self.threads = threads_for(spec.batch_size, spec.hidden_units)  # refuses a size before any set-up
        super().__init__(fw, spec, data, clock)
        self.numba_version = fw.numba.__version__
        self.epochs_done = 0

    def set_up_data(self) -> None:
        """Copies the rows and every epoch's permutation, drawn now, to the device once."""
        super().set_up_data()
        self.rows_device = cuda.to_device(self.rows)
        self.orders_device = cuda.to_device(self.draw_orders(self.spec.epochs).astype(np.int32))

    def set_up_model(self) -> None:
        """The reference's host weights, which predict after training, and their copies on the device."""
        super().set_up_model()
        self.device_params = {name: cuda.to_device(value) for name, value in self.params.items()}

    def set_up_optimizer(self) -> None:
        """Adam's state on the device, flat in order w1, b1, w2, b2 (the reference's Adam goes unused)."""
        size = sum(p.size for p in self.params.values())
        self.m = cuda.to_device(np.zeros(size, np.float32))
        self.v = cuda.to_device(np.zeros(size, np.float32))
        self.step = cuda.to_device(np.zeros(1, np.int64))
        self.loss_device = cuda.to_device(np.full(1, np.nan, np.float32))
        self.train = fused_kernel(self.spec.hidden_units, self.threads)
        cuda.synchronize()

    def restart(self) -> bool:
        """Initial weights and a fresh Adam into the same device arrays; reuses set-up's permutations."""
        for name, initial in zip(self.device_params, self.spec.weights.as_list(), strict=True):
            self.device_params[name].copy_to_device(np.ascontiguousarray(initial))
        for state in (self.m, self.v, self.step):
            state.copy_to_device(np.zeros(state.shape, state.dtype))
        self.epochs_done = 0
        return True

    def run_epochs(self, epochs: int) -> None:
        orders = self.orders_device[self.epochs_done : self.epochs_done + epochs]
        if orders.shape[0] != epochs:
            drawn, wanted = self.orders_device.shape[0], self.epochs_done + epochs
            raise ValueError(f"set-up drew {drawn} epochs' permutations, not {wanted}")
        p = self.device_params
        self.train[1, self.threads](
            p["w1"], p["b1"], p["w2"], p["b2"], self.m, self.v, self.step, self.loss_device,
            self.rows_device, orders, self.spec.batch_size, float(self.spec.learning_rate),
        )  # fmt: skip
        self.epochs_done += epochs

    def to_host(self) -> None:
        """The trained weights back into the host arrays the reference predicts with (waits for the GPU)."""
        for name, value in self.device_params.items():
            value.copy_to_host(self.params[name])

    def predict_test_batch(self) -> None:
        self.to_host()
        super().predict_test_batch()

    def predict(self, features):
        self.to_host()
        return super().predict(features)

    def final_train_loss(self) -> float:
        return float(self.loss_device.copy_to_host()[0])

    def steps_taken(self) -> int:
        return int(self.step.copy_to_host()[0])

    @property
    def details(self) -> dict[str, str]:
        return {
            "implementation": "numba CUDA kernel: one thread block, a thread per row of the batch, "
            "the gradient summed in shared memory, Adam on the device",
            "adam": "written out, torch's constants",
            "compiled": f"numba {self.numba_version}, {EPOCHS_PER_LAUNCH} epochs per launch, "
            f"{self.threads} threads, no disk cache",
            "data": "rows and every epoch's permutation copied to the device in set-up",
        }
