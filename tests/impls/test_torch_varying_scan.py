"""The PyTorch scans with a transition per position (`varying_scan.chunked`, `triton_varying.scan`) against the plain
loop, values and every gradient, real and complex, forward and reverse; the Triton kernels in Triton's interpreter.

The cases reach L = 1, L < T, L not a multiple of T, several chunks, a partly empty lane block, transitions near 1
(where a product of T factors loses digits unless it is a sum of logs) and near 0 (where it underflows)."""

import numpy as np
import pytest
import torch

from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import fast_scan, varying_scan

CASES = [(1, None), (3, 8), (10, 4), (17, None)]          # (L, T)


def inputs(seed, B, L, n, dtype, complex_=False, radii=(0.3, 0.999)):
    """log a with |a| in `radii` (random phases when complex), v and x0; drawn in float64, then `dtype`."""
    g = torch.Generator().manual_seed(seed)
    log_a = torch.log(radii[0] + (radii[1] - radii[0]) * torch.rand(B, L, n, generator=g, dtype=torch.float64))
    v = torch.randn(B, L, n, generator=g, dtype=torch.float64)
    x0 = torch.randn(B, n, generator=g, dtype=torch.float64)
    if complex_:
        log_a = torch.complex(log_a, np.pi * (2 * torch.rand(B, L, n, generator=g, dtype=torch.float64) - 1))
        v, x0 = torch.complex(v, torch.randn_like(v)), torch.complex(x0, torch.randn_like(x0))
    cast = {torch.float32: torch.complex64, torch.float64: torch.complex128}[dtype] if complex_ else dtype
    return [t.to(cast).requires_grad_() for t in (log_a, v, x0)]


def values_and_gradients(f, args, weight):
    out = f(*args)
    grads = torch.autograd.grad((out * weight.conj()).real.sum(), args)
    pairs = lambda t: (torch.view_as_real(t) if t.is_complex() else t).detach().double().numpy()
    return [pairs(out)] + [pairs(g) for g in grads]


def check(route, dtype, complex_, reverse, L, T, seed=0):
    args = inputs(seed, 2, L, 5, dtype, complex_)
    weight = torch.randn_like(args[1])
    ref = values_and_gradients(lambda *a: varying_scan.sequential(*a, reverse=reverse), args, weight)
    got = values_and_gradients(lambda *a: route(*a, T, reverse), args, weight)
    name = f"{'complex' if complex_ else 'real'} {'reverse' if reverse else 'forward'} L={L} T={T} {dtype}"
    for what, r, g in zip(("states", "grad log_a", "grad v", "grad x0"), ref, got):
        assert_close(f"{what}, {name}", r, g, "forward" if what == "states" else "gradient",
                     str(dtype).removeprefix("torch."), L, 0.999)


@pytest.mark.parametrize("L,T", CASES)
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_chunked_is_the_loop(L, T, complex_, reverse):
    check(lambda la, v, x0, T, rev: varying_scan.chunked(la, v, x0, T, rev), torch.float64, complex_, reverse, L, T)


def test_chunked_in_float32_near_one_and_near_zero():
    """Transitions within 1e-6 of 1 over 4,096 positions (the chunk products as sums of logs) against the float64
    loop at the tolerance table's float32 row; transitions of 1e-30 (products far below float32's range) stay finite
    and leave the states equal to the inputs."""
    near = inputs(1, 1, 4096, 3, torch.float64, radii=(1 - 1e-6, 1 - 1e-7))
    ref = varying_scan.sequential(*near).detach().numpy()
    got = varying_scan.chunked(*(t.detach().float() for t in near)).double().numpy()
    assert_close("near one, float32", ref, got, "forward", "float32", 4096, 1 - 1e-7)
    log_a, v, x0 = (t.detach().float() for t in inputs(2, 1, 64, 3, torch.float64))
    tiny = torch.full_like(log_a, -69.0)                        # a = 1e-30: every chunk product underflows
    states = varying_scan.chunked(tiny, v, x0, 8)
    assert torch.isfinite(states).all() and torch.allclose(states[:, 1:], v[:, 1:], rtol=1e-6)


def test_second_derivatives_take_the_plain_route():
    args = [t.detach().requires_grad_() for t in inputs(3, 1, 9, 2, torch.float64)]
    assert torch.autograd.gradgradcheck(lambda la, v, x0: varying_scan.chunked(la, v, x0, 4), args)


def test_bad_inputs_are_one_line_errors():
    log_a, v, x0 = (t.detach() for t in inputs(0, 2, 5, 3, torch.float64))
    with pytest.raises(LinrnnError, match=r"expected log_a and v of one shape \(B L n\)"):
        varying_scan.chunked(log_a[:, :4], v, x0)
    with pytest.raises(LinrnnError, match=r"expected x0 of shape \(2, 3\)"):
        varying_scan.chunked(log_a, v, x0[:1])
    with pytest.raises(LinrnnError, match="chunk: expected a whole number"):
        varying_scan.chunked(log_a, v, x0, 0)


def test_the_fast_route_off_cuda_is_the_chunked_scan():
    log_a, v, x0 = (t.detach() for t in inputs(4, 2, 7, 3, torch.float64))
    assert torch.equal(fast_scan.varying(log_a, v, x0), varying_scan.chunked(log_a, v, x0))


# -- the Triton kernels, in Triton's interpreter ----------------------------------------------------------------

@pytest.fixture()
def interpreter(monkeypatch):
    pytest.importorskip("triton", reason="the Triton scan needs triton (pip install triton)")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from linrnn.impls.torch import triton_varying
    return triton_varying


@pytest.mark.parametrize("complex_,reverse,L,T", [(False, False, 1, None), (False, True, 10, 4),
                                                  (True, False, 17, None), (True, True, 3, 8)])
def test_triton_kernels_are_the_loop(interpreter, complex_, reverse, L, T):
    route = lambda la, v, x0, T, rev: interpreter.scan(la, v, x0, chunk=T, lanes=4, reverse=rev)
    check(route, torch.float64, complex_, reverse, L, T)
    check(route, torch.float32, complex_, reverse, L, T, seed=1)


def test_triton_refuses_what_it_cannot_run(interpreter):
    log_a, v, x0 = (t.detach() for t in inputs(0, 1, 4, 3, torch.float64))
    with pytest.raises(LinrnnError, match="lanes must be a power of two"):
        interpreter.scan(log_a, v, x0, lanes=3)
