"""The table of what the runs of one machine ran on and alongside: hardware, software, container,
job and commit, and what else the machine was doing, as ranges over its runs.
"""

from __future__ import annotations

import pandas as pd

from tiny_mlp_bench.report.cells import num, span, table


def describe_container(container: tuple | None) -> str:
    """One cell: engine, image and short image ID, or that the run was on the host."""
    if container is None:
        return "none (host)"
    engine, image, image_id = container
    short = (image_id or "").removeprefix("sha256:")[:12]
    return " ".join(filter(None, [engine, image or "(image not named)", short and f"({short})"]))


def load_rows(load: dict[str, tuple[float, float]]) -> list[list[str]]:
    """What else the machine was doing, as ranges over its runs."""

    def at_start_and_end(reading: str, digits: int) -> str:
        start, end = load[f"{reading}_before"], load[f"{reading}_after"]
        if pd.isna(start[0]) and pd.isna(end[0]):
            return "not recorded"
        return f"{span(*start, digits)} at start, {span(*end, digits)} at end"

    host, gpu = load["peak_host_memory_mb"], load["peak_gpu_memory_mb"]
    memory = "not recorded" if pd.isna(host[1]) else f"host {num(host[1], 0)}, GPU {num(gpu[1], 0)}"
    return [
        ["load average (1 min)", at_start_and_end("load_1min", 2)],
        ["CPU clock (MHz)", at_start_and_end("cpu_mhz", 0)],
        ["peak memory of a run (MB)", memory],
    ]


def environment_table(facts: dict[str, tuple], load: dict[str, tuple[float, float]]) -> str:
    def values(fact: str, show=str) -> str:
        return ", ".join(sorted({show(value) for value in facts[fact]}))

    rows = [
        ["CPU", values("cpu", lambda c: f"{c[0]} ({c[1]} logical CPUs)")],
        ["GPU", values("gpu", lambda g: g or "none")],
        ["Python", values("python")],
        ["packages", values("packages", " ".join)],
        ["CUDA (framework build; driver)", values("cuda", " ".join) or "none"],
        ["framework threads", values("threads", lambda t: f"{t[0]}={t[1]}")],
        ["thread variables", values("thread_env", lambda env: " ".join(f"{k}={v}" for k, v in env) or "none")],
        ["container", values("container", describe_container)],
        ["Slurm job", values("slurm_job_id", lambda j: str(j or "none"))],
        ["git commit", values("git_commit", lambda c: c or "unknown")],
        ["dataset sha256", values("dataset_sha256")],
        *load_rows(load),
    ]
    return table(["", ""], rows, "ll")
