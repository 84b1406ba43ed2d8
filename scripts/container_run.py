#!/usr/bin/env python3
"""Run one workflow step inside a Docker or Podman image: `<engine> run --rm` with the working
directory and this checkout mounted; the rules call it for every step when container_engine is docker or podman."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tiny_mlp_bench.containers import ENGINES, ContainerError, gpu_flags, image_id, image_reference, run_command


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=ENGINES, required=True)
    parser.add_argument("--image", required=True, help="image name, with or without docker://")
    parser.add_argument("--gpu", action="store_true", help="a cuda step: pass the engine's GPU flag")
    parser.add_argument("--mount", type=Path, action="append", default=[], help="directory to mount (repeatable)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the step's command")
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command given after --")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        image = image_reference(args.image)
        identity = image_id(args.engine, args.image)
    except ContainerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    gpu, why_not = gpu_flags(args.engine) if args.gpu else ([], None)
    if why_not:
        # As on a machine without a GPU: the step records itself as skipped (or fails with --require-gpu).
        print(f"warning: no GPU passed to the {args.engine} container: {why_not}", file=sys.stderr)
    checkout = Path(__file__).resolve().parent.parent  # where the step's programs and package are, found now
    command = run_command(args.engine, image, args.command, [Path.cwd(), checkout, *args.mount], gpu, identity)
    print("running: " + " ".join(command), file=sys.stderr, flush=True)
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main())
