"""Rendering an archive's report from its records: the command, and running it with some code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tiny_mlp_bench.archive.layout import (
    BUSY_QUOTED,
    HEADLINE,
    NUMBERS,
    QUOTED,
    RENDER_SCRIPT,
    RENDERED,
    ArchiveError,
    busy_quoted_archives,
    quoted_archive,
    record_files,
)


def render_command(folder: Path, *, no_archive_qualifies: bool = False, busy_quote_asked: bool = False) -> list[str]:
    """render_report.py's arguments, run in the archive; ``no_archive_qualifies``: no archived GPU answer to quote;
    ``busy_quote_asked``: the study asked for archived busy-core answers, whether or not one was of its kind."""
    records = record_files(folder)
    if not records["runs"]:
        raise ArchiveError(f"{folder}: no run records in runs/")
    command = [RENDER_SCRIPT, "--report", RENDERED[0], "--timings", RENDERED[1], "--plot", RENDERED[2]]
    command += ["--ladder-plot", RENDERED[3], "--crossover-plot", RENDERED[4], "--breakdown-plot", RENDERED[5]]
    command += ["--numbers", NUMBERS, "--headline", HEADLINE]
    if quoted := quoted_archive(folder):
        command += ["--gpu-archive", f"{QUOTED}/{quoted}"]
    elif no_archive_qualifies:
        command += ["--no-archive-qualifies"]
    if busy_quote_asked:
        command += ["--busy-archives", *(f"{BUSY_QUOTED}/{name}" for name in busy_quoted_archives(folder))]
    if records["sweep"]:
        command += ["--sweeps", *records["sweep"]]
    if records["probes"]:
        command += ["--probes", *records["probes"]]
    return [*command, "--", *records["runs"]]


def render(
    code: Path, folder: Path, command: list[str], python: str = sys.executable, timeout: float | None = None
) -> None:
    """Run the render command on ``folder``'s records with ``code`` first on PYTHONPATH (its tiny_mlp_bench, not
    this one), stopped after ``timeout`` seconds where given (the report is written whole or not at all)."""
    path = os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH")]))
    try:
        done = subprocess.run(
            [python, str(code / command[0]), *command[1:]],
            cwd=folder,
            env=os.environ | {"PYTHONPATH": path},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise ArchiveError(f"rendering the report in {folder} took over {timeout:.0f} s, the time it had") from None
    if done.returncode != 0:
        raise ArchiveError(f"rendering the report in {folder} failed:\n{done.stderr.strip()[-2000:]}")
