"""The question's own numbers beside ours: the asker's wall times, the ratios they imply, and the
table that sets each of them against the timing point of one machine's runs of the asker's loops.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.question import ASKER_SECONDS, ASKERS_KERAS, TODAYS_KERAS, TORCH, askers_rung

DEVICES = catalogue.DEVICES
# Keras 3 on TensorFlow, what tf.keras is today: rows of their own, with no asker's number beside them.
QUESTION_PAIRS = (*ASKER_SECONDS, *(catalogue.pair_name(TODAYS_KERAS, device) for device in DEVICES))
# What each framework's rows of the table are.
WHAT = {
    TORCH: "the asker's torch loop",
    ASKERS_KERAS: f"{catalogue.framework(ASKERS_KERAS).label}: the asker's tf.keras",
    TODAYS_KERAS: f"{catalogue.framework(TODAYS_KERAS).label}: today's tf.keras",
}
# Ratios the question implies, as (numerator, denominator) pairs; the asker's Keras is Keras 2.
RATIOS = [
    (catalogue.pair_name(TORCH, "cuda"), catalogue.pair_name(TORCH, "cpu")),
    (catalogue.pair_name(TORCH, "cpu"), catalogue.pair_name(ASKERS_KERAS, "cpu")),
    (catalogue.pair_name(TORCH, "cuda"), catalogue.pair_name(ASKERS_KERAS, "cuda")),
]


@dataclass(frozen=True)
class QuestionRow:
    """One row of the question's table: the asker's seconds (None for today's Keras) beside the seed
    runs' timing point."""

    pair: str
    what: str
    asker_s: float | None
    runs: int  # seed runs recorded
    timed: int  # of them completed
    converged: int
    median_s: float | None
    min_s: float | None
    max_s: float | None
    statuses: tuple[str, ...]  # of the seed runs, when none completed


@dataclass(frozen=True)
class Ratio:
    """A ratio of wall times the question implies, the asker's and ours (seed medians)."""

    numerator: str
    denominator: str
    asker: float
    numerator_s: float | None
    denominator_s: float | None

    @property
    def ours(self) -> float | None:
        if self.numerator_s is None or self.denominator_s is None:
            return None
        return self.numerator_s / self.denominator_s

    @property
    def factor(self) -> float | None:
        """How many times the slower of the two took the faster one's time."""
        ours = self.ours
        return None if ours is None else max(ours, 1 / ours)

    @property
    def missing(self) -> list[str]:
        """The pairs with no completed seed run."""
        return [p for p, s in ((self.numerator, self.numerator_s), (self.denominator, self.denominator_s)) if s is None]


def question_rows(runs: pd.DataFrame, summary: pd.DataFrame) -> tuple[QuestionRow, ...]:
    rows = []
    for pair in QUESTION_PAIRS:
        framework = pair.split("-")[0]
        askers = askers_rung(framework)
        recorded = runs[(runs["pair"] == pair) & (runs["variant"] == askers)]
        if recorded.empty:
            continue
        statuses = tuple(sorted(set(recorded["status"])))
        done = summary[(summary["pair"] == pair) & (summary["variant"] == askers)]
        if len(done):
            s = done.iloc[0]
            numbers = (int(s.runs), int(s.converged), s.median_s, s.min_s, s.max_s)
        else:
            numbers = (0, 0, None, None, None)
        rows.append(QuestionRow(pair, WHAT[framework], ASKER_SECONDS.get(pair), len(recorded), *numbers, statuses))
    return tuple(rows)


def ratios(medians: dict[str, float]) -> tuple[Ratio, ...]:
    """The RATIOS, the asker's beside ours from the seed medians per pair (absent where none completed)."""
    return tuple(Ratio(n, d, ASKER_SECONDS[n] / ASKER_SECONDS[d], medians.get(n), medians.get(d)) for n, d in RATIOS)
