"""The PyTorch scans' own backward (`scan.DiagonalScan`, `layer_scan.DiagonalLayerScan`) against autograd.

Both compute gradients by the adjoint recurrence (a reverse chunked scan with the transition conjugated)
and recompute the states from saved chunk boundaries, so they are checked against what they replace:
finite differences (gradcheck) and autograd through the plain step loop (`scan.sequential`,
`diagonal.sequential`), for L = 1, odd L, L not a multiple of the chunk, several blocks, both
directions and a given initial state; and a planted mistake in the adjoint must be caught.
"""

import numpy as np
import pytest
import torch

from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import diagonal, dlr, layer_scan, scan

LENGTHS = (1, 2, 7, 64, 65, 130)


def diagonal_inputs(seed, B, L, n, r_max=0.999, dtype=torch.float64):
    """log lambda with |lambda| in [0.3, r_max] and phases in [0, 2 pi), pairs v and x0, all requiring grad."""
    g = torch.Generator().manual_seed(seed)
    modulus = 0.3 + (r_max - 0.3) * torch.rand(n, generator=g, dtype=torch.float64)
    phase = 2 * np.pi * torch.rand(n, generator=g, dtype=torch.float64)
    cdtype = scan.complex_dtype(dtype)
    log_lam = torch.complex(modulus.log(), phase).to(cdtype).requires_grad_()
    v = torch.randn(B, L, n, 2, generator=g, dtype=torch.float64).to(dtype).requires_grad_()
    x0 = torch.randn(B, n, 2, generator=g, dtype=torch.float64).to(dtype).requires_grad_()
    return log_lam, v, x0, float(modulus.max())


def as_numpy(t):
    """float64 NumPy, a complex tensor as its (Re, Im) pairs (so no part of a complex gradient goes unchecked)."""
    return (torch.view_as_real(t) if t.is_complex() else t).detach().double().numpy()


def gradients(f, inputs, weight):
    out = f(*inputs)
    return [as_numpy(g) for g in torch.autograd.grad((out * weight).sum(), inputs)]


def check_against_the_loop(chunked, L, T, dtype, with_x0):
    log_lam, v, x0, r = diagonal_inputs(L + (T or 0), 2, L, 5, dtype=getattr(torch, dtype))
    inputs = (log_lam, v, x0) if with_x0 else (log_lam, v)
    weight = torch.randn(v.shape, generator=torch.Generator().manual_seed(1), dtype=v.dtype)
    got = gradients(lambda *a: chunked(*a, chunk=T) if with_x0 else chunked(*a, None, chunk=T), inputs, weight)
    expected = gradients(scan.sequential, inputs, weight)
    for name, e, g in zip(("log_lambda", "v", "x0"), expected, got):
        assert_close(f"grad {name} L={L} T={T}", e, g, "gradient", dtype, L, r)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("L", LENGTHS)
def test_the_scan_backward_equals_autograd_through_the_loop(L, dtype):
    for T in sorted({1, 3, 8, scan.chunk_length(L)}):
        for with_x0 in (False, True):
            check_against_the_loop(scan.chunked, L, T, dtype, with_x0)


@pytest.mark.parametrize("L, T", [(1, 1), (5, 2), (9, 4), (16, 4)])
def test_the_scan_backward_passes_gradcheck(L, T):
    log_lam, v, x0, _ = diagonal_inputs(L, 2, L, 3, r_max=0.99)
    assert torch.autograd.gradcheck(lambda a, b, c: scan.chunked(a, b, c, chunk=T), (log_lam, v, x0))


def test_a_transition_not_conjugated_in_the_adjoint_is_caught(monkeypatch):
    real_scan_chunks = scan.scan_chunks

    def unconjugated(lam_powers, w, carry, reverse=False):
        return real_scan_chunks(lam_powers.conj() if reverse else lam_powers, w, carry, reverse)

    monkeypatch.setattr(scan, "scan_chunks", unconjugated)
    with pytest.raises(AssertionError, match="grad"):
        check_against_the_loop(scan.chunked, 65, 8, "float64", True)


def test_the_scan_saves_boundaries_not_states():
    log_lam, v, x0, _ = diagonal_inputs(0, 2, 256, 4)
    states = scan.chunked(log_lam, v, x0, chunk=16)
    saved = sum(t.numel() for t in states.grad_fn.saved_tensors)
    B, L, n, _ = v.shape        # log lambda, v, the boundaries and x0 (the plain route's input for a second derivative)
    assert saved <= log_lam.numel() + v.numel() + B * (L // 16) * n + x0.numel(), "a state trajectory was saved"


# -- the layer's scan view ------------------------------------------------------------------------

def diagonal_layer(seed, n, H, bidirectional, dtype=torch.float64, r_max=0.999):
    log_lam, _, _, r = diagonal_inputs(seed, 1, 1, n, r_max, dtype)
    g = torch.Generator().manual_seed(seed + 1)

    def param(*shape):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) / np.sqrt(shape[-1])).to(dtype).requires_grad_()

    W_rev = param(H, 2 * n) if bidirectional else None
    return (log_lam, param(2 * n, H), param(H, 2 * n), W_rev, param(H)), r


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 8 positions (chunks of 2 or 4), so that short sequences cross several blocks."""
    monkeypatch.setattr(layer_scan, "MIN_BLOCK", 8)
    monkeypatch.setattr(layer_scan, "SHARE", 1)
    monkeypatch.setattr(layer_scan, "BLOCK", 8 * 2 * 3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("L", [1, 7, 8, 9, 33, 64])
def test_the_layer_scan_equals_autograd_through_the_loop(small_blocks, L, bidirectional, dtype):
    B, n, H = 2, 3, 4
    (log_lam, W_in, W_out, W_rev, D), r = diagonal_layer(L, n, H, bidirectional, getattr(torch, dtype))
    g = torch.Generator().manual_seed(L)
    u = torch.randn(B, L, H, generator=g, dtype=torch.float64).to(W_in.dtype).requires_grad_()
    x0 = torch.randn(B, n, 2, generator=g, dtype=torch.float64).to(W_in.dtype).requires_grad_()
    w_y, w_x = torch.randn(B, L, H, generator=g).to(u.dtype), torch.randn(B, n, 2, generator=g).to(u.dtype)
    inputs = [t for t in (log_lam, W_in, W_out, W_rev, D, u, x0) if t is not None]
    names = [k for k, t in zip(("log_lambda", "W_in", "W_out", "W_out_rev", "D", "u", "x0"),
                               (log_lam, W_in, W_out, W_rev, D, u, x0)) if t is not None]

    def run(view):
        y, x_last = view(u, x0)
        grads = torch.autograd.grad((y * w_y).sum() + (x_last * w_x).sum(), inputs)
        return as_numpy(y), as_numpy(x_last), [as_numpy(t) for t in grads]

    form = diagonal.DiagonalForm.build(log_lam, W_in, W_out, W_rev, D)
    y, x_last, got = run(lambda u, x0: layer_scan.layer_scan(log_lam, W_in, W_out, W_rev, D, u, x0))
    y_ref, x_ref, expected = run(lambda u, x0: diagonal.sequential(form, u, x0))
    assert layer_scan.block_length(L, B, n) < L or L <= 8
    assert_close(f"y L={L}", y_ref, y, "forward", dtype, L, r)
    assert_close(f"x_L L={L}", x_ref, x_last, "state", dtype, L, r)
    for name, e, g in zip(names, expected, got):
        assert_close(f"grad {name} L={L}", e, g, "gradient", dtype, L, r)


def test_the_layer_scan_passes_gradcheck(small_blocks):
    (log_lam, W_in, W_out, W_rev, D), _ = diagonal_layer(3, 2, 3, True, r_max=0.99)
    g = torch.Generator().manual_seed(3)
    u = torch.randn(1, 19, 3, generator=g, dtype=torch.float64, requires_grad=True)
    x0 = torch.randn(1, 2, 2, generator=g, dtype=torch.float64, requires_grad=True)

    def f(*args):
        return layer_scan.layer_scan(*args)[0]
    assert torch.autograd.gradcheck(f, (log_lam, W_in, W_out, W_rev, D, u, x0))


def test_the_layer_scan_saves_its_input_and_boundaries_only(small_blocks):
    (log_lam, W_in, W_out, W_rev, D), _ = diagonal_layer(0, 4, 6, True)
    u = torch.randn(2, 64, 6, dtype=torch.float64, requires_grad=True)
    y, _ = layer_scan.layer_scan(log_lam, W_in, W_out, W_rev, D, u)
    saved = sum(t.numel() for t in y.grad_fn.saved_tensors if t is not None)
    params = sum(t.numel() for t in (log_lam, W_in, W_out, W_rev, D))
    T = layer_scan.scans.chunk_length(layer_scan.block_length(64, 2, 4))
    boundaries = 2 * 2 * (64 // T) * 4   # both directions x B x (L / T) chunks x n lanes
    assert saved <= u.numel() + params + boundaries, "a state trajectory or a projection was saved"


# -- mixed precision: the projections in bf16 under autocast, the recurrence in float32 -------------

# the two recurrences recorded below, the diagonal layers' (projections under autocast) and DLR's (none)
@pytest.mark.parametrize("kind", ["rotrnn", "lru", "dlr"])
def test_autocast_runs_the_projections_in_bf16_and_the_recurrence_in_float32(kind, monkeypatch):
    from linrnn.verify.bench import layer_config
    from linrnn.impls.init import init
    from linrnn.impls.torch import from_bundle

    seen = []
    real_scan_chunks, real_carries = scan.scan_chunks, dlr.carries

    def recording(lam_powers, w, carry, reverse=False, **layout):
        seen.append(w.dtype)
        return real_scan_chunks(lam_powers, w, carry, reverse, **layout)

    def recording_dlr(log_lam, W, chunks, L, x0, with_state, y):     # DLR's recurrence: the states between chunks
        X = real_carries(log_lam, W, chunks, L, x0, with_state, y)
        seen.extend(t.dtype for t in (x0, X) if t is not None)
        return X

    monkeypatch.setattr(scan, "scan_chunks", recording)
    monkeypatch.setattr(dlr, "carries", recording_dlr)
    layer = from_bundle(init(layer_config(kind, 8, 8, 2), 0), torch.float32)
    u = torch.randn(2, 200, 8, generator=torch.Generator().manual_seed(0)).bfloat16().float().requires_grad_()
    y32, _ = layer(u, "scan")
    g32 = torch.autograd.grad(y32.sum(), u)[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, _ = layer(u.bfloat16(), "scan")                 # a bf16 input, as from an autocast encoder
    g = torch.autograd.grad(y.sum(), u)[0]
    assert y.dtype == torch.float32 and g.dtype == torch.float32
    assert seen and set(seen) == {torch.complex64}, "the recurrence left float32"
    for name, ref, got in (("y", y32, y), ("grad u", g32, g)):
        assert_close(f"{kind} {name} under autocast", as_numpy(ref), as_numpy(got), "forward", "bfloat16")
    bf16_used = not np.allclose(as_numpy(y32), as_numpy(y), rtol=0, atol=1e-6 * float(y32.detach().abs().max()))
    assert bf16_used == (kind != "dlr"), "DLR has no projections; RotRNN and LRU must have used bf16 in them"


@pytest.mark.parametrize("reverse", [False, True])
def test_time_major_chunks_give_the_states_and_boundaries_of_batch_major_ones(reverse):
    g = torch.Generator().manual_seed(3)
    B, nc, T, n = 2, 3, 4, 5
    log_lam = torch.complex(-torch.rand(n, generator=g, dtype=torch.float64), torch.randn(n, generator=g, dtype=torch.float64))
    lam_powers = scan.powers(log_lam, torch.arange(T + 1, dtype=torch.float64))
    w = torch.randn(B, nc, T, n, generator=g, dtype=torch.complex128)
    carry = torch.randn(B, n, generator=g, dtype=torch.complex128)
    states, bounds = scan.scan_chunks(lam_powers, w, carry, reverse)
    w_tm = w.permute(2, 0, 1, 3).contiguous()
    states_tm, bounds_tm = scan.scan_chunks(lam_powers, w_tm, carry, reverse, time_dim=0, out=w_tm)
    assert states_tm.data_ptr() == w_tm.data_ptr()                    # in place when asked
    torch.testing.assert_close(states_tm.permute(1, 2, 0, 3), states, rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(bounds_tm, bounds, rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="time_dim: expected 2"):
        scan.scan_chunks(lam_powers, w, carry, reverse, time_dim=1)


# -- the parts of the forward, timed alone by `bench.diagonal_forward_parts` (docs/speed.md) ----------

@pytest.mark.parametrize("kind", ["rotrnn", "lru"])   # the two layers docs/speed.md times by parts
def test_the_forward_parts_are_the_layers_own(small_blocks, kind):
    """Each part computes what that part of the layer computes, over several blocks and a padded last one."""
    from linrnn.verify.bench import layer_config
    from linrnn.impls.init import init
    from linrnn.impls.torch import from_bundle
    from linrnn.verify import bench_torch as bench

    B, L, H, N, heads = 2, 21, 3, 4, 2
    parts = bench.diagonal_forward_parts(kind, B, L, H, N, heads, dtype="float64", seed=5)
    assert set(parts) == set(bench.DIAGONAL_PARTS)
    layer = from_bundle(init(layer_config(kind, H, N, heads), 5), torch.float64)
    u = torch.randn(B, L, H, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    f = layer.materialise()
    block = layer_scan.block_length(L, B, f.lanes)
    T, last = scan.chunk_length(block), L - (L - 1) // block * block
    assert block < L and last % T, "the sizes must give several blocks and a padded last chunk"

    with torch.no_grad():
        v = u @ f.W_in.T                                                           # (B L 2n)
        torch.testing.assert_close(parts["layer scan"](), layer(u, "scan")[0], rtol=0, atol=0)
        torch.testing.assert_close(parts["parameters"](), f.W_in, rtol=0, atol=0)
        # lambda = 0: no recurrence, so y = W_out W_in u + D u
        torch.testing.assert_close(parts["projections and copies"](), v @ f.W_out.T + f.D * u, rtol=1e-12, atol=1e-12)
        got = torch.zeros(B, last, H, dtype=u.dtype)
        layer_scan._batch_major(got, parts["two products in blocks"]())
        torch.testing.assert_close(got, v[:, -last:] @ f.W_out.T, rtol=1e-12, atol=1e-12)
        states = torch.zeros(B, last, f.lanes, 2, dtype=u.dtype)
        layer_scan._batch_major(states, parts["scan in blocks"]())
        expected = scan.sequential(f.log_lam, v.unflatten(-1, (f.lanes, 2)))[:, -last:]
        torch.testing.assert_close(states, expected, rtol=1e-10, atol=1e-10)
    with pytest.raises(LinrnnError, match="kind: expected rotrnn or lru"):
        bench.diagonal_forward_parts("dlr")
    with pytest.raises(LinrnnError, match="repeats: expected at least 1 round"):
        bench.interleaved_ms(parts, 0)
