"""What a study's runs support: a rung's interval, a ratio's interval and the exact rank test."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
SIGNIFICANCE = 0.05  # the exact rank test's level for a claim that one is faster than the other


@dataclass(frozen=True)
class Interval:
    """A rung's value over its runs: the geometric mean and, from two runs on, its interval."""

    estimate: float
    low: float | None
    high: float | None
    runs: int


@dataclass(frozen=True)
class Ratio:
    """``a`` over ``b``: Hodges-Lehmann estimate, interval (None on a side too few runs bound), exact test's p, runs."""

    estimate: float
    low: float | None
    high: float | None
    p_value: float
    runs: tuple[int, int]

    @property
    def resolved(self) -> bool:
        """Whether one side is shown faster: the interval excludes 1 and the exact test passes at SIGNIFICANCE."""
        excludes_one = (self.low is not None and self.low > 1) or (self.high is not None and self.high < 1)
        return excludes_one and self.p_value < SIGNIFICANCE


def positive(values, what: str) -> np.ndarray:
    found = np.asarray(list(values), dtype=float)
    if not len(found) or not np.all(np.isfinite(found)) or np.any(found <= 0):
        raise ValueError(f"{what}: runs' values must be finite and positive, not {found.tolist()}")
    return found


def rung_interval(values, confidence: float = CONFIDENCE) -> Interval:
    """The geometric mean of the runs' values and the t-interval of their logs, back on their scale."""
    logs = np.log(positive(values, "rung_interval"))
    centre = float(np.exp(logs.mean()))
    if len(logs) < 2:
        return Interval(centre, None, None, len(logs))
    if np.ptp(logs) == 0:  # every run gave the same value: no spread to widen it
        return Interval(centre, centre, centre, len(logs))
    low, high = stats.t.interval(confidence, len(logs) - 1, loc=logs.mean(), scale=stats.sem(logs))
    return Interval(centre, float(np.exp(low)), float(np.exp(high)), len(logs))


def exact_test(a, b) -> float:
    return float(stats.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)


def share_test(happened_a: int, runs_a: int, happened_b: int, runs_b: int) -> float:
    """Two-sided Fisher's exact p: whether something happened in a different share of one rung's runs than another's."""
    table = [[happened_a, runs_a - happened_a], [happened_b, runs_b - happened_b]]
    return float(stats.fisher_exact(table).pvalue)


def ratio(a, b, confidence: float = CONFIDENCE) -> Ratio:
    """``a``'s runs over ``b``'s: Hodges-Lehmann on logs, the interval every shift the exact test does not reject."""
    log_a, log_b = np.log(positive(a, "ratio: a")), np.log(positive(b, "ratio: b"))
    pairings = np.sort(np.subtract.outer(log_a, log_b).ravel())
    estimate = float(np.exp(np.median(pairings)))
    p_value = exact_test(log_a, log_b)
    cuts = np.unique(pairings)
    probes = np.empty(2 * len(cuts) + 1)  # gap, pairing, gap, ..., pairing, gap
    probes[0::2] = np.concatenate(([cuts[0] - 1], (cuts[:-1] + cuts[1:]) / 2, [cuts[-1] + 1]))
    probes[1::2] = cuts
    accepted = [exact_test(log_a - shift, log_b) >= 1 - confidence for shift in probes]
    first, last = accepted.index(True), len(accepted) - 1 - accepted[::-1].index(True)
    # Probe j is pairing j // 2 where j is odd; an accepted gap is bounded by the pairing beside it.
    low = None if first == 0 else float(np.exp(cuts[(first - 1) // 2]))
    high = None if last == len(probes) - 1 else float(np.exp(cuts[last // 2]))
    return Ratio(estimate, low, high, p_value, (len(log_a), len(log_b)))


def holm(pairs, confidence: float = CONFIDENCE) -> list[Ratio]:
    """``ratio`` of each (a, b) in ``pairs``, a family of comparisons corrected by Holm's step-down, so that the chance
    of calling any of them resolved by chance stays at 1 - ``confidence``: each p-value adjusted (a ratio is resolved
    where its adjusted p is below SIGNIFICANCE), each interval at the level its rank is tested at."""
    alone = [exact_test(a, b) for a, b in pairs]  # each p-value uncorrected; ratio below bounds each interval
    order = sorted(range(len(alone)), key=lambda i: alone[i])
    corrected: list[Ratio | None] = [None] * len(alone)
    adjusted = 0.0
    for rank, i in enumerate(order):
        left = len(alone) - rank  # the comparisons not yet resolved, this one among them
        adjusted = max(adjusted, min(1.0, left * alone[i]))  # step-down: never below an earlier one's
        a, b = pairs[i]
        corrected[i] = replace(ratio(a, b, 1 - (1 - confidence) / left), p_value=adjusted)
    return corrected


def rank_sum_null(m: int, n: int) -> np.ndarray:
    """The exact null distribution of the Mann-Whitney U of ``m`` runs against ``n`` (pairings the first side wins):
    P(U = u) for u = 0 .. m n."""
    counts = np.zeros((m + 1, n + 1, m * n + 1))
    counts[0, :, 0] = counts[:, 0, 0] = 1.0
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            # The largest of the i + j values is a run of the first side (it wins all j pairings) or of the second.
            counts[i, j, j:] += counts[i - 1, j, : m * n + 1 - j]
            counts[i, j] += counts[i, j - 1]
    return counts[m, n] / counts[m, n].sum()


def won(log_a: np.ndarray, log_b: np.ndarray) -> float:
    """The pairings ``a`` wins, a tie as half."""
    differences = np.subtract.outer(log_a, log_b)
    return float(np.sum(differences > 0) + 0.5 * np.sum(differences == 0))


def pooled_ratio(studies, confidence: float = CONFIDENCE) -> Ratio:
    """``a`` over ``b`` over several studies, each a block: ``studies`` holds each study's (a's runs, b's runs).

    The stratified Hodges-Lehmann estimate, the median of every study's own pairings; its interval every shift
    that the stratified exact test does not reject: the pairings won summed over studies, against the sum of each
    study's exact null distribution (runs are exchanged only within their study). One study gives ``ratio``'s."""
    logs = [(np.log(positive(a, "pooled_ratio: a")), np.log(positive(b, "pooled_ratio: b"))) for a, b in studies]
    if not logs:
        raise ValueError("pooled_ratio: no study")
    null = np.ones(1)
    for log_a, log_b in logs:
        null = np.convolve(null, rank_sum_null(len(log_a), len(log_b)))
    below = np.cumsum(null)  # P(W <= w) at w = 0, 1, ..

    def p_value(shift: float) -> float:
        total = sum(won(log_a - shift, log_b) for log_a, log_b in logs)
        lower = below[int(np.floor(total))]  # P(W <= total)
        upper = 1.0 - (below[int(np.ceil(total)) - 1] if total >= 1 else 0.0)  # P(W >= total)
        return float(min(1.0, 2 * min(lower, upper)))

    pairings = np.sort(np.concatenate([np.subtract.outer(log_a, log_b).ravel() for log_a, log_b in logs]))
    cuts = np.unique(pairings)
    probes = np.empty(2 * len(cuts) + 1)  # gap, pairing, gap, ..., pairing, gap
    probes[0::2] = np.concatenate(([cuts[0] - 1], (cuts[:-1] + cuts[1:]) / 2, [cuts[-1] + 1]))
    probes[1::2] = cuts
    accepted = [p_value(shift) >= 1 - confidence for shift in probes]
    first, last = accepted.index(True), len(accepted) - 1 - accepted[::-1].index(True)
    low = None if first == 0 else float(np.exp(cuts[(first - 1) // 2]))
    high = None if last == len(probes) - 1 else float(np.exp(cuts[last // 2]))
    runs = (sum(len(a) for a, _ in logs), sum(len(b) for _, b in logs))
    return Ratio(float(np.exp(np.median(pairings))), low, high, p_value(0.0), runs)
