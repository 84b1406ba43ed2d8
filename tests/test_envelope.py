"""The job envelope: a training run, a probe and a sweep go through the same skips, refusals and failures,
and their records agree on everything the envelope writes."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from helpers import ROOT, config_flags
from tiny_mlp_bench import machine
from tiny_mlp_bench.jobs import probe as probe_command
from tiny_mlp_bench.jobs import run as run_command
from tiny_mlp_bench.jobs import sweep as sweep_command
from tiny_mlp_bench.records import read_probe, read_record, read_sweep
from tiny_mlp_bench.timing import METHOD


@dataclass(frozen=True)
class Kind:
    """A kind of job as its program runs it."""

    main: Callable[[list[str]], int]
    measurement: type  # the envelope's Measurement of this kind
    read: Callable  # reads and validates its record
    args: tuple[str, ...]  # its arguments, as the rules give them, but the dataset, device and output


KINDS = {
    "run": Kind(
        run_command.main,
        run_command.TrainingRun,
        read_record,
        (*config_flags("train.py"), "--framework", "torch", "--variant", "seed", "--epochs", "2"),
    ),
    "probe": Kind(
        probe_command.main,
        probe_command.FixedCostsProbe,
        read_probe,
        (*config_flags("probe_fixed_costs.py"), "--framework", "torch"),
    ),
    "sweep": Kind(
        sweep_command.main,
        sweep_command.CrossoverSweep,
        read_sweep,
        (*config_flags("sweep_crossover.py"), "--batch-sizes", "8", "--hidden-units", "4", "--steps", "2"),
    ),
}


def command_line(kind: str, dataset, out, *extra) -> list[str]:
    data = () if kind == "sweep" else ("--dataset", str(dataset))
    return [*KINDS[kind].args, *data, "--device", "cuda", "--output", str(out), *extra]


def envelope_fields(record: dict) -> dict:
    """What the envelope writes into every kind of record; the dataset's checksum only where one is read."""
    environment_block = {k: v for k, v in record["environment"].items() if k != "dataset_sha256"}
    load = record["load"]
    started, ended = (datetime.datetime.fromisoformat(load[key]) for key in ("started_at", "ended_at"))
    return {
        "status": record["status"],
        "reason": record["reason"],
        "method": record["method"],
        "environment": environment_block,
        "load": {
            "blocks": sorted(load),
            "peak_gpu_memory_mb": load["peak_gpu_memory_mb"],
            "span in order": started <= ended,
            "kernel counts": sorted(load["kernel"]),
        },
    }


def each_kind(small_dataset, tmp_path, *extra) -> dict[str, tuple[int, dict | None]]:
    """Every kind of job run in this process: its exit status and the envelope's part of its record."""
    found = {}
    for name, kind in KINDS.items():
        out = tmp_path / f"{name}.json"
        status = kind.main(command_line(name, small_dataset, out, *extra))
        found[name] = (status, envelope_fields(kind.read(out)) if out.exists() else None)
    return found


@pytest.fixture
def no_driver(monkeypatch, tmp_path) -> str:
    monkeypatch.setattr(machine, "GPU_DRIVER_PATHS", (str(tmp_path / "no-proc-driver"),))
    return machine.gpu_driver_absent()


def test_without_a_gpu_driver_every_kind_of_job_records_the_same_skip(no_driver, small_dataset, tmp_path):
    found = each_kind(small_dataset, tmp_path)
    assert {kind: status for kind, (status, _) in found.items()} == {"run": 0, "probe": 0, "sweep": 0}
    run, probe, sweep = (fields for _, fields in found.values())
    assert run["status"] == "skipped" and run["reason"] == no_driver
    assert run["method"] == METHOD and run["load"]["span in order"]
    assert run == probe == sweep


def test_require_gpu_fails_every_kind_of_job_with_one_message_and_no_record(no_driver, small_dataset, tmp_path, capsys):
    found = each_kind(small_dataset, tmp_path, "--require-gpu")
    assert found == {"run": (1, None), "probe": (1, None), "sweep": (1, None)}
    said = capsys.readouterr().err.splitlines()
    assert said == [
        f"{label}: error: {no_driver}, and --require-gpu (config require_gpu) is set"
        for label in ("torch-cuda-seed-1", "probe-torch-cuda", "sweep-cuda")
    ]


def test_an_error_inside_any_kind_of_job_is_recorded_as_failed_alike(monkeypatch, small_dataset, tmp_path):
    # A GPU driver seems present, so each job imports torch; then its measurement raises.
    monkeypatch.setattr(machine, "GPU_DRIVER_PATHS", (str(ROOT),))

    def out_of_memory(self, fw, data):
        raise RuntimeError("CUDA out of memory (test)")

    for kind in KINDS.values():
        monkeypatch.setattr(kind.measurement, "measure", out_of_memory)
    found = each_kind(small_dataset, tmp_path)
    assert {kind: status for kind, (status, _) in found.items()} == {"run": 0, "probe": 0, "sweep": 0}
    run, probe, sweep = (fields for _, fields in found.values())
    assert run["status"] == "failed" and run["reason"] == "RuntimeError: CUDA out of memory (test)"
    assert run == probe == sweep
    # The measurement's own fields say nothing was measured.
    assert read_sweep(tmp_path / "sweep.json")["points"] == []
    assert read_probe(tmp_path / "probe.json")["measurements"] == {}
    assert read_record(tmp_path / "run.json")["quality"] is None
