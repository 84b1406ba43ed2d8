"""tiny-mlp-bench: why a tiny MLP trains slower on a GPU, measured. One program, ``python -m tiny_mlp_bench``,
that trains and times each framework's loops, records every job and its machine, and renders and archives the report."""

from pathlib import Path

# The checkout the package runs from (editable install, or PYTHONPATH on a GPU node): its config/, results/, docs/.
CHECKOUT = Path(__file__).resolve().parent.parent
