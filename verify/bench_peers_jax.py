"""The JAX peers' routes of `linrnn.verify.bench_peers` (its module docstring says what each is): `build` returns the
compiled call of one route, forward or forward+backward (`jax.grad`), on the CPU."""

from __future__ import annotations

import importlib

import jax
import jax.numpy as jnp

from linrnn.verify import bench_jax


def build(name: str, family: str, direction: str, B: int, L: int, H: int, N: int, seed: int):
    return _jax_scan(name, direction, B, L, H, N, seed)


# -- JAX -------------------------------------------------------------------------------------------------------

def _jax_scan(name: str, direction: str, B: int, L: int, H: int, n: int, seed: int):
    if name == "linrnn lax.scan":
        return bench_jax.make_scan_alone("sequential", direction, B, L, n, seed=seed, device="cpu")[0]
    if name == "linrnn associative scan":
        return bench_jax.make_scan_alone("associative", direction, B, L, n, seed=seed, device="cpu")[0]
    linear_scan = importlib.import_module("recurrentgemma.jax.scan").linear_scan

    def allocate():
        k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
        lam = jnp.exp(jax.lax.complex(-0.1 * jax.random.uniform(k1, (n,), "float32"),
                                      6.0 * jax.random.uniform(k2, (n,), "float32"))).astype("complex64")
        return jnp.broadcast_to(lam, (B, L, n)), jax.random.normal(k3, (B, L, n), dtype="complex64")

    def forward(a, b):
        return linear_scan(x=b, a=a)[0]                                                      # (B L n)

    def total(a, b):
        x = forward(a, b)
        return jnp.sum(x.real) + jnp.sum(x.imag)

    fn = forward if direction == "forward" else jax.grad(total, argnums=(0, 1))
    return bench_jax._staged(fn, allocate, jax.devices("cpu")[0], "float32", None)[0]
