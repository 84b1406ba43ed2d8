"""Every torch probe of one device, run in turn as the probe job (job.py) asks for them."""

from __future__ import annotations

from tiny_mlp_bench.probes.measure import Say, quiet
from tiny_mlp_bench.probes.torch_cpu import INIT_DRAWS, INIT_SCHEME, count_dead_inits
from tiny_mlp_bench.probes.torch_cuda import GRAPH_KERNELS, graph_kernel_inside, graph_replay_one_kernel, sync_empty
from tiny_mlp_bench.probes.torch_step import eager_op, fetch_between_steps, loader_fetch, seed_step


def torch_probes(
    torch,
    device: str,
    data,
    batch_size: int,
    hidden_units: int,
    learning_rate: float,
    weights,
    found: dict,
    say: Say = quiet,
) -> dict:
    """Run every torch probe of ``device``, adding each result to ``found`` as it is measured; returns ``found``."""
    from tiny_mlp_bench.backends.torch_common import device_sync
    from tiny_mlp_bench.backends.torch_loops import askers_loader

    on = torch.device("cuda:0" if device == "cuda" else "cpu")
    sync = device_sync(torch, device)
    found["eager_op_us"] = eager_op(torch, on, sync, batch_size, hidden_units)
    say(f"eager op {found['eager_op_us']['value_us']:.2f} µs")
    rows = data.train[:batch_size]
    step = found["seed_step"] = seed_step(torch, on, sync, rows, hidden_units, learning_rate, weights)
    ops = (
        f"{step['kernels_per_step']} kernels" if device == "cuda" else f"{step['leaf_aten_ops_per_step']} leaf aten ops"
    )
    say(f"seed step {step['value_us']:.1f} µs, {ops} per step ({step['adam']} Adam)")
    loader = askers_loader(torch, torch.tensor(data.train, dtype=torch.float), batch_size)
    fetch = found["loader_fetch"] = loader_fetch(loader)
    parts = ", ".join(f"{part} {timed['value_us']:.1f}" for part, timed in fetch["fetch_parts"].items())
    say(f"the DataLoader alone {fetch['value_us']:.1f} µs a batch ({parts} µs)")
    between = fetch["between_steps"] = fetch_between_steps(
        loader, torch, on, sync, hidden_units, learning_rate, weights
    )
    say(f"the fetch and copy between steps {between['value_us']:.1f} µs a batch (the loop less its steps)")
    if device == "cuda":
        found["sync_empty_us"] = sync_empty(torch)
        say(f"empty synchronize {found['sync_empty_us']['value_us']:.2f} µs")
        found["graph_replay_1kernel_us"] = graph_replay_one_kernel(torch)
        say(f"one-kernel graph replay {found['graph_replay_1kernel_us']['value_us']:.2f} µs")
        found["graph_kernel_inside_us"] = graph_kernel_inside(torch)
        say(f"kernel inside a {GRAPH_KERNELS}-kernel graph {found['graph_kernel_inside_us']['value_us']:.2f} µs")
    else:
        dead = count_dead_inits(torch, hidden_units, data.train[:, :2])
        found["initialisation"] = {"draws": INIT_DRAWS, "dead": dead, "scheme": INIT_SCHEME}
        say(f"initialisation dead at start in {dead} of {INIT_DRAWS} draws")
    return found
