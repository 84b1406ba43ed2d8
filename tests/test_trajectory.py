"""No rung is faster because it does less: every rung follows its framework's `seed` step for step.

Each run starts from the same initial weights and takes its batches in an order the test injects;
after three epochs every torch rung, the NumPy reference, the numba floor rung (on cpu, and its
cuda kernel under numba's CUDA simulator) and both JAX rungs hold torch `seed`'s parameters within
float32 tolerance. Keras `epoch_blocks`, whose order can be
injected, holds those of Keras `seed`'s step fed the same order, and so does Keras 2's `seed`
(tf_keras: the same model and compile, another Keras); every other rung of Keras 3 and Keras 2
holds its own `seed`'s, both shuffled by fit from one seed. Keras is not held to torch: its Adam adds epsilon to
the uncorrected second moment, 1e-7 where torch adds 1e-8 to the corrected one.
scikit-learn's MLPRegressor is a different model (linear output, its own initialisation) and is
not held to it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import TRAJECTORY_EPOCHS, spec_for
from tiny_mlp_bench import registry
from tiny_mlp_bench.dataset import read_dataset
from tiny_mlp_bench.registry import backend, loop
from tiny_mlp_bench.timing import Clock

EPOCHS = TRAJECTORY_EPOCHS
RTOL, ATOL = 1e-4, 1e-6  # float32 arithmetic in another order, over 3 epochs of Adam steps


def injected_orders(data) -> list[np.ndarray]:
    rng = np.random.default_rng(123)
    return [rng.permutation(len(data.train)) for _ in range(EPOCHS)]


def train(
    framework: str, variant: str, data, orders, monkeypatch, epochs: int = EPOCHS, compile_cache=None
) -> list[np.ndarray]:
    """Build the rung, feed it ``orders`` as its epochs' permutations, train; its parameters as x @ w."""
    chosen = backend(framework)
    fw = chosen.load("cpu")
    spec = spec_for(variant, data, compile_cache=compile_cache)
    clock = Clock(label=f"{framework}-{variant}", planned_epochs=EPOCHS)
    chosen.start_device(fw, spec)  # not prepare(): thread pools are set once per process, and cpu needs no sync
    training = loop(framework, variant)(fw, spec, data, clock)
    pending = iter(orders)
    if framework == "torch":
        # Every torch rung, and the asker's SubsetRandomSampler, draws its epoch's order with torch.randperm.
        # Other callers (torch.compile traces its own patterns with it) get torch's own.
        torch, randperm = fw, fw.randperm

        def injected(n, **kw):
            return torch.tensor(next(pending), device=kw.get("device")) if n == len(data.train) else randperm(n, **kw)

        monkeypatch.setattr(torch, "randperm", injected)
        training.fit(clock, epochs)
        return [
            p.detach().numpy().T.copy() if p.ndim == 2 else p.detach().numpy().copy()
            for p in training.model.parameters()
        ]
    if framework == "numpy":
        training.rng = type("InjectedOrder", (), {"permutation": lambda self, n: next(pending)})()
        training.fit(clock, epochs)
        return [training.params[k].copy() for k in ("w1", "b1", "w2", "b2")]
    if framework == "jax":  # both JAX rungs draw a block's orders with draw_orders
        training.draw_orders = lambda count: np.stack([next(pending) for _ in range(count)])
        training.fit(clock, epochs)
        return [np.asarray(training.params[k]) for k in ("w1", "b1", "w2", "b2")]
    raise AssertionError(framework)


@pytest.fixture(scope="module")
def dataset_file(question_dataset) -> Path:
    return question_dataset


@pytest.fixture(scope="module")
def data(dataset_file):
    return read_dataset(dataset_file)


@pytest.fixture(scope="module")
def torch_seed_parameters(data):
    with pytest.MonkeyPatch.context() as monkeypatch:
        return train("torch", "seed", data, injected_orders(data), monkeypatch)


CPU_RUNGS = [
    (v.framework, v.name)
    for v in registry.rungs()
    if v.framework in ("torch", "numpy", "jax") and v.runs_on("cpu") and (v.framework, v.name) != ("torch", "seed")
]


@pytest.mark.slow
@pytest.mark.parametrize(("framework", "variant"), CPU_RUNGS, ids=[f"{f}-{v}" for f, v in CPU_RUNGS])
def test_every_rung_follows_torch_seed(data, torch_seed_parameters, framework, variant, monkeypatch, compile_cache):
    start = spec_for(variant, data).weights.as_list()
    ours = train(framework, variant, data, injected_orders(data), monkeypatch, compile_cache=compile_cache)
    for name, got, expected, initial in zip(("w1", "b1", "w2", "b2"), ours, torch_seed_parameters, start, strict=True):
        assert not np.allclose(expected, initial), f"{name} did not move: the test would prove nothing"
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL, err_msg=f"{framework} {variant}: {name}")


@pytest.mark.slow
def test_the_cuda_floor_kernel_follows_torch_seed_under_the_simulator(
    data, dataset_file, torch_seed_parameters, tmp_path, monkeypatch
):
    """The numpy `fused` rung's CUDA kernel, run by numba's CUDA simulator on the CPU (in a process of
    its own: the simulator is chosen when numba is imported), takes torch `seed`'s steps, and its own
    step count is the epochs' steps; the rung still refuses the simulator as a GPU. It takes the cpu
    floor's steps exactly: both run the same float32 operations in the same order."""
    orders = np.stack(injected_orders(data))
    np.save(tmp_path / "orders.npy", orders)
    script = Path(__file__).with_name("cuda_simulator_run.py")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    cmd = [sys.executable, str(script), str(dataset_file), str(tmp_path / "orders.npy"), str(tmp_path / "out.npz")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = np.load(tmp_path / "out.npz")
    assert int(out["steps"]) == EPOCHS * 12  # 750 rows in batches of 64: 12 steps an epoch, counted by the kernel
    assert "simulator" in str(out["refused"])
    start = spec_for("fused", data).weights.as_list()
    for name, expected, initial in zip(("w1", "b1", "w2", "b2"), torch_seed_parameters, start, strict=True):
        assert not np.allclose(expected, initial), f"{name} did not move: the test would prove nothing"
        np.testing.assert_allclose(out[name], expected, rtol=RTOL, atol=ATOL, err_msg=f"numpy cuda fused: {name}")
    # Exactly, not within a tolerance: each parameter's terms are summed in row order and Adam runs per element
    # in float32 from the same step scalars, so the two floors round alike at every operation.
    cpu_floor = train("numpy", "fused", data, injected_orders(data), monkeypatch)
    for name, on_cpu in zip(("w1", "b1", "w2", "b2"), cpu_floor, strict=True):
        np.testing.assert_array_equal(out[name], on_cpu, err_msg=f"numpy cuda fused against cpu fused: {name}")


@pytest.mark.parametrize(("hidden", "batch"), [(20, 64), (20, 50), (20, 128), (4, 256), (32, 64), (2, 1024)])
def test_the_cuda_floor_kernels_warps_meet_no_bank_conflict(hidden, batch):
    """Shared memory serves a warp's 32 reads or writes at once only where they fall in its 32 banks (4-byte
    words, bank = word address mod 32). The kernel's thread t writes share[j, t] for every parameter j; each
    owner k then sums share[k, i] over the batch's rows i, a warp's owners all at the same i at once."""
    from tiny_mlp_bench.backends.numba_cuda_fused import row_length, threads_for

    threads = threads_for(batch, hidden)  # the sizes fit the block's shared memory
    columns = 4 * hidden + 2  # every parameter's row and the squared error's

    def banks(addresses) -> int:
        return len({address % 32 for address in addresses})

    def conflicts(row: int) -> list[str]:
        """Each step of either loop whose warp's addresses share a bank, for rows ``row`` floats long."""
        found = []
        for warp in range(threads // 32):
            lanes = range(32 * warp, 32 * warp + 32)
            for j in range(columns):  # the write loop, at its step j
                if banks(j * row + t for t in lanes) < 32:
                    found.append(f"write of row {j} by warp {warp}")
            for first in range(0, columns, threads):  # each round of owners (k = t, t + threads, ...)
                owners = [first + t for t in lanes if first + t < columns]
                for i in range(batch):  # the read loop, at its step i
                    if banks(k * row + i for k in owners) < len(owners):
                        found.append(f"read of position {i} by warp {warp}'s owners from {owners[0]}")
        return found

    assert conflicts(row_length(threads)) == []
    assert conflicts(threads), "rows a whole number of warps long conflict: the check would catch them"


def test_the_cuda_floor_kernel_refuses_what_one_block_cannot_hold():
    from tiny_mlp_bench.backends.numba_cuda_fused import threads_for

    assert (threads_for(64, 20), threads_for(50, 20)) == (64, 64)  # the batch's rows in whole warps
    with pytest.raises(ValueError, match="1024 rows at most, not 2048"):
        threads_for(2048, 20)
    with pytest.raises(ValueError, match="256 hidden units at batch 64 need 260 KiB, over the 48 KiB"):
        threads_for(64, 256)  # 1026 rows of 65 floats: each row one float longer than the block's 64 threads


def test_a_rung_that_does_less_is_caught(data, torch_seed_parameters, monkeypatch):
    # The same check on a run that stops one epoch (12 steps) early must fail, or it would prove nothing.
    ours = train("numpy", "reference", data, injected_orders(data), monkeypatch, epochs=EPOCHS - 1)
    assert not all(
        np.allclose(got, expected, rtol=RTOL, atol=ATOL)
        for got, expected in zip(ours, torch_seed_parameters, strict=True)
    )


def build_keras(variant: str, data, framework: str = "keras"):
    """A Keras rung built from the shared weights, the shuffle seeded as every Keras run seeds it."""
    chosen = backend(framework)
    fw = chosen.load("cpu")
    spec = spec_for(variant, data)
    fw.keras.utils.set_random_seed(spec.init_seed)  # what prepare() seeds; fit draws its shuffles from it
    return loop(framework, variant)(fw, spec, data, Clock())


def keras_parameters(variant: str, data, framework: str = "keras") -> list[np.ndarray]:
    """Three epochs of a Keras rung, its weights after them."""
    training = build_keras(variant, data, framework)
    training.fit(Clock(label=f"{framework}-{variant}", planned_epochs=EPOCHS), EPOCHS)
    return training.model.get_weights()


def keras_seed_in_order(data, orders, framework: str = "keras"):
    """A Keras `seed` rung whose own fit step is fed each epoch's rows in the injected order."""
    seed = build_keras("seed", data, framework)
    for order in orders:
        rows = data.train[order]
        seed.model.fit(rows[:, :2], rows[:, 2], batch_size=64, epochs=1, shuffle=False, verbose=0)
    return seed


def assert_same_keras_weights(got: list, want: list, data, label: str) -> None:
    """Keras weights after training hold another run's, which moved from the shared start."""
    start = spec_for("seed", data).weights.as_list()
    for name, ours, theirs, initial in zip(("w1", "b1", "w2", "b2"), got, want, start, strict=True):
        assert not np.allclose(theirs, initial), f"{name} did not move: the test would prove nothing"
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL, err_msg=f"{label}: {name}")


KERAS_RUNGS = [
    (framework, v.name)
    for framework in ("keras", "tf_keras")
    for v in registry.ladder(framework)
    if v.name not in ("seed", "epoch_blocks")
]


@pytest.mark.slow
def test_keras_epoch_blocks_follows_keras_seed_in_the_same_order(data):
    orders = injected_orders(data)
    keras_seed = keras_seed_in_order(data, orders)
    blocks = build_keras("epoch_blocks", data)
    pending = iter(orders)
    blocks.draw_orders = lambda count: np.stack([next(pending) for _ in range(count)])
    blocks.fit(Clock(), EPOCHS)
    assert_same_keras_weights(blocks.model.get_weights(), keras_seed.model.get_weights(), data, "keras epoch_blocks")


@pytest.mark.slow
def test_keras_2_seed_follows_keras_3_seed_in_the_same_order(data):
    """Keras 2 is the same model, loss and Adam as Keras 3: fed the same batches, the same weights."""
    orders = injected_orders(data)
    keras_3, keras_2 = keras_seed_in_order(data, orders), keras_seed_in_order(data, orders, "tf_keras")
    assert keras_2.keras.__version__.startswith("2."), f"tf_keras is Keras {keras_2.keras.__version__}, not 2"
    assert keras_2.steps_taken() == EPOCHS * keras_2.steps_per_epoch  # its optimiser's own count
    assert_same_keras_weights(keras_2.model.get_weights(), keras_3.model.get_weights(), data, "tf_keras seed")


@pytest.mark.slow
@pytest.mark.parametrize(("framework", "variant"), KERAS_RUNGS)
def test_every_keras_rung_follows_its_keras_seed(data, framework, variant):
    # Keras's fit shuffles the rows itself, so the order is not injected: every rung draws it from the same
    # seed, and the parameters can only agree if the orders did.
    expected = keras_parameters("seed", data, framework)
    assert_same_keras_weights(keras_parameters(variant, data, framework), expected, data, f"{framework} {variant}")
