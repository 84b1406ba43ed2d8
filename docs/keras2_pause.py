#!/usr/bin/env python3
"""Keras 2's fit returns, at times, seconds after its last epoch: a reproducer.

Plain TensorFlow and tf-keras (Keras 2), nothing else. It trains a 2 -> 20 -> 1 ReLU MLP with Adam
on 750 random rows, batch 64, and times each ``fit`` from its last epoch's end (``on_epoch_end``)
to its return. Fits alternate between tf-keras as it is and tf-keras with tf.data autotuning turned
off on the dataset its own array adapter builds (``options.autotune.enabled = False``: the same
pipeline, one option changed), so that a change in the machine's load hits both alike.

With autotuning on, the iterator ``fit`` makes once for all its epochs runs a model thread that
sleeps for periods doubling from 10 ms to 60 s; deleting the iterator at the end of ``fit`` wakes it
and joins it, and a wake-up that lands before the cancellation flag is set is lost, so the join
waits out the thread's sleep. docs/keras2-pause.md says where in TensorFlow's source.

    python docs/keras2_pause.py                  # 8 fits each way, 200 epochs each: about a minute
    python docs/keras2_pause.py --fits 40 --epochs 1000 --output pauses.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up notices

import numpy as np
import tensorflow as tf
import tf_keras
from tf_keras.src.engine import data_adapter

PAUSED_S = 0.1  # a fit whose return comes this long after its last epoch paused (an unpaused one: ~1 ms)
ADAPTERS_DATASET = data_adapter.TensorLikeDataAdapter.get_dataset  # the dataset fit makes of arrays


def without_autotune(adapter):
    """The array adapter's own dataset, with tf.data autotuning turned off."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return ADAPTERS_DATASET(adapter).with_options(options)


def model_of_the_question(seed: int):
    tf_keras.utils.set_random_seed(seed)
    model = tf_keras.Sequential(
        [
            tf_keras.Input(shape=(2,)),
            tf_keras.layers.Dense(20, activation="relu"),
            tf_keras.layers.Dense(1, activation="relu"),
        ]
    )
    model.compile(loss="mse", optimizer=tf_keras.optimizers.Adam(learning_rate=0.001))
    return model


def one_fit(x, y, epochs: int, autotune: bool, seed: int) -> dict:
    """Seconds of one fit, and from its last epoch's end to its return."""
    model = model_of_the_question(seed)
    epoch_ends: list[float] = []

    class LastEpochEnd(tf_keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            epoch_ends.append(time.perf_counter())

    data_adapter.TensorLikeDataAdapter.get_dataset = ADAPTERS_DATASET if autotune else without_autotune
    try:
        began = time.perf_counter()
        model.fit(x, y, batch_size=64, epochs=epochs, verbose=0, callbacks=[LastEpochEnd()])
        returned = time.perf_counter()
    finally:
        data_adapter.TensorLikeDataAdapter.get_dataset = ADAPTERS_DATASET
    return {"autotune": autotune, "fit_s": returned - began, "pause_s": returned - epoch_ends[-1]}


def summary(fits: list[dict], autotune: bool) -> str:
    pauses = [f["pause_s"] for f in fits if f["autotune"] == autotune]
    paused = [p for p in pauses if p >= PAUSED_S]
    longest = f", longest {max(paused):.3f} s" if paused else ""
    return (
        f"autotune {'on ' if autotune else 'off'}: {len(paused)} of {len(pauses)} fits paused "
        f"(>= {PAUSED_S} s){longest}; median pause {statistics.median(pauses) * 1e3:.1f} ms"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fits", type=int, default=8, help="fits with autotuning on, and as many off (default 8)")
    parser.add_argument("--epochs", type=int, default=200, help="epochs per fit (default 200; the question's 1000)")
    parser.add_argument("--threads", type=int, default=2, help="TensorFlow's intra- and inter-op threads (default 2)")
    parser.add_argument("--output", help="also write every fit's times, and the versions, to this JSON file")
    args = parser.parse_args(argv)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (750, 2)).astype("float32")
    y = (x[:, 0] ** 2 + x[:, 1] ** 2).astype("float32")
    versions = {"tensorflow": tf.__version__, "tf_keras": tf_keras.__version__, "python": platform.python_version()}
    print(", ".join(f"{k} {v}" for k, v in versions.items()) + f"; {os.cpu_count()} CPUs", flush=True)
    fits = []
    for i in range(2 * args.fits):
        fit = one_fit(x, y, args.epochs, autotune=i % 2 == 0, seed=i // 2)
        fits.append(fit)
        on = "on " if fit["autotune"] else "off"
        print(f"fit {i + 1:3d}, autotune {on}: {fit['fit_s']:7.3f} s, pause {fit['pause_s']:7.3f} s", flush=True)
    print(summary(fits, True))
    print(summary(fits, False))
    if args.output:
        record = {"versions": versions, "cpus": os.cpu_count(), "epochs": args.epochs, "threads": args.threads}
        with open(args.output, "w") as out:
            json.dump(record | {"paused_s": PAUSED_S, "fits": fits}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
