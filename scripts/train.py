#!/usr/bin/env python3
"""The train rule's program: `tiny-mlp-bench run` (tiny_mlp_bench/jobs.py), under the path the rule
has always named, so that a finished study's runs stay current."""

import sys

from tiny_mlp_bench.jobs import main

if __name__ == "__main__":
    sys.exit(main(prog="train.py"))
