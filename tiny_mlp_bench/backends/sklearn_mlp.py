"""scikit-learn: what a user might pick instead, ``MLPRegressor`` with the question's settings."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

from tiny_mlp_bench.backends.contract import Backend, EpochLoop, RunSpec
from tiny_mlp_bench.catalogue import Rung


def load(device: str | None = None):
    import sklearn
    import threadpoolctl
    from sklearn.neural_network import MLPRegressor

    return SimpleNamespace(sklearn=sklearn, MLPRegressor=MLPRegressor, threadpoolctl=threadpoolctl)


def prepare(fw, spec: RunSpec):
    fw.threadpoolctl.threadpool_limits(spec.threads)
    return None  # scikit-learn computes synchronously


class MLPRegressorRun(EpochLoop):
    """MLPRegressor trained one ``partial_fit`` epoch at a time."""

    def __init__(self, fw, spec: RunSpec, data, clock):
        self.spec, self.data = spec, data
        with clock.phase("data"):
            self.x, self.y = data.train[:, :2], data.train[:, 2]
        with clock.phase("model"):
            self.model = fw.MLPRegressor(
                hidden_layer_sizes=(spec.hidden_units,),
                activation="relu",
                solver="adam",
                alpha=0.0,
                batch_size=spec.batch_size,
                learning_rate_init=spec.learning_rate,
                beta_1=0.9,
                beta_2=0.999,
                epsilon=1e-8,
                shuffle=True,
                random_state=spec.init_seed,
            )

    def run_epochs(self, epochs: int) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # partial_fit's "max_iter reached" does not apply to one epoch
            for _ in range(epochs):
                self.model.partial_fit(self.x, self.y)

    def predict_test_batch(self) -> None:
        self.model.predict(self.data.test[: self.spec.batch_size, :2])

    def predict(self, features):
        return self.model.predict(features)

    def final_train_loss(self) -> float:
        return 2 * self.model.loss_  # scikit-learn reports half the MSE

    def steps_taken(self) -> int:
        return int(self.model._optimizer.t)

    @property
    def details(self) -> dict[str, str]:
        return {
            "model": "MLPRegressor: ReLU hidden layer, linear output, loss half the MSE, alpha=0",
            "init": "scikit-learn's own (Glorot-uniform) from the run's seed",
            "adam": "scikit-learn's, torch's constants",
        }


def describe(fw, device: str) -> dict:
    pools = {f"{p['internal_api']}": p["num_threads"] for p in fw.threadpoolctl.threadpool_info()}
    return {"versions": {"scikit-learn": fw.sklearn.__version__}, "threads": pools, "cuda": {}, "gpu_name": None}


BACKENDS = (
    Backend(
        name="sklearn",
        load=load,
        prepare=prepare,
        start_device=lambda fw, spec: None,  # CPU only: its rung runs on cpu alone
        describe=describe,
        peak_gpu_memory_mb=lambda fw, device: None,
        own_init=(
            "scikit-learn's own: Glorot-uniform weights and biases from the run's seed (the output unit is linear)"
        ),
    ),
)
# No role: scikit-learn's own loop, with no asker's rung to be measured against.
RUNGS = (
    Rung(
        "sklearn",
        "mlp_regressor",
        ("cpu",),
        "— (scikit-learn's `MLPRegressor`, one `partial_fit` epoch per call: a linear output layer, "
        "half the MSE, its own initialisation and shuffles)",
        loop=MLPRegressorRun,
    ),
)
