"""Speed of the float64 reference (`pytest --benchmark`): an oracle, so only small sizes are timed.

The reference steps the recurrence in Python and convolves by a plain sum over lags: it is the
yardstick of correctness, not of speed. The sizes are recorded with every result.
"""

import numpy as np
import pytest

from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig

B, L, H, N = 2, 256, 16, 16
CONFIGS = {   # the three papers' models at one size (the reference is timed as an oracle, not compared)
    "rotrnn": RotRNNConfig(d_model=H, d_state=8, heads=N // 8),
    "lru": LRUConfig(d_model=H, d_state=N),
    "dlr": DLRConfig(d_model=H, d_state=N),
}


@pytest.mark.bench
@pytest.mark.parametrize("mode", ["sequential", "conv"])
@pytest.mark.parametrize("kind", list(CONFIGS))
def test_reference_forward(benchmark, kind, mode):
    cfg = CONFIGS[kind]
    params = init(cfg, 0).params
    u = np.random.default_rng(0).standard_normal((B, L, H))
    apply_mixer(cfg, params, u, mode)  # warm-up outside the timed region
    benchmark.extra_info.update({"backend": "reference", "mixer": kind, "mode": mode, "B": B, "L": L, "H": H,
                                 "N": N, "dtype": "float64", "device": "cpu"})
    y, _ = benchmark(apply_mixer, cfg, params, u, mode)
    assert y.shape == (B, L, H) and np.all(np.isfinite(y))
