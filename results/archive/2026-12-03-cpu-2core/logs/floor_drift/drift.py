"""The numba floor's per-step time against the epoch, in the project's own fused loop: 21 blocks of 1,000
epochs from the run's initial weights, and the subnormal values in Adam's state after each block."""
import sys, time
import numpy as np
from tiny_mlp_bench.dataset import read_dataset
from tiny_mlp_bench.backends import backend, loop
from tiny_mlp_bench.backends.contract import RunSpec
from tiny_mlp_bench.initial_weights import live_initial_weights
from tiny_mlp_bench.timing import Clock

data = read_dataset(sys.argv[1])
seed = int(sys.argv[2])
fw = backend("numpy").load("cpu")
spec = RunSpec("cpu", "fused", 1, seed, live_initial_weights(seed, 20, data.train[:, :2]), 1000, 64, 1e-3, 20, 1)
run = loop("numpy", "fused")(fw, spec, data, Clock())
run.run_epochs(20)  # compile
run.restart()
tiny = np.finfo(np.float32).tiny
for block in range(21):
    start = time.perf_counter()
    run.run_epochs(1000)
    per_step = (time.perf_counter() - start) / (1000 * 12) * 1e6
    sub_v = int(np.sum((run.v != 0) & (np.abs(run.v) < tiny)))
    sub_m = int(np.sum((run.m != 0) & (np.abs(run.m) < tiny)))
    print(f"seed {seed} epochs {block*1000:5d}-{(block+1)*1000:5d}: {per_step:6.2f} us/step, subnormal v {sub_v:3d} m {sub_m:3d}")
