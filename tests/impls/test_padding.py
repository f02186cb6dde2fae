"""Padded rows and packed sequences (docs/models.md, "Padding and packed sequences"): a padded row gives the output of
the row alone, for every model, both directions, every backend; BatchNorm's training statistics count the valid
positions only; the papers' behaviour is the named option `padding = "unmasked"`; bad combinations are one line.

Before, the backward scan of a bidirectional layer ran through the padding before it reached the last real token,
so a row of 10 tokens padded to 16 gave outputs 0.05 (LRU), 0.08 (DLR) or 0.009 (RotRNN) away from the same 10
tokens alone, in all three backends. Randomised lengths and segmentations are in
properties/test_packing_properties.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from linrnn.impls import backends
from linrnn.impls import jax as lj
from linrnn.impls.config import RECURRENT_KINDS, ModelConfig, mixer_config, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.reference.model import forward as reference_forward
from linrnn.impls.segments import padding_segments
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import MIXERS as TORCH_MIXERS
from linrnn.impls.torch import Model

pytestmark = pytest.mark.slow   # half a minute or more in all: the workers take this file early (conftest.py)

VOCAB, H, N = 12, 4, 4
TOKENS = np.random.default_rng(0).integers(0, VOCAB, (2, 16))     # the issue's batch: 10 tokens padded to 16
LENGTHS = np.array([10, 16])
L = TOKENS.shape[1]


def model_bundle(kind: str, bidirectional: bool, **fields):
    mixer = mixer_config(kind, H, N, heads=2, bidirectional=bidirectional,
                         **({"window": 4} if kind == "attention" and bidirectional else {}))
    return init(ModelConfig(mixer=mixer, n_layers=2, vocab_size=VOCAB, d_output=3, **fields), 0)


def test_the_issue_command_gives_row_zero_alone(cli, tmp_path):
    """The command of the issue, on the command line: row 0 of a padded batch against its tokens alone."""
    np.save(tmp_path / "toks.npy", TOKENS)
    np.save(tmp_path / "lens.npy", LENGTHS)
    np.save(tmp_path / "alone.npy", TOKENS[:1, :LENGTHS[0]])
    assert cli.run("params", "init", "--model", "lru", "--bidirectional", "--layers", 2, "--d-model", 8, "--state", 8,
                   "--vocab-size", VOCAB, "--d-output", 5, "--pooling", "mean", "--seed", 0,
                   "--out", tmp_path / "m.npz")[0] == 0
    for backend in ("reference", "torch", "jax"):
        assert cli.run("apply", "--params", tmp_path / "m.npz", "--input", tmp_path / "toks.npy", "--lengths",
                       tmp_path / "lens.npy", "--out", tmp_path / "y.npy", "--dtype", "float64",
                       "--backend", backend)[0] == 0
        assert cli.run("apply", "--params", tmp_path / "m.npz", "--input", tmp_path / "alone.npy",
                       "--out", tmp_path / "y1.npy", "--dtype", "float64", "--backend", backend)[0] == 0
        assert_close(f"{backend} row 0 padded vs alone", np.load(tmp_path / "y1.npy")[0], np.load(tmp_path / "y.npy")[0],
                     "forward", "float64", int(LENGTHS[0]), 1.0)


def routes(kind: str, bidirectional: bool):
    """(backend name, backend, mode) for every mode of every backend; a bidirectional layer has no `step`."""
    for backend in ("reference", "torch", "jax"):
        impl = backends.backend(backend)
        for mode in modes(backend, kind):
            if not (mode == "step" and bidirectional):
                yield backend, impl, mode


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("kind", RECURRENT_KINDS + ("attention",))
def test_a_padded_row_gives_the_row_alone_in_every_backend(kind, bidirectional):
    """Every mode of every backend against the reference's row alone (the command line test above compares each
    backend with itself)."""
    bundle = model_bundle(kind, bidirectional)
    alone = reference_forward(bundle, TOKENS[:1, :LENGTHS[0]], mode=modes("reference", kind)[0])[0]
    for backend, impl, mode in routes(kind, bidirectional):
        padded = impl.apply_bundle(bundle, TOKENS, mode=mode, dtype="float64", lengths=LENGTHS)
        assert_close(f"{kind} {backend} {mode}", alone, padded[0], "forward", "float64", L, 1.0)


# -- a layer: every mode of every backend, padded rows and packed sequences ---------------------------

# Row 0 holds five segments: an id that comes back (0) starts a new one, and the last is a single position.
SEGMENTS = np.array([[0, 0, 0, 1, 1, 0, 0, 2], [3, 3, 3, 3, 3, 3, 3, 3]])
LAYER_LENGTHS = np.array([5, 8])


def each_alone(cfg, bundle, u: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """The reference on every segment (maximal run of one id) of every row by itself."""
    y = np.zeros_like(u)
    for b in range(u.shape[0]):
        for piece in np.split(np.arange(u.shape[1]), np.flatnonzero(np.diff(segments[b])) + 1):
            y[b, piece] = apply_mixer(cfg, bundle.params, u[b:b + 1, piece])[0][0]
    return y


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("kind", RECURRENT_KINDS + ("attention",))
def test_every_mode_of_every_backend_runs_rows_and_segments_alone(kind, bidirectional):
    """A layer with `lengths` (row 0: 5 of 8 positions) and with `segments` against the reference on each row's valid
    part and on each segment alone, in every mode of every backend (a bidirectional layer has no `step`)."""
    cfg = mixer_config(kind, H, N, heads=2, bidirectional=bidirectional,
                       **({"window": 2} if kind == "attention" else {}))
    bundle = init(cfg, 3)
    u = np.random.default_rng(4).standard_normal((2, 8, H))
    radius = 1.0 if kind == "attention" else spectral_radius(cfg, bundle.params)
    by_segment = each_alone(cfg, bundle, u, SEGMENTS)
    by_row = each_alone(cfg, bundle, u, padding_segments(LAYER_LENGTHS, 8))
    by_row[0, LAYER_LENGTHS[0]:] = 0.0                                             # the padding's output is 0
    for backend, impl, mode in routes(kind, bidirectional):
        got = impl.apply_bundle(bundle, u, mode=mode, dtype="float64", lengths=LAYER_LENGTHS)
        assert_close(f"{kind} {backend} {mode} lengths", by_row, got, "forward", "float64", 8, radius)
        got = impl.apply_bundle(bundle, u, mode=mode, dtype="float64", segments=SEGMENTS)
        assert_close(f"{kind} {backend} {mode} segments", by_segment, got, "forward", "float64", 8, radius)


def test_unmasked_padding_is_the_papers_behaviour():
    """`padding = "unmasked"` (the S5 code's): the mixers run over the padding, so a bidirectional row differs from
    the row alone, in every backend alike (the reference runs the padded row with no lengths)."""
    bundle = model_bundle("lru", True, padding="unmasked")
    alone = reference_forward(bundle, TOKENS[:1, :LENGTHS[0]])[0]
    through = reference_forward(bundle, TOKENS, LENGTHS)[0]
    assert np.max(np.abs(through - alone)) > 1e-3
    for backend in ("torch", "jax"):
        got = backends.backend(backend).apply_bundle(bundle, TOKENS, dtype="float64", lengths=LENGTHS)[0]
        assert_close(f"{backend} unmasked", through, got, "forward", "float64", L, 1.0)


def norm_input_statistics(bundle):
    """The mean and unbiased variance of the first block's BatchNorm input (the embedding) over the valid positions."""
    x = bundle.params["encoder.weight"][TOKENS]                                       # (B L H)
    valid = x[np.arange(TOKENS.shape[1])[None, :] < LENGTHS[:, None]]                 # (n H)
    return valid.mean(axis=0), valid.var(axis=0, ddof=1)


def test_batchnorm_counts_the_valid_positions_only_in_training():
    bundle = model_bundle("lru", True, norm="batch")
    mean, var = norm_input_statistics(bundle)
    m = 0.1                                                                           # BATCHNORM_MOMENTUM
    expected = {"mean": m * mean, "var": (1 - m) + m * var}
    model = Model.from_bundle(bundle, torch.float64).train()
    model(torch.tensor(TOKENS), torch.tensor(LENGTHS))
    with lj.float64():
        params = lj.from_bundle(bundle, "float64")
        _, stats = lj.model.forward_train(params, bundle.config, jnp.asarray(TOKENS), lengths=jnp.asarray(LENGTHS))
    for key in ("mean", "var"):
        assert_close(f"torch norm.{key}", expected[key], getattr(model.layers[0].norm, key).detach().numpy(),
                     "forward", "float64")
        assert_close(f"jax norm.{key}", expected[key], np.asarray(stats[f"layers.0.norm.{key}"]), "forward", "float64")


def test_a_layer_zeroes_its_padding_and_returns_no_state():
    cfg = mixer_config("lru", H, N, bidirectional=True)
    bundle = init(cfg, 1)
    u = np.random.default_rng(2).standard_normal((2, 6, H))
    lengths = np.array([4, 6])
    y, state = apply_mixer(cfg, bundle.params, u, "sequential", lengths=lengths)
    assert state is None and not np.any(y[0, 4:])
    layer = TORCH_MIXERS["lru"].from_bundle(bundle)
    y_t, state_t = layer(torch.tensor(u), "scan", lengths=torch.tensor(lengths))
    assert state_t is None and not torch.any(y_t[0, 4:])
    assert_close("torch layer with lengths", y, y_t.detach().numpy(), "forward", "float64", 6, 1.0)


@pytest.mark.parametrize("call, message", [
    (dict(lengths=np.array([2, 3]), segments=np.zeros((2, 3), np.int64)),
     "lengths, segments: give one of them (padding is a segment of its own), found both"),
    (dict(segments=np.zeros((2, 3), np.int64), state=True),
     "state: with segments every row or segment starts from a zero state and none is returned"),
    (dict(segments=np.zeros((2, 4), np.int64)), "segments: expected integer ids of shape (2, 3), found int64 (2, 4)"),
    (dict(lengths=np.array([0, 3])), "lengths: expected values in [1, 3], found [0, 3]"),
    (dict(lengths=np.array([2, 4])), "lengths: expected values in [1, 3], found [2, 4]"),
    (dict(lengths=np.array([2.0, 3.0])), "lengths: expected integers of shape (2,), found float64"),
    (dict(lengths=np.array([[2, 3]])), "lengths: expected integers of shape (2,), found int64 (1, 2)"),
    (dict(segments=np.zeros((2, 3))), "segments: expected integer ids of shape (2, 3), found float64 (2, 3)"),
    (dict(segments=np.zeros((2, 3), bool)), "segments: expected integer ids of shape (2, 3), found bool (2, 3)"),
])
def test_bad_lengths_and_segments_are_one_line_errors_in_every_backend(call, message):
    cfg = mixer_config("lru", H, N)
    bundle = init(cfg, 0)
    u = np.zeros((2, 3, H))
    state = np.zeros((2, N), np.complex128) if call.pop("state", False) else None
    calls = {"reference": lambda: apply_mixer(cfg, bundle.params, u, "sequential", x0=state, **call),
             "torch": lambda: TORCH_MIXERS["lru"].from_bundle(bundle)(
                 torch.tensor(u), "scan", None if state is None else torch.tensor(state), **call),
             "jax": lambda: lj.apply(lj.from_bundle(bundle, "float64"), cfg, jnp.asarray(u), "scan", state, **call)}
    for backend, run in calls.items():
        with pytest.raises(LinrnnError) as err:
            run()
        assert message in str(err.value) and len(str(err.value).splitlines()) == 1, (backend, err.value)


@pytest.mark.parametrize("backend", ["reference", "torch", "jax"])
def test_a_model_takes_lengths_not_segments(backend):
    bundle = model_bundle("lru", True)
    with pytest.raises(LinrnnError) as err:
        backends.backend(backend).apply_bundle(bundle, TOKENS, dtype="float64", segments=np.zeros(TOKENS.shape, int))
    assert str(err.value) == "segments: packed sequences are a layer's input (a layer bundle); a model takes lengths"


def test_jax_segments_under_jit_take_the_step_mode():
    """Traced segment ids cannot be gathered into rows (data-dependent shapes): one line naming the mode that can,
    `step`, whose resets take traced ids."""
    cfg = mixer_config("lru", H, N)
    bundle = init(cfg, 0)
    params = lj.from_bundle(bundle, "float64")
    u = jnp.asarray(np.random.default_rng(3).standard_normal((1, 5, H)))
    segments = jnp.asarray([[0, 0, 1, 1, 1]])
    with pytest.raises(LinrnnError, match="use mode step, which takes traced ids"):
        jax.jit(lambda x, s: lj.apply(params, cfg, x, "scan", segments=s)[0])(u, segments)
    got = jax.jit(lambda x, s: lj.apply(params, cfg, x, "step", segments=s)[0])(u, segments)
    expected, _ = apply_mixer(cfg, bundle.params, np.asarray(u), "sequential", segments=np.asarray(segments))
    assert_close("jax step with traced segments", expected, np.asarray(got), "forward", "float64", 5, 1.0)
