"""Causal convolution along time by a zero-padded FFT (linear, not circular), PyTorch.

    y_t = sum_{l = 0}^{min(t, Lk - 1)} k_l v_{t-l}

The FFT length is the next power of two >= L + Lk, so the circular convolution of the padded
sequences equals the linear one on t < L. Kernels and inputs may be real (DLR's depthwise kernel,
`rfft`) or complex (the per-lane kernels lambda^l of RotRNN and LRU, `fft`); they broadcast over the
trailing "lane" dimensions.
"""

from __future__ import annotations

import torch


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
