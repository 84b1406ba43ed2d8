"""Map where the GPU starts to win: steady-state time per training step over batch size x width.

Each point trains the question's MLP shape (2 -> width -> 1, ReLU) with the ``sync_free`` loop
of train_torch.py on random device-resident rows: two untimed warm-up steps, then three timed
blocks of ``--steps`` steps (the device synchronised at each block's end); the point's time per
step is the median block's. The device's measured float32 matmul rate is recorded too, so the
report can put an analytic floor under the ladder.

Usage: python scripts/sweep.py --device cpu --batch-sizes 64,1024 --hidden-units 20,256 \
           --steps 10 --output results/sweep/cpu.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from environment import collect_environment
from run_record import SWEEP_RECORD_TYPE, write_sweep
from train_torch import build_model, describe, load, set_threads, unavailable
from training import positive_int

BLOCKS = 3
WARMUP_STEPS = 2


def csv_ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def matmul_gflops(torch, device, now) -> float:
    """Best of three float32 square matmuls: the device's practical peak for this kind of work."""
    n = 4096 if device.type == "cuda" else 1024
    a, b = torch.rand(n, n, device=device), torch.rand(n, n, device=device)
    a @ b
    best = float("inf")
    for _ in range(3):
        start = now()
        a @ b
        best = min(best, now() - start)
    return 2 * n**3 / best / 1e9


def time_point(torch, device, now, batch_size: int, width: int, steps: int) -> list[float]:
    """Per-step seconds of each timed block for one grid point."""
    model = build_model(torch, width).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    loss_fn = torch.nn.MSELoss()
    rows = torch.rand(batch_size, 3, device=device)
    x, y = rows[:, :2], rows[:, 2]

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x).squeeze(-1), y).backward()
        optimizer.step()

    for _ in range(WARMUP_STEPS):
        step()
    blocks = []
    for _ in range(BLOCKS):
        start = now()
        for _ in range(steps):
            step()
        blocks.append((now() - start) / steps)
    return blocks


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    parser.add_argument("--batch-sizes", type=csv_ints, required=True, help="comma-separated, e.g. 64,1024")
    parser.add_argument("--hidden-units", type=csv_ints, required=True, help="comma-separated widths")
    parser.add_argument("--steps", type=positive_int, default=10, help="timed steps per block")
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--require-gpu", action="store_true", help="fail instead of recording 'skipped'")
    parser.add_argument("--output", required=True, help="sweep record to write (.json)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    torch = load()
    set_threads(torch, args.threads)
    record = {
        "record_type": SWEEP_RECORD_TYPE,
        "schema_version": 1,
        "device": args.device,
        "variant": "sync_free",
        "steps": args.steps,
        "blocks": BLOCKS,
        "status": "ok",
        "reason": None,
        "peak_gflops": None,
        "points": [],
    }
    reason = unavailable(torch, args.device, "sync_free")
    if reason and args.require_gpu:
        print(f"sweep-{args.device}: error: {reason}, and --require-gpu (config require_gpu) is set", file=sys.stderr)
        return 1
    if reason:
        record |= {"status": "skipped", "reason": reason}
        print(f"sweep-{args.device}: skipped: {reason}", file=sys.stderr)
    else:
        device = torch.device("cuda:0" if args.device == "cuda" else "cpu")

        def now() -> float:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            return time.perf_counter()

        record["peak_gflops"] = matmul_gflops(torch, device, now)
        grid = [(b, w) for w in args.hidden_units for b in args.batch_sizes]
        for i, (batch_size, width) in enumerate(grid, 1):
            blocks = time_point(torch, device, now, batch_size, width, args.steps)
            step_s = statistics.median(blocks)
            record["points"].append(
                {"batch_size": batch_size, "hidden_units": width, "step_s": step_s, "block_step_s": blocks}
            )
            print(
                f"sweep-{args.device}: point {i}/{len(grid)}: batch {batch_size}, width {width}: "
                f"{step_s * 1e3:.3f} ms/step",
                file=sys.stderr,
                flush=True,
            )
    record["environment"] = collect_environment(dataset_sha256=None, **describe(torch, args.device))
    write_sweep(record, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
