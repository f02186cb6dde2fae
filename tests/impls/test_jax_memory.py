"""JAX training steps that keep no array larger than their route needs (issue 33; docs/speed.md, "JAX").

XLA's own account of a jitted forward+backward (`jax.grad` of sum(y) in the parameters and u; arguments + outputs +
temporaries, `linrnn.verify.bench_jax.xla_bytes`) is a property of the compiled program, not a timing: the same
on every run of one jaxlib. Checked at small sizes, against the size of what a regression would bring back:

* S4D `scan` and `conv` (DLR's chunkwise and kernel routes with per-channel eigenvalues): below half of one
  (B L H N) complex64 state trajectory (measured here: 11.1 and 5.0 B L H 4 bytes against
  64). The associative scan on the H N lanes that `scan` replaced kept several
  (1,796 B L H 4 bytes at B = 8, L = 4096, H = N = 128), and the conv mode's powers of every lag one (148);
* DLR `conv` and S4D `conv` (the FFT mapped over the sequences, `depthwise.convolve`): below the three zero-padded
  (B 2L H) float32 spectra and signals that the FFT held at once over the whole batch (6 B L H 4 bytes; measured
  here: 4.3 and 5.0). The code before this change fails all four (S4D: 452 and 42; DLR conv: 8.4).

The measured values are printed (`pytest -s`).
"""

import jax
import jax.numpy as jnp
import pytest

from linrnn.impls.config import mixer_config
from linrnn.impls.init import init
from linrnn.impls.jax import from_bundle, layer
from linrnn.impls.jax.params import precision
from linrnn.verify.bench_jax import xla_bytes

B, L, H, N = 8, 1024, 16, 32


def training_bytes(kind: str, mode: str) -> int:
    cfg = mixer_config(kind, H, N)

    def allocate():
        return from_bundle(init(cfg, 0), "float32"), jnp.zeros((B, L, H), jnp.float32)

    def step(params, u):
        return jax.grad(lambda p, u: jnp.sum(layer.apply(p, cfg, u, mode)[0]), argnums=(0, 1))(params, u)

    with precision("float32"):
        return xla_bytes(jax.jit(step).lower(*jax.eval_shape(allocate)).compile())


def per_input(n_bytes: int) -> float:
    return n_bytes / (B * L * H * 4)


@pytest.mark.parametrize("mode", ["scan", "conv"])
def test_s4d_training_keeps_no_state_trajectory(mode):
    got = training_bytes("s4d", mode)
    if got is None:
        pytest.skip("this jaxlib gives no memory analysis of a compiled call")
    trajectory = B * L * H * N * 8                          # one (B L H N) complex64 array
    print(f"s4d {mode}: {per_input(got):.2f} B L H 4 bytes; one state trajectory is {per_input(trajectory):.0f}")
    assert got < trajectory / 2, (f"s4d {mode}: XLA's account of the training step is {got} bytes, more than half "
                                  f"of one (B L H N) complex trajectory ({trajectory} bytes)")


@pytest.mark.parametrize("kind", ["dlr", "s4d"])   # the two convs of `depthwise.convolve`
def test_fft_convolution_holds_one_sequences_spectra(kind):
    got = training_bytes(kind, "conv")
    if got is None:
        pytest.skip("this jaxlib gives no memory analysis of a compiled call")
    whole_batch = 3 * B * 2 * L * H * 4                      # three zero-padded (B 2L H) float32 buffers
    print(f"{kind} conv: {per_input(got):.2f} B L H 4 bytes; the FFT's buffers over the batch were "
          f"{per_input(whole_batch):.0f}")
    assert got < whole_batch, (f"{kind} conv: XLA's account of the training step is {got} bytes, as much as the "
                               f"FFT's padded buffers over the whole batch ({whole_batch} bytes)")
