"""The recurrence primitives of `linrnn.impls.torch.scan` and `conv`, each against an independent computation."""

import math

import numpy as np
import pytest
import torch

from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import DLR, dlr, scan
from linrnn.impls.torch.conv import causal_conv, fft_length
from linrnn.impls.torch.diagonal import lane_conv


def diagonal_problem(seed, B, L, n, r_max=0.9999, dtype=torch.float64):
    """log lambda with |lambda| in [0.3, r_max], inputs as pairs, a non-zero x0; plus the complex128 loop."""
    rng = np.random.default_rng(seed)
    modulus = rng.uniform(0.3, r_max, n)
    log_lam = torch.complex(torch.from_numpy(np.log(modulus)), torch.from_numpy(rng.uniform(0, 2 * np.pi, n)))
    v = rng.standard_normal((B, L, n, 2))
    x0 = rng.standard_normal((B, n, 2))
    lam = np.exp(log_lam.numpy())
    x, states = x0[..., 0] + 1j * x0[..., 1], []
    for t in range(L):                                    # the recurrence in NumPy complex128
        x = lam * x + (v[:, t, :, 0] + 1j * v[:, t, :, 1])
        states.append(x)
    expected = np.stack(states, axis=1)
    cast = dict(dtype=dtype)
    return (log_lam.to(torch.complex64 if dtype == torch.float32 else torch.complex128),
            torch.from_numpy(v).to(**cast), torch.from_numpy(x0).to(**cast),
            np.stack([expected.real, expected.imag], -1), float(modulus.max()))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("L", [1, 2, 7, 64, 101])
def test_every_scan_equals_the_complex_recurrence(L, dtype):
    log_lam, v, x0, expected, r = diagonal_problem(L, 2, L, 5, dtype=getattr(torch, dtype))
    with torch.no_grad():
        results = {"sequential": scan.sequential(log_lam, v, x0), "lane_conv": lane_conv(log_lam, v, x0)}
        for T in sorted({1, 2, 3, 5, scan.chunk_length(L), L, L + 3}):
            results[f"chunked T={T}"] = scan.chunked(log_lam, v, x0, chunk=T)
    for name, states in results.items():
        assert_close(f"{name} L={L}", expected, states.numpy(), "state", dtype, L, r)


def test_the_inplace_and_autograd_paths_compute_the_same_numbers():
    """Inference writes into one buffer, autograd builds the graph: the same arithmetic, bit for bit."""
    log_lam, v, x0, _, _ = diagonal_problem(0, 2, 45, 3)
    tracked = log_lam.clone().requires_grad_()
    for T in (4, 7):
        with torch.no_grad():
            fast = scan.chunked(log_lam, v, x0, chunk=T)
        assert torch.equal(fast, scan.chunked(tracked, v, x0, chunk=T).detach())
    with torch.no_grad():
        fast = scan.sequential(log_lam, v, x0)
    assert torch.equal(fast, scan.sequential(tracked, v, x0).detach())


def test_chunk_length_minimises_the_sequential_steps():
    for L in (1, 2, 100, 4096, 10**6):
        T = scan.chunk_length(L)
        cost = T + math.ceil(L / T)
        assert cost <= min(t + math.ceil(L / t) for t in (2 ** k for k in range(21))) * 1.5, L


def test_powers_flush_subnormal_parts_and_keep_the_rest_exact():
    log_lam = torch.complex(torch.tensor([-0.05, -1e-4, -30.0]), torch.tensor([1.0, 2.0, 0.5]))
    steps = torch.arange(4096, dtype=torch.float32)
    p = torch.view_as_real(scan.powers(log_lam, steps))
    tiny = torch.finfo(torch.float32).tiny
    assert not torch.any((p != 0) & (p.abs() < tiny)), "a subnormal part survived"
    exact = np.exp(steps.double().numpy()[:, None] * log_lam.to(torch.complex128).numpy())
    assert_close("lambda^k", np.stack([exact.real, exact.imag], -1), p.numpy(), "identity", "float32",
                 max_abs_eigenvalue=0.0)


@pytest.mark.parametrize("complex_input", [False, True])
def test_fft_convolution_is_linear_not_circular(complex_input):
    rng = np.random.default_rng(1)
    B, L, Lk, H = 2, 13, 9, 3
    k, v = rng.standard_normal((Lk, H)), rng.standard_normal((B, L, H))
    if complex_input:
        k, v = k + 1j * rng.standard_normal((Lk, H)), v + 1j * rng.standard_normal((B, L, H))
    expected = np.zeros_like(v)
    for t in range(L):
        for lag in range(min(t + 1, Lk)):
            expected[:, t] += k[lag] * v[:, t - lag]
    assert fft_length(L, Lk) >= L + Lk
    assert_close("fft conv", expected, causal_conv(torch.from_numpy(k), torch.from_numpy(v)).numpy(), "forward",
                 "float64", Lk)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_dlr_kernel_form_scan_carries_state_across_chunks(bidirectional):
    """The layer picks T >= 64, so short test inputs fit one chunk: every chunk length is forced here."""
    cfg = DLRConfig(d_model=3, d_state=4, dt_min=2e-4, dt_max=1.0, bidirectional=bidirectional)
    bundle = init(cfg, 0)
    layer = DLR.from_bundle(bundle)
    rng = np.random.default_rng(0)
    L = 23
    u = rng.standard_normal((2, L, 3))
    x0 = None if bidirectional else rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))
    y_ref, x_ref = apply_mixer(cfg, bundle.params, u, "sequential", x0)
    r = spectral_radius(cfg, bundle.params)
    with torch.no_grad():
        form = layer.materialise()
        for T in (1, 2, 3, 5, 8, L, L + 2):
            y, x = dlr.scan(form, cfg, torch.tensor(u), None if x0 is None else torch.tensor(x0), chunk=T)
            assert_close(f"dlr scan T={T}", y_ref, y.numpy(), "forward", "float64", L, r)
            if not bidirectional:
                assert_close(f"dlr scan T={T} state", x_ref, x.numpy(), "state", "float64", L, r)
