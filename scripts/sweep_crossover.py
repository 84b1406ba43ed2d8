#!/usr/bin/env python3
"""Sweep one device's per-step time of torch sync_free over batch size x width; write a sweep record.

Usage: python scripts/sweep_crossover.py --device cpu --batch-sizes 64,1024 --hidden-units 20,256 \
           --steps 10 --threads 2 --output results/sweep/cpu.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tiny_mlp_bench import crossover
from tiny_mlp_bench.backends import torch_common
from tiny_mlp_bench.cli import CONFIG_EPILOG, add_config_options, csv_ints, positive_int
from tiny_mlp_bench.envelope import DeviceMissing, Measurement, run_job
from tiny_mlp_bench.records import SCHEMA_VERSION, SWEEP_RECORD_TYPE, write_sweep


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=CONFIG_EPILOG)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument(
        "--batch-sizes",
        type=csv_ints,
        required=True,
        help="the grid's batch sizes, comma-separated (e.g. 64,1024): the config's sweep.batch_sizes",
    )
    parser.add_argument(
        "--hidden-units",
        type=csv_ints,
        required=True,
        help="the grid's widths, comma-separated: the config's sweep.hidden_units",
    )
    parser.add_argument(
        "--steps", type=positive_int, required=True, help="timed steps per block: the config's sweep.steps"
    )
    add_config_options(parser, "threads")
    parser.add_argument("--require-gpu", action="store_true", help="fail instead of recording 'skipped'")
    parser.add_argument("--output", type=Path, required=True, help="sweep record to write (.json)")
    return parser.parse_args(argv)


class CrossoverSweep(Measurement):
    """One device's sweep: the envelope's measurement of a sweep job."""

    kind, framework = "sweep", "torch"

    def __init__(self, args):
        self.args = args
        self.device, self.require_gpu, self.output, self.write = args.device, args.require_gpu, args.output, write_sweep
        self.label = f"sweep-{args.device}"
        self.peak_gflops, self.points = None, []

    def measure(self, torch, data) -> None:
        args = self.args
        torch_common.set_threads(torch, args.threads)
        if missing := (torch_common.gpu_missing(torch) if args.device == "cuda" else None):
            raise DeviceMissing(missing)
        device = torch.device("cuda:0" if args.device == "cuda" else "cpu")
        sync = torch_common.device_sync(torch, args.device)

        def progress(i, total, point):
            self.say(
                f"point {i}/{total}: batch {point['batch_size']}, width {point['hidden_units']}: "
                f"{point['step_s'] * 1e3:.3f} ms/step"
            )

        self.peak_gflops = crossover.matmul_gflops(torch, device, sync)
        self.points = crossover.sweep_points(
            torch, device, sync, args.batch_sizes, args.hidden_units, args.steps, progress
        )

    def record(self, status: str, reason: str | None) -> dict:
        ok = status == "ok"  # a failed sweep keeps no half a grid
        return {
            "record_type": SWEEP_RECORD_TYPE,
            "schema_version": SCHEMA_VERSION,
            "device": self.device,
            "variant": crossover.VARIANT,
            "steps": self.args.steps,
            "blocks": crossover.BLOCKS,
            "status": status,
            "reason": reason,
            "peak_gflops": self.peak_gflops if ok else None,
            "points": self.points if ok else [],
        }


def main(argv=None) -> int:
    return run_job(CrossoverSweep(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
