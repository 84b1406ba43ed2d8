"""The archive's three commands: `tiny-mlp-bench archive`, `verify` and `reseal` (make archive, make verify)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tiny_mlp_bench import CHECKOUT
from tiny_mlp_bench.archive.layout import ArchiveError
from tiny_mlp_bench.archive.packing import pack, reseal
from tiny_mlp_bench.archive.verifying import verify

ARCHIVES = CHECKOUT / "results" / "archive"


def pack_main(argv=None, prog=None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description="Archive the finished study in results/ and logs/.")
    parser.add_argument("--name", help="the archive's folder name (default: <date>-<gpu model or host>)")
    parser.add_argument("--allow-modified", action="store_true", help="archive from a modified tree, and say so")
    parser.add_argument(
        "--study",
        type=Path,
        default=CHECKOUT,
        help="the folder the study ran in, with its results/ and logs/ (default: the checkout; busy for make busy)",
    )
    args = parser.parse_args(argv)
    try:
        folder = pack(CHECKOUT, ARCHIVES, name=args.name, allow_modified=args.allow_modified, study=args.study)
    except ArchiveError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"archived the study in {folder}: add your notes on it in {folder / 'README.md'}")
    return 0


def reseal_main(argv=None, prog=None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description="Re-render and seal an existing archive in place.")
    parser.add_argument("archive", type=Path)
    parser.add_argument("--allow-modified", action="store_true", help="records from a modified tree, flagged")
    parser.add_argument("--note", action="append", default=[], help="a line for provenance.json's notes")
    args = parser.parse_args(argv)
    try:
        reseal(args.archive.resolve(), CHECKOUT, allow_modified=args.allow_modified, notes=args.note)
    except ArchiveError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"re-rendered and sealed {args.archive}")
    return 0


def verify_main(argv=None, prog=None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog, description="Check archives' manifests and render their reports again with their own code."
    )
    parser.add_argument("archives", type=Path, nargs="*", help="default: every folder in results/archive/")
    args = parser.parse_args(argv)
    archives = args.archives or sorted(p for p in ARCHIVES.iterdir() if p.is_dir() and p.name[0] != ".")
    failed = 0
    for folder in archives:
        try:
            compared = verify(folder.resolve())
            print(f"ok      {folder}: {compared}")
        except ArchiveError as err:
            failed += 1
            print(f"FAILED  {folder}\n        {err}")
    return 1 if failed else 0
