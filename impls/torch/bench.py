"""The timing harness of the PyTorch layers, shared by `tests/bench/test_bench_torch.py` and the report.

    forward, info = make_forward("lru", "scan", B=8, L=4096, H=128, N=128, heads=16, dtype="float32")
    forward()                      # one forward pass, synchronised (inference: no autograd graph)
    median_ms(forward)             # warm-up, then the median of a few timed calls

`N` is the layer's whole state: RotRNN gets `heads` heads of N / heads each; LRU and DLR get N.
Numbers on a shared CPU are noisy (docs/speed.md): time alone, compare ratios, and never
assert on a timing in a test.
"""

from __future__ import annotations

import platform
import statistics
import time
from typing import Callable

import torch

from linrnn.impls.bench import info_record, layer_config, median_ms  # noqa: F401  (median_ms: re-exported)
from linrnn.impls.init import init
from linrnn.impls.torch.layer import torch_dtype


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"{device.type} ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def make_forward(kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int = 16, dtype: str = "float32",
                 seed: int = 0, device: str | torch.device | None = None) -> tuple[Callable[[], torch.Tensor], dict]:
    """A layer at the given sizes and a callable running its forward pass in `mode` on a fixed input.

    -> (forward, info): forward() returns y (B L H) after synchronising the device; info records
       kind, mode, B, L, H, N, heads, dtype, device and torch's version, for benchmark records.
       The same signature, defaults and return type as `linrnn.impls.jax.bench.make_forward`.
    """
    from linrnn.impls.torch import from_bundle   # the package imports this module's siblings

    cfg = layer_config(kind, H, N, heads)
    layer = from_bundle(init(cfg, seed), torch_dtype(dtype), device)
    dev = layer.D.device
    u = torch.randn(B, L, H, generator=torch.Generator().manual_seed(seed), dtype=layer.dtype).to(dev)

    def forward() -> torch.Tensor:
        with torch.no_grad():
            y, _ = layer(u, mode)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return y

    info = {"backend": "torch", **info_record(kind, mode, B, L, H, N, heads, dtype), "device": device_name(dev),
            "torch": torch.__version__, "grad": False}
    return forward, info


def scan_candidates(B: int = 8, L: int = 4096, n: int = 128, chunks=(16, 32, 64, 128, 256),
                    dtype: str = "float32") -> dict[str, Callable[[], torch.Tensor]]:
    """The scans alone (n lanes, no projections) on one fixed input: the candidates behind `scan.py`'s choice.

    'complex loop' is a baseline kept here only: the plain loop at one complex addcmul per step.
    """
    from linrnn.impls.torch import scan as scans

    real = torch_dtype(dtype)
    generator = torch.Generator().manual_seed(0)
    log_lam = torch.complex(-0.1 * torch.rand(n, generator=generator, dtype=real),
                            6.0 * torch.rand(n, generator=generator, dtype=real))
    v = torch.randn(B, L, n, 2, generator=generator, dtype=real)

    def complex_loop():
        w, lam = torch.view_as_complex(v), torch.exp(log_lam)
        out, x = torch.empty_like(w), torch.zeros_like(w[:, 0])
        for t in range(L):
            x = torch.addcmul(w[:, t], lam, x, out=out[:, t])
        return out

    candidates = {"complex loop": complex_loop, "sequential (2x2 pairs)": lambda: scans.sequential(log_lam, v)}
    for T in chunks:
        candidates[f"chunked T={T}"] = lambda T=T: scans.chunked(log_lam, v, chunk=T)
    return {name: torch.no_grad()(f) for name, f in candidates.items()}


def scan_timings(B: int = 8, L: int = 4096, n: int = 128, chunks=(16, 32, 64, 128, 256), repeats: int = 9,
                 dtype: str = "float32") -> dict[str, float]:
    """Median ms of each of `scan_candidates`, the candidates interleaved run by run (fairer on a busy machine)."""
    candidates = scan_candidates(B, L, n, chunks, dtype)
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for f in candidates.values():
        f()
    for _ in range(repeats):
        for name, f in candidates.items():
            start = time.perf_counter()
            f()
            times[name].append(1e3 * (time.perf_counter() - start))
    return {name: statistics.median(ts) for name, ts in times.items()}


def dlr_chunk_forward(chunk: int | None, B: int = 8, L: int = 4096, H: int = 128, N: int = 128,
                      dtype: str = "float32", seed: int = 0) -> Callable[[], torch.Tensor]:
    """DLR's kernel-form chunked scan with chunk length `chunk` (None: `conv`), for `dlr.chunk_length`'s sweep."""
    from linrnn.impls.torch import dlr

    layer = dlr.DLR.from_bundle(init(layer_config("dlr", H, N), seed), torch_dtype(dtype))
    u = torch.randn(B, L, H, generator=torch.Generator().manual_seed(seed), dtype=layer.dtype)

    @torch.no_grad()
    def forward() -> torch.Tensor:
        f = layer.materialise()
        if chunk is None:
            return dlr.conv(f, layer.config, u)[0]
        return dlr.scan(f, layer.config, u, chunk=chunk)[0]
    return forward


if __name__ == "__main__":     # python -m linrnn.impls.torch.bench [threads]: the numbers behind scan.py's choice
    import sys

    if len(sys.argv) > 1:
        torch.set_num_threads(int(sys.argv[1]))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, B=8, L=4096")
    for lanes in (64, 128):
        for name, ms in scan_timings(n=lanes).items():
            print(f"scan alone n={lanes:<4d} {name:24s} {ms:7.1f} ms")
    for kind in ("rotrnn", "lru"):
        for mode in ("sequential", "scan"):
            forward, _ = make_forward(kind, mode, 8, 4096, 128, 128, heads=16)
            print(f"layer {kind:6s} H=N=128 {mode:13s} {median_ms(forward, repeats=7):7.1f} ms")
