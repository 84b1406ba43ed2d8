#!/usr/bin/env python3
"""The dataset rule's program: `tiny-mlp-bench dataset` (tiny_mlp_bench/dataset.py)."""

import sys

from tiny_mlp_bench.dataset import main

if __name__ == "__main__":
    sys.exit(main(prog="make_dataset.py"))
