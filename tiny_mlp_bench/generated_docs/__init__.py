"""Generated doc passages, written between two marker lines from their one source, so none is copied by hand."""

from __future__ import annotations

import argparse
import importlib
import sys

# name: (module, what it writes from what)
GENERATORS = {
    "rung-table": ("rung_table", "README.md's table of rungs, from the catalogue"),
    "config-table": ("config_table", "config/config.yaml and docs/running.md's table of keys, from the config schema"),
    "method-numbers": ("method_numbers", "docs/method.md's A/A control and intervals, from the archive it names"),
    "findings": ("findings", "README.md's answer, claims across the studies and era answers, from the archives"),
}


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
