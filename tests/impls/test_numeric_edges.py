"""Numeric edges (issue §5; docs/precision.md, "Numeric edges"): every route gives a finite result within the
tolerance table, or the configuration refuses the edge in one line before any computation.

Routes are kind x backend x mode (`linrnn.impls.config.modes`), each against the float64 reference's view of
the same definition (`conv` against `conv`, the others against `sequential`). The small cases share one
configuration per kind (H = N = 1, RotRNN one head of N = 2, attention H = 2), so JAX compiles each mode once
for all of them: an edge of the initialisation is run as that config's bundle holding the edge config's
initial numbers (the parameters' shapes depend on the sizes only).
"""

import math

import numpy as np
import pytest
import torch
from scipy.signal import lfilter

from linrnn.impls import backends, specs
from linrnn.impls.bundle import Bundle
from linrnn.impls.config import mixer_config, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, dlr, lru, rotrnn, s4d, s5, spectral_radius
from linrnn.impls.specs.base import DT_FLOOR
from linrnn.base.tolerance import assert_close

# The edges below are written in these models' own parameters (phases, steps, log-moduli); the RG-LRU's are in
# tests/models/test_rglru.py. The smallest sizes run every registered kind.
RECURRENT = ("rotrnn", "lru", "dlr", "s4d", "s5")


def small(kind: str, **init_fields):
    """The kind at its smallest sizes: H = N = 1 (RotRNN: one head of N = 2, its one rotation block; attention:
    H = 2, one head of an even d_head)."""
    H, N = (2, 0) if kind == "attention" else (1, 2 if kind == "rotrnn" else 1)
    return mixer_config(kind, H, N, heads=1, **init_fields)


def routes(kind: str):
    return [(backend, mode) for backend in ("torch", "jax") for mode in modes(backend, kind)]


def check_every_route(bundle: Bundle, u: np.ndarray, dtypes=("float32", "float64"), what: str = "") -> int:
    """Every backend x mode x dtype of the bundle's kind on u, against the reference's view; -> routes checked."""
    cfg = bundle.config
    ref_modes = modes("reference", cfg.kind)
    ref = {m: apply_mixer(cfg, bundle.params, u, m)[0] for m in ref_modes}
    r, L, count = spectral_radius(cfg, bundle.params), u.shape[1], 0
    for backend, mode in routes(cfg.kind):
        for dtype in dtypes:
            y = backends.backend(backend).apply_bundle(bundle, u, mode, dtype)
            assert_close(f"{cfg.kind} {what} {backend} {mode} {dtype} L={L}", ref[mode if mode in ref else ref_modes[0]],
                         y, "forward", dtype, L, r)
            count += 1
    return count


def inputs(B: int, L: int, H: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng([seed, B, L, H]).standard_normal((B, L, H))


# -- an eigenvalue radius of exactly 1 -----------------------------------------------------------------

@pytest.mark.parametrize("kind, field", [("lru", "r_max"), ("rotrnn", "gamma_max")])
def test_a_radius_of_exactly_one_is_refused_in_one_line_naming_the_field(kind, field):
    # LRU: gamma_log = log sqrt(1 - r^2) = -inf at r = 1; RotRNN: gamma_log = log(-log gamma) = -inf at gamma = 1
    with pytest.raises(LinrnnError) as err:
        small(kind, **{field: 1.0})
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{type(small(kind)).__name__}.{field}: expected"), message
    assert "1.0)" in message, message                                     # the open bound is said


BELOW_ONE = float(np.nextafter(1.0, 0.0))


@pytest.mark.parametrize("kind, fields", [("lru", {"r_min": BELOW_ONE, "r_max": BELOW_ONE}),
                                          ("rotrnn", {"gamma_min": BELOW_ONE, "gamma_max": BELOW_ONE})])
def test_the_largest_radius_below_one_is_finite_and_within_the_table_in_every_route(kind, fields):
    edge = init(small(kind, **fields), 3)
    assert all(np.all(np.isfinite(v)) for v in edge.params.values())
    bundle = Bundle(small(kind), edge.params)
    assert spectral_radius(bundle.config, bundle.params) > 1 - 1e-7
    assert check_every_route(bundle, inputs(1, 5, 1), what="r -> 1") == 16


# -- phases 0 and pi ---------------------------------------------------------------------------------

def with_phase(kind: str, phase: float, seed: int = 4) -> Bundle:
    """The small bundle of `kind` with its eigenvalue's phase set to `phase` (0 or pi): RotRNN theta, LRU
    exp(theta_log) (exactly 0 is not representable there: the smallest positive float64), DLR theta, S4D
    dt A_imag, S5 Delta Lambda_im (zero-order hold)."""
    b = init(small(kind), seed)
    p = b.params
    if kind == "rotrnn":
        return b.replace(theta=np.full_like(p["theta"], phase))
    if kind == "lru":
        return b.replace(theta_log=np.full_like(p["theta_log"], math.log(phase or np.finfo(np.float64).tiny)))
    if kind == "dlr":
        return b.replace(theta=np.full_like(p["theta"], phase))
    if kind == "s4d":
        return b.replace(A_imag=np.full_like(p["A_imag"], phase / math.exp(p["log_dt"][0])))
    return b.replace(Lambda_im=np.full_like(p["Lambda_im"], phase / math.exp(p["log_step"][0])))


@pytest.mark.parametrize("phase", [0.0, math.pi], ids=["0", "pi"])
@pytest.mark.parametrize("kind", RECURRENT)
def test_phases_zero_and_pi_match_the_reference_in_every_route(kind, phase):
    bundle = with_phase(kind, phase)
    lam = {"rotrnn": lambda p: rotrnn.decay(p["gamma_log"])[0] * np.exp(1j * p["theta"][0, 0]),
           "lru": lambda p: lru.eigenvalues(p)[0], "dlr": lambda p: dlr.eigenvalues(p)[0],
           "s4d": lambda p: s4d.eigenvalues(p)[0, 0], "s5": lambda p: s5.eigenvalues(p, bundle.config)[0]}[kind]
    unit = lam(bundle.params) / abs(lam(bundle.params))
    assert abs(unit - np.exp(1j * phase)) < 1e-12                       # the phase is 0 or pi (to rounding)
    assert check_every_route(bundle, inputs(1, 5, 1), what=f"phase {phase:g}") == 16


@pytest.mark.parametrize("kind, max_phase", [("rotrnn", 0.0), ("rotrnn", math.pi), ("lru", math.pi)])
def test_the_max_phase_edges_initialise_within_range_and_run(kind, max_phase):
    edge = init(small(kind, max_phase=max_phase), 5)
    theta = edge.params["theta"] if kind == "rotrnn" else np.exp(edge.params["theta_log"])
    assert np.all(np.isfinite(theta)) and np.all((0 <= theta) & (theta <= max_phase))
    assert check_every_route(Bundle(small(kind), edge.params), inputs(1, 5, 1), what=f"max_phase {max_phase:g}") == 16


def test_the_lru_refuses_a_max_phase_of_zero_in_one_line():
    # theta_log = log(phase) would be -inf: the LRU's phase range is open at 0
    with pytest.raises(LinrnnError, match=r"^LRUConfig\.max_phase: expected a value in \(0\.0, "):
        small("lru", max_phase=0.0)


# -- steps Delta near the float32 floor ------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["s4d", "s5"])
def test_a_step_below_the_floor_is_refused_in_one_line(kind):
    below = DT_FLOOR / 2
    with pytest.raises(LinrnnError) as err:
        small(kind, dt_min=below, dt_max=below)
    message = str(err.value)
    assert "\n" not in message and f"Config.dt_min: expected a value in [{DT_FLOOR}, " in message, message


@pytest.mark.parametrize("dt", [1e-7, DT_FLOOR], ids=["1e-7", "floor"])
@pytest.mark.parametrize("kind, fields", [("dlr", {}), ("s4d", {}), ("s4d", {"init": "inv"}), ("s5", {})],
                         ids=["dlr", "s4d-lin", "s4d-inv", "s5"])
def test_steps_at_the_floor_are_finite_and_within_the_table_in_float32(kind, fields, dt):
    """D = 0, so the output is the recurrence's alone (of size ~Delta for S4D and S5), not hidden behind D u."""
    edge = init(small(kind, dt_min=dt, dt_max=dt, **fields), 6)
    bundle = Bundle(small(kind), {**edge.params, "D": np.zeros(1)})
    assert check_every_route(bundle, inputs(1, 5, 1), dtypes=("float32",), what=f"Delta {dt:g}") == 8


def test_dlr_has_no_step_floor():
    # DLR's output weights are not multiplied by Delta: a step of the smallest float64 only puts |lambda| at 1
    edge = init(small("dlr", dt_min=5e-324, dt_max=5e-324), 6)
    assert check_every_route(Bundle(small("dlr"), {**edge.params, "D": np.zeros(1)}), inputs(1, 5, 1),
                             dtypes=("float32",), what="Delta 5e-324") == 8


# -- L = 1 and H = N = 1 ------------------------------------------------------------------------------

@pytest.mark.parametrize("B, L", [(1, 1), (2, 5)])
@pytest.mark.parametrize("kind", specs.kinds())
def test_the_smallest_sizes_match_the_reference_in_every_route(kind, B, L):
    bundle = init(small(kind), 7)
    expected = 2 * len(routes(kind))
    assert check_every_route(bundle, inputs(B, L, bundle.config.d_model), what=f"B={B}") == expected


# -- long L in float32 ------------------------------------------------------------------------------------

LONG = 2 ** 20
# The routes that run at L = 2^20: every linear-time (scan, JAX's compiled sequential and step) and FFT route. PyTorch's
# `sequential` and `step` are a Python loop over positions (tens of microseconds a position here, so 2^20 would take
# most of a minute for each of the five kinds): they run at 2^14, which still reaches 16 memories of the slowest
# decay. Attention is not run long: it has no recurrence and its full route is quadratic in L.
LONG_ROUTES = [("torch", "scan", LONG), ("torch", "conv", LONG), ("torch", "sequential", 2 ** 14),
               ("torch", "step", 2 ** 14), ("jax", "scan", LONG), ("jax", "sequential", LONG), ("jax", "conv", LONG),
               ("jax", "step", LONG)]


def slow(kind: str):
    """Decays near 1 (|lambda| in [0.999, 0.9999]): memory 1/(1 - r) of 1,000 to 10,000 positions."""
    fields = {"rotrnn": {"gamma_min": 0.999, "gamma_max": 0.9999}, "lru": {"r_min": 0.999, "r_max": 0.9999},
              "dlr": {"dt_min": 2e-5, "dt_max": 2e-4}, "s4d": {"dt_min": 2e-4, "dt_max": 2e-3},
              "s5": {"dt_min": 2e-4, "dt_max": 2e-3}}[kind]
    return small(kind, **fields)


def scalar_system(bundle: Bundle):
    """(lambda, beta, kappa, D) with x_t = lambda x_{t-1} + beta u_t, y_t = Re(kappa x_t) + D u_t: the H = N = 1
    layer as one complex recurrence (RotRNN: z = P^T x as z0 + i z1, rotated by e^{i theta})."""
    p, cfg = bundle.params, bundle.config
    if cfg.kind == "rotrnn":
        P = rotrnn.orthogonal(p["M"])[0]
        b = P.T @ (rotrnn.normalisation(p["gamma_log"], p["B"])[0] * p["B"][0, :, 0])
        c = p["C"][0] @ P
        lam = rotrnn.decay(p["gamma_log"])[0] * np.exp(1j * p["theta"][0, 0])
        return lam, b[0] + 1j * b[1], c[0] - 1j * c[1], p["D"][0]
    if cfg.kind == "lru":
        return lru.eigenvalues(p)[0], lru.input_matrix(p)[0, 0], lru.output_matrix(p)[0, 0], p["D"][0]
    if cfg.kind == "dlr":
        return dlr.eigenvalues(p)[0], 1.0, dlr.output_weights(p)[0, 0], p["D"][0]
    if cfg.kind == "s4d":
        return s4d.eigenvalues(p)[0, 0], 1.0, s4d.output_weights(p)[0, 0], p["D"][0]
    lam, B_bar = s5.discretise(p, cfg)
    return lam[0], B_bar[0, 0], 2 * s5.output_matrix(p)[0, 0], p["D"][0]


def scalar_reference(bundle: Bundle, u: np.ndarray) -> np.ndarray:
    """The layer on u (1 L 1) by scipy.signal.lfilter in float64: the recurrence in C, linear in L."""
    lam, beta, kappa, D = scalar_system(bundle)
    x = lfilter([beta], [1.0, -lam], u[0, :, 0].astype(np.complex128))
    return ((kappa * x).real + D * u[0, :, 0])[None, :, None]


@pytest.mark.parametrize("kind", RECURRENT)
def test_the_lfilter_reference_is_the_reference(kind):
    bundle = init(slow(kind), 8)
    u = inputs(1, 300, 1)
    assert_close(f"{kind} lfilter", apply_mixer(bundle.config, bundle.params, u, "sequential")[0],
                 scalar_reference(bundle, u), "forward", "float64", 300, spectral_radius(bundle.config, bundle.params))


@pytest.fixture(scope="module")
def long_input():
    return inputs(1, LONG, 1, seed=9)


@pytest.mark.parametrize("kind", RECURRENT)
def test_long_sequences_in_float32_are_finite_and_within_the_table(kind, long_input):
    bundle = init(slow(kind), 8)
    r = spectral_radius(bundle.config, bundle.params)
    assert 0.999 <= r < 1
    ref = scalar_reference(bundle, long_input)
    for backend, mode, L in LONG_ROUTES:
        y = backends.backend(backend).apply_bundle(bundle, long_input[:, :L], mode, "float32")
        assert_close(f"{kind} {backend} {mode} float32 L={L}", ref[:, :L], y, "forward", "float32", L, r)


# -- complex exp at extreme arguments on the CPU (pytorch/pytorch#136063, #48010) --------------------------

EXTREME = np.array([-1e4 + 1e6j, -1e30 + 3e7j, -87.5 + 1e20j, 1e30j, -1e3 + 0j, -200 + 1e10j, -0.5 + 6.5e6j,
                    -1e-30 + 3.3e38j, 80 + 1e5j, -np.inf + 0j])


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("repeat", [1, 33], ids=["scalar", "vectorised"])
@pytest.mark.parametrize("fn", ["exp", "expm1"])
def test_torch_complex_exp_at_extreme_arguments_is_finite_and_matches_numpy(fn, repeat, dtype):
    z = torch.tensor(np.tile(EXTREME, repeat)).to(dtype)
    got = getattr(torch, fn)(z).numpy()
    zn = z.numpy()
    real = np.finfo(zn.real.dtype)
    ref = np.exp(zn) if fn == "exp" else np.exp(zn) - 1       # NumPy has no complex expm1; no cancellation here
    if fn == "expm1":
        small_arg = np.abs(zn) < 1
        assert not small_arg.any()
    assert np.all(np.isfinite(got)), got[~np.isfinite(got)]
    np.testing.assert_allclose(got, ref, rtol=8 * real.eps, atol=8 * real.eps * real.tiny / real.eps)


# -- parameters whose derived log-moduli overflow float32 --------------------------------------------------

# kind -> (key, a value whose derived quantity overflows float32, the largest such value that does not)
FLOAT32_OVERFLOW = {"lru": ("nu_log", 89.0, 88.7), "rotrnn": ("gamma_log", 89.0, 88.7), "dlr": ("a", 2e19, 1.8e19),
                    "s4d": ("log_A_real", 89.0, 88.7), "s5": ("log_step", 89.0, 88.7)}


def with_value(kind: str, key: str, value: float, seed: int = 10) -> Bundle:
    b = init(small(kind), seed)
    return b.replace(**{key: np.full_like(b.params[key], value)})


@pytest.mark.parametrize("kind", RECURRENT)
def test_a_float32_overflow_is_refused_in_one_line_when_the_parameters_load(kind):
    """Refused by `from_bundle` itself, in both frameworks: before any forward pass. float64 computes it, finitely
    and within the table (the reference's exp does not overflow there)."""
    from linrnn.impls import jax as lj
    from linrnn.impls.torch import MIXERS

    key, value, _ = FLOAT32_OVERFLOW[kind]
    bundle = with_value(kind, key, value)
    for load in (lambda: MIXERS[kind].from_bundle(bundle, torch.float32), lambda: lj.from_bundle(bundle, "float32")):
        with pytest.raises(LinrnnError) as err:
            load()
        message = str(err.value)
        assert "\n" not in message and message.startswith(f"{key}: entry 0 = ") and "overflow float32" in message, \
            message
    assert check_every_route(bundle, inputs(1, 5, 1), dtypes=("float64",), what=f"{key} = {value:g}") == 8


S5_GAP = pytest.mark.xfail(strict=True, reason="not yet guarded (docs/precision.md, 'Numeric edges'): S5's Delta "
                            "Lambda_im is finite but its multiples l Delta Lambda_im in the powers overflow: NaN")


@pytest.mark.parametrize("kind", [k if k != "s5" else pytest.param(k, marks=S5_GAP) for k in RECURRENT])
def test_just_below_the_float32_overflow_every_route_is_finite_and_within_the_table(kind):
    key, _, below = FLOAT32_OVERFLOW[kind]
    bundle = with_value(kind, key, below)
    assert check_every_route(bundle, inputs(2, 5, 1), dtypes=("float32",), what=f"{key} = {below:g}") == 8


def test_a_value_beyond_float32_and_a_model_bundle_are_refused_in_one_line():
    from linrnn.impls.bundle import check_compute_range
    from linrnn.impls.config import ModelConfig
    from linrnn.impls.specs.lru import LRUConfig

    b = init(small("dlr"), 11)
    with pytest.raises(LinrnnError, match=r"^W_re: entry 0 = 1e\+39 is beyond the largest float32 number"):
        check_compute_range(b.config, {**b.params, "W_re": np.full_like(b.params["W_re"], 1e39)}, "float32")
    check_compute_range(b.config, {**b.params, "W_re": np.full_like(b.params["W_re"], 1e39)}, "float64")
    model = init(ModelConfig(mixer=LRUConfig(d_model=2, d_state=2), n_layers=2, d_input=1, d_output=1), 12)
    params = {**model.params, "layers.1.mixer.nu_log": np.full_like(model.params["layers.1.mixer.nu_log"], 90.0)}
    with pytest.raises(LinrnnError, match=r"^layers\.1\.mixer\.nu_log: entry 0 = 90 makes exp\(nu_log\)"):
        check_compute_range(model.config, params, "float32")
    with pytest.raises(LinrnnError, match=r"^layers\.1\.mixer\.: log_dt|^layers\.1\.mixer: log_dt"):
        s4d = init(ModelConfig(mixer=mixer_config("s4d", 2, 2), n_layers=2, d_input=1, d_output=1), 13)
        key_dt, key_a = "layers.1.mixer.log_dt", "layers.1.mixer.log_A_real"
        check_compute_range(s4d.config, {**s4d.params, key_dt: np.full_like(s4d.params[key_dt], 50.0),
                                         key_a: np.full_like(s4d.params[key_a], 50.0)}, "float32")
