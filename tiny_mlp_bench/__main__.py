"""The one program: ``python -m tiny_mlp_bench COMMAND``, installed as ``tiny-mlp-bench``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from tiny_mlp_bench import CHECKOUT

PROG = "tiny-mlp-bench"

# name: (module:function, what it does); the first five are the workflow's steps, the rest run by hand or by make.
COMMANDS = {
    "run": ("tiny_mlp_bench.jobs.run:main", "train and time one run of one framework and rung: a run record"),
    "sweep": ("tiny_mlp_bench.jobs.sweep:main", "time torch per step over batch size x width on one device"),
    "probe": ("tiny_mlp_bench.jobs.probe:main", "measure one framework's fixed costs per step on one device"),
    "dataset": ("tiny_mlp_bench.dataset:main", "write the question's dataset as Parquet"),
    "report": ("tiny_mlp_bench.report.render:main", "render the report, its table and charts from the records"),
    "compare": ("tiny_mlp_bench.report.compare_markdown:main", "this study's runs against an archived study's"),
    "archive": ("tiny_mlp_bench.archive.commands:pack_main", "pack the finished study into results/archive/"),
    "verify": ("tiny_mlp_bench.archive.commands:verify_main", "check archives and render their reports again"),
    "reseal": ("tiny_mlp_bench.archive.commands:reseal_main", "re-render and seal an older archive in place"),
    "docs": ("tiny_mlp_bench.generated_docs:main", "write (or --check) the docs' generated tables and numbers"),
    "gpu-study": (None, "the GPU study on a machine without a registry (scripts/gpu_study.py)"),
    "plan": ("tiny_mlp_bench.gpu_study.plan:main", "the GPU study's order of jobs, and which fit a time limit"),
    "locks": ("tiny_mlp_bench.locks.wheels:main", "resolve or check the CUDA and GPU-kit locks; fetch the kit"),
}


def parser() -> argparse.ArgumentParser:
    listing = "\n".join(f"  {name:<10} {about}" for name, (_, about) in COMMANDS.items())
    found = argparse.ArgumentParser(
        prog=PROG,
        description="Why a tiny MLP trains slower on a GPU, measured. The study itself runs with "
        "`snakemake --cores all` (or `make run`); these are its steps and tools.",
        epilog=f"commands:\n{listing}\n\n`{PROG} COMMAND --help` says what one takes.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    found.add_argument("--version", action="version", version=(CHECKOUT / "VERSION").read_text().strip())
    found.add_argument("command", choices=COMMANDS, metavar="COMMAND", help="one of the commands below")
    return found


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        parser().print_help()
        return 2
    if argv[0] not in COMMANDS:
        parser().parse_args(argv)  # --help, --version, or an error naming the commands
        return 2
    command, rest = argv[0], argv[1:]
    target, _ = COMMANDS[command]
    if target is None:
        # The GPU study starts on a node's bare Python, without this package's dependencies; its script installs them.
        script = CHECKOUT / "scripts" / "gpu_study.py"
        os.execv(sys.executable, [sys.executable, str(script), *rest])
    module, function = target.split(":")
    return getattr(importlib.import_module(module), function)(rest, prog=f"{PROG} {command}")


if __name__ == "__main__":
    sys.exit(main())
