"""Records of every schema version read in today's shape, match their schemas, and show the machine in the report."""

from __future__ import annotations

import copy
import json

import pytest

from helpers import ROOT, TEST_DATA, synthetic_probes, synthetic_record, synthetic_sweeps
from tiny_mlp_bench import machine
from tiny_mlp_bench.records import (
    PROBE_SCHEMA_VERSION,
    SCHEMA_VERSION,
    SWEEP_SCHEMA,
    RecordError,
    read_probe,
    read_record,
    read_sweep,
    upgrade,
    validate_probe,
    validate_record,
)
from tiny_mlp_bench.report.markdown import render_markdown
from tiny_mlp_bench.report.model import build_report

NEW_FACTS = ("cpu", "cpu_mhz", "kernel", "virtualization")
ARCHIVE = ROOT / "results" / "archive" / "2026-12-03-cpu-2core"


def older(record: dict, version: int) -> dict:
    """``record`` as an older version wrote it: without the facts version 9 (probe version 3) added, nor version
    11's stack."""
    record = copy.deepcopy(record)
    record["schema_version"] = version
    for key in NEW_FACTS:
        del record["environment"][key]
    if "identity" in record:
        del record["identity"]["condition"]
        del record["identity"]["stack"]
    return record


def assert_unknown(record: dict) -> None:
    assert all(record["environment"][key] is None for key in NEW_FACTS)


def test_a_version_8_record_reads_with_the_new_facts_unknown():
    run = upgrade(older(synthetic_record("torch", "cpu", 1, 1.0), 8))
    assert run["schema_version"] == SCHEMA_VERSION == 11
    assert run["identity"]["condition"] == "idle" and run["identity"]["run_id"] == "torch-cpu-seed-1"
    assert run["identity"]["stack"] == "today"  # every run before version 11 trained on today's stack
    assert_unknown(validate_record(run))
    sweep = upgrade(older(synthetic_sweeps()[0], 8))
    assert sweep["schema_version"] == SCHEMA_VERSION and "identity" not in sweep
    assert_unknown(validate_record(sweep, schema_name=SWEEP_SCHEMA))
    probe = upgrade(older(synthetic_probes()[0], 2))
    assert probe["schema_version"] == PROBE_SCHEMA_VERSION == 5
    assert_unknown(validate_probe(probe))


def test_version_5_records_read_as_version_9():
    run = read_record(TEST_DATA / "version5" / "run.json")
    assert run["schema_version"] == SCHEMA_VERSION and run["identity"]["condition"] == "idle"
    assert_unknown(run)
    assert_unknown(read_sweep(TEST_DATA / "version5" / "sweep.json"))
    assert_unknown(read_probe(TEST_DATA / "version5" / "probe.json"))


def test_archived_records_are_upgraded_as_read_never_on_disk():
    paths = [ARCHIVE / "runs" / "torch-cpu-seed-1.json", ARCHIVE / "probes" / "torch-cpu.json"]
    written = [path.read_bytes() for path in paths]
    assert json.loads(written[0])["schema_version"] == 8 and json.loads(written[1])["schema_version"] == 2
    run, probe = read_record(paths[0]), read_probe(paths[1])
    assert run["identity"]["condition"] == "idle" and run["environment"]["cpu_model"] == "AMD EPYC"
    assert_unknown(run)
    assert_unknown(probe)
    assert [path.read_bytes() for path in paths] == written


def test_the_schemas_accept_a_record_of_this_machine():
    environment = machine.collect_environment({}, {}, dict(machine.NO_CUDA), None, None)
    run = synthetic_record("torch", "cpu", 1, 1.0) | {"environment": environment}
    validate_record(run)
    validate_record(synthetic_sweeps()[0] | {"environment": environment}, schema_name=SWEEP_SCHEMA)
    validate_probe(synthetic_probes()[0] | {"environment": environment})


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r["identity"].pop("condition"), "identity"),
        (lambda r: r["identity"].update(condition="noisy"), "identity/condition"),
        (lambda r: r["environment"].pop("virtualization"), "environment"),
        (lambda r: r["environment"]["cpu"].update(family="25"), "environment/cpu/family"),
    ],
)
def test_a_version_9_record_without_its_new_fields_is_refused(change, field):
    record = synthetic_record("torch", "cpu", 1, 1.0)
    change(record)
    with pytest.raises(RecordError, match=f"field {field}:"):
        validate_record(record)


def environment_rows(records: list[dict]) -> dict[str, str]:
    """The report's two-column rows (its environment table among them) of ``records``, by their first cell."""
    text = render_markdown(build_report(records))
    return {
        cells[1].strip(): cells[2].strip()
        for cells in (line.split("|") for line in text.splitlines())
        if len(cells) == 4
    }


def test_the_report_names_the_machine_in_full_and_what_older_records_lack():
    new = synthetic_record("torch", "cpu", 1, 1.0)
    old = upgrade(older(synthetic_record("torch", "cpu", 2, 1.0), 8))
    rows = environment_rows([new, old])
    assert (
        rows["CPU vendor family/model/stepping, flags sha256"]
        == "GenuineIntel 6/85/7, flags 0123456789ab, not recorded"
    )
    assert rows["reported CPU clock (MHz)"] == "2100"
    assert rows["kernel"] == "6.1.0-test, not recorded" and rows["virtualization"] == "kvm, not recorded"
    assert environment_rows([old])["reported CPU clock (MHz)"] == "not recorded"
