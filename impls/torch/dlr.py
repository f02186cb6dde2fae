"""DLR, PyTorch (Gupta, Mehta, Berant 2022; docs/models.md).

No discretisation and no B. The N eigenvalues are shared by the H channels; each channel has its own
complex output weights:

    lambda_n  = exp(-a_n^2 + i theta_n)                       |lambda_n| <= 1 by construction
    x_{t,h,n} = lambda_n x_{t-1,h,n} + u_{t,h}                 (recurrent view, state H x N)
    K_{h,l}   = Re(sum_n W_{h,n} lambda_n^l),  l < L_k          (kernel view, L_k = min(max_kernel_length, L))
    y_{t,h}   = sum_{l<=t, l<L_k} K_{h,l} u_{t-l,h} + D_h u_{t,h}
    bidirectional:  y_t += sum_{j>=0} K^rev_j u_{t+1+j}       (future only; lag 0 is counted once)

lambda^l is always exp(l log lambda), and no N x L matrix is formed: every sum over positions runs
in blocks of at most `BLOCK // N` positions. Routes of the views:

* `conv` (the definition; the only view when L > max_kernel_length): the kernel K (L_k H) built block
  by block, applied by a zero-padded real FFT of length >= L + L_k; a given state adds its free
  response Re(W lambda^(t+1) x0), and the final state is sum_s lambda^(L-1-s) u_s + lambda^L x0;
* `scan`: the chunked two-level scan in kernel form. The state is H x N per position while the input
  is one number per channel, so inside a chunk of T positions the output is the causal convolution
  with K_{<T} (FFT), each chunk's end state is a matrix product with lambda^(T-1-s), a short scan
  over the chunk carries S_c = lambda^T S_{c-1} + E_{c-1} follows, and each chunk adds the free
  response of its carry. Work O(B L H N) in matrix products, and no (B L H N) state trajectory
  (8.6 GB at B=8, L=4096, H=N=128 in float64), which the chunked scan of `scan.py` would store.
  It does the work of `conv` plus the carries, so it is never faster: conv is the view to use for
  DLR, the scan its independent recurrent check (`chunk_length` for T; timings in docs/speed.md);
* `sequential`, `step`: the plain loop over positions on the (B H N) state as real pairs, rotated by
  real 2x2 rotation-scalings, read out at every position.

The backward direction reuses the causal machinery on the time-reversed input and shifts by one.
States cross the boundary as (B H N) complex tensors (the reference's convention). With a
`max_kernel_length` the recurrent views (and states) are refused, as in the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from linrnn.impls.config import DLRConfig
from linrnn.impls.torch import scan as scans
from linrnn.impls.torch.conv import depthwise_conv
from linrnn.impls.torch.layer import Mixer
from linrnn.impls.torch.scan import complex_dtype

BLOCK = 2**20          # complex entries of one block of lambda^l (positions x N)


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


def _cat(parts: list[torch.Tensor], dim: int) -> torch.Tensor:
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=dim)      # one block: no copy


def _conj_pairs(Z: torch.Tensor) -> torch.Tensor:
    """(Re Z, -Im Z) interleaved, so that Re(Z p) = _conj_pairs(Z) . p for p as real pairs.     (... N) -> (... 2N)"""
    return torch.view_as_real(Z.conj().resolve_conj()).flatten(-2)


def kernel(log_lam: torch.Tensor, W: torch.Tensor, length: int) -> torch.Tensor:
    """K_{l,h} = Re(sum_n W_hn lambda_n^l), l < length, in blocks of positions.     -> (length H)"""
    Wp = _conj_pairs(W)                                                     # (H 2N)
    return _cat([_powers(log_lam, s, e) @ Wp.T for s, e in _blocks(length, W.shape[-1])], dim=0)


def free_response(log_lam: torch.Tensor, W: torch.Tensor, x0: torch.Tensor, length: int) -> torch.Tensor:
    """y_{t,h} = Re(sum_n W_hn lambda_n^(t+1) x0_hn), t < length: the output of state x0 under zero input.

    x0 (B H N) complex -> (B length H)
    """
    G = _conj_pairs(W * x0)                                                 # (B H 2N)
    y = _cat([G @ _powers(log_lam, s + 1, e + 1).T for s, e in _blocks(length, W.shape[-1])], dim=-1)
    return y.transpose(1, 2)                                                # (B length H)


def advance(log_lam: torch.Tensor, u: torch.Tensor, x0: torch.Tensor | None) -> torch.Tensor:
    """The state after u: sum_s lambda^(L-1-s) u_s + lambda^L x0.

    u (B L H), x0 (B H N) complex or None -> (B H N) complex
    """
    B, L, H = u.shape
    N = log_lam.shape[0]
    x = torch.zeros(B, H, 2 * N, dtype=u.dtype, device=u.device)
    for s, e in _blocks(L, N):
        x = x + u[:, s:e].transpose(1, 2) @ _powers(log_lam, s, e, descending_from=L - 1)   # (B H 2N)
    x = torch.view_as_complex(x.unflatten(-1, (N, 2)))
    if x0 is None:
        return x
    return x + scans.powers(log_lam, torch.full((1,), L, dtype=u.dtype, device=u.device))[0] * x0


# -- the causal part of each view: (y without D u, final state or None) -----------------------------

def _causal_conv(log_lam, W, u, x0, Lk, with_state):
    y = depthwise_conv(kernel(log_lam, W, Lk), u)                           # (B L H)
    if x0 is not None:
        y = y + free_response(log_lam, W, x0, u.shape[1])
    return y, (advance(log_lam, u, x0) if with_state else None)


def _causal_chunked(log_lam, W, u, x0, T, with_state):
    B, L, H = u.shape
    nc = -(-L // T)
    chunks = F.pad(u, (0, 0, 0, nc * T - L)).view(B * nc, T, H)             # (B*nc T H)
    y = depthwise_conv(kernel(log_lam, W, T), chunks)                       # inside each chunk, from zero
    ends = advance(log_lam, chunks, None).unflatten(0, (B, nc))             # (B nc H N)
    carries = chunk_carries(log_lam, ends, x0, T)                           # (B nc H N)
    y = (y + free_response(log_lam, W, carries.flatten(0, 1), T)).reshape(B, nc * T, H)
    last = L - (nc - 1) * T                                                 # valid positions of the last chunk
    return y[:, :L], (advance(log_lam, u[:, L - last:], carries[:, -1]) if with_state else None)


def chunk_carries(log_lam, ends, x0, T):
    """The state before each chunk, S_0 = x0 (or 0) and S_c = lambda^T S_{c-1} + E_{c-1}.

    One diagonal recurrence over the B x H x N lanes with transition lambda^T, run by `scan.chunked`
    (whose backward is the adjoint scan, not autograd through a loop over the chunks).
    ends (B nc H N) complex, x0 (B H N) complex or None -> (B nc H N) complex
    """
    B, nc, H, N = ends.shape
    start = torch.zeros_like(ends[:, 0]) if x0 is None else x0.resolve_conj()
    if nc == 1:
        return start[:, None]
    v = torch.view_as_real(ends[:, :-1].reshape(B, nc - 1, H * N))         # (B nc-1 HN 2)
    x = scans.chunked((T * log_lam).repeat(H), v, torch.view_as_real(start.reshape(B, H * N)))
    return torch.cat([start[:, None], torch.view_as_complex(x.contiguous()).view(B, nc - 1, H, N)], dim=1)


def _both_directions(f: DLRForm, cfg: DLRConfig, u: torch.Tensor, x0, causal):
    """y = causal part + D u (+ the future-only backward part); causal(W, u, x0, with_state) -> (y, state)."""
    y, x = causal(f.W, u, x0, cfg.max_kernel_length is None and f.W_rev is None)
    y = torch.addcmul(y, f.D, u)
    if f.W_rev is not None:
        # R_t = sum_{j>=0} K^rev_j u_{t+j}, from the causal part on the reversed input; y_t += R_{t+1}
        R = causal(f.W_rev, u.flip(1), None, False)[0].flip(1)
        y = y + F.pad(R[:, 1:], (0, 0, 0, 1))
    return y, x


# -- the views: (form, cfg, u, x0) -> (y (B L H), x_L (B H N) complex or None) --------------------------

def conv(f: DLRForm, cfg: DLRConfig, u: torch.Tensor, x0: torch.Tensor | None = None):
    Lk = cfg.kernel_length(u.shape[1])
    def causal(W, v, x, with_state):
        return _causal_conv(f.log_lam, W, v, x, Lk, with_state)
    return _both_directions(f, cfg, u, x0, causal)


def scan(f: DLRForm, cfg: DLRConfig, u: torch.Tensor, x0: torch.Tensor | None = None, chunk: int | None = None):
    T = chunk_length(u.shape[1], f.log_lam.shape[0]) if chunk is None else chunk
    def causal(W, v, x, with_state):
        return _causal_chunked(f.log_lam, W, v, x, T, with_state)
    return _both_directions(f, cfg, u, x0, causal)


def chunk_length(length: int, N: int) -> int:
    """T for the kernel-form chunked scan: 2N rounded up to a power of two, at least 64, at most L.

    The two kernel-form products cost B L H 2N whatever T; the carries cost B (L/T) H N and their
    (B L/T H N) stack, so T of the order of N keeps them small, and larger T only adds FFT length.
    The T sweep behind the rule is in docs/speed.md; `pytest --benchmark -k dlr_chunk`
    (tests/bench/test_bench_torch.py) reproduces it into the benchmark JSON.
    """
    return min(length, max(64, 1 << (2 * N - 1).bit_length()))


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

    materialise = materialise

    def sequential(self, f: DLRForm, u, x0):
        return sequential(f, self.config, u, x0)

    def scan(self, f: DLRForm, u, x0):
        return scan(f, self.config, u, x0)

    def conv(self, f: DLRForm, u, x0):
        return conv(f, self.config, u, x0)

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
