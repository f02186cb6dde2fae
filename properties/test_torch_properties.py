"""The PyTorch layers against the float64 reference on random instances: every mixer x view x dtype x direction.

Bundles come from each paper's initialisation with a drawn seed and small drawn sizes; the init ranges
reach decays of 0.9999 (RotRNN gamma_max, LRU r_max, DLR dt_min = 2e-4). Lengths include L = 1 and
odd values. Bulk arrays (parameters, inputs, states) come from drawn seeds, so Hypothesis shrinks the
structure (sizes, lengths, split points), not the numbers. Every comparison goes through the tolerance
table with L and the drawn spectral radius. Where the compared quantity is a sum of larger terms that
can cancel, the error is measured against the size of the terms (the table's `scale`): outputs
y = mixer(u) + D * u against the larger of the two (`output_terms`); states x_L = sum_s A^(L-1-s) v_s
(+ A^L x0), |A^k| <= 1, against the largest projected input v_s or x0 (`state_terms`). Hypothesis
finds inputs whose sums cancel to 1e-4 of their terms; no implementation can promise more there.

RotRNN draws both initialisations of M (N(0, 1), the newest code's, and near the identity) in every
dtype: the reference computes P through a Hermitian eigendecomposition, orthogonal to O(N eps). The
PyTorch layer holds its state as z = P^T x with P from `matrix_exp` (orthogonal to about
eps N ||M - M^T||), so wherever a state crosses that boundary the table's basis term applies
(`crossing`; a fresh seed found a 6 x 6 M with ||M - M^T||_2 near 10 whose L = 1 state was 73 eps off).
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, lru, rotrnn, spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close, basis_scale
from linrnn.impls.torch import MODES, from_bundle

KINDS = ("rotrnn", "lru", "dlr")   # the models whose summands `output_terms` bounds from their equations (every
# registered model: test_crossframework_properties.py and its tests/models file)
DTYPES = {"float32": torch.float32, "float64": torch.float64}
COMPLEX = {"float32": torch.complex64, "float64": torch.complex128}
seeds = st.integers(0, 2**16)


@st.composite
def layers(draw, kind, bidirectional, dtype="float32"):
    H = draw(st.integers(1, 4))
    if kind == "rotrnn":
        m_init = draw(st.sampled_from(["normal", "near_identity"]))
        cfg = RotRNNConfig(d_model=H, d_state=2 * draw(st.integers(1, 3)), heads=draw(st.integers(1, 3)),
                           bidirectional=bidirectional, gamma_max=0.9999, m_init=m_init)
    elif kind == "lru":
        cfg = LRUConfig(d_model=H, d_state=draw(st.integers(1, 5)), bidirectional=bidirectional,
                        r_min=draw(st.sampled_from([0.0, 0.5, 0.9])), r_max=0.9999)
    else:
        cfg = DLRConfig(d_model=H, d_state=draw(st.integers(1, 5)), bidirectional=bidirectional, dt_min=2e-4,
                        dt_max=draw(st.sampled_from([2e-4, 1e-2, 1.0])))
    bundle = init(cfg, draw(seeds))
    return cfg, bundle, spectral_radius(cfg, bundle.params)


def inputs(seed, B, L, H):
    return np.random.default_rng(seed).standard_normal((B, L, H))


def random_state(cfg, B, seed):
    """A non-zero state in the reference's convention (NumPy)."""
    rng = np.random.default_rng(seed)
    if cfg.kind == "rotrnn":
        return rng.standard_normal((B, cfg.heads, cfg.d_state))
    shape = (B, cfg.d_state) if cfg.kind == "lru" else (B, cfg.d_model, cfg.d_state)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def output_terms(bundle, u, y_ref):
    """max(max|D u|, max|y - D u|): the size of the two terms whose sum is y."""
    skip = bundle.params["D"] * u
    return max(float(np.max(np.abs(skip))), float(np.max(np.abs(y_ref - skip))))


def initial_state_terms(bundle, x0):
    """max_h sum_n |C_hn| times the largest ||x0||: the size of the read-out terms C A^t x0 in y.

    Every |eigenvalue| <= 1 and A is normal, so no entry of A^t x0 exceeds ||x0||. These terms can cancel
    far below max|y - D u| (fresh Hypothesis seeds found a 15-fold cancellation at L = 1), and the
    rounding is relative to the terms, not to their sum.
    """
    p = bundle.params
    C = p["C"] if "C" in p else (p["C_re"] + 1j * p["C_im"] if "C_re" in p else p["W_re"] + 1j * p["W_im"])
    return float(np.abs(C).sum(axis=1).max()) * float(np.linalg.norm(x0.reshape(x0.shape[0], -1), axis=1).max())


def state_terms(cfg, bundle, u, x0=None):
    """The largest projected input v_s (RotRNN xi B u, LRU gamma B u, DLR u) or initial state entry."""
    p = bundle.params
    v = {"rotrnn": lambda: rotrnn.projected_input(p, u), "lru": lambda: u @ lru.input_matrix(p).T,
         "dlr": lambda: u}[cfg.kind]()
    return max(float(np.max(np.abs(v))), 0.0 if x0 is None else float(np.max(np.abs(x0))))


def crossing(cfg, bundle) -> float:
    """RotRNN's `basis_scale`: its PyTorch layer holds z = P^T x, so states cross P in and out; 0 otherwise."""
    return basis_scale(bundle.params["M"]) if cfg.kind == "rotrnn" else 0.0


def as_state(array, dtype):
    t = torch.from_numpy(array)
    return t.to(COMPLEX[dtype]) if t.is_complex() else t.to(DTYPES[dtype])


VIEWS = [(kind, mode, bi) for kind in KINDS for mode in MODES for bi in (False, True) if not (bi and mode == "step")]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind, mode, bidirectional", VIEWS)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), B=st.integers(1, 3), L=st.integers(1, 24), seed=seeds)
def test_torch_equals_the_reference(kind, mode, bidirectional, dtype, data, B, L, seed):
    cfg, bundle, r = data.draw(layers(kind, bidirectional, dtype))
    u = inputs(seed, B, L, cfg.d_model)
    y_ref, x_ref = apply_mixer(cfg, bundle.params, u, "sequential")
    layer = from_bundle(bundle, DTYPES[dtype])
    y, x = layer(torch.tensor(u, dtype=layer.dtype), mode)
    assert_close(f"{kind} {mode} {dtype} bi={bidirectional}", y_ref, y.detach().numpy(), "forward", dtype, L, r,
                 scale=output_terms(bundle, u, y_ref))
    if not bidirectional:
        assert_close(f"{kind} {mode} {dtype} final state", x_ref, x.detach().numpy(), "state", dtype, L, r,
                     scale=state_terms(cfg, bundle, u), basis=crossing(cfg, bundle))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=30, deadline=None)
@given(data=st.data(), L=st.integers(1, 24), seed=seeds, dtype=st.sampled_from(sorted(DTYPES)))
def test_a_nonzero_initial_state_is_carried_like_the_reference(kind, data, L, seed, dtype):
    cfg, bundle, r = data.draw(layers(kind, False, dtype))
    mode = data.draw(st.sampled_from(MODES))
    u, x0 = inputs(seed, 2, L, cfg.d_model), random_state(cfg, 2, seed + 1)
    y_ref, x_ref = apply_mixer(cfg, bundle.params, u, "sequential", x0)
    layer = from_bundle(bundle, DTYPES[dtype])
    y, x = layer(torch.tensor(u, dtype=layer.dtype), mode, as_state(x0, dtype))
    assert_close(f"{kind} {mode} from x0", y_ref, y.detach().numpy(), "forward", dtype, L, r,
                 scale=max(output_terms(bundle, u, y_ref), initial_state_terms(bundle, x0)), basis=crossing(cfg, bundle))
    assert_close(f"{kind} {mode} state from x0", x_ref, x.detach().numpy(), "state", dtype, L, r,
                 scale=state_terms(cfg, bundle, u, x0), basis=crossing(cfg, bundle))


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=30, deadline=None)
@given(data=st.data(), L=st.integers(2, 24), seed=seeds)
def test_streaming_in_two_parts_equals_one_run(kind, data, L, seed):
    """[0:t] in one view, then [t:L] from its state in another (or position by position), equals one run."""
    cfg, bundle, r = data.draw(layers(kind, False))
    t = data.draw(st.integers(1, L - 1))
    first, second = data.draw(st.sampled_from(MODES)), data.draw(st.sampled_from(MODES + ("step()",)))
    layer = from_bundle(bundle)
    u = torch.tensor(inputs(seed, 2, L, cfg.d_model))
    y_full, x_full = layer(u, "sequential")
    y_a, state = layer(u[:, :t], first)
    if second == "step()":
        parts = []
        for s in range(t, L):
            y_s, state = layer.step(u[:, s], state)
            parts.append(y_s[:, None])
        y_b = torch.cat(parts, dim=1)
    else:
        y_b, state = layer(u[:, t:], second, state)
    y_full = y_full.detach().numpy()
    assert_close(f"{kind} {first} then {second} at t={t}", y_full, torch.cat([y_a, y_b], dim=1).detach().numpy(),
                 "forward", "float64", L, r, scale=output_terms(bundle, u.numpy(), y_full), basis=crossing(cfg, bundle))
    assert_close(f"{kind} streamed state", x_full.detach().numpy(), state.detach().numpy(), "state", "float64", L, r,
                 scale=state_terms(cfg, bundle, u.numpy()), basis=crossing(cfg, bundle))
