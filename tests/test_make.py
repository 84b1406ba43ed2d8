"""The Makefile's front: a bare `make` lists the targets and starts nothing."""

import re
import subprocess

from helpers import ROOT


def test_a_bare_make_lists_every_target_and_starts_nothing():
    done = subprocess.run(["make", "-s", "-C", str(ROOT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("tiny-mlp-bench: the targets")
    assert done.stdout == subprocess.run(["make", "-s", "-C", str(ROOT), "help"], capture_output=True, text=True).stdout
    phony = re.search(r"^\.PHONY: (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)[1].split()
    unlisted = [target for target in phony if target != "help" and not re.search(rf"\b{target}\b", done.stdout)]
    assert unlisted == [], f"make help does not list {unlisted}"
    # Nothing was set up or run: a dry run of the bare make runs only the help's own printing.
    dry = subprocess.run(["make", "-n", "-C", str(ROOT)], capture_output=True, text=True).stdout
    assert "snakemake" not in dry and "venv" not in dry
