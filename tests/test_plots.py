"""The report's charts: written as PNG, the same bytes from the same records, whiskers from the runs' 95%
intervals, and the asker's per-step marks right."""

from __future__ import annotations

import pytest
from matplotlib.container import BarContainer, ErrorbarContainer

from helpers import parts_run, run_script, synthetic_record, synthetic_study, synthetic_sweeps
from tiny_mlp_bench.records import write_record, write_sweep
from tiny_mlp_bench.report import plots
from tiny_mlp_bench.report.inference import Interval
from tiny_mlp_bench.report.model import build_report

PNG = b"\x89PNG\r\n\x1a\n"
# The asker's run: 1000 epochs of 750 training rows in batches of 64, so 12 steps an epoch.
ASKER_PARAMETERS = {"epochs": 1000, "n_train": 750, "batch_size": 64, "learning_rate": 0.001, "hidden_units": 20}


def with_cuda_rungs() -> list[dict]:
    """The synthetic study with torch-cuda seed (1.5 ms/step) and graphed (0.05 ms/step) timed, two repeats each."""
    timed = [r for r in synthetic_study() if r["identity"]["run_id"] != "torch-cuda-seed-1"]
    cuda = [("seed", 1.5), ("graphed", 0.05)]
    return timed + [synthetic_record("torch", "cuda", i, 9.0, variant=v, step_ms=s) for i in (1, 2) for v, s in cuda]


def whisker_ends(bars) -> tuple[float, float] | None:
    """Where a bar's error bar starts and ends along the bar's length; None where it has none."""
    if bars.errorbar is None:
        return None
    (segment,) = bars.errorbar.lines[2][0].get_segments()
    along = 0 if bars.orientation == "horizontal" else 1
    return float(segment[0][along]), float(segment[1][along])


def point_whisker(point) -> tuple[float, float] | None:
    """Where a dot's horizontal error bar starts and ends; None where it has none."""
    if not point.lines[2]:
        return None
    (segment,) = point.lines[2][0].get_segments()
    return float(segment[0][0]), float(segment[1][0])


@pytest.fixture
def drawn(monkeypatch):
    """Every figure the plots save, as its axes' titles, texts, labels, lines and its bars' whiskers (in drawing
    order), before it is written."""
    figures = []
    save = plots.save

    def capture(fig, path):
        axes = fig.get_axes()
        figures.append(
            {
                "titles": [ax.get_title() for ax in axes],
                "texts": [t.get_text() for ax in axes for t in ax.texts],
                "labels": [label for ax in axes for label in ax.get_legend_handles_labels()[1]],
                "lines": {line.get_label(): line for ax in axes for line in ax.get_lines()},
                "xscale": [ax.get_xscale() for ax in axes],
                "ylabels": [ax.get_ylabel() for ax in axes],
                "xlabels": [ax.get_xlabel() for ax in axes],
                "whiskers": [whisker_ends(c) for ax in axes for c in ax.containers if isinstance(c, BarContainer)],
                "points": [
                    point_whisker(c)
                    for ax in axes
                    for c in ax.containers
                    if isinstance(c, ErrorbarContainer) and not c.has_yerr and not ax.patches
                ],
                "bars": sum(len(ax.patches) for ax in axes),
                "runs": [
                    list(line.get_ydata()) for ax in axes for line in ax.get_lines() if line.get_label() == "one run"
                ],
                "supxlabel": fig.get_supxlabel(),
                "legend": [t.get_text() for legend in fig.legends for t in legend.get_texts()],
            }
        )
        save(fig, path)

    monkeypatch.setattr(plots, "save", capture)
    return figures


def test_asker_step_is_the_asker_wall_time_over_the_asker_steps():
    # The asker's run: 1000 epochs of 750 rows in batches of 64, whatever this run's epochs.
    assert plots.asker_step_s("torch-cpu") == pytest.approx(11 / 12000)
    assert plots.asker_step_s("torch-cuda") == pytest.approx(17 / 12000)
    assert plots.asker_step_s("tf_keras-cuda") == pytest.approx(9 / 12000)  # the asker's Keras: Keras 2
    assert plots.asker_step_s("keras-cuda") is None  # Keras 3, today's tf.keras: the asker never ran it
    assert plots.asker_step_s("numpy-cpu") is None  # the asker ran no NumPy loop


def test_whisker_spans_the_interval_and_one_run_has_none():
    three_runs = Interval(2.0, 1.5, 4.0, 3)
    assert plots.whisker(three_runs) == [[0.5], [2.0]]  # below and above the estimate
    assert plots.whisker(three_runs, 1e6) == [[0.5e6], [2.0e6]]
    assert plots.extent(three_runs) == (1.5, 4.0)
    one_run = Interval(2.0, None, None, 1)
    assert plots.whisker(one_run) is None  # no interval: no whisker, not one of zero length
    assert plots.extent(one_run) == (2.0, 2.0)  # the axis still holds its estimate


@pytest.mark.parametrize("records", [synthetic_study, with_cuda_rungs], ids=["cpu only", "cpu and cuda"])
def test_charts_are_png_and_the_same_records_give_the_same_bytes(tmp_path, records):
    written = []
    for name in ("a", "b"):
        report = build_report([*records(), parts_run(1), parts_run(2)], synthetic_sweeps())
        out = tmp_path / name
        plots.plot_seed_times(report.machines, out / "timings.png")
        plots.plot_ladders(report.machines, out / "ladder.png", report.parameters)
        plots.plot_crossover(report.sweep_points, out / "crossover.png", report.parameters)
        plots.plot_step_parts(report.machines, out / "breakdown.png")
        written.append(
            [(out / f).read_bytes() for f in ("timings.png", "ladder.png", "crossover.png", "breakdown.png")]
        )
    for data in written[0]:
        assert data.startswith(PNG) and len(data) > 1000
    assert written[0] == written[1]


def test_ladder_chart_without_cuda_runs_has_no_cuda_panel_but_says_so(tmp_path, drawn):
    report = build_report(synthetic_study())
    assert {ladder.device for ladder in report.machines[0].ladders} == {"cpu"}  # both cuda seed runs skipped
    plots.plot_ladders(report.machines, tmp_path / "ladder.png", report.parameters)
    assert (tmp_path / "ladder.png").read_bytes().startswith(PNG)
    (figure,) = drawn
    assert figure["titles"] == ["cpu"] and figure["xscale"] == ["log"]
    assert figure["supxlabel"].endswith("\nnot measured on any machine here: cuda")
    # Every timed rung is a dot, not a bar on the log axis, labelled with its unit: compiled's runs took 100 and 200.
    assert figure["bars"] == 0
    for value in ("1,000 µs", "250 µs", "141 µs", "2,000 µs", "1,600 µs", "80.0 µs"):
        assert value in figure["texts"]
    # The asker's lines, in a legend beside the panels: 11 s and 9 s over the asker's 1000 x 12 steps.
    assert figure["legend"] == ["asker, torch-cpu: 917 µs", "asker, tf_keras-cpu: 750 µs"]


def test_ladder_whiskers_are_the_runs_95_percent_intervals(tmp_path, drawn):
    report = build_report(synthetic_study())
    plots.plot_ladders(report.machines, tmp_path / "ladder.png")
    (figure,) = drawn
    rungs = [r for ladder in report.machines[0].ladders for r in ladder.rungs]  # all cpu, drawn in this order
    expected = [None if r.step.low is None else (r.step.low * 1e6, r.step.high * 1e6) for r in rungs]
    assert figure["points"] == [None if e is None else pytest.approx(e) for e in expected]
    # compiled's two runs, 0.1 and 0.2 ms a step, give a wide t-interval; the one-run rungs get no whisker.
    compiled = next(r for r in rungs if r.variant == "compiled")
    assert compiled.step.low * 1e6 < 10 and compiled.step.high * 1e6 > 10_000
    assert [r.variant for r, e in zip(rungs, expected, strict=True) if e is None] == [
        "steps_per_execution",
        "reference",
        "fused",
    ]
    assert figure["supxlabel"].startswith("µs per optimiser step, log scale\ngeometric mean, 95% interval over runs")
    # Each run is a grey dot beside its rung's: compiled's two at 100 and 200 µs.
    (grey,) = [line for line in figure["lines"].values() if sorted(line.get_xdata()) == pytest.approx([100, 200])]
    assert grey.get_marker() == "."


def test_ladder_chart_of_several_machines_has_a_row_each(tmp_path, drawn):
    records = [*with_cuda_rungs(), synthetic_record("torch", "cpu", 4, 1.0, host="other-node")]
    for record in records:
        record["parameters"]["epochs"] = 1000
    report = build_report(records)
    plots.plot_ladders(report.machines, tmp_path / "ladder.png")  # no parameters: no asker lines
    (figure,) = drawn
    assert figure["titles"] == ["bench-host: cpu", "bench-host: cuda", "other-node: cpu", "other-node: cuda"]
    assert figure["texts"].count("not measured") == 1 and figure["legend"] == []
    assert {"1,500 µs", "50.0 µs"} <= set(figure["texts"])
    plots.plot_ladders(report.machines, tmp_path / "ladder.png", report.parameters)
    assert "asker, torch-cpu: 917 µs" in drawn[1]["legend"] and "asker, torch-cuda: 1,417 µs" in drawn[1]["legend"]
    assert len(drawn[1]["legend"]) == len(set(drawn[1]["legend"]))  # each line once, whatever the rows


def test_crossover_marks_the_asker_run_per_device(tmp_path, drawn):
    report = build_report(synthetic_study(), synthetic_sweeps())
    plots.plot_crossover(report.sweep_points, tmp_path / "crossover.png", ASKER_PARAMETERS)
    lines = drawn[0]["lines"]
    for device, seconds in (("cpu", 11), ("cuda", 17)):
        star = lines[f"asker's run ({device}), width 20"]
        assert star.get_marker() == "*"
        assert list(star.get_xdata()) == [64] and list(star.get_ydata()) == [pytest.approx(seconds / 12000 * 1e6)]
    # Each point's bar spans its blocks: a sweep is one run, so the range of its blocks, not an interval.
    points = report.sweep_points
    assert (points["low_s"] <= points["step_s"]).all() and (points["step_s"] <= points["high_s"]).all()
    assert "bars its blocks' range" in drawn[0]["ylabels"][0]
    plots.plot_crossover(report.sweep_points, tmp_path / "crossover.png")  # callers without parameters: no stars
    assert not [label for label in drawn[1]["labels"] if label.startswith("asker")]


def test_a_sweep_points_range_is_its_fastest_and_slowest_block():
    from tiny_mlp_bench.report.crossover_map import sweep_frame

    (sweep, *_) = synthetic_sweeps()
    sweep["points"][0] |= {"block_step_s": [3e-4, 1e-4, 2e-4], "step_s": 2e-4}
    del sweep["points"][1]["block_step_s"]  # a record from before blocks were kept: its step alone
    first, second = sweep_frame([sweep]).iloc[:2].itertuples()
    assert (first.low_s, first.step_s, first.high_s) == (1e-4, 2e-4, 3e-4)
    assert second.low_s == second.step_s == second.high_s


def test_seed_chart_shows_each_run_and_names_what_did_not_run(tmp_path, drawn):
    report = build_report(synthetic_study())
    plots.plot_seed_times(report.machines, tmp_path / "timings.png")
    (figure,) = drawn
    assert "per run" in figure["titles"][0] and "step" not in figure["titles"][0]
    assert "per run" in figure["ylabels"][0]
    # Our bars' whiskers are the runs' 95% intervals, in the question's order; the asker's bars have none.
    results = [q.result for q in report.machines[0].question if q.result is not None]
    assert [w for w in figure["whiskers"] if w is not None] == [pytest.approx((r.low, r.high)) for r in results]
    # Only the pairs that completed get a slot (and the asker's bar beside them); the rest are named.
    assert figure["whiskers"].count(None) == 2  # the asker's torch-cpu and tf_keras-cpu
    assert figure["xlabels"][0].endswith(
        "not completed here: torch-cuda (asker: 17 s), tf_keras-cuda (asker: 9 s), keras-cuda"
    )
    # Each run a dot beside its bar: the torch loop's three runs took 7, 6 and 8 s, Keras 2's 4, 3 and 5 s.
    assert figure["runs"][:2] == [[6.0, 7.0, 8.0], [3.0, 4.0, 5.0]]
    assert figure["legend"] == ["asker", "this run (geometric mean, 95% interval over runs)", "one run"]


@pytest.mark.slow
def test_render_report_writes_the_ladder_chart_beside_the_others(tmp_path):
    records = []
    for i, record in enumerate(synthetic_study()):
        records.append(tmp_path / "runs" / f"{i}.json")
        write_record(record, records[-1])
    sweeps = []
    for sweep in synthetic_sweeps():
        sweeps.append(tmp_path / "sweep" / f"{sweep['device']}.json")
        write_sweep(sweep, sweeps[-1])
    out = tmp_path / "out"
    args = ["--report", out / "report.md", "--timings", out / "timings.parquet", "--plot", out / "report/timings.png"]
    args += ["--crossover-plot", out / "report/crossover.png", "--sweeps", *sweeps]
    result = run_script("render_report.py", *args, "--", *records)
    assert result.returncode == 0, result.stderr
    for chart in ("timings.png", "ladder.png", "crossover.png", "breakdown.png"):  # ladder and parts beside --plot
        assert (out / "report" / chart).read_bytes().startswith(PNG)
    report = (out / "report.md").read_text()
    steady = report.index("### Where the time goes: the ladders")
    assert report.index("](report/ladder.png)\n") > steady
    result = run_script("render_report.py", *args, "--ladder-plot", out / "ladders.png", "--", *records)
    assert result.returncode == 0, result.stderr
    assert (out / "ladders.png").read_bytes() == (out / "report" / "ladder.png").read_bytes()
    assert "](ladders.png)" in (out / "report.md").read_text()


def test_the_parts_chart_stacks_each_part_with_its_time_beside_seed_keras_2_and_the_floor(tmp_path, drawn):
    # Each parts run's blocks are 1, 2 and 1 ms a step past the first: a mean of 1.33 ms, the fetch a quarter of it.
    report = build_report([*synthetic_study(), parts_run(1), parts_run(2)])
    plots.plot_step_parts(report.machines, tmp_path / "breakdown.png")
    assert (tmp_path / "breakdown.png").read_bytes().startswith(PNG)
    (figure,) = drawn
    assert figure["titles"] == ["cpu"]
    assert "the DataLoader's fetch (sampler, 64 rows, collate): 333 µs (25%)" in figure["labels"]
    assert "outside the parts: the loop's bookkeeping: 133 µs (10%)" in figure["labels"]
    assert figure["labels"][-1].startswith("the `parts` rung's runs, geometric mean, 95% interval over runs: ")
    # Seed's 1 ms, then the parts wide enough for their number (not the copy's 5%) and their sum, then Keras 2's
    # 2 ms and the floor's 5 µs.
    assert figure["texts"] == [
        *["  1,000 µs", "333", "133", "267", "267", "133", "133", "1,330 µs "],
        *["  2,000 µs", "  5.00 µs"],
    ]
    # Six parts and what lies outside them, stacked, and a bar each for seed, Keras 2 and the floor.
    assert figure["bars"] == 7 + 3


def test_the_parts_chart_says_so_where_no_parts_run_completed(tmp_path, drawn):
    plots.plot_step_parts(build_report(synthetic_study()).machines, tmp_path / "breakdown.png")
    (figure,) = drawn
    assert figure["texts"] == ["no run of the `parts` rung completed"]
