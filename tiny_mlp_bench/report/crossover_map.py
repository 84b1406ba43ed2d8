"""The crossover map: where, per hidden width, cuda's per-step time first drops below cpu's, block for block."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import catalogue


@dataclass(frozen=True)
class Crossover:
    """Where, at one hidden width, cuda's per-step time first drops below cpu's. A point is a win only where every
    cuda block beat every cpu block: a point's blocks are its only repeats, and where their ranges overlap the two
    medians do not order the devices."""

    hidden_units: int
    batch_size: int | None  # smallest batch where cuda wins; None if it never does in the grid
    largest_batch: int
    overlapping: tuple[int, ...] = ()  # batch sizes, below batch_size, where the two devices' block ranges overlap


@dataclass(frozen=True)
class Sweep:
    """Whether a device's sweep measured, and why not."""

    device: str
    status: str
    reason: str | None


def sweep_frame(sweeps: list[dict]) -> pd.DataFrame:
    """A row per sweep point: device, batch_size, hidden_units, step_s (blocks' median), low_s, high_s (block range)."""
    rows = [
        {
            "device": s["device"],
            **{k: p[k] for k in ("batch_size", "hidden_units", "step_s")},
            "low_s": min(p.get("block_step_s") or [p["step_s"]]),
            "high_s": max(p.get("block_step_s") or [p["step_s"]]),
        }
        for s in sweeps
        if s["status"] == "ok"
        for p in s["points"]
    ]
    return pd.DataFrame(rows, columns=["device", "batch_size", "hidden_units", "step_s", "low_s", "high_s"])


def sweep_table(points: pd.DataFrame) -> pd.DataFrame:
    """Per width and batch size, each device's seconds per step and cpu over cuda."""
    wide = points.pivot_table(index=["hidden_units", "batch_size"], columns="device", values="step_s")
    devices = [d for d in catalogue.DEVICES if d in wide.columns]
    table = wide[devices].rename(columns={d: f"{d}_step_s" for d in devices}).reset_index()
    table.columns.name = None
    table["cpu_over_cuda"] = wide["cpu"].to_numpy() / wide["cuda"].to_numpy() if len(devices) == 2 else float("nan")
    return table


def crossovers(points: pd.DataFrame) -> tuple[Crossover, ...]:
    """For each width measured on both devices, the smallest batch size at which cuda's slowest block beat cpu's
    fastest, and the smaller batches where their ranges overlap."""
    wide = points.pivot_table(index=["hidden_units", "batch_size"], columns="device", values=["low_s", "high_s"])
    if not {"cpu", "cuda"} <= set(wide.columns.get_level_values("device")):
        return ()
    found = []
    for width, rows in wide.dropna().groupby(level="hidden_units"):
        batches = [int(b) for b in rows.index.get_level_values("batch_size")]
        cuda_wins = rows[("high_s", "cuda")] < rows[("low_s", "cpu")]
        cpu_wins = rows[("high_s", "cpu")] < rows[("low_s", "cuda")]
        wins = [b for b, won in zip(batches, cuda_wins, strict=True) if won]
        first = min(wins) if wins else None
        overlapping = tuple(
            b
            for b, one, other in zip(batches, cuda_wins, cpu_wins, strict=True)
            if not (one or other) and (first is None or b < first)
        )
        found.append(Crossover(int(width), first, max(batches), overlapping))
    return tuple(found)
