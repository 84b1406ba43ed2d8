"""The question's own numbers beside ours: the asker's wall times, the ratios they imply, and the
table that sets each of them against the seed runs' timing point of one machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

# The asker's wall times in seconds, from the question ("~17 s", "~11 s", "~9 s"). The asker's
# tf.keras was Keras 2 (the question is from 2020), the tf_keras framework here. The question does
# not say which device Keras used, so its 9 s stands beside both.
ASKER_SECONDS = {"torch-cuda": 17.0, "torch-cpu": 11.0, "tf_keras-cpu": 9.0, "tf_keras-cuda": 9.0}
# Keras 3 on TensorFlow, what tf.keras is today: rows of their own, with no asker's number beside them.
TODAYS_KERAS = ("keras-cpu", "keras-cuda")
QUESTION_PAIRS = (*ASKER_SECONDS, *TODAYS_KERAS)
# What each framework's rows of the table are.
WHAT = {
    "torch": "the asker's torch loop",
    "tf_keras": "Keras 2: the asker's tf.keras",
    "keras": "Keras 3 on TensorFlow: today's tf.keras",
}
# The asker's optimiser steps: 1000 epochs of 750 rows in batches of 64 (12 a epoch, the last short).
ASKER_STEPS = 1000 * 12
# Ratios the question implies, as (numerator, denominator) pairs; the asker's Keras is Keras 2.
RATIOS = [("torch-cuda", "torch-cpu"), ("torch-cpu", "tf_keras-cpu"), ("torch-cuda", "tf_keras-cuda")]


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
    seed = summary[summary["variant"] == "seed"].set_index("pair")
    rows = []
    for pair in QUESTION_PAIRS:
        recorded = runs[(runs["pair"] == pair) & (runs["variant"] == "seed")]
        if recorded.empty:
            continue
        statuses = tuple(sorted(set(recorded["status"])))
        if pair in seed.index:
            s = seed.loc[pair]
            numbers = (int(s.runs), int(s.converged), s.median_s, s.min_s, s.max_s)
        else:
            numbers = (0, 0, None, None, None)
        what = WHAT[pair.split("-")[0]]
        rows.append(QuestionRow(pair, what, ASKER_SECONDS.get(pair), len(recorded), *numbers, statuses))
    return tuple(rows)


def ratios(medians: dict[str, float]) -> tuple[Ratio, ...]:
    """The RATIOS, the asker's beside ours from the seed medians per pair (absent where none completed)."""
    return tuple(Ratio(n, d, ASKER_SECONDS[n] / ASKER_SECONDS[d], medians.get(n), medians.get(d)) for n, d in RATIOS)
