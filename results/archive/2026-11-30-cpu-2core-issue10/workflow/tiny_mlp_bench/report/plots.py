"""The report's two charts, drawn from the report model as PNG files without timestamps (same data, same bytes)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from tiny_mlp_bench.atomic import atomic_path
from tiny_mlp_bench.report.model import ASKER_SECONDS, Machine


def save(fig, path: Path) -> None:
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)


def plot_seed_times(machines: tuple[Machine, ...], path: Path) -> None:
    """Median wall time per question pair (seed variant) per machine, min-max whiskers, the asker's beside."""
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    pairs = list(ASKER_SECONDS)
    width = 0.8 / (1 + len(machines))
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    for i, pair in enumerate(pairs):
        left = i - 0.4 + width / 2
        ax.bar(left, ASKER_SECONDS[pair], width, color="#bbbbbb", label="asker")
        for j, machine in enumerate(machines, 1):
            label = "this run" if len(machines) == 1 else machine.label
            timed = {q.pair: q for q in machine.question if q.timed}
            if pair in timed:
                q = timed[pair]
                err = [[q.median_s - q.min_s], [q.max_s - q.median_s]]
                ax.bar(
                    left + j * width,
                    q.median_s,
                    width,
                    yerr=err,
                    capsize=3,
                    color=colours[(j - 1) % 6],
                    label=f"{label} (median, min–max)",
                )
            else:
                ax.text(left + j * width, 0.3, "no timed\nrun", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(pairs)), pairs)
    ax.set_xlabel("framework-device pair")
    ax.set_ylabel("seconds, fit start to predictions")
    ax.set_title("Seed experiment: wall time per framework-device pair")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))  # one legend entry per label, not per bar
    ax.legend(unique.values(), unique.keys())
    save(fig, path)


def plot_crossover(points: pd.DataFrame, path: Path) -> None:
    """Time per optimiser step against batch size, one colour per width, solid cpu and dashed cuda.

    ``points`` is the report's sweep_points: device, batch_size, hidden_units, step_s.
    """
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    widths = sorted(points["hidden_units"].unique())
    for i, width in enumerate(widths):
        for device, style in (("cpu", "-o"), ("cuda", "--s")):
            rows = points[(points["hidden_units"] == width) & (points["device"] == device)]
            if not rows.empty:
                rows = rows.sort_values("batch_size")
                ax.plot(
                    rows["batch_size"],
                    rows["step_s"] * 1e3,
                    style,
                    color=colours[i % len(colours)],
                    label=f"{device}, width {width}",
                )
    if points.empty:
        ax.text(0.5, 0.5, "no sweep points measured", ha="center", va="center", transform=ax.transAxes)
    else:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    ax.set_xlabel("batch size")
    ax.set_ylabel("ms per training step (median block)")
    ax.set_title("Crossover map: torch sync_free, cpu (solid) vs cuda (dashed)")
    save(fig, path)
