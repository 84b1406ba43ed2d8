#!/usr/bin/env python3
"""Measure the fixed costs a tiny training step pays on one framework and device; write a probe record.

Usage: python scripts/probe_fixed_costs.py --framework torch --device cpu --dataset results/data/dataset.parquet \
           --batch-size 64 --hidden-units 20 --learning-rate 0.001 --threads 2 --output results/probes/torch-cpu.json

What each probe measures is in the tiny_mlp_bench/probes/ package and probe_record.schema.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.backends.contract import RunSpec
from tiny_mlp_bench.cli import CONFIG_EPILOG, add_config_options
from tiny_mlp_bench.envelope import DeviceMissing, Measurement, run_job
from tiny_mlp_bench.initial_weights import live_initial_weights
from tiny_mlp_bench.probes.keras_epoch import FIT_EPOCHS, keras_fit_epoch
from tiny_mlp_bench.probes.torch_suite import torch_probes
from tiny_mlp_bench.question import askers_rung
from tiny_mlp_bench.records import PROBE_RECORD_TYPE, PROBE_SCHEMA_VERSION, write_probe


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=CONFIG_EPILOG)
    parser.add_argument("--framework", choices=[f.name for f in catalogue.FRAMEWORKS if f.probed], required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--dataset", type=Path, required=True, help="the dataset's Parquet file")
    add_config_options(parser, "batch_size", "hidden_units", "learning_rate", "threads")
    parser.add_argument("--require-gpu", action="store_true", help="fail instead of recording 'skipped'")
    parser.add_argument("--output", type=Path, required=True, help="probe record to write (.json)")
    return parser.parse_args(argv)


class FixedCostsProbe(Measurement):
    """The probes of one framework and device: the envelope's measurement of a probe job."""

    kind = "probe"

    def __init__(self, args):
        self.args = args
        self.framework, self.device, self.require_gpu = args.framework, args.device, args.require_gpu
        self.output, self.dataset, self.write = args.output, args.dataset, write_probe
        self.label = f"probe-{args.framework}-{args.device}"
        self.measurements: dict = {}  # kept as far as it got when a later probe raises

    def read(self, data) -> None:
        args = self.args
        self.init_seed = data.metadata["seed"]  # as repeat 1 of a training run
        self.spec = RunSpec(
            device=args.device,
            variant=askers_rung(args.framework),
            repeat=1,
            init_seed=self.init_seed,
            # The timed models start from the runs' live draw, so a dead draw never skews a probe.
            weights=live_initial_weights(self.init_seed, args.hidden_units, data.train[:, :2]),
            epochs=FIT_EPOCHS,
            batch_size=args.batch_size,
            learning_rate=args.learning_rate,
            hidden_units=args.hidden_units,
            threads=args.threads,
        )

    def measure(self, fw, data) -> None:
        args, spec = self.args, self.spec
        if args.framework == "torch":
            from tiny_mlp_bench.backends import torch_common

            torch_common.set_threads(fw, args.threads)  # no seed: each probe seeds what it draws
            if missing := (torch_common.gpu_missing(fw) if args.device == "cuda" else None):
                raise DeviceMissing(missing)
            torch_probes(
                fw,
                args.device,
                data,
                args.batch_size,
                args.hidden_units,
                args.learning_rate,
                spec.weights,
                self.measurements,
                self.say,
            )
        else:  # Keras: threads and visible devices are set before its backend starts
            self.backend.prepare(fw, spec)
            if missing := self.backend.start_device(fw, spec):
                raise DeviceMissing(missing)
            keras_fit_epoch(fw, spec, data, self.measurements, say=self.say)

    def record(self, status: str, reason: str | None) -> dict:
        args = self.args
        return {
            "record_type": PROBE_RECORD_TYPE,
            "schema_version": PROBE_SCHEMA_VERSION,
            "framework": args.framework,
            "device": args.device,
            "status": status,
            "reason": reason,
            "parameters": {
                "batch_size": args.batch_size,
                "hidden_units": args.hidden_units,
                "learning_rate": args.learning_rate,
                "threads": args.threads,
                "init_seed": self.init_seed,
            },
            "measurements": self.measurements,
        }


def main(argv=None) -> int:
    return run_job(FixedCostsProbe(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
