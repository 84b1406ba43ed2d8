#!/usr/bin/env python3
"""Sweep one device's per-step time of torch sync_free over batch size x width; write a sweep record.

Usage: python scripts/sweep_crossover.py --device cpu --batch-sizes 64,1024 --hidden-units 20,256 \
           --steps 10 --output results/sweep/cpu.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tiny_mlp_bench package beside scripts/

from tiny_mlp_bench import catalogue, crossover
from tiny_mlp_bench.backends import torch_common
from tiny_mlp_bench.cli import csv_ints, positive_int
from tiny_mlp_bench.environment import collect_environment, gpu_driver_absent, not_imported
from tiny_mlp_bench.load import load_block, snapshot
from tiny_mlp_bench.records import SCHEMA_VERSION, SWEEP_RECORD_TYPE, write_sweep


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--batch-sizes", type=csv_ints, required=True, help="comma-separated, e.g. 64,1024")
    parser.add_argument("--hidden-units", type=csv_ints, required=True, help="comma-separated widths")
    parser.add_argument("--steps", type=positive_int, default=10, help="timed steps per block")
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--require-gpu", action="store_true", help="fail instead of recording 'skipped'")
    parser.add_argument("--output", required=True, help="sweep record to write (.json)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    load_before = snapshot()
    label = f"sweep-{args.device}"
    # As in the driver: a cuda sweep on a machine with no GPU driver at all is skipped (or fails with
    # --require-gpu) without paying torch's import only to find no GPU.
    no_driver = gpu_driver_absent() if args.device == "cuda" else None
    if not no_driver:
        torch = torch_common.load(args.device)
        torch_common.set_threads(torch, args.threads)
    record = {
        "record_type": SWEEP_RECORD_TYPE,
        "schema_version": SCHEMA_VERSION,
        "device": args.device,
        "variant": "sync_free",
        "steps": args.steps,
        "blocks": crossover.BLOCKS,
        "status": "ok",
        "reason": None,
        "peak_gflops": None,
        "points": [],
    }
    reason = no_driver or (torch_common.gpu_missing(torch) if args.device == "cuda" else None)
    if reason and args.require_gpu:
        print(f"{label}: error: {reason}, and --require-gpu (config require_gpu) is set", file=sys.stderr)
        return 1
    if reason:
        record |= {"status": "skipped", "reason": reason}
        print(f"{label}: skipped: {reason}", file=sys.stderr)
    else:
        device = torch.device("cuda:0" if args.device == "cuda" else "cpu")
        sync = torch_common.device_sync(torch, args.device)

        def progress(i, total, point):
            print(
                f"{label}: point {i}/{total}: batch {point['batch_size']}, width {point['hidden_units']}: "
                f"{point['step_s'] * 1e3:.3f} ms/step",
                file=sys.stderr,
                flush=True,
            )

        record["peak_gflops"] = crossover.matmul_gflops(torch, device, sync)
        record["points"] = crossover.sweep_points(
            torch, device, sync, args.batch_sizes, args.hidden_units, args.steps, progress
        )
    if no_driver:
        described, peak_gpu_mb = not_imported(catalogue.framework("torch").packages), None
    else:
        described = torch_common.describe(torch, args.device)
        peak_gpu_mb = torch_common.peak_gpu_memory_mb(torch, args.device)
    record["environment"] = collect_environment(dataset_sha256=None, **described)
    record["load"] = load_block(load_before, snapshot(), peak_gpu_mb)
    write_sweep(record, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
