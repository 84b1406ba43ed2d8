"""The report's charts, drawn from the report model as PNG files without timestamps (same data, same bytes).

plot_seed_times: whole-run wall time of the question's pairs beside the asker's; plot_ladders: every rung's time
per optimiser step, cpu and cuda side by side; plot_crossover: the sweep's time per step over batch size and width.
The first two show what the Markdown report prints: each value's geometric mean over runs with its 95% interval
(inference.Interval) as whiskers; a value from one run has no interval, so no whisker. The asker's per-step times
are the asker's wall times spread over the asker's steps (asker_step_s).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.atomic import atomic_path
from tiny_mlp_bench.catalogue import pair_name
from tiny_mlp_bench.question import ASKER_SECONDS, ASKER_STEPS, TORCH
from tiny_mlp_bench.report.inference import Interval
from tiny_mlp_bench.report.ladder import Ladder
from tiny_mlp_bench.report.model import Machine
from tiny_mlp_bench.report.question_table import QUESTION_PAIRS

# A colour per framework, for its rungs and the asker's lines.
FRAMEWORK_COLOURS = {
    **{"torch": "#ff7f0e", "tf_keras": "#8c564b", "keras": "#2ca02c", "keras_jax": "#bcbd22", "keras_torch": "#17becf"},
    **{"numpy": "#1f77b4", "sklearn": "#9467bd", "jax": "#d62728"},
}
DEVICES = catalogue.DEVICES
INTERVAL = "geometric mean, 95% interval over runs"  # what a bar or point and its whiskers are, as the report says


def whisker(interval: Interval, scale: float = 1.0) -> list[list[float]] | None:
    """``interval``'s error bar as matplotlib takes it, [[below], [above]] the estimate, times ``scale``.

    None where a side is unbounded (one run): no whisker, rather than one of zero length that would read as
    runs that agree exactly.
    """
    if interval.low is None or interval.high is None:
        return None
    return [[(interval.estimate - interval.low) * scale], [(interval.high - interval.estimate) * scale]]


def extent(interval: Interval) -> tuple[float, float]:
    """The lowest and highest value ``interval`` reaches, the estimate on a side without a bound: what a chart's
    axis must hold."""
    low = interval.estimate if interval.low is None else interval.low
    high = interval.estimate if interval.high is None else interval.high
    return low, high


def asker_step_s(pair: str) -> float | None:
    """The asker's wall time for ``pair`` over the asker's 12,000 steps; None where the asker has none.

    An upper bound on the asker's step: the wall time also holds model build, device set-up and predictions.
    """
    seconds = ASKER_SECONDS.get(pair)
    return None if seconds is None else seconds / ASKER_STEPS


def save(fig, path: Path) -> None:
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)


def plot_seed_times(machines: tuple[Machine, ...], path: Path) -> None:
    """Wall time per run of each question pair (seed variant) per machine, the geometric mean over its runs with
    the 95% interval as whiskers (none with one run), the asker's beside: whole runs, from the start of the fit to
    the predictions, not steps."""
    fig, ax = plt.subplots(figsize=(9, 4), dpi=100)
    pairs = list(QUESTION_PAIRS)
    width = 0.8 / (1 + len(machines))
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    for i, pair in enumerate(pairs):
        left = i - 0.4 + width / 2
        if pair in ASKER_SECONDS:  # today's Keras has no asker's time
            ax.bar(left, ASKER_SECONDS[pair], width, color="#bbbbbb", label="asker")
        for j, machine in enumerate(machines, 1):
            label = "this run" if len(machines) == 1 else machine.label
            results = {q.pair: q.result for q in machine.question if q.result is not None}
            if pair in results:
                result = results[pair]
                ax.bar(
                    left + j * width,
                    result.estimate,
                    width,
                    yerr=whisker(result),
                    capsize=3,
                    color=colours[(j - 1) % 6],
                    label=f"{label} ({INTERVAL})",
                )
            else:
                ax.text(left + j * width, 0.3, "no timed\nrun", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(pairs)), pairs, fontsize=8)
    ax.set_xlabel("framework-device pair")
    ax.set_ylabel("wall time per run (s), fit start to predictions")
    ax.set_title("Seed experiment: wall time per run, per framework-device pair")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))  # one legend entry per label, not per bar
    ax.legend(unique.values(), unique.keys())
    save(fig, path)


def ladder_panel(ax, ladders: list[Ladder], device: str, parameters: dict | None, slots: int) -> None:
    """One device's timed rungs as horizontal bars, grouped by pair, top to bottom, with the asker's lines: each
    bar the geometric mean of its runs' steps, labelled in µs, with the 95% interval as whiskers (none with one
    run). ``slots`` rows of room, so that every panel's bars are as thick."""
    rows = [r for ladder in ladders for r in ladder.rungs if r.step is not None]
    pairs = [p for p in ASKER_SECONDS if p.endswith(f"-{device}")] if parameters else []
    for y, r in enumerate(rows):
        colour = FRAMEWORK_COLOURS.get(r.framework, "#7f7f7f")
        xerr = whisker(r.step, 1e6)
        ax.barh(y, r.step.estimate * 1e6, 0.7, xerr=xerr, capsize=2, color=colour, error_kw={"linewidth": 0.8})
        # The label goes past the whisker's end, so that the two never overlap.
        ax.text(extent(r.step)[1] * 1e6 * 1.15, y, f"{r.step.estimate * 1e6:,.0f}", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [f"{r.pair} · {r.variant}" for r in rows], fontsize=8)
    if not rows:
        ax.set_yticks([])
        ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes, color="#555555")
    ax.set_ylim(max(slots, 1) - 0.5, -0.5)  # first rung on top
    for i, pair in enumerate(pairs):
        step_us = asker_step_s(pair) * 1e6
        ys = [y for y, r in enumerate(rows) if r.pair == pair]
        span = (min(ys) - 0.45, max(ys) + 0.45) if ys else ax.get_ylim()
        colour = FRAMEWORK_COLOURS.get(pair.split("-")[0], "#7f7f7f")
        style = ("--", ":")[i % 2]
        ax.vlines(step_us, *span, colors=colour, linestyles=style, label=f"asker, {pair}: {step_us:,.0f} µs")
    if pairs:
        ax.legend(fontsize=7, loc="best")


def plot_ladders(machines: tuple[Machine, ...], path: Path, parameters: dict | None = None) -> None:
    """Each rung's time per optimiser step, the geometric mean over its runs with the 95% interval as whiskers
    (none with one run), log scale: a row of panels per machine, one panel per device, rungs grouped by pair in
    ladder order; rungs without a timed run are left out.

    With ``parameters`` (Report.parameters), each of the asker's pairs gets a line at the asker's per-step time
    (asker_step_s), across its pair's rungs, or the whole panel where the pair has none.
    """
    devices = [*DEVICES, *sorted({ladder.device for m in machines for ladder in m.ladders} - set(DEVICES))]
    rows = max(1, len(machines))
    most = max(
        (sum(len(ladder.rungs) for ladder in m.ladders if ladder.device == d) for m in machines for d in devices),
        default=0,
    )
    fig, axes = plt.subplots(
        rows,
        len(devices),
        figsize=(5.5 * len(devices), rows * max(2.5, 0.32 * most + 1.4)),
        dpi=100,
        sharex=True,
        squeeze=False,
    )
    # Every panel shares the x-axis, wide enough for every whisker (every estimate where there is none).
    steps = [r.step for m in machines for ladder in m.ladders for r in ladder.rungs if r.step is not None]
    values = [value for step in steps for value in extent(step)]
    if parameters:
        values += [asker_step_s(p) for p in ASKER_SECONDS if p.split("-")[1] in devices]
    for row, machine in enumerate(machines):
        for col, device in enumerate(devices):
            ax = axes[row][col]
            found = [ladder for ladder in machine.ladders if ladder.device == device]
            ladder_panel(ax, found, device, parameters, most)
            ax.set_title(device if len(machines) == 1 else f"{machine.label}: {device}", fontsize=10)
    if not machines:
        for ax in axes[0]:
            ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
    for ax in axes[-1]:
        ax.set_xscale("log")
        if values:
            ax.set_xlim(min(values) * 1e6 / 2, max(values) * 1e6 * 4)
        ax.set_xlabel(f"µs per optimiser step ({INTERVAL}), log scale")
    fig.suptitle("Variant ladder: time per optimiser step of every rung, cpu and cuda side by side", fontsize=11)
    save(fig, path)


def plot_crossover(points: pd.DataFrame, path: Path, parameters: dict | None = None) -> None:
    """Time per optimiser step against batch size, one colour per width, solid cpu and dashed cuda.

    ``points`` is the report's sweep_points: device, batch_size, hidden_units, step_s. With ``parameters``
    (Report.parameters), stars mark the asker's run: at its batch size, the asker's per-step time on each device
    (asker_step_s of torch-cpu and torch-cuda), at its width (given in the legend).
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
    if parameters and not points.empty:
        for device, face in (("cpu", "black"), ("cuda", "white")):
            ax.plot(
                parameters["batch_size"],
                asker_step_s(pair_name(TORCH, device)) * 1e3,
                "*",
                markersize=14,
                markerfacecolor=face,
                markeredgecolor="black",
                linestyle="none",
                label=f"asker's run ({device}), width {parameters['hidden_units']}",
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
