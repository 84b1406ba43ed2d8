#!/usr/bin/env python3
"""Train the question's 2-20-1 MLP once with one framework and variant, time it, write a run record.

Usage: python scripts/train.py --framework torch --variant seed --device cpu --threads 2 \
           --dataset results/data/dataset.parquet --output results/runs/torch-cpu-seed-1.json
Frameworks and variants are the catalogue's (tiny_mlp_bench/catalogue.py); --help lists them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tiny_mlp_bench package beside scripts/

from tiny_mlp_bench import catalogue, driver
from tiny_mlp_bench.cli import positive_float, positive_int


def parse_args(argv=None) -> argparse.Namespace:
    ladders = "; ".join(f"{f}: {', '.join(catalogue.variant_names(f))}" for f in catalogue.framework_names())
    parser = argparse.ArgumentParser(
        prog="train.py",
        description="Train the question's 2-20-1 MLP once, time it, and write one run record (JSON).",
    )
    parser.add_argument("--framework", choices=catalogue.framework_names(), required=True)
    parser.add_argument(
        "--variant", help=f"training-loop variant ({ladders}); default: the framework's first, the asker's loop"
    )
    parser.add_argument("--dataset", type=Path, required=True, help="Parquet file from make_dataset.py")
    parser.add_argument("--output", type=Path, required=True, help="run record to write (.json)")
    parser.add_argument("--device", choices=catalogue.DEVICES, default="cpu")
    parser.add_argument("--repeat", type=positive_int, default=1, help="repeat number; weights use seed + repeat - 1")
    parser.add_argument("--epochs", type=positive_int, default=1000)
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--learning-rate", type=positive_float, default=1e-3)
    parser.add_argument("--hidden-units", type=positive_int, default=20)
    parser.add_argument("--threads", type=positive_int, default=1, help="CPU threads for the framework")
    parser.add_argument(
        "--min-r2", type=float, default=0.99, help="train R^2 at or above which a run counts as converged"
    )
    parser.add_argument(
        "--require-gpu", action="store_true", help="fail instead of recording 'skipped' when the GPU is missing"
    )
    args = parser.parse_args(argv)
    if args.variant is None:
        args.variant = catalogue.variant_names(args.framework)[0]
    try:
        catalogue.variant(args.framework, args.variant)
    except catalogue.UnknownVariant as err:
        parser.error(f"argument --variant: {err.args[0]}")
    return args


def main(argv=None) -> int:
    return driver.run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
