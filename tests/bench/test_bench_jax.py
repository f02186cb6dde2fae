"""Speed of one JAX layer forward, per mixer and mode (run with `pytest --benchmark`; skipped otherwise).

B=8, H=128, N=128 (RotRNN: 16 heads of 8), L=4096, float32, on JAX's default device. The harness
(`linrnn.verify.bench_jax.make_forward`) compiles and runs once before the timer; each timed call
ends with `block_until_ready`. Never asserts on times.
"""

import pytest

from linrnn.verify.bench_jax import RECURRENT_KINDS, make_forward, scan_alone
from linrnn.impls.jax.layer import MODES

SIZES = dict(B=8, L=4096, H=128, N=128, heads=16, dtype="float32")


@pytest.mark.bench
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", RECURRENT_KINDS)
def test_layer_forward_speed(benchmark, kind, mode):
    forward, info = make_forward(kind, mode, **SIZES)
    benchmark.extra_info.update(info)
    benchmark.pedantic(forward, rounds=5, iterations=1, warmup_rounds=1)


@pytest.mark.bench
@pytest.mark.parametrize("route", ["sequential", "scan", "conv"])
def test_jax_scan_alone_speed(benchmark, route):
    """The recurrence alone (no projections): the numbers behind impls/jax/scan.py's choice (docs/speed-log.md)."""
    forward = scan_alone(route, B=8, L=4096, n=128, dtype="float32")
    benchmark.extra_info.update({"backend": "jax", "what": "scan alone, time-major", "route": route, "B": 8,
                                 "L": 4096, "n": 128, "dtype": "float32"})
    benchmark.pedantic(forward, rounds=5, iterations=1, warmup_rounds=1)
