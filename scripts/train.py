#!/usr/bin/env python3
"""Train the question's 2-20-1 MLP once with one framework and variant, time it, write a run record.

Usage: python scripts/train.py --framework torch --variant seed --device cpu --repeat 1 --epochs 1000 \
           --batch-size 64 --learning-rate 0.001 --hidden-units 20 --threads 2 --min-r2 0.99 \
           --steady-window-s 1 --steady-block-s 0.05 --dataset results/data/dataset.parquet \
           --output results/runs/torch-cpu-seed-1.json
Frameworks and variants are the catalogue's (tiny_mlp_bench/catalogue.py); --help lists them. The
training parameters have no defaults here: the workflow's config schema is their one source, and the
train rule passes each one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tiny_mlp_bench import catalogue, driver
from tiny_mlp_bench.cli import CONFIG_EPILOG, add_config_options, non_negative_float, positive_float, positive_int


def parse_args(argv=None) -> argparse.Namespace:
    ladders = "; ".join(f"{f}: {', '.join(catalogue.variant_names(f))}" for f in catalogue.framework_names())
    parser = argparse.ArgumentParser(
        prog="train.py",
        description="Train the question's 2-20-1 MLP once, time it, and write one run record (JSON).",
        epilog=CONFIG_EPILOG,
    )
    parser.add_argument("--framework", choices=catalogue.framework_names(), required=True)
    parser.add_argument(
        "--variant", help=f"training-loop variant ({ladders}); default: the framework's first, the asker's loop"
    )
    parser.add_argument("--dataset", type=Path, required=True, help="Parquet file from make_dataset.py")
    parser.add_argument("--output", type=Path, required=True, help="run record to write (.json)")
    parser.add_argument(
        "--device", choices=catalogue.DEVICES, required=True, help="device to train on (the job's {device})"
    )
    parser.add_argument(
        "--repeat",
        type=positive_int,
        required=True,
        help="repeat number (the job's {repeat}); the weights are drawn from seed + repeat - 1",
    )
    parser.add_argument(
        "--epochs", type=positive_int, required=True, help="passes over the training rows: the config's epochs"
    )
    add_config_options(parser, "batch_size", "learning_rate", "hidden_units", "threads")
    parser.add_argument(
        "--min-r2",
        type=float,
        required=True,
        help="train R^2 at or above which a run counts as converged: the config's convergence_min_r2",
    )
    parser.add_argument(
        "--steady-window-s",
        type=non_negative_float,
        required=True,
        help="seconds of steady blocks after the timing point (0: none): the config's steady_window_s",
    )
    parser.add_argument(
        "--steady-block-s",
        type=positive_float,
        required=True,
        help="wall seconds of one steady block: the config's steady_block_s",
    )
    parser.add_argument(
        "--compile-cache",
        type=Path,
        help="the compiler cache a compiling rung's runs share (the workflow gives results/compile_cache/<rung>): "
        "repeat 1 empties it and compiles cold, a later repeat reuses what it compiled; the record's "
        "method.compile_cache says which. Default: an empty cache of the run's own",
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
