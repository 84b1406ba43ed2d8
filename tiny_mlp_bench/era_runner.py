"""The question's two CPU loops on an older stack: torch's `seed` and Keras 2's `fit`, as the project runs them,
timed by the project's own clock (timing.py), inside an image whose Python may be as old as 3.9.

It needs the standard library, numpy, and torch or TensorFlow (whichever loop it runs), and imports nothing else of
the project, whose other modules need Python 3.11: tests/test_era.py holds it to Python 3.9's grammar and runs
it on today's stack. A host job hands it the dataset's rows and the run's initial weights as .npy files and reads
back what it measured: the record's timings, the optimiser's steps, the last loss and the predictions to score.

    python -m tiny_mlp_bench.era_runner --loop torch --inputs DIR --output result.json --epochs 1000 ...
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

from tiny_mlp_bench.timing import Clock, PartTimes, per_step_window

LOOPS = ("torch", "keras")
# What the host writes into --inputs: the rows (x1, x2, y), float32, and the 2-h-1 network's initial weights laid out
# for x @ w + b (initial_weights.InitialWeights), in Keras's order.
ROWS = ("train", "test")
WEIGHTS = ("w1", "b1", "w2", "b2")


def question_mlp(torch, hidden_units: int):
    """Linear(2, h) -> ReLU -> Linear(h, 1) -> ReLU, as in the question: the one definition, which
    backends/torch_common.build_model builds too."""

    class QuestionMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = torch.nn.Linear(2, hidden_units)
            self.linear2 = torch.nn.Linear(hidden_units, 1)

        def forward(self, x):
            x = torch.nn.functional.relu(self.linear1(x))
            return torch.nn.functional.relu(self.linear2(x))

    return QuestionMLP()


def load_weights(torch, model, weights: list) -> None:
    """The initial weights (x @ w + b's layout, Keras's order) into the model's parameters."""
    params = list(model.parameters())
    if len(params) != len(weights):  # zip(strict=True) is Python 3.10's
        raise ValueError(f"{len(weights)} initial weights for a model of {len(params)} parameters")
    with torch.no_grad():  # torch keeps each layer's weight as (out, in), the transpose of x @ w
        for param, value in zip(params, weights):
            param.copy_(torch.from_numpy(value.T if value.ndim == 2 else value))


def step_parts(loader, model, loss_fn, optimizer, device, now, epochs: int) -> tuple[dict, object]:
    """torch's `parts` loop (backends/torch_loops.PartsLoop runs it too): ``epochs`` epochs of the asker's step with
    ``now()`` read at each boundary of its parts (timing.LOOP_PARTS); returns each part's seconds and the last loss."""
    fetch = copy = zero_grad = forward = backward = step = 0.0
    for _ in range(epochs):
        batches = iter(loader)
        while True:
            t0 = now()
            batch = next(batches, None)
            if batch is None:
                break
            t1 = now()
            batch = batch.to(device)
            t2 = now()
            optimizer.zero_grad()
            t3 = now()
            loss = loss_fn(model(batch[:, :2]).squeeze(), batch[:, 2])
            t4 = now()
            loss.backward()
            t5 = now()
            optimizer.step()
            t6 = now()
            fetch += t1 - t0
            copy += t2 - t1
            zero_grad += t3 - t2
            forward += t4 - t3
            backward += t5 - t4
            step += t6 - t5
    parts = {"fetch": fetch, "copy": copy, "zero_grad": zero_grad, "forward": forward, "backward": backward}
    return parts | {"optimizer": step}, loss


class AskersTorchLoop:
    """torch's `seed`: the asker's DataLoader over the train rows (a random sampler, 64 rows a batch, the default
    collate), zero_grad, forward, MSE of ``pred.squeeze()``, backward and Adam's step (backends/torch_loops.py);
    with ``args.parts``, torch's `parts`: the same loop with the clock read at each part of its step
    (backends/torch_loops.PartsLoop, on the CPU)."""

    READS_PER_STEP = 7

    def __init__(self, torch, args, rows: dict, weights: list, clock: Clock):
        self.torch, self.args, self.weights = torch, args, weights
        self.parts = PartTimes() if args.parts else None
        self.device = torch.device("cpu")
        self.loss_fn = torch.nn.MSELoss()
        with clock.phase("model"):
            self.model = question_mlp(torch, args.hidden_units)
            load_weights(torch, self.model, weights)
        with clock.phase("data"):
            self.train = self.loader(torch.tensor(rows["train"], dtype=torch.float))
            self.test = self.loader(torch.tensor(rows["test"], dtype=torch.float))
        with clock.phase("optimizer"):
            self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.learning_rate)
        self.loss = None

    def loader(self, rows):
        sampler = self.torch.utils.data.SubsetRandomSampler(range(len(rows)))
        return self.torch.utils.data.DataLoader(rows, batch_size=self.args.batch_size, sampler=sampler)

    def fit(self, clock: Clock, epochs: int) -> None:
        clock.parts = self.parts  # the clock sums the parts per block, as it times the block
        clock.run_blocks(self.run_parts if self.parts else self.run_epochs, epochs, 1)

    @property
    def details(self) -> dict:
        return {"clock_reads_per_step": str(self.READS_PER_STEP)} if self.parts else {}

    def run_parts(self, epochs: int) -> None:
        parts, self.loss = step_parts(
            self.train, self.model, self.loss_fn, self.optimizer, self.device, time.perf_counter, epochs
        )
        self.parts.add(parts)

    def run_epochs(self, epochs: int) -> None:
        for _ in range(epochs):
            for batch in self.train:
                self.loss = self.seed_step(self.optimizer, batch.to(self.device))

    def seed_step(self, optimizer, batch):
        """The asker's step: zero_grad, forward, loss of ``pred.squeeze()``, backward, Adam step."""
        optimizer.zero_grad()
        loss = self.loss_fn(self.model(batch[:, :2]).squeeze(), batch[:, 2])
        loss.backward()
        optimizer.step()
        return loss

    def predict_test_batch(self) -> None:
        self.model.eval()
        with self.torch.no_grad():
            self.model(next(iter(self.test))[:, :2])

    def predict(self, features: np.ndarray) -> np.ndarray:
        with self.torch.no_grad():
            return self.model(self.torch.tensor(features, dtype=self.torch.float)).numpy()

    def final_train_loss(self) -> float:
        return float(self.loss.item())

    def steps_taken(self) -> int:
        return int(self.optimizer.state[self.model.linear1.weight]["step"])

    def restart(self) -> bool:
        """Back to the initial weights and a zeroed Adam, in place (torch 1.x keeps Adam's step as an int)."""
        load_weights(self.torch, self.model, self.weights)
        with self.torch.no_grad():
            for state in self.optimizer.state.values():
                for key, value in state.items():
                    state[key] = value.zero_() if self.torch.is_tensor(value) else 0
        self.model.train()
        return True


class AskersKerasFit:
    """Keras 2's `seed`: the asker's ``Sequential``, ``compile("mse", Adam)``, ``fit`` and ``predict`` on 64 test rows
    (backends/keras_fit.py), with the clock closing a block at each epoch's end."""

    def __init__(self, tf, args, rows: dict, weights: list, clock: Clock):
        keras = self.keras = keras_2(tf)
        self.args, self.rows = args, rows
        with clock.phase("data"):
            self.x, self.y = rows["train"][:, :2], rows["train"][:, 2]
        with clock.phase("model"):
            self.model = keras.Sequential(
                [
                    keras.Input(shape=(2,)),
                    keras.layers.Dense(args.hidden_units, activation="relu"),
                    keras.layers.Dense(1, activation="relu"),
                ]
            )
            self.model.set_weights(weights)
        with clock.phase("optimizer"):
            self.model.compile(loss="mse", optimizer=keras.optimizers.Adam(learning_rate=args.learning_rate))
        self.history = None

    def fit(self, clock: Clock, epochs: int) -> None:
        class EpochClock(self.keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                clock.block_done(1)

        self.history = self.model.fit(
            self.x, self.y, batch_size=self.args.batch_size, epochs=epochs, verbose=0, callbacks=[EpochClock()]
        )
        clock.since_last_block("fit_end")

    def predict_test_batch(self) -> None:
        self.model.predict(self.rows["test"][: self.args.batch_size, :2], verbose=0)

    def predict(self, features: np.ndarray) -> np.ndarray:
        return self.model.predict(features, batch_size=4096, verbose=0)

    def final_train_loss(self) -> float:
        return float(self.history.history["loss"][-1])

    def steps_taken(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def restart(self) -> bool:
        return False  # a new model and optimizer: Keras's own state is not ours to zero

    @property
    def details(self) -> dict:
        return {}


def keras_2(tf):
    """Keras 2 where the stack keeps it: tf_keras from TensorFlow 2.16 on (installed beside it), tf.keras before."""
    try:
        import tf_keras
    except ImportError:
        return tf.keras
    return tf_keras


def keras_version(keras) -> str:
    """Keras 2's version: its module's own, or where that has none (TensorFlow 2.15's tf.keras, the module
    keras.api._v2.keras), its package's."""
    found = getattr(keras, "__version__", None)
    return found if found is not None else importlib.import_module(keras.__name__.split(".")[0]).__version__


def load(loop: str, threads: int):
    """The framework, its threads pinned and its GPUs hidden before it starts: the loops run on the CPU."""
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    if loop == "torch":
        import torch

        torch.set_num_threads(threads)
        if torch.get_num_interop_threads() != threads:  # settable once a process, before any parallel work
            torch.set_num_interop_threads(threads)
        return torch
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    tf.config.set_visible_devices([], "GPU")
    return tf


def seed_everything(fw, loop: str, seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    if loop == "torch":
        fw.manual_seed(seed)
    else:
        fw.random.set_seed(seed)


def start(fw, loop: str) -> None:
    """The CPU runtime's start-up, timed as the project's runs time it (none for torch, started by its import)."""
    if loop == "keras":
        with fw.device("/CPU:0"):
            fw.constant(0.0).numpy()


def about(fw, loop: str) -> dict:
    """The stack that ran: Python, the framework's version and its thread pools."""
    if loop == "torch":
        versions = {"torch": fw.__version__}
        threads = {"intra_op": fw.get_num_threads(), "inter_op": fw.get_num_interop_threads()}
    else:
        versions = {"tensorflow": fw.__version__, "keras": keras_version(keras_2(fw))}
        threads = {
            "intra_op": fw.config.threading.get_intra_op_parallelism_threads(),
            "inter_op": fw.config.threading.get_inter_op_parallelism_threads(),
        }
    return {"python": platform.python_version(), "versions": {**versions, "numpy": np.__version__}, "threads": threads}


def read_inputs(folder: Path) -> tuple:
    rows = {name: np.load(folder / f"{name}.npy") for name in ROWS}
    weights = [np.load(folder / f"{name}.npy") for name in WEIGHTS]
    return rows, weights


def run(args) -> dict:
    """One run: import, set-up, fit and predict at the asker's timing point, the per-step window, and the scoring's
    predictions; the same phases and clock as jobs/run.py's."""
    rows, weights = read_inputs(args.inputs)
    clock = Clock(label=args.label, planned_epochs=args.epochs)
    with clock.phase("import"):
        fw = load(args.loop, args.threads)
    seed_everything(fw, args.loop, args.seed)
    build = AskersTorchLoop if args.loop == "torch" else AskersKerasFit
    with clock.timing_point():
        with clock.phase("setup"):
            with clock.phase("startup"):
                start(fw, args.loop)
            training = build(fw, args, rows, weights, clock)
        with clock.phase("fit"):
            training.fit(clock, args.epochs)
        with clock.phase("predict"):
            training.predict_test_batch()
    result = {
        "loop": args.loop,
        "timings": clock.timings(),
        "steps_taken": training.steps_taken(),
        "final_train_loss": training.final_train_loss(),
        "details": training.details,
        "predictions": {name: training.predict(rows[name][:, :2]).reshape(-1).tolist() for name in ROWS},
        **about(fw, args.loop),
    }
    if args.steady_window_s > 0:

        def rebuild():  # the loop's set-up again, untimed
            return build(fw, args, rows, weights, Clock())

        steady, _ = per_step_window(training, rebuild, clock, args.epochs, 1, args.steady_window_s, args.steady_block_s)
        result["timings"]["steady"] = steady
    return result


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tiny_mlp_bench.era_runner", description=__doc__.split("\n\n")[0])
    parser.add_argument("--loop", choices=LOOPS, required=True, help="torch's seed loop or Keras 2's fit")
    parser.add_argument("--inputs", type=Path, required=True, help="folder of the rows' and weights' .npy files")
    parser.add_argument("--output", type=Path, required=True, help="JSON file to write what the run measured to")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.001)
    parser.add_argument("--hidden-units", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="seeds the loaders' and fit's shuffles")
    parser.add_argument("--steady-window-s", type=float, default=0.0, help="seconds of the per-step window (0: none)")
    parser.add_argument("--steady-block-s", type=float, default=0.2)
    parser.add_argument("--parts", action="store_true", help="torch: read the clock at each part of the step")
    parser.add_argument("--label", default=None, help="the run's name in its progress lines")
    args = parser.parse_args(argv)
    missing = [f"{n}.npy" for n in (*ROWS, *WEIGHTS) if not (args.inputs / f"{n}.npy").is_file()]
    if missing:
        parser.error(f"--inputs {args.inputs} lacks {', '.join(missing)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    result = run(args)
    partial = args.output.with_name(args.output.name + ".partial")
    partial.write_text(json.dumps(result))
    partial.replace(args.output)  # whole or not at all
    print(f"{args.label or args.loop}: {time.perf_counter() - started:.1f} s in all", file=sys.stderr)
    return 0


if __name__ == "__main__":
    status = main()
    # torch 1.7.1's CUDA build, on a machine without a driver, can crash while the interpreter shuts down, after the
    # result is written: leave without the shutdown, as nothing is left to do.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
