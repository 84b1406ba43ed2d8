"""The question's own numbers (the asker's wall times and the ratios they imply) beside one machine's runs."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.question import ASKER_SECONDS, ASKERS_KERAS, TODAYS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report import inference
from tiny_mlp_bench.report.inference import Interval

DEVICES = catalogue.DEVICES
# Keras 3 on TensorFlow, what tf.keras is today: rows of their own, with no asker's number beside them.
QUESTION_PAIRS = (*ASKER_SECONDS, *(catalogue.pair_name(TODAYS_KERAS, device) for device in DEVICES))
WHAT = {
    TORCH: "the original torch loop",
    ASKERS_KERAS: f"{catalogue.framework(ASKERS_KERAS).label}: the original tf.keras",
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
    """One row of the question's table: the asker's seconds (None for today's Keras) beside the seed runs'."""

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
    result: Interval | None = None  # the completed runs' times to result, with their interval


@dataclass(frozen=True)
class AskersRatio:
    """A ratio the question implies: the asker's, and ours over the seed runs (None where a side has no run)."""

    numerator: str
    denominator: str
    asker: float
    ours: inference.Ratio | None


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
            numbers = (int(s.runs), int(s.converged), s.median_s, s.min_s, s.max_s, statuses, s.result)
        else:
            numbers = (0, 0, None, None, None, statuses, None)
        rows.append(QuestionRow(pair, WHAT[framework], ASKER_SECONDS.get(pair), len(recorded), *numbers))
    return tuple(rows)


def ratios(results: dict[str, tuple[float, ...]]) -> tuple[AskersRatio, ...]:
    """The RATIOS, the asker's beside ours from the seed runs' times to result per pair."""
    found = []
    for n, d in RATIOS:
        ours = inference.ratio(results[n], results[d]) if results.get(n) and results.get(d) else None
        found.append(AskersRatio(n, d, ASKER_SECONDS[n] / ASKER_SECONDS[d], ours))
    return tuple(found)
