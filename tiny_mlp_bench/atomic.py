"""Write files so that a reader never sees a half-written one."""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import tempfile
from pathlib import Path

FAULT_VARIABLE = "TINY_MLP_BENCH_FAULT"
FAULT_BEFORE_PUBLISH = "before_publish"
TEMP_SUFFIX = ".part"


def _inject_fault(point: str) -> None:
    """Kill this process, uncatchably, where TINY_MLP_BENCH_FAULT names ``point``."""
    if os.environ.get(FAULT_VARIABLE) == point:
        os.kill(os.getpid(), signal.SIGKILL)


def _remove_leftovers(path: Path) -> None:
    """Remove temporary files that killed writers of ``path`` left behind."""
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*{TEMP_SUFFIX}"):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()


@contextlib.contextmanager
def atomic_path(path: Path):
    """Yield a temporary path beside ``path``; rename it into place only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    os.close(fd)
    # mkstemp makes the file private (0600); give the result the usual umask-based mode.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        try:
            yield Path(tmp)
            _inject_fault(FAULT_BEFORE_PUBLISH)
            os.replace(tmp, path)
        except OSError as err:
            if err.errno is None or err.filename is not None:
                raise
            raise OSError(err.errno, err.strerror, str(path)) from err
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _remove_leftovers(path)


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
