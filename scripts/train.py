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

from tiny_mlp_bench import catalogue, driver
from tiny_mlp_bench.cli import CONFIG_EPILOG, add_fields
from tiny_mlp_bench.jobs import TrainingJob


def parse_args(argv=None) -> TrainingJob:
    """The run the command line asks for. Its options are TrainingJob's fields, each written once there."""
    ladders = "; ".join(f"{f}: {', '.join(catalogue.variant_names(f))}" for f in catalogue.framework_names())
    parser = argparse.ArgumentParser(
        prog="train.py",
        description="Train the question's 2-20-1 MLP once, time it, and write one run record (JSON).",
        epilog=f"Frameworks and their variants: {ladders}. {CONFIG_EPILOG}",
    )
    add_fields(parser, TrainingJob)
    args = parser.parse_args(argv)
    if args.variant is None:
        args.variant = catalogue.variant_names(args.framework)[0]
    try:
        catalogue.variant(args.framework, args.variant)
    except catalogue.UnknownVariant as err:
        parser.error(f"argument --variant: {err.args[0]}")
    return TrainingJob(**vars(args))


def main(argv=None) -> int:
    return driver.run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
