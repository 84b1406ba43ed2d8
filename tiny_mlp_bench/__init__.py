"""tiny-mlp-bench: why a tiny MLP trains slower on a GPU, measured. One program,
``python -m tiny_mlp_bench`` (installed as ``tiny-mlp-bench``), whose commands the workflow's rules
run through the thin programs in scripts/: it trains and times each framework's loops, records every
job with the machine it ran on, and computes, renders and archives the report. docs/layout.md maps it.
"""

from pathlib import Path

# The checkout the package runs from (make installs it editable; a GPU node puts it on PYTHONPATH):
# its config/, results/ and docs/ are the ones the commands read and write.
CHECKOUT = Path(__file__).resolve().parent.parent
