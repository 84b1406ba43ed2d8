"""The slowed share: on constructed blocks it counts what was slowed; on the 2-core archive it
reproduces the analysis (q1_slowshare.py): the share ranks the runs' medians."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from scipy import stats

from conftest import ROOT
from tiny_mlp_bench.records import read_record
from tiny_mlp_bench.report.slowed_share import (
    MIN_STEADY_BLOCKS,
    NO_RUN_WITH_ENOUGH_BLOCKS,
    SLOW_THRESHOLD,
    TOO_FEW_BLOCKS,
    slowed_shares,
    steady_per_step_s,
)

FAST_STEP_S = 100e-6
SLOWER = 1.7  # how far apart the machine's two speeds are
STEPS_PER_EPOCH = 12
ARCHIVE = ROOT / "results" / "archive" / "2026-12-02-cpu-2core"


def record(run_id: str, per_step_s: list[float], *, variant="seed", status="ok", epochs_per_block=1) -> dict:
    """Just the fields the slowed share reads: a torch-cpu run whose blocks took these seconds per step."""
    steps = epochs_per_block * STEPS_PER_EPOCH
    return {
        "status": status,
        "identity": {"framework": "torch", "device": "cpu", "variant": variant, "run_id": run_id},
        "timings": {
            "block_s": [s * steps for s in per_step_s],
            "block_epochs": [epochs_per_block] * len(per_step_s),
            "steps_per_epoch": STEPS_PER_EPOCH,
        },
    }


def blocks(later: int, slowed: int, *, first: float = 20 * FAST_STEP_S, seed: int = 0) -> list[float]:
    """A warm-up block, then ``later`` blocks at the fast step within ±5 %, ``slowed`` of them 1.7x
    slower, scattered through the run."""
    rng = np.random.default_rng(seed)
    steps = FAST_STEP_S * rng.uniform(0.95, 1.05, later)
    steps[rng.choice(later, slowed, replace=False)] *= SLOWER
    return [first, *steps.tolist()]


def shares(rung) -> dict[str, float | None]:
    return {run.run_id: run.share for run in rung.runs}


def test_the_share_is_the_fraction_of_later_blocks_slowed():
    rung = slowed_shares(
        [record("a", blocks(200, 60, seed=1)), record("b", blocks(300, 150, seed=2)), record("c", blocks(200, 0))]
    )["torch-cpu", "seed"]
    assert rung.reason is None
    # The pooled 10th percentile of 700 blocks, 210 of them slowed, is among the fast ones.
    assert rung.fast_step_s == pytest.approx(FAST_STEP_S, rel=0.05)
    assert shares(rung) == {"a": pytest.approx(60 / 200), "b": pytest.approx(150 / 300), "c": 0.0}
    assert [run.steady_blocks for run in rung.runs] == [200, 300, 200]


def test_a_block_is_judged_per_step_whatever_its_epochs():
    later = blocks(200, 40, seed=3)[1:]
    one_epoch, two_epochs = record("1", [FAST_STEP_S, *later]), record("2", [FAST_STEP_S, *later], epochs_per_block=2)
    assert two_epochs["timings"]["block_s"][1] == pytest.approx(2 * one_epoch["timings"]["block_s"][1])
    for run in (one_epoch, two_epochs):
        assert shares(slowed_shares([run])["torch-cpu", "seed"]) == {run["identity"]["run_id"]: pytest.approx(0.2)}


def test_the_first_block_is_never_counted():
    # Its warm-up makes "fast" 20x slower in the first block, and "slow" fast in the second run's:
    # neither counts, for the share or for the fast mode.
    all_fast = record("fast", blocks(200, 0, first=20 * FAST_STEP_S))
    all_slow = record("slow", blocks(200, 200, first=0.5 * FAST_STEP_S))
    rung = slowed_shares([all_fast, all_slow])["torch-cpu", "seed"]
    assert shares(rung) == {"fast": 0.0, "slow": 1.0}
    assert rung.fast_step_s > 0.9 * FAST_STEP_S
    np.testing.assert_array_equal(
        steady_per_step_s(all_fast), np.asarray(all_fast["timings"]["block_s"][1:]) / STEPS_PER_EPOCH
    )


def test_one_run_finds_its_fast_mode_in_its_own_blocks():
    rung = slowed_shares([record("alone", blocks(400, 100, seed=4))])["torch-cpu", "seed"]
    assert rung.fast_step_s == pytest.approx(FAST_STEP_S, rel=0.05)
    assert shares(rung) == {"alone": pytest.approx(0.25)}


def test_too_few_blocks_give_no_share_and_say_why():
    short = record("short", blocks(MIN_STEADY_BLOCKS - 1, 10))
    just_enough = record("enough", blocks(MIN_STEADY_BLOCKS, 10))
    rung = slowed_shares([short, just_enough])["torch-cpu", "seed"]
    assert shares(rung) == {"short": None, "enough": pytest.approx(10 / MIN_STEADY_BLOCKS)}
    assert rung.runs[0].reason == TOO_FEW_BLOCKS and rung.runs[1].reason is None
    # A rung whose runs all have too few blocks has no fast mode either (a one-block run has none after the first).
    only_short = slowed_shares([short, record("one", [FAST_STEP_S])])["torch-cpu", "seed"]
    assert (only_short.fast_step_s, only_short.reason) == (None, NO_RUN_WITH_ENOUGH_BLOCKS)
    assert [(run.steady_blocks, run.share, run.reason) for run in only_short.runs] == [
        (MIN_STEADY_BLOCKS - 1, None, TOO_FEW_BLOCKS),
        (0, None, TOO_FEW_BLOCKS),
    ]


def test_failed_and_skipped_runs_are_left_out():
    kept = record("ok", blocks(200, 50, seed=5))
    failed = record("failed", [SLOWER * FAST_STEP_S / 2] * 201, status="failed")  # would pull the fast mode down
    skipped = record("skipped", [], variant="sync_free", status="skipped")
    skipped["timings"] = {"phases_s": {}}  # as a skipped run records them
    found = slowed_shares([kept, failed, skipped])
    assert list(found) == [("torch-cpu", "seed")]
    assert found["torch-cpu", "seed"] == slowed_shares([kept])["torch-cpu", "seed"]


def archive_records() -> list[dict]:
    paths = sorted((ARCHIVE / "runs").glob("*.json"))
    assert paths, f"{ARCHIVE}/runs: no run records"
    return [read_record(path) for path in paths]


def test_on_the_2core_archive_the_share_ranks_the_run_medians():
    """Over the runs of rungs with at least 500 blocks a run, the slowed share and log(run median /
    fast mode) rank alike. The analysis got Spearman 0.96 over 54 runs of two archives (fast modes
    pooled over both); on this archive alone we measured rho = 0.973 over 27 runs (9 rungs x 3
    runs, p = 2e-17). A threshold or quantile that missed the two speeds would scatter them."""
    records = {r["identity"]["run_id"]: r for r in archive_records() if r["status"] == "ok"}
    share, log_median = [], []
    for rung in slowed_shares(list(records.values())).values():
        if rung.fast_step_s is None or min(run.steady_blocks for run in rung.runs) + 1 < 500:
            continue
        for run in rung.runs:
            share.append(run.share)
            log_median.append(np.log(np.median(steady_per_step_s(records[run.run_id])) / rung.fast_step_s))
    rho, p = stats.spearmanr(share, log_median)
    print(f"Spearman(slowed share, log run median / fast mode) over {len(share)} runs: rho={rho:.3f} p={p:.1g}")
    assert len(share) == 27
    assert rho >= 0.9


def test_on_the_2core_archive_the_shares_are_the_analysis_rule():
    """The module's shares are q1_slowshare.py's, its rule written again here from the script: per
    rung with 500 blocks a run, the pooled 10th percentile of the per-step blocks after the first,
    and each run's fraction of those above 1.35 times it."""
    by_rung = defaultdict(list)
    for r in archive_records():
        if r["status"] != "ok":
            continue
        t, ident = r["timings"], r["identity"]
        per_step = np.array(t["block_s"]) / (np.array(t["block_epochs"]) * t["steps_per_epoch"])
        by_rung[f"{ident['framework']}-{ident['device']}:{ident['variant']}"].append((ident["run_id"], per_step))
    expected = {}
    for runs in by_rung.values():
        if len(runs[0][1]) < 500:
            continue
        fast = np.percentile(np.concatenate([ps[1:] for _, ps in runs]), 10)
        expected |= {run_id: np.mean(ps[1:] > 1.35 * fast) for run_id, ps in runs}
    computed = {
        run.run_id: run.share
        for rung in slowed_shares(archive_records()).values()
        for run in rung.runs
        if run.share is not None
    }
    assert SLOW_THRESHOLD == 1.35
    assert len(expected) == 27
    assert computed == pytest.approx(expected, abs=1e-12)
