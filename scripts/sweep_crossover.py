#!/usr/bin/env python3
"""The sweep rule's program: `tiny-mlp-bench sweep` (tiny_mlp_bench/jobs/sweep.py)."""

import sys

from tiny_mlp_bench.jobs.sweep import main

if __name__ == "__main__":
    sys.exit(main(prog="sweep_crossover.py"))
