"""The speed harness of the JAX side: a compiled, warmed-up forward pass of one layer at given sizes.

    forward, info = make_forward("lru", "scan", B=8, L=4096, H=128, N=128, heads=16, dtype="float32")
    forward()                            # one forward pass, blocked until ready: time this
    median_ms(forward)                   # warm-up, then the median of a few timed calls
    train, info = make_forward_backward("lru", "scan", B=8, L=4096, H=128, N=128)
    train()                              # jax.grad of sum(y) w.r.t. the parameters and u, jitted

The same signatures, defaults and return types as `linrnn.verify.bench_torch`'s builders, and the same
companions with a `direction` ('forward' or 'forward+backward'): `make_gemm_floor` (the two
projections of an LRU layer alone, (u W_in) W_out with W_in (H 2N)) and `make_scan_alone` (the
recurrence alone, vmapped over the batch: 'sequential' is `lax.scan`, 'associative' the associative scan, 'pallas'
the Pallas kernel).
`tests/bench/` times them with pytest-benchmark; `linrnn bench jax` prints a table
of forward medians. N is the layer's total state size: RotRNN runs `heads` heads of N/heads.

Every builder compiles its call ahead of time from the shapes alone (`jax.eval_shape`), then calls
`before_inputs()` if given (a memory probe's start), then allocates the parameters and inputs on the
device and runs the call once, so that a timer around it sees neither compilation nor first-touch,
and a memory probe sees the call's own memory and not the compiler's. `info["xla_bytes"]` is XLA's
own account of the compiled call (arguments + outputs + temporaries - aliased), where it gives one.
"""

from __future__ import annotations

import platform
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from linrnn.verify.bench import RECURRENT_KINDS, check_direction, info_record, layer_config, median_ms  # noqa: F401
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.jax import layer
from linrnn.impls.jax.params import from_bundle, precision

SCAN_ROUTES = ("sequential", "associative", "pallas")


def _device(device) -> jax.Device:
    """None: JAX's default device; a platform name ('cpu', 'gpu'); or a `jax.Device`."""
    return jax.devices(device)[0] if isinstance(device, str) else (device or jax.devices()[0])


def xla_bytes(compiled) -> int | None:
    """XLA's memory account of a compiled call: arguments + outputs + temporaries - aliased (None if absent)."""
    try:
        stats = compiled.memory_analysis()
    except Exception:  # not every backend implements it
        return None
    if stats is None:
        return None
    return int(stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
               - stats.alias_size_in_bytes)


def _staged(fn: Callable, allocate: Callable[[], tuple], dev: jax.Device, dtype: str,
            before_inputs: Callable[[], None] | None) -> tuple[Callable[[], Any], Any]:
    """Compile fn for allocate()'s shapes on dev, then `before_inputs()`, allocate, run once. -> (call, compiled)"""
    with precision(dtype), jax.default_device(dev):
        compiled = jax.jit(fn).lower(*jax.eval_shape(allocate)).compile()
        if before_inputs is not None:
            before_inputs()
        args = allocate()
        jax.block_until_ready(compiled(*args))

    def call():
        with precision(dtype):
            return jax.block_until_ready(compiled(*args))
    return call, compiled


def _info(what: dict, B: int, L: int, dtype: str, dev: jax.Device, direction: str, compiled) -> dict:
    return {"backend": "jax", **what, "B": B, "L": L, "dtype": dtype, "device": str(dev), "platform": dev.platform,
            "jax": jax.__version__, "machine": platform.machine(), "processor": platform.processor(),
            "direction": direction, "grad": direction != "forward", "xla_bytes": xla_bytes(compiled)}


def _normal(seed: int, shape, dtype: str) -> jax.Array:
    return jax.random.normal(jax.random.key(seed), shape, dtype=dtype)


def _layer_call(direction, kind, mode, B, L, H, N, heads, dtype, seed, device, before_inputs):
    dev, cfg = _device(device), layer_config(kind, H, N, heads)

    def allocate():
        return from_bundle(init(cfg, seed), dtype), _normal(seed, (B, L, H), dtype)   # params, u (B L H)

    def forward(params, u):
        return layer.apply(params, cfg, u, mode)[0]                                    # (B L H)

    def forward_backward(params, u):
        return jax.grad(lambda p, u: jnp.sum(forward(p, u)), argnums=(0, 1))(params, u)

    fn = forward if check_direction(direction) == "forward" else forward_backward
    call, compiled = _staged(fn, allocate, dev, dtype, before_inputs)
    return call, _info(info_record(kind, mode, B, L, H, N, heads, dtype), B, L, dtype, dev, direction, compiled)


def make_forward(kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int = 16, dtype: str = "float32",
                 seed: int = 0, device=None, *,
                 before_inputs: Callable[[], None] | None = None) -> tuple[Callable[[], jax.Array], dict]:
    """A jitted layer at the given sizes and a call running its forward pass in `mode` on a fixed input.

    -> (forward, info): forward() returns y (B L H), blocked until ready (float64: inside `float64()`);
       info records the sizes, dtype, device and JAX's version, for benchmark records. The call is
       compiled and run once here, so that a timer around it sees neither compilation nor first-touch.
    device: None (JAX's default), a platform name ('cpu', 'gpu') or a `jax.Device`.
    """
    return _layer_call("forward", kind, mode, B, L, H, N, heads, dtype, seed, device, before_inputs)


def make_forward_backward(kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int = 16,
                          dtype: str = "float32", seed: int = 0, device=None, *,
                          before_inputs: Callable[[], None] | None = None) -> tuple[Callable[[], Any], dict]:
    """As `make_forward`, but the call is `jax.grad` of sum(y) w.r.t. (params, u), jitted: -> (grads, du)."""
    return _layer_call("forward+backward", kind, mode, B, L, H, N, heads, dtype, seed, device, before_inputs)


def make_gemm_floor(direction: str, B: int, L: int, H: int, N: int, dtype: str = "float32", seed: int = 0,
                    device=None, *, before_inputs: Callable[[], None] | None = None) -> tuple[Callable[[], Any], dict]:
    """The two real matrix products of an LRU layer of N complex modes alone: y = (u W_in) W_out.

    W_in (H 2N), W_out (2N H), u (B L H); forward+backward: jax.grad of sum(y) w.r.t. all three.
    """
    dev = _device(device)

    def allocate():
        return (_normal(seed + 1, (H, 2 * N), dtype) / H ** 0.5,          # W_in (H 2N)
                _normal(seed + 2, (2 * N, H), dtype) / (2 * N) ** 0.5,    # W_out (2N H)
                _normal(seed, (B, L, H), dtype))                           # u (B L H)

    def forward(W_in, W_out, u):
        return (u @ W_in) @ W_out                                          # (B L H)

    fn = forward if check_direction(direction) == "forward" else jax.grad(
        lambda *a: jnp.sum(forward(*a)), argnums=(0, 1, 2))
    call, compiled = _staged(fn, allocate, dev, dtype, before_inputs)
    return call, _info({"what": "gemm floor", "H": H, "N": N}, B, L, dtype, dev, direction, compiled)


def make_scan_alone(route: str, direction: str, B: int, L: int, n: int, dtype: str = "float32", seed: int = 0,
                    device=None, *, before_inputs: Callable[[], None] | None = None) -> tuple[Callable[[], Any], dict]:
    """The recurrence alone, B sequences of v (L n) complex from x0 = 0, vmapped over B.

    route 'sequential': `linrnn.impls.jax.scan.sequential` (lax.scan); 'associative': `scan.associative` (the
    associative scan, as the project's conform target `linrnn-jax-scan` runs it); 'pallas': `pallas_scan.scan`
    (needs the module and its `available()`; else a LinrnnError with the reason). forward+backward:
    jax.grad of the sum of the states' real and imaginary parts w.r.t. log_lambda (n,) and v.
    """
    if route not in SCAN_ROUTES:
        raise LinrnnError(f"route: expected one of {', '.join(SCAN_ROUTES)}, found {route!r}")
    if route == "pallas":
        try:
            from linrnn.impls.jax import pallas_scan
        except ImportError as err:
            raise LinrnnError(f"pallas scan: cannot import linrnn.impls.jax.pallas_scan ({err})") from None
        if not pallas_scan.available():
            reason = getattr(pallas_scan, "unavailable_reason", lambda: "not available on this machine")()
            raise LinrnnError(f"pallas scan: {reason}")
        one = pallas_scan.scan
    else:
        from linrnn.impls.jax import scan

        one = scan.sequential if route == "sequential" else scan.associative
    dev = _device(device)
    complex_dtype = "complex64" if dtype == "float32" else "complex128"

    def allocate():
        k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
        log_lam = jax.lax.complex(-0.1 * jax.random.uniform(k1, (n,), dtype),
                                  6.0 * jax.random.uniform(k2, (n,), dtype))                  # (n,)
        v = jax.random.normal(k3, (B, L, n), dtype=complex_dtype)                               # (B L n)
        return log_lam, v

    def forward(log_lam, v):
        x0 = jnp.zeros((v.shape[0], n), complex_dtype)                                          # (B n)
        return jax.vmap(one, in_axes=(None, 0, 0))(log_lam, v, x0)                              # (B L n)

    def total(log_lam, v):
        x = forward(log_lam, v)                                                                 # (B L n)
        return jnp.sum(x.real) + jnp.sum(x.imag)

    fn = forward if check_direction(direction) == "forward" else jax.grad(total, argnums=(0, 1))
    call, compiled = _staged(fn, allocate, dev, dtype, before_inputs)
    return call, _info({"what": "scan alone", "route": route, "n": n}, B, L, dtype, dev, direction, compiled)


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


def forward_table(B: int = 8, L: int = 4096, H: int = 128, N: int = 128, heads: int = 16, dtype: str = "float32",
                  repeats: int = 7) -> str:
    """`linrnn bench jax`: the median forward time (ms) of one layer per recurrent mixer (`RECURRENT_KINDS`) and mode,
    as a text table."""
    for name, value in (("B", B), ("L", L), ("H", H), ("N", N), ("heads", heads), ("repeats", repeats)):
        if value < 1:
            raise LinrnnError(f"{name}: expected 1 or more, found {value}")
    lines = [f"B={B} L={L} H={H} N={N} {dtype} on {jax.devices()[0]}",
             f"{'mixer':10s}" + "".join(f"{mode:>12s}" for mode in layer.MODES)]
    for kind in RECURRENT_KINDS:
        row = []
        for mode in layer.MODES:
            forward, _ = make_forward(kind, mode, B, L, H, N, heads, dtype)
            row.append(median_ms(forward, repeats, warmup=0))
        lines.append(f"{kind:10s}" + "".join(f"{ms:12.1f}" for ms in row))
    return "\n".join(lines)
