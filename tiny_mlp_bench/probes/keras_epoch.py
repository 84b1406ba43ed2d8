"""The keras probe: the fixed cost of each ``fit`` epoch, from epochs of one step and of every train row."""

from __future__ import annotations

import itertools
import math
import statistics
import time

from tiny_mlp_bench.probes.measure import Say, quiet

FIT_EPOCHS = 10  # timed epochs per fit
FIT_ROUNDS = 3  # fits of each size, alternated, so that drift in the machine's load hits both alike


def epoch_times_us(keras, model, x, y, batch_size: int, epochs: int) -> list[tuple[float, float]]:
    """(wall, CPU) microseconds of each epoch of one ``fit``, from one epoch's end (or train begin) to the next."""
    stamps: list[tuple[float, float]] = []

    class EpochStamps(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            stamps.append((time.perf_counter(), time.process_time()))

        def on_epoch_end(self, epoch, logs=None):
            stamps.append((time.perf_counter(), time.process_time()))

    model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=0, callbacks=[EpochStamps()])
    return [
        ((end - start) * 1e6, (end_cpu - start_cpu) * 1e6)
        for (start, start_cpu), (end, end_cpu) in itertools.pairwise(stamps)
    ]


def as_timed(per_epoch_us: list[tuple[float, float]]) -> dict:
    """Epochs of one fit (wall and CPU microseconds) as a timing: each epoch one repeat of one call."""
    wall = [w for w, _ in per_epoch_us]
    return {
        "value_us": round(statistics.median(wall), 4),
        "calls": 1,
        "repeats": len(per_epoch_us),
        "repeat_us": [round(v, 4) for v in wall],
        "repeat_cpu_us": [round(cpu, 4) for _, cpu in per_epoch_us],
    }


def keras_fit_epoch(
    fw, spec, data, found: dict, epochs: int = FIT_EPOCHS, rounds: int = FIT_ROUNDS, say: Say = quiet
) -> dict:
    """The fixed cost of each ``fit`` epoch of the asker's model and compile; adds ``fit_epoch`` to ``found``."""
    from tiny_mlp_bench.backends.keras_fit import FitRun
    from tiny_mlp_bench.timing import Clock

    keras = fw.keras
    model = FitRun(fw, spec, data, Clock()).model  # the asker's Sequential and compile("mse", Adam(lr))
    x, y = data.train[:, :2], data.train[:, 2]
    steps = math.ceil(len(x) / spec.batch_size)
    if steps < 2:
        raise ValueError(
            f"{len(x)} train rows make one batch of {spec.batch_size}: need two steps to tell a step's cost"
        )
    one_x, one_y = x[: spec.batch_size], y[: spec.batch_size]
    for warm_x, warm_y in ((one_x, one_y), (x, y)):
        model.fit(warm_x, warm_y, batch_size=spec.batch_size, epochs=2, verbose=0)
    one_us: list[tuple[float, float]] = []
    many_us: list[tuple[float, float]] = []
    for _ in range(rounds):
        one_us += epoch_times_us(keras, model, one_x, one_y, spec.batch_size, epochs)
        many_us += epoch_times_us(keras, model, x, y, spec.batch_size, epochs)
    one, many = as_timed(one_us), as_timed(many_us)
    say(f"fit epoch of 1 step {one['value_us']:.0f} µs, of {steps} steps {many['value_us']:.0f} µs")
    per_step = (many["value_us"] - one["value_us"]) / (steps - 1)
    found["fit_epoch"] = {
        "one_step_epoch": one,
        "many_step_epoch": many,
        "steps_per_epoch": steps,
        "fits": rounds,
        "per_step_us": round(per_step, 4),
        "fixed_per_epoch_us": round(one["value_us"] - per_step, 4),
    }
    say(f"a step inside fit {per_step:.0f} µs, fixed cost per epoch {found['fit_epoch']['fixed_per_epoch_us']:.0f} µs")
    return found
