"""Where and from what code a study's records were made, as the records themselves say."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tiny_mlp_bench.archive.layout import read_json, record_files
from tiny_mlp_bench.kinds import study_kind


def study_facts(folder: Path) -> dict:
    commits, modified, hosts, images, started = Counter(), [], set(), set(), []
    for paths in record_files(folder).values():
        for rel in paths:
            record = read_json(folder / rel)
            env = record.get("environment", {})
            commit = env.get("git_commit") or "unknown"
            commits[commit] += 1
            if commit.endswith("-dirty"):
                modified.append(rel)
            machine = f"{env.get('host')} ({env.get('cpu_model')}, {env.get('logical_cpus')} logical CPUs"
            hosts.add(machine + (f", {env['gpu_name']})" if env.get("gpu_name") else ")"))
            container = env.get("container")
            if isinstance(container, dict) and container.get("engine"):
                images.add((container["engine"], container.get("image"), container.get("image_id")))
            elif container:  # schema 1 named the container in one string
                images.add((str(container), None, None))
            if when := record.get("identity", {}).get("started_at"):
                started.append(when)
    return {
        "kind": study_kind(folder),
        "commits": dict(sorted(commits.items())),
        "records_from_modified_tree": modified,
        "machines": sorted(hosts),
        "containers": [dict(zip(("engine", "image", "image_id"), i, strict=True)) for i in sorted(images, key=str)],
        "first_run_started": min(started, default=None),
        "last_run_started": max(started, default=None),
    }


def study_commit(facts: dict) -> str | None:
    """The commit most of the records were made at, without its -dirty mark."""
    known = Counter()
    for commit, count in facts["commits"].items():
        if commit != "unknown":
            known[commit.removesuffix("-dirty")] += count
    return known.most_common(1)[0][0] if known else None
