"""Causal convolution along time by a zero-padded FFT (linear, not circular), PyTorch.

    y_t = sum_{l = 0}^{min(t, Lk - 1)} k_l v_{t-l}

The FFT length is the next power of two >= L + Lk, so the circular convolution of the padded
sequences equals the linear one on t < L. Kernels and inputs may be real (DLR's depthwise kernel,
`rfft`) or complex (the per-lane kernels lambda^l of RotRNN and LRU, `fft`); they broadcast over the
trailing "lane" dimensions.
"""

from __future__ import annotations

import torch

from linrnn.impls.torch.autodiff import recorded, transformed, vjp_through


def fft_length(length: int, kernel_length: int) -> int:
    """The smallest power of two >= L + Lk."""
    return 1 << (length + kernel_length - 1).bit_length()


def causal_conv(k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal convolution of v with k along time.

    k  (Lk ...) real or complex    kernel, lag first
    v  (B L ...) real or complex   input, time second; the trailing dims broadcast with k's
    -> y (B L ...) (complex if either is complex)

    The FFTs run along the last axis (time moved there, one copy each way): transforms along a
    strided middle axis copied every line in and out and took 1.3-1.7x as long (B=8, L=4096, H=128).
    """
    L, Lk = v.shape[1], k.shape[0]
    n = fft_length(L, Lk)
    v_t, k_t = v.movedim(1, -1), k.movedim(0, -1)        # (B ... L), (... Lk)
    if k.is_complex() or v.is_complex():
        y = torch.fft.ifft(torch.fft.fft(v_t, n=n) * torch.fft.fft(k_t, n=n), n=n)
    else:
        y = torch.fft.irfft(torch.fft.rfft(v_t, n=n) * torch.fft.rfft(k_t, n=n), n=n)
    return y[..., :L].movedim(-1, 1)                      # (B L ...)


# -- the depthwise real convolution as one autograd Function ----------------------------------------

SHARE = 8           # a block is 1/SHARE of the channels (at n ~ 2L each of its spectra is then 2 / SHARE the
                    # size of u, and a block holds about three) when that is at least LINE channels,
LINE = 16           # else LINE: u and y are (B L H), channels last, and a block of fewer than a 64-byte
                    # cache line of float32 channels reads and writes every line several times


def channel_block(H: int) -> int:
    """Channels per block: the FFT temporaries of one block stay a small part of the layer's memory, and
    a block is at least a cache line of channels wide (docs/speed-log.md, "DLR's FFT convolution")."""
    return min(H, max(LINE, -(-H // SHARE)))


class DepthwiseConv(torch.autograd.Function):
    """y_t = sum_{l < Lk, l <= t} k_l u_{t-l} per channel (real), by FFT, a block of channels at a time.

    Autograd through `causal_conv` keeps both spectra (2 x B H n/2 complex, n >= L + Lk: four times the
    input) and the padded inverse transform. This Function keeps only u and k and recomputes the
    spectra in the backward, where both gradients are correlations, again by FFT of length n:

        grad u_s = sum_t g_t k_{t-s}         = irfft(G conj(K))[s],            s < L
        grad k_l = sum_{b,t} g_t u_{t-l}     = irfft(sum_b G conj(U))[l],      l < Lk

    (n >= L + Lk leaves no wrap-around in either: negative lags land in the zero padding).
    """

    @staticmethod
    def forward(ctx, k, u):
        ctx.save_for_backward(k, u)
        return depthwise_forward(k, u)

    @staticmethod
    def backward(ctx, g):
        if recorded(g):                             # a derivative of the backward: the plain route's (`autodiff`)
            return vjp_through(causal_conv, ctx.saved_tensors, ctx.needs_input_grad, (g,))
        with torch.no_grad():
            return depthwise_gradients(*ctx.saved_tensors, g, *ctx.needs_input_grad)


def depthwise_gradients(k: torch.Tensor, u: torch.Tensor, g: torch.Tensor, need_k: bool = True,
                        need_u: bool = True) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The gradients of `depthwise_conv(k, u)` from g, the gradient of its output: (g_k or None, g_u or None)."""
    (Lk, H), L = k.shape, u.shape[1]
    n = fft_length(L, Lk)
    g_k = torch.empty_like(k) if need_k else None
    g_u = torch.empty_like(u) if need_u else None
    for h in _channel_blocks(H):
        G = torch.fft.rfft(g[:, :, h].movedim(1, -1), n=n)                        # (B h n/2+1)
        if g_u is not None:
            K = torch.fft.rfft(k[:, h].movedim(0, -1), n=n)
            g_u[:, :, h] = torch.fft.irfft(G * K.conj(), n=n)[..., :L].movedim(-1, 1)
        if g_k is not None:
            U = torch.fft.rfft(u[:, :, h].movedim(1, -1), n=n)
            g_k[:, h] = torch.fft.irfft(U.conj_physical_().mul_(G).sum(0), n=n)[..., :Lk].T
    return g_k, g_u


def depthwise_forward(k: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """`depthwise_conv` without a graph."""
    (Lk, H), L = k.shape, u.shape[1]
    n = fft_length(L, Lk)
    y = torch.empty_like(u)                                                       # (B L H)
    for h in _channel_blocks(H):
        U = torch.fft.rfft(u[:, :, h].movedim(1, -1), n=n)                        # (B h n/2+1)
        K = torch.fft.rfft(k[:, h].movedim(0, -1), n=n)                           # (h n/2+1)
        y[:, :, h] = torch.fft.irfft(U.mul_(K), n=n)[..., :L].movedim(-1, 1)
    return y


def _channel_blocks(H: int) -> list[slice]:
    size = channel_block(H)
    return [slice(s, min(H, s + size)) for s in range(0, H, size)]


def depthwise_conv(k: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """`causal_conv` for a real kernel k (Lk H) and real input u (B L H), with its own backward (under a
    torch.func transform or forward-mode AD, `causal_conv` itself: `autodiff`)."""
    if transformed(k, u):
        return causal_conv(k, u)
    if torch.is_grad_enabled() and (k.requires_grad or u.requires_grad):
        return DepthwiseConv.apply(k, u)
    return depthwise_forward(k, u)
