"""The speed harness of the JAX side: a compiled, warmed-up forward pass of one layer at given sizes.

    forward, info = make_forward("lru", "scan", B=8, L=4096, H=128, N=128, heads=16, dtype="float32")
    forward()                            # one forward pass, blocked until ready: time this
    median_ms(forward)                   # warm-up, then the median of a few timed calls

The same signature, defaults and return type as `linrnn.impls.torch.bench.make_forward`.
`tests/bench/test_bench_jax.py` times it with pytest-benchmark; `python -m linrnn.impls.jax.bench`
prints a table of medians. N is the layer's total state size: RotRNN runs `heads` heads of N/heads.
"""

from __future__ import annotations

import argparse
import platform
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from linrnn.impls.bench import KINDS, info_record, layer_config, median_ms  # noqa: F401  (re-exported)
from linrnn.impls.init import init
from linrnn.impls.jax import layer
from linrnn.impls.jax.params import from_bundle, precision


def make_forward(kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int = 16, dtype: str = "float32",
                 seed: int = 0, device=None) -> tuple[Callable[[], jax.Array], dict]:
    """A jitted layer at the given sizes and a call running its forward pass in `mode` on a fixed input.

    -> (forward, info): forward() returns y (B L H), blocked until ready (float64: inside `float64()`);
       info records the sizes, dtype, device and JAX's version, for benchmark records. The call is
       compiled and run once here, so that a timer around it sees neither compilation nor first-touch.
    device: None (JAX's default), a platform name ('cpu', 'gpu') or a `jax.Device`.
    """
    dev = jax.devices(device)[0] if isinstance(device, str) else (device or jax.devices()[0])
    cfg = layer_config(kind, H, N, heads)
    with precision(dtype):
        params = jax.device_put(from_bundle(init(cfg, seed), dtype), dev)
        u = jax.device_put(jnp.asarray(np.random.default_rng(seed).standard_normal((B, L, H)), dtype=dtype), dev)
        run = jax.jit(lambda p, u: layer.apply(p, cfg, u, mode)[0])
        run(params, u).block_until_ready()

    def forward() -> jax.Array:
        with precision(dtype):
            return run(params, u).block_until_ready()

    info = {"backend": "jax", **info_record(kind, mode, B, L, H, N, heads, dtype), "device": str(dev),
            "platform": dev.platform, "jax": jax.__version__, "machine": platform.machine(),
            "processor": platform.processor()}
    return forward, info


def scan_alone(route: str, B: int = 8, L: int = 4096, n: int = 128, dtype: str = "float32",
               seed: int = 0) -> Callable[[], jax.Array]:
    """One route of `scan.ROUTES` ('sequential': lax.scan, 'scan': associative, 'conv') alone, time-major.

    The B sequences of n lanes run as B n lanes of one (L, B n) complex recurrence, no projections: the
    numbers behind `scan.py`'s choice of `associative` for `scan`. The call blocks until ready.
    """
    from linrnn.impls.jax import scan

    rng = np.random.default_rng(seed)
    complex_dtype = "complex64" if dtype == "float32" else "complex128"
    with precision(dtype):
        log_lam = jnp.asarray(np.tile(-0.1 * rng.random(n) + 6.0j * rng.random(n), B), complex_dtype)
        v = jnp.asarray(rng.standard_normal((L, B * n)) + 1j * rng.standard_normal((L, B * n)), complex_dtype)
        x0 = jnp.zeros(B * n, complex_dtype)
        run = jax.jit(scan.ROUTES[route])
        run(log_lam, v, x0).block_until_ready()

    def forward() -> jax.Array:
        with precision(dtype):
            return run(log_lam, v, x0).block_until_ready()
    return forward


def main() -> None:
    parser = argparse.ArgumentParser(description="median forward time (ms) of one JAX layer per mixer and mode")
    for name, default in (("B", 8), ("L", 4096), ("H", 128), ("N", 128), ("heads", 16)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"B={args.B} L={args.L} H={args.H} N={args.N} {args.dtype} on {jax.devices()[0]}")
    print(f"{'mixer':8s}" + "".join(f"{mode:>12s}" for mode in layer.MODES))
    for kind in KINDS:
        row = []
        for mode in layer.MODES:
            forward, _ = make_forward(kind, mode, args.B, args.L, args.H, args.N, args.heads, args.dtype)
            row.append(median_ms(forward, args.repeats, warmup=0))
        print(f"{kind:8s}" + "".join(f"{ms:12.1f}" for ms in row))


if __name__ == "__main__":
    main()
