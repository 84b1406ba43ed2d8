"""The report's numbers, computed once from run and sweep records: no wording and no formatting.

build_report() gives a Report: the tidy runs table (one row per run, written as Parquet) and, per
machine, the opening answer, the summaries, the variant ladders with their floors, the question's
table, the targets, the fixed costs and the crossover map. markdown.py and plots.py only format what
it holds. The ladders and the targets are computed in ladder.py, the floors and fixed costs in
fixed_costs.py, the answer in answer.py, the crossover map in crossover_map.py.

A *pair* is a framework and a device, such as torch-cpu; a *step* is always one optimiser step.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import pandas as pd

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.report import fixed_costs
from tiny_mlp_bench.report.answer import Answer, ArchivedGpu, answer
from tiny_mlp_bench.report.crossover_map import Crossover, Sweep, crossovers, sweep_frame, sweep_table
from tiny_mlp_bench.report.ladder import TARGETS, EpochFloor, Ladder, Rung, Target, epoch_floors, judge, ladders
from tiny_mlp_bench.timing import PHASES, steady_step_s

# The asker's wall times in seconds, from the question ("~17 s", "~11 s", "~9 s").
# The question does not say which device Keras used, so its 9 s stands beside both.
ASKER_SECONDS = {"torch-cuda": 17.0, "torch-cpu": 11.0, "keras-cpu": 9.0, "keras-cuda": 9.0}
# The asker's optimiser steps: 1000 epochs of 750 rows in batches of 64 (12 a epoch, the last short).
ASKER_STEPS = 1000 * 12
# Pairs in the question's order, then the NumPy reference and what a user might pick instead; others follow.
PAIR_ORDER = [
    *("torch-cuda", "torch-cpu", "keras-cpu", "keras-cuda", "keras_jax-cpu", "keras_jax-cuda"),
    *("keras_torch-cpu", "keras_torch-cuda", "numpy-cpu", "sklearn-cpu", "jax-cpu", "jax-cuda"),
]
# Ratios the question implies, as (numerator, denominator) pairs.
RATIOS = [("torch-cuda", "torch-cpu"), ("torch-cpu", "keras-cpu"), ("torch-cuda", "keras-cuda")]


@dataclass(frozen=True)
class QuestionRow:
    """One row of the question's table: the asker's seconds beside the seed runs' timing point."""

    pair: str
    asker_s: float
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


@dataclass(frozen=True)
class Machine:
    """Everything the report states about the runs of one machine."""

    label: str
    answer: Answer
    runs: pd.DataFrame
    summary: pd.DataFrame  # per pair and variant, completed runs only, pairs and rungs in order
    question: tuple[QuestionRow, ...]
    ratios: tuple[Ratio, ...]
    ladders: tuple[Ladder, ...]
    epoch_floors: tuple[EpochFloor, ...]
    floors: dict[str, fixed_costs.Floor]  # per device
    costs: dict[str, fixed_costs.FixedCosts]  # per device, what the probes measured
    probes_not_measured: tuple[fixed_costs.ProbeStatus, ...]
    initialisation: fixed_costs.Initialisation | None  # how often the asker's draw is dead at start
    dead_draws_skipped: int  # over the runs that recorded it
    runs_with_init: int  # runs that recorded how their weights were drawn
    targets: tuple[Target, ...]
    sweeps: tuple[Sweep, ...]
    sweep_table: pd.DataFrame  # hidden_units, batch_size, <device>_step_s, cpu_over_cuda
    crossovers: tuple[Crossover, ...]
    attention: pd.DataFrame  # runs that were skipped, failed or did not converge
    environment: dict[str, tuple]  # each fact's distinct values over the machine's runs
    load: dict[str, tuple[float, float]]  # each LOAD_COLUMNS reading's lowest and highest over the runs

    @property
    def noisy_rungs(self) -> list[Rung]:
        return [r for ladder in self.ladders for r in ladder.rungs if r.noisy]

    @property
    def failed_runs(self) -> list[str]:
        return list(self.attention.loc[self.attention["status"] == "failed", "run_id"])


@dataclass(frozen=True)
class Report:
    records: int
    parameters: dict  # of the first run by run_id: epochs, n_train, batch_size, learning_rate, hidden_units
    runs: pd.DataFrame  # every run, the Parquet table
    sweep_points: pd.DataFrame  # every measured sweep point: device, batch_size, hidden_units, step_s
    machines: tuple[Machine, ...]  # sorted by label
    # The archived study's GPU answer the report quotes where no machine here ran cuda (an input of
    # the report: the gpu_answer_archive config key), and whether one was looked for and none qualified.
    archived_gpu: ArchivedGpu | None = None
    no_archive_qualifies: bool = False


def machine_key(environment: dict) -> tuple:
    """A machine is its host and CPU. Not its GPU: a record names the GPU only where the run used it,
    so the cpu runs of a GPU host name none and still belong with its cuda runs."""
    return (environment["host"], environment["cpu_model"], environment["logical_cpus"])


def machine_labels(items: list[dict]) -> dict[tuple, str]:
    """A name per machine: its host name, with its hardware added where two machines share one
    (VMs and containers are often all called the same)."""
    gpus: dict[tuple, set] = {}
    for item in items:
        gpus.setdefault(machine_key(item["environment"]), set()).add(item["environment"]["gpu_name"])
    names = Counter(key[0] for key in gpus)

    def hardware(key: tuple) -> str:
        gpu = ", ".join(sorted(gpus[key] - {None})) or "no GPU"
        return f"{key[0]} ({key[1]}, {key[2]} logical CPUs, {gpu})"

    return {key: key[0] if names[key[0]] == 1 else hardware(key) for key in gpus}


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


def host_syncs(details: dict) -> float:
    """The host synchronisations a torch cuda run counted in its extra epoch; NaN where not counted."""
    found = details.get("host_syncs_per_epoch")
    return math.nan if found is None else float(found)


def run_row(record: dict, machine: str) -> dict:
    """One run's row: identity, phases, steady-state step time, first-block excess, quality, machine."""
    ident, timings, quality, env = record["identity"], record["timings"], record["quality"] or {}, record["environment"]
    blocks, steps = timings.get("block_s") or [], timings.get("steps_per_epoch")
    block_steps = [epochs * steps for epochs in timings.get("block_epochs") or []] if steps else []
    step_s = steady_step_s(blocks, block_steps) if blocks and len(block_steps) == len(blocks) else None
    params = record["parameters"]
    return {
        "run_id": ident["run_id"],
        "pair": f"{ident['framework']}-{ident['device']}",
        **{key: ident[key] for key in ("framework", "device", "variant", "repeat", "started_at")},
        **{key: record[key] for key in ("status", "reason")},
        **{key: quality.get(key) for key in ("converged", "test_mse", "train_r2")},
        "fit_predict_s": timings.get("fit_predict_s"),
        **{f"{phase}_s": timings["phases_s"].get(phase) for phase in PHASES},
        "first_block_s": blocks[0] if blocks else None,
        "step_s": step_s,
        # The first block's time beyond what its steps take in the steady state: warm-up, tracing, compilation.
        "first_block_excess_s": blocks[0] - block_steps[0] * step_s if step_s is not None else None,
        "blocks": len(blocks),
        "steps_per_epoch": steps,
        **{key: params[key] for key in ("epochs", "batch_size", "hidden_units", "threads")},
        "dead_draws_skipped": (params.get("init") or {}).get("dead_draws_skipped"),  # None before version 5
        "host_syncs_per_epoch": host_syncs(params["variant_details"]),
        **load_columns(record["load"]),
        "machine": machine,
        **{key: env[key] for key in ("host", "cpu_model", "logical_cpus", "gpu_name")},
    }


def coefficient_of_variation(values: pd.Series) -> float:
    """Sample standard deviation over mean; NaN with fewer than two values."""
    values = values.dropna()
    if len(values) < 2 or values.mean() == 0:
        return float("nan")
    return float(values.std(ddof=1) / values.mean())


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Median, spread and CV over the completed runs of each pair and variant, in ladder order."""
    done = runs[runs["status"] == "ok"].astype({"converged": bool})
    summary = (
        done.groupby(["pair", "framework", "device", "variant"], sort=True)
        .agg(
            runs=("run_id", "size"),
            converged=("converged", "sum"),
            median_s=("fit_predict_s", "median"),
            min_s=("fit_predict_s", "min"),
            max_s=("fit_predict_s", "max"),
            **{f"{phase}_s": (f"{phase}_s", "median") for phase in PHASES},
            step_s=("step_s", "median"),
            step_min_s=("step_s", "min"),
            step_max_s=("step_s", "max"),
            step_cv=("step_s", coefficient_of_variation),
            first_block_excess_s=("first_block_excess_s", "median"),
            host_syncs_per_epoch=("host_syncs_per_epoch", "median"),
            test_mse=("test_mse", "median"),
            train_r2=("train_r2", "median"),
            batch_size=("batch_size", "first"),
            hidden_units=("hidden_units", "first"),
            steps_per_epoch=("steps_per_epoch", "first"),
        )
        .reset_index()
    )
    order = [PAIR_ORDER.index(p) if p in PAIR_ORDER else len(PAIR_ORDER) for p in summary["pair"]]
    rung = [catalogue.ladder_position(f, v) for f, v in zip(summary["framework"], summary["variant"], strict=True)]
    summary = summary.assign(_order=order, _rung=rung).sort_values(["_order", "pair", "_rung", "variant"])
    return summary.drop(columns=["_order", "_rung"]).reset_index(drop=True)


def environment(records: list[dict]) -> dict[str, tuple]:
    """The distinct values each environment fact took over one machine's runs."""
    envs = [r["environment"] for r in records]
    container = [c and (c["engine"], c["image"], c["image_id"]) for c in (e["container"] for e in envs)]
    facts = {
        "cpu": [(e["cpu_model"], e["logical_cpus"]) for e in envs],
        "gpu": [e["gpu_name"] for e in envs],
        "python": [e["python"] for e in envs],
        "packages": [item for e in envs for item in e["versions"].items()],
        "cuda": [(k, v) for e in envs for k, v in e["cuda"].items() if v],
        "threads": [item for e in envs for item in e["threads"].items()],
        "thread_env": [tuple(e["thread_env"].items()) for e in envs],
        "container": container,
        **{key: [e[key] for e in envs] for key in ("slurm_job_id", "git_commit", "dataset_sha256")},
    }
    return {fact: tuple(sorted(set(values), key=repr)) for fact, values in facts.items()}


def question_rows(runs: pd.DataFrame, summary: pd.DataFrame) -> tuple[QuestionRow, ...]:
    seed = summary[summary["variant"] == "seed"].set_index("pair")
    rows = []
    for pair, asker in ASKER_SECONDS.items():
        recorded = runs[(runs["pair"] == pair) & (runs["variant"] == "seed")]
        if recorded.empty:
            continue
        statuses = tuple(sorted(set(recorded["status"])))
        if pair in seed.index:
            s = seed.loc[pair]
            numbers = (int(s.runs), int(s.converged), s.median_s, s.min_s, s.max_s)
        else:
            numbers = (0, 0, None, None, None)
        rows.append(QuestionRow(pair, asker, len(recorded), *numbers, statuses))
    return tuple(rows)


def machine(label: str, records: list[dict], sweeps: list[dict], probes: list[dict]) -> Machine:
    """Every number the report states about one machine's runs, sweeps and probes."""
    runs = pd.DataFrame([run_row(r, label) for r in records])
    runs = runs.sort_values(["framework", "device", "variant", "repeat"], kind="stable").reset_index(drop=True)
    summary = summarize(runs)
    costs = fixed_costs.fixed_costs(probes)
    floors = fixed_costs.floors(summary, costs)
    found = ladders(summary, floors)
    by_pair = {ladder.pair: ladder for ladder in found}
    question = question_rows(runs, summary)
    medians = {q.pair: q.median_s for q in question if q.timed}
    points = sweep_frame(sweeps)
    attention = runs[(runs["status"] != "ok") | runs["converged"].eq(False)]
    return Machine(
        label=label,
        answer=answer(found, summary, medians, costs, floors),
        runs=runs,
        summary=summary,
        question=question,
        ratios=tuple(
            Ratio(n, d, ASKER_SECONDS[n] / ASKER_SECONDS[d], medians.get(n), medians.get(d)) for n, d in RATIOS
        ),
        ladders=found,
        epoch_floors=epoch_floors(found),
        floors=floors,
        costs=costs,
        probes_not_measured=fixed_costs.not_measured(probes),
        initialisation=fixed_costs.initialisation(probes),
        dead_draws_skipped=int(runs["dead_draws_skipped"].sum()),
        runs_with_init=int(runs["dead_draws_skipped"].notna().sum()),
        targets=tuple(judge(spec, by_pair, costs) for spec in TARGETS),
        sweeps=tuple(Sweep(s["device"], s["status"], s["reason"]) for s in sweeps),
        sweep_table=sweep_table(points),
        crossovers=crossovers(points),
        attention=attention[["run_id", "status", "reason", "converged", "train_r2"]].reset_index(drop=True),
        environment=environment(records),
        load={column: (runs[column].min(), runs[column].max()) for column in LOAD_COLUMNS},
    )


def build_report(
    records: list[dict],
    sweeps: list[dict] = (),
    probes: list[dict] = (),
    *,
    archived_gpu: ArchivedGpu | None = None,
    no_archive_qualifies: bool = False,
) -> Report:
    """The whole report's numbers; the same records in any order give the same Report.

    Records from several machines are summarised per machine: their timings are never averaged together.
    """
    records = sorted(records, key=lambda r: r["identity"]["run_id"])
    sweeps = sorted(sweeps, key=lambda s: (repr(machine_key(s["environment"])), s["device"]))
    probes = sorted(probes, key=lambda p: (repr(machine_key(p["environment"])), p["framework"], p["device"]))
    labels = machine_labels([*records, *sweeps, *probes])
    by_machine: dict[str, tuple[list, list, list]] = {}
    for item in records:
        by_machine.setdefault(labels[machine_key(item["environment"])], ([], [], []))[0].append(item)
    for index, items in ((1, sweeps), (2, probes)):
        for item in items:
            # Runs from one machine go with every sweep and probe; runs from several, with their own machine's.
            label = next(iter(by_machine)) if len(by_machine) == 1 else labels[machine_key(item["environment"])]
            if label in by_machine:
                by_machine[label][index].append(item)
    machines = tuple(machine(label, *by_machine[label]) for label in sorted(by_machine))
    runs = pd.concat([m.runs for m in machines], ignore_index=True)
    runs = runs.sort_values(["framework", "device", "variant", "repeat", "machine"], kind="stable")
    keys = ("epochs", "n_train", "batch_size", "learning_rate", "hidden_units")
    return Report(
        records=len(records),
        parameters={key: records[0]["parameters"][key] for key in keys},
        runs=runs.reset_index(drop=True),
        sweep_points=sweep_frame(sweeps),
        machines=machines,
        archived_gpu=archived_gpu,
        no_archive_qualifies=no_archive_qualifies,
    )


def archived_gpu(archive: str, records: list[dict]) -> ArchivedGpu | None:
    """The GPU answer an archived study's torch ``seed`` records give, from the first host (by label)
    that completed them on both cuda and cpu; None where no host did."""
    seeds = [r for r in records if (r["identity"]["framework"], r["identity"]["variant"]) == ("torch", "seed")]
    if not seeds:
        return None
    for found in build_report(seeds).machines:
        gpu = found.answer.gpu
        if gpu.cuda_s is None or gpu.cpu_s is None:
            continue
        quoted = found.runs[found.runs["status"] == "ok"]
        return ArchivedGpu(
            archive=archive,
            host=found.label,
            gpu=", ".join(name for name in found.environment["gpu"] if name),
            date=str(quoted["started_at"].min())[:10],
            cuda_s=float(gpu.cuda_s),
            cpu_s=float(gpu.cpu_s),
            cuda_step_s=gpu.cuda_step_s,
            cpu_step_s=gpu.cpu_step_s,
            runs=len(quoted),
        )
    return None
