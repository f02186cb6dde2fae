"""Padded rows and packed sequences, randomised (docs/models.md, "Padding and packed sequences").

For random lengths and random segmentations (ids that change at random positions and may come back, so that a
segment is a maximal run of one id), every mixer in both directions and every mode:

* the reference: each row's valid part (lengths) and each segment (segments) equals the same input run alone,
  in both of its views (`sequential` resets its state, `conv` sums only over lags inside a segment), and the
  output at the padding is 0;
* PyTorch and JAX with segments or lengths against the reference's segments and rows run alone.

* a model (two blocks, BatchNorm or LayerNorm, either direction) in every backend: a row with random valid length
  and random tokens in its padding gives the output of its valid tokens alone.

Shapes are fixed and small (B = 2, L = 6, H = N = 4); JAX gathers the segments into batches whose sizes are
rounded to powers of two, so it compiles a handful of programs per mixer, not one per draw.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from linrnn.impls import backends
from linrnn.impls import jax as lj
from linrnn.impls.config import RECURRENT_KINDS, ModelConfig, mixer_config, modes
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.reference.model import forward as reference_forward
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import MIXERS as TORCH_MIXERS

pytestmark = pytest.mark.slow   # half a minute or more in all: the workers take this file early (conftest.py)

B, L, H, N = 2, 6, 4, 4
ALL_KINDS = RECURRENT_KINDS + ("attention",)

lengths_st = st.lists(st.integers(1, L), min_size=B, max_size=B).map(np.array)
# a boundary before position t (t >= 1) with probability about 1/2; ids alternate 0, 1, 0, ... (equal ids may return)
segments_st = st.lists(st.lists(st.booleans(), min_size=L - 1, max_size=L - 1), min_size=B, max_size=B).map(
    lambda rows: np.array([np.concatenate([[0], np.cumsum(r)]) % 2 for r in rows]))


def bundle_of(kind: str, bidirectional: bool, seed: int):
    window = {"window": 2} if kind == "attention" and seed % 2 else {}       # local attention on odd seeds
    cfg = mixer_config(kind, H, N, heads=2, bidirectional=bidirectional, **window)
    return cfg, init(cfg, seed)


def alone(cfg, bundle, u: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """The reference on every segment (maximal run of one id) of every row by itself."""
    y = np.zeros_like(u)
    for b in range(u.shape[0]):
        bounds = np.flatnonzero(np.diff(segments[b])) + 1
        for piece in np.split(np.arange(u.shape[1]), bounds):
            y[b, piece] = apply_mixer(cfg, bundle.params, u[b:b + 1, piece])[0][0]
    return y


def padded_alone(cfg, bundle, u: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each row's valid part by itself, 0 at the padding."""
    y = np.zeros_like(u)
    for b, n in enumerate(lengths):
        y[b, :n] = apply_mixer(cfg, bundle.params, u[b:b + 1, :n])[0][0]
    return y


def check(name, cfg, bundle, expected, got):
    assert_close(name, expected, got, "forward", "float64", L,
                 1.0 if cfg.kind == "attention" else spectral_radius(cfg, bundle.params))


def draw(seed: int):
    return np.random.default_rng(seed).standard_normal((B, L, H))


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("kind", ALL_KINDS)
@settings(max_examples=8, deadline=None)
@given(lengths=lengths_st, segments=segments_st, seed=st.integers(0, 2**16))
def test_reference_rows_and_segments_equal_themselves_alone(kind, bidirectional, lengths, segments, seed):
    cfg, bundle = bundle_of(kind, bidirectional, seed)
    u = draw(seed)
    for mode in modes("reference", kind):
        check(f"{kind} {mode} segments", cfg, bundle, alone(cfg, bundle, u, segments),
              apply_mixer(cfg, bundle.params, u, mode, segments=segments)[0])
        check(f"{kind} {mode} lengths", cfg, bundle, padded_alone(cfg, bundle, u, lengths),
              apply_mixer(cfg, bundle.params, u, mode, lengths=lengths)[0])


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("kind", ALL_KINDS)
@settings(max_examples=4, deadline=None)
@given(lengths=lengths_st, segments=segments_st, seed=st.integers(0, 2**16), data=st.data())
def test_torch_rows_and_segments_equal_the_reference_alone(kind, bidirectional, lengths, segments, seed, data):
    cfg, bundle = bundle_of(kind, bidirectional, seed)
    mode = data.draw(st.sampled_from([m for m in modes("torch", kind) if not (bidirectional and m == "step")]))
    u = draw(seed)
    layer = TORCH_MIXERS[kind].from_bundle(bundle)
    with torch.no_grad():
        y_segments = layer(torch.tensor(u), mode, segments=torch.tensor(segments))[0].numpy()
        y_lengths = layer(torch.tensor(u), mode, lengths=torch.tensor(lengths))[0].numpy()
    check(f"torch {kind} {mode} segments", cfg, bundle, alone(cfg, bundle, u, segments), y_segments)
    check(f"torch {kind} {mode} lengths", cfg, bundle, padded_alone(cfg, bundle, u, lengths), y_lengths)


@pytest.mark.parametrize("kind", ALL_KINDS)
@settings(max_examples=3, deadline=None)
@given(lengths=lengths_st, segments=segments_st, seed=st.integers(0, 2**16), data=st.data())
def test_jax_rows_and_segments_equal_the_reference_alone(kind, lengths, segments, seed, data):
    bidirectional = data.draw(st.booleans())
    cfg, bundle = bundle_of(kind, bidirectional, seed)
    mode = data.draw(st.sampled_from([m for m in modes("jax", kind) if not (bidirectional and m == "step")]))
    u = draw(seed)
    params = lj.from_bundle(bundle, "float64")
    check(f"jax {kind} {mode} segments", cfg, bundle, alone(cfg, bundle, u, segments),
          np.asarray(lj.apply(params, cfg, u, mode, segments=segments)[0]))
    check(f"jax {kind} {mode} lengths", cfg, bundle, padded_alone(cfg, bundle, u, lengths),
          np.asarray(lj.apply(params, cfg, u, mode, lengths=lengths)[0]))


VOCAB = 5


@pytest.mark.parametrize("kind", ALL_KINDS)
@settings(max_examples=4, deadline=None)
@given(lengths=lengths_st, seed=st.integers(0, 2**16), data=st.data())
def test_a_padded_model_row_gives_the_row_alone(kind, lengths, seed, data):
    """Random valid lengths and random padding tokens: each row of the model's output equals the row's valid tokens
    run alone (by the reference), in a mode drawn for each backend (BatchNorm in evaluation: its stored statistics)."""
    bidirectional, norm = data.draw(st.booleans()), data.draw(st.sampled_from(["layer", "batch"]))
    window = {"window": 2} if kind == "attention" and seed % 2 else {}
    mixer = mixer_config(kind, H, N, heads=2, bidirectional=bidirectional, **window)
    bundle = init(ModelConfig(mixer=mixer, n_layers=2, vocab_size=VOCAB, d_output=3, norm=norm, pooling="mean"), seed)
    tokens = np.random.default_rng(seed).integers(0, VOCAB, (B, L))
    first = modes("reference", kind)[0]
    alone = np.concatenate([reference_forward(bundle, tokens[b:b + 1, :n], mode=first) for b, n in enumerate(lengths)])
    for backend in ("reference", "torch", "jax"):
        mode = data.draw(st.sampled_from([m for m in modes(backend, kind) if not (bidirectional and m == "step")]))
        got = backends.backend(backend).apply_bundle(bundle, tokens, mode=mode, dtype="float64", lengths=lengths)
        assert_close(f"{backend} {kind} {mode} model", alone, got, "forward", "float64", L, 1.0)
