#!/usr/bin/env python3
"""Write the question's dataset (x, y in randint(10, 1000), target 4x + 3y + 10) as one Parquet file.

Usage: python scripts/make_dataset.py --seed 42 --n-rows 1000 --output results/data/dataset.parquet
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tiny_mlp_bench.cli import CONFIG_EPILOG
from tiny_mlp_bench.dataset import file_sha256, make_dataset, write_dataset


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=CONFIG_EPILOG)
    parser.add_argument("--seed", type=int, required=True, help="seed of the NumPy generator: the config's seed")
    parser.add_argument("--n-rows", type=int, required=True, help="rows before the split: the config's n_rows")
    parser.add_argument("--output", type=Path, required=True, help="Parquet file to write")
    args = parser.parse_args(argv)
    if args.n_rows < 4:
        parser.error(f"--n-rows must be at least 4 (got {args.n_rows})")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    write_dataset(make_dataset(args.seed, args.n_rows), args.output)
    print(f"wrote {args.output} (sha256 {file_sha256(args.output)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
