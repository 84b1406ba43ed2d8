"""One module per framework, each declaring what runs it (BACKENDS) and its rungs with their loops (RUNGS), and
the contract they keep (contract.py). tiny_mlp_bench.registry gathers them, and nothing here imports it."""
