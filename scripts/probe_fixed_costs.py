#!/usr/bin/env python3
"""The probe rule's program: `tiny-mlp-bench probe` (tiny_mlp_bench/jobs/probe.py)."""

import sys

from tiny_mlp_bench.jobs.probe import main

if __name__ == "__main__":
    sys.exit(main(prog="probe_fixed_costs.py"))
