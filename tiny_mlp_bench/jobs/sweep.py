"""`tiny-mlp-bench sweep` (scripts/sweep_crossover.py, the sweep rule's program): map where the GPU starts to win,
steady-state time per training step over batch size x width.

Each point times torch's ``sync_free`` step on device-resident random rows: WARMUP_STEPS untimed, then BLOCKS blocks of
``steps`` steps, keeping the median block's time per step; the device's float32 matmul rate is recorded too."""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from tiny_mlp_bench import catalogue, cli
from tiny_mlp_bench.backends.torch_common import build_model, device_sync, gpu_missing, set_threads
from tiny_mlp_bench.cli import CONFIG_EPILOG, add_fields
from tiny_mlp_bench.jobs.envelope import DeviceMissing, Measurement, run_job
from tiny_mlp_bench.jobs.identity import Job
from tiny_mlp_bench.jobs.options import REQUIRE_GPU, SHARED, JobOptions, about
from tiny_mlp_bench.question import ASKERS_RUN
from tiny_mlp_bench.records import SCHEMA_VERSION, SWEEP_RECORD_TYPE, write_sweep
from tiny_mlp_bench.timing import Clock


@dataclass(frozen=True)
class SweepJob(JobOptions):
    """One device's crossover sweep as the sweep rule asks for it (`tiny-mlp-bench sweep`)."""

    device: str = field(metadata=about("device to sweep (the job's {device})", choices=catalogue.DEVICES))
    output: Path = field(metadata=about("sweep record to write (.json)", Path))
    batch_sizes: list[int] = field(
        metadata=about(
            "the grid's batch sizes, comma-separated (e.g. 64,1024): the config's sweep.batch_sizes",
            cli.csv_ints,
            "sweep.batch_sizes",
        )
    )
    hidden_units: list[int] = field(
        metadata=about(
            "the grid's widths, comma-separated: the config's sweep.hidden_units", cli.csv_ints, "sweep.hidden_units"
        )
    )
    steps: int = field(
        metadata=about("timed steps per block: the config's sweep.steps", cli.positive_int, "sweep.steps")
    )
    threads: int = field(metadata=SHARED["threads"])
    require_gpu: bool = field(default=False, metadata=REQUIRE_GPU)


def sweep_job(config: dict, job: Job, threads: int) -> SweepJob:
    return SweepJob.of_config(config, device=job.device, output=Path(job.output), threads=threads)


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


def parse_args(argv=None, prog=None) -> SweepJob:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Time torch sync_free per step on one device over batch size x width; write a sweep record.",
        epilog=CONFIG_EPILOG,
    )
    add_fields(parser, SweepJob)
    return SweepJob(**vars(parser.parse_args(argv)))


class CrossoverSweep(Measurement):
    """One device's sweep: the envelope's measurement of a sweep job."""

    kind, framework = "sweep", "torch"

    def __init__(self, job: SweepJob):
        self.job = job
        self.device, self.require_gpu, self.output, self.write = job.device, job.require_gpu, job.output, write_sweep
        self.label = f"sweep-{job.device}"
        self.peak_gflops, self.points = None, []

    def measure(self, torch, data) -> None:
        job = self.job
        set_threads(torch, job.threads)
        if missing := (gpu_missing(torch) if job.device == "cuda" else None):
            raise DeviceMissing(missing)
        device = torch.device("cuda:0" if job.device == "cuda" else "cpu")
        sync = device_sync(torch, job.device)

        def progress(i, total, point):
            self.say(
                f"point {i}/{total}: batch {point['batch_size']}, width {point['hidden_units']}: "
                f"{point['step_s'] * 1e3:.3f} ms/step"
            )

        self.peak_gflops = matmul_gflops(torch, device, sync)
        self.points = sweep_points(torch, device, sync, job.batch_sizes, job.hidden_units, job.steps, progress)

    def record(self, status: str, reason: str | None) -> dict:
        ok = status == "ok"  # a failed sweep keeps no half a grid
        return {
            "record_type": SWEEP_RECORD_TYPE,
            "schema_version": SCHEMA_VERSION,
            "device": self.device,
            "variant": VARIANT,
            "steps": self.job.steps,
            "blocks": BLOCKS,
            "status": status,
            "reason": reason,
            "peak_gflops": self.peak_gflops if ok else None,
            "points": self.points if ok else [],
        }


def main(argv=None, prog=None) -> int:
    """`tiny-mlp-bench sweep` (scripts/sweep_crossover.py, the sweep rule's program)."""
    return run_job(CrossoverSweep(parse_args(argv, prog)))
