"""The report's charts, drawn from the report model as PNG files without timestamps (same data, same bytes)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker as ticker
import pandas as pd

from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.atomic import atomic_path
from tiny_mlp_bench.catalogue import Role, pair_name
from tiny_mlp_bench.question import ASKER_SECONDS, ASKER_STEPS, ASKERS_KERAS, TORCH
from tiny_mlp_bench.report import claims, sentences
from tiny_mlp_bench.report.cells import approx, n_runs
from tiny_mlp_bench.report.era import EraStudy
from tiny_mlp_bench.report.inference import Interval
from tiny_mlp_bench.report.model import Machine
from tiny_mlp_bench.report.question_table import QUESTION_PAIRS
from tiny_mlp_bench.stacks import RELEASES, TENSORFLOW_OF, TODAY
from tiny_mlp_bench.timing import LOOP_PARTS

FRAMEWORK_COLOURS = {
    **{"torch": "#ff7f0e", "tf_keras": "#8c564b", "keras": "#2ca02c", "keras_jax": "#bcbd22", "keras_torch": "#17becf"},
    **{"numpy": "#1f77b4", "sklearn": "#9467bd", "jax": "#d62728"},
}
DEVICES = catalogue.DEVICES
INTERVAL = "geometric mean, 95% interval over runs"  # what a bar or point and its whiskers are, as the report says


def whisker(interval: Interval, scale: float = 1.0) -> list[list[float]] | None:
    """``interval``'s error bar as matplotlib takes it, [[below], [above]] the estimate, times ``scale``."""
    if interval.low is None or interval.high is None:
        return None
    return [[(interval.estimate - interval.low) * scale], [(interval.high - interval.estimate) * scale]]


def extent(interval: Interval) -> tuple[float, float]:
    """The lowest and highest value ``interval`` reaches (the estimate where unbounded): what an axis must hold."""
    low = interval.estimate if interval.low is None else interval.low
    high = interval.estimate if interval.high is None else interval.high
    return low, high


def asker_step_s(pair: str) -> float | None:
    """The asker's wall time for ``pair`` over the asker's 12,000 steps; None where the asker has none."""
    seconds = ASKER_SECONDS.get(pair)
    return None if seconds is None else seconds / ASKER_STEPS


def save(fig, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)


def spread(x: float, count: int, width: float) -> list[float]:
    """``count`` positions around ``x`` within ``width``, so that runs with one value show as many dots."""
    return [x] if count < 2 else [x - width / 2 + width * i / (count - 1) for i in range(count)]


def plot_seed_times(machines: tuple[Machine, ...], path: Path) -> None:
    """Each question pair's seed time to result per machine: runs as dots, a mean bar with 95% whiskers, the asker's."""
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100, layout="constrained")
    results = [{q.pair: q.result for q in m.question if q.result is not None} for m in machines]
    shown = [pair for pair in QUESTION_PAIRS if any(pair in found for found in results)]
    width = 0.8 / (1 + len(machines))
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    for i, pair in enumerate(shown):
        left = i - 0.4 + width / 2
        if pair in ASKER_SECONDS:  # today's Keras has no asker's time
            ax.bar(left, ASKER_SECONDS[pair], width, color="#bbbbbb", label="asker")
            ax.text(left, ASKER_SECONDS[pair], f"{ASKER_SECONDS[pair]:g} s", ha="center", va="bottom", fontsize=7)
        for j, (machine, found) in enumerate(zip(machines, results, strict=True), 1):
            if pair not in found:
                continue
            result, x = found[pair], left + j * width
            label = "this run" if len(machines) == 1 else machine.label
            bar = {"yerr": whisker(result), "capsize": 3, "color": colours[(j - 1) % 6]}
            ax.bar(x, result.estimate, width, label=f"{label} ({INTERVAL})", **bar)
            seconds = sorted(sentences.seed_view(machine, *pair.rsplit("-", 1)).result_values)
            ax.plot(spread(x, len(seconds), width / 2), seconds, "o", color="black", markersize=3, label="one run")
            top = max([extent(result)[1], *seconds])
            ax.annotate(
                f"{result.estimate:.3g} s", (x, top), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=7
            )
    ax.set_xticks(range(len(shown)), shown, fontsize=8)
    missing = [pair for pair in QUESTION_PAIRS if pair not in shown]
    not_run = ", ".join(f"{p} (asker: {ASKER_SECONDS[p]:g} s)" if p in ASKER_SECONDS else p for p in missing)
    ax.set_xlabel("framework-device pair" + (f"\nnot completed here: {not_run}" if missing else ""))
    ax.set_ylabel("time to result per run (s), fit start to predictions")
    ax.set_title("Time to result of the original loops, per run, beside the asker's")
    if not shown:
        ax.text(0.5, 0.5, "no original loop completed", ha="center", va="center", transform=ax.transAxes)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))  # one legend entry per label, not per bar
    order = sorted(unique, key=lambda label: (label == "one run", label != "asker"))  # as drawn, left to right
    if unique:
        fig.legend([unique[k] for k in order], order, loc="outside lower center", ncols=len(order), fontsize=8)
    save(fig, path)


def plot_releases(found: EraStudy, path: Path) -> None:
    """Keras 2 on each TensorFlow release of the sweep, per step and to a result, each with today's stack beside it
    and the asker's time marked; the torch loop on today's stack as a line where it ran."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), dpi=100, layout="constrained")
    shown = [s for s in found.stacks if s.stack in RELEASES] + [s for s in found.stacks if s.stack == TODAY]
    names = [TENSORFLOW_OF.get(s.stack, "today") for s in shown]
    keras_asker = ASKER_SECONDS[pair_name(ASKERS_KERAS, "cpu")]
    for ax, view, scale, unit, asker in (
        (axes[0], "step", 1e6, "µs", asker_step_s(pair_name(ASKERS_KERAS, "cpu"))),
        (axes[1], "result", 1.0, "s", keras_asker),
    ):
        for x, s in enumerate(shown):
            if found_here := getattr(s, view)[ASKERS_KERAS]:
                colour = FRAMEWORK_COLOURS[ASKERS_KERAS] if s.stack != TODAY else "#555555"
                bar = {"yerr": whisker(found_here, scale), "capsize": 3, "color": colour}
                ax.bar(x, found_here.estimate * scale, 0.7, **bar)
        today = next((s for s in shown if s.stack == TODAY), None)
        if today and (torch := getattr(today, view)[TORCH]):
            ax.axhline(
                torch.estimate * scale, color=FRAMEWORK_COLOURS[TORCH], ls="--", label="the torch loop, today's stack"
            )
        ax.axhline(
            asker * scale,
            color="#999999",
            ls=":",
            label=f"the asker's Keras, {keras_asker:g} s to a result"
            + (f" over {ASKER_STEPS:,} steps" if view == "step" else ""),
        )
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.set_xlabel("TensorFlow release (Keras 2), Python 3.9; today's stack last")
        ax.set_ylabel(f"Keras 2 {claims.ERA_VIEWS[view]} ({unit})")
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(f"Keras 2's `fit` on each release ({INTERVAL})", fontsize=10)
    save(fig, path)


def ladder_panel(ax, machine: Machine, device: str, parameters: dict | None, slots: int) -> None:
    """One device's rungs' steps in µs with 95% whiskers and the asker's lines; ``slots`` rows, equal per panel."""
    ladders = [ladder for ladder in machine.ladders if ladder.device == device]
    rows = [r for ladder in ladders for r in ladder.rungs if r.step is not None]
    pairs = [p for p in ASKER_SECONDS if p.endswith(f"-{device}")] if parameters else []
    for y, r in enumerate(rows):
        colour = FRAMEWORK_COLOURS.get(r.framework, "#7f7f7f")
        runs = [s * 1e6 for s in sorted(r.step_values)]
        ax.plot(runs, spread(y, len(runs), 0.4), ".", color="#888888", markersize=3)
        xerr = whisker(r.step, 1e6)
        ax.errorbar(r.step.estimate * 1e6, y, xerr=xerr, fmt="o", color=colour, capsize=2, elinewidth=0.8)
        # The label goes past the whisker's and the runs' end, so that they never overlap.
        end = max([extent(r.step)[1] * 1e6, *runs])
        label = f"{approx(r.step.estimate * 1e6, 3)} µs"
        ax.text(
            end * 1.15, y, label, va="center", fontsize=7, bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5}
        )
    ax.set_yticks(range(len(rows)), [f"{r.pair} · {r.variant}" for r in rows], fontsize=8)
    if not rows:
        ax.set_yticks([])
        ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes, color="#555555")
    ax.set_ylim(max(slots, 1) - 0.5, -0.5)  # first rung on top
    ax.grid(axis="x", which="major", color="#dddddd", linewidth=0.6)
    for i, pair in enumerate(pairs):
        step_us = asker_step_s(pair) * 1e6
        ys = [y for y, r in enumerate(rows) if r.pair == pair]
        span = (min(ys) - 0.45, max(ys) + 0.45) if ys else ax.get_ylim()
        colour = FRAMEWORK_COLOURS.get(pair.split("-")[0], "#7f7f7f")
        style = ("--", ":")[i % 2]
        ax.vlines(step_us, *span, colors=colour, linestyles=style, label=f"asker, {pair}: {step_us:,.0f} µs")


def plot_ladders(machines: tuple[Machine, ...], path: Path, parameters: dict | None = None) -> None:
    """Each rung's step time with 95% whiskers, log scale: a row per machine, a panel per measured device."""
    every = [*DEVICES, *sorted({ladder.device for m in machines for ladder in m.ladders} - set(DEVICES))]
    measured = {ladder.device for m in machines for ladder in m.ladders if any(r.step for r in ladder.rungs)}
    devices = [d for d in every if d in measured] or every[:1]
    rows = max(1, len(machines))
    most = max(
        # Rows for the rungs drawn (those with a timed step), so that no panel keeps empty rows.
        (
            sum(r.step is not None for ladder in m.ladders if ladder.device == d for r in ladder.rungs)
            for m in machines
            for d in devices
        ),
        default=0,
    )
    fig, axes = plt.subplots(
        rows,
        len(devices),
        figsize=(6.5 * len(devices) + 2.2, rows * max(2.5, 0.32 * most + 1.4) + 0.8),  # the legend's room at right
        dpi=100,
        sharex=True,
        squeeze=False,
        layout="constrained",
    )
    # Every panel shares the x-axis, wide enough for every whisker (every estimate where there is none).
    steps = [r.step for m in machines for ladder in m.ladders for r in ladder.rungs if r.step is not None]
    values = [value for step in steps for value in extent(step)]
    if parameters:
        values += [asker_step_s(p) for p in ASKER_SECONDS if p.split("-")[1] in devices]
    for row, machine in enumerate(machines):
        for col, device in enumerate(devices):
            ax = axes[row][col]
            ladder_panel(ax, machine, device, parameters, most)
            ax.set_title(device if len(machines) == 1 else f"{machine.label}: {device}", fontsize=10)
    if not machines:
        for ax in axes[0]:
            ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
    for ax in axes[-1]:
        ax.set_xscale("log")
        if values:
            ax.set_xlim(min(values) * 1e6 / 2, max(values) * 1e6 * 6)
    unmeasured = [d for d in every if d not in devices]
    note = f"\nnot measured on any machine here: {', '.join(unmeasured)}" if unmeasured else ""
    fig.supxlabel(f"µs per optimiser step, log scale\n{INTERVAL}; grey dots: each run{note}", fontsize=9)
    lines = {label: handle for ax in axes.flat for handle, label in zip(*ax.get_legend_handles_labels(), strict=True)}
    if lines:
        fig.legend(
            lines.values(), lines.keys(), loc="outside right upper", fontsize=7, title="the asker", title_fontsize=7
        )
    fig.suptitle("Time per optimiser step of every rung", fontsize=11)
    save(fig, path)


def plot_crossover(points: pd.DataFrame, path: Path, parameters: dict | None = None) -> None:
    """Time per optimiser step against batch size, one colour per width, solid cpu and dashed cuda."""
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100, layout="constrained")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    widths = sorted(points["hidden_units"].unique())
    for i, width in enumerate(widths):
        for device, style in (("cpu", "-o"), ("cuda", "--s")):
            rows = points[(points["hidden_units"] == width) & (points["device"] == device)]
            if not rows.empty:
                rows = rows.sort_values("batch_size")
                ax.errorbar(
                    rows["batch_size"],
                    rows["step_s"] * 1e6,
                    yerr=[(rows["step_s"] - rows["low_s"]) * 1e6, (rows["high_s"] - rows["step_s"]) * 1e6],
                    fmt=style,
                    color=colours[i % len(colours)],
                    capsize=2,
                    elinewidth=0.8,
                    label=f"{device}, width {width}",
                )
    if parameters and not points.empty:
        for device, face in (("cpu", "black"), ("cuda", "white")):
            ax.plot(
                parameters["batch_size"],
                asker_step_s(pair_name(TORCH, device)) * 1e6,
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
        # Plain numbers on both log axes ("600", not "6e2" in mathtext): the measured batch sizes, and µs.
        batches = sorted({*points["batch_size"], *([parameters["batch_size"]] if parameters else [])})
        ax.set_xticks(batches, [f"{b:,}" for b in batches])
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        ax.yaxis.set_minor_formatter(ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
        fig.legend(loc="outside right upper", fontsize=8)  # beside the lines, never over them
    ax.set_xlabel("batch size")
    ax.set_ylabel("µs per training step: median block,\nbars its blocks' range")
    # The title says what is drawn: a device without a sweep point gets no line, and is named as missing.
    drawn = [
        f"{d} ({'solid' if d == 'cpu' else 'dashed'})" for d in ("cpu", "cuda") if d in set(points.get("device", ()))
    ]
    missing = [d for d in ("cpu", "cuda") if d not in set(points.get("device", ()))]
    title = f"Crossover map: torch sync_free per step on {' and '.join(drawn) or 'no device'}"
    ax.set_title(title + (f"; no {' or '.join(missing)} sweep here" if missing else ""), fontsize=10)
    save(fig, path)


# The parts' colours, in LOOP_PARTS' order; what lies outside them is grey.
PART_COLOURS = ("#4e79a7", "#a0cbe8", "#76b7b2", "#59a14f", "#e15759", "#b07aa1")
OUTSIDE_COLOUR = "#d3d3d3"
PARTS_ROW = "torch `parts`: the same loop,\nthe clock read between its parts"


def parts_rows(machine: Machine, device: str) -> list[tuple[str, Interval | None, str]]:
    """The chart's rows, top first: the uninstrumented torch step, the `parts` rung (no interval: it is stacked),
    Keras 2's step and the floor's, each with its colour; rungs with no steady step are left out."""
    floor = registry.sole_rung(Role.FLOOR)
    views = [
        ("torch `seed`,\nas the asker wrote it", sentences.seed_view(machine, TORCH, device), TORCH),
        (PARTS_ROW, None, TORCH),
        (
            f"{catalogue.framework(ASKERS_KERAS).label} `seed`",
            sentences.seed_view(machine, ASKERS_KERAS, device),
            ASKERS_KERAS,
        ),
        (
            f"the floor: {floor.framework} `{floor.name}`,\none numba loop",
            sentences.floor_view(machine, device),
            floor.framework,
        ),
    ]
    return [
        (label, view.step if view else None, FRAMEWORK_COLOURS.get(framework, "#7f7f7f"))
        for label, view, framework in views
        if label == PARTS_ROW or (view is not None and view.step is not None)
    ]


def parts_panel(ax, machine: Machine, device: str) -> None:
    """One device's `parts` rung as a stacked bar of its parts' means a step, between the uninstrumented torch step
    above and Keras 2's step and the floor below, each with its µs."""
    parts = machine.loop_parts[device]
    rows = parts_rows(machine, device)
    for y, (label, step, colour) in enumerate(rows):
        if label != PARTS_ROW:
            ax.barh(y, step.estimate * 1e6, 0.5, xerr=whisker(step, 1e6), capsize=3, color=colour)
            ax.text(extent(step)[1] * 1e6, y, f"  {approx(step.estimate * 1e6, 3)} µs", va="center", fontsize=7)
            continue
        segments = [(LOOP_PARTS[p], parts.parts_s[p], c) for p, c in zip(LOOP_PARTS, PART_COLOURS, strict=True)]
        segments.append(("outside the parts: the loop's bookkeeping", parts.outside_s, OUTSIDE_COLOUR))
        left = 0.0
        for words, seconds, part_colour in segments:
            us = seconds * 1e6
            share = f"{parts.share(seconds):.0%}".replace("-", "−")
            ax.barh(
                y,
                us,
                0.7,
                left=left,
                color=part_colour,
                edgecolor="white",
                linewidth=0.5,
                label=f"{words}: {approx(us, 3)} µs ({share})",
            )
            if parts.share(seconds) >= 0.07:  # room for its number inside the segment
                ax.text(left + us / 2, y + 0.15, approx(us, 3), ha="center", va="center", fontsize=7)
            left += max(us, 0.0)
        ax.text(left, y + 0.42, f"{approx(parts.step_s * 1e6, 3)} µs ", ha="right", va="top", fontsize=7)
        # The rung's runs as the other bars show theirs: what to compare with them, as the block mean is not.
        rung = sentences.view_of(machine, TORCH, registry.rung_with_role(TORCH, Role.STEP_PARTS).name, device)
        if rung is not None and rung.step is not None:
            ax.errorbar(
                rung.step.estimate * 1e6,
                y - 0.18,
                xerr=whisker(rung.step, 1e6),
                fmt="D",
                color="black",
                markersize=4,
                capsize=3,
                label=f"the `parts` rung's runs, {INTERVAL}: {approx(rung.step.estimate * 1e6, 3)} µs",
            )
    ax.set_yticks(range(len(rows)), [label for label, _, _ in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the asker's loop on top
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.margins(x=0.15)  # room for the last number
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18),
        ncols=2,
        fontsize=7,
        frameon=False,
        title=f"the `parts` rung's step, mean of {parts.blocks} blocks over {n_runs(parts.runs)}",
        title_fontsize=7,
    )


def plot_step_parts(machines: tuple[Machine, ...], path: Path) -> None:
    """Where the original torch step goes: a panel per machine and device whose `parts` rung completed."""
    panels = [(m, device) for m in machines for device in m.loop_parts]
    fig, axes = plt.subplots(
        max(1, len(panels)), 1, figsize=(9, 4.2 * max(1, len(panels))), dpi=100, squeeze=False, layout="constrained"
    )
    for ax, (machine, device) in zip(axes[:, 0], panels, strict=False):
        parts_panel(ax, machine, device)
        title = device if len(machines) == 1 else f"{machine.label}: {device}"
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(f"µs per optimiser step; other bars: {INTERVAL}", fontsize=8)
    if not panels:
        axes[0][0].set_axis_off()
        axes[0][0].text(0.5, 0.5, "no run of the `parts` rung completed", ha="center", va="center")
    fig.suptitle("Where the original torch step goes", fontsize=11)
    save(fig, path)
