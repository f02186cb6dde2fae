"""The PyTorch mixer layers against the float64 reference: views, states, streaming, loading, dtypes, checks.

The random comparisons over drawn sizes live in `properties/test_torch_properties.py`; here each
behaviour is pinned on fixed small instances whose decays reach 0.9999.
"""

import numpy as np
import pytest
import torch

from linrnn.impls import specs
from linrnn.impls.config import mixer_config, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, dlr as ref_dlr, s4d as ref_s4d, spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.impls.specs.s4d import S4DConfig
from linrnn.impls.specs.s5 import S5Config
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import DLR, LRU, MODES, S4D, S5, RotRNN, from_bundle, parameter_groups
from linrnn.impls.torch.rotrnn import orthogonal

# every registered kind with the four views and a state (attention has no state: tests/impls/test_attention.py; the
# RG-LRU no conv view: tests/models/test_rglru.py)
KINDS = tuple(k for k in specs.kinds() if specs.spec(k).stateful and set(modes("torch", k)) == set(MODES))
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def config(kind, bidirectional=False, H=3, **extra):
    """The built-in models' cases, decays reaching 0.9999; another model's by its spec's cross-check fields near 1."""
    if kind not in ("rotrnn", "lru", "dlr", "s4d", "s5"):
        fields = specs.spec(kind).crosscheck(True, bidirectional)
        return mixer_config(kind, H, 4, heads=2, bidirectional=bidirectional, **fields, **extra)
    if kind == "rotrnn":
        return RotRNNConfig(d_model=H, d_state=4, heads=2, gamma_max=0.9999, bidirectional=bidirectional, **extra)
    if kind == "lru":
        return LRUConfig(d_model=H, d_state=5, r_min=0.5, r_max=0.9999, bidirectional=bidirectional, **extra)
    if kind == "s4d":   # S4D-Inv: phases up to 10 rad per step at dt = 1
        return S4DConfig(d_model=H, d_state=3, init="inv", dt_min=2e-4, dt_max=1.0, bidirectional=bidirectional,
                         **extra)
    if kind == "s5":    # HiPPO-N of size 8: phases up to 20 rad per step at Delta = 1
        return S5Config(d_model=H, d_state=4, dt_min=2e-4, dt_max=1.0, bidirectional=bidirectional, **extra)
    return DLRConfig(d_model=H, d_state=4, dt_min=2e-4, dt_max=1.0, bidirectional=bidirectional, **extra)


def inputs(seed, B, L, H):
    return np.random.default_rng(seed).standard_normal((B, L, H))


def state_is_complex(kind, cfg) -> bool:
    return specs.spec(kind).state(cfg)[1].startswith("complex")


def random_state(kind, cfg, B, seed):
    """A non-zero state in the reference's convention (its spec's shape and dtype of one row)."""
    rng = np.random.default_rng(seed)
    shape = (B, *specs.spec(kind).state(cfg)[0])
    if not state_is_complex(kind, cfg):
        return rng.standard_normal(shape)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def to_torch(array, layer):
    """A NumPy array as a tensor of the layer's precision (complex arrays in its complex dtype)."""
    t = torch.from_numpy(np.asarray(array))
    return t.to(torch.complex64 if layer.dtype == torch.float32 else torch.complex128) if t.is_complex() \
        else t.to(layer.dtype)


def run(layer, u, mode, state=None):
    y, x = layer(to_torch(u, layer), mode, None if state is None else to_torch(state, layer))
    return y.detach().numpy(), (None if x is None else x.detach().numpy())


# -- views and states against the reference -----------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_every_view_from_a_nonzero_state_matches_the_reference(kind, mode, dtype):
    """L = 37 crosses several chunks of the scan with a partial last one; x0 != 0 is carried by every view."""
    cfg = config(kind)
    bundle = init(cfg, 3)
    r = spectral_radius(cfg, bundle.params)
    u, x0 = inputs(0, 2, 37, cfg.d_model), random_state(kind, cfg, 2, 1)
    y_ref, x_ref = apply_mixer(cfg, bundle.params, u, "sequential", x0)
    y, x = run(from_bundle(bundle, DTYPES[dtype]), u, mode, x0)
    assert_close(f"{kind} {mode} y", y_ref, y, "forward", dtype, 37, r)
    assert_close(f"{kind} {mode} final state", x_ref, x, "state", dtype, 37, r)


@pytest.mark.parametrize("mode", ["scan", "sequential", "conv"])
@pytest.mark.parametrize("kind", KINDS)
def test_bidirectional_views_match_the_reference(kind, mode):
    cfg = config(kind, bidirectional=True)
    bundle = init(cfg, 4)
    u = inputs(1, 2, 37, cfg.d_model)
    y_ref, _ = apply_mixer(cfg, bundle.params, u, "sequential")
    y, state = run(from_bundle(bundle), u, mode)
    assert state is None
    assert_close(f"{kind} bidirectional {mode}", y_ref, y, "forward", "float64", 37,
                 spectral_radius(cfg, bundle.params))


@pytest.mark.parametrize("second", MODES)
@pytest.mark.parametrize("first", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_streaming_in_two_parts_equals_one_run(kind, first, second):
    """[0:t] in one view, then [t:L] from the returned state in another, equals the whole run."""
    cfg = config(kind)
    bundle = init(cfg, 5)
    layer = from_bundle(bundle)
    u = inputs(2, 2, 23, cfg.d_model)
    y_full, x_full = run(layer, u, "sequential")
    y_a, x_a = run(layer, u[:, :9], first)
    y_b, x_b = layer(to_torch(u[:, 9:], layer), second, torch.from_numpy(x_a))
    r = spectral_radius(cfg, bundle.params)
    assert_close(f"{kind} {first}+{second}", y_full, np.concatenate([y_a, y_b.detach().numpy()], axis=1),
                 "forward", "float64", 23, r)
    assert_close(f"{kind} {first}+{second} state", x_full, x_b.detach().numpy(), "state", "float64", 23, r)


@pytest.mark.parametrize("kind", KINDS)
def test_step_by_step_streaming_equals_the_reference(kind):
    cfg = config(kind)
    bundle = init(cfg, 6)
    layer = from_bundle(bundle)
    u, x0 = inputs(3, 2, 11, cfg.d_model), random_state(kind, cfg, 2, 4)
    y_ref, x_ref = apply_mixer(cfg, bundle.params, u, "sequential", x0)
    state, ys = to_torch(x0, layer), []
    for t in range(11):
        y_t, state = layer.step(to_torch(u[:, t], layer), state)
        ys.append(y_t.detach().numpy())
    r = spectral_radius(cfg, bundle.params)
    assert_close(f"{kind} step loop", y_ref, np.stack(ys, axis=1), "forward", "float64", 11, r)
    assert_close(f"{kind} step loop state", x_ref, state.detach().numpy(), "state", "float64", 11, r)


@pytest.mark.parametrize("kind", KINDS)
def test_bidirectional_layers_have_no_streaming_state(kind):
    cfg = config(kind, bidirectional=True)
    layer = from_bundle(init(cfg, 0))
    u = torch.zeros(1, 4, cfg.d_model, dtype=torch.float64)
    with pytest.raises(LinrnnError, match="bidirectional"):
        layer(u, "step")
    with pytest.raises(LinrnnError, match="bidirectional"):
        layer.step(u[:, 0])
    unidirectional = from_bundle(init(config(kind), 0))
    _, state = unidirectional(u, "scan")
    with pytest.raises(LinrnnError, match="bidirectional"):
        layer(u, "scan", state)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_dlr_with_a_truncated_kernel_is_conv_only(bidirectional):
    cfg = config("dlr", bidirectional, max_kernel_length=6)
    bundle = init(cfg, 7)
    layer = from_bundle(bundle)
    u = inputs(5, 2, 17, cfg.d_model)
    y, state = run(layer, u, "conv")
    assert state is None                          # the recurrent view does not continue a truncated kernel
    assert_close("dlr truncated conv", ref_dlr.conv(bundle.params, cfg, u), y, "forward", "float64", 6,
                 spectral_radius(cfg, bundle.params))
    for mode in ("scan", "sequential") + (() if bidirectional else ("step",)):
        with pytest.raises(LinrnnError, match="max_kernel_length=6"):
            run(layer, u, mode)
    short = u[:, :6]                              # L <= max_kernel_length from zero: every view agrees
    for mode in ("scan", "sequential") + (() if bidirectional else ("step",)):
        assert_close(f"dlr short {mode}", ref_dlr.conv(bundle.params, cfg, short), run(layer, short, mode)[0],
                     "forward", "float64", 6, spectral_radius(cfg, bundle.params))
    with pytest.raises(LinrnnError, match="bidirectional" if bidirectional else "a given state"):
        layer(to_torch(short, layer), "conv", torch.zeros(2, cfg.d_model, cfg.d_state, dtype=torch.complex128))


# -- loading, parameters, dtypes -------------------------------------------------------------------

@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_bundle_round_trip_is_exact_and_names_are_bundle_keys(kind, bidirectional):
    bundle = init(config(kind, bidirectional), 8)
    layer = from_bundle(bundle)
    assert [name for name, _ in layer.named_parameters()] == list(bundle.params)
    assert all(not p.is_complex() for p in layer.parameters())
    back = layer.to_bundle()
    assert back.config == bundle.config and back.digest() == bundle.digest()
    for key, array in bundle.params.items():
        assert back.params[key].dtype == np.float64 and np.array_equal(back.params[key], array), key
    single = from_bundle(bundle, torch.float32)
    for key, array in bundle.params.items():             # float32 loading rounds each number once
        assert torch.equal(getattr(single, key).detach(), torch.from_numpy(array.copy()).to(torch.float32)), key


@pytest.mark.parametrize("kind", KINDS)
def test_dtype_traps(kind):
    """.double() keeps every parameter; a float64 input is computed in float64, states in complex128."""
    cfg = config(kind)
    bundle = init(cfg, 9)
    layer = from_bundle(bundle, torch.float32).double()
    assert all(p.dtype == torch.float64 and not p.is_complex() for p in layer.parameters())
    assert layer.dtype == torch.float64
    exact = from_bundle(bundle, torch.float64)
    u = inputs(6, 2, 40, cfg.d_model)
    y_ref, x_ref = apply_mixer(cfg, bundle.params, u, "sequential")
    for mode in MODES:
        y, x = exact(to_torch(u, exact), mode)
        assert y.dtype == torch.float64
        assert x.dtype == (torch.complex128 if state_is_complex(kind, cfg) else torch.float64)
        # float64 tolerance: a computation in single precision anywhere would miss it by 1e8
        assert_close(f"{kind} {mode} float64", y_ref, y.detach().numpy(), "forward", "float64", 40,
                     spectral_radius(cfg, bundle.params))
    with pytest.raises(LinrnnError, match="input: expected dtype torch.float64"):
        exact(torch.zeros(1, 2, cfg.d_model, dtype=torch.float32))


def test_parameter_counts_are_pinned():
    """Counted by hand from docs/models.md, and from the bundle shapes and the module."""
    H, N = 6, 4
    layers = {
        RotRNN: (RotRNNConfig(d_model=H, d_state=N, heads=2), 2 * N * N + 2 * N // 2 + 2 + 2 * (2 * N * H) + H),
        LRU: (LRUConfig(d_model=H, d_state=N), 4 * N * H + 3 * N + H),
        DLR: (DLRConfig(d_model=H, d_state=N), 2 * N * H + 2 * N + H),
        S4D: (S4DConfig(d_model=H, d_state=N), 4 * N * H + 2 * H),
        S5: (S5Config(d_model=H, d_state=N), 4 * N * H + 3 * N + H),
    }
    # RotRNN: M 2*4*4 = 32, theta 2*2 = 4, gamma_log 2, B 2*4*6 = 48, C 6*8 = 48, D 6 -> 140
    # LRU:    4NH + 3N + H = 96 + 12 + 6 = 114;   DLR: 2NH + 2N + H = 48 + 8 + 6 = 62
    # S4D:    log_dt 6, log_A_real, A_imag, C_re, C_im 4*24 = 96, D 6 -> 108
    # S5:     Lambda_re, Lambda_im, log_step 3*4 = 12, B_re, B_im, C_re, C_im 4*24 = 96, D 6 -> 114
    assert [count for _, count in layers.values()] == [140, 114, 62, 108, 114]
    for cls, (cfg, count) in layers.items():
        bundle = init(cfg, 0)
        assert sum(a.size for a in bundle.params.values()) == count
        assert sum(p.numel() for p in cls.from_bundle(bundle).parameters()) == count


def test_recurrence_parameters_form_their_own_group():
    # the built-in models' recurrence keys written out from docs/models.md, not read from the specs they check
    for kind, keys in {"rotrnn": {"M", "theta", "gamma_log"}, "lru": {"nu_log", "theta_log", "gamma_log"},
                       "dlr": {"a", "theta"}, "s4d": {"log_dt", "log_A_real", "A_imag"},
                       "s5": {"Lambda_re", "Lambda_im", "B_re", "B_im", "log_step"}}.items():
        layer = from_bundle(init(config(kind), 0))
        groups = parameter_groups(layer)
        names = {id(p): n for n, p in layer.named_parameters()}
        assert {names[id(p)] for p in groups["recurrence"]} == keys
        assert {names[id(p)] for p in groups["other"]} == set(names.values()) - keys


def test_s4d_zoh_factor_keeps_float32_precision():
    """C~ = 2 C (exp(dt A) - 1)/A materialised in float32 at |dt A| = 5e-5: expm1, not exp - 1 (which is 2e-4
    off here, 25 times the tolerance)."""
    bundle = init(S4DConfig(d_model=4, d_state=1, dt_min=1e-4, dt_max=1e-4), 0)
    C = from_bundle(bundle, torch.float32).materialise().C
    assert_close("float32 C~", ref_s4d.output_weights(bundle.params), C.detach().numpy(), "identity", "float32")


def test_rotrnn_normalisation_keeps_float64_precision_as_gamma_nears_1():
    """xi = sqrt(1 - gamma^2) / ||B||_F in float64 against 40 digits at gamma = 0.9999 and 0.999999 (||B||_F = 2
    exactly): -expm1(2 log gamma), not 1 - gamma^2 as a difference (1.3e-13 and 5.5e-12 off here, 9 and 390
    times the tolerance)."""
    import mpmath
    from linrnn.impls.torch.rotrnn import decay_log, normalisation

    gamma_log = torch.log(-torch.log(torch.tensor([0.9999, 0.999999], dtype=torch.float64)))
    with mpmath.workdps(40):
        exact = [float(mpmath.sqrt(-mpmath.expm1(-2 * mpmath.exp(float(g)))) / 2) for g in gamma_log]
    got = normalisation(gamma_log, torch.ones((2, 2, 2), dtype=torch.float64))
    assert got.dtype == torch.float64
    for h in range(2):
        gamma = float(torch.exp(decay_log(gamma_log[h])))
        assert_close(f"xi at gamma = {gamma:.7g}", exact[h], float(got[h]), "identity", "float64")


def test_s4d_conv_without_its_final_state_gives_the_same_output():
    """`final_state=False` (the deep model's call) skips the product that forms the state, nothing else."""
    cfg = config("s4d")
    layer = from_bundle(init(cfg, 10))
    u, x0 = to_torch(inputs(7, 2, 13, cfg.d_model), layer), to_torch(random_state("s4d", cfg, 2, 8), layer)
    y, x = layer(u, "conv", x0)
    y_only, none = layer(u, "conv", x0, final_state=False)
    assert x is not None and none is None and torch.equal(y, y_only)


def test_a_single_head_rotation_is_accurate():
    """matrix_exp of one matrix takes a faulty path in torch 2.13 (pytorch#196592); `orthogonal` avoids it."""
    for dtype, w in (("float32", 0.5), ("float64", 0.04), ("float64", 0.01)):
        M = torch.tensor([[[0.0, 0.0], [w, 0.0]]], dtype=DTYPES[dtype])       # M - M^T = [[0, -w], [w, 0]]
        expected = np.array([[[np.cos(w), -np.sin(w)], [np.sin(w), np.cos(w)]]])
        assert_close(f"expm 2x2 rotation by {w} in {dtype}", expected, orthogonal(M).numpy(), "identity", dtype)


# -- checks of user inputs ------------------------------------------------------------------------

def test_bad_inputs_name_what_was_expected():
    cfg = config("lru")
    layer = from_bundle(init(cfg, 0))
    u = torch.zeros(2, 5, cfg.d_model, dtype=torch.float64)
    with pytest.raises(LinrnnError, match="mode: the torch backend has modes scan, sequential, conv, step"):
        layer(u, "parallel")
    with pytest.raises(LinrnnError, match=r"input: expected shape \(B, L, H\) with H = 3"):
        layer(u[..., :2])
    with pytest.raises(LinrnnError, match=r"state: expected a tensor of shape \(2, 5\) and dtype torch.complex128"):
        layer(u, "scan", torch.zeros(2, 5, dtype=torch.complex64))
    with pytest.raises(LinrnnError, match=r"input: expected shape \(B, H\)"):
        layer.step(u)
    with pytest.raises(LinrnnError, match="dtype: the torch backend computes in float32, float64, bfloat16, float16, "
                                          "found 'int32'"):
        from_bundle(init(cfg, 0), torch.int32)
    with pytest.raises(LinrnnError, match="expected a LRUConfig layer bundle"):
        LRU.from_bundle(init(config("dlr"), 0))
