"""What makes two studies comparable, each defined once: the machine kind they ran on, and the study kind.
Standard library only: the GPU study's command reads it on a node's bare Python."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from tiny_mlp_bench import machine
from tiny_mlp_bench.stacks import RELEASES, TODAY

# The study kinds: the default study (`make run`, or any local config), the GPU study (scripts/gpu_study.py), the
# busy-core study (`make busy`: runs beside one busy core, whose claims never pool with an idle study's), the era
# study (`make era`: the question's loops on several software stacks, stacks.py), the release sweep (`make era-sweep`:
# Keras 2 on one TensorFlow release after another, stacks.RELEASES, and the cause rungs on today's stack).
DEFAULT_STUDY, GPU_STUDY, BUSY_STUDY, ERA_STUDY, RELEASES_STUDY = "default", "gpu", "busy", "era", "releases"
GPU_STUDY_LOG = "logs/gpu_study.json"  # what the GPU study leaves in its archive, and no other study does
KIND_FIELDS = ("cpu_model", "logical_cpus", "gpu_name")  # a machine kind, as a record's environment names it


def this_machine(gpu: str | None) -> dict:
    """This machine's kind."""
    return {"cpu_model": machine.cpu_model(), "logical_cpus": os.cpu_count(), "gpu_name": gpu}


def same_machine(env: dict, kind: dict, device: str) -> bool:
    """Whether a record's environment is of the machine ``kind``, for a job on ``device``: the same CPU model and
    count, and for a cuda job the same GPU (a GPU host's cpu jobs name no GPU yet belong to its kind)."""
    same_cpu = (env.get("cpu_model"), env.get("logical_cpus")) == (kind["cpu_model"], kind["logical_cpus"])
    return same_cpu and (device == "cpu" or env.get("gpu_name") == kind["gpu_name"])


def cpu_name(model: str) -> str:
    """A CPU model name as prose writes it: without trademark marks, which would nest parentheses in a line's own."""
    return model.replace("(R)", "").replace("(TM)", "")


def in_words(kind: dict) -> str:
    return f"{kind['cpu_model']}, {kind['logical_cpus']} logical CPUs, {kind['gpu_name'] or 'no GPU'}"


def archive_records(folder: Path) -> list[dict]:
    """The run records of an archive, as they are on disk (a kind is read from fields every version has)."""
    return [json.loads(path.read_text()) for path in sorted((folder / "runs").glob("*.json"))]


def archive_machine(folder: Path) -> dict:
    """An archive's machine kind: its run records' most common CPU model and count, and the GPU any record names."""
    return machine_of(archive_records(folder))


def machine_of(records: list[dict]) -> dict:
    """The machine kind of a study's run records."""
    envs = [record.get("environment") or {} for record in records]
    cpus = Counter((env.get("cpu_model"), env.get("logical_cpus")) for env in envs)
    (cpu_model, logical_cpus), _ = cpus.most_common(1)[0] if cpus else ((None, None), 0)
    gpus = sorted({env["gpu_name"] for env in envs if env.get("gpu_name")})
    return {"cpu_model": cpu_model, "logical_cpus": logical_cpus, "gpu_name": gpus[0] if gpus else None}


def study_kind(folder: Path) -> str:
    """An archive's study kind: as its provenance records it, or, sealed before it did, by what it holds."""
    provenance = folder / "provenance.json"
    recorded = json.loads(provenance.read_text())["study"].get("kind") if provenance.is_file() else None
    if recorded:
        return recorded
    if (folder / GPU_STUDY_LOG).is_file():
        return GPU_STUDY
    identities = [record.get("identity") or {} for record in archive_records(folder)]
    stacks = {identity.get("stack", TODAY) for identity in identities}
    if stacks & set(RELEASES):
        return RELEASES_STUDY
    if stacks - {TODAY}:
        return ERA_STUDY
    return BUSY_STUDY if any(identity.get("condition") == "busy" for identity in identities) else DEFAULT_STUDY


def archive_kind(folder: Path, records: list[dict] | None = None) -> tuple[str, tuple]:
    """What an archive is compared by: its study kind and its machine kind (from ``records``, its run records
    where the caller has read them already)."""
    kind = machine_of(archive_records(folder) if records is None else records)
    return study_kind(folder), tuple(kind[field] for field in KIND_FIELDS)
