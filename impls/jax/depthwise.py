"""The depthwise diagonal recurrence on H N lanes that DLR and S4D share, JAX: lane (h, n) fed by u_{t,h},

    x_{t,h,n} = lambda_{(h,)n} x_{t-1,h,n} + u_{t,h},     y_{t,h} = Re(sum_n W_{h,n} x_{t,h,n}) + D_h u_{t,h}

with N eigenvalues shared by the channels (DLR's, log_lam (N,)) or N per channel (S4D's, log_lam (H N)): the
kernel K_{l,h} = Re(sum_n W_{h,n} lambda_n^l) in blocks of lags (`kernel`), its FFT convolution (`convolve`), the
loop that reads out inside each step (`loop`), the chunkwise scan over time in blocks (`chunkwise`), and the state of
one sequence, (H, N) complex, with its conversions. Each model's file (`dlr.py`, `s4d.py`) materialises its
eigenvalues and read-out weights and runs these: no model imports another model's file. The routes are described in
`dlr.py`'s docstring.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
from jax import lax

from linrnn.impls.jax.scan import block_length, blocked, causal_fft_conv, exponents, powers

CHUNK = 64          # T of the chunkwise scan: T^2 H (intra) against L/T sequential carries
KERNEL_CHUNK = 256  # lags per block when computing the kernel: a (KERNEL_CHUNK N) block at a time
LANE_KERNEL_CHUNK = 16   # the same for eigenvalues per channel (S4D): a (16 H N) block, 2 MB at H = N = 128
BLOCKS = 64         # the scan mode's blocks (`scan.blocked`): about L / 64 positions each, at least 256 (fewer
MIN_BLOCK = 256     # blocks: each adds the (T T H) Toeplitz cotangent per sequence); each saves an (H N) state


def state_shape(cfg) -> tuple[int, ...]:
    """The state of one sequence in the reference's convention: (H, N) complex."""
    return (cfg.d_model, cfg.d_state)


STATE_IS_COMPLEX = True


def to_native(sys, x: jnp.ndarray) -> jnp.ndarray:
    return x


def from_native(sys, z: jnp.ndarray) -> jnp.ndarray:
    return z


def _lanes(log_lam: jnp.ndarray) -> str:
    """The einsum letters of the eigenvalues' lanes: 'n' for DLR's (N,) shared by the channels, 'hn' for an (H N)
    per channel (S4D's, `s4d.py`)."""
    return "n" if log_lam.ndim == 1 else "hn"


# -- the kernel view ------------------------------------------------------------------------------

def kernel(log_lam: jnp.ndarray, W_re: jnp.ndarray, W_im: jnp.ndarray, length: int, start: int = 0) -> jnp.ndarray:
    """K_{l,h} = Re(sum_n W_{h,n} lambda_n^(start+l)) for l < length, in blocks of KERNEL_CHUNK lags.

    log_lam (N,) (DLR), or (H N) (S4D's per-channel eigenvalues); W_re, W_im (... H N) -> (... length H). Each block's powers
    (KERNEL_CHUNK N), or (LANE_KERNEL_CHUNK H N), are recomputed in the backward (`jax.checkpoint`): for S4D the
    powers of all lags, (L H N) complex, were the largest array of its conv mode's training step.
    """
    n = _lanes(log_lam)
    chunk = kernel_chunk(log_lam)

    def block(first, size):
        p = powers(log_lam.reshape(-1), exponents(first, size, log_lam)).reshape((size,) + log_lam.shape)
        return jnp.einsum(f"l{n},...hn->...lh", p.real, W_re) - jnp.einsum(f"l{n},...hn->...lh", p.imag, W_im)

    if length <= chunk:
        return block(start, length)
    n_blocks = -(-length // chunk)
    starts = start + jnp.arange(n_blocks, dtype=jnp.int32) * chunk
    K = jnp.moveaxis(lax.map(jax.checkpoint(lambda s: block(s, chunk)), starts), 0, -3)   # (... n_blocks chunk H)
    return K.reshape(K.shape[:-3] + (n_blocks * chunk, K.shape[-1]))[..., :length, :]


def kernel_chunk(log_lam: jnp.ndarray) -> int:
    """Lags per block of `kernel`: KERNEL_CHUNK for DLR's (N,) eigenvalues, LANE_KERNEL_CHUNK for (H N)."""
    return KERNEL_CHUNK if log_lam.ndim == 1 else LANE_KERNEL_CHUNK


def convolve(K: jnp.ndarray, K_rev: Optional[jnp.ndarray], u: jnp.ndarray) -> jnp.ndarray:
    """sum_{l<=t} K_l u_{t-l} (+ the strictly anti-causal sum_{j>=0} K^rev_j u_{t+1+j}) by FFT, one sequence at a time.

    K, K_rev (L_k H) (K_rev None: causal), u (B L H) -> (B L H). A zero-padded FFT holds three (2L H) spectra and
    signals of a sequence at once; over the whole batch they were 6 of the 8.4 B L H 4 bytes of XLA's account of
    DLR's conv training step (B = 8, L = 4096, H = 128). `lax.map` over the sequences, each recomputed in the
    backward (`jax.checkpoint`), keeps one sequence's: the kernels' cotangents are summed over the sequences in
    the map's carry.
    """
    L = u.shape[1]

    def one(u1):                                                          # (L H)
        y = causal_fft_conv(K, u1)
        if K_rev is not None:
            # c_s = sum_j K^rev_j u_{L-1-(s-j)} on the reversed input; y_t += c_{L-2-t}, nothing at t = L-1
            c = causal_fft_conv(K_rev, u1[::-1])
            y = y + jnp.concatenate([c[: L - 1][::-1], jnp.zeros_like(u1[:1])])
        return y

    return lax.map(jax.checkpoint(one), u)


# -- the recurrent views ----------------------------------------------------------------------------

def loop(log_lam, W_re, W_im, u, x0, reverse=False):
    """x_t = lambda x_{t-1} + u_t, read out as Re(W x_t) inside each step.     u (L H), x0 (H N) -> (L H), x_L"""
    lam = jnp.exp(log_lam)

    def body(x, u_t):
        x = lam * x + u_t[:, None].astype(x.dtype)                        # (H N)
        return x, jnp.sum(W_re * x.real - W_im * x.imag, axis=-1)         # (H,)

    x_last, y = lax.scan(body, x0, u, reverse=reverse)
    return y, x_last


def backward_inputs(u: jnp.ndarray, axis: int = 0) -> jnp.ndarray:
    """u_{t+1} at position t (zero at the end) along the time axis: the backward state z_t = lambda z_{t+1} + u_{t+1}."""
    ahead = lax.slice_in_dim(u, 1, u.shape[axis], axis=axis)
    return jnp.concatenate([ahead, jnp.zeros_like(lax.slice_in_dim(u, 0, 1, axis=axis))], axis=axis)


def _chunk_system(log_lam, W_re, W_im, T: int):
    """What every chunk of T positions shares: the powers lambda^0 .. lambda^T (T+1 N), or (T+1 H N) for an (H N)
    log_lam, and the causal T x T Toeplitz matrix of the first T kernel taps (T T H); the powers' prefix and the
    matrix's top-left corner serve a shorter chunk. Computed once per layer call: inside `blocked`, its backward (a
    scatter of T T H per block and sequence) was most of the scan mode's training time (docs/speed-log.md)."""
    n = _lanes(log_lam)
    p = powers(log_lam.reshape(-1), exponents(0, T + 1, log_lam)).reshape((T + 1,) + log_lam.shape)   # lambda^0..T
    K = jnp.einsum(f"t{n},hn->th", p[:T].real, W_re) - jnp.einsum(f"t{n},hn->th", p[:T].imag, W_im)   # (T H)
    lag = jnp.arange(T)[:, None] - jnp.arange(T)[None, :]                 # (T T)  t - s
    toeplitz = jnp.where((lag >= 0)[..., None], K[jnp.clip(lag, 0, T - 1)], jnp.zeros((), K.dtype))  # (T T H)
    return p, toeplitz


def _intra_chunks(toeplitz, u):
    """Inside each chunk of T positions (T from the Toeplitz matrix, at most L): y_t = sum_{s<=t, same chunk}
    K_{t-s} u_s with the first T taps. No state crosses a chunk.     toeplitz (T' T' H), T' >= T; u (B L H) -> (B L H)"""
    B, L, H = u.shape
    T = min(toeplitz.shape[0], L)
    C = -(-L // T)
    uc = jnp.pad(u, ((0, 0), (0, C * T - L), (0, 0))).reshape(B, C, T, H)   # (B C T H)
    y = jnp.einsum("tsh,bcsh->bcth", toeplitz[:T, :T].astype(u.dtype), uc)  # (B C T H)
    return y.reshape(B, C * T, H)[:, :L]


def _across_chunks(log_lam, W_re, W_im, p, u, x0):
    """The state carried across chunks of T = min(CHUNK, L) positions and its read-out (see the module docstring);
    the part inside the chunks is `_intra_chunks`'.     p (T'+1 N) = lambda^0 .. lambda^T', T' >= T (or
    (T'+1 H N) for an (H N) log_lam); u (B L H), x0 (B H N) -> (B L H), x_L (B H N)"""
    n = "t" + _lanes(log_lam)
    B, L, H = u.shape
    T = min(CHUNK, L)
    C = -(-L // T)
    pad = C * T - L
    uc = jnp.pad(u, ((0, 0), (0, pad), (0, 0))).reshape(B, C, T, H)       # (B C T H)
    p = p[:T + 1]                                                         # (T+1 N) or (T+1 H N)
    # across chunks: S_c = lambda^T S_{c-1} + sum_tau lambda^(T-1-tau) u_{c,tau}
    w = p[:T][::-1]                                                       # (T N)  lambda^(T-1-tau)
    ends = lax.complex(jnp.einsum(f"{n},bcth->cbhn", w.real, uc), jnp.einsum(f"{n},bcth->cbhn", w.imag, uc))  # (C B H N)
    # a diagonal recurrence on the H N lanes with transition lambda^T over the block's C chunks, one chunk a step:
    # `lax.associative_scan` here made the backward grow with C (0.67 s against 0.33 s for L = 4096 in blocks of
    # 1,024, B = 8, H = N = 128; docs/speed-log.md)
    lam_T = jnp.broadcast_to(jnp.exp(lax.complex(T * log_lam.real, T * log_lam.imag)), x0.shape)   # (B H N)

    def carry(x, end):
        x = lam_T * x + end
        return x, x

    _, after = lax.scan(carry, x0, ends, unroll=min(C, 16))                # (C B H N)  the state after each chunk
    before = jnp.concatenate([x0[None], after[:-1]])                       # (C B H N)  the state before each chunk
    S_last = after[-1]                                                     # (B H N)
    # read-out of the carried state: Re(sum_n lambda_n^(t+1) Z_{c,h,n}), Z = W * S_{c-1}: products over n,
    # no (T B H N) array
    q = p[1:]                                                             # (T N)  lambda^(t+1)
    Z_re = W_re * before.real - W_im * before.imag                        # (C B H N)  Re(W S_{c-1})
    Z_im = W_re * before.imag + W_im * before.real                        # (C B H N)  Im(W S_{c-1})
    y = jnp.einsum(f"{n},cbhn->bcth", q.real, Z_re) - jnp.einsum(f"{n},cbhn->bcth", q.imag, Z_im)   # (B C T H)
    y = y.reshape(B, C * T, H)[:, :L]
    if pad:  # the padded tail moved S_last past x_L: restart from the state before the last chunk
        r = T - pad
        w_last = p[:r][::-1]                                              # (r N)  lambda^(r-1-tau)
        tail = uc[:, -1, :r]                                              # (B r H)
        S_last = p[r] * before[-1] + lax.complex(jnp.einsum(f"{n},bth->bhn", w_last.real, tail),
                                                 jnp.einsum(f"{n},bth->bhn", w_last.imag, tail))
    return y, S_last


def chunkwise(log_lam, W, W_rev, D, u: jnp.ndarray, x0: jnp.ndarray):
    """y_t = Re(sum_n W_{h,n} x_{t,h,n}) + D u_t for x_t = lambda x_{t-1} + u_t on the H N lanes, chunkwise in blocks.

    log_lam (N,) (DLR) or (H N) (S4D) complex; W = (W_re, W_im) (H N), W_rev the same or None (causal);
    u (B L H), x0 (B H N) complex -> y (B L H), x_L (B H N)

    The whole batch at once, not vmapped over it: the arrays every sequence shares (the powers, the Toeplitz
    matrix, the weights) get one cotangent summed over the batch inside the contractions. Under vmap each
    sequence had its own, (T+1 H N) complex for S4D's powers several times over: XLA's account of S4D's
    training step at B = 8, L = 4096, H = N = 128 was 20 B L H 4 bytes that way, most of it these.
    """
    # the powers and the Toeplitz matrix once per call, shared by the blocks (a block is a whole number of chunks:
    # a power of two >= MIN_BLOCK, or all of L)
    block = block_length(u.shape[1], BLOCKS, MIN_BLOCK, maximum=0)
    T = min(CHUNK, block)

    def direction(W_re, W_im, x, u):
        p, toeplitz = _chunk_system(log_lam, W_re, W_im, T)

        def forward(x, u_b):
            y_b, x_b = _across_chunks(log_lam, W_re, W_im, p, u_b, x)
            return y_b + _intra_chunks(toeplitz, u_b), x_b

        return blocked(forward, x, u, block, axis=1)

    y, x_last = direction(*W, x0, u)
    y = y + D * u
    if W_rev is not None:
        y = y + direction(*W_rev, jnp.zeros_like(x0), backward_inputs(u, axis=1)[:, ::-1])[0][:, ::-1]
    return y, x_last
