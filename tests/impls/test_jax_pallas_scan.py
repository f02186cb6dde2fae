"""The Pallas diagonal scan (impls/jax/pallas_scan.py) against `scan.sequential`, forward and backward.

Everything runs in Pallas' interpreter (`interpret=True`) on the CPU; one test lowers the kernel for
CUDA without a GPU (the Triton module is built), and one runs it compiled where a GPU is present.
N = 6 lanes, so every lane block is ragged: the default block_n = 8 masks two lanes, block_n = 4 gives
two programs of which the second is half masked. Decays up to 0.999 and phases up to pi by
construction (one lane at each extreme). The reference is `sequential` in float64 on the same numbers,
so a float32 kernel is held to the float32 tolerance against the float64 answer; gradients compare
with `jax.vjp` of the reference for one random complex cotangent. Each case is jitted once.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

pytest.importorskip("jax.experimental.pallas.triton", reason="this JAX has no Pallas Triton (GPU) lowering")

from linrnn.base.errors import LinrnnError                     # noqa: E402
from linrnn.impls.jax import pallas_scan                         # noqa: E402
from linrnn.impls.jax.scan import sequential                     # noqa: E402
from linrnn.base.tolerance import assert_close                  # noqa: E402

N = 6
R_MAX = 0.999
COMPLEX = {"float32": jnp.complex64, "float64": jnp.complex128}


@pytest.fixture(autouse=True, scope="module")
def strict_dtype_promotion():
    with jax.numpy_dtype_promotion("strict"):
        yield


def case(L: int, seed: int):
    """log_lam (N,), v (L N), x0 (N,), g (L N): complex128 NumPy, |lambda| in [0.5, 0.999], phases in [-pi, pi]."""
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.5, R_MAX, N)
    theta = rng.uniform(-np.pi, np.pi, N)
    r[0], theta[1] = R_MAX, np.pi                                   # the slowest decay, the largest phase
    log_lam = np.log(r) + 1j * theta

    def normal(*shape):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    return log_lam, normal(L, N), normal(N), normal(L, N)


def as_dtype(dtype: str, *arrays):
    return tuple(jnp.asarray(a, dtype=COMPLEX[dtype]) for a in arrays)


def pallas(block_n=None, interpret=True):
    return lambda log_lam, v, x0: pallas_scan.scan(log_lam, v, x0, interpret=interpret, block_n=block_n)


def assert_gradients_match(name, scan, L, dtype, seed=0):
    """The VJP of `scan` in `dtype` against jax.vjp of float64 `sequential`, for one cotangent."""
    log_lam, v, x0, g = case(L, seed)
    _, vjp_ref = jax.vjp(sequential, *as_dtype("float64", log_lam, v, x0))
    expected = vjp_ref(jnp.asarray(g, dtype=jnp.complex128))

    @jax.jit
    def vjp(log_lam, v, x0, g):
        return jax.vjp(scan, log_lam, v, x0)[1](g)

    got = vjp(*as_dtype(dtype, log_lam, v, x0, g))
    for arg, e, o in zip(("log_lam", "v", "x0"), expected, got):
        assert o.dtype == COMPLEX[dtype]
        assert_close(f"{name} d<g, states> / d {arg} {dtype} L={L}", e, o, "gradient", dtype, L, R_MAX)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("L, block_n", [(1, None), (5, 4), (17, None), (70, 4)])
def test_forward_matches_sequential(L, block_n, dtype):
    log_lam, v, x0, _ = case(L, L)
    scan = jax.jit(pallas(block_n))
    for label, start in (("x0 = 0", np.zeros(N)), ("x0 != 0", x0)):
        got = scan(*as_dtype(dtype, log_lam, v, start))             # (L N)
        expected = sequential(*as_dtype("float64", log_lam, v, start))
        assert got.dtype == COMPLEX[dtype]
        assert_close(f"pallas scan {dtype} L={L} block_n={block_n} {label}", expected, got, "forward", dtype,
                     L, R_MAX)


@pytest.mark.parametrize("L, dtype, block_n", [(1, "float64", 4), (5, "float32", None), (17, "float64", None),
                                               (70, "float32", 4)])
def test_gradients_match_jax_vjp_of_sequential(L, dtype, block_n):
    assert_gradients_match("pallas scan", pallas(block_n), L, dtype)


def test_first_and_second_derivatives_match_finite_differences():
    """order 2: the backward runs the kernel the other way, itself differentiable (a gradient of a gradient)."""
    log_lam, v, x0, _ = case(5, 1)
    check_grads(jax.jit(pallas(4)), as_dtype("float64", log_lam, v, x0), order=2, modes=("rev",))


def test_planted_conjugated_backward_transition_is_caught(monkeypatch):
    """PyTorch's convention, a_t = g_t + conj(lambda) a_{t+1}, is wrong in JAX: the comparison must fail."""
    kernel = pallas_scan._scan_pallas

    def conjugated(lam, v, x0, reverse, interpret, block_n):
        return kernel(jnp.conj(lam) if reverse else lam, v, x0, reverse, interpret, block_n)

    monkeypatch.setattr(pallas_scan, "_scan_pallas", conjugated)
    with pytest.raises(AssertionError, match="EXCEEDS"):
        assert_gradients_match("planted bug", pallas(4), 17, "float64")


def test_vmap_over_a_batch():
    """Batched log_lam, v, x0 (Pallas adds a grid axis); and one log_lam shared by the batch, with gradients."""
    B, L = 3, 17
    cases = [case(L, seed) for seed in range(B)]
    log_lam, v, x0, g = (jnp.asarray(np.stack(parts)) for parts in zip(*cases))   # (B N) (B L N) (B N) (B L N)

    states = jax.jit(jax.vmap(pallas(4)))(log_lam, v, x0)                          # (B L N)
    assert_close("vmapped pallas scan", jax.vmap(sequential)(log_lam, v, x0), states, "forward", "float64", L, R_MAX)

    def states_and_vjp(scan):
        batched = jax.vmap(scan, (None, 0, 0))                       # log_lam (N,) shared by the batch

        @jax.jit
        def run(log_lam, v, x0):
            states, vjp = jax.vjp(batched, log_lam, v, x0)
            return states, vjp(g)
        return run

    expected, expected_grads = states_and_vjp(sequential)(log_lam[0], v, x0)
    got, grads = states_and_vjp(pallas(4))(log_lam[0], v, x0)
    assert_close("vmapped pallas scan, shared log_lam", expected, got, "forward", "float64", L, R_MAX)
    for arg, e, o in zip(("log_lam (shared)", "v", "x0"), expected_grads, grads):
        assert_close(f"vmapped pallas scan d<g, states> / d {arg}", e, o, "gradient", "float64", L, R_MAX)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lowers_for_cuda_without_a_gpu(monkeypatch, dtype):
    """The forward and reverse kernels become Triton modules (Pallas' GPU lowering accepts every op)."""
    jaxlib = pytest.importorskip("jaxlib")
    if tuple(int(p) for p in jaxlib.__version__.split(".")[:3]) > (0, 10, 2) and not pallas_scan.available():
        pytest.skip("jaxlib > 0.10.2 compiles the Triton module while lowering, which needs a GPU (CUDA plugin)")
    monkeypatch.setattr(pallas_scan, "unavailable_reason", lambda interpret=False: "")
    log_lam, v, x0, _ = as_dtype(dtype, *case(17, 0))

    def loss(log_lam, v, x0):
        return jnp.sum(jnp.abs(jax.vmap(pallas(4, interpret=False), (None, 0, 0))(log_lam, v, x0)) ** 2)

    exported = jax.export.export(
        jax.jit(jax.grad(loss, argnums=(0, 1, 2))), platforms=["cuda"],
        disabled_checks=[jax.export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")],
    )(log_lam, v[None], x0[None])
    text = exported.mlir_module()
    assert text.count("stablehlo.custom_call @__gpu$xla.gpu.triton") == 2                # forward, reverse
    assert 'name = "diagonal_scan"' in text and 'name = "diagonal_scan_reverse"' in text


@pytest.mark.skipif(not pallas_scan.available(), reason=pallas_scan.unavailable_reason())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_on_a_gpu_matches_sequential(dtype):
    log_lam, v, x0, _ = case(70, 0)
    got = jax.jit(pallas(interpret=False))(*as_dtype(dtype, log_lam, v, x0))
    assert_close(f"pallas scan on the GPU {dtype}", sequential(*as_dtype("float64", log_lam, v, x0)), got,
                 "forward", dtype, 70, R_MAX)
    assert_gradients_match("pallas scan on the GPU", pallas(interpret=False), 70, dtype)


def test_bad_input_is_a_one_line_error():
    log_lam, v, x0 = as_dtype("float64", *case(5, 0)[:3])
    bad = {
        "v of a batch": (log_lam, v[None], x0),
        "x0 of another N": (log_lam, v, x0[:-1]),
        "mixed dtypes": (log_lam.astype(jnp.complex64), v, x0),
        "real v": (log_lam, v.real, x0),
    }
    for label, args in bad.items():
        with pytest.raises(LinrnnError, match="expected") as err:
            pallas_scan.scan(*args, interpret=True)
        assert "\n" not in str(err.value), label
    with pytest.raises(LinrnnError, match="power of two"):
        pallas_scan.scan(log_lam, v, x0, interpret=True, block_n=6)
    assert pallas_scan.available(interpret=True)
    if not pallas_scan.available():
        with pytest.raises(LinrnnError, match="interpret=True"):
            pallas_scan.scan(log_lam, v, x0)


def test_empty_sequence_has_no_states():
    log_lam, v, x0 = as_dtype("float64", *case(1, 0)[:3])
    assert pallas_scan.scan(log_lam, v[:0], x0, interpret=True).shape == (0, N)


def test_the_scan_mode_takes_the_pallas_kernel_on_a_gpu(monkeypatch):
    """On a GPU backend the layers' `scan` mode runs `pallas_scan.scan` (here in interpret mode, standing in)."""
    import jax
    from linrnn.impls.jax import scan as scans

    calls = []
    real = pallas_scan.scan

    def interpreted(log_lam, v, x0):
        calls.append(v.shape)
        return real(log_lam, v, x0, interpret=True)

    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(pallas_scan, "scan", interpreted)
    log_lam = jnp.asarray([-0.1 + 1j, -0.01 - 2j], jnp.complex64)
    v = jnp.ones((5, 2), jnp.complex64)
    x0 = jnp.zeros(2, jnp.complex64)
    got = scans.ROUTES["scan"](log_lam, v, x0)
    assert calls == [(5, 2)]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(real(log_lam, v, x0, interpret=True)))
