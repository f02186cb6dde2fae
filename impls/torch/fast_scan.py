"""The package's fast diagonal scans, PyTorch: the Triton kernels on CUDA with Triton installed, else the chunked scans.

`scan.py` holds the algorithms of one transition per lane (the loop and the chunked two-level scan), `triton_scan.py`
its kernel, which reuses `scan.py`'s pieces; `varying_scan.py` and `triton_varying.py` the same pair for a transition
per position (`varying`). This module, above them, picks one per device, so neither of a pair imports the other back
(tests/test_import_graph.py).
"""

from __future__ import annotations

import torch

from linrnn.impls.torch.scan import chunked
from linrnn.impls.torch import varying_scan


def scan(log_lam: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None) -> torch.Tensor:
    """The fast scan of this package: the Triton kernel on CUDA when Triton is installed, else `chunked`."""
    kernel = device_kernel(v.device)
    return (kernel or chunked)(log_lam, v, x0)


def device_kernel(device: torch.device):
    """`triton_scan.scan` (same signature as `chunked`) for a CUDA device with Triton installed, else None.

    Triton is an optional dependency of the GPU path: without it, or on any other device, the chunked
    scan runs (it works on CUDA too, launching T + nc small kernels per scan instead of a few).
    """
    if device.type != "cuda":
        return None
    try:
        from linrnn.impls.torch import triton_scan
    except ImportError:
        return None
    return triton_scan.scan if triton_scan.available() else None


def varying(log_a: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None, reverse: bool = False) -> torch.Tensor:
    """The fast scan with a transition per position: `triton_varying.scan` on CUDA when Triton is installed, else
    `varying_scan.chunked` (same signature: log_a, v (B L n), x0 (B n) or None)."""
    if v.device.type == "cuda":
        try:
            from linrnn.impls.torch import triton_varying
        except ImportError:
            triton_varying = None
        if triton_varying is not None and triton_varying.available():
            return triton_varying.scan(log_a, v, x0, reverse=reverse)
    return varying_scan.chunked(log_a, v, x0, reverse=reverse)
