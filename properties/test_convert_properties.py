"""Properties of the RotRNN <-> LRU converters (claim R5) on random small bundles, float64 reference.

Domain: each paper's initialisation with decays reaching 0.9999 (RotRNN gamma, LRU |lambda|, r_min = 0);
angles from the init (RotRNN theta ~ U[0, 2 pi] is never exactly 0 in float64 draws, so every drawn
bundle converts). Shared moduli for grouped heads are made by repeating nu_log, optionally shuffled.
L = 1 and odd lengths are reachable; bulk arrays come from drawn seeds. Errors are measured relative to
the magnitude of the terms summed into each output (`output_terms`), since a drawn output can cancel
to far below them (seen at L = 1: outputs of 4e-5 from terms of order 1).
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from linrnn.impls.convert import lru_to_rotrnn, output_terms, rotrnn_to_lru
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close

common = settings(max_examples=30, deadline=None)
seeds = st.integers(0, 2**16)


@st.composite
def rotrnn_bundles(draw):
    cfg = RotRNNConfig(d_model=draw(st.integers(1, 3)), d_state=2 * draw(st.integers(1, 3)),
                       heads=draw(st.integers(1, 3)), bidirectional=draw(st.booleans()), gamma_max=0.9999)
    return init(cfg, draw(seeds))


@st.composite
def lru_bundles(draw, grouped=False):
    """An LRU and a number of heads that its moduli allow (None: one head per mode)."""
    heads = draw(st.integers(1, 3)) if grouped else None
    per_head = draw(st.integers(1, 3))
    N = heads * per_head if grouped else draw(st.integers(1, 5))
    cfg = LRUConfig(d_model=draw(st.integers(1, 3)), d_state=N, bidirectional=draw(st.booleans()),
                    r_min=0.0, r_max=0.9999)
    bundle = init(cfg, draw(seeds))
    if grouped:
        nu_log = np.repeat(bundle.params["nu_log"][:heads], per_head)
        if draw(st.booleans()):
            nu_log = np.random.default_rng(draw(seeds)).permutation(nu_log)
        bundle = bundle.replace(nu_log=nu_log)
    return bundle, heads


def same_map(a, b, what, L, seed):
    u = np.random.default_rng(seed).standard_normal((2, L, a.config.d_model))
    y_a = apply_mixer(a.config, a.params, u, "sequential")[0]
    y_b = apply_mixer(b.config, b.params, u, "sequential")[0]
    assert_close(what, y_a, y_b, "forward", "float64", L, spectral_radius(a.config, a.params),
                 scale=float(np.max(output_terms(a, u))))


@common
@given(rotrnn_bundles(), st.integers(1, 20), seeds)
def test_rotrnn_to_lru_and_back_keeps_the_outputs(rot, L, seed):
    lru = rotrnn_to_lru(rot)
    assert lru.config.d_state == rot.config.heads * rot.config.d_state // 2
    same_map(rot, lru, "RotRNN vs its LRU", L, seed)
    same_map(rot, lru_to_rotrnn(lru, heads=rot.config.heads), "RotRNN -> LRU -> RotRNN (same heads)", L, seed)
    same_map(rot, lru_to_rotrnn(lru), "RotRNN -> LRU -> RotRNN (heads of 2)", L, seed)


@common
@given(lru_bundles(), st.integers(1, 20), seeds)
def test_lru_to_rotrnn_and_back_keeps_the_outputs(drawn, L, seed):
    lru, _ = drawn
    rot = lru_to_rotrnn(lru)
    assert (rot.config.heads, rot.config.d_state) == (lru.config.d_state, 2)
    same_map(lru, rot, "LRU vs its RotRNN", L, seed)
    back = rotrnn_to_lru(rot)
    assert np.array_equal(back.params["nu_log"], lru.params["nu_log"])
    same_map(lru, back, "LRU -> RotRNN -> LRU", L, seed)


@common
@given(lru_bundles(grouped=True), st.integers(1, 20), seeds)
def test_lru_with_shared_moduli_converts_to_fewer_heads(drawn, L, seed):
    lru, heads = drawn
    rot = lru_to_rotrnn(lru, heads=heads)
    assert rot.config.heads == heads and rot.config.d_state == 2 * lru.config.d_state // heads
    same_map(lru, rot, f"LRU vs its {heads}-head RotRNN", L, seed)
    same_map(lru, rotrnn_to_lru(rot), "LRU -> grouped RotRNN -> LRU", L, seed)
