"""The JAX layers: the paths that small random shapes do not reach, the dtypes, and every refusal.

The properties (properties/test_jax_properties.py) compare every mixer x mode x dtype with the
reference on small shapes; here: DLR's chunked scan and blocked kernel at lengths past their chunk
sizes, the truncated DLR kernel, RotRNN with M ~ N(0, 1) against a 40-digit oracle, float32 computed
in float32 throughout, and the LinrnnError of each bad call.
"""

import dataclasses

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

from linrnn.impls import specs
from linrnn.impls.config import ModelConfig, mixer_config, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.jax import apply_bundle, depthwise, dlr, from_bundle, layer, model, s4d, s5
from linrnn.impls.reference import apply_mixer, s4d as ref_s4d, s5 as ref_s5, spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.impls.specs.s4d import S4DConfig
from linrnn.impls.specs.s5 import S5Config
from linrnn.base.tolerance import assert_close

rng = np.random.default_rng(0)
# small cases of the built-in models with a state size (a model added later: its spec's sizes, `mixer_config`)
SMALL = {"rotrnn": RotRNNConfig(d_model=2, d_state=2, heads=2), "lru": LRUConfig(d_model=2, d_state=3),
         "dlr": DLRConfig(d_model=2, d_state=3), "s4d": S4DConfig(d_model=2, d_state=3),
         "s5": S5Config(d_model=2, d_state=4)}


@pytest.fixture(autouse=True, scope="module")
def strict_dtype_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


# -- DLR past its chunk sizes -------------------------------------------------------------------------

@pytest.mark.parametrize("bidirectional", [False, True])
def test_dlr_chunkwise_scan_over_several_chunks_with_a_padded_tail(bidirectional):
    L = 2 * depthwise.CHUNK + 5
    cfg = DLRConfig(d_model=2, d_state=3, bidirectional=bidirectional, dt_min=1e-3, dt_max=0.1)
    bundle = init(cfg, 3)
    u = rng.standard_normal((2, L, 2))
    x0 = None if bidirectional else rng.standard_normal((2, 2, 3)) + 1j * rng.standard_normal((2, 2, 3))
    y_ref, x_ref = apply_mixer(cfg, bundle.params, u, "sequential", x0)
    y, x_last = layer.apply(from_bundle(bundle), cfg, u, "scan", None if x0 is None else jnp.asarray(x0))
    r = spectral_radius(cfg, bundle.params)
    assert_close("dlr chunkwise y", y_ref, y, "forward", "float64", L, r)
    if not bidirectional:
        assert_close("dlr chunkwise final state", x_ref, x_last, "state", "float64", L, r)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_dlr_kernel_computed_in_blocks_past_one_block(bidirectional):
    L = depthwise.KERNEL_CHUNK + 45
    cfg = DLRConfig(d_model=2, d_state=3, bidirectional=bidirectional)
    bundle = init(cfg, 4)
    u = rng.standard_normal((1, L, 2))
    y_ref, _ = apply_mixer(cfg, bundle.params, u, "conv")
    y = apply_bundle(bundle, u, "conv")
    assert_close("dlr blocked kernel y", y_ref, y, "forward", "float64", L, spectral_radius(cfg, bundle.params))


def test_dlr_truncated_kernel_runs_only_as_a_convolution():
    cfg = DLRConfig(d_model=2, d_state=3, bidirectional=True, max_kernel_length=4)
    bundle = init(cfg, 5)
    u = rng.standard_normal((2, 11, 2))
    y_ref, _ = apply_mixer(cfg, bundle.params, u, "conv")
    assert_close("dlr truncated y", y_ref, apply_bundle(bundle, u, "conv"), "forward", "float64", 11,
                 spectral_radius(cfg, bundle.params))
    for mode in ("scan", "sequential"):
        with pytest.raises(LinrnnError, match="mode: DLR with max_kernel_length=4"):
            apply_bundle(bundle, u, mode)
    short = u[:, :4]   # L <= L_k: the recurrent view holds
    assert_close("dlr truncated, short input", apply_mixer(cfg, bundle.params, short, "conv")[0],
                 apply_bundle(bundle, short, "scan"), "forward", "float64", 4, spectral_radius(cfg, bundle.params))


# -- RotRNN against an oracle more precise than the float64 reference -----------------------------------

def test_rotrnn_with_unit_normal_M_matches_a_40_digit_oracle():
    """With M ~ N(0, 1) (the default init) SciPy's scaling-and-squaring expm loses orthogonality by up to
    1e-13 (why the reference computes P by eigh); this side (jax.scipy expm, complex pairs) stays at float64
    accuracy against a 40-digit mpmath run."""
    cfg = RotRNNConfig(d_model=3, d_state=4, heads=2, gamma_max=0.9999)
    p = init(cfg, 1).params
    u = rng.standard_normal((1, 7, 3))
    mpmath.mp.dps = 40
    x = [mpmath.zeros(4, 1) for _ in range(2)]
    exact = np.zeros((7, 3))
    for t in range(7):
        for h in range(2):
            M = mpmath.matrix(p["M"][h].tolist())
            P = mpmath.expm(M - M.T)
            gamma = mpmath.exp(-mpmath.exp(mpmath.mpf(p["gamma_log"][h])))
            Theta = mpmath.zeros(4, 4)
            for j in range(2):
                c, s = mpmath.cos(mpmath.mpf(p["theta"][h, j])), mpmath.sin(mpmath.mpf(p["theta"][h, j]))
                Theta[2 * j, 2 * j], Theta[2 * j, 2 * j + 1] = c, -s
                Theta[2 * j + 1, 2 * j], Theta[2 * j + 1, 2 * j + 1] = s, c
            Bh = mpmath.matrix(p["B"][h].tolist())
            xi = mpmath.sqrt(1 - gamma**2) / mpmath.mnorm(Bh, "f")
            x[h] = gamma * P * Theta * P.T * x[h] + xi * Bh * mpmath.matrix(u[0, t].tolist())
        stacked = mpmath.matrix([v for h in range(2) for v in x[h]])
        exact[t] = [float(v) for v in mpmath.matrix(p["C"].tolist()) * stacked] + p["D"] * u[0, t]
    # one mode: the properties show every mode equal to the others
    assert_close("rotrnn vs 40 digits", exact, apply_bundle(init(cfg, 1), u)[0], "forward", "float64", 7,
                 spectral_radius(cfg, p))


# -- dtypes -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", specs.kinds())
def test_float32_runs_compute_in_float32_throughout(kind):
    """No float64 or complex128 value anywhere in the traced program of any mode (the built-in models at `SMALL`,
    another at its spec's sizes H = 2, N = 3)."""
    cfg = SMALL[kind] if kind in SMALL else mixer_config(kind, 2, 3, heads=1)
    params = from_bundle(init(cfg, 0), "float32")
    u = jnp.asarray(rng.standard_normal((1, 3, 2)), dtype=jnp.float32)
    spec = specs.spec(kind)
    state_dtype = None if not spec.stateful else \
        jnp.complex64 if spec.state(cfg)[1].startswith("complex") else jnp.float32
    for mode in modes("jax", kind):
        program = jax.make_jaxpr(lambda p, u: layer.apply(p, cfg, u, mode))(params, u)
        assert "f64" not in str(program) and "c128" not in str(program), f"{kind} {mode}: a 64-bit value"
        y, *state = program.out_avals   # no state from DLR's conv
        assert y.dtype == jnp.float32
        assert all(s.dtype == state_dtype for s in jax.tree_util.tree_leaves(state) if s.dtype != jnp.bool_)


def test_rotrnn_normalisation_keeps_float64_precision_as_gamma_nears_1():
    """xi = sqrt(1 - gamma^2) / ||B||_F materialised in float64 at gamma = 0.9999 and 0.999999, against 40 digits:
    -expm1(-2 exp(gamma_log)), not 1 - gamma^2 as a difference (1.3e-13 and 5.5e-12 off here, 9 and 390 times the
    tolerance). With M = 0 (P = I) and B all ones (||B||_F = 2), B~ = xi B holds xi itself."""
    from linrnn.impls.jax import rotrnn

    cfg = RotRNNConfig(d_model=2, d_state=2, heads=2)
    gamma_log = np.log(-np.log(np.array([0.9999, 0.999999])))
    params = {**init(cfg, 0).params, "M": np.zeros((2, 2, 2)), "gamma_log": gamma_log, "B": np.ones((2, 2, 2))}
    rotated = rotrnn.materialise({k: jnp.asarray(v, jnp.float64) for k, v in params.items()}, cfg)
    assert np.array_equal(np.asarray(rotated.P), np.broadcast_to(np.eye(2), (2, 2, 2)))
    B_re = np.asarray(rotated.sys.B_re)                                    # (heads*N/2 H): one pair per head
    assert B_re.dtype == np.float64
    with mpmath.workdps(40):
        exact = [float(mpmath.sqrt(-mpmath.expm1(-2 * mpmath.exp(g))) / 2) for g in gamma_log]
    for h in range(2):
        assert_close(f"xi of head {h}", np.full(2, exact[h]), B_re[h], "identity", "float64")


def test_s4d_zoh_factor_keeps_float32_precision():
    """C~ = 2 C (exp(dt A) - 1)/A materialised in float32 at |dt A| = 5e-5: expm1, not exp - 1 (2e-4 off here)."""
    cfg = S4DConfig(d_model=4, d_state=1, dt_min=1e-4, dt_max=1e-4)
    bundle = init(cfg, 0)
    C = s4d.materialise(from_bundle(bundle, "float32"), cfg).C
    assert C.dtype == jnp.complex64
    assert_close("float32 C~", ref_s4d.output_weights(bundle.params), C, "identity", "float32")


@pytest.mark.parametrize("discretization", ["zoh", "bilinear"])
def test_s5_discretisation_keeps_float32_precision(discretization):
    """B_bar materialised in float32 at |Delta Lambda| down to 7e-5 (Delta = 1e-4): ZOH's factor by expm1, not
    exp - 1 (9e-5 off here, 12 times the tolerance), and no float64 on the way (the bilinear route included)."""
    cfg = S5Config(d_model=4, d_state=4, dt_min=1e-4, dt_max=1e-4, discretization=discretization)
    bundle = init(cfg, 0)
    params = from_bundle(bundle, "float32")
    sys = s5.materialise(params, cfg)
    assert sys.log_lam.dtype == jnp.complex64 and sys.B_re.dtype == jnp.float32
    assert "f64" not in str(jax.make_jaxpr(lambda p: s5.materialise(p, cfg))(params))
    lam, B_bar = ref_s5.discretise(bundle.params, cfg)
    assert_close("float32 log Lambda_bar", np.log(lam), sys.log_lam, "identity", "float32")
    assert_close("float32 B_bar", B_bar, jax.lax.complex(sys.B_re, sys.B_im), "identity", "float32")


def test_float32_model_computes_in_float32():
    cfg = ModelConfig(mixer=LRUConfig(d_model=4, d_state=3), d_input=2, norm="batch")
    params = from_bundle(init(cfg, 0), "float32")
    program = str(jax.make_jaxpr(lambda p, x: model.forward(p, cfg, x))(params, jnp.zeros((1, 3, 2), jnp.float32)))
    assert "f64" not in program and "c128" not in program


def test_apply_bundle_returns_a_float64_copy_of_a_float32_run():
    bundle = init(SMALL["lru"], 0)
    u = rng.standard_normal((1, 5, 2))
    y32 = apply_bundle(bundle, u, "scan", "float32")
    y64 = apply_bundle(bundle, u, "scan", "float64")
    assert y32.dtype == np.float64 and y32.flags.writeable
    assert not np.array_equal(y32, y64)   # rounded in float32: not the float64 numbers
    assert_close("float32 vs float64", y64, y32, "forward", "float32", 5, spectral_radius(bundle.config, bundle.params))


# -- refusals ----------------------------------------------------------------------------------------------

def test_apply_bundle_rejects_bad_arguments_naming_the_field():
    bundle = init(SMALL["lru"], 0)
    u = rng.standard_normal((1, 4, 2))
    cases = [
        (dict(inputs=u, mode="fast"), "mode"),
        (dict(inputs=u, dtype="int8"), "dtype"),
        (dict(inputs=u, lengths=np.array([4, 4])), "lengths"),     # a layer takes lengths (B,): here B = 1
        (dict(inputs=u, lengths=np.array([0])), "lengths"),
        (dict(inputs=u, segments=np.zeros((1, 3), np.int64)), "segments"),
        (dict(inputs=u[..., :1]), "input"),
        (dict(inputs=np.full((1, 4, 2), np.nan)), "input"),
        (dict(inputs=u[0]), "input"),
    ]
    for kwargs, field in cases:
        with pytest.raises(LinrnnError, match=f"^{field}:"):
            apply_bundle(bundle, **kwargs)
    model = init(ModelConfig(mixer=LRUConfig(d_model=2, d_state=3), d_input=2), 0)
    with pytest.raises(LinrnnError, match="^lengths:"):
        apply_bundle(model, u, lengths=np.array([5]))
    tokens = init(ModelConfig(mixer=LRUConfig(d_model=2, d_state=3), vocab_size=3), 0)
    with pytest.raises(LinrnnError, match="^input:"):
        apply_bundle(tokens, np.array([[0, 3]]))


@pytest.mark.parametrize("kind", list(SMALL))
def test_bidirectional_layers_have_no_streaming_state(kind):
    cfg = dataclasses.replace(SMALL[kind], bidirectional=True)
    bundle = init(cfg, 0)
    params = from_bundle(bundle)
    u = jnp.asarray(rng.standard_normal((1, 3, 2)))
    with pytest.raises(LinrnnError, match="^mode: a bidirectional"):
        apply_bundle(bundle, np.asarray(u), "step")
    with pytest.raises(LinrnnError, match="^mode: a bidirectional"):
        layer.step(params, cfg, u[:, 0])
    _, state = layer.apply(from_bundle(init(SMALL[kind], 0)), SMALL[kind], u)
    with pytest.raises(LinrnnError, match="^state: a bidirectional"):
        layer.apply(params, cfg, u, "scan", state)


def test_states_of_the_wrong_shape_or_kind_are_refused():
    params = from_bundle(init(SMALL["rotrnn"], 0))
    u = jnp.zeros((2, 3, 2))
    with pytest.raises(LinrnnError, match=r"^state: expected shape \(2, 2, 2\)"):
        layer.apply(params, SMALL["rotrnn"], u, "scan", jnp.zeros((2, 4)))
    with pytest.raises(LinrnnError, match="^state: a rotrnn state is real"):
        layer.apply(params, SMALL["rotrnn"], u, "scan", jnp.zeros((2, 2, 2), jnp.complex128))
    with pytest.raises(LinrnnError, match="^state: dlr's mode conv"):
        layer.apply(from_bundle(init(SMALL["dlr"], 0)), SMALL["dlr"], u, "conv", jnp.zeros((2, 2, 3), jnp.complex128))
    with pytest.raises(LinrnnError, match="^input:"):
        layer.step(params, SMALL["rotrnn"], u)


@pytest.mark.parametrize("kind", [k for k in specs.recurrent_kinds() if {"scan", "sequential"} <= set(modes("jax", k))])
def test_apply_system_is_apply_from_the_materialised_system(kind):
    """The cross-check differentiates `materialise` and `apply_system` apart: together they must be `apply`."""
    from linrnn.impls.config import mixer_config
    from linrnn.verify.bench import layer_config

    cfg = layer_config(kind, 4, 4, heads=2)
    params = from_bundle(init(cfg, 3), "float32")
    u = jnp.asarray(np.random.default_rng(3).standard_normal((2, 9, 4)), jnp.float32)
    system = layer.materialise(params, cfg)
    for mode in ("scan", "sequential"):
        y, state = layer.apply(params, cfg, u, mode)
        y_sys, state_sys = layer.apply_system(system, cfg, u, mode)
        np.testing.assert_array_equal(np.asarray(y_sys), np.asarray(y))
        np.testing.assert_array_equal(np.asarray(state_sys), np.asarray(state))
    with pytest.raises(LinrnnError, match=r"input: expected shape \(B, L, 4\)"):
        layer.apply_system(system, cfg, u[:, :, :3], "scan")
    attention = mixer_config("attention", 8, 4, heads=2)
    with pytest.raises(LinrnnError, match="attention has no materialised system"):
        layer.apply_system({}, attention, jnp.zeros((1, 3, 8), jnp.float32), "full")
