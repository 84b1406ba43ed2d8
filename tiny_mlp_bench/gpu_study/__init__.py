"""The GPU study: one command (scripts/gpu_study.py) that sets up a GPU machine's Python, plans the
study's jobs to fit a time limit, runs them in lanes and archives the result.

The command runs on the machine's bare Python, before any environment exists, so the modules it
imports (environment, lanes, readme) use only the standard library; plan and preflight run in the
study's Python, as ``python -m``.
"""
