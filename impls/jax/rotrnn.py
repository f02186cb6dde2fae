"""RotRNN, JAX (Biegun, Dolga, Cunningham, Barber 2024; docs/models.md), run through complex pairs.

Per head h, with state x^h_t in R^N (N even) and input u_t in R^H:

    x^h_t = gamma_h P_h Theta_h P_h^T x^h_{t-1} + xi_h B_h u_t,      x^h_0 = 0
    y_t   = C [x^1_t; ...; x^heads_t] + D * u_t
    P_h = expm(M_h - M_h^T),  gamma_h = exp(-exp(gamma_log_h)),  xi_h = sqrt(1 - gamma_h^2) / ||B_h||_F

The route (different on purpose from the PyTorch side's real 2x2 rotations, and from the reference's
dense transition): in the rotated basis x~ = P^T x the transition is gamma Theta, and Theta's block j
acts on the pair (x~[2j], x~[2j+1]) as multiplication of the complex number z_j = x~[2j] + i x~[2j+1]
by exp(i theta_j). So every head is a complex diagonal recurrence with lambda_{h,j} = gamma_h e^{i theta_j}:

    z_t = lambda * z_{t-1} + B~ u_t,     B~_j = (P^T xi B)[2j] + i (P^T xi B)[2j+1]         (heads*N/2 lanes)
    y_t = C x_t = (C P) x~_t = Re(C~ z_t),  C~_j = (C P)[:, 2j] - i (C P)[:, 2j+1]

No matrix power and no dense transition is ever formed; P appears only in B~, C~ and at the state
boundary. Modes run `diagonal.run` with the routes of `scan.py` (sequential: `lax.scan`; scan:
in blocks over time with a backward that recomputes one block at a time, `scan.blocked`; conv: FFT in the state domain; step: one position). States in and out are
the reference's: (heads, N) real in the original basis, converted at the boundary (z <-> P^T x).

Precision: 1 - gamma^2 is computed as -expm1(-2 exp(gamma_log)), which keeps xi accurate in float32
when gamma is close to 1 (1 - gamma^2 by subtraction loses about 6e-4 relatively at gamma = 0.9999).
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.linalg import expm

from linrnn.impls.jax import diagonal
from linrnn.impls.specs.rotrnn import RotRNNConfig

Params = Mapping[str, jnp.ndarray]


class Rotated(NamedTuple):
    """A materialised RotRNN layer: the complex-pair system and the rotations for the state boundary."""

    sys: diagonal.Diagonal   # heads*N/2 complex lanes
    P: jnp.ndarray           # (heads N N)


# -- materialise the raw parameters -------------------------------------------------------------

def orthogonal(M: jnp.ndarray) -> jnp.ndarray:
    """P_h = expm(M_h - M_h^T).     M (heads N N) -> P (heads N N)"""
    return jax.vmap(expm)(M - jnp.swapaxes(M, 1, 2))


def _pairs(x: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The even and odd entries along axis 1 (the pairs).     x (heads N ...) -> 2 x (heads*N/2 ...)"""
    heads, N = x.shape[:2]
    return x[:, 0::2].reshape((heads * N // 2,) + x.shape[2:]), x[:, 1::2].reshape((heads * N // 2,) + x.shape[2:])


def materialise(p: Params, cfg: RotRNNConfig) -> Rotated:
    """Raw parameters -> lambda, B~, C~ (and C~_rev) in the rotated basis, as complex pairs."""
    H, N, heads = cfg.d_model, cfg.d_state, cfg.heads
    P = orthogonal(p["M"])                                                # (heads N N)
    neg_log_gamma = jnp.exp(p["gamma_log"])                               # (heads,)  -log gamma
    xi = jnp.sqrt(-jnp.expm1(-2.0 * neg_log_gamma)) / jnp.sqrt(jnp.sum(p["B"] ** 2, axis=(1, 2)))  # (heads,)
    log_lam = lax.complex(jnp.broadcast_to(-neg_log_gamma[:, None], p["theta"].shape), p["theta"])
    Bt = jnp.einsum("hmn,hmd->hnd", P, p["B"]) * xi[:, None, None]        # (heads N H)   P^T xi B
    B_re, B_im = _pairs(Bt)                                               # (heads*N/2 H)

    def rotated_readout(C):                                               # C (H heads*N) -> C~ (H heads*N/2) x 2
        Ct = jnp.einsum("dhm,hmn->hnd", C.reshape(H, heads, N), P)        # (heads N H)   (C P)^T
        even, odd = _pairs(Ct)
        return even.T, -odd.T

    C_re, C_im = rotated_readout(p["C"])
    rev = rotated_readout(p["C_rev"]) if cfg.bidirectional else (None, None)
    return Rotated(diagonal.Diagonal(log_lam.reshape(-1), B_re, B_im, C_re, C_im, p["D"], *rev), P)


# -- the state boundary: the reference's x (original basis) <-> complex pairs of P^T x -------------

def state_shape(cfg: RotRNNConfig) -> tuple[int, ...]:
    """The state of one sequence in the reference's convention: (heads, N) real."""
    return (cfg.heads, cfg.d_state)


STATE_IS_COMPLEX = False


def to_native(rot: Rotated, x: jnp.ndarray) -> jnp.ndarray:
    """z_j = (P^T x)[2j] + i (P^T x)[2j+1].     x (heads N) real -> z (heads*N/2,) complex"""
    xt = jnp.einsum("hmn,hm->hn", rot.P, x)                               # (heads N)
    return lax.complex(*_pairs(xt))


def from_native(rot: Rotated, z: jnp.ndarray) -> jnp.ndarray:
    """x = P x~,  x~ = (Re z_0, Im z_0, Re z_1, ...).     z (heads*N/2,) complex -> x (heads N) real"""
    heads, N = rot.P.shape[:2]
    xt = jnp.stack([z.real, z.imag], axis=-1).reshape(heads, N)          # (heads N)
    return jnp.einsum("hnm,hm->hn", rot.P, xt)


# -- the views ------------------------------------------------------------------------------------

def run(rot: Rotated, cfg: RotRNNConfig, u: jnp.ndarray, z0: jnp.ndarray, mode: str):
    """One sequence.     u (L H), z0 (heads*N/2,) complex -> y (L H), z_L (heads*N/2,)"""
    return diagonal.run(rot.sys, u, z0, mode, cfg.bidirectional)


def step(rot: Rotated, cfg: RotRNNConfig, u_t: jnp.ndarray, z: jnp.ndarray):
    """One position.     u_t (H,), z (heads*N/2,) -> y_t (H,), z"""
    return diagonal.step(rot.sys, u_t, z)
