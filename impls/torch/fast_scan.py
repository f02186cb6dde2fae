"""The package's fast diagonal scan, PyTorch: the Triton kernel on CUDA with Triton installed, else the chunked scan.

`scan.py` holds the algorithms (the loop and the chunked two-level scan), `triton_scan.py` the kernel, which
reuses `scan.py`'s pieces; this module, above both, picks one per device, so neither of the two imports the other
back (tests/test_import_graph.py).
"""

from __future__ import annotations

import torch

from linrnn.impls.torch.scan import chunked


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
