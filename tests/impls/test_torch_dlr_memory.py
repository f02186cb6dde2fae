"""DLR's training routes, lean in memory (docs/speed.md, "Training speed and memory").

Three changes, each checked against what it replaces:
- `final_state=False`: a caller that drops the state gets the same y and gradients, and DLR's `conv`
  no longer forms the state (a product as costly as the free response);
- the products with blocks of powers are recomputed in the backward: no graph keeps an (L 2N) block;
- `dlr.ChunkedScan`, the scan view with its own backward (the adjoint of the carries between chunks),
  against autograd through the plain loop (`dlr.sequential`) and finite differences, for L = 1, odd L,
  a short last chunk, both directions and a given initial state; its graph keeps u, the kernel and one
  state per chunk, no chunk internals and no state trajectory.
Saved tensors are counted through `torch.autograd.graph.saved_tensors_hooks`.
"""

import numpy as np
import pytest
import torch

from linrnn.impls.init import init
from linrnn.impls.reference import spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import MODES, dlr, from_bundle

# DLR's routes beside the diagonal layers' (`final_state=False` is the Mixer's, not a model's)
CONFIGS = {"rotrnn": RotRNNConfig(d_model=3, d_state=4, heads=2, gamma_max=0.999),
           "lru": LRUConfig(d_model=3, d_state=4, r_max=0.999),
           "dlr": DLRConfig(d_model=3, d_state=4, dt_min=2e-4, dt_max=0.5)}


def as_numpy(t):
    """float64 NumPy, a complex tensor as its (Re, Im) pairs."""
    return (torch.view_as_real(t.resolve_conj()) if t.is_complex() else t).detach().resolve_neg().double().numpy()


def initial_state(kind, cfg, B, generator):
    if kind == "rotrnn":
        return torch.randn(B, cfg.heads, cfg.d_state, dtype=torch.float64, generator=generator)
    shape = (B, cfg.d_state) if kind == "lru" else (B, cfg.d_model, cfg.d_state)
    return torch.randn(shape, dtype=torch.complex128, generator=generator)


def y_and_gradients(layer, u, mode, x0, weight, final_state):
    """y and the gradients of sum(y * weight) with respect to u, x0 (if given) and every parameter."""
    inputs = [u] + ([x0] if x0 is not None else []) + list(layer.parameters())
    y, x = layer(u, mode, x0, final_state=final_state)
    assert (x is None) == (not final_state), "the state after u is returned exactly when it is asked for"
    return [as_numpy(y)] + [as_numpy(g) for g in torch.autograd.grad((y * weight).sum(), inputs)]


# -- final_state=False --------------------------------------------------------------------------

@pytest.mark.parametrize("with_x0", [False, True])
@pytest.mark.parametrize("kind, mode", [(k, m) for k in CONFIGS for m in MODES])
def test_dropping_the_final_state_changes_neither_y_nor_the_gradients(kind, mode, with_x0, monkeypatch):
    monkeypatch.setattr(dlr, "chunk_length", lambda length, N: 4)       # DLR's scan: several chunks at L = 11
    cfg = CONFIGS[kind]
    layer = from_bundle(init(cfg, 1))
    g = torch.Generator().manual_seed(2)
    u = torch.randn(2, 11, 3, dtype=torch.float64, generator=g, requires_grad=True)
    x0 = initial_state(kind, cfg, 2, g).requires_grad_() if with_x0 else None
    weight = torch.randn(2, 11, 3, dtype=torch.float64, generator=g)
    kept = y_and_gradients(layer, u, mode, x0, weight, final_state=True)
    dropped = y_and_gradients(layer, u, mode, x0, weight, final_state=False)
    for k, d in zip(kept, dropped):
        np.testing.assert_array_equal(d, k)


def test_dlr_conv_and_scan_form_the_final_state_only_when_asked(monkeypatch):
    layer = from_bundle(init(CONFIGS["dlr"], 1))
    u = torch.randn(2, 11, 3, dtype=torch.float64)
    calls = []
    real_advance, real_powers = dlr.advance, dlr._powers

    def counting_advance(*args):
        calls.append(args[1].shape[1])                                  # positions advanced over
        return real_advance(*args)

    def counting_powers(log_lam, start, stop, descending_from=None):
        if descending_from is not None:                                 # a chunk's end state: lambda^(r-1-s), s < r
            calls.append(stop - start)
        return real_powers(log_lam, start, stop, descending_from)

    monkeypatch.setattr(dlr, "advance", counting_advance)
    monkeypatch.setattr(dlr, "chunk_length", lambda length, N: 4)
    layer(u, "conv", final_state=False)
    assert calls == []
    layer(u, "conv")
    assert calls == [11]
    calls.clear()
    monkeypatch.setattr(dlr, "_powers", counting_powers)
    layer(u, "scan", final_state=False)
    assert calls == [4, 4], "one state after each chunk but the last"
    calls.clear()
    layer(u, "scan")
    assert calls == [4, 4, 3], "and the final state after the last (short) chunk"


# -- what the graphs keep ---------------------------------------------------------------------------

def saved_bytes(run):
    """run() under hooks that see every tensor a graph saves for the backward -> (result, bytes of the distinct
    storages saved: a view of u, or one tensor saved by several nodes, counts once)."""
    storages = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        result = run()
    return result, sum(storages.values())


def nbytes(*tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def test_the_conv_route_keeps_no_powers(monkeypatch):
    B, L, H, N = 2, 256, 4, 8
    layer = from_bundle(init(DLRConfig(d_model=H, d_state=N), 0))
    monkeypatch.setattr(dlr, "BLOCK", 32 * N)                           # eight blocks of powers
    u = torch.randn(B, L, H, dtype=torch.float64, requires_grad=True)
    (y, _), saved = saved_bytes(lambda: layer(u, "conv", final_state=False))
    kernel = torch.empty(L, H, dtype=u.dtype)
    assert saved <= nbytes(u, kernel, *layer.parameters()) * 1.25, "a block of powers (S 2N) was kept"
    y.sum().backward()                                                  # the recomputed blocks give the gradients
    assert all(p.grad is not None for p in layer.parameters())


def test_the_chunked_scan_keeps_u_the_kernel_and_one_state_per_chunk(monkeypatch):
    B, L, H, N, T = 2, 256, 4, 8, 16
    layer = from_bundle(init(DLRConfig(d_model=H, d_state=N), 0))
    monkeypatch.setattr(dlr, "chunk_length", lambda length, N: T)
    u = torch.randn(B, L, H, dtype=torch.float64, requires_grad=True)
    _, saved = saved_bytes(lambda: layer(u, "scan", final_state=False))
    kernel, states = torch.empty(T, H, dtype=u.dtype), torch.empty(L // T + 1, B, H, N, dtype=torch.complex128)
    assert saved <= nbytes(u, kernel, states, *layer.parameters()) * 1.25, "a chunk's insides or a trajectory were kept"


# -- ChunkedScan against the loop and finite differences ----------------------------------------------

def complex_weights(results):
    """d/dW_re and d/dW_im (and the _rev pair) as one array each: the gradient of one complex weight, compared at
    its own scale (at L = 2 the backward part reads lag 0 only, where the exact d/dW_im_rev is 0 and the FFT's
    rounding of d/dW_re_rev is all that is left of it)."""
    for re in [k for k in results if "W_re" in k]:
        im = re.replace("W_re", "W_im")
        results[re.replace("W_re", "W")] = np.stack([results.pop(re), results.pop(im)])
    return results


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bidirectional, with_x0", [(False, False), (False, True), (True, False)])
@pytest.mark.parametrize("L, T", [(1, 4), (2, 4), (7, 3), (9, 4), (33, 8), (64, 8)])
def test_the_chunked_scan_equals_autograd_through_the_loop(L, T, bidirectional, with_x0, dtype, monkeypatch):
    monkeypatch.setattr(dlr, "chunk_length", lambda length, N: T)
    cfg = DLRConfig(d_model=3, d_state=4, dt_min=2e-4, dt_max=0.5, bidirectional=bidirectional)
    bundle = init(cfg, L)
    g = torch.Generator().manual_seed(L)
    real = getattr(torch, dtype)
    u_np, w_np = (torch.randn(2, L, 3, generator=g, dtype=torch.float64) for _ in range(2))
    x0_np = torch.randn(2, 3, 4, generator=g, dtype=torch.complex128) if with_x0 else None
    w_x = torch.randn(2, 3, 4, 2, generator=g, dtype=torch.float64).to(real)

    def run(mode):
        layer = from_bundle(bundle, real)
        u = u_np.to(real).requires_grad_()
        x0 = None if x0_np is None else x0_np.to(dlr.complex_dtype(real)).requires_grad_()
        y, x = layer(u, mode, x0)
        loss = (y * w_np.to(real)).sum() + (0 if x is None else (torch.view_as_real(x) * w_x).sum())
        inputs = [u] + ([x0] if with_x0 else []) + list(layer.parameters())
        names = ["u"] + (["x0"] if with_x0 else []) + [n for n, _ in layer.named_parameters()]
        grads = torch.autograd.grad(loss, inputs, materialize_grads=True)     # L = 1: W_rev reads nothing
        return complex_weights({"y": as_numpy(y), **({} if x is None else {"x_L": as_numpy(x)}),
                                **{f"d/d{n}": as_numpy(t) for n, t in zip(names, grads)}})

    expected, got = run("sequential"), run("scan")
    assert expected.keys() == got.keys()
    r = spectral_radius(cfg, bundle.params)
    for name, e in expected.items():
        kind = "forward" if name == "y" else "state" if name == "x_L" else "gradient"
        assert_close(f"dlr scan {name} L={L} T={T}", e, got[name], kind, dtype, L, r)


@pytest.mark.parametrize("with_x0", [False, True])
def test_the_chunked_scan_passes_gradcheck(with_x0):
    g = torch.Generator().manual_seed(5)
    B, L, H, N, T = 2, 9, 3, 2, 4                                       # chunks of 4, 4 and 1
    K = torch.randn(T, H, dtype=torch.float64, generator=g, requires_grad=True)
    log_lam = torch.complex(-torch.rand(N, dtype=torch.float64, generator=g),
                            3 * torch.rand(N, dtype=torch.float64, generator=g)).requires_grad_()
    W = torch.randn(H, N, dtype=torch.complex128, generator=g, requires_grad=True)
    u = torch.randn(B, L, H, dtype=torch.float64, generator=g, requires_grad=True)
    x0 = torch.randn(B, H, N, dtype=torch.complex128, generator=g, requires_grad=True) if with_x0 else None

    def f(K, log_lam, W, u, *x0):
        y, x = dlr.ChunkedScan.apply(K, log_lam, W, u, x0[0] if x0 else None, True)
        return y, torch.view_as_real(x)

    assert torch.autograd.gradcheck(f, (K, log_lam, W, u, *([x0] if with_x0 else [])))
