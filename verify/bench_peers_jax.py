"""The JAX peers' routes of `linrnn.verify.bench_peers` (its module docstring says what each is): `build` returns the
compiled call of one route, forward or forward+backward (`jax.grad`), on the CPU."""

from __future__ import annotations

import importlib

import jax
import jax.numpy as jnp

from linrnn.impls.jax import varying_scan
from linrnn.verify import bench_jax


def build(name: str, family: str, direction: str, B: int, L: int, H: int, N: int, seed: int, varying: bool = False):
    return _jax_scan(name, direction, B, L, H, N, seed, varying)


# -- JAX -------------------------------------------------------------------------------------------------------

def _jax_scan(name: str, direction: str, B: int, L: int, H: int, n: int, seed: int, varying: bool = False):
    if name == "linrnn lax.scan":
        return bench_jax.make_scan_alone("sequential", direction, B, L, n, seed=seed, device="cpu")[0]
    if name == "linrnn associative scan":
        return bench_jax.make_scan_alone("associative", direction, B, L, n, seed=seed, device="cpu")[0]
    shape = (B, L, n) if varying else (n,)                   # varying: a transition per position and row
    own = name in ("linrnn varying scan (JAX)", "linrnn varying lax.scan")    # they take log a, the peers a

    def allocate():
        k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
        log_lam = jax.lax.complex(-0.1 * jax.random.uniform(k1, shape, "float32"),
                                  6.0 * jax.random.uniform(k2, shape, "float32")).astype("complex64")
        a = log_lam if own else jnp.exp(log_lam)
        return jnp.broadcast_to(a, (B, L, n)), jax.random.normal(k3, (B, L, n), dtype="complex64")

    if own:
        route = varying_scan.chunked if name == "linrnn varying scan (JAX)" else varying_scan.sequential
        batched = jax.vmap(lambda log_a, b: route(log_a, b, jnp.zeros_like(b[0])))

        def forward(log_a, b):
            return batched(log_a, b)                                                         # (B L n)
    else:
        linear_scan = importlib.import_module("recurrentgemma.jax.scan").linear_scan

        def forward(a, b):
            return linear_scan(x=b, a=a)[0]                                                  # (B L n)

    def total(a, b):
        x = forward(a, b)
        return jnp.sum(x.real) + jnp.sum(x.imag)

    fn = forward if direction == "forward" else jax.grad(total, argnums=(0, 1))
    return bench_jax._staged(fn, allocate, jax.devices("cpu")[0], "float32", None)[0]
