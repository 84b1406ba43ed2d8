"""What a study's runs support (tiny_mlp_bench/report/inference.py): a rung's interval, a ratio's, the exact test."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from tiny_mlp_bench.report.inference import ratio, rung_interval


def exact_critical_count(m: int, n: int, alpha: float) -> int:
    """The textbook route, written out as a check: the largest c with P(U <= c) <= alpha / 2 under the null,
    from every way of ranking m runs among m + n. The interval is then the (c+1)-th pairing from each end."""
    counts = np.zeros(m * n + 1)
    for ranks in itertools.combinations(range(m + n), m):
        counts[sum(ranks) - m * (m - 1) // 2] += 1
    tail = np.cumsum(counts) / counts.sum()
    return int(np.flatnonzero(tail <= alpha / 2).max())


@pytest.mark.parametrize(("m", "n"), [(5, 5), (4, 6), (6, 8)])
def test_the_ratios_interval_is_the_textbook_hodges_lehmann_one(m, n):
    rng = np.random.default_rng(m * 10 + n)
    a, b = np.exp(rng.normal(0.2, 0.1, m)), np.exp(rng.normal(0.0, 0.1, n))
    found = ratio(a, b)
    pairings = np.sort(np.subtract.outer(np.log(a), np.log(b)).ravel())
    c = exact_critical_count(m, n, 0.05)
    assert found.low == pytest.approx(np.exp(pairings[c]))
    assert found.high == pytest.approx(np.exp(pairings[m * n - 1 - c]))
    assert found.estimate == pytest.approx(np.exp(np.median(pairings)))
    assert found.p_value == pytest.approx(stats.mannwhitneyu(a, b, method="exact").pvalue)
    assert found.runs == (m, n)


def test_three_runs_against_three_resolve_nothing_however_far_apart():
    found = ratio([1.0, 1.1, 1.2], [2.0, 2.1, 2.2])
    assert found.p_value == pytest.approx(0.1)  # the least the exact test can give 3 against 3
    assert (found.low, found.high) == (None, None) and not found.resolved
    # Five against five, as far apart, do resolve it.
    five = ratio([1.0, 1.05, 1.1, 1.15, 1.2], [2.0, 2.05, 2.1, 2.15, 2.2])
    assert five.resolved and five.high < 1 and five.p_value == pytest.approx(2 / 252)


def test_identical_code_is_not_called_different():
    rng = np.random.default_rng(3)
    same = np.exp(rng.normal(0, 0.1, 10))
    found = ratio(same[:5], same[5:])
    assert found.low < 1 < found.high and not found.resolved


def test_a_rungs_interval_is_a_t_interval_on_its_runs_logs():
    values = [1.0, 1.2, 0.9, 1.1]
    found = rung_interval(values)
    logs = np.log(values)
    half = stats.t.ppf(0.975, 3) * logs.std(ddof=1) / 2
    assert found.estimate == pytest.approx(np.exp(logs.mean()))
    assert (found.low, found.high) == pytest.approx((np.exp(logs.mean() - half), np.exp(logs.mean() + half)))
    # One run has no interval; runs that agree exactly, an interval of that one value.
    assert (rung_interval([2.0]).low, rung_interval([2.0]).runs) == (None, 1)
    assert (rung_interval([2.0, 2.0]).low, rung_interval([2.0, 2.0]).high) == (2.0, 2.0)


@pytest.mark.parametrize("bad", [[], [1.0, 0.0], [1.0, float("nan")], [-1.0]])
def test_values_that_are_not_times_are_refused(bad):
    with pytest.raises(ValueError, match="finite and positive"):
        rung_interval(bad)


def test_docs_method_states_the_design_estimator_and_canary_numbers_of_the_archives_it_names(tmp_path):
    from tiny_mlp_bench.generated_docs import method_numbers

    assert method_numbers.main(["--check"]) == 0, "run: make method-numbers"
    # A stale copy is found, and rewritten between the markers with the text around them kept.
    text = (method_numbers.METHOD).read_text()
    design, estimator, canary = (method_numbers.begin(kind).search(text).group(0) for kind in method_numbers.MARKERS)
    stale = tmp_path / "method.md"
    design_end, estimator_end, canary_end = (method_numbers.end(kind) for kind in method_numbers.MARKERS)
    stale.write_text(
        f"intro\n{design}\nold numbers\n{design_end}\nmiddle\n{estimator}\nold\n{estimator_end}\n"
        f"{canary}\nold beta\n{canary_end}\nafter\n"
    )
    assert method_numbers.main(["--check", "--method", str(stale)]) == 1
    assert method_numbers.main(["--method", str(stale)]) == 0
    rewritten = stale.read_text()
    assert rewritten.startswith(f"intro\n{design}\nThe A/A control, numpy-cpu `reference_twin` against `reference`")
    assert f"{design_end}\nmiddle\n{estimator}\nOver " in rewritten
    assert "**every block as timed, q = 0.25** (the report's)" in rewritten
    assert "| 2026-12-03-cpu-2core " in rewritten.split(canary)[1]
    assert rewritten.endswith(f"{canary_end}\nafter\n") and "old" not in rewritten


def test_beta_is_how_far_slow_blocks_slowed_against_their_canaries():
    from tiny_mlp_bench.generated_docs.method_numbers import beta

    canaries = np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0])
    # Blocks that slow as much as their canary give 1; blocks that do not slow at all give 0.
    assert beta(np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0]), canaries, 1.0) == pytest.approx(1.0)
    assert beta(np.ones(6), canaries, 1.0) == pytest.approx(0.0)
    assert beta(np.array([1.0, 1.0, 1.0, 2.0**0.5, 2.0**0.5, 2.0**0.5]), canaries, 1.0) == pytest.approx(0.5)
    # Too few blocks on a side of the slow mark: no beta.
    assert beta(np.ones(4), np.array([1.0, 1.0, 2.0, 2.0]), 1.0) is None


def test_runs_of_identical_values_give_the_one_ratio_they_support():
    # Every pairing is 4: the test rejects every other shift at 5% (5 v 3), and accepts the tie at 4.
    found = ratio([1.0] * 5, [0.25] * 3)
    assert (found.estimate, found.low, found.high) == pytest.approx((4.0, 4.0, 4.0))


def brute_force_stratified_p(studies, shift: float) -> float:
    """The two-sided p of the pairings won summed over studies, by relabelling every study's runs every way."""
    observed, ways = 0.0, []
    for a, b in studies:
        log_a, log_b = np.log(a) - shift, np.log(b)
        observed += sum((x > y) + 0.5 * (x == y) for x in log_a for y in log_b)
        pooled = np.concatenate([log_a, log_b])
        each = []
        for chosen in itertools.combinations(range(len(pooled)), len(a)):
            rest = [pooled[i] for i in range(len(pooled)) if i not in chosen]
            each.append(sum((pooled[i] > y) + 0.5 * (pooled[i] == y) for i in chosen for y in rest))
        ways.append(each)
    totals = np.array([sum(combo) for combo in itertools.product(*ways)])
    lower, upper = np.mean(totals <= observed + 1e-9), np.mean(totals >= observed - 1e-9)
    return min(1.0, 2 * min(lower, upper))


STUDIES = [
    ([1.31, 1.22, 1.40], [1.0, 1.05]),  # one day's runs: a about 1.3 x b
    ([2.9, 2.5], [1.9, 2.1, 2.0]),  # another day, every time slower, the ratio about the same
    ([0.7], [0.6]),  # a study of one run against one: its runs add to the test, alone it resolves nothing
]


def test_the_pooled_ratio_inverts_the_stratified_permutation_test_as_brute_force_does():
    from tiny_mlp_bench.report.inference import pooled_ratio

    found = pooled_ratio(STUDIES)
    assert found.p_value == pytest.approx(brute_force_stratified_p(STUDIES, 0.0))
    assert found.runs == (6, 6) and found.resolved
    # The estimate is the median of the studies' own pairings, never of pairings across studies.
    own = np.concatenate([np.subtract.outer(np.log(a), np.log(b)).ravel() for a, b in STUDIES])
    assert found.estimate == pytest.approx(np.exp(np.median(own)))
    # The interval holds exactly the shifts brute force does not reject, probed at and between the pairings.
    cuts = np.unique(own)
    for shift in np.concatenate([cuts, (cuts[:-1] + cuts[1:]) / 2, [cuts[0] - 1, cuts[-1] + 1]]):
        inside = (found.low is None or np.exp(shift) >= found.low) and (
            found.high is None or np.exp(shift) <= found.high
        )
        assert inside == (brute_force_stratified_p(STUDIES, shift) >= 0.05), shift


def test_one_study_pooled_is_that_studys_ratio():
    from tiny_mlp_bench.report.inference import pooled_ratio

    a, b = [1.0, 1.2, 1.1, 1.3, 1.25], [0.8, 0.9, 0.85, 0.95, 0.7]
    alone, pooled = ratio(a, b), pooled_ratio([(a, b)])
    assert (pooled.estimate, pooled.low, pooled.high, pooled.runs) == (
        alone.estimate,
        alone.low,
        alone.high,
        alone.runs,
    )
    assert pooled.p_value == pytest.approx(alone.p_value)
