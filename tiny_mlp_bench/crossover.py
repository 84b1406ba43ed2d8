"""Map where the GPU starts to win: steady-state time per training step over batch size x width.

Each point trains the question's MLP shape (2 -> width -> 1, ReLU) with the ``sync_free`` step of
the torch backend on random device-resident rows: WARMUP_STEPS untimed steps, then BLOCKS timed
blocks of ``steps`` steps, timed by the timing module's clock; the point's time per step is the
median block's. The device's measured float32 matmul rate is recorded too.
"""

from __future__ import annotations

import statistics

from tiny_mlp_bench.backends.torch_common import build_model
from tiny_mlp_bench.question import ASKERS_RUN
from tiny_mlp_bench.timing import Clock

VARIANT = "sync_free"  # the torch rung whose step each point times, named in the sweep record
BLOCKS = 3
WARMUP_STEPS = 2
MATMUL_REPEATS = 3


def matmul_gflops(torch, device, sync) -> float:
    """Best of three float32 square matmuls: the device's practical peak for this kind of work."""
    n = 4096 if device.type == "cuda" else 1024
    a, b = torch.rand(n, n, device=device), torch.rand(n, n, device=device)
    a @ b
    clock = Clock(sync)
    clock.run_blocks(lambda _: a @ b, MATMUL_REPEATS, 1)
    return 2 * n**3 / min(clock.block_s) / 1e9


def time_point(torch, device, sync, batch_size: int, width: int, steps: int) -> tuple[list[float], list[float]]:
    """Per-step seconds of each timed block for one grid point: wall, and this process's CPU time."""
    model = build_model(torch, width).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=ASKERS_RUN["learning_rate"], fused=True)
    loss_fn = torch.nn.MSELoss()
    rows = torch.rand(batch_size, 3, device=device)
    x, y = rows[:, :2], rows[:, 2]

    def run_steps(count: int) -> None:
        for _ in range(count):
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x).squeeze(-1), y).backward()
            optimizer.step()

    run_steps(WARMUP_STEPS)
    clock = Clock(sync)
    clock.run_blocks(run_steps, BLOCKS * steps, steps)
    per_step = [
        (wall / count, cpu / count)
        for wall, cpu, count in zip(clock.block_s, clock.block_cpu_s, clock.block_epochs, strict=True)
    ]
    return [wall for wall, _ in per_step], [cpu for _, cpu in per_step]


def sweep_points(torch, device, sync, batch_sizes, widths, steps: int, progress=None) -> list[dict]:
    """Every grid point, widths outer and batch sizes inner; ``progress(i, total, point)`` after each."""
    grid = [(b, w) for w in widths for b in batch_sizes]
    points = []
    for i, (batch_size, width) in enumerate(grid, 1):
        blocks, cpu_blocks = time_point(torch, device, sync, batch_size, width, steps)
        points.append(
            {
                "batch_size": batch_size,
                "hidden_units": width,
                "step_s": statistics.median(blocks),
                "block_step_s": blocks,
                "block_cpu_step_s": cpu_blocks,
            }
        )
        if progress:
            progress(i, len(grid), points[-1])
    return points
