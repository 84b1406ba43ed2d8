"""Train the seed question's MLP with PyTorch, the asker's way, and write a run record.

Usage: python scripts/train_torch.py --dataset results/data/dataset.parquet --device cpu \
           --threads 2 --output results/runs/torch-cpu-seed-1.json
Run with --help for every option.
"""

from __future__ import annotations

import sys
import time

from environment import nvidia_driver
from training import Backend, Progress, RunSpec, TrainResult, run


def load():
    import torch

    return torch


def unavailable(torch, device: str) -> str | None:
    if device == "cuda" and not torch.cuda.is_available():
        built = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        return f"no CUDA device: torch.cuda.is_available() is False (torch {torch.__version__}, {built})"
    return None


def build_model(torch, hidden_units: int):
    """Linear(2, h) -> ReLU -> Linear(h, 1) -> ReLU, as in the question (the last ReLU can die)."""

    class SeedMLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = torch.nn.Linear(2, hidden_units)
            self.linear2 = torch.nn.Linear(hidden_units, 1)

        def forward(self, x):
            x = torch.nn.functional.relu(self.linear1(x))
            return torch.nn.functional.relu(self.linear2(x))

    return SeedMLP()


def train(torch, spec: RunSpec, data) -> TrainResult:
    """The asker's loop: DataLoader + SubsetRandomSampler, a .to(device) per batch, no sync per step."""
    torch.set_num_threads(spec.threads)
    torch.manual_seed(spec.init_seed)
    device = torch.device("cuda:0" if spec.device == "cuda" else "cpu")

    def now() -> float:
        # Kernels run asynchronously on CUDA: wait for them before reading the clock.
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter()

    progress = Progress(spec.epochs, f"torch-{spec.device}-{spec.variant}-{spec.repeat}")
    start = now()
    train_rows = torch.tensor(data.train, dtype=torch.float)
    test_rows = torch.tensor(data.test, dtype=torch.float)
    train_loader = torch.utils.data.DataLoader(
        train_rows,
        batch_size=spec.batch_size,
        sampler=torch.utils.data.SubsetRandomSampler(range(len(train_rows))),
    )
    test_loader = torch.utils.data.DataLoader(
        test_rows,
        batch_size=spec.batch_size,
        sampler=torch.utils.data.SubsetRandomSampler(range(len(test_rows))),
    )
    model = build_model(torch, spec.hidden_units).to(device)
    loss_fn = torch.nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=spec.learning_rate)
    fit_start = now()

    epoch_s = []
    lap = fit_start
    model.train()
    for epoch in range(spec.epochs):
        for batch in train_loader:
            batch = batch.to(device)
            x, y = batch[:, :2], batch[:, 2]
            optimizer.zero_grad()
            loss = loss_fn(model(x).squeeze(), y)
            loss.backward()
            optimizer.step()
        epoch_end = now()
        epoch_s.append(epoch_end - lap)
        lap = epoch_end
        progress.epoch_done(epoch)

    predict_start = lap
    model.eval()
    with torch.no_grad():
        for batch in test_loader:
            model(batch.to(device)[:, :2]).cpu()
            break
    end = now()

    def predict(features):
        with torch.no_grad():
            return model(torch.tensor(features, dtype=torch.float, device=device)).cpu().numpy()

    return TrainResult(
        setup_s=fit_start - start,
        epoch_s=epoch_s,
        predict_s=end - predict_start,
        fit_predict_s=end - start,
        steps_per_epoch=len(train_loader),
        final_train_loss=loss.item(),
        predict=predict,
    )


def describe(torch, device: str) -> dict:
    on_gpu = device == "cuda" and torch.cuda.is_available()
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "versions": {"torch": torch.__version__},
        "threads": {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()},
        "cuda": {
            "build_cuda": torch.version.cuda,
            "build_cudnn": str(cudnn) if cudnn else None,
            "driver": nvidia_driver() if on_gpu else None,
        },
        "gpu_name": torch.cuda.get_device_name(0) if on_gpu else None,
    }


BACKEND = Backend(name="torch", variants=("seed",), load=load, unavailable=unavailable, train=train, describe=describe)


def main(argv=None) -> int:
    return run(BACKEND, argv)


if __name__ == "__main__":
    sys.exit(main())
