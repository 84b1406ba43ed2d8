#!/usr/bin/env python3
"""Archive a finished study, re-seal an older archive, or verify archives.

  pack     results/ and logs/ into results/archive/<date>-<gpu model or host>/: records, sweeps,
           probes, logs, dataset, config as run, lock files, the report rendered from the records
           with its numbers (report/model.json), the code that rendered it (workflow.tar.gz),
           provenance.json, RO-Crate metadata and a SHA-256 manifest. Refuses a modified tree
           unless --allow-modified (then the archive says so).
  reseal   an archive sealed by older code: render its report again with this commit's code and
           write its code tarball, provenance, RO-Crate metadata and manifest, in place.
  verify   each archive's manifest, then its report rendered again with the code in its tarball
           (no git needed): its numbers compared with model.json's, and where the versions that
           rendered it are the ones here, its files byte for byte; names the first difference.

Usage: python scripts/archive_study.py pack [--name NAME] [--allow-modified]
       python scripts/archive_study.py reseal results/archive/<name> [--allow-modified] [--note TEXT ...]
       python scripts/archive_study.py verify [results/archive/<name> ...]   (default: every archive)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tiny_mlp_bench.archive.layout import ArchiveError
from tiny_mlp_bench.archive.packing import pack, reseal
from tiny_mlp_bench.archive.verifying import verify

ROOT = Path(__file__).resolve().parents[1]
ARCHIVES = ROOT / "results" / "archive"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack", help="archive the study in results/ and logs/")
    packing.add_argument("--name", help="the archive's folder name (default: <date>-<gpu model or host>)")
    packing.add_argument("--allow-modified", action="store_true", help="archive from a modified tree, and say so")
    resealing = commands.add_parser("reseal", help="re-render and seal an existing archive in place")
    resealing.add_argument("archive", type=Path)
    resealing.add_argument("--allow-modified", action="store_true", help="records from a modified tree, flagged")
    resealing.add_argument("--note", action="append", default=[], help="a line for provenance.json's notes")
    verifying = commands.add_parser("verify", help="check archives' manifests and re-render their reports")
    verifying.add_argument("archives", type=Path, nargs="*", help="default: every folder in results/archive/")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        if args.command == "pack":
            folder = pack(ROOT, ARCHIVES, name=args.name, allow_modified=args.allow_modified)
            print(f"archived the study in {folder}: add your notes on it in {folder / 'README.md'}")
        elif args.command == "reseal":
            reseal(args.archive.resolve(), ROOT, allow_modified=args.allow_modified, notes=args.note)
            print(f"re-rendered and sealed {args.archive}")
        else:
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
    except ArchiveError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
