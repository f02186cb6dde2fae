"""The JAX scans with a transition per position (`varying_scan.chunked` and `.associative`, `pallas_varying.scan`)
against `varying_scan.sequential`, values and every cotangent (`jax.vjp` of the loop), real and complex; the Pallas
kernel in Pallas' interpreter (`interpret=True`) on the CPU, N = 5 lanes in blocks of 4 (the second block ragged).
JAX's strict dtype promotion is on, so no route mixes dtypes silently."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.impls.jax import float64, varying_scan
from linrnn.base.tolerance import assert_close

N = 5
DTYPES = {("float32", False): jnp.float32, ("float64", False): jnp.float64, ("float32", True): jnp.complex64,
          ("float64", True): jnp.complex128}


@pytest.fixture(autouse=True)
def strict_float64():
    with float64(), jax.numpy_dtype_promotion("strict"):
        yield


def case(L, seed, dtype, complex_, radii=(0.3, 0.999)):
    rng = np.random.default_rng(seed)
    log_a = np.log(rng.uniform(*radii, (L, N)))
    v, x0, g = rng.standard_normal((L, N)), rng.standard_normal(N), rng.standard_normal((L, N))
    if complex_:
        log_a = log_a + 1j * rng.uniform(-np.pi, np.pi, (L, N))
        v, x0, g = v + 1j * rng.standard_normal((L, N)), x0 + 1j * rng.standard_normal(N), g + 1j * g[::-1]
    t = DTYPES[(dtype, complex_)]
    return tuple(jnp.asarray(x, t) for x in (log_a, v, x0, g))


def values_and_cotangents(f, log_a, v, x0, g):
    out, pullback = jax.vjp(f, log_a, v, x0)
    pairs = lambda z: np.stack([np.real(z), np.imag(z)]).astype(np.float64)
    return [pairs(out)] + [pairs(c) for c in pullback(g)]


def check(route, dtype, complex_, L, reverse=False, seed=0):
    log_a, v, x0, g = case(L, seed, dtype, complex_)
    loop = varying_scan.sequential if not reverse else \
        (lambda la, w, s: varying_scan.sequential(la[::-1], w[::-1], s)[::-1])
    ref = values_and_cotangents(loop, *case(L, seed, "float64", complex_))
    got = values_and_cotangents(route, log_a, v, x0, g)
    name = f"{'complex' if complex_ else 'real'} L={L} {dtype}{' reverse' if reverse else ''}"
    for what, r, o in zip(("states", "ct log_a", "ct v", "ct x0"), ref, got):
        assert_close(f"{what}, {name}", r, o, "forward" if what == "states" else "gradient", dtype, L, 0.999)


@pytest.mark.parametrize("L,T,complex_,dtype", [(1, None, False, "float64"), (3, 8, True, "float64"),
                                                 (10, 4, True, "float32"), (17, None, False, "float64")])
def test_chunked_is_the_loop(L, T, complex_, dtype):
    check(lambda la, v, x0: varying_scan.chunked(la, v, x0, T), dtype, complex_, L)


def test_associative_is_the_loop():
    check(varying_scan.associative, "float64", True, 10)


def test_chunked_near_one_and_near_zero():
    log_a, v, x0, _ = case(4096, 2, "float64", False, radii=(1 - 1e-6, 1 - 1e-7))
    ref = np.asarray(varying_scan.sequential(log_a, v, x0))
    got = varying_scan.chunked(log_a.astype(jnp.float32), v.astype(jnp.float32), x0.astype(jnp.float32))
    assert_close("near one, float32", ref, np.asarray(got, np.float64), "forward", "float32", 4096, 1 - 1e-7)
    tiny = jnp.full((64, N), -69.0, jnp.float32)                  # a = 1e-30: every chunk product underflows
    states = varying_scan.chunked(tiny, v[:64].astype(jnp.float32), x0.astype(jnp.float32), 8)
    assert np.all(np.isfinite(states)) and np.allclose(states[1:], v[1:64], rtol=1e-6)


def test_a_gradient_of_a_gradient_is_the_loops():
    log_a, v, x0, g = case(9, 3, "float64", False)
    def twice(route):
        first = lambda la: jax.grad(lambda b: jnp.sum(route(b, v, x0) ** 2))(la)
        return jax.grad(lambda la: jnp.sum(first(la) * g))(log_a)
    assert_close("grad of grad", twice(varying_scan.sequential),
                 twice(lambda la, w, s: varying_scan.chunked(la, w, s, 4)), "gradient", "float64", 9, 0.999)


def test_bad_inputs_are_one_line_errors():
    log_a, v, x0, _ = case(5, 0, "float64", False)
    with pytest.raises(LinrnnError, match=r"expected log_a and v of one shape \(L N\)"):
        varying_scan.chunked(log_a[:4], v, x0)
    with pytest.raises(LinrnnError, match="chunk: expected a whole number"):
        varying_scan.chunked(log_a, v, x0, 0)


@pytest.mark.parametrize("complex_,reverse,L,dtype", [(False, False, 1, "float64"), (False, True, 10, "float32"),
                                                      (True, False, 7, "float64"), (True, True, 3, "float32")])
def test_pallas_kernel_is_the_loop(complex_, reverse, L, dtype):
    pytest.importorskip("jax.experimental.pallas.triton", reason="this JAX has no Pallas Triton (GPU) lowering")
    from linrnn.impls.jax import pallas_varying

    route = lambda la, v, x0: pallas_varying.scan(la, v, x0, interpret=True, block_n=4, reverse=reverse)
    check(route, dtype, complex_, L, reverse)
    with pytest.raises(LinrnnError, match="block_n must be a power of two"):
        pallas_varying.scan(*case(3, 0, "float64", complex_)[:3], interpret=True, block_n=3)
