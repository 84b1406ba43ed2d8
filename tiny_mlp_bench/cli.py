"""Argument types and help shared by the program's commands: each error names the bad value."""

from __future__ import annotations

import argparse
import dataclasses
import math

# Config values are required options without defaults: the config schema is their one source, so none can drift.
CONFIG_EPILOG = (
    "An option whose help names a config key (\"the config's epochs\") takes that value of the workflow's config: "
    "the rules pass every one, and config/config.schema.yaml gives its default."
)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a number of zero or more, got {text}")
    return value


def csv_ints(text: str) -> list[int]:
    """Comma-separated positive integers, e.g. 64,1024."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def add_fields(parser: argparse.ArgumentParser, spec) -> None:
    """An option per field of the dataclass ``spec``: help and type from it, required without a default, bool a flag."""
    for item in dataclasses.fields(spec):
        flag, kind, text = "--" + item.name.replace("_", "-"), item.metadata["type"], item.metadata["help"]
        if kind is bool:
            parser.add_argument(flag, action="store_true", help=text)
        else:
            required, choices = item.default is dataclasses.MISSING, item.metadata["choices"]
            default = None if required else item.default
            parser.add_argument(flag, type=kind, choices=choices, required=required, default=default, help=text)
