"""Generated doc passages, written between two marker lines from their one source, so none is copied by hand."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

# name: (module, what it writes from what)
GENERATORS = {
    "variant-table": ("variant_table", "README.md's table of variants, from the catalogue"),
    "config-table": ("config_table", "config/config.yaml and docs/running.md's table of keys, from the config schema"),
    "method-numbers": ("method_numbers", "docs/method.md's A/A control and intervals, from the archive it names"),
    "findings": ("findings", "README.md's \"What it found\", from the newest archives' report models"),
}


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


def main(argv=None, prog=None) -> int:
    """`tiny-mlp-bench docs [NAME] [--check]`: one generator, or all of them (one failed check hides no other's)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in GENERATORS:
        return generator(argv[0]).main(argv[1:], prog=f"{prog} {argv[0]}" if prog else argv[0])
    if argv in ([], ["--check"]):
        return max(generator(name).main(argv, prog=name) for name in GENERATORS)
    listing = "\n".join(f"  {name:<15} {about}" for name, (_, about) in GENERATORS.items())
    parser = argparse.ArgumentParser(
        prog=prog,
        usage=f"{prog or 'docs'} [NAME] [--check]",
        description="Write the docs' generated passages from their sources, or --check that they are current.",
        epilog=f"generators (default: all):\n{listing}\n\n`{prog or 'docs'} NAME --help` says what one takes.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--check", action="store_true", help="only say which passages are stale (exit 1 if any)")
    parser.parse_args(argv)  # prints the help, or names what it does not take
    return 2


def generator(name: str):
    return importlib.import_module(f"{__name__}.{GENERATORS[name][0]}")
