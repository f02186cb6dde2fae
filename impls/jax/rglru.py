"""RG-LRU, JAX (De et al. 2024, Griffin; RecurrentGemma's layer; docs/models.md).

    r_t = sigma(W_a u_t + b_a),  i_t = sigma(W_x u_t + b_x)              block-diagonal gates
    log a_t = -c r_t softplus(-Lambda)
    x_t = a_t * x_{t-1} + sqrt(1 - a_t^2) * (i_t * u_t)                 a sequence's first position: i_t * u_t
    y_t = x_t   (bidirectional: + the same layer on the reversed sequence)

Routes per mode, one sequence (`layer.apply` vmaps), on the scan with a transition per position (`varying_scan.py`)
over the H real lanes:

* `sequential`: the gates, then `varying_scan.sequential` (`lax.scan`) over the whole sequence;
* `scan`: the layer over time in blocks (`scan.blocked`, as the other recurrences' `scan` mode): each block forms
  its gates and scans from the state entering it, and the backward re-runs one block at a time from its saved state,
  so only a block's gates and states are alive at once; inside a block `varying_scan.block_scan` (`lax.scan` on a
  CPU, where it beat the two-level scan twofold: B 8, L 4096, n 128 complex, 117 against 213 ms of CPU; the Pallas
  kernel on a GPU);
* `step`: one position.

The PyTorch side runs its own code (`varying_scan.py` there: the two-level scan, its fastest route on a CPU).

The native state is a pair (x (H,) real, started: a boolean): the reference's state and whether a sequence is under
way. A call without a state starts from (0, False), so its first input enters unnormalised, as the reference's does;
a state passed in is (x, True); `step` with packed sequences restarts from (0, False) where a segment begins.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

import jax
import jax.numpy as jnp

from linrnn.impls.jax import scan, varying_scan
from linrnn.impls.specs.rglru import RGLRUConfig

Params = Mapping[str, jnp.ndarray]


class Gated(NamedTuple):
    """A materialised RG-LRU layer (one real dtype)."""

    log_sigma: jnp.ndarray   # (H,)      c log sigma(Lambda) = -c softplus(-Lambda)
    W_a: jnp.ndarray         # (K W W)   recurrence gate (block, out, in)
    b_a: jnp.ndarray         # (H,)
    W_x: jnp.ndarray         # (K W W)   input gate
    b_x: jnp.ndarray         # (H,)


def materialise(p: Params, cfg: RGLRUConfig) -> Gated:
    return Gated(-cfg.c * jax.nn.softplus(-p["Lambda"]), p["W_a"], p["b_a"], p["W_x"], p["b_x"])


def block_linear(W: jnp.ndarray, b: jnp.ndarray, u: jnp.ndarray) -> jnp.ndarray:
    """W u + b with W block-diagonal (block, out, in).     u (... H) -> (... H)"""
    K, width, _ = W.shape
    blocks = u.reshape(*u.shape[:-1], K, width)
    return jnp.einsum("kvw,...kw->...kv", W, blocks).reshape(u.shape) + b


def drive(sys: Gated, u: jnp.ndarray):
    """log a_t, the input gated i_t * u_t, and sqrt(1 - a_t^2) = sqrt(-expm1(2 log a_t)).    u (... H) -> 3 (... H)"""
    r = jax.nn.sigmoid(block_linear(sys.W_a, sys.b_a, u))
    gated = jax.nn.sigmoid(block_linear(sys.W_x, sys.b_x, u)) * u
    log_a = r * sys.log_sigma
    return log_a, gated, jnp.sqrt(-jnp.expm1(2 * log_a))


def state_shape(cfg: RGLRUConfig) -> tuple[int, ...]:
    """The state of one sequence in the reference's convention: (H,) real."""
    return (cfg.d_model,)


STATE_IS_COMPLEX = False
RUN_TAKES_LENGTH = True       # `run` takes the row's valid length: its backward scan begins afresh at length - 1


def to_native(sys: Gated, x: jnp.ndarray):
    """A state passed in continues a sequence.     (H,) -> ((H,), started)"""
    return x, jnp.ones((), dtype=bool)


def from_native(sys: Gated, z) -> jnp.ndarray:
    return z[0]


def states(sys: Gated, u: jnp.ndarray, x0: jnp.ndarray, fresh: jnp.ndarray, mode: str) -> jnp.ndarray:
    """The forward scan's states from x0, the input unnormalised where `fresh` (L,) bool (a sequence begins).
    u (L H) -> (L H)"""
    if mode == "sequential":
        log_a, gated, scale = drive(sys, u)
        return varying_scan.sequential(log_a, jnp.where(fresh[:, None], gated, scale * gated), x0)

    def block(x, inputs):                                              # inputs (T H+1): u and the fresh flag
        log_a, gated, scale = drive(sys, inputs[:, :-1])
        out = varying_scan.block_scan(log_a, jnp.where(inputs[:, -1:] > 0.5, gated, scale * gated), x)
        return out, out[-1]

    return scan.blocked(block, x0, jnp.concatenate([u, fresh[:, None].astype(u.dtype)], axis=1))[0]


def run(sys: Gated, cfg: RGLRUConfig, u: jnp.ndarray, z0, mode: str, length=None):
    """One sequence.     u (L H), z0 ((H,), started), length: the valid positions (None: L) -> y (L H), z_L"""
    x0, started = z0
    t = jnp.arange(u.shape[0])
    forward = states(sys, u, x0, (t == 0) & ~started, mode)
    y = forward
    if cfg.bidirectional:
        last = u.shape[0] - 1 if length is None else length - 1        # the reversed sequence begins here
        y = y + states(sys, u[::-1], jnp.zeros_like(x0), (t == last)[::-1], mode)[::-1]
    return y, (forward[-1], jnp.ones((), dtype=bool))


def step(sys: Gated, cfg: RGLRUConfig, u_t: jnp.ndarray, z):
    """One position.     u_t (H,), z ((H,), started) -> y_t (H,), z"""
    x, started = z
    log_a, gated, scale = drive(sys, u_t)
    x = jnp.where(started, jnp.exp(log_a) * x + scale * gated, gated)
    return x, (x, jnp.ones((), dtype=bool))
