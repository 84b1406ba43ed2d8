"""The tidy runs table (a row per run) and its summary per pair and rung, in the report's order."""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.report.inference import Interval, rung_interval
from tiny_mlp_bench.report.question_table import QUESTION_PAIRS
from tiny_mlp_bench.timing import PHASES


@functools.cache
def pair_order() -> tuple[str, ...]:
    """The question's pairs, then the catalogue's on its first rung's devices; others (numpy on cuda) follow. Read
    from the rungs when a report is made, never at import."""
    first_rungs = (registry.ladder(framework.name)[0] for framework in catalogue.FRAMEWORKS)
    pairs = (catalogue.pair_name(rung.framework, device) for rung in first_rungs for device in rung.devices)
    return (*QUESTION_PAIRS, *(pair for pair in pairs if pair not in QUESTION_PAIRS))


# Readings of what else the machine was doing, per run (record version 4 on; NaN before).
LOAD_COLUMNS = (
    "load_1min_before",
    "load_1min_after",
    "cpu_mhz_before",
    "cpu_mhz_after",
    "peak_host_memory_mb",
    "peak_gpu_memory_mb",
)


def load_columns(load: dict | None) -> dict:
    """A run's load block as flat columns, None where it was not read."""
    if load is None:
        return dict.fromkeys(LOAD_COLUMNS)

    def one_minute(snapshot: dict) -> float | None:
        return snapshot["load_average"][0] if snapshot["load_average"] else None

    return {
        "load_1min_before": one_minute(load["before"]),
        "load_1min_after": one_minute(load["after"]),
        "cpu_mhz_before": load["before"]["cpu_mhz"],
        "cpu_mhz_after": load["after"]["cpu_mhz"],
        "peak_host_memory_mb": load["peak_host_memory_mb"],
        "peak_gpu_memory_mb": load["peak_gpu_memory_mb"],
    }


def detail_number(details: dict, key: str) -> float:
    """A number a run measured after timing, kept in its `variant_details`; NaN where it did not."""
    found = details.get(key)
    return math.nan if found is None else float(found)


# A block is slow where its canary took over SLOW_CANARY x the study's reference (REFERENCE_CANARY_QUANTILE) canary:
# the machine's two speeds are ~1.7x apart, and 1.25 lies below their middle on a log scale (1.30).
SLOW_CANARY = 1.25
REFERENCE_CANARY_QUANTILE = 0.05
# The code's own speed: this quantile of a run's window blocks as they were timed (docs/method.md, "The per-step
# window"); the canary never scales them: blocks slow far less than the canary beside them.
STEP_QUANTILE = 0.25


def per_step(blocks: list[float], epochs: list[int], steps_per_epoch: int | None) -> np.ndarray:
    """Each block as seconds per optimiser step."""
    if not steps_per_epoch or len(blocks) != len(epochs):
        return np.empty(0)
    return np.asarray(blocks, dtype=float) / (np.asarray(epochs, dtype=float) * steps_per_epoch)


def window_blocks(timings: dict) -> tuple[np.ndarray, np.ndarray | None]:
    """A run's window blocks in s per step, and the canary after each (None: a version-7 window, warm-up dropped)."""
    window = timings.get("steady")
    if not window:
        return np.empty(0), None
    steps = per_step(window["block_s"], window["block_epochs"], timings.get("steps_per_epoch"))
    if "canary_s" not in window:
        return steps[1:], None
    return steps, np.asarray(window["canary_s"], dtype=float)


def reference_canary(records: list[dict]) -> float | None:
    """A study's reference canary: a low quantile of every canary its completed runs timed (None: none did).

    Taken over one study's own records, so a run's slow share never depends on what is rendered beside it."""
    found = [window_blocks(r["timings"])[1] for r in records if r["status"] == "ok"]
    canaries = np.concatenate([c for c in found if c is not None and len(c)] or [np.empty(0)])
    return float(np.quantile(canaries, REFERENCE_CANARY_QUANTILE)) if len(canaries) else None


def slow_blocks(canaries: np.ndarray, reference: float) -> np.ndarray:
    return canaries > SLOW_CANARY * reference


def step_estimates(timings: dict, reference: float | None = None) -> dict:
    """A run's step_s, step_median_s, slow_share and step_mean_s (docs/method.md, "The per-step window")."""
    steps, blocks = timings.get("steps_per_epoch"), timings.get("block_s") or []
    block_epochs = timings.get("block_epochs") or []
    later_steps = sum(block_epochs[1:]) * steps if steps and len(block_epochs) == len(blocks) > 1 else 0
    window, canaries = window_blocks(timings)
    if not len(window):
        window, canaries = per_step(blocks, block_epochs, steps)[1:], None
    known = canaries is not None and reference is not None and len(canaries) == len(window) and len(window)
    return {
        "step_s": float(np.quantile(window, STEP_QUANTILE)) if len(window) else None,
        "step_median_s": float(np.median(window)) if len(window) else None,
        "slow_share": float(np.mean(slow_blocks(canaries, reference))) if known else None,
        "step_mean_s": sum(blocks[1:]) / later_steps if later_steps else None,
    }


def window_cpus(timings: dict) -> float | None:
    window = timings.get("steady") or {}
    cpu, wall = window.get("block_cpu_s"), window.get("block_s")
    return sum(cpu) / sum(wall) if cpu and wall and sum(wall) > 0 else None


def run_row(record: dict, machine: str, reference: float | None = None) -> dict:
    """One run's row: identity, phases, per-step times, quality, machine; ``reference``: its study's canary."""
    ident, timings, quality, env = record["identity"], record["timings"], record["quality"] or {}, record["environment"]
    blocks, steps = timings.get("block_s") or [], timings.get("steps_per_epoch")
    block_steps = [epochs * steps for epochs in timings.get("block_epochs") or []] if steps else []
    estimates = step_estimates(timings, reference)
    mean_s = estimates["step_mean_s"]
    params = record["parameters"]
    return {
        "run_id": ident["run_id"],
        "pair": f"{ident['framework']}-{ident['device']}",
        **{key: ident[key] for key in ("framework", "device", "variant", "repeat", "started_at")},
        **{key: record[key] for key in ("status", "reason")},
        "compile_cache": record["method"]["compile_cache"],
        **{key: quality.get(key) for key in ("converged", "test_mse", "train_r2")},
        "fit_predict_s": timings.get("fit_predict_s"),
        **{f"{phase}_s": timings["phases_s"].get(phase) for phase in PHASES},
        "first_block_s": blocks[0] if blocks else None,
        # Keras: the longest pause after the last epoch of the window's passes (each a fit of its own).
        "window_fit_end_s": max((timings.get("steady") or {}).get("fit_end_s") or [math.nan]),
        **estimates,
        # The first block's time beyond what its steps take at the mean pace: warm-up, tracing, compilation.
        "first_block_excess_s": blocks[0] - block_steps[0] * mean_s if mean_s is not None and block_steps else None,
        "blocks": len(blocks),
        "steps_per_epoch": steps,
        **{key: params[key] for key in ("epochs", "batch_size", "hidden_units", "threads")},
        "dead_draws_skipped": (params.get("init") or {}).get("dead_draws_skipped"),  # None before version 5
        # Measured after timing: host syncs in an extra epoch (torch cuda); fused_epoch's call and kernel (torch cpu).
        **{
            key: detail_number(params["variant_details"], key)
            for key in ("host_syncs_per_epoch", "epoch_call_us", "epoch_kernel_us")
        },
        **load_columns(record["load"]),
        # CPUs the per-step window kept busy: its blocks' process CPU time over their wall time (1: one thread).
        "window_cpus": window_cpus(timings),
        # Beside a busy core: the share of its core the busy loop got (None idle, and before it was kept).
        "neighbour_share": (record.get("neighbour") or {}).get("cpu_share"),
        "machine": machine,
        **{key: env[key] for key in ("host", "cpu_model", "logical_cpus", "gpu_name")},
    }


RUNG = ["pair", "framework", "device", "variant"]


def first_compilations(done: pd.DataFrame) -> pd.Series:
    """Runs that compiled cold in a rung whose others ran warm: never pooled, as their time holds a compilation."""
    warm = done["compile_cache"] == "warm"
    return warm.groupby([done[key] for key in RUNG]).transform("any") & ~warm


def interval(values: pd.Series) -> Interval | None:
    """The runs' values' interval (inference.rung_interval); None where no run measured it."""
    found = values.dropna().astype(float)
    return rung_interval(found) if len(found) else None


def values(column: pd.Series) -> tuple[float, ...]:
    return tuple(float(v) for v in column.dropna())


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Median, spread and CV over the completed runs of each pair and rung, in ladder order."""
    done = runs[runs["status"] == "ok"].astype({"converged": bool})
    cold = first_compilations(done)
    result_runs = (
        done[~cold]
        .groupby(RUNG, sort=True)
        .agg(
            median_s=("fit_predict_s", "median"),
            min_s=("fit_predict_s", "min"),
            max_s=("fit_predict_s", "max"),
            **{f"{phase}_s": (f"{phase}_s", "median") for phase in PHASES},
            first_block_excess_s=("first_block_excess_s", "median"),
            result=("fit_predict_s", interval),
            result_values=("fit_predict_s", values),
        )
    )
    cold_runs = (
        done[cold].groupby(RUNG).agg(cold_compile_runs=("run_id", "size"), cold_compile_s=("fit_predict_s", "median"))
    )
    summary = (
        done.groupby(RUNG, sort=True)
        .agg(
            runs=("run_id", "size"),
            converged=("converged", "sum"),
            step_s=("step_s", "median"),
            step_median_s=("step_median_s", "median"),
            slow_share=("slow_share", "mean"),
            step_mean_s=("step_mean_s", "median"),
            step_min_s=("step_s", "min"),
            step_max_s=("step_s", "max"),
            step=("step_s", interval),
            step_values=("step_s", values),
            host_syncs_per_epoch=("host_syncs_per_epoch", "median"),
            test_mse=("test_mse", "median"),
            train_r2=("train_r2", "median"),
            batch_size=("batch_size", "first"),
            hidden_units=("hidden_units", "first"),
            steps_per_epoch=("steps_per_epoch", "first"),
        )
        .join(result_runs)
        .join(cold_runs)
        .fillna({"cold_compile_runs": 0})
        .astype({"cold_compile_runs": int})
        .reset_index()
    )
    known = pair_order()
    order = [known.index(p) if p in known else len(known) for p in summary["pair"]]
    rung = [registry.ladder_position(f, v) for f, v in zip(summary["framework"], summary["variant"], strict=True)]
    summary = summary.assign(_order=order, _rung=rung).sort_values(["_order", "pair", "_rung", "variant"])
    return summary.drop(columns=["_order", "_rung"]).reset_index(drop=True)
