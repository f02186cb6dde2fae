"""DLR, PyTorch (Gupta, Mehta, Berant 2022; docs/models.md).

No discretisation and no B. The N eigenvalues are shared by the H channels; each channel has its own
complex output weights:

    lambda_n  = exp(-a_n^2 + i theta_n)                       |lambda_n| <= 1 by construction
    x_{t,h,n} = lambda_n x_{t-1,h,n} + u_{t,h}                 (recurrent view, state H x N)
    K_{h,l}   = Re(sum_n W_{h,n} lambda_n^l),  l < L_k          (kernel view, L_k = min(max_kernel_length, L))
    y_{t,h}   = sum_{l<=t, l<L_k} K_{h,l} u_{t-l,h} + D_h u_{t,h}
    bidirectional:  y_t += sum_{j>=0} K^rev_j u_{t+1+j}       (future only; lag 0 is counted once)

lambda^l is always exp(l log lambda), and no N x L matrix is formed: every sum over positions runs
in blocks of at most `BLOCK // N` positions, and the backward computes each block of powers again
rather than keeping it (`_recomputed`). Routes of the views:

* `conv` (the definition; the only view when L > max_kernel_length): the kernel K (L_k H) built block
  by block, D added at its lag 0 (so y comes out of one convolution), applied by a zero-padded real
  FFT of length >= L + L_k; a given state adds its free response Re(W lambda^(t+1) x0), and the final
  state is sum_s lambda^(L-1-s) u_s + lambda^L x0 (a product as costly as the free response, skipped
  when the caller drops the state: `final_state=False`);
* `scan`: the chunked scan in kernel form (`ChunkedScan`). The state is H x N per position while the
  input is one number per channel, so each chunk of T positions is the `conv` route on the chunk from
  the state the chunk before left: the causal convolution with K_{<T} (one FFT over all chunks), the
  free response of the entering state, and the state after the chunk (a product with lambda^(T-1-s)),
  so that the carries are S_c = lambda^T S_{c-1} + (the chunk's own end state). Work O(B L H N) in
  matrix products, and no (B L H N) state trajectory (8.6 GB at B=8, L=4096, H=N=128 in float64): one
  (B H N) state per chunk, which is all the backward keeps besides u; the backward is the adjoint of
  the carries, over the chunks in reverse. It does the work of `conv` plus the carries, so it is never
  faster: conv is the view to use for DLR, the scan its independent recurrent check (`chunk_length`
  for T; timings and memory in docs/speed-log.md);
* `sequential`, `step`: the plain loop over positions on the (B H N) state as real pairs, rotated by
  real 2x2 rotation-scalings, read out at every position.

The backward direction reuses the causal machinery on the time-reversed input and shifts by one.
States cross the boundary as (B H N) complex tensors (the reference's convention). With a
`max_kernel_length` the recurrent views (and states) are refused, as in the reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.torch import scan as scans
from linrnn.impls.torch.autodiff import recorded, transformed, vjp_through
from linrnn.impls.torch.conv import causal_conv, depthwise_conv, depthwise_forward, depthwise_gradients
from linrnn.impls.torch.layer import Mixer
from linrnn.impls.torch.scan import complex_dtype

BLOCK = 2**18          # complex entries of one block of lambda^l (positions x N): 2 MiB in complex64, so that
                       # the temporaries of one block's recomputation and backward stay a small part of u


# -- materialise the raw parameters -------------------------------------------------------------

@dataclass
class DLRForm:
    """The derived tensors of one forward pass."""

    log_lam: torch.Tensor              # (N,) complex       -a^2 + i theta
    W: torch.Tensor                    # (H N) complex      W_re + i W_im
    W_rev: torch.Tensor | None         # (H N) complex or None
    D: torch.Tensor                    # (H,)
    A1: torch.Tensor                   # (N 2)              lambda as a real 2x2 rotation-scaling (`scan.rotate`)
    A2: torch.Tensor                   # (N 2)


def materialise(layer: "DLR") -> DLRForm:
    log_lam = torch.complex(-layer.a**2, layer.theta)
    W = torch.complex(layer.W_re, layer.W_im)
    W_rev = torch.complex(layer.W_re_rev, layer.W_im_rev) if layer.config.bidirectional else None
    return DLRForm(log_lam, W, W_rev, layer.D, *scans.rotation_scaling(log_lam, layer.D.dtype))


def _blocks(length: int, N: int):
    size = max(1, BLOCK // N)
    return [(s, min(s + size, length)) for s in range(0, length, size)]


def _powers(log_lam: torch.Tensor, start: int, stop: int, descending_from: int | None = None) -> torch.Tensor:
    """lambda^l = exp(l log lambda) as real pairs, l = start..stop-1 (or descending_from - l).     -> (S 2N)"""
    dtype = log_lam.real.dtype
    steps = torch.arange(start, stop, dtype=dtype, device=log_lam.device)
    if descending_from is not None:
        steps = descending_from - steps
    return torch.view_as_real(scans.powers(log_lam, steps)).flatten(-2)


def _power(log_lam: torch.Tensor, k: int) -> torch.Tensor:
    """lambda^k.     -> (N,) complex"""
    return scans.powers(log_lam, torch.full((1,), k, dtype=log_lam.real.dtype, device=log_lam.device))[0]


def _cat(parts: list[torch.Tensor], dim: int) -> torch.Tensor:
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=dim)      # one block: no copy


def _conj_pairs(Z: torch.Tensor) -> torch.Tensor:
    """(Re Z, -Im Z) interleaved, so that Re(Z p) = _conj_pairs(Z) . p for p as real pairs.     (... N) -> (... 2N)"""
    return torch.view_as_real(Z.conj().resolve_conj()).flatten(-2)


def _recomputed(fn, *args):
    """fn(*args), keeping only its inputs for the backward, which runs fn again (`torch.utils.checkpoint`).

    For the products with a block of powers: autograd would keep every (S 2N) block of lambda^l, in all
    L x 2N numbers (for the kernel, a quarter of u at B = 8, H = N = 128), where recomputing a block costs
    one exp and one polar form per entry.
    """
    if torch.is_grad_enabled():
        return checkpoint(fn, *args, use_reentrant=False)
    return fn(*args)


def _kernel_block(log_lam, Wp, start, stop):
    return _powers(log_lam, start, stop) @ Wp.T                             # (S H)


def _free_block(log_lam, G, start, stop):
    return G @ _powers(log_lam, start + 1, stop + 1).T                      # (B H S)


def _advance_block(log_lam, u_block, start, last):
    return u_block.transpose(1, 2) @ _powers(log_lam, start, start + u_block.shape[1], descending_from=last)


def kernel(log_lam: torch.Tensor, W: torch.Tensor, length: int, D: torch.Tensor | None = None) -> torch.Tensor:
    """K_{l,h} = Re(sum_n W_hn lambda_n^l), l < length, in blocks of positions, plus D_h at l = 0 if given.

    The skip term D u is the convolution's lag 0, so that the layer's output comes out of one convolution
    (one output and one input gradient, not a second of each for D u).     -> (length H)
    """
    Wp = _conj_pairs(W)                                                     # (H 2N)
    K = _cat([_recomputed(_kernel_block, log_lam, Wp, s, e) for s, e in _blocks(length, W.shape[-1])], dim=0)
    return K if D is None else torch.cat([K[:1] + D, K[1:]])


def free_response(log_lam: torch.Tensor, W: torch.Tensor, x0: torch.Tensor, length: int) -> torch.Tensor:
    """y_{t,h} = Re(sum_n W_hn lambda_n^(t+1) x0_hn), t < length: the output of state x0 under zero input.

    x0 (B H N) complex -> (B length H)
    """
    G = _conj_pairs(W * x0)                                                 # (B H 2N)
    y = _cat([_recomputed(_free_block, log_lam, G, s, e) for s, e in _blocks(length, W.shape[-1])], dim=-1)
    return y.transpose(1, 2)                                                # (B length H)


def advance(log_lam: torch.Tensor, u: torch.Tensor, x0: torch.Tensor | None) -> torch.Tensor:
    """The state after u: sum_s lambda^(L-1-s) u_s + lambda^L x0.

    u (B L H), x0 (B H N) complex or None -> (B H N) complex
    """
    L, N = u.shape[1], log_lam.shape[0]
    x = reduce(torch.add, (_recomputed(_advance_block, log_lam, u[:, s:e], s, L - 1) for s, e in _blocks(L, N)))
    x = _as_complex(x)
    if x0 is None:
        return x
    return x + _power(log_lam, L) * x0


# -- the causal part of each view, from a kernel with D at its lag 0: (y, final state or None) -------------

def _causal(K, log_lam, W, u, x0, with_state):
    """y = the causal convolution of u with the kernel K, plus the free response of x0; and the state after u.

    K (Lk H), u (B L H), x0 (B H N) complex or None -> y (B L H), (B H N) complex or None
    """
    y = depthwise_conv(K, u)                                                # (B L H)
    if x0 is not None:
        y = y + free_response(log_lam, W, x0, u.shape[1])
    return y, (advance(log_lam, u, x0) if with_state else None)


class ChunkedScan(torch.autograd.Function):
    """The scan view's causal part in kernel form: chunks of T = len(K) positions, each started from the state
    the chunk before left.

    With u_c the c-th chunk (zero-padded after the sequence to C = ceil(L / T) whole chunks; r_c its real
    length) and X_c the state entering it,

        y_c     = K_{<T} * u_c + Re(W lambda^(t+1) X_c),   t < T        (in-chunk convolution + free response)
        X_{c+1} = lambda^(r_c) X_c + E_c,   X_0 = x0 (or 0)             (the carries; X_C is the final state)
        E_c     = sum_{s < r_c} lambda^(r_c-1-s) u_{c,s}                 (the state chunk c leaves from zero)

    The convolution is one FFT over all chunks (`conv.depthwise_forward`); then one pass over the chunks
    adds each free response and forms the next carry, each a matrix product of (B H) rows with a (T 2N)
    block of powers. The graph keeps u, K and the C + 1 carries (B H N complex each: 2N / T times the
    size of u), nothing per position.

    The backward is the adjoint of the carries, run over the chunks in reverse: with a the gradient
    arriving at X_{c+1},

        grad E_c = a,   grad X_c = conj(lambda^(r_c)) a + conj(W) F_c,   F_c = sum_t g_{c,t} conj(lambda^(t+1))
        grad W  += sum_b conj(X_c) F_c,    grad lambda^(r_c) += sum_{b,h} a conj(X_c),    grad x0 = grad X_0

    and the products' gradients with respect to u and to the blocks of powers (chained to log lambda by
    d lambda^k / d log lambda = k lambda^k); the convolution's gradients are `conv.depthwise_gradients`.
    The gradient of u is written into one buffer. Four products per chunk in the backward, two in the
    forward, and nothing is computed twice.

    (K (T H), log_lam (N,), W (H N), u (B L H), x0 (B H N) complex or None, with_state) -> y (B L H), x_L or None
    """

    @staticmethod
    def forward(ctx, K, log_lam, W, u, x0, with_state):
        y, X = chunked_scan(K, log_lam, W, u, x0, with_state, depthwise_forward)
        ctx.save_for_backward(K, log_lam, W, u, X, x0)
        ctx.has_x0, ctx.with_state = x0 is not None, with_state
        C = X.shape[1] - 1
        return y, (X[:, C].clone() if with_state else None)

    @staticmethod
    def backward(ctx, g_y, g_x):
        if recorded(g_y, g_x):                      # a derivative of the backward: the plain route's (`autodiff`)
            K, log_lam, W, u, _, x0 = ctx.saved_tensors
            return vjp_through(plain_chunked_scan, (K, log_lam, W, u, x0, ctx.with_state), ctx.needs_input_grad,
                               (g_y, g_x))
        with torch.no_grad():
            return ChunkedScan._adjoint(ctx, g_y, g_x)

    @staticmethod
    def _adjoint(ctx, g_y, g_x):
        K, log_lam, W, u, X, _ = ctx.saved_tensors
        need_K, need_log, need_W, need_u, need_x0 = ctx.needs_input_grad[:5]
        (T, H), (B, L, _), N = K.shape, u.shape, log_lam.shape[0]
        C = -(-L // T)
        chunks, g_chunks = _padded_chunks(u, T), _padded_chunks(g_y, T)     # (B C T H)
        g_K, g_u = depthwise_gradients(K, chunks.view(B * C, T, H), g_chunks.view(B * C, T, H), need_K, need_u)
        g_u = None if g_u is None else g_u.view(B, C, T, H)
        free_steps = torch.arange(1, T + 1, dtype=u.dtype, device=u.device)
        P_free_conj = _conj_pairs(scans.powers(log_lam, free_steps))        # (T 2N)  conj(lambda^(t+1))
        g_W, g_P_free, g_log = torch.zeros_like(W), torch.zeros_like(P_free_conj), torch.zeros_like(log_lam)
        a = g_x.clone() if ctx.with_state and g_x is not None else torch.zeros_like(X[:, 0])   # grad of X_{c+1}
        for c in reversed(range(C)):
            if c < C - 1 or ctx.with_state:
                r = min(T, L - c * T)
                steps = torch.arange(r - 1, -1, -1, dtype=u.dtype, device=u.device)           # r-1-s
                P_adv = _powers(log_lam, 0, r, descending_from=r - 1)                          # (r 2N)
                lam_r = _power(log_lam, r)
                a_pairs = torch.view_as_real(a).flatten(-2)                                    # (B H 2N)  grad E_c
                if g_u is not None:
                    g_u[:, c, :r] += (a_pairs @ P_adv.T).transpose(1, 2)
                if need_log:
                    g_P_adv = chunks[:, c, :r].transpose(0, 1).reshape(r, B * H) @ a_pairs.reshape(B * H, 2 * N)
                    g_log += scans.power_gradient(log_lam, steps, _as_complex(g_P_adv))
                    g_log += r * lam_r.conj() * (a * X[:, c].conj()).sum((0, 1))
                a = lam_r.conj() * a
            if c > 0 or ctx.has_x0:
                F = _as_complex(g_chunks[:, c].transpose(1, 2) @ P_free_conj)
                if need_W:
                    g_W += (X[:, c].conj() * F).sum(0)
                if need_log:
                    G = _conj_pairs(W * X[:, c]).reshape(B * H, 2 * N)
                    g_P_free += g_chunks[:, c].transpose(0, 1).reshape(T, B * H) @ G
                a = a + W.conj() * F
        if need_log:
            g_log += scans.power_gradient(log_lam, free_steps, _as_complex(g_P_free))
        g_u = None if g_u is None else g_u.view(B, C * T, H)[:, :L]
        return g_K, g_log if need_log else None, g_W if need_W else None, g_u, \
            a if ctx.has_x0 and need_x0 else None, None


def chunked_scan(K, log_lam, W, u, x0, with_state, convolve):
    """`ChunkedScan`'s forward with the in-chunk convolution `convolve(K, chunks)`.

    -> y (B L H), X (B C+1 H N) complex: the carries (`carries`)
    """
    (T, H), (B, L, _) = K.shape, u.shape
    C = -(-L // T)
    chunks = _padded_chunks(u, T)                                           # (B C T H)
    y = convolve(K, chunks.reshape(B * C, T, H)).reshape(B, C, T, H)       # a view of the fast route's buffer
    X = carries(log_lam, W, chunks, L, x0, with_state, y)
    return y.view(B, C * T, H)[:, :L], X


def plain_chunked_scan(K, log_lam, W, u, x0, with_state):
    """`ChunkedScan`'s outputs in plain differentiable operations (its plain route, `autodiff`): the same chunks
    and carries, the in-chunk convolution by `conv.causal_conv`.     -> y (B L H), x_L (B H N) or None"""
    y, X = chunked_scan(K, log_lam, W, u, x0, with_state, causal_conv)
    return y, (X[:, -1] if with_state else None)


def carries(log_lam, W, chunks, L, x0, with_state, y):
    """`ChunkedScan`'s pass over the chunks: add each chunk's free response to y, in place, and form the carries.

    log_lam (N,), W (H N), chunks and y (B C T H) (u and the in-chunk convolution, whole chunks), L the real
    length, x0 (B H N) complex or None -> X (B C+1 H N) complex: X_c enters chunk c; X_C (the final state)
    is formed only with_state.
    """
    (B, C, T, H), N = chunks.shape, log_lam.shape[0]
    P_free = _powers(log_lam, 1, T + 1)                                     # (T 2N)  lambda^(t+1)
    zero = torch.zeros(B, H, N, dtype=complex_dtype(chunks.dtype), device=chunks.device)
    X = [zero if x0 is None else x0]                                        # a list: each carry stays as formed,
    for c in range(C):                                                      # so autograd can differentiate it
        if c > 0 or x0 is not None:
            y[:, c] += (_conj_pairs(W * X[c]) @ P_free.T).transpose(1, 2)
        if c < C - 1 or with_state:
            r = min(T, L - c * T)
            E = chunks[:, c, :r].transpose(1, 2) @ _powers(log_lam, 0, r, descending_from=r - 1)   # (B H 2N)
            X.append(_power(log_lam, r) * X[c] + _as_complex(E))
        else:
            X.append(zero)
    return torch.stack(X, dim=1)


def _padded_chunks(x: torch.Tensor, T: int) -> torch.Tensor:
    """(B L H) -> (B C T H), zero-padded after the sequence to C = ceil(L / T) whole chunks.

    Without padding a view where the strides allow one: the gradient of a sum arrives as one number
    broadcast over (B L H), and a copy would make it a tensor as large as u."""
    B, L, H = x.shape
    C = -(-L // T)
    return (F.pad(x, (0, 0, 0, C * T - L)) if C * T != L else x).reshape(B, C, T, H)


def _as_complex(pairs: torch.Tensor) -> torch.Tensor:
    """Interleaved real pairs (... 2N) -> complex (... N)."""
    return torch.view_as_complex(pairs.unflatten(-1, (-1, 2)).contiguous())


def _both_directions(f: DLRForm, cfg: DLRConfig, u: torch.Tensor, x0, final_state: bool, causal):
    """y = causal part with D u at lag 0 (+ the future-only backward part).

    causal(W, D or None, u, x0, with_state) -> (y, state)
    """
    y, x = causal(f.W, f.D, u, x0, final_state and cfg.max_kernel_length is None and f.W_rev is None)
    if f.W_rev is not None:
        # R_t = sum_{j>=0} K^rev_j u_{t+j}, from the causal part on the reversed input; y_t += R_{t+1}
        R = causal(f.W_rev, None, u.flip(1), None, False)[0].flip(1)
        y = y + F.pad(R[:, 1:], (0, 0, 0, 1))
    return y, x


# -- the views: (form, cfg, u, x0) -> (y (B L H), x_L (B H N) complex or None) --------------------------

def conv(f: DLRForm, cfg: DLRConfig, u: torch.Tensor, x0: torch.Tensor | None = None, final_state: bool = True):
    Lk = cfg.kernel_length(u.shape[1])
    def causal(W, D, v, x, with_state):
        return _causal(kernel(f.log_lam, W, Lk, D), f.log_lam, W, v, x, with_state)
    return _both_directions(f, cfg, u, x0, final_state, causal)


def scan(f: DLRForm, cfg: DLRConfig, u: torch.Tensor, x0: torch.Tensor | None = None, chunk: int | None = None,
         final_state: bool = True):
    T = chunk_length(u.shape[1], f.log_lam.shape[0]) if chunk is None else min(chunk, u.shape[1])
    def causal(W, D, v, x, with_state):
        K = kernel(f.log_lam, W, T, D)
        if transformed(K, f.log_lam, W, v, x):
            return plain_chunked_scan(K, f.log_lam, W, v, x, with_state)
        return ChunkedScan.apply(K, f.log_lam, W, v, x, with_state)
    return _both_directions(f, cfg, u, x0, final_state, causal)


def chunk_length(length: int, N: int) -> int:
    """T for the kernel-form scan: the power of two nearest sqrt(N L), at least 64, at most L.

    Memory: `ChunkedScan` keeps one (B H N) complex state per chunk, 2N / T times the size of u in all,
    and its backward's temporaries per chunk (the chunk of u and of the output's gradient, transposed
    for the products) are about 2 T / L times u; their sum is least at T = sqrt(N L). Time: the products
    cost B (L - T) H 2N each, and the FFT of each chunk grows as log T, so longer chunks are a little
    faster. Measured in docs/speed-log.md ("DLR's scan"): at L = 4096, T = 1024 gave the lowest peak and
    T = 256 the highest; fwd+bwd was within 10% from T = 512 to 2048. `pytest --benchmark -k dlr_chunk`
    (tests/bench/test_bench_torch.py) times the forward against T into the benchmark JSON.
    """
    return min(length, max(64, 1 << round(0.5 * math.log2(max(1, N * length)))))


def _step(f: DLRForm, W_pairs: torch.Tensor, u_t: torch.Tensor, x: torch.Tensor):
    """x <- lambda x + u_t on real pairs, then Re(W x).     u_t (B H), x (B H N 2) -> (B H), x"""
    x = scans.rotate(f.A1, f.A2, x)
    x = torch.cat([x[..., :1] + u_t[:, :, None, None], x[..., 1:]], dim=-1)   # u enters the real part
    return torch.einsum("bhnk,hnk->bh", x, W_pairs), x


def step_once(f: DLRForm, u_t: torch.Tensor, x: torch.Tensor):
    """One position.     u_t (B H), x (B H N) complex -> y_t (B H), x (B H N) complex"""
    y_t, x = _step(f, torch.view_as_real(f.W.conj().resolve_conj()), u_t, torch.view_as_real(x.resolve_conj()))
    return torch.addcmul(y_t, f.D, u_t), torch.view_as_complex(x)


def sequential(f: DLRForm, cfg: DLRConfig, u: torch.Tensor, x0: torch.Tensor | None = None):
    """The plain loop on real pairs (B H N 2); bidirectional: a second loop z_t = lambda z_{t+1} + u_{t+1}."""
    B, L, H = u.shape
    zero = torch.zeros(B, H, f.log_lam.shape[0], 2, dtype=u.dtype, device=u.device)
    x = zero if x0 is None else torch.view_as_real(x0.resolve_conj())
    W_pairs = torch.view_as_real(f.W.conj().resolve_conj())                 # (H N 2): Re(W x) = W_pairs . x
    ys = []
    for t in range(L):
        y_t, x = _step(f, W_pairs, u[:, t], x)
        ys.append(y_t)
    y = torch.addcmul(torch.stack(ys, dim=1), f.D, u)                       # (B L H)
    if f.W_rev is not None:
        W_pairs = torch.view_as_real(f.W_rev.conj().resolve_conj())
        z, backward = zero, [torch.zeros_like(u[:, 0])]
        for t in range(L - 2, -1, -1):                                      # z_{L-1} = 0
            r_t, z = _step(f, W_pairs, u[:, t + 1], z)
            backward.append(r_t)
        y = y + torch.stack(backward[::-1], dim=1)
    return y, torch.view_as_complex(x)


# -- the layer ----------------------------------------------------------------------------------

class DLR(Mixer):
    """One DLR layer (unidirectional or bidirectional); parameters named as the bundle keys."""

    config_type = DLRConfig
    optional_state_modes = ("conv", "scan")
    eager_modes = ("conv",)            # torch.compile: docs/precision.md, "Compiled paths"

    materialise = materialise

    def sequential(self, f: DLRForm, u, x0):
        return sequential(f, self.config, u, x0)

    def scan(self, f: DLRForm, u, x0, final_state=True):
        return scan(f, self.config, u, x0, final_state=final_state)

    def conv(self, f: DLRForm, u, x0, final_state=True):
        return conv(f, self.config, u, x0, final_state=final_state)

    def step_once(self, f: DLRForm, u_t, x):
        return step_once(f, u_t, x)

    def zero_state(self, f: DLRForm, batch: int) -> torch.Tensor:
        cfg = self.config
        return torch.zeros(batch, cfg.d_model, cfg.d_state, dtype=complex_dtype(self.dtype), device=self.D.device)

    def to_native(self, f: DLRForm, state: torch.Tensor, batch: int) -> torch.Tensor:
        self.check_state(state, (batch, self.config.d_model, self.config.d_state), complex_dtype(self.dtype))
        return state

    def from_native(self, f: DLRForm, x: torch.Tensor) -> torch.Tensor | None:
        """The state, or None with a truncated kernel (the recurrent view does not continue it)."""
        return x if self.config.max_kernel_length is None else None
