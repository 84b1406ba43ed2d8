"""The report: its model's numbers tested directly, its wording pinned by one golden file, its bytes
identical on reruns, and bad records refused before anything is written."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import random
import re
import types

import numpy as np
import pandas as pd
import pytest

from helpers import (
    PARTS_SHARES,
    ROOT,
    TEST_DATA,
    parts_run,
    run_script,
    step_parts_fields,
    synthetic_probes,
    synthetic_record,
    synthetic_study,
    synthetic_sweeps,
    table_rows,
)
from tiny_mlp_bench.records import (
    SWEEP_SCHEMA,
    RecordError,
    read_probe,
    read_record,
    validate_probe,
    validate_record,
    write_record,
    write_sweep,
)
from tiny_mlp_bench.report import sentences
from tiny_mlp_bench.report.ladder import break_even_epochs
from tiny_mlp_bench.report.markdown import render_markdown
from tiny_mlp_bench.report.model import build_report
from tiny_mlp_bench.report.runs import STEP_QUANTILE
from tiny_mlp_bench.report.step_parts import step_parts
from tiny_mlp_bench.timing import PHASES

GOLDEN = TEST_DATA / "golden_report.md"


def only_machine(records, sweeps=()):
    report = build_report(records, sweeps)
    assert len(report.machines) == 1
    return report.machines[0]


def render(records, sweeps=(), probes=()) -> str:
    return render_markdown(build_report(records, sweeps, probes))


def test_synthetic_records_are_valid():
    for record in synthetic_study():
        validate_record(record)
    for sweep in synthetic_sweeps():
        validate_record(sweep, schema_name=SWEEP_SCHEMA)


def test_summary_medians_spread_and_counts():
    summary = only_machine(synthetic_study()).summary
    seed = summary[summary["variant"] == "seed"].set_index("pair")
    torch, keras = seed.loc["torch-cpu"], seed.loc["keras-cpu"]
    assert (torch.median_s, torch.min_s, torch.max_s, torch.runs, torch.converged) == (7.0, 6.0, 8.0, 3, 2)
    assert (keras.median_s, keras.min_s, keras.max_s, keras.runs, keras.converged) == (4.0, 3.0, 5.0, 3, 3)
    assert torch.step_s == pytest.approx(1e-3)  # median later block (12 ms) / 12 steps
    # What a user waits per step is the mean of the later blocks (12, 24 and 12 ms over 36 steps), and the
    # first block's excess is over its steps at that pace; no window, so no canary to mark slow blocks.
    assert torch.step_mean_s == pytest.approx(0.048 / 36)
    assert torch.first_block_excess_s == pytest.approx(0.5 - 12 * 0.048 / 36)
    assert pd.isna(torch.slow_share)
    phases = [torch[f"{phase}_s"] for phase in PHASES if phase not in ("capture", "fit_end")]
    assert phases == pytest.approx([1.5, 0.25, 0.05, 0.05, 0.1, 0.05, 0.548, 0.004])
    assert pd.isna(torch.capture_s)  # only the graphed rung captures a graph
    assert pd.isna(torch.fit_end_s)  # only Keras times its pause after the last epoch
    assert "torch-cuda" not in seed.index  # skipped runs are never timed
    # Ladder order, not alphabetical: seed, sync_free, compiled; pairs in the question's order.
    assert list(summary[summary["pair"] == "torch-cpu"]["variant"]) == ["seed", "sync_free", "compiled"]
    assert list(dict.fromkeys(summary["pair"])) == ["torch-cpu", "tf_keras-cpu", "keras-cpu", "numpy-cpu"]


def test_a_rungs_cold_compilation_is_never_pooled_with_its_warm_runs_time_to_result():
    records = [synthetic_record("torch", "cpu", r, s, variant="compiled") for r, s in ((1, 60.0), (2, 6.0), (3, 8.0))]
    for record in records[1:]:
        record["method"]["compile_cache"] = "warm"
    records[0]["timings"]["phases_s"]["fit"] = 59.0
    records += [synthetic_record("torch", "cpu", r, 5.0 + r) for r in (1, 2, 3)]  # seed: nothing compiled
    summary = only_machine(records).summary.set_index("variant")
    compiled, seed = summary.loc["compiled"], summary.loc["seed"]
    # The time to result and the phases are the warm runs'; the cold one stands beside them.
    assert (compiled.median_s, compiled.min_s, compiled.max_s) == (7.0, 6.0, 8.0)
    assert compiled.fit_s == pytest.approx(0.548)
    assert (compiled.cold_compile_s, compiled.cold_compile_runs) == (60.0, 1)
    # The steady state is the same code after its compilation: every run counts.
    assert compiled.runs == 3 and compiled.step_s == pytest.approx(1e-3)
    # Runs that all compiled cold (or compile nothing) are pooled as ever.
    assert (seed.median_s, seed.cold_compile_runs) == (7.0, 0)
    assert pd.isna(seed.cold_compile_s)
    line = sentences.compile_line(build_report(records, [], []).machines[0])
    assert line.endswith("The cold runs took: torch-cpu `compiled` 1 min 0 s (1 run).")


def test_steady_step_time_counts_the_steps_of_multi_epoch_blocks():
    record = synthetic_record("torch", "cpu", 1, 1.0, variant="compiled")
    # A first block of one epoch, then blocks of 2, 1 and 2 epochs of 12 steps each.
    record["timings"] |= {"block_s": [0.5, 0.048, 0.012, 0.072], "block_epochs": [1, 2, 1, 2]}
    run = build_report([record]).runs.iloc[0]
    # No window: the timing point's later blocks, 2, 1 and 3 ms per step.
    assert run.step_median_s == pytest.approx(0.002)
    assert run.step_s == pytest.approx(np.quantile([0.002, 0.001, 0.003], STEP_QUANTILE))
    # At the mean pace, 0.132 s over 60 steps: 2.2 ms a step.
    assert run.step_mean_s == pytest.approx(0.132 / 60)
    assert run.first_block_excess_s == pytest.approx(0.5 - 12 * 0.132 / 60)


def test_question_table_and_ratios():
    machine = only_machine(synthetic_study())
    rows = {q.pair: q for q in machine.question}
    assert list(rows) == ["torch-cuda", "torch-cpu", "tf_keras-cpu", "tf_keras-cuda", "keras-cpu", "keras-cuda"]
    assert rows["tf_keras-cpu"].asker_s == 9.0 and rows["keras-cpu"].asker_s is None  # the asker's is Keras 2
    torch = rows["torch-cpu"]
    assert (torch.asker_s, torch.timed, torch.runs) == (11.0, 3, 3)
    cuda = rows["torch-cuda"]
    assert (cuda.timed, cuda.runs, cuda.result, cuda.statuses) == (0, 1, None, ("skipped",))
    assert torch.result.estimate == pytest.approx((6 * 7 * 8) ** (1 / 3)) and torch.result.runs == 3
    ratios = {(r.numerator, r.denominator): r for r in machine.ratios}
    torch_keras = ratios["torch-cpu", "tf_keras-cpu"]
    assert torch_keras.asker == pytest.approx(11 / 9)
    assert torch_keras.ours.estimate == pytest.approx(7 / 4)  # the median of the 9 pairings of 6/7/8 over 3/4/5 s
    assert torch_keras.ours.runs == (3, 3) and torch_keras.ours.p_value == pytest.approx(0.1)
    assert ratios["torch-cuda", "torch-cpu"].ours is None  # no completed cuda run


def test_ladder_speedups_spread_and_floors():
    ladders = {ladder.pair: ladder for ladder in only_machine(synthetic_study(), synthetic_sweeps()).ladders}
    torch = ladders["torch-cpu"]
    seed, sync_free, compiled = torch.rungs
    assert seed.vs_seed == pytest.approx(1.0) and sync_free.vs_seed == pytest.approx(4.0)
    assert compiled.step_s == pytest.approx(0.15e-3)  # median of 0.1 and 0.2 ms
    assert (compiled.step_min_s, compiled.step_max_s) == pytest.approx((0.1e-3, 0.2e-3))
    assert compiled.step.estimate == pytest.approx((0.1e-3 * 0.2e-3) ** 0.5) and compiled.step.runs == 2
    assert (seed.runs, seed.converged) == (3, 2)
    # Over runs: compiled's 0.1 and 0.2 ms steps over seed's three 1 ms ones, the median pairing's ratio; 2
    # runs against 3 cannot resolve it.
    assert compiled.step_vs_seed.estimate == pytest.approx(50**-0.5) and not compiled.step_vs_seed.resolved
    assert seed.step_vs_seed is None and sync_free.step_vs_seed.runs == (3, 3)
    assert seed.speedup_over_previous is None and sync_free.speedup_over_previous.runs == (3, 3)
    assert seed.first_block_excess_s == pytest.approx(0.5 - 12 * 0.048 / 36)  # at the mean pace
    # The cpu floor: the numba fused rung's 5 µs per step, measured in the same run.
    assert (torch.floor.kind, torch.floor.step_s) == ("fused", pytest.approx(5e-6))
    assert ladders["keras-cpu"].floor is torch.floor
    assert ladders["numpy-cpu"].rungs[0].vs_seed is None  # the reference has no seed to compare with
    without_floor_rung = [r for r in synthetic_study() if r["identity"]["variant"] != "fused"]
    assert only_machine(without_floor_rung).ladders[0].floor is None  # no floor rung, no floor
    (keras,) = only_machine(synthetic_study()).epoch_floors
    assert keras.pair == "keras-cpu" and keras.step_s == pytest.approx(1.6e-3)
    assert keras.vs_seed == pytest.approx(1.25)


def test_keras_backends_stand_side_by_side_in_the_answer():
    backends = [synthetic_record("keras_jax", "cpu", r, 2.0, step_ms=1.0) for r in (1, 2)]
    backends.append(synthetic_record("keras_torch", "cpu", 1, 2.0, step_ms=4.0))
    machine = only_machine(synthetic_study() + backends)
    assert sentences.keras_backends_line(machine) == [
        "The original Keras `fit` per step on cpu, by Keras 3's backend: TensorFlow 2.00 ms (2.00–2.00), "
        "JAX 1.00 ms (1.00–1.00), PyTorch 4.00 ms (1 run)."
    ]
    assert sentences.keras_backends_line(only_machine(synthetic_study())) == []  # TensorFlow alone


def test_the_why_line_sets_the_torch_step_beside_the_floor_only_where_the_floor_has_one():
    machine = only_machine(synthetic_study())
    assert "compiled into one numba loop 5.00 µs (1 run). The rest is fixed cost" in sentences.why_line(machine)
    # A study of a few epochs times the floor's many-epoch call in one block: no steady step.
    stepless = tuple(
        dataclasses.replace(
            ladder, rungs=tuple(dataclasses.replace(r, step=None) if r.variant == "fused" else r for r in ladder.rungs)
        )
        for ladder in machine.ladders
    )
    line = sentences.why_line(dataclasses.replace(machine, ladders=stepless))
    assert line.endswith("on the CPU; this study timed no steady step of the numba loop to set beside it.")


def probe_step(aten_self_us: float, launch_us: float | None = None) -> dict:
    """A probe's seed_step: 300 µs (290-320 over 3 repeats), 200 aten ops, the profiler's cost 0.3 µs an op."""
    step = {
        "value_us": 300.0,
        "calls": 50,
        "repeats": 3,
        "repeat_us": [290.0, 300.0, 320.0],
        "aten_calls_per_step": 200,
    }
    launches = {} if launch_us is None else {"kernel_launch_calls_per_step": 24}
    return step | launches | step_parts_fields(aten_self_us, 0.3, launch_us)


def test_the_step_splits_into_the_ops_own_time_the_launches_and_a_remainder():
    parts = step_parts("cpu", probe_step(aten_self_us=160.0))
    assert parts.aten_own_s == pytest.approx(100e-6)  # 160 µs of self time less 0.3 µs x 200 ops
    assert parts.launch_s == 0 and parts.remainder_s == pytest.approx(200e-6)
    assert parts.share(parts.aten_own_s) == pytest.approx(1 / 3)
    assert parts.share(parts.remainder_s) == pytest.approx(2 / 3)
    assert (parts.step_low_s, parts.step_high_s) == (pytest.approx(290e-6), pytest.approx(320e-6))
    assert not parts.accounts_for_step  # 100 µs is below the repeats' 290-320
    assert parts.confidence == pytest.approx(0.75)  # 3 repeats miss their median with 2 x (1/2)^3
    # 355 µs of self time leaves 295 µs to the ops: within the range, a remainder of 5 µs.
    fits = step_parts("cpu", probe_step(aten_self_us=355.0))
    assert fits.accounts_for_step and fits.remainder_s == pytest.approx(5e-6)
    # Parts beyond the step leave a negative remainder, kept as it is.
    beyond = step_parts("cpu", probe_step(aten_self_us=400.0))
    assert beyond.remainder_s == pytest.approx(-40e-6) and not beyond.accounts_for_step
    assert beyond.resolved and not step_parts("cpu", probe_step(aten_self_us=60.0)).resolved  # 60 µs less 0.3 x 200
    # On cuda the launch calls are a part of their own.
    cuda = step_parts("cuda", probe_step(aten_self_us=160.0, launch_us=60.0))
    assert (cuda.launch_s, cuda.launch_calls) == (pytest.approx(60e-6), 24)
    assert cuda.remainder_s == pytest.approx(140e-6)
    # A probe from before the parts were measured gives none.
    new_fields = step_parts_fields(160.0, 0.3)
    old = {key: value for key, value in probe_step(160.0).items() if key not in new_fields}
    assert step_parts("cpu", old) is None


def with_torch_step(probes: list[dict], device: str, step: dict) -> list[dict]:
    """``probes`` with the torch probe of ``device`` measuring ``step``, validated as a probe record."""
    for probe in probes:
        if (probe["framework"], probe["device"]) == ("torch", device):
            probe["measurements"]["seed_step"] |= step
            validate_probe(probe)
    return probes


def parts_lines(machine) -> str:
    """Each device's step as its torch probe split it, as the report's fixed costs give it."""
    return " ".join(filter(None, (sentences.step_parts_line(machine, device) for device in ("cpu", "cuda"))))


def test_each_devices_step_is_split_into_its_measured_parts_and_set_beside_the_runs_step():
    machine = build_report(synthetic_study(), probes=synthetic_probes()).machines[0]
    assert (
        "The torch probe timed the CPU step on a batch already in memory at 300 µs (290–320): the median of 3 "
        "repeats and their range, a 75% interval for the median; the runs' step, 1.00 ms (1.00–1.00), also holds "
        "the DataLoader's fetch of each batch, which the probe's batch already in memory leaves out. The aten ops' "
        "own host time was 100 µs (33%): their self time under torch.profiler, 160 µs, less its 300 ns per op × 200 "
        "aten calls a step, nested ones included. The remainder, 200 µs (67%), is what no aten op "
        "owns: Python and the autograd engine's glue. The measured parts fall short of that range: the remainder is "
        "more than the step's spread."
    ) in parts_lines(machine)
    probes = with_torch_step(synthetic_probes(cuda=True), "cuda", probe_step(160.0, launch_us=60.0))
    line = parts_lines(build_report(gpu_study(), probes=probes).machines[0])
    assert (
        "The torch probe timed the GPU step on a batch already in memory at 300 µs (290–320): the median of 3 "
        "repeats and their range, a 75% interval for the median; the runs' step, 1.40 ms (1.40–1.40), also holds "
        "the DataLoader's fetch of each batch, which the probe's batch already in memory leaves out. The aten ops' "
        "own host time was 100 µs (33%): their self time under torch.profiler, 160 µs, less its 300 ns per op × 200 "
        "aten calls a step, nested ones included. The CUDA runtime's 24 launch calls took 60.0 µs "
        "(20%). The remainder, 140 µs (47%), is what no aten op or launch call owns: Python, the autograd engine's "
        "glue, other runtime calls and waits."
    ) in line
    assert "nest them below it" not in line
    # Launch calls the profiler did not nest below the op whose time holds them: said, not hidden.
    unnested = probe_step(160.0, launch_us=60.0) | {"launch_calls_counted_twice_per_step": 1.5}
    line = parts_lines(build_report(gpu_study(), probes=with_torch_step(probes, "cuda", unnested)).machines[0])
    assert (
        "The CUDA runtime's 24 launch calls took 60.0 µs (20%). 1.5 of them a step lay inside an op's time though the "
        "profiler did not nest them below it: their time is in both parts."
    ) in line
    fits = with_torch_step(synthetic_probes(), "cpu", probe_step(355.0))
    line = parts_lines(build_report(synthetic_study(), probes=fits).machines[0])
    assert "The remainder, 5.00 µs (2%), is what" in line
    assert line.endswith("The measured parts account for the step within that range.")
    beyond = with_torch_step(synthetic_probes(), "cpu", probe_step(400.0))
    line = parts_lines(build_report(synthetic_study(), probes=beyond).machines[0])
    assert "The remainder, −40.0 µs (−13%), is what" in line
    assert line.endswith(
        "The measured parts exceed that range: the remainder is negative, so the ops' profiled "
        "self time, less the profiler's measured cost, still overstates them."
    )
    # A profiler's cost that eats the ops' whole self time leaves no split: said, not printed as negative time.
    unresolved = with_torch_step(synthetic_probes(), "cpu", probe_step(50.0))
    line = parts_lines(build_report(synthetic_study(), probes=unresolved).machines[0])
    assert line.endswith(
        "The aten ops' self time under torch.profiler, 50.0 µs, is no more than the profiler's measured cost of "
        "them, 300 ns per op × 200 aten calls a step (60.0 µs). The two were timed apart, and a slower stretch under "
        "either one can do this: this probe does not split the step into the ops' own time and a remainder."
    )
    assert "remainder, −" not in line and "own host time was −" not in line


def test_a_probe_from_before_the_step_parts_keeps_its_wording_and_says_they_were_not_measured():
    # The synthetic cuda probe, as the archived GPU probe, counts kernels and times an eager op, and no more.
    machine = build_report(gpu_study(), probes=synthetic_probes(cuda=True)).machines[0]
    assert sentences.why_line(machine).endswith(
        "On the GPU each step launches 25 kernels at 9.00 µs each: 225 µs before any arithmetic."
    )
    assert parts_lines(machine).endswith(
        "The GPU's torch probe predates measuring the step's parts: its aten ops' own time, launch time and "
        "remainder were not measured; the next GPU study's probe measures them."
    )
    archived = read_probe(ROOT / "results" / "archive" / "2026-12-04-nvidia-h200" / "probes" / "torch-cuda.json")
    assert "aten_self_us_per_step" not in archived["measurements"]["seed_step"]
    machine = build_report(gpu_study(), probes=[archived]).machines[0]
    assert "On the GPU each step launches 24 kernels at 6.39 µs each: 153 µs before any arithmetic." in (
        sentences.why_line(machine)
    )
    assert parts_lines(machine).endswith("were not measured; the next GPU study's probe measures them.")
    # An old cpu probe says the same of the CPU's step.
    old = synthetic_probes()
    for key in step_parts_fields(160.0, 0.3):
        old[0]["measurements"]["seed_step"].pop(key)
    validate_probe(old[0])
    line = parts_lines(build_report(synthetic_study(), probes=old).machines[0])
    assert "The CPU's torch probe predates measuring the step's parts" in line and "a new probe measures them" in line


def test_break_even_epochs_weigh_the_one_time_cost_against_the_time_saved_per_epoch():
    assert break_even_epochs(4.0, 0.5, 1.0, 1.0) == 7  # 3 s more to start, 0.5 s saved an epoch: level at 6
    assert break_even_epochs(60.0, 0.01, 1.0, 0.1) == 656  # a compiled rung: 59 s / 0.09 s an epoch
    assert break_even_epochs(0.5, 0.5, 1.0, 1.0) == 1  # cheaper to start and no slower: from the first epoch
    assert break_even_epochs(2.0, 1.0, 1.0, 1.0) is None  # dearer to start and no faster: never
    assert break_even_epochs(0.5, 1.5, 1.0, 1.0) is None  # slower per epoch: behind for good in the end


def test_the_ladder_shows_each_rungs_one_time_cost_and_break_even():
    torch = {r.variant: r for r in only_machine(synthetic_study()).ladders[0].rungs}
    # Set-up plus the first block's excess over its 12 steps at the mean pace of the later blocks (one of
    # three twice as slow: 4/3 of the median step).
    seed_mean, sync_free_mean = 1e-3 * 4 / 3, 0.25e-3 * 4 / 3
    assert torch["seed"].one_time_s == pytest.approx(0.25 + 0.5 - 12 * seed_mean)
    assert torch["seed"].beats_seed_from is None
    sync_free = torch["sync_free"]
    assert sync_free.one_time_s == pytest.approx(0.25 + 0.5 - 12 * sync_free_mean)
    expected = break_even_epochs(sync_free.one_time_s, sync_free_mean * 12, torch["seed"].one_time_s, seed_mean * 12)
    assert sync_free.beats_seed_from == expected  # its own mean step and seed's, times 12 steps an epoch


def gpu_study() -> list[dict]:
    """The synthetic study with torch-cuda seed timed: 17 s, 1.4 ms per step."""
    cuda = [synthetic_record("torch", "cuda", r, 17.0, step_ms=1.4) for r in (1, 2, 3)]
    return [r for r in synthetic_study() if r["identity"]["run_id"] != "torch-cuda-seed-1"] + cuda


def test_the_why_line_sets_the_ladders_seed_less_graphed_beside_the_probes_parts():
    assert "`seed`'s step less" not in sentences.why_line(build_report(gpu_study()).machines[0])
    graphed = [synthetic_record("torch", "cuda", r, 5.0, variant="graphed", step_ms=0.35) for r in (1, 2)]
    line = sentences.why_line(build_report(gpu_study() + graphed).machines[0])
    assert line.endswith(
        "The ladder's own measure of the host's cost per GPU step, `seed`'s step less `graphed`'s (the step replayed "
        "as one CUDA graph, the host's calls gone): 1.40 ms less 350 µs, 1.05 ms (75% of the step; medians of 3 and 2 "
        "runs)."
    )


def test_the_cuda_floor_is_kernels_times_the_in_graph_kernel_cost():
    machine = build_report(gpu_study(), probes=synthetic_probes(cuda=True)).machines[0]
    floor = machine.floors["cuda"]
    assert (floor.kind, floor.kernels, floor.step_s) == ("kernels", 25, pytest.approx(25 * 0.9e-6))


def test_a_measured_cuda_floor_stands_beside_the_computed_one_and_splits_the_askers_cuda_step():
    # The numpy fused rung's CUDA kernel at 0.05 ms a step: the cuda floor is measured, not computed.
    kernel = [synthetic_record("numpy", "cuda", r, 0.6, variant="fused", step_ms=0.05) for r in (1, 2, 3)]
    report = build_report(gpu_study() + kernel, probes=synthetic_probes(cuda=True))
    machine = report.machines[0]
    floor = machine.floors["cuda"]
    assert (floor.kind, floor.step_s) == ("fused", pytest.approx(0.05e-3))
    assert (floor.kernels, floor.kernel_s) == (25, pytest.approx(0.9e-6))  # the probes' count, beside the measured
    arithmetic, driving = machine.answer.gpu.gpu_split
    assert (arithmetic, driving) == (pytest.approx(0.05e-3), pytest.approx(1.35e-3))
    assert sentences.gpu_split_line(machine) == (
        "On the GPU, the whole step's arithmetic in one numba CUDA kernel takes 50.0 µs. The other 1.35 ms of the "
        "original loop's cuda step is how it drives the GPU: launches, copies and waits."
    )
    assert "on cuda 50.0 µs (50.0–50.0) per step, the numba `fused` rung" in sentences.floors_line(machine)


def test_the_answer_is_computed_from_the_run():
    answer = build_report(gpu_study(), probes=synthetic_probes(cuda=True)).machines[0].answer
    gpu = answer.gpu
    assert gpu.kernels == 25 and gpu.launch_s == pytest.approx(25 * 9e-6)


def paused_study() -> list[dict]:
    """The synthetic study with Keras 2's seed runs (timing points 4, 3 and 5 s) ending fit 2 ms, 1.2 s and
    2 s after their last epoch, and two runs of the same fit with autotuning off that do not pause."""
    records = synthetic_study()
    askers = [r for r in records if r["identity"]["run_id"].startswith("tf_keras-cpu-seed-")]
    for record, pause in zip(sorted(askers, key=lambda r: r["identity"]["repeat"]), (0.002, 1.2, 2.0), strict=True):
        record["timings"]["phases_s"]["fit_end"] = pause
    for repeat in (1, 2):
        record = synthetic_record("tf_keras", "cpu", repeat, 3.0, variant="autotune_off", step_ms=2.0)
        record["timings"]["phases_s"]["fit_end"] = 0.001
        records.append(record)
    return records


def test_the_answer_says_how_often_keras_2_paused_after_its_last_epoch():
    machine = build_report(paused_study()).machines[0]
    pause = machine.answer.keras.pause
    assert (pause.runs, pause.paused, pause.longest_s) == (3, 2, 2.0)
    assert (pause.pause_free_variant, pause.pause_free_runs, pause.pause_free_paused_anywhere) == ("autotune_off", 2, 0)
    # The ratio to torch with and without the pauses, over the runs: 3.998, 1.8 and 3 s against 6, 7 and 8 s.
    assert machine.answer.keras.ratio_without_pauses.estimate == pytest.approx(3.0 / 7.0)
    line = sentences.keras_line(machine)
    assert "In 2 of its 3 runs `fit` paused after its last epoch, up to 2.00 s, waiting on tf.data." in line
    assert "0.57× (unbounded) as long, but 3 runs a side cannot settle it." in line  # 3 v 3 cannot resolve
    # The paused rung is shown run by run, not as one number; the rung that did not pause is not.
    (rung,) = machine.answer.paused
    assert (rung.pair, rung.variant, rung.paused, len(rung.runs)) == ("tf_keras-cpu", "seed", 2, 3)
    rows = table_rows(render_markdown(build_report(paused_study())))
    assert ["tf_keras-cpu `seed`", "tf_keras-cpu-seed-2", "3.00 s", "1.20 s"] in rows
    # Records from before fit_end was timed: no sentence.
    assert build_report(synthetic_study()).machines[0].answer.keras.pause is None


def test_a_pause_free_rung_is_said_to_remove_the_pause_only_where_fishers_test_supports_it():
    # 2 of 3 seed runs paused against 0 of 2 autotune_off runs: Fisher's exact test cannot tell.
    line = sentences.pause_line(build_report(paused_study()).machines[0])[-1]
    assert line == (
        "Keras 2: `autotune_off` paused after the last epoch of a `fit` (the per-step window's included) in 0 of 2"
        " runs, `seed` in 2 of 3 (Fisher's exact test, p = 0.4): too few runs to tell whether it removes it."
    )
    # Eight paused seed runs, one only in its window's pass, against eight autotune_off runs that did not.
    records = [r for r in synthetic_study() if r["identity"]["framework"] != "tf_keras"]
    for repeat in range(1, 9):
        seed = synthetic_record("tf_keras", "cpu", repeat, 3.0, step_ms=2.0)
        seed["timings"]["phases_s"]["fit_end"] = 0.001 if repeat == 8 else 2.0
        seed["timings"]["steady"] = {
            "window_s": 1.0,
            "epochs": 4,
            "passes": 1,
            "block_target_s": 0.05,
            "block_s": [0.024, 0.024],
            "block_cpu_s": [0.024, 0.024],
            "block_epochs": [1, 1],
            "canary_s": [0.0004, 0.0004],
            "fit_end_s": [3.0],
        }
        free = synthetic_record("tf_keras", "cpu", repeat, 3.0, variant="autotune_off", step_ms=2.0)
        free["timings"]["phases_s"]["fit_end"] = 0.001
        records += [seed, free]
    pause = build_report(records).machines[0].answer.keras.pause
    assert (pause.seed_paused_anywhere, pause.pause_free_paused_anywhere) == (8, 0) and pause.pause_free_removes
    assert sentences.pause_line(build_report(records).machines[0])[-1].endswith(": it removes the pause.")


def test_fastest_only_where_the_runs_show_it_and_never_the_a_a_control():
    records = [synthetic_record("torch", "cpu", repeat, 7.0 + 0.1 * repeat) for repeat in range(1, 6)]
    for repeat in range(1, 6):  # the reference and its twin, both faster than the torch loop, and the floor
        for variant, seconds in (("reference", 1.0), ("reference_twin", 0.9), ("fused", 1.02)):
            records.append(synthetic_record("numpy", "cpu", repeat, seconds + 0.01 * repeat, variant=variant))
    machine = build_report(records).machines[0]
    headline = {row.role: row for row in machine.headline}
    # The reference's runs do not show it faster than the floor's: the lowest time, never "fastest".
    lowest = headline["lowest time to a result"]
    assert (lowest.rung.variant, lowest.tied_with) == ("reference", ("numpy-cpu `fused`",))
    assert "fastest to a result" not in headline
    names = [row[0] for row in sentences.headline_rows(machine)]
    assert "lowest time to a result on cpu: numpy-cpu `reference`, not shown faster than numpy-cpu `fused`" in names
    # Where its runs are faster than every other rung's (the twin, the A/A control, left out), it is the fastest.
    apart = [r for r in records if r["identity"]["variant"] != "fused"]
    apart += [synthetic_record("numpy", "cpu", repeat, 2.0 + 0.01 * repeat, variant="fused") for repeat in range(1, 6)]
    headline = {row.role: row for row in build_report(apart).machines[0].headline}
    fastest = headline["fastest to a result"]
    assert (fastest.rung.variant, fastest.tied_with) == ("reference", ())


def test_the_views_table_gives_each_rungs_ratio_to_the_original_loop_with_its_interval():
    records = [r for r in synthetic_study() if r["identity"]["run_id"][:9] != "torch-cpu"]
    for repeat in range(1, 6):
        records.append(synthetic_record("torch", "cpu", repeat, 7.0 + 0.1 * repeat))
        records.append(synthetic_record("torch", "cpu", repeat, 2.0 + 0.1 * repeat, variant="sync_free", step_ms=0.25))
    rows = table_rows(render_markdown(build_report(records)))
    (sync_free,) = [row for row in rows if row[0] == "torch-cpu `sync_free`" and len(row) == 10]  # the views table
    assert sync_free[3] == "0.32× (0.29–0.34)"  # to a result, over the original loop's runs
    (seed,) = [row for row in rows if row[0] == "torch-cpu `seed`" and len(row) == 10]
    assert (seed[3], seed[6]) == ("1", "1")


def test_a_ratio_to_the_original_loop_is_a_dash_where_that_loop_did_not_run():
    # Keras 2 alone on a machine (a release sweep's stack): nothing to set it against, so no "1" beside it either.
    keras = [synthetic_record("tf_keras", "cpu", repeat, 4.0 + 0.1 * repeat) for repeat in range(1, 4)]
    machine = build_report(keras).machines[0]
    (row,) = [row for row in sentences.headline_rows(machine) if row[0] == "the original Keras `fit` on cpu"]
    assert (row[3], row[5]) == ("–", "–")


def test_a_quoted_gpu_verdict_is_the_other_studys_own_ratio_never_its_seconds():
    from tiny_mlp_bench.report.gpu_archive import quote

    # The H200 study of 2026-12-04 ran the original loop once on its GPU and once on its CPU.
    quoted = quote(ROOT / "results" / "archive" / "2026-12-04-nvidia-h200-2")
    assert (quoted.gpu, quoted.date, quoted.ratio.runs, quoted.modified) == ("NVIDIA H200", "2026-12-04", (1, 1), 0)
    line = sentences.archived_gpu_line(types.SimpleNamespace(archived_gpu=quoted, no_archive_qualifies=False))
    assert line == (
        "The archive `2026-12-04-nvidia-h200-2` (NVIDIA H200, 2026-12-04), on its own machine: to a result, the "
        "original torch loop on the GPU took 1.59× as long as on the same machine's CPU, but 1 run a side cannot "
        "settle it."
    )
    assert " s " not in line and " s)" not in line  # no seconds of another machine beside this one's
    # An older study with cuda runs alone (no cpu run of its own) gives no ratio, and says so.
    cuda_only = quote(TEST_DATA / "h200-2026-11-29")
    assert cuda_only.ratio is None
    line = sentences.archived_gpu_line(types.SimpleNamespace(archived_gpu=cuda_only, no_archive_qualifies=False))
    assert line.endswith("ran it on the GPU but has no pair of runs the GPU verdict admits, so it gives no ratio.")


def test_the_answer_says_what_was_not_measured():
    report = build_report(synthetic_study(), probes=synthetic_probes(cuda=False))
    machine = report.machines[0]
    assert sentences.gpu_line(report, machine) == (
        "no GPU run of the original loop completed here. No archive was asked for one."
    )
    no_archive = build_report(synthetic_study(), no_archive_qualifies=True)
    assert sentences.archived_gpu_line(no_archive) == "No archive holds a completed GPU run of it either."
    assert "on cuda not measured" in sentences.floors_line(machine)
    # Keras 3 over Keras 2 in the question's 1000 epochs: 21 ms more per epoch, 50 µs less per step (12,000 steps).
    assert sentences.keras_split_line(machine) == (
        "Over 1,000 epochs the probes put Keras 3 on TensorFlow at 21.0 s more than Keras 2 in `fit`'s cost per "
        "epoch and 600 ms less in its steps."
    )
    assert sentences.dead_start_line(machine).startswith("The original initialisation leaves the output ReLU dead")
    assert "in 315 of 1000 draws" in sentences.dead_start_line(machine)
    text = render_markdown(report)
    # Each Keras probed, once: in the fixed costs table, not again in prose.
    assert ["Keras 3 on TensorFlow: fixed cost of a fit epoch (derived)", "24.0 ms"] in table_rows(text)
    assert ["Keras 2: a step inside fit (derived)", "300 µs"] in table_rows(text)
    assert "From the Keras probes" not in text
    # Keras 2's step and epoch are derived from epochs of 1 and 12 steps; the runs' step (2 ms) holds a twelfth of
    # the fixed cost, which the derived step leaves out.
    said = " ".join(text.split())
    assert (
        "its probe's epoch of one step took 3.30 ms and of 12 steps 6.60 ms (medians of 3 epochs each), so a step "
        "inside `fit` is their difference over 11, 300 µs, and the fit epoch's fixed cost the one-step epoch less that "
        "step, 3.00 ms. The runs' step, 2.00 ms, is a block's time over its steps, so it holds a 12th of that fixed "
        "cost, 250 µs, which the derived step leaves out; the probe's own epoch of 12 steps over 12 is 550 µs."
    ) in said
    assert ["skipped", "no GPU: test", "the torch cuda probe"] in table_rows(text)


def test_crossovers_are_found_from_the_sweep():
    machine = only_machine(synthetic_study(), synthetic_sweeps())
    found = {c.hidden_units: c for c in machine.crossovers}
    assert found[20].batch_size == 4096
    assert found[4].batch_size is None and found[4].largest_batch == 4096
    row = machine.sweep_table.set_index(["hidden_units", "batch_size"]).loc[(20, 4096)]
    assert (row.cpu_step_s, row.cuda_step_s, row.cpu_over_cuda) == pytest.approx((2e-3, 0.6e-3, 2 / 0.6))
    one_device = only_machine(synthetic_study(), synthetic_sweeps()[:1])
    assert one_device.crossovers == ()  # one device: nothing to compare
    assert list(one_device.sweep_table.columns) == ["hidden_units", "batch_size", "cpu_step_s", "cpu_over_cuda"]


def test_a_point_whose_blocks_overlap_is_no_win_though_its_median_is():
    sweeps = synthetic_sweeps()
    (point,) = [p for p in sweeps[1]["points"] if (p["hidden_units"], p["batch_size"]) == (20, 4096)]
    point["block_step_s"] = [0.6e-3, 0.6e-3, 2.5e-3]  # cuda's median 0.6 ms, its slowest block past cpu's 2 ms
    machine = only_machine(synthetic_study(), sweeps)
    found = {c.hidden_units: c for c in machine.crossovers}
    assert (found[20].batch_size, found[20].overlapping) == (65536, (4096,))
    assert found[4].overlapping == ()  # cpu won every block there: ordered, the other way
    assert sentences.crossover_line(machine).endswith(
        "width 20: from batch 65536 (at batch 4096 the two devices' blocks overlap: not ordered)."
    )


def test_runs_to_look_at_and_the_runs_table():
    report = build_report(synthetic_study())
    attention = report.machines[0].attention
    assert list(attention["run_id"]) == [
        "keras-cuda-seed-1",
        "tf_keras-cuda-seed-1",
        "torch-cpu-seed-1",
        "torch-cuda-seed-1",
    ]
    assert list(attention["status"]) == ["skipped", "skipped", "ok", "skipped"]
    assert report.machines[0].failed_runs == []
    assert len(report.runs) == 20 and "step" not in report.runs.columns
    assert {"pair", *(f"{phase}_s" for phase in PHASES), "step_s", "first_block_excess_s"} <= set(report.runs.columns)


def test_report_states_ratios_and_lists_runs_to_look_at():
    text = render(synthetic_study())
    rows = table_rows(text)
    assert ["torch-cpu / tf_keras-cpu", "1.22", "1.8× (unbounded)"] in rows  # asker 11/9; 3 v 3 runs bound nothing
    assert ["torch-cuda / torch-cpu", "1.55", "–"] in rows
    assert ["not converged", "", "1 run: torch-cpu-seed (1)"] in rows
    skipped = "3 runs: keras-cuda-seed (1), tf_keras-cuda-seed (1), torch-cuda-seed (1)"
    assert ["skipped", "no CUDA device: test", skipped] in rows  # one row per reason
    assert ["torch-cuda", "the original torch loop", "17", "skipped", "0/1"] in rows
    assert ["keras-cpu", "Keras 3 on TensorFlow: today's tf.keras", "–", "3.9 s (2.1–7.4)", "3/3"] in rows


def test_report_states_ladder_keras_floor_and_crossovers():
    machine = only_machine(synthetic_study(), synthetic_sweeps())
    text = render(synthetic_study(), synthetic_sweeps())
    assert sentences.epoch_floor_lines(machine) == [
        "keras-cpu with one train-function call per epoch still takes 1.60 ms a step (medians): the rest is the "
        "fixed cost of each `fit` epoch."
    ]
    assert sentences.crossover_line(machine) == (
        "Where the GPU starts to win, for torch `sync_free` on random rows already on the device (a win: every cuda "
        "block faster than every cpu block): width 4: never, up to batch 4096; width 20: from batch 4096."
    )
    assert "on cpu 5.00 µs (1 run) per step, the numba `fused` rung" in sentences.floors_line(machine)
    beats = machine.ladders[0].rung("compiled").beats_seed_from
    # Two runs of 0.1 and 0.2 ms: a t-interval with one degree of freedom, as wide as that is. Beside it
    # the median block, and its gain over the rung before.
    compiled = ["[`compiled`](#the-rungs)", "141 µs (2–11,561)", "150 µs", "1.8× (unbounded)", f"{beats:,}"]
    assert compiled in table_rows(text)
    # Its ratio to the original loop, no share of slow blocks (these records have no canary) and its one-time
    # cost: once, in the views table.
    (view,) = [row for row in table_rows(text) if row[0] == "torch-cpu `compiled`" and len(row) == 10]
    assert view[5:7] == ["141 µs (2–11,561)", "0.14× (unbounded)"] and view[-2:] == ["–", "0.75"]
    removes = "per-op dispatch and per-call overhead: forward, backward and Adam in one `torch.compile` graph, "
    assert ["torch", "`compiled`", removes + "up to 16 steps per call"] in table_rows(text)


def test_report_without_a_gpu_sweep_says_so():
    skipped = synthetic_sweeps()[1] | {"status": "skipped", "reason": "no CUDA device: test", "points": []}
    machine = only_machine(synthetic_study(), [synthetic_sweeps()[0], skipped])
    assert machine.crossovers == () and [s.status for s in machine.sweeps] == ["ok", "skipped"]
    assert sentences.crossover_line(machine) == "Where the GPU starts to win: not measured, no cuda sweep completed."
    rows = table_rows(render(synthetic_study(), [synthetic_sweeps()[0], skipped]))
    (reason,) = [row for row in rows if row[:2] == ["skipped", "no CUDA device: test"]]
    assert reason[2].endswith("; the cuda crossover sweep")  # the reason once, for runs and sweep alike


def first_line(records) -> str:
    """The report's line after its title, less the sentence a study of other than the asker's run opens with."""
    return render(records).splitlines()[2].split("answer nothing. ")[-1]


def test_the_first_line_says_what_completed_per_device_and_why_the_rest_did_not():
    # The golden file pins the usual case: every cuda run skipped for want of a GPU.
    expected = "17 cpu runs completed (3 of each original loop); the 3 cuda runs were skipped: no GPU. Host "
    assert first_line(synthetic_study()).startswith(expected)
    # One cuda run made, one failed, one skipped: each said, the skip's reason only where it is the GPU's.
    records = [r for r in synthetic_study() if r["identity"]["device"] == "cpu"]
    records += [
        synthetic_record("torch", "cuda", 1, 3.0),
        synthetic_record("torch", "cuda", 2, status="failed", reason="RuntimeError: test"),
        synthetic_record("keras", "cuda", 1, status="skipped", reason="no CUDA device: test"),
    ]
    assert first_line(records).startswith(
        "17 cpu runs and 1 cuda run completed (1–3 of each original loop); 1 cuda run was skipped: no GPU; "
        "1 cuda run failed. Host "
    )


def test_a_study_of_another_workload_than_the_askers_says_so_first():
    # The synthetic records train 4 epochs: a quick study's workload, not the question's.
    line = render(synthetic_study()).splitlines()[2]
    assert line.startswith("**Not the question's run** (4 epochs, not 1,000): its numbers show the pipeline")
    askers = synthetic_study()
    for record in askers:
        record["parameters"]["epochs"] = 1000
    assert render(askers).splitlines()[2].startswith("17 cpu runs completed")
    for record in askers:
        record["parameters"] |= {"n_train": 150, "hidden_units": 4}
    assert (
        render(askers)
        .splitlines()[2]
        .startswith("**Not the question's run** (150 training rows, not 750; hidden units 4, not 20): ")
    )


def test_report_matches_the_golden_file():
    text = render(synthetic_study(), synthetic_sweeps(), synthetic_probes())
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8"), "report changed; rerun with UPDATE_GOLDEN=1 and review the diff"


def test_the_model_does_not_depend_on_record_order():
    records, sweeps = synthetic_study(), synthetic_sweeps()
    random.Random(3).shuffle(records)
    shuffled = build_report(records, sweeps[::-1])
    ordered = build_report(synthetic_study(), synthetic_sweeps())
    pd.testing.assert_frame_equal(shuffled.runs, ordered.runs)
    assert render_markdown(shuffled) == render_markdown(ordered)


def test_hosts_are_reported_apart():
    records = [*synthetic_study(), synthetic_record("torch", "cpu", 4, 1.0, host="other-node")]
    report = build_report(records)
    assert [(m.label, len(m.runs)) for m in report.machines] == [("bench-host", 20), ("other-node", 1)]
    # Each host is summarised on its own: the other node's 1 s run is not averaged into 6/7/8 s.
    bench, other = ({q.pair: q for q in m.question}["torch-cpu"] for m in report.machines)
    assert (bench.result.estimate, bench.timed) == (pytest.approx((6 * 7 * 8) ** (1 / 3)), 3)
    assert (other.result.estimate, other.timed) == (pytest.approx(1.0), 1)
    text = render_markdown(report)
    bench_text, other_text = text.split("## Host `bench-host`")[1].split("## Host `other-node`")
    torch_loop = "the original torch loop"
    assert ["torch-cpu", torch_loop, "11", "7.0 s (4.9–9.9)", "3/3"] in table_rows(bench_text)
    assert ["torch-cpu", torch_loop, "11", "1.00 s (1 run)", "1/1"] in table_rows(other_text)


def test_machines_sharing_a_host_name_are_reported_apart():
    # VMs and containers are often all called the same: the hardware tells them apart.
    gpu_machine = synthetic_record("torch", "cuda", 4, 1.0)
    gpu_machine["environment"] |= {"gpu_name": "NVIDIA H200", "logical_cpus": 16}
    report = build_report([*synthetic_study(), gpu_machine])
    assert [m.label for m in report.machines] == [
        "bench-host (Test CPU, 16 logical CPUs, NVIDIA H200)",
        "bench-host (Test CPU, 2 logical CPUs, no GPU)",
    ]
    text = render_markdown(report)
    assert "## Host `bench-host (Test CPU, 2 logical CPUs, no GPU)`" in text
    assert "## Host `bench-host (Test CPU, 16 logical CPUs, NVIDIA H200)`" in text


def test_the_cpu_runs_of_a_gpu_host_are_that_host_s_runs():
    # A record names the GPU only where its run used it: the cpu runs of a GPU host name none.
    records = gpu_study()
    for record in records:
        if record["identity"]["device"] == "cuda":
            record["environment"]["gpu_name"] = "NVIDIA H200"
    (machine,) = build_report(records).machines
    assert machine.label == "bench-host" and set(machine.environment["gpu"]) == {None, "NVIDIA H200"}
    assert min(machine.answer.gpu.ratio.runs) >= 2  # the GPU verdict, of one host's cuda and cpu runs


def render_report(out, records, sweeps=()):
    """Run scripts/render_report.py as the workflow does, writing under ``out``."""
    args = ["--report", out / "report.md", "--timings", out / "timings.parquet", "--plot", out / "report/t.png"]
    args += ["--headline", out / "headline.csv", "--html", out / "report/report.html"]
    if sweeps:
        args += ["--crossover-plot", out / "report/x.png", "--sweeps", *sweeps]
    return run_script("render_report.py", *args, "--", *records)


@pytest.mark.slow
def test_same_records_give_identical_files(tmp_path):
    paths = []
    for i, record in enumerate(synthetic_study()):
        paths.append(tmp_path / "runs" / f"{i}.json")
        write_record(record, paths[-1])
    sweeps = []
    for sweep in synthetic_sweeps():
        sweeps.append(tmp_path / "sweep" / f"{sweep['device']}.json")
        write_sweep(sweep, sweeps[-1])
    outputs = []
    names = ("report.md", "timings.parquet", "report/t.png", "report/x.png", "headline.csv", "report/report.html")
    for name, order in (("a", 1), ("b", -1)):
        out = tmp_path / name
        result = render_report(out, paths[::order], sweeps[::order])
        assert result.returncode == 0, result.stderr
        outputs.append([(out / f).read_bytes() for f in names])
    assert outputs[0] == outputs[1]
    report = outputs[0][0].decode()
    assert "](report/t.png)" in report and "](report/x.png)" in report
    assert report == render_markdown(
        build_report(synthetic_study(), synthetic_sweeps()), "report/t.png", "report/x.png"
    )
    frame = pd.read_parquet(tmp_path / "a" / "timings.parquet")
    assert len(frame) == 20
    assert list(frame["run_id"][:3]) == ["keras-cpu-seed-1", "keras-cpu-seed-2", "keras-cpu-seed-3"]
    assert list(frame["pair"][:3]) == ["keras-cpu"] * 3
    # The report as a web page for Snakemake's report: its tables as tables, its charts inside it.
    page = (tmp_path / "a" / "report" / "report.html").read_text()
    assert "<title>The pipeline at work on another workload than the question" in page  # the study runs 4 epochs
    assert page.count("<table>") == len(re.findall(r"^\|[-:]", report, re.MULTILINE))  # each delimiter row
    assert 'src="report/' not in page
    chart = base64.b64encode((tmp_path / "a" / "report" / "t.png").read_bytes()).decode()
    assert f'<img src="data:image/png;base64,{chart}"' in page
    # The first screen's table as numbers: a row per headline row, the same values the report rounds.
    headline = pd.read_csv(tmp_path / "a" / "headline.csv")
    (machine,) = build_report(synthetic_study(), synthetic_sweeps()).machines
    assert len(headline) == len(machine.headline) == len(sentences.headline_rows(machine))
    original = headline[(headline["role"] == "question") & (headline["framework"] == "torch")].iloc[0]
    (seed,) = [row.rung for row in machine.headline if row.role == "question" and row.rung.framework == "torch"]
    assert (original["device"], original["variant"], original["runs"]) == ("cpu", "seed", 3)
    assert original["time_to_result_s"] == pytest.approx(seed.result.estimate, rel=1e-12)
    assert original["time_to_result_low_s"] < original["time_to_result_s"] < original["time_to_result_high_s"]
    assert pd.isna(original["time_to_result_vs_original"])  # the original loop is not a ratio to itself
    (fastest,) = headline[headline["role"] == "lowest time to a result"].itertuples()  # one run: not shown fastest
    assert (fastest.variant, fastest.step_vs_original) == ("fused", pytest.approx(0.005))


def test_invalid_record_is_named_and_nothing_is_written(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    write_record(synthetic_record("torch", "cpu", 1, 1.0), good)
    broken = synthetic_record("torch", "cpu", 2, 1.0)
    broken["timings"]["fit_predict_s"] = "fast"
    bad.write_text(json.dumps(broken))
    result = render_report(tmp_path / "out", [good, bad])
    assert result.returncode == 1
    assert f"{bad}: field timings/fit_predict_s: 'fast' is not of type 'number'" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "good.json"]


def test_truncated_record_file_is_named_and_nothing_is_written(tmp_path):
    path = tmp_path / "torch-cpu-seed-1.json"
    path.write_text('{"record_type": ')
    with pytest.raises(RecordError, match=r"torch-cpu-seed-1\.json: not a readable JSON record"):
        read_record(path)
    result = render_report(tmp_path / "out", [path])
    assert result.returncode == 1 and "torch-cpu-seed-1.json: not a readable JSON record" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["torch-cpu-seed-1.json"]


def test_duplicate_runs_are_refused(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        write_record(synthetic_record("torch", "cpu", 1, 1.0), path)
    result = render_report(tmp_path / "out", [a, b])
    assert result.returncode == 1 and f"{b}: run torch-cpu-seed-1 is also in {a}" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


def test_record_writer_refuses_an_invalid_record(tmp_path):
    record = synthetic_record("torch", "cpu", 1, 1.0)
    record["status"] = "great"
    with pytest.raises(RecordError, match="field status: 'great' is not one of"):
        write_record(record, tmp_path / "r.json")
    assert list(tmp_path.iterdir()) == []


def test_rungs_whose_runs_cannot_be_ordered_share_a_letter():
    views = {(v.pair, v.variant): v for v in only_machine(synthetic_study()).views}
    # A single run cannot be ordered against anything, nor 3 runs against 2: every cpu rung shares one letter.
    assert {v.step_rank for v in views.values()} == {"a"}
    assert views["torch-cpu", "seed"].result_rank != "–"
    found = only_machine(synthetic_study()).views
    assert [v.device for v in found] == ["cpu"] * len(found)  # the cuda runs were skipped


def test_letters_never_chain_two_rungs_the_exact_test_resolves():
    from tiny_mlp_bench.report.inference import ratio
    from tiny_mlp_bench.report.ladder import letters

    def runs(centre):
        return tuple(centre + 0.01 * i for i in range(5))

    apart = [runs(1.0), runs(2.0), runs(2.02)]
    assert letters(apart) == ["a", "b", "b"]  # 5 v 5 resolves the first pair, not the second
    # 1.000 and 1.025 cannot be ordered, nor 1.025 and 1.050, but 1.000 and 1.050 can: two letters, no chain.
    chain = [runs(1.0), runs(1.025), runs(1.05)]
    assert ratio(chain[0], chain[2]).resolved and not ratio(chain[0], chain[1]).resolved
    assert letters(chain) == ["a", "ab", "b"]


def test_numbers_carry_the_digits_their_interval_supports():
    from tiny_mlp_bench.report.cells import duration, times
    from tiny_mlp_bench.report.inference import Interval, Ratio

    assert duration(Interval(9.15, 8.67, 11.46, 5)) == "9.2 s (8.7–11.5)"
    assert duration(Interval(5.3732e-3, 5.1e-3, 5.6e-3, 3)) == "5.4 ms (5.1–5.6)"
    assert duration(Interval(27.7e-6, 25e-6, 31e-6, 5)) == "28 µs (25–31)"
    assert duration(Interval(26.06, None, None, 1)) == "26.1 s (1 run)"
    assert times(Ratio(22.29, 16.0, 28.0, 0.008, (3, 3))) == "22× (16–28)"
    assert times(Ratio(22.29, None, None, 0.1, (3, 3))) == "22× (unbounded)"
    assert times(Ratio(1.244, 0.852, 1.702, 0.31, (5, 5))) == "1.2× (0.9–1.7)"  # half-width 0.4: one decimal


def test_failed_runs_come_with_the_command_that_reruns_them():
    records = [*synthetic_study(), synthetic_record("torch", "cpu", 4, status="failed", reason="RuntimeError: x")]
    assert only_machine(records).failed_runs == ["torch-cpu-seed-4"]
    text = render(records)
    assert ["failed", "RuntimeError: x", "1 run: torch-cpu-seed (1)"] in table_rows(text)
    assert "`snakemake --forcerun results/runs/torch-cpu-seed-4.json`" in text


def test_load_around_the_runs_is_reported_as_ranges():
    busy = synthetic_record("torch", "cpu", 4, 1.0)
    busy["load"]["before"]["load_average"] = [2.5, 2.0, 1.5]
    busy["load"]["peak_host_memory_mb"] = 900.0
    old = synthetic_record("torch", "cpu", 5, 1.0)
    old["load"] = None  # a record older than version 4
    machine = only_machine([*synthetic_study(), busy, old])
    assert machine.load["load_1min_before"] == (0.5, 2.5)
    assert machine.load["peak_host_memory_mb"] == (512.0, 900.0)
    assert pd.isna(machine.load["peak_gpu_memory_mb"][1])  # no run used a GPU
    rows = table_rows(render_markdown(build_report([*synthetic_study(), busy, old])))
    assert ["load average (1 min): what else ran, not the slow state", "0.50–2.50 at start, 1.50 at end"] in rows
    assert ["peak memory of a run (MB)", "host 900, GPU –"] in rows


def test_the_report_says_how_many_epochs_its_cuda_runs_timed_a_block():
    # Records made before the cuda loops ran 50 epochs a block say so, and the report with them.
    text = render_markdown(build_report(gpu_study()))
    assert "Cuda runs read the clock every 1 epochs, after waiting for the GPU." in text
    records = gpu_study()
    for record in records:
        if record["identity"]["device"] == "cuda":  # 200 epochs in 4 blocks of 50
            record["parameters"]["epochs"] = 200
    assert "Cuda runs read the clock every 50 epochs" in render_markdown(build_report(records))


def test_the_per_step_estimate_is_the_blocks_as_timed_and_the_canary_only_marks_them():
    fast, slow = synthetic_record("torch", "cpu", 1, 2.0), synthetic_record("torch", "cpu", 2, 2.0)
    # Run 1: eight 5 ms steps' blocks before a fast canary, then two slowed ones before a slow canary.
    blocks = [*([0.06] * 8), 0.1, 0.1]
    fast["timings"]["steady"] = {
        "window_s": 1.0,
        "epochs": 10,
        "passes": 1,
        "block_target_s": 0.05,
        "block_s": blocks,
        "block_cpu_s": blocks,
        "block_epochs": [1] * 10,
        "canary_s": [0.0004] * 8 + [0.0007] * 2,
    }
    # Run 2: every block in the slow state, and its canary says so.
    slow["timings"]["steady"] = {**fast["timings"]["steady"], "block_s": [0.1] * 10, "canary_s": [0.0007] * 10}
    for record in (fast, slow):
        validate_record(record)
    runs = build_report([fast, slow]).runs.set_index("repeat")
    assert runs.loc[1, "step_s"] == pytest.approx(0.005)
    assert runs.loc[1, "step_median_s"] == pytest.approx(0.005) and runs.loc[1, "slow_share"] == pytest.approx(0.2)
    # A run that met only the slow state reads the slow state, and its slow share says so: no canary scales it.
    assert runs.loc[2, "step_s"] == pytest.approx(0.1 / 12) and runs.loc[2, "slow_share"] == 1.0
    assert runs.loc[2, "step_median_s"] == pytest.approx(0.1 / 12)
    # Rendered alone, a run's step is the same: it never depends on the records beside it.
    assert build_report([slow]).runs.iloc[0]["step_s"] == pytest.approx(0.1 / 12)
    # The first screen prints the share of slow blocks beside the rung's numbers: 20% and 100%, 60% over runs.
    text = render_markdown(build_report([fast, slow]))
    first = next(row for row in table_rows(text) if "original torch" in row[0])
    assert first[-1] == "60%"
    # Above the ladders, the original loop's step as timed and its slow share: why a whole study moves.
    assert "Absolute times are this machine's on this day: the original torch loop took 6.5 ms (" in text
    assert "60% of its blocks slow by the canary" in text.split("### Where the time goes")[1]
    # Time a user waits still comes from the timing point's own blocks.
    timing_point = fast["timings"]["block_s"]
    assert runs.loc[1, "step_mean_s"] == pytest.approx(sum(timing_point[1:]) / (12 * (len(timing_point) - 1)))


def test_a_version_7_window_drops_its_warm_up_block_and_has_no_canary():
    record = synthetic_record("torch", "cpu", 1, 2.0)
    blocks = [0.2, *([0.06] * 9)]  # the restart, then nine 5 ms steps' blocks
    record["timings"]["steady"] = {
        "window_s": 1.0,
        "epochs": 10,
        "block_target_s": 0.05,
        "block_s": blocks,
        "block_cpu_s": blocks,
        "block_epochs": [1] * 10,
    }
    validate_record(record)
    run = build_report([record]).runs.iloc[0]
    assert run.step_s == pytest.approx(0.005) and run.step_median_s == pytest.approx(0.005)
    assert pd.isna(run.slow_share)


def test_the_pause_threshold_is_the_one_docs_method_states():
    from tiny_mlp_bench.report.answer import PAUSED_S

    method = (TEST_DATA.parents[1] / "docs" / "method.md").read_text()
    assert f"**A run paused** where its `fit_end` lasted {PAUSED_S:g} s or more" in method


def test_the_template_holds_layout_only():
    from tiny_mlp_bench.report.markdown import TEMPLATE

    long_lines = [line for line in TEMPLATE.read_text().splitlines() if len(line) > 120]
    assert long_lines == []


def test_the_first_screen_reads_in_short_plain_sentences():
    report = build_report(paused_study(), probes=synthetic_probes(cuda=True), no_archive_qualifies=True)
    first_screen = render_markdown(report).split("## Details")[0]
    lines = [line for line in first_screen.splitlines() if line and not line.startswith(("|", "#"))]
    bodies = [line.removeprefix("- ").split("**: ")[-1] for line in lines]  # each answer line less its label
    sentences_found = [s for body in bodies for s in body.split(". ") if s]
    assert len(sentences_found) >= 8
    assert max(len(s.split()) for s in sentences_found) <= 32
    assert "asker" not in first_screen.split("|")[0]  # "the original loop", in the words above the table


def test_the_original_step_goes_into_parts_that_add_up_with_what_lies_outside_them():
    records = [*synthetic_study(), parts_run(1), parts_run(2)]
    validate_record(records[-1])
    parts = only_machine(records).loop_parts["cpu"]
    # Blocks past the first: 1, 2 and 1 ms a step, in each of the two runs.
    assert parts.blocks == 6 and parts.step_s == pytest.approx(4 / 3 * 1e-3)
    assert parts.parts_s["fetch"] == pytest.approx(parts.step_s / 4)
    assert parts.share(parts.outside_s) == pytest.approx(0.1)
    assert parts.largest[:3] == ["fetch", "forward", "backward"]
    text = render(records)
    section = " ".join(text.split("### Where the original step goes", 1)[1].split("### Fixed costs", 1)[0].split())
    assert "| the DataLoader's fetch (sampler, 64 rows, collate) | 333 µs (25%) |" in section
    assert "| outside the parts: the loop's bookkeeping, each epoch's iterator | 133 µs (10%) |" in section
    assert "7 clock reads a step, on the `tsc` clock source" in section
    assert "](report/breakdown.png)" in section
    # The check that can fail: its step against seed's (1 ms a step both), with no A/A control to judge it here.
    assert "the `parts` rung's step took 1.0× (unbounded) as long as `seed`'s" in section
    assert "no A/A control ran here" in section
    assert "the largest parts were the DataLoader's fetch (sampler, 64 rows, collate), 333 µs (25%)" in text


def per_batch(value_us: float, calls: int = 1) -> dict:
    """A probe's timing of whole epochs or of single batches: ``value_us`` a batch over 7 even repeats."""
    timed = {"value_us": value_us, "calls": calls, "repeats": 7, "repeat_us": [value_us] * 7}
    return timed | ({"batches_per_call": 60} if calls == 1 else {})


def torch_cpu_probe_reading(loader_fetch: dict) -> list[dict]:
    """The synthetic torch cpu probe alone, its DataLoader read as ``loader_fetch`` says, validated as a probe."""
    probes = [p for p in synthetic_probes() if (p["framework"], p["device"]) == ("torch", "cpu")]
    probes[0]["measurements"]["loader_fetch"] = loader_fetch
    validate_probe(probes[0])
    return probes


def said_with_parts(probes: list[dict]) -> str:
    """The report of the synthetic study and two `parts` runs beside ``probes``, its lines run together."""
    return " ".join(render([*synthetic_study(), parts_run(1), parts_run(2)], probes=probes).split())


@pytest.mark.parametrize(
    "alone_us, verdict",
    [(300.0, "1.11×; the two agree within 15%"), (250.0, "1.33×; they are more than 15% apart: the fetch costs more")],
)
def test_the_parts_fetch_is_checked_against_the_dataloader_timed_alone(alone_us, verdict):
    probes = torch_cpu_probe_reading(per_batch(alone_us))
    said = said_with_parts(probes)
    assert f"timed alone by the torch probe, {alone_us:.0f} µs a batch: " in said and verdict in said


@pytest.mark.parametrize(
    "between_us, verdict", [(600.0, "between the two, as it should be"), (350.0, "outside them: the parts misplace")]
)
def test_the_loops_time_around_the_step_lies_between_the_probes_readings_with_no_clock_in_a_loop(between_us, verdict):
    # The fetch, the copy and what lies outside the parts: 40% of each block's 1, 2 and 1 ms a step, 400 µs in the
    # median block.
    between = {"loop": per_batch(between_us + 1000.0), "steps": per_batch(1000.0), "value_us": between_us}
    probes = torch_cpu_probe_reading(per_batch(300.0) | {"between_steps": between})
    said = said_with_parts(probes)
    assert (
        "CPU: the loop's time around the step (the fetch, the copy and its bookkeeping), 400 µs a step in the median "
        "block as the clock read it, against the torch probe's medians with no clock inside a loop: the DataLoader "
        f"alone, 300 µs a batch, and the loop less as many steps on one batch, {between_us:.0f} µs, which also holds "
        f"what a fetch between them costs the step; {verdict}"
    ) in said
    assert "timed alone by the torch probe" not in said  # the older check, for probes without the loop less its steps


def test_the_dataloaders_fetch_is_given_in_its_own_parts_where_the_probe_timed_them():
    probes = torch_cpu_probe_reading(per_batch(300.0))
    before = said_with_parts(probes)
    assert "in its own parts" not in before  # a probe from before they were timed
    own_parts = {
        "sampler": per_batch(20.0),
        "rows": per_batch(150.0, calls=100),
        "collate": per_batch(100.0, calls=100),
    }
    probes = torch_cpu_probe_reading(per_batch(300.0) | {"fetch_parts": own_parts})
    said = said_with_parts(probes)
    assert (
        "CPU: the DataLoader's fetch of a batch in its own parts, each timed alone by the torch probe: the sampler's "
        "indices 20.0 µs, the rows read one index at a time 150 µs, the collate that stacks them 100 µs; the "
        "loader's own machinery, the rest of its 300 µs alone, 30.0 µs."
    ) in said


@pytest.mark.parametrize(
    "fetch, verdict", [(0.25, "outside them: the parts misplace time"), (0.45, "between the two, as it should be")]
)
def test_what_sync_free_saved_must_lie_between_the_parts_it_drops_and_those_it_makes_cheaper(fetch, verdict):
    # seed's step 1 ms, sync_free's 0.25 ms: it saved 750 µs; the fetch and the copy are 30% or 50% of a 1.33 ms step,
    # zero_grad and Adam's step 20% more.
    shares = PARTS_SHARES | {"fetch": fetch, "forward": 0.4 - fetch}
    said = " ".join(render([*synthetic_study(), parts_run(1, shares), parts_run(2, shares)]).split())
    assert "it saved 750 µs a step (`seed`'s step less its own, the ladder's), " + verdict in said


def test_on_a_gpu_the_parts_say_that_their_reads_serialise_the_step():
    records = [*synthetic_study(), parts_run(1), parts_run(1, device="cuda"), parts_run(2, device="cuda")]
    assert set(only_machine(records).loop_parts) == {"cpu", "cuda"}
    said = " ".join(render(records).split())
    assert "| part of the original torch step | CPU, a step | GPU, a step |" in said
    assert "GPU: each read waits for the GPU first, which serialises the step" in said
    assert "CPU: each read waits" not in said


def test_a_study_without_the_parts_rung_shows_no_parts_section():
    assert "### Where the original step goes" not in render(synthetic_study())
