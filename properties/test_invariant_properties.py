"""The theory's invariants, checked in every backend on random parameters.

* R1: the materialised P = expm(M - M^T) is orthogonal with det +1 (reference, torch, jax);
* the rotation part preserves the norm: with zero input, each RotRNN head's state shrinks exactly by
  gamma per step, ||x_k|| = gamma^k ||x_0||, whatever P and theta (torch, jax, reference);
* D3: at the periodic initialisation (lambda_n = e^{2 pi i n / N}) with W = DFT(K)/N, the DLR layer's
  impulse response is K (torch, jax, reference).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linrnn.impls.backends import backend
from linrnn.impls.bundle import Bundle
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, rotrnn as ref_rotrnn
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close, scaled_tolerance

BACKENDS = ("reference", "torch", "jax")


def materialised_P(name: str, M: np.ndarray, dtype: str) -> np.ndarray:
    if name == "reference":
        return ref_rotrnn.orthogonal(M)
    if name == "torch":
        import torch
        from linrnn.impls.torch.rotrnn import orthogonal
        return orthogonal(torch.tensor(M, dtype=getattr(torch, dtype))).double().numpy()
    import jax
    import jax.numpy as jnp
    from linrnn.impls.jax.rotrnn import orthogonal
    return np.asarray(jax.jit(orthogonal)(jnp.asarray(M, dtype)), dtype=np.float64)   # as the layer runs it


@pytest.mark.parametrize("name", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(heads=st.integers(1, 3), half=st.integers(1, 4), scale=st.sampled_from([0.1, 1.0, 3.0]),
       seed=st.integers(0, 2**16))
def test_materialised_P_is_a_rotation(name, heads, half, scale, seed):
    N = 2 * half
    M = scale * np.random.default_rng(seed).standard_normal((heads, N, N))
    P = materialised_P(name, M, "float64")
    norm_S = max(np.linalg.norm(m - m.T, 2) for m in M)
    tol = scaled_tolerance("expm_orthogonality", "float64", N * max(1.0, norm_S))
    assert np.max(np.abs(np.swapaxes(P, 1, 2) @ P - np.eye(N))) <= tol
    assert np.max(np.abs(np.linalg.det(P) - 1.0)) <= tol


@pytest.mark.parametrize("name", ["torch", "jax", "reference"])
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), steps=st.integers(1, 12))
def test_rotation_part_preserves_the_state_norm(name, seed, steps):
    """Zero input from a state x_0: ||x^h_k|| = gamma_h^k ||x^h_0|| for every head."""
    cfg = RotRNNConfig(d_model=2, d_state=4, heads=3, gamma_min=0.5, gamma_max=0.999)
    bundle = init(cfg, seed)
    x0 = np.random.default_rng(seed).standard_normal((1, 3, 4))
    u = np.zeros((1, steps, 2))
    if name == "reference":
        _, x = apply_mixer(cfg, bundle.params, u, "sequential", x0)
    elif name == "torch":
        import torch
        from linrnn.impls.torch import from_bundle
        _, x = from_bundle(bundle)(torch.tensor(u), mode="sequential", state=torch.tensor(x0))
        x = x.detach().numpy()
    else:
        from linrnn.impls.jax import from_bundle
        from linrnn.impls.jax.layer import apply
        _, x = apply(from_bundle(bundle), cfg, u, "sequential", x0)
        x = np.asarray(x)
    gamma = ref_rotrnn.decay(bundle.params["gamma_log"])
    expected = gamma**steps * np.linalg.norm(x0[0], axis=-1)
    # an identity through P and P^T (orthogonal to O(N eps)), over `steps` steps
    assert_close("state norm per head", expected, np.linalg.norm(x[0], axis=-1), "identity", "float64", steps,
                 float(np.max(gamma)))


@pytest.mark.parametrize("name", BACKENDS)
@settings(max_examples=10, deadline=None)
@given(N=st.sampled_from([2, 5, 8, 16]), seed=st.integers(0, 2**16))
def test_periodic_initialisation_reproduces_any_kernel(name, N, seed):
    """lambda_n = e^{2 pi i n/N} (a = 0), W = DFT(K)/N: the impulse response of channel h is K_h, l < N."""
    H = 2
    K = np.random.default_rng(seed).standard_normal((H, N))
    W = np.fft.fft(K, axis=1) / N                       # sum_n W_n e^{2 pi i n l/N} = K_l
    cfg = DLRConfig(d_model=H, d_state=N)
    params = {"a": np.zeros(N), "theta": 2 * np.pi * np.arange(N) / N, "W_re": W.real, "W_im": W.imag,
              "D": np.zeros(H)}
    impulse = np.zeros((1, N, H))
    impulse[0, 0, :] = 1.0
    mode = "conv" if name != "reference" else "sequential"
    y = backend(name).apply_bundle(Bundle(cfg, params), impulse, mode=mode, dtype="float64")
    assert_close(f"{name} DLR impulse response", K.T, y[0], "forward", "float64", N, 1.0)
