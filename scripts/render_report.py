#!/usr/bin/env python3
"""The report rule's program: `tiny-mlp-bench report`; archives render their reports again through this path."""

import sys

from tiny_mlp_bench.report.render import main

if __name__ == "__main__":
    sys.exit(main(prog="render_report.py"))
