"""Train the numpy `fused` rung on cuda under numba's CUDA simulator; write its parameters (.npz).

Run by test_trajectory.py in a process of its own: NUMBA_ENABLE_CUDASIM must be set before numba is
imported. Usage: NUMBA_ENABLE_CUDASIM=1 python tests/cuda_simulator_run.py DATASET ORDERS.npy OUT.npz
"""

from __future__ import annotations

import sys

import numpy as np

from helpers import spec_for  # beside this file, on its path
from tiny_mlp_bench.backends.numba_cuda_fused import CudaFusedRun
from tiny_mlp_bench.dataset import read_dataset
from tiny_mlp_bench.registry import backend, loop
from tiny_mlp_bench.timing import Clock


def main(dataset: str, orders_path: str, output: str) -> None:
    data, orders = read_dataset(dataset), np.load(orders_path)
    numpy = backend("numpy")
    fw = numpy.load("cuda")
    spec = spec_for("fused", data, device="cuda", epochs=len(orders))
    # The permutations are drawn in set-up: the injected ones replace them before the rung is built.
    CudaFusedRun.draw_orders = lambda self, epochs: orders[:epochs]
    # start_device() refuses the simulator (it is no GPU), so the rung is built directly.
    training = loop("numpy", "fused")(fw, spec, data, Clock())
    training.fit(Clock(), len(orders))
    training.to_host()
    np.savez(
        output,
        steps=training.steps_taken(),
        refused=numpy.start_device(fw, spec) or "",
        **{k: training.params[k] for k in ("w1", "b1", "w2", "b2")},
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
