"""The PyTorch peers' routes of `linrnn.verify.bench_peers` (its module docstring says what each is): `build` returns
the synchronised call of one route, forward or forward+backward, on the CPU."""

from __future__ import annotations

import importlib

import torch

from linrnn.impls.torch import varying_scan
from linrnn.verify import bench_torch


def build(name: str, family: str, direction: str, B: int, L: int, H: int, N: int, seed: int, varying: bool = False,
          real: bool = False):
    if family == "layer":
        return _torch_layer(name, direction, B, L, H, N, seed)
    return _torch_scan(name, direction, B, L, H, N, seed, varying, real)


# -- PyTorch ------------------------------------------------------------------------------------------------------

def _torch_layer(name: str, direction: str, B: int, L: int, H: int, N: int, seed: int):
    if name.startswith("linrnn "):
        kind = name.split()[1]
        make = bench_torch.make_forward if direction == "forward" else bench_torch.make_forward_backward
        return make(kind, "scan", B, L, H, N, dtype="float32", seed=seed, device="cpu")[0]
    if name in ("s5-pytorch", "lru-pytorch"):
        return bench_torch.make_peer(name, direction, B, L, H, N, seed=seed, device="cpu")[0]
    from linrnn.verify.conform_peers_torch import _import

    lti = _import("lrnnx")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = (lti.LRU(d_model=H, d_state=N) if name == "lrnnx lru" else
                 lti.S5(d_model=H, d_state=N, discretization="zoh"))
    u = torch.randn(B, L, H, generator=torch.Generator().manual_seed(seed))                 # (B L H)
    return bench_torch._call(direction, lambda: layer(u), [*layer.parameters(), u], torch.device("cpu"))


REAL_ONLY = ("fla-hgrn-naive", "mamba-ssm-ref", "linrnn varying scan, real")   # these take real decays only


def _torch_scan(name: str, direction: str, B: int, L: int, H: int, n: int, seed: int, varying: bool = False,
                real: bool = False):
    if name == "linrnn chunked scan":
        return bench_torch.make_scan_alone("chunked", direction, B, L, n, seed=seed, device="cpu")[0]
    generator = torch.Generator().manual_seed(seed)
    shape = (B, L, n) if varying else (n,)                   # varying: a transition per position and row
    log_lam = torch.complex(-0.1 * torch.rand(shape, generator=generator), 6.0 * torch.rand(shape, generator=generator))
    lam = torch.exp(log_lam)                                                                 # complex64
    a = lam.expand(B, L, n).contiguous()                                                     # (B L n), one per position
    b = torch.randn(B, L, n, 2, generator=generator)
    b = torch.view_as_complex(b).clone()                                                     # (B L n)
    if real or name in REAL_ONLY:                           # real decays: 2n real lanes of |a|
        decay = (lam.abs().repeat(2) if not varying else torch.cat([lam.abs(), lam.abs()], -1)).expand(B, L, 2 * n)
        x = torch.view_as_real(b).reshape(B, L, 2 * n).contiguous()                          # (B L 2n)
        run, leaves = _real_scan(name, decay.contiguous(), x)
    else:
        run, leaves = _complex_scan(name, a, b)
    return bench_torch._call(direction, run, leaves, torch.device("cpu"))


def _complex_scan(name: str, a, b):
    """A scan of complex (or, from `_real_scan`, real) a and b (B L n); the project's route on log a."""
    if name == "linrnn varying scan":
        log_a = torch.log(a)                                                                 # (B L n) complex
        return lambda: torch.view_as_real(varying_scan.chunked(log_a, b)), [log_a, b]
    if name == "torch-associative-scan":
        from torch._higher_order_ops.associative_scan import associative_scan

        def combine(earlier, later):
            return earlier[0] * later[0], later[0] * earlier[1] + later[1]

        return lambda: _pairs(associative_scan(combine, (a, b), dim=1, combine_mode="generic")[1]), [a, b]
    if name == "mambapy":
        pscan = importlib.import_module("mambapy.pscan").pscan
        return lambda: _pairs(pscan(a[..., None], b[..., None])[..., 0]), [a, b]
    ref = importlib.import_module("accelerated_scan.ref")                                   # accelerated-scan-ref
    return lambda: _pairs(ref.scan(a.transpose(1, 2), b.transpose(1, 2))), [a, b]


def _pairs(x: torch.Tensor) -> torch.Tensor:
    """A complex output as its real pairs (what `bench_torch._call` sums), a real one as it is."""
    return torch.view_as_real(x) if x.is_complex() else x


def _real_scan(name: str, decay, x):
    if name == "linrnn varying scan, real":
        log_a = torch.log(decay)                                                             # (B L 2n) real
        return lambda: varying_scan.chunked(log_a, x), [log_a, x]
    if name in ("torch-associative-scan", "mambapy", "accelerated-scan-ref"):   # their real routes, the same calls
        return _complex_scan(name, decay, x)
    if name == "fla-hgrn-naive":
        naive = importlib.import_module("fla.ops.hgrn.naive").naive_recurrent_hgrn
        g = torch.log(decay)                                                                 # (B L 2n): exp(g) = |a|
        return lambda: naive(x, g)[0], [g, x]
    from linrnn.verify.conform_peers_torch import _mamba_module

    scan = _mamba_module().selective_scan_ref
    channels = x.shape[2]
    u = x.transpose(1, 2).contiguous()                                                       # (B 2n L)
    delta = (-torch.log(decay)).transpose(1, 2).contiguous()                                 # exp(-delta) = |a|
    A, B_, C = -torch.ones(channels, 1), torch.ones(channels, 1), torch.ones(channels, 1)   # (2n N=1)
    return lambda: scan(u, delta, A, B_, C), [delta, A, B_, C, u]
