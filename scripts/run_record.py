"""The run record: one JSON file per training run, validated against run_record.schema.json."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jsonschema

from atomic import write_text_atomic

SCHEMA_PATH = Path(__file__).with_name("run_record.schema.json")
RECORD_TYPE = "tiny-mlp-bench.run"
SCHEMA_VERSION = 1


class RecordError(Exception):
    """A run record is unreadable or does not match the schema."""


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))


def run_id(framework: str, device: str, variant: str, repeat: int) -> str:
    """The record's identity and file stem, as in results/runs/<run_id>.json."""
    return f"{framework}-{device}-{variant}-{repeat}"


def validate_record(record: dict, source: str = "run record") -> dict:
    """Return ``record`` if it matches the schema; else raise RecordError naming the field."""
    error = next(iter(sorted(_validator().iter_errors(record), key=lambda e: list(e.path))), None)
    if error is not None:
        where = "/".join(str(p) for p in error.path) or "(top level)"
        raise RecordError(f"{source}: field {where}: {error.message}")
    return record


def write_record(record: dict, path: Path) -> None:
    """Validate and write a record atomically, keys sorted so equal records give equal bytes."""
    validate_record(record, str(path))
    write_text_atomic(path, json.dumps(record, indent=2, sort_keys=True, allow_nan=False) + "\n")


def read_record(path: Path) -> dict:
    """Read and validate one record file; errors name the file."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(f"{path}: not a readable JSON run record ({err}); delete it to rerun that job") from err
    return validate_record(record, str(path))
