"""torch probes of cuda only: an empty synchronize, a one-kernel graph replay, a kernel inside a graph of many."""

from __future__ import annotations

from tiny_mlp_bench.timing import time_calls

SYNC_CALLS = 1000
GRAPH_REPLAYS = 1000
GRAPH_KERNELS = 100  # kernels in the graph whose per-kernel cost is measured
GRAPH_KERNEL_REPLAYS = 50


def sync_empty(torch) -> dict:
    """torch.cuda.synchronize() with nothing queued: the cost of asking the device whether it is done."""
    torch.cuda.synchronize()
    return time_calls(torch.cuda.synchronize, SYNC_CALLS)


def captured_adds(torch, kernels: int):
    """A CUDA graph of ``kernels`` in-place adds on a small tensor (one tiny kernel each), captured as the docs say."""
    x = torch.zeros(64, 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            x.add_(1.0)
    torch.cuda.synchronize()
    return graph, x  # x is the graph's memory: keep it alive as long as the graph


def graph_replay_one_kernel(torch) -> dict:
    """One replay of a graph holding one tiny kernel, timed over many replays and one synchronize."""
    graph, _x = captured_adds(torch, 1)
    return time_calls(graph.replay, GRAPH_REPLAYS, sync=torch.cuda.synchronize)


def graph_kernel_inside(torch, kernels: int = GRAPH_KERNELS) -> dict:
    """Per kernel inside a graph of ``kernels`` tiny kernels: a replay's time / ``kernels``."""
    graph, _x = captured_adds(torch, kernels)
    return time_calls(graph.replay, GRAPH_KERNEL_REPLAYS, sync=torch.cuda.synchronize, kernels_per_call=kernels)
