"""The GPU study: one command (scripts/gpu_study.py) that sets up a GPU machine's Python, plans the study's jobs to fit
a time limit, runs them in lanes and archives the result."""
