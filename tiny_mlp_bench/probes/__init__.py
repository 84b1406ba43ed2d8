"""Probes: the fixed costs a tiny training step pays, measured on one framework and device.

A step of the question's 2->20->1 MLP does almost no arithmetic; its time is what every op, launch,
sync and call costs whatever its size. These functions measure those costs and return numbers
(microseconds, the median over repeats of many calls each, and how many calls and repeats); the
caller (scripts/probe_fixed_costs.py) loads the framework, decides whether the device is there and
writes the results as a probe record, validated against probe_record.schema.json.

- torch, every device (torch_step): one small eager op; the asker's step (time, and the ops it
  runs as the profiler counts them).
- torch, cuda (torch_cuda): an empty synchronize, one replay of a one-kernel CUDA graph, and the
  cost of each kernel inside a graph of many.
- torch, cpu (torch_cpu): how often the question's initialisation is dead at start (the last ReLU
  never fires on the training rows, so no gradient ever flows and the model predicts 0).
- Keras (keras_epoch; Keras 2 and Keras 3 on TensorFlow, Keras 3 on JAX): the fixed cost of each
  ``fit`` epoch and a step's cost inside it, from epochs of one step and of every train row.

torch_suite runs every torch probe of a device; measure times the calls; record validates, writes
and reads the probe record.
"""

from tiny_mlp_bench.probes.keras_epoch import FIT_EPOCHS, FIT_ROUNDS, as_timed, epoch_times_us, keras_fit_epoch
from tiny_mlp_bench.probes.measure import REPEATS, Say, time_calls
from tiny_mlp_bench.probes.record import read_probe, validate_probe, write_probe
from tiny_mlp_bench.probes.torch_cpu import (
    INIT_DRAWS,
    INIT_SCHEME,
    count_dead_inits,
    dead_at_start,
)
from tiny_mlp_bench.probes.torch_cuda import (
    GRAPH_KERNEL_REPLAYS,
    GRAPH_KERNELS,
    GRAPH_REPLAYS,
    SYNC_CALLS,
    captured_adds,
    graph_kernel_inside,
    graph_replay_one_kernel,
    sync_empty,
)
from tiny_mlp_bench.probes.torch_step import (
    EAGER_CALLS,
    LAUNCH_CALLS,
    PROFILED_STEPS,
    STEP_CALLS,
    SeedStep,
    count_kernels,
    count_step_ops,
    eager_op,
    is_kernel,
    seed_step,
)
from tiny_mlp_bench.probes.torch_suite import torch_probes

__all__ = [
    "EAGER_CALLS",
    "FIT_EPOCHS",
    "FIT_ROUNDS",
    "GRAPH_KERNELS",
    "GRAPH_KERNEL_REPLAYS",
    "GRAPH_REPLAYS",
    "INIT_DRAWS",
    "INIT_SCHEME",
    "LAUNCH_CALLS",
    "PROFILED_STEPS",
    "REPEATS",
    "STEP_CALLS",
    "SYNC_CALLS",
    "Say",
    "SeedStep",
    "as_timed",
    "captured_adds",
    "count_dead_inits",
    "count_kernels",
    "count_step_ops",
    "dead_at_start",
    "eager_op",
    "epoch_times_us",
    "graph_kernel_inside",
    "graph_replay_one_kernel",
    "is_kernel",
    "keras_fit_epoch",
    "read_probe",
    "seed_step",
    "sync_empty",
    "time_calls",
    "torch_probes",
    "validate_probe",
    "write_probe",
]
