"""Run, sweep and probe records: JSON files validated against their schemas (*_record.schema.json here)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jsonschema
import referencing

from tiny_mlp_bench.atomic import write_text_atomic
from tiny_mlp_bench.stacks import TODAY

HERE = Path(__file__).parent
RUN_SCHEMA = "run_record.schema.json"
SWEEP_SCHEMA = "sweep_record.schema.json"
PROBE_SCHEMA = "probe_record.schema.json"
RECORD_TYPE = "tiny-mlp-bench.run"
SWEEP_RECORD_TYPE = "tiny-mlp-bench.sweep"
PROBE_RECORD_TYPE = "tiny-mlp-bench.probe"
# 2: container {engine, image, image_id}. 3: phases_s and blocks (block_s, block_epochs). 4: a load block.
# 5: parameters.init. 6: a method, per-block CPU time, the load block's span and kernel counts. 7: timings.steady.
# 8: the window replays the epochs in passes from the initial weights, with a canary; 7's window trained on.
# 9: the environment's cpu (vendor, family, model, stepping, flags hash), clock, kernel and virtualization;
#    identity.condition. 10: block_part_s, a step's parts per block (the torch `parts` rung); nothing to upgrade.
# 11: identity.stack, the software a run trained on (stacks.py): today's for every record before it.
SCHEMA_VERSION = 11
# Probe records count their own versions. 2: a method, each repeat's CPU time, the load block of version 6.
# 3: the environment of version 9. 4: the torch probe's loader_fetch, and profiler_cost's events_mismatch where there
#    was one; nothing to upgrade. 5: loader_fetch's fetch_parts; nothing to upgrade.
PROBE_SCHEMA_VERSION = 5
CONTAINER_ENGINES = ("docker", "podman", "apptainer")


class RecordError(Exception):
    """A record is unreadable or does not match its schema."""


@cache
def _validator(schema_name: str) -> jsonschema.Draft202012Validator:
    # The sweep and probe schemas borrow the run schema's environment and load blocks by file name.
    registry = referencing.Registry().with_resources(
        (name, referencing.Resource.from_contents(json.loads((HERE / name).read_text())))
        for name in (RUN_SCHEMA, SWEEP_SCHEMA, PROBE_SCHEMA)
    )
    return jsonschema.Draft202012Validator({"$ref": schema_name}, registry=registry)


def validate_record(record: dict, source: str = "run record", schema_name: str = RUN_SCHEMA) -> dict:
    """Return ``record`` if it matches the schema; else raise RecordError naming the field."""
    errors = _validator(schema_name).iter_errors(record)
    error = next(iter(sorted(errors, key=lambda e: [str(p) for p in e.path])), None)
    if error is not None:
        where = "/".join(str(p) for p in error.path) or "(top level)"
        raise RecordError(f"{source}: field {where}: {error.message}")
    return record


def write_record(record: dict, path: Path, schema_name: str = RUN_SCHEMA) -> None:
    """Validate and write a record atomically, keys sorted so equal records give equal bytes."""
    validate_record(record, str(path), schema_name)
    write_text_atomic(path, json.dumps(record, indent=2, sort_keys=True, allow_nan=False) + "\n")


def read_record(path: Path, schema_name: str = RUN_SCHEMA) -> dict:
    """Read and validate one record file; errors name the file."""
    return read_record_as_written(path, schema_name)[1]


def read_record_as_written(path: Path, schema_name: str = RUN_SCHEMA) -> tuple[int | None, dict]:
    """The schema version a record file was written at (upgrade() forgets it), and the record read_record reads."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RecordError(f"{path}: not a readable JSON record ({err}); delete it to rerun that job") from err
    written = record.get("schema_version") if isinstance(record, dict) else None
    return written, validate_record(upgrade(record), str(path), schema_name)


def upgrade(record: dict) -> dict:
    """An older record in today's shape; anything else is returned as it is, for the schema to judge."""
    if not isinstance(record, dict):
        return record
    probe_older = range(1, PROBE_SCHEMA_VERSION)
    if record.get("record_type") == PROBE_RECORD_TYPE and record.get("schema_version") in probe_older:
        if record["schema_version"] == 1:
            # A probe's repeat was always its calls alone, between two readings, compiled (if at all) cold.
            record["method"] = {
                "block": "call",
                "sync": "block end",
                "compile_cache": "cold",
                "own_work": "between blocks",
            }
            upgrade_load(record)
        upgrade_environment(record)
        record["schema_version"] = PROBE_SCHEMA_VERSION
        return record
    older = range(1, SCHEMA_VERSION)
    if record.get("record_type") not in (RECORD_TYPE, SWEEP_RECORD_TYPE) or record.get("schema_version") not in older:
        return record
    if record["schema_version"] < 6:  # from version 6 on, the record says its method itself
        record["method"] = method_timed_with(record)  # before the timings below change shape
    environment = record.get("environment")
    container = environment.get("container") if isinstance(environment, dict) else None
    if record["schema_version"] == 1 and isinstance(container, str):
        # Version 1's container was one string: the image, or '<engine> (image not named)'.
        engine, _, rest = container.partition(" ")
        if engine in CONTAINER_ENGINES and rest == "(image not named)":
            environment["container"] = {"engine": engine, "image": None, "image_id": None}
        else:  # version 1 named only Apptainer's image file (or TINY_MLP_BENCH_IMAGE, never set then)
            environment["container"] = {"engine": "apptainer", "image": container, "image_id": None}
    timings = record.get("timings")
    if record.get("record_type") == RECORD_TYPE and isinstance(timings, dict) and "import_s" in timings:
        # Versions 1 and 2 timed one epoch per block and kept each phase under its own key.
        phases = {
            name: timings.pop(f"{name}_s") for name in ("import", "setup", "fit", "predict") if f"{name}_s" in timings
        }
        timings["phases_s"] = phases
        if "epoch_s" in timings:
            timings["block_s"] = timings.pop("epoch_s")
            timings["block_epochs"] = [1] * len(timings["block_s"])
    record.setdefault("load", None)  # not measured before version 4
    upgrade_load(record)
    if record.get("record_type") == RECORD_TYPE and isinstance(record.get("parameters"), dict):
        record["parameters"].setdefault("init", None)  # not recorded before version 5
    if record.get("record_type") == RECORD_TYPE and isinstance(record.get("identity"), dict):
        record["identity"].setdefault("condition", "idle")  # none ran beside a busy core before version 9
        record["identity"].setdefault("stack", TODAY)  # every run trained on today's stack before version 11
    upgrade_environment(record)
    record["schema_version"] = SCHEMA_VERSION
    return record


def method_timed_with(record: dict) -> dict:
    """The method an older record was timed with (timing.METHOD_PARTS), from what it holds."""
    method = {"block": "call", "sync": "block end", "compile_cache": "cold", "own_work": "next block"}
    if record.get("schema_version", 0) < 5:
        return method | {"block": "epoch", "compile_cache": "shared"}
    timings = record.get("timings")
    blocks = timings.get("block_epochs") if isinstance(timings, dict) else None
    identity = record.get("identity")
    on_gpu = isinstance(identity, dict) and identity.get("device") == "cuda"
    if on_gpu and blocks and max(blocks) == 1:
        method["block"] = "epoch"
    return method


def upgrade_load(record: dict) -> None:
    """A version-4 or -5 load block lacks the job's span and the kernel's counts: unknown, not zero."""
    if isinstance(record.get("load"), dict):
        for key in ("started_at", "ended_at", "kernel"):
            record["load"].setdefault(key, None)


def upgrade_environment(record: dict) -> None:
    """An environment before run version 9 (probe version 3) lacks the CPU's identity, clock, kernel and
    virtualization: unknown."""
    if isinstance(record.get("environment"), dict):
        for key in ("cpu", "cpu_mhz", "kernel", "virtualization"):
            record["environment"].setdefault(key, None)


def write_sweep(record: dict, path: Path) -> None:
    write_record(record, path, SWEEP_SCHEMA)


def read_sweep(path: Path) -> dict:
    return read_record(path, SWEEP_SCHEMA)


def validate_probe(record: dict, source: str = "probe record") -> dict:
    return validate_record(record, source, PROBE_SCHEMA)


def write_probe(record: dict, path: Path) -> None:
    write_record(record, path, PROBE_SCHEMA)


def read_probe(path: Path) -> dict:
    return read_record(path, PROBE_SCHEMA)
