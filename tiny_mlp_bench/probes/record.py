"""The probe record: its type and schema version, and validating, writing and reading it against
probe_record.schema.json.
"""

from __future__ import annotations

from pathlib import Path

from tiny_mlp_bench.records import (
    PROBE_RECORD_TYPE,
    PROBE_SCHEMA,
    PROBE_SCHEMA_VERSION,
    read_record,
    validate_record,
    write_record,
)

__all__ = ["PROBE_RECORD_TYPE", "PROBE_SCHEMA_VERSION", "read_probe", "validate_probe", "write_probe"]


def validate_probe(record: dict, source: str = "probe record") -> dict:
    """Return ``record`` if it matches probe_record.schema.json; else raise RecordError naming the field."""
    return validate_record(record, source, PROBE_SCHEMA)


def write_probe(record: dict, path: Path) -> None:
    """Validate and write a probe record atomically, keys sorted so equal records give equal bytes."""
    write_record(record, path, PROBE_SCHEMA)


def read_probe(path: Path) -> dict:
    """Read and validate one probe record; errors name the file."""
    return read_record(path, PROBE_SCHEMA)
