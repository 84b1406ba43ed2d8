"""Probes: the fixed costs a tiny training step pays, measured on one framework and device.

A step of the question's 2->20->1 MLP does almost no arithmetic; its time is what every op, launch,
sync and call costs whatever its size. The probes measure those costs and return numbers
(microseconds, the median over repeats of many calls each, and how many calls and repeats); the
probe job (job.py, `tiny-mlp-bench probe`) loads the framework, decides whether the device is there and
writes the results as a probe record (records.write_probe). Callers import from the module that
measures what they need; docs/layout.md maps them.
"""
