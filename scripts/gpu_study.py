"""One command for a GPU machine with Python and torch but no package registry (docs/gpu-kit.md).

    python3 scripts/gpu_study.py --check     # the pre-flight: what it would use, and what would stop it
    python3 scripts/gpu_study.py [--time-limit SECONDS] [--allow-modified]

The command is tiny_mlp_bench.gpu_study.command; this file is only what a bare node's Python needs to reach it.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != str(ROOT):
        # Nothing of this repository is installed here: restart with it first on PYTHONPATH, which every child
        # inherits (the study's Snakemake calls and their jobs).
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        os.execve(
            sys.executable,
            [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]],
            os.environ | {"PYTHONPATH": path},
        )
    from tiny_mlp_bench.gpu_study.command import main

    sys.exit(main())
