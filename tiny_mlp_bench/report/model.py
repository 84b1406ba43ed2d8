"""The report's numbers, computed once from run and sweep records: no wording and no formatting."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.jobs.identity import BUSY, IDLE
from tiny_mlp_bench.report import across, fixed_costs
from tiny_mlp_bench.report.answer import Answer, ArchivedGpu, answer
from tiny_mlp_bench.report.busy_core import (
    BESIDE_BUSY_CORE,
    ArchivedBusy,
    BusyCore,
    busy_core,
    idle_label,
    newest_of_kind,
)
from tiny_mlp_bench.report.crossover_map import Crossover, Sweep, crossovers, sweep_frame, sweep_table
from tiny_mlp_bench.report.era import EraStudy, era_study, stack_label
from tiny_mlp_bench.report.ladder import EpochFloor, Ladder, RungResult, epoch_floors, ladders
from tiny_mlp_bench.report.loop_parts import LoopParts, loop_parts
from tiny_mlp_bench.report.machines import environment, machine_key, machine_labels
from tiny_mlp_bench.report.question_table import AskersRatio, QuestionRow, question_rows, ratios
from tiny_mlp_bench.report.runs import LOAD_COLUMNS, reference_canary, run_row, summarize
from tiny_mlp_bench.report.views import HeadlineRow, headline, views
from tiny_mlp_bench.stacks import TODAY


@dataclass(frozen=True)
class Machine:
    """Everything the report states about the runs of one machine."""

    label: str
    answer: Answer
    runs: pd.DataFrame
    summary: pd.DataFrame  # per pair and rung, completed runs only, pairs and rungs in order
    question: tuple[QuestionRow, ...]
    ratios: tuple[AskersRatio, ...]
    ladders: tuple[Ladder, ...]
    epoch_floors: tuple[EpochFloor, ...]
    floors: dict[str, fixed_costs.Floor]
    costs: dict[str, fixed_costs.FixedCosts]  # per device, what the probes measured
    loop_parts: dict[str, LoopParts]  # per device, the asker's step as the `parts` rung read it
    probes_not_measured: tuple[fixed_costs.ProbeStatus, ...]
    initialisation: fixed_costs.Initialisation | None  # how often the asker's draw is dead at start
    dead_draws_skipped: int  # over the runs that recorded it
    sweeps: tuple[Sweep, ...]
    sweep_table: pd.DataFrame  # hidden_units, batch_size, <device>_step_s, cpu_over_cuda
    crossovers: tuple[Crossover, ...]
    attention: pd.DataFrame  # runs that were skipped, failed or did not converge
    environment: dict[str, tuple]  # each fact's distinct values over the machine's runs
    load: dict[str, tuple[float, float]]  # each LOAD_COLUMNS reading's lowest and highest over the runs
    headline: tuple[HeadlineRow, ...] = ()
    stack: str = TODAY  # the software its runs trained on (stacks.py): a stack other than today's is a page of its own

    @property
    def views(self) -> tuple[RungResult, ...]:
        """Every completed rung, device by device, fastest to a result first."""
        return views(self.ladders)

    @property
    def host(self) -> str:
        """Its label less its stack's."""
        return self.label.removesuffix(stack_label("", self.stack))

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
    # The archived GPU answer quoted where no machine here ran cuda (config gpu_answer_archive); or that none qualified.
    archived_gpu: ArchivedGpu | None = None
    no_archive_qualifies: bool = False
    busy: BusyCore | None = None  # a host's runs idle and beside one busy core, where any was busy
    era: EraStudy | None = None  # a host's runs on several stacks, where any ran on another than today's
    # Where no run here was busy and the config asked (busy_answer_archive): per machine (label), the newest archived
    # busy-core study of its kind, where one is.
    busy_quote_asked: bool = False
    archived_busy: dict[str, ArchivedBusy] = field(default_factory=dict)

    @property
    def release_sweep(self) -> EraStudy | None:
        """Its stack study where that is a release sweep (Keras 2 on TensorFlow releases); None otherwise."""
        return self.era if self.era and self.era.releases else None


def machine(
    label: str, records: list[dict], sweeps: list[dict], probes: list[dict], canary: float | None = None
) -> Machine:
    """One machine's numbers; ``canary``: its study's reference canary (by default its own runs')."""
    canary = reference_canary(records) if canary is None else canary
    runs = pd.DataFrame([run_row(r, label, canary) for r in records])
    runs = runs.sort_values(["framework", "device", "variant", "repeat"], kind="stable").reset_index(drop=True)
    summary = summarize(runs)
    costs = fixed_costs.fixed_costs(probes, runs)
    floors = fixed_costs.floors(summary, costs)
    found = ladders(summary, floors)
    seeds = {ladder.pair: seed for ladder in found if (seed := ladder.with_role(Role.ASKERS))}
    points = sweep_frame(sweeps)
    attention = runs[(runs["status"] != "ok") | runs["converged"].eq(False)]
    both_views = views(found)
    said = answer(found, costs, floors, runs, *verdicts(label, records, summary))
    return Machine(
        label=label,
        answer=said,
        runs=runs,
        summary=summary,
        question=question_rows(runs, seeds),
        ratios=ratios(seeds),
        ladders=found,
        epoch_floors=epoch_floors(found),
        floors=floors,
        costs=costs,
        loop_parts=loop_parts(records, both_views, said.aa_control.step if said.aa_control else None, probes),
        probes_not_measured=fixed_costs.not_measured(probes),
        initialisation=fixed_costs.initialisation(probes),
        dead_draws_skipped=int(runs["dead_draws_skipped"].sum()),
        sweeps=tuple(Sweep(s["device"], s["status"], s["reason"]) for s in sweeps),
        sweep_table=sweep_table(points),
        crossovers=crossovers(points),
        attention=attention[["run_id", "status", "reason", "converged", "train_r2"]].reset_index(drop=True),
        environment=environment(records),
        load={column: (runs[column].min(), runs[column].max()) for column in LOAD_COLUMNS},
        headline=headline(both_views),
        stack=records[0]["identity"]["stack"],
    )


def verdicts(label: str, records: list[dict], summary: pd.DataFrame) -> tuple:
    """The machine's GPU verdict and Keras 2 against torch, to a result, as across.CLAIMS define them: the very
    computation the README pools (beside a busy core, the busy-core study's claim)."""
    condition = IDLE if label == idle_label(label) else BUSY
    sides = across.claim_sides({condition: summary}, across.gpu_question_runs(records))
    keras = across.KERAS_RESULT if condition == IDLE else across.BUSY_KERAS_RESULT
    return across.claim_ratio(sides[across.GPU_RESULT]), across.claim_ratio(sides[keras])


def build_report(
    records: list[dict],
    sweeps: list[dict] = (),
    probes: list[dict] = (),
    *,
    archived_gpu: ArchivedGpu | None = None,
    no_archive_qualifies: bool = False,
    busy_archives: tuple[ArchivedBusy, ...] | None = None,
) -> Report:
    """The whole report's numbers; the same records in any order give the same Report. ``busy_archives``: the
    archived busy-core studies offered to quote, None where the config asked for none."""
    records = sorted(records, key=lambda r: r["identity"]["run_id"])
    sweeps = sorted(sweeps, key=lambda s: (repr(machine_key(s["environment"])), s["device"]))
    probes = sorted(probes, key=lambda p: (repr(machine_key(p["environment"])), p["framework"], p["device"]))
    labels = machine_labels([*records, *sweeps, *probes])
    by_machine: dict[str, tuple[list, list, list]] = {}
    for item in records:
        by_machine.setdefault(condition_label(labels, item), ([], [], []))[0].append(item)
    for index, items in ((1, sweeps), (2, probes)):
        for item in items:
            # Runs from one machine go with every sweep and probe; runs from several, with their own machine's.
            label = next(iter(by_machine)) if len(by_machine) == 1 else labels[machine_key(item["environment"])]
            if label in by_machine:
                by_machine[label][index].append(item)
    # A machine's runs beside a busy core are a machine of their own, whose slow blocks are judged by its idle
    # runs' canary: the busy core slows the canary too.
    canaries = {
        label: reference_canary(runs) for label, (runs, _, _) in by_machine.items() if label == idle_label(label)
    }
    machines = tuple(
        machine(label, *by_machine[label], canaries.get(idle_label(label))) for label in sorted(by_machine)
    )
    runs = pd.concat([m.runs for m in machines], ignore_index=True)
    runs = runs.sort_values(["framework", "device", "variant", "repeat", "machine"], kind="stable")
    keys = ("epochs", "n_train", "batch_size", "learning_rate", "hidden_units")
    busy = busy_core(machines)
    asked = busy_archives is not None and busy is None
    idle = [m for m in machines if asked and m.label == idle_label(m.label)]
    quoted = {m.label: found for m in idle if (found := newest_of_kind(busy_archives, m.environment["cpu"]))}
    return Report(
        records=len(records),
        parameters={key: records[0]["parameters"][key] for key in keys},
        runs=runs.reset_index(drop=True),
        sweep_points=sweep_frame(sweeps),
        machines=machines,
        archived_gpu=archived_gpu,
        no_archive_qualifies=no_archive_qualifies,
        busy=busy,
        era=era_study(machines),
        busy_quote_asked=asked,
        archived_busy=quoted,
    )


def condition_label(labels: dict[tuple, str], record: dict) -> str:
    """The report's machine of a run record: its machine's label, plus what it was set beside if not idle and the
    stack it trained on if not today's."""
    label = stack_label(labels[machine_key(record["environment"])], record["identity"]["stack"])
    return label + BESIDE_BUSY_CORE if record["identity"]["condition"] == BUSY else label
