#!/usr/bin/env python3
"""Measure the fixed costs a tiny training step pays on one framework and device; write a probe record.

Usage: python scripts/probe_fixed_costs.py --framework torch --device cpu --dataset results/data/dataset.parquet \
           --batch-size 64 --hidden-units 20 --learning-rate 0.001 --threads 2 --output results/probes/torch-cpu.json

What each probe measures is in the tiny_mlp_bench/probes/ package and probe_record.schema.json.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tiny_mlp_bench package beside scripts/

from tiny_mlp_bench import catalogue, probes
from tiny_mlp_bench.cli import positive_float, positive_int
from tiny_mlp_bench.dataset import DatasetError, read_dataset
from tiny_mlp_bench.driver import RunSpec
from tiny_mlp_bench.environment import collect_environment, gpu_driver_absent, not_imported
from tiny_mlp_bench.initial_weights import live_initial_weights
from tiny_mlp_bench.load import load_block, snapshot


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=[f.name for f in catalogue.FRAMEWORKS if f.probed], required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--dataset", type=Path, required=True, help="the dataset's Parquet file")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--hidden-units", type=positive_int, default=20)
    parser.add_argument("--learning-rate", type=positive_float, default=0.001)
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--require-gpu", action="store_true", help="fail instead of recording 'skipped'")
    parser.add_argument("--output", type=Path, required=True, help="probe record to write (.json)")
    return parser.parse_args(argv)


def open_torch(args):
    """torch with its threads set; returns (torch, why the device cannot be used or None, the backend module)."""
    from tiny_mlp_bench.backends import torch_common

    torch = torch_common.load(args.device)
    torch_common.set_threads(torch, args.threads)
    missing = torch_common.gpu_missing(torch) if args.device == "cuda" else None
    return torch, missing, torch_common


def open_keras(args, spec):
    """Keras and its backend with threads and visible devices set before the backend starts; the device started."""
    from tiny_mlp_bench.backends import keras_fit

    fw = keras_fit.BACKENDS[args.framework].load(args.device)
    keras_fit.prepare(fw, spec)
    return fw, keras_fit.start_device(fw, spec), keras_fit


def main(argv=None) -> int:
    args = parse_args(argv)
    load_before = snapshot()
    label = f"probe-{args.framework}-{args.device}"

    def say(message: str) -> None:
        print(f"{label}: {message}", file=sys.stderr, flush=True)

    try:
        data = read_dataset(args.dataset)
    except DatasetError as err:
        say(f"error: {err}")
        return 1
    init_seed = data.metadata["seed"]  # as repeat 1 of a training run
    spec = RunSpec(
        device=args.device,
        variant="seed",
        repeat=1,
        init_seed=init_seed,
        # The timed models start from the runs' live draw, so a dead draw never skews a probe.
        weights=live_initial_weights(init_seed, args.hidden_units, data.train[:, :2]),
        epochs=probes.FIT_EPOCHS,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        hidden_units=args.hidden_units,
        threads=args.threads,
    )
    # As in the driver: a cuda probe on a machine with no GPU driver at all is skipped (or fails with
    # --require-gpu) without paying the framework's import only to find no GPU.
    no_driver = gpu_driver_absent() if args.device == "cuda" else None
    if no_driver:
        fw, missing, backend = None, no_driver, None
    else:
        say(f"importing {args.framework}")
        fw, missing, backend = open_torch(args) if args.framework == "torch" else open_keras(args, spec)

    status, reason, measurements = "ok", None, {}
    if missing and args.require_gpu:
        say(f"error: {missing}, and --require-gpu (config require_gpu) is set")
        return 1
    if missing:
        status, reason = "skipped", missing
        say(f"skipped: {missing}")
    else:
        try:
            if args.framework == "torch":
                probes.torch_probes(
                    fw,
                    args.device,
                    data,
                    args.batch_size,
                    args.hidden_units,
                    args.learning_rate,
                    spec.weights,
                    measurements,
                    say,
                )
            else:
                probes.keras_fit_epoch(fw, spec, data, measurements, say=say)
        except Exception as err:  # any error inside the framework: record it, let the other jobs finish
            traceback.print_exc()
            status, reason = "failed", f"{type(err).__name__}: {err}".strip()[:500]
            say(f"recorded as failed: {reason}")

    if no_driver:
        described, peak_gpu_mb = not_imported(catalogue.framework(args.framework).packages), None
    else:
        described, peak_gpu_mb = backend.describe(fw, args.device), backend.peak_gpu_memory_mb(fw, args.device)
    record = {
        "record_type": probes.PROBE_RECORD_TYPE,
        "schema_version": probes.PROBE_SCHEMA_VERSION,
        "framework": args.framework,
        "device": args.device,
        "status": status,
        "reason": reason,
        "parameters": {
            "batch_size": args.batch_size,
            "hidden_units": args.hidden_units,
            "learning_rate": args.learning_rate,
            "threads": args.threads,
            "init_seed": init_seed,
        },
        "measurements": measurements,
        "environment": collect_environment(dataset_sha256=data.sha256, **described),
        "load": load_block(load_before, snapshot(), peak_gpu_mb),
    }
    probes.write_probe(record, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
