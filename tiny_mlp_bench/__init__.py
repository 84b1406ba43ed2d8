"""tiny-mlp-bench: why a tiny MLP trains slower on a GPU, measured. The library behind the programs
in scripts/ and the workflow's rules: it trains and times each framework's loops, records every job
with the machine it ran on, and computes, renders and archives the report. docs/layout.md maps it.
"""
