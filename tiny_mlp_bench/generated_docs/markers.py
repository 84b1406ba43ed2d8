"""A generated passage between its two marker lines: replacing it, and writing or checking the files that hold one."""

from __future__ import annotations

from pathlib import Path


def between(text: str, begin: str, end: str, body: str, source: str) -> str:
    """``text`` with what stands between its ``begin`` and ``end`` marker lines replaced by ``body``."""
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise SystemExit(f"error: {source} needs one '{begin}' line followed by one '{end}' line")
    head, rest = text.split(begin, 1)
    return f"{head}{begin}\n{body}\n{end}{rest.split(end, 1)[1]}"


def write_or_check(wanted: dict[Path, str], *, check: bool, stale: str, fix: str) -> int:
    """Write each path whose text differs; with ``check`` only print "<path>: <stale>; run: <fix>", 1 if any differs."""
    differ = [path for path, text in wanted.items() if not path.exists() or path.read_text() != text]
    for path in differ:
        if check:
            print(f"{path}: {stale}; run: {fix}")
        else:
            path.write_text(wanted[path])
            print(f"{path}: rewritten ({fix})")
    return 1 if check and differ else 0
