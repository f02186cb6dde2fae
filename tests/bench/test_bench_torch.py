"""Speed of the PyTorch layers (`pytest --benchmark`): the forward time of every view of one layer.

B=8, L=4096, H=128, N=128 (RotRNN: 16 heads of 8), float32, inference (no autograd graph), on the
device PyTorch defaults to. The layer and the timing call come from `linrnn.verify.bench_torch`, which
the report reuses. The untimed warm-up call also sets the number of rounds, so that the slow views
(DLR's step loop) stay at a few rounds. Run alone: a concurrent process distorts every timing.
"""

import time

import pytest
import torch

from linrnn.impls.torch import MODES
from linrnn.verify.bench_torch import (DIAGONAL_PARTS, diagonal_forward_parts, dlr_chunk_forward, dlr_forward_parts,
                                      make_forward, make_gemm_floor, make_peer, scan_candidates)

B, L, H, N, HEADS = 8, 4096, 128, 128, 16
SECONDS_PER_TEST = 4.0


@pytest.mark.bench
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["rotrnn", "lru", "dlr"])   # docs/speed.md's table: the three papers' models
def test_torch_forward(benchmark, kind, mode):
    forward, info = make_forward(kind, mode, B, L, H, N, heads=HEADS, dtype="float32")
    start = time.perf_counter()
    forward()                                         # warm-up, outside the timed region
    once = time.perf_counter() - start
    rounds = max(3, min(20, round(SECONDS_PER_TEST / max(once, 1e-3))))
    benchmark.extra_info.update(info)
    y = benchmark.pedantic(forward, rounds=rounds, iterations=1)
    assert y.shape == (B, L, H) and bool(torch.isfinite(y).all())


def _timed(benchmark, forward, info):
    """Warm up once untimed, pick the rounds from that call's time, time `forward` (never asserting on times)."""
    start = time.perf_counter()
    forward()
    once = time.perf_counter() - start
    benchmark.extra_info.update(info)
    return benchmark.pedantic(forward, rounds=max(3, min(20, round(SECONDS_PER_TEST / max(once, 1e-3)))),
                              iterations=1)


@pytest.mark.bench
@pytest.mark.parametrize("n", [64, 128])
@pytest.mark.parametrize("candidate", ["complex loop", "sequential (2x2 pairs)", "chunked T=16", "chunked T=32",
                                       "chunked T=64", "chunked T=128", "chunked T=256"])
def test_torch_scan_alone(benchmark, candidate, n):
    """The recurrence alone (n lanes, no projections): the numbers behind impls/torch/scan.py's choice."""
    forward = scan_candidates(B, L, n, dtype="float32")[candidate]
    y = _timed(benchmark, forward, {"backend": "torch", "what": "scan alone", "candidate": candidate, "B": B,
                                    "L": L, "n": n, "dtype": "float32", "threads": torch.get_num_threads()})
    assert y.shape[:2] == (B, L)


@pytest.mark.bench
@pytest.mark.parametrize("chunk", [128, 256, 512, 1024, 2048, None], ids=lambda T: f"T{T}" if T else "conv")
def test_torch_dlr_chunk(benchmark, chunk):
    """DLR's kernel-form chunked scan against its chunk length T (None: conv): behind `dlr.chunk_length`."""
    forward = dlr_chunk_forward(chunk, B, L, H, N, dtype="float32")
    y = _timed(benchmark, forward, {"backend": "torch", "what": "dlr chunk sweep", "chunk": chunk, "B": B, "L": L,
                                    "H": H, "N": N, "dtype": "float32", "threads": torch.get_num_threads()})
    assert y.shape == (B, L, H)


@pytest.mark.bench
@pytest.mark.parametrize("part", ["layer conv", "kernel alone", "FFT convolution", "layer scan", "scan carries",
                                  "GEMM floor", "s5-pytorch"])
def test_torch_dlr_forward_parts(benchmark, part):
    """DLR's conv and scan forwards, their kernel, FFT convolution and carries alone, beside the GEMM floor and
    s5-pytorch (the targets' two yardsticks; skipped with the reason without the [peers] extra), at the sizes
    above: the measurement behind docs/speed-log.md's "DLR's forward targets"."""
    forward, info = _yardstick(part) or (dlr_forward_parts(B, L, H, N, dtype="float32")[part],
                                         {"backend": "torch", "what": "dlr forward parts", "B": B, "L": L, "H": H, "N": N})
    y = _timed(benchmark, forward, {**info, "part": part, "dtype": "float32", "threads": torch.get_num_threads()})
    assert bool(torch.isfinite(y).all())


def _yardstick(part):
    """(forward, info) of the targets' yardsticks, the GEMM floor and s5-pytorch (skipped without the [peers] extra),
    or None for a part of a layer."""
    if part == "s5-pytorch":
        from linrnn.verify import peers_torch as peers

        reason = peers.missing_reason(part)
        if reason:
            pytest.skip(reason)
        return make_peer(part, "forward", B, L, H, N, dtype="float32")
    if part == "GEMM floor":
        return make_gemm_floor("forward", B, L, H, N, dtype="float32")
    return None


@pytest.mark.bench
@pytest.mark.parametrize("part", [*DIAGONAL_PARTS, "GEMM floor", "s5-pytorch"])
@pytest.mark.parametrize("kind", ["rotrnn", "lru"])   # the two layers docs/speed.md times by parts
def test_torch_diagonal_forward_parts(benchmark, kind, part):
    """RotRNN's and LRU's `scan` forward, its projections and copies, its two products and its recurrence alone,
    block by block as the layer runs them, beside the GEMM floor and s5-pytorch: the measurement behind
    docs/speed-log.md's "RotRNN's and LRU's forward targets"."""
    forward, info = _yardstick(part) or (diagonal_forward_parts(kind, B, L, H, N, HEADS, dtype="float32")[part],
                                         {"backend": "torch", "what": "diagonal forward parts", "kind": kind, "B": B,
                                          "L": L, "H": H, "N": N, "heads": HEADS})
    y = _timed(benchmark, forward, {**info, "part": part, "dtype": "float32", "threads": torch.get_num_threads()})
    assert bool(torch.isfinite(y).all())
