"""Probes: the fixed costs a tiny training step pays, measured on one framework and device."""
