"""The git repository a study is archived from: its changed files, and its code at a commit."""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from pathlib import Path

from tiny_mlp_bench.archive.layout import ArchiveError


def git(repo: Path, *args: str, binary: bool = False):
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary)
    if done.returncode != 0:
        stderr = done.stderr if isinstance(done.stderr, str) else done.stderr.decode(errors="replace")
        raise ArchiveError(f"git {' '.join(args)} failed in {repo}: {stderr.strip()}")
    return done.stdout


def modified_files(repo: Path, modes: bool = True) -> list[str]:
    """Tracked files outside results/ that differ from HEAD; with ``modes`` false, mode-only changes don't count."""
    file_mode = [] if modes else ["-c", "core.fileMode=false"]
    status = git(repo, *file_mode, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results")
    return [line[3:] for line in status.splitlines()]


def extract(repo: Path, commit: str, paths, destination: Path) -> None:
    """Those of ``paths`` that ``commit`` has (older commits lack some), as they are there, under ``destination``."""
    present = set(git(repo, "ls-tree", "--name-only", commit).split())
    data = git(repo, "archive", "--format=tar", commit, *[p for p in paths if p in present], binary=True)
    with tempfile.TemporaryFile() as tar_file:
        tar_file.write(data)
        tar_file.seek(0)
        with tarfile.open(fileobj=tar_file) as tar:
            tar.extractall(destination, filter="data")


def write_code(repo: Path, commit: str, path: Path) -> None:
    path.write_bytes(git(repo, "archive", "--format=tar.gz", commit, "--", ".", ":(exclude)results", binary=True))
