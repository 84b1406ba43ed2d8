#!/usr/bin/env python3
"""The train rule's program: `tiny-mlp-bench run`, under the path the rule always named: finished runs stay current."""

import sys

from tiny_mlp_bench.jobs.run import main

if __name__ == "__main__":
    sys.exit(main(prog="train.py"))
