"""The archive's SHA-256 manifest (MANIFEST.sha256): writing it when sealing, checking it when verifying."""

from __future__ import annotations

import re
from pathlib import Path

from tiny_mlp_bench.archive.layout import MANIFEST, ArchiveError, files_under, sha256
from tiny_mlp_bench.atomic import write_text_atomic


def write_manifest(folder: Path) -> None:
    lines = [f"{sha256(folder / rel)}  {rel}\n" for rel in files_under(folder)]
    write_text_atomic(folder / MANIFEST, "".join(lines))


def check_manifest(folder: Path) -> None:
    """The archive holds exactly the manifest's files, unchanged; else an ArchiveError naming the first that is not."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise ArchiveError(f"{folder}: no {MANIFEST}")
    listed = {}
    for number, line in enumerate(manifest.read_text().splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ArchiveError(f"{manifest}:{number}: not a '<sha256>  <path>' line")
        listed[rel] = digest
    present = files_under(folder)
    for rel in sorted(set(listed) | set(present)):
        if rel not in present:
            raise ArchiveError(f"{folder / rel}: listed in {MANIFEST} but missing")
        if rel not in listed:
            raise ArchiveError(f"{folder / rel}: in the archive but not in {MANIFEST}")
        if sha256(folder / rel) != listed[rel]:
            raise ArchiveError(f"{folder / rel}: its SHA-256 differs from {MANIFEST}'s")
