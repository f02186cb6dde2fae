"""The speed harness of the JAX side: a compiled, warmed-up forward pass of one layer at given sizes.

    run = make_forward("lru", "scan", B=8, L=4096, H=128, N=128)
    run().block_until_ready()            # time this

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

from linrnn.impls.bench import KINDS, layer_config, median_ms  # noqa: F401  (re-exported for the bench tests)
from linrnn.impls.init import init
from linrnn.impls.jax import layer
from linrnn.impls.jax.params import check_dtype, from_bundle





def make_forward(kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int = 16,
                 dtype: str = "float32", seed: int = 0) -> Callable[[], jax.Array]:
    """A zero-argument function running one jitted layer forward on fixed parameters and inputs.

    It is compiled and run once here, so that a timer around it sees neither compilation nor first-touch.
    """
    check_dtype(dtype)
    cfg = layer_config(kind, H, N, heads)
    params = from_bundle(init(cfg, seed), dtype)
    u = jnp.asarray(np.random.default_rng(seed).standard_normal((B, L, H)), dtype=dtype)
    forward = jax.jit(lambda p, u: layer.apply(p, cfg, u, mode)[0])
    forward(params, u).block_until_ready()
    return lambda: forward(params, u)


def extra_info(kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int = 16, dtype: str = "float32") -> dict:
    """What a benchmark record says about its run: sizes, dtype, device, mode, versions."""
    return {"mixer": kind, "mode": mode, "B": B, "L": L, "H": H, "N": N,
            "heads": heads if kind == "rotrnn" else None, "dtype": dtype,
            "device": str(jax.devices()[0]), "platform": jax.default_backend(),
            "jax": jax.__version__, "machine": platform.machine(), "processor": platform.processor()}




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
            run = make_forward(kind, mode, args.B, args.L, args.H, args.N, args.heads, args.dtype)
            row.append(median_ms(lambda: run().block_until_ready(), args.repeats, warmup=0))
        print(f"{kind:8s}" + "".join(f"{ms:12.1f}" for ms in row))


if __name__ == "__main__":
    main()
