"""The model-side functions of a mixer whose state is its complex diagonal lanes themselves (LRU, S5): the state of
one sequence, its conversions, and `run` / `step` through `diagonal.py`.

A mixer that materialises into a `diagonal.Diagonal` with such a state imports these from here
(`from linrnn.impls.jax.lanes import STATE_IS_COMPLEX, from_native, run, state_shape, step, to_native`) and
defines only its `materialise`: no model imports another model's file.
"""

from __future__ import annotations

import jax.numpy as jnp

from linrnn.impls.jax import diagonal


def state_shape(cfg) -> tuple[int, ...]:
    """The state of one sequence in the reference's convention: (N,) complex."""
    return (cfg.d_state,)


STATE_IS_COMPLEX = True


def to_native(sys: diagonal.Diagonal, x: jnp.ndarray) -> jnp.ndarray:
    """The reference's state is the lanes themselves.     (N,) -> (N,)"""
    return x


def from_native(sys: diagonal.Diagonal, z: jnp.ndarray) -> jnp.ndarray:
    return z


def run(sys: diagonal.Diagonal, cfg, u: jnp.ndarray, z0: jnp.ndarray, mode: str):
    """One sequence.     u (L H), z0 (N,) complex -> y (L H), z_L (N,)"""
    return diagonal.run(sys, u, z0, mode, cfg.bidirectional)


def step(sys: diagonal.Diagonal, cfg, u_t: jnp.ndarray, z: jnp.ndarray):
    """One position.     u_t (H,), z (N,) -> y_t (H,), z (N,)"""
    return diagonal.step(sys, u_t, z)
