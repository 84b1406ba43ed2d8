"""The numbers behind the report: tidy runs, summaries, the variant ladder, targets, crossovers.

Everything here is a pure function of run and sweep records; render_report.py only formats it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import pandas as pd

# The asker's wall times in seconds, from the question ("~17 s", "~11 s", "~9 s").
# The question does not say which device Keras used, so its 9 s stands beside both.
ASKER_SECONDS = {"torch-cuda": 17.0, "torch-cpu": 11.0, "keras-cpu": 9.0, "keras-cuda": 9.0}
# Steps (framework-device) in the question's order, then the NumPy reference.
STEP_ORDER = ["torch-cuda", "torch-cpu", "keras-cpu", "keras-cuda", "numpy-cpu"]
# Ratios the question implies, as (numerator, denominator) steps.
RATIOS = [("torch-cuda", "torch-cpu"), ("torch-cpu", "keras-cpu"), ("torch-cuda", "keras-cuda")]
# Each framework's variants from the asker's loop to the leanest, and what each rung takes away
# compared with the rung before it (these describe the code in train_*.py, not results).
LADDER = {
    "torch": ["seed", "batched_fetch", "resident", "sync_free", "compiled", "graphed"],
    "keras": ["seed", "xla", "steps_per_execution"],
    "numpy": ["reference"],
}
REMOVES = {
    ("torch", "seed"): "— (the asker's loop)",
    ("torch", "batched_fetch"): "data loading: 64 `__getitem__` calls and a `stack` per batch",
    ("torch", "resident"): "the DataLoader and the host-to-device copy of every batch",
    ("torch", "sync_free"): "per-step gathers and per-parameter Adam kernels (fused Adam); host syncs",
    ("torch", "compiled"): "per-op dispatch and per-call overhead: forward, backward and Adam in one "
    "`torch.compile` graph, up to 16 steps per call",
    ("torch", "graphed"): "kernel launch latency: each step replays one captured CUDA graph",
    ("keras", "seed"): "— (the asker's `fit`)",
    ("keras", "xla"): "TensorFlow op dispatch, by compiling the step with XLA",
    ("keras", "steps_per_execution"): "per-step calls into the train function: one call per epoch",
    ("numpy", "reference"): "the framework itself: hand-written forward, backward and Adam",
}
# A spread above this coefficient of variation makes a comparison unreliable.
CV_WARNING = 0.10


def records_to_frame(records: list[dict]) -> pd.DataFrame:
    """One row per run, sorted by framework, device, variant and repeat."""
    rows = []
    for r in records:
        ident, timings, quality, env = r["identity"], r["timings"], r["quality"] or {}, r["environment"]
        epochs = timings.get("epoch_s") or []
        later = statistics.median(epochs[1:]) if len(epochs) > 1 else None
        steps = timings.get("steps_per_epoch")
        rows.append(
            {
                "run_id": ident["run_id"],
                "step": f"{ident['framework']}-{ident['device']}",
                "framework": ident["framework"],
                "device": ident["device"],
                "variant": ident["variant"],
                "repeat": ident["repeat"],
                "status": r["status"],
                "reason": r["reason"],
                "converged": quality.get("converged"),
                "fit_predict_s": timings.get("fit_predict_s"),
                "import_s": timings["import_s"],
                "setup_s": timings.get("setup_s"),
                "first_epoch_s": epochs[0] if epochs else None,
                "median_epoch_s": later,
                # Steady state: the median later epoch, per optimiser step.
                "step_s": later / steps if later is not None and steps else None,
                "fit_s": timings.get("fit_s"),
                "predict_s": timings.get("predict_s"),
                "steps_per_epoch": steps,
                "epochs": r["parameters"]["epochs"],
                "batch_size": r["parameters"]["batch_size"],
                "hidden_units": r["parameters"]["hidden_units"],
                "threads": r["parameters"]["threads"],
                "test_mse": quality.get("test_mse"),
                "train_r2": quality.get("train_r2"),
                "host": env["host"],
                "cpu_model": env["cpu_model"],
                "gpu_name": env["gpu_name"],
                "started_at": ident["started_at"],
            }
        )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame = frame.sort_values(["framework", "device", "variant", "repeat"], kind="stable")
    return frame.reset_index(drop=True)


def ladder_position(framework: str, variant: str) -> int:
    rungs = LADDER.get(framework, [])
    return rungs.index(variant) if variant in rungs else len(rungs)


def coefficient_of_variation(values: pd.Series) -> float:
    """Sample standard deviation over mean; NaN with fewer than two values."""
    values = values.dropna()
    if len(values) < 2 or values.mean() == 0:
        return float("nan")
    return float(values.std(ddof=1) / values.mean())


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Median, spread and CV over the completed runs of each step and variant, in ladder order."""
    done = frame[frame["status"] == "ok"]
    grouped = done.groupby(["step", "framework", "device", "variant"], sort=True)
    summary = grouped.agg(
        runs=("run_id", "size"),
        converged=("converged", "sum"),
        median_s=("fit_predict_s", "median"),
        min_s=("fit_predict_s", "min"),
        max_s=("fit_predict_s", "max"),
        import_s=("import_s", "median"),
        setup_s=("setup_s", "median"),
        first_epoch_s=("first_epoch_s", "median"),
        median_epoch_s=("median_epoch_s", "median"),
        step_s=("step_s", "median"),
        step_min_s=("step_s", "min"),
        step_max_s=("step_s", "max"),
        step_cv=("step_s", coefficient_of_variation),
        fit_s=("fit_s", "median"),
        predict_s=("predict_s", "median"),
        test_mse=("test_mse", "median"),
        train_r2=("train_r2", "median"),
        batch_size=("batch_size", "first"),
        hidden_units=("hidden_units", "first"),
    ).reset_index()
    order = summary["step"].map({step: i for i, step in enumerate(STEP_ORDER)})
    rung = [ladder_position(f, v) for f, v in zip(summary["framework"], summary["variant"], strict=True)]
    summary = summary.assign(_order=order, _rung=rung).sort_values(["_order", "_rung"])
    return summary.drop(columns=["_order", "_rung"]).reset_index(drop=True)


def flops_per_step(batch_size: int, hidden_units: int) -> int:
    """Floating-point operations of one training step of the 2-h-1 MLP.

    Forward: two matmuls, 2*B*(2h + h) = 6Bh; backward: twice the forward matmuls, 12Bh;
    Adam: about 10 operations for each of the 4h + 1 parameters. ReLU and loss are O(Bh)
    comparisons and are left out: the floor is a lower bound.
    """
    return 18 * batch_size * hidden_units + 10 * (4 * hidden_units + 1)


@dataclass(frozen=True)
class Rung:
    """One variant on a step's ladder, with its speed-ups."""

    variant: str
    step_s: float
    step_min_s: float
    step_max_s: float
    cv: float
    vs_seed: float | None
    vs_previous: float | None
    first_epoch_excess_s: float | None
    runs: int
    converged: int
    removes: str


def ladders(summary: pd.DataFrame) -> dict[str, list[Rung]]:
    """For each step that has completed runs, its rungs in ladder order with speed-up factors."""
    result = {}
    for step, rows in summary.groupby("step", sort=False):
        seed = rows[rows["variant"] == "seed"]["step_s"]
        seed_step = seed.iloc[0] if len(seed) else None
        rungs, previous = [], None
        for row in rows.itertuples(index=False):
            excess = row.first_epoch_s - row.median_epoch_s if pd.notna(row.median_epoch_s) else None
            rungs.append(
                Rung(
                    variant=row.variant,
                    step_s=row.step_s,
                    step_min_s=row.step_min_s,
                    step_max_s=row.step_max_s,
                    cv=row.step_cv,
                    vs_seed=seed_step / row.step_s if seed_step else None,
                    vs_previous=previous / row.step_s if previous else None,
                    first_epoch_excess_s=excess,
                    runs=row.runs,
                    converged=int(row.converged),
                    removes=REMOVES.get((row.framework, row.variant), ""),
                )
            )
            previous = row.step_s
        result[step] = rungs
    return result


@dataclass(frozen=True)
class Target:
    """One of the study's speed targets and how this run fared."""

    name: str
    met: bool | None  # None when not measured
    detail: str

    @property
    def verdict(self) -> str:
        return {True: "met", False: "not met", None: "not measured"}[self.met]


def best(rungs: list[Rung], exclude: tuple[str, ...] = ()) -> Rung | None:
    candidates = [r for r in rungs if r.variant not in exclude]
    return min(candidates, key=lambda r: r.step_s) if candidates else None


def targets(ladder: dict[str, list[Rung]]) -> list[Target]:
    """The study's targets, each judged from the per-step medians of this run."""

    def speedup(step: str, goal: float, name: str, variant: str | None = None) -> Target:
        rungs = ladder.get(step, [])
        seed = next((r for r in rungs if r.variant == "seed"), None)
        fast = next((r for r in rungs if r.variant == variant), None) if variant else best(rungs, ("seed",))
        if seed is None or fast is None:
            return Target(name, None, f"no completed {step} runs of seed and {variant or 'another variant'}")
        factor = seed.step_s / fast.step_s
        detail = f"{fast.variant} {us(fast.step_s)} µs/step vs seed {us(seed.step_s)} µs/step: {factor:.2f}×"
        return Target(name, factor >= goal, detail)

    found = [speedup("torch-cpu", 5.0, "best torch-cpu variant ≥ 5× faster per step than torch-cpu seed")]
    name = "best torch-cpu variant within 1.5× of the NumPy reference per step"
    torch_best = best(ladder.get("torch-cpu", []), ("seed",))
    reference = next(iter(ladder.get("numpy-cpu", [])), None)
    if torch_best and reference:
        ratio = torch_best.step_s / reference.step_s
        detail = f"{torch_best.variant} {us(torch_best.step_s)} µs/step vs NumPy {us(reference.step_s)}: {ratio:.2f}×"
        found.append(Target(name, ratio <= 1.5, detail))
    else:
        found.append(Target(name, None, "no completed torch-cpu variant and NumPy reference runs"))
    for step in ("keras-cpu", "keras-cuda"):
        found.append(speedup(step, 10.0, f"best {step} variant ≥ 10× faster per step than {step} seed"))
    found.append(
        speedup("torch-cuda", 50.0, "torch-cuda graphed ≥ 50× faster per step than torch-cuda seed", "graphed")
    )
    return found


def us(seconds: float) -> str:
    """Seconds as microseconds with one decimal."""
    return f"{seconds * 1e6:.1f}"


@dataclass(frozen=True)
class Crossover:
    """Where, at one hidden width, cuda's per-step time first drops below cpu's."""

    hidden_units: int
    batch_size: int | None  # smallest batch where cuda wins; None if it never does in the grid
    largest_batch: int


def sweep_frame(sweeps: list[dict]) -> pd.DataFrame:
    """One row per measured sweep point: device, batch_size, hidden_units, step_s."""
    rows = [
        {"device": s["device"], **{k: p[k] for k in ("batch_size", "hidden_units", "step_s")}}
        for s in sweeps
        if s["status"] == "ok"
        for p in s["points"]
    ]
    return pd.DataFrame(rows, columns=["device", "batch_size", "hidden_units", "step_s"])


def crossovers(points: pd.DataFrame) -> list[Crossover]:
    """For each width measured on both devices, the smallest batch size at which cuda is faster."""
    wide = points.pivot_table(index=["hidden_units", "batch_size"], columns="device", values="step_s")
    if not {"cpu", "cuda"} <= set(wide.columns):
        return []
    found = []
    for width, rows in wide.dropna().groupby(level="hidden_units"):
        batches = rows.index.get_level_values("batch_size")
        wins = [b for b, cpu, cuda in zip(batches, rows["cpu"], rows["cuda"], strict=True) if cuda < cpu]
        found.append(Crossover(int(width), int(min(wins)) if wins else None, int(max(batches))))
    return found
