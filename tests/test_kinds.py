"""Studies are compared only within one study kind and one machine kind (tiny_mlp_bench/kinds.py)."""

from __future__ import annotations

import json
from collections import Counter

from helpers import ROOT
from tiny_mlp_bench import kinds


def write_study(folder, envs: list[dict], kind: str | None = None, gpu_log: bool = False):
    (folder / "runs").mkdir(parents=True)
    for number, env in enumerate(envs):
        (folder / "runs" / f"run-{number}.json").write_text(json.dumps({"environment": env}))
    study = {"first_run_started": "2026-12-05T10:00:00+00:00"} | ({"kind": kind} if kind else {})
    (folder / "provenance.json").write_text(json.dumps({"study": study}))
    if gpu_log:
        (folder / "logs").mkdir()
        (folder / kinds.GPU_STUDY_LOG).write_text("{}")
    return folder


AMD = {"cpu_model": "AMD EPYC", "logical_cpus": 2, "gpu_name": None}
XEON_16 = {"cpu_model": "Intel Xeon", "logical_cpus": 16, "gpu_name": None}


def test_an_archives_machine_kind_is_its_runs_cpu_and_any_gpu_they_name(tmp_path):
    gpu_host = [XEON_16, XEON_16 | {"gpu_name": "NVIDIA H200"}, XEON_16]  # its cpu runs name no GPU
    folder = write_study(tmp_path / "gpu", gpu_host, gpu_log=True)
    assert kinds.archive_machine(folder) == XEON_16 | {"gpu_name": "NVIDIA H200"}
    assert kinds.archive_kind(folder) == ("gpu", ("Intel Xeon", 16, "NVIDIA H200"))
    # A record of another machine among many does not change the archive's kind.
    local = write_study(tmp_path / "local", [AMD, AMD, XEON_16])
    assert kinds.archive_kind(local) == ("default", ("AMD EPYC", 2, None))
    # Where the provenance records the study kind, it is what it says.
    assert kinds.study_kind(write_study(tmp_path / "busy", [AMD], kind="busy")) == "busy"
    # Sealed before it recorded its kind, an archive with a run beside a busy core is a busy-core study.
    unsaid = write_study(tmp_path / "unsaid", [AMD, AMD])
    (unsaid / "runs" / "run-1.json").write_text(json.dumps({"environment": AMD, "identity": {"condition": "busy"}}))
    assert kinds.study_kind(unsaid) == kinds.BUSY_STUDY


def test_a_gpu_hosts_cpu_records_are_of_its_kind_for_cpu_jobs_only():
    kind = XEON_16 | {"gpu_name": "NVIDIA H200"}
    assert kinds.same_machine(XEON_16, kind, "cpu") and not kinds.same_machine(XEON_16, kind, "cuda")
    assert not kinds.same_machine(AMD, kind, "cpu")
    assert kinds.in_words(AMD) == "AMD EPYC, 2 logical CPUs, no GPU"


def test_the_tree_keeps_at_most_three_archives_of_a_kind():
    archives = [path.parent for path in (ROOT / "results" / "archive").glob("*/provenance.json")]
    counted = Counter(kinds.archive_kind(folder) for folder in archives)
    assert archives and max(counted.values()) <= 3, counted
    # Every archive the tree holds records, or shows by its logs, which study kind it is.
    assert {kind for kind, _ in counted} <= {
        kinds.DEFAULT_STUDY,
        kinds.GPU_STUDY,
        kinds.BUSY_STUDY,
        kinds.ERA_STUDY,
        kinds.RELEASES_STUDY,
    }
