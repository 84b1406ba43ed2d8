"""The question's own numbers (the asker's wall times and the ratios they imply) beside one machine's runs."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.question import ASKER_SECONDS, ASKERS_KERAS, TODAYS_KERAS, TORCH, askers_rung
from tiny_mlp_bench.report import inference
from tiny_mlp_bench.report.inference import Interval
from tiny_mlp_bench.report.ladder import RungResult

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
    statuses: tuple[str, ...]  # of the seed runs, what the table says where none completed
    result: Interval | None = None  # the completed runs' times to result, with their interval


@dataclass(frozen=True)
class AskersRatio:
    """A ratio the question implies: the asker's, and ours over the seed runs (None where a side has no run)."""

    numerator: str
    denominator: str
    asker: float
    ours: inference.Ratio | None


def question_rows(runs: pd.DataFrame, seeds: dict[str, RungResult]) -> tuple[QuestionRow, ...]:
    """``seeds``: each pair's original loop, where its runs completed."""
    rows = []
    for pair in QUESTION_PAIRS:
        framework = pair.split("-")[0]
        recorded = runs[(runs["pair"] == pair) & (runs["variant"] == askers_rung(framework))]
        if recorded.empty:
            continue
        seed, statuses = seeds.get(pair), tuple(sorted(set(recorded["status"])))
        timed, result = (seed.runs, seed.result) if seed else (0, None)
        rows.append(QuestionRow(pair, WHAT[framework], ASKER_SECONDS.get(pair), len(recorded), timed, statuses, result))
    return tuple(rows)


def ratios(seeds: dict[str, RungResult]) -> tuple[AskersRatio, ...]:
    """The RATIOS, the asker's beside ours from the seed runs' times to result per pair."""
    results = {pair: seed.result_values for pair, seed in seeds.items()}
    found = []
    for n, d in RATIOS:
        ours = inference.ratio(results[n], results[d]) if results.get(n) and results.get(d) else None
        found.append(AskersRatio(n, d, ASKER_SECONDS[n] / ASKER_SECONDS[d], ours))
    return tuple(found)
