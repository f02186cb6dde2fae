"""DLR, JAX (Gupta, Mehta, Berant 2022; docs/models.md): N eigenvalues shared by H channels, depthwise.

    lambda_n  = exp(-a_n^2 + i theta_n)
    x_{t,h,n} = lambda_n x_{t-1,h,n} + u_{t,h}                 (recurrent view, state H x N)
    K_{h,l}   = Re(sum_n W_{h,n} lambda_n^l),  l < L_k          (kernel view, L_k = min(max_kernel_length, L))
    y_{t,h}   = sum_{l<=t, l<L_k} K_{h,l} u_{t-l,h} + D_h u_{t,h}
    bidirectional:  y_t += sum_{j>=0} K^rev_j u_{t+1+j}   (future only; lag 0 counted once, causally)

Routes per mode (one sequence here; `layer.apply` vmaps over the batch):

* `sequential`: `lax.scan` over the (H N) state with the read-out Re(W x_t) inside the step, so the
  (L H N) trajectory is never stored;
* `scan`: chunkwise (chunks of T = `CHUNK` positions): inside a chunk the output is a dense causal
  T x T Toeplitz product with the first T kernel taps (the matrix built once per call); across chunks
  the (H N) state S_c = lambda^T S_{c-1} + sum_tau lambda^(T-1-tau) u_tau is carried by a `lax.scan` over
  the chunks (a diagonal recurrence on H N lanes) and read out as Re(sum_n lambda_n^(t+1) (W S_{c-1})_{h,n}).
  All but the carry are GEMMs. The whole runs over time in blocks of about L / `BLOCKS` positions
  (`scan.blocked`): the backward keeps u and the (H N) state entering each block, and re-runs one block's
  forward at a time; plain autodiff of the chunkwise route kept several (L/T H N) arrays (32 B L H 4 bytes
  at L = 4096, docs/speed-log.md, "2026-12-03: JAX, a chunked backward");
* `conv`: the kernel K computed as Re(exp(l log lambda) W^T) in chunks of `KERNEL_CHUNK` lags
  (`lax.map`; never an N x L matrix), then a zero-padded real FFT of length >= L + L_k;
* `step`: one position, O(H N).

The recurrent views (sequential, scan, step) equal the kernel view only while L <= L_k; `layer`
refuses them otherwise, like the reference. `conv` takes no initial state and returns none.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Optional

import jax.numpy as jnp
from jax import lax

from linrnn.impls.config import DLRConfig
from linrnn.impls.jax.scan import block_length, blocked, causal_fft_conv, exponents, powers

Params = Mapping[str, jnp.ndarray]

CHUNK = 64          # T of the chunkwise scan: T^2 H (intra) against L/T sequential carries
KERNEL_CHUNK = 256  # lags per block when computing the kernel: a (KERNEL_CHUNK N) block at a time
BLOCKS = 64         # the scan mode's blocks (`scan.blocked`): about L / 64 positions each, at least 256 (fewer
MIN_BLOCK = 256     # blocks: each adds the (T T H) Toeplitz cotangent per sequence); each saves an (H N) state


class DLRSystem(NamedTuple):
    """A materialised DLR layer."""

    log_lam: jnp.ndarray              # (N,) complex   -a^2 + i theta
    W_re: jnp.ndarray                 # (H N)
    W_im: jnp.ndarray                 # (H N)
    D: jnp.ndarray                    # (H,)
    W_re_rev: Optional[jnp.ndarray]   # (H N) or None
    W_im_rev: Optional[jnp.ndarray]   # (H N) or None


def materialise(p: Params, cfg: DLRConfig) -> DLRSystem:
    log_lam = lax.complex(-p["a"] ** 2, p["theta"])
    rev = (p["W_re_rev"], p["W_im_rev"]) if cfg.bidirectional else (None, None)
    return DLRSystem(log_lam, p["W_re"], p["W_im"], p["D"], *rev)


def state_shape(cfg: DLRConfig) -> tuple[int, ...]:
    """The state of one sequence in the reference's convention: (H, N) complex."""
    return (cfg.d_model, cfg.d_state)


STATE_IS_COMPLEX = True
CONV_TAKES_STATE = False   # the conv mode here is the kernel alone (no free response of a state)


def to_native(sys: DLRSystem, x: jnp.ndarray) -> jnp.ndarray:
    return x


def from_native(sys: DLRSystem, z: jnp.ndarray) -> jnp.ndarray:
    return z


# -- the kernel view ------------------------------------------------------------------------------

def kernel(log_lam: jnp.ndarray, W_re: jnp.ndarray, W_im: jnp.ndarray, length: int) -> jnp.ndarray:
    """K_{l,h} = Re(sum_n W_{h,n} lambda_n^l) for l < length, in blocks of KERNEL_CHUNK lags.     -> (length H)"""
    def block(start, size):
        p = powers(log_lam, exponents(start, size, log_lam))                  # (size N)
        return p.real @ W_re.T - p.imag @ W_im.T                          # (size H)

    if length <= KERNEL_CHUNK:
        return block(0, length)
    n_blocks = -(-length // KERNEL_CHUNK)
    starts = jnp.arange(n_blocks, dtype=jnp.int32) * KERNEL_CHUNK
    K = lax.map(lambda s: block(s, KERNEL_CHUNK), starts)                # (n_blocks KERNEL_CHUNK H)
    return K.reshape(n_blocks * KERNEL_CHUNK, -1)[:length]


def conv(sys: DLRSystem, cfg: DLRConfig, u: jnp.ndarray) -> jnp.ndarray:
    """y = K * u + D u (+ the strictly anti-causal K^rev).     u (L H) -> y (L H)"""
    L = u.shape[0]
    Lk = cfg.kernel_length(L)
    y = causal_fft_conv(kernel(sys.log_lam, sys.W_re, sys.W_im, Lk), u) + sys.D * u
    if cfg.bidirectional:
        # c_s = sum_j K^rev_j u_{L-1-(s-j)} on the reversed input; y_t += c_{L-2-t}, nothing at t = L-1
        c = causal_fft_conv(kernel(sys.log_lam, sys.W_re_rev, sys.W_im_rev, Lk), u[::-1])  # (L H)
        y = y + jnp.concatenate([c[: L - 1][::-1], jnp.zeros_like(u[:1])])
    return y


# -- the recurrent views ----------------------------------------------------------------------------

def _loop(log_lam, W_re, W_im, u, x0, reverse=False):
    """x_t = lambda x_{t-1} + u_t, read out as Re(W x_t) inside each step.     u (L H), x0 (H N) -> (L H), x_L"""
    lam = jnp.exp(log_lam)

    def body(x, u_t):
        x = lam * x + u_t[:, None].astype(x.dtype)                        # (H N)
        return x, jnp.sum(W_re * x.real - W_im * x.imag, axis=-1)         # (H,)

    x_last, y = lax.scan(body, x0, u, reverse=reverse)
    return y, x_last


def _backward_inputs(u: jnp.ndarray) -> jnp.ndarray:
    """u_{t+1} at position t (zero at the end): the backward state z_t = lambda z_{t+1} + u_{t+1}."""
    return jnp.concatenate([u[1:], jnp.zeros_like(u[:1])])


def sequential(sys: DLRSystem, cfg: DLRConfig, u: jnp.ndarray, x0: jnp.ndarray):
    """One step at a time.     u (L H), x0 (H N) complex -> y (L H), x_L (H N)"""
    y, x_last = _loop(sys.log_lam, sys.W_re, sys.W_im, u, x0)
    y = y + sys.D * u
    if cfg.bidirectional:
        y_rev, _ = _loop(sys.log_lam, sys.W_re_rev, sys.W_im_rev, _backward_inputs(u), jnp.zeros_like(x0),
                         reverse=True)
        y = y + y_rev
    return y, x_last


def _chunk_system(log_lam, W_re, W_im, T: int):
    """What every chunk of T positions shares: the powers lambda^0 .. lambda^T (T+1 N) and the causal T x T Toeplitz
    matrix of the first T kernel taps (T T H); the powers' prefix and the matrix's top-left corner serve a shorter
    chunk. Computed once per layer call: inside `blocked`, its backward (a scatter of T T H per block and
    sequence) was most of the scan mode's training time (docs/speed-log.md)."""
    p = powers(log_lam, exponents(0, T + 1, log_lam))                         # (T+1 N)  lambda^0 .. lambda^T
    K = p[:T].real @ W_re.T - p[:T].imag @ W_im.T                         # (T H)
    lag = jnp.arange(T)[:, None] - jnp.arange(T)[None, :]                 # (T T)  t - s
    toeplitz = jnp.where((lag >= 0)[..., None], K[jnp.clip(lag, 0, T - 1)], jnp.zeros((), K.dtype))  # (T T H)
    return p, toeplitz


def _intra_chunks(toeplitz, u):
    """Inside each chunk of T positions (T from the Toeplitz matrix, at most L): y_t = sum_{s<=t, same chunk}
    K_{t-s} u_s with the first T taps. No state crosses a chunk.     toeplitz (T' T' H), T' >= T; u (L H) -> (L H)"""
    L, H = u.shape
    T = min(toeplitz.shape[0], L)
    C = -(-L // T)
    uc = jnp.pad(u, ((0, C * T - L), (0, 0))).reshape(C, T, H)            # (C T H)
    y = jnp.einsum("tsh,csh->cth", toeplitz[:T, :T].astype(u.dtype), uc)  # (C T H)
    return y.reshape(C * T, H)[:L]


def _across_chunks(log_lam, W_re, W_im, p, u, x0):
    """The state carried across chunks of T = min(CHUNK, L) positions and its read-out (see the module docstring);
    the part inside the chunks is `_intra_chunks`'.     p (T'+1 N) = lambda^0 .. lambda^T', T' >= T;
    u (L H), x0 (H N) -> (L H), x_L"""
    L, H = u.shape
    T = min(CHUNK, L)
    C = -(-L // T)
    pad = C * T - L
    uc = jnp.pad(u, ((0, pad), (0, 0))).reshape(C, T, H)                  # (C T H)
    p = p[:T + 1]                                                         # (T+1 N)
    # across chunks: S_c = lambda^T S_{c-1} + sum_tau lambda^(T-1-tau) u_{c,tau}
    w = p[:T][::-1]                                                       # (T N)  lambda^(T-1-tau)
    ends = lax.complex(jnp.einsum("tn,cth->chn", w.real, uc), jnp.einsum("tn,cth->chn", w.imag, uc))  # (C H N)
    # a diagonal recurrence on the H N lanes with transition lambda^T over the block's C chunks, one chunk a step:
    # `lax.associative_scan` here made the backward grow with C (0.67 s against 0.33 s for L = 4096 in blocks of
    # 1,024, B = 8, H = N = 128; docs/speed-log.md)
    lam_T = jnp.broadcast_to(jnp.exp(lax.complex(T * log_lam.real, T * log_lam.imag)), x0.shape)   # (H N)

    def carry(x, end):
        x = lam_T * x + end
        return x, x

    _, after = lax.scan(carry, x0, ends, unroll=min(C, 16))                # (C H N)  the state after each chunk
    before = jnp.concatenate([x0[None], after[:-1]])                       # (C H N)  the state before each chunk
    S_last = after[-1]                                                     # (H N)
    # read-out of the carried state: Re(sum_n lambda_n^(t+1) Z_{c,h,n}), Z = W * S_{c-1}: products over n,
    # no (T H N) array (whose cotangent, one per sequence under vmap, would be the largest temporary)
    q = p[1:]                                                             # (T N)  lambda^(t+1)
    Z_re = W_re * before.real - W_im * before.imag                        # (C H N)  Re(W S_{c-1})
    Z_im = W_re * before.imag + W_im * before.real                        # (C H N)  Im(W S_{c-1})
    y = jnp.einsum("tn,chn->cth", q.real, Z_re) - jnp.einsum("tn,chn->cth", q.imag, Z_im)   # (C T H)
    y = y.reshape(C * T, H)[:L]
    if pad:  # the padded tail moved S_last past x_L: restart from the state before the last chunk
        r = T - pad
        w_last = p[:r][::-1]                                              # (r N)  lambda^(r-1-tau)
        tail = uc[-1, :r]                                                 # (r H)
        S_last = p[r] * before[-1] + lax.complex(jnp.einsum("tn,th->hn", w_last.real, tail),
                                                 jnp.einsum("tn,th->hn", w_last.imag, tail))
    return y, S_last


def scan(sys: DLRSystem, cfg: DLRConfig, u: jnp.ndarray, x0: jnp.ndarray):
    """Chunkwise, over time in blocks (`scan.blocked`: each block's forward recomputed in its backward).

    u (L H), x0 (H N) complex -> y (L H), x_L (H N)
    """
    # the powers and the Toeplitz matrix once per call, shared by the blocks (a block is a whole number of chunks:
    # a power of two >= MIN_BLOCK, or all of L)
    block = block_length(u.shape[0], BLOCKS, MIN_BLOCK)
    T = min(CHUNK, block)
    shared = _chunk_system(sys.log_lam, sys.W_re, sys.W_im, T)

    def forward(x, u_b):
        y_b, x_b = _across_chunks(sys.log_lam, sys.W_re, sys.W_im, shared[0], u_b, x)
        return y_b + _intra_chunks(shared[1], u_b), x_b

    y, x_last = blocked(forward, x0, u, block)
    y = y + sys.D * u
    if cfg.bidirectional:
        shared_rev = _chunk_system(sys.log_lam, sys.W_re_rev, sys.W_im_rev, T)

        def backward(x, u_b):
            y_b, x_b = _across_chunks(sys.log_lam, sys.W_re_rev, sys.W_im_rev, shared_rev[0], u_b, x)
            return y_b + _intra_chunks(shared_rev[1], u_b), x_b

        y_rev, _ = blocked(backward, jnp.zeros_like(x0), _backward_inputs(u)[::-1], block)
        y = y + y_rev[::-1]
    return y, x_last


def run(sys: DLRSystem, cfg: DLRConfig, u: jnp.ndarray, x0: jnp.ndarray, mode: str):
    """One sequence by the route of `mode`.     u (L H), x0 (H N) or None for 'conv' -> y (L H), x_L or None"""
    if mode == "conv":
        return conv(sys, cfg, u), None
    return (sequential if mode == "sequential" else scan)(sys, cfg, u, x0)


def step(sys: DLRSystem, cfg: DLRConfig, u_t: jnp.ndarray, x: jnp.ndarray):
    """One position.     u_t (H,), x (H N) -> y_t (H,), x (H N)"""
    x = jnp.exp(sys.log_lam) * x + u_t[:, None].astype(x.dtype)
    y_t = jnp.sum(sys.W_re * x.real - sys.W_im * x.imag, axis=-1) + sys.D * u_t
    return y_t, x
