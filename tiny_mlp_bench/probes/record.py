"""The probe record: validating, writing and reading it against probe_record.schema.json. Its type
and schema version are records.py's, beside the run and sweep records' (records.upgrade reads all three).
"""

from __future__ import annotations

from pathlib import Path

from tiny_mlp_bench.records import PROBE_SCHEMA, read_record, validate_record, write_record


def validate_probe(record: dict, source: str = "probe record") -> dict:
    """Return ``record`` if it matches probe_record.schema.json; else raise RecordError naming the field."""
    return validate_record(record, source, PROBE_SCHEMA)


def write_probe(record: dict, path: Path) -> None:
    """Validate and write a probe record atomically, keys sorted so equal records give equal bytes."""
    write_record(record, path, PROBE_SCHEMA)


def read_probe(path: Path) -> dict:
    """Read and validate one probe record; errors name the file."""
    return read_record(path, PROBE_SCHEMA)
