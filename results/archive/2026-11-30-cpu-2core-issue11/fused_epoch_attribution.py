"""Where a torch-cpu fused_epoch epoch goes: its one fused C++ kernel against the rest of the compiled call.

Run from the repository root with the project's environment (PYTHONPATH=.). Builds the rung as a
study run does (the question's dataset, seed 42, two threads), trains 3 warm-up epochs (the
compilation), then times, each as the median of 5 rounds of 300 calls: a whole epoch as the rung
runs it (randperm and the compiled call), the compiled call alone on one fixed permutation, and
torch.randperm(750). Last, torch.profiler over 200 compiled calls, Inductor's kernel profiling on,
gives the kernel's own time and the call's other parts.
"""

import statistics
import time

import torch
import torch._inductor.config as inductor_config

from tiny_mlp_bench.backends import backend
from tiny_mlp_bench.dataset import make_dataset, read_dataset, write_dataset
from tiny_mlp_bench.driver import RunSpec
from tiny_mlp_bench.initial_weights import live_initial_weights
from tiny_mlp_bench.timing import Clock

inductor_config.cpp.enable_kernel_profile = True  # the fused kernel shows in the profiler under its own name
write_dataset(make_dataset(seed=42, n_rows=1000), "/tmp/fused_epoch_attribution.parquet")
data = read_dataset("/tmp/fused_epoch_attribution.parquet")
spec = RunSpec(
    device="cpu",
    variant="fused_epoch",
    repeat=1,
    init_seed=42,
    epochs=1,
    batch_size=64,
    weights=live_initial_weights(42, 20, data.train[:, :2]),
    learning_rate=0.001,
    hidden_units=20,
    threads=2,
)
torch_backend = backend("torch")
fw = torch_backend.load()
torch_backend.prepare(fw, spec)
torch_backend.start_device(fw, spec)
loop = torch_backend.build(fw, spec, data, Clock())
loop.run_epochs(3)
order = torch.randperm(750)


def per_call_us(call, calls=300, rounds=5):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times) * 1e6


epoch = per_call_us(lambda: loop.run_epochs(1))
compiled_call = per_call_us(lambda: loop.run_epoch(order))
randperm = per_call_us(lambda: torch.randperm(750))
print(
    f"whole epoch {epoch:.1f} us ({epoch / 12:.2f} per step); compiled call alone {compiled_call:.1f} us; "
    f"randperm {randperm:.1f} us"
)
with torch.profiler.profile() as profile:
    for _ in range(200):
        loop.run_epoch(order)
print(profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=8, max_name_column_width=40))
