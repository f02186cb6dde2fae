"""One mixer layer on a batch, JAX: the mode switch, the state boundary, and the checks.

    apply(params, cfg, u, mode="scan", state=None) -> (y, state)     u (B L H) -> y (B L H)
    step(params, cfg, u_t, state=None) -> (y_t, state)               u_t (B H) -> y_t (B H)

`params` is a dict of jnp arrays keyed like the layer bundle (`params.from_bundle`); its dtype
(float32 or float64) is the compute dtype, and the input and state are cast to it (complex64 or
complex128 for complex states). An input in a low dtype (bfloat16, float16) is computed the same way and its
output returned in that dtype (docs/precision.md, "Low precision": the recurrence stays in float32). The mixer modules
work on one sequence (`run`), and this module vmaps them once, or on the whole batch (`run_batch`: DLR and S4D, whose
chunkwise and kernel routes share arrays across the batch whose cotangents vmap would keep once per sequence).

Modes (MODES[0] is the default):

* `scan`, `sequential`, `conv`: the routes documented in each mixer module;
* `step`: the streaming function `step` folded over the positions with `lax.scan` (materialisation
  hoisted out of the loop), so a whole sequence can be checked against the other modes.

States in and out use the reference's conventions: RotRNN (B heads N) real in the original basis,
LRU (B N) complex, DLR and S4D (B H N) complex; `state=None` means zeros. The returned state is the forward
state after the last position, or None where there is none: bidirectional layers (which also refuse
a state and `step`) and DLR's `conv`. DLR with `max_kernel_length` is defined by its truncated kernel:
the recurrent modes need L <= max_kernel_length and no state, like the reference.

Attention has no recurrence: its modes are `full` and `chunked` (`linrnn.impls.config.KIND_MODES`), it takes
no state, and `apply` hands it to `linrnn.impls.jax.attention.apply` after the checks.

`step` re-materialises the parameters on every call (RotRNN: an expm per head): O(1) in L, but a
streaming loop over long inputs is faster with `apply(..., mode="step")` or a jitted loop of its own.
"""

from __future__ import annotations

from functools import partial
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from linrnn.impls import checks
from linrnn.impls.config import LOW_DTYPES, MixerConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.jax.params import check_compute_dtype
from linrnn.impls.segments import check_packing as checks_packing, pieces
from linrnn.impls.specs import implementations, spec
from linrnn.impls.specs.base import MODES as _MODES

MODES = _MODES["jax"]
# kind -> its module here, for the recurrences (each model registers it in its spec; attention: `attention.apply`)
MIXERS = implementations("jax", only=lambda s: s.stateful)

Params = Mapping[str, jnp.ndarray]


def complex_dtype(real) -> np.dtype:
    return np.dtype(np.complex64) if np.dtype(real) == np.float32 else np.dtype(np.complex128)


# -- checks (static: shapes, flags, the mode; they also run while an enclosing jit traces) ----------

def check_mode(mode: str, kind: str | None = None) -> str:
    return checks.check_mode(mode, "jax", kind)


def check_call(cfg: MixerConfig, mode: str, u_shape: tuple, state, streaming: bool = False) -> None:
    """Raise LinrnnError for a call that the layer does not define (the contract's rules: `linrnn.impls.checks`)."""
    check_mode(mode, cfg.kind)
    H = cfg.d_model
    want = f"(B, {H})" if streaming else f"(B, L, {H})"
    if len(u_shape) != (2 if streaming else 3) or u_shape[-1] != H or min(u_shape) < 1:
        raise LinrnnError(f"input: expected shape {want} with B{'' if streaming else ', L'} >= 1, found {tuple(u_shape)}")
    checks.check_stateless(cfg, state is not None)
    checks.check_streaming(cfg, mode, state is not None)
    checks.check_kernel_view(cfg, mode, 1 if streaming else u_shape[1], state is not None)
    if mode == "conv" and state is not None and not getattr(MIXERS[cfg.kind], "CONV_TAKES_STATE", True):
        # e.g. this side's DLR conv is the kernel alone (no free response of a state): it takes no state
        raise LinrnnError(f"state: {cfg.kind}'s mode conv on the jax side starts from a zero state; use mode scan, "
                          "sequential or step to pass a state")
    if state is not None:
        module = MIXERS[cfg.kind]
        expected = (u_shape[0],) + module.state_shape(cfg)
        if tuple(np.shape(state)) != expected:
            raise LinrnnError(f"state: expected shape {expected} for a {cfg.kind} layer, found {tuple(np.shape(state))}")
        if not module.STATE_IS_COMPLEX and jnp.iscomplexobj(state):
            raise LinrnnError(f"state: a {cfg.kind} state is real (the original basis), found a complex array")


# -- the batched layer -------------------------------------------------------------------------------

@partial(jax.jit, static_argnames=("cfg",))
def materialise(params: Params, cfg: MixerConfig):
    """Raw parameters -> the mixer's system (eigenvalues, projections; RotRNN: its expm per head).

    Compiled on its own (RotRNN's expm costs about 1 s of XLA compile time), so that the modes share it.
    """
    return MIXERS[cfg.kind].materialise(params, cfg)


def _initial_native(module, sys, cfg: MixerConfig, state, batch: int, real):
    """The state of every sequence in the mixer's native form; without a state, the native form's zeros (a pytree of
    zeros: a native state may carry more than the reference's, RG-LRU's whether a sequence is under way).
    -> (B ...) native"""
    dtype = complex_dtype(real) if module.STATE_IS_COMPLEX else np.dtype(real)
    x0 = jnp.zeros((batch,) + module.state_shape(cfg), dtype) if state is None else jnp.asarray(state).astype(dtype)
    native = jax.vmap(module.to_native, in_axes=(None, 0))(sys, x0)
    return jax.tree.map(jnp.zeros_like, native) if state is None else native


@partial(jax.jit, static_argnames=("cfg", "mode"))
def _run(sys, cfg: MixerConfig, u: jnp.ndarray, mode: str, state, resets=None, lengths=None):
    module = MIXERS[cfg.kind]
    z0 = _initial_native(module, sys, cfg, state, u.shape[0], u.dtype)   # (B ...)
    if mode == "step":
        one_position = jax.vmap(lambda u_t, z: module.step(sys, cfg, u_t, z))
        zero = jax.tree.map(jnp.zeros_like, z0)

        def body(z, inputs):
            u_t, reset_t = inputs
            if reset_t is not None:                                      # a packed segment begins: from zero
                z = jax.tree.map(lambda a, o: jnp.where(reset_t.reshape((-1,) + (1,) * (a.ndim - 1)), o, a), z, zero)
            y_t, z = one_position(u_t, z)
            return z, y_t

        time_major = None if resets is None else jnp.swapaxes(resets, 0, 1)
        z_last, y = lax.scan(body, z0, (jnp.swapaxes(u, 0, 1), time_major))   # (B ...), (L B H)
        y = jnp.swapaxes(y, 0, 1)
    elif hasattr(module, "run_batch"):                                   # the module takes the whole batch itself
        y, z_last = module.run_batch(sys, cfg, u, z0, mode)
    elif getattr(module, "RUN_TAKES_LENGTH", False):                     # a row's valid length (RG-LRU's backward)
        n = jnp.full(u.shape[0], u.shape[1]) if lengths is None else lengths
        y, z_last = jax.vmap(lambda u1, z, n1: module.run(sys, cfg, u1, z, mode, n1))(u, z0, n)
    else:
        y, z_last = jax.vmap(lambda u1, z: module.run(sys, cfg, u1, z, mode))(u, z0)
    if cfg.bidirectional or z_last is None:
        return y, None
    return y, jax.vmap(module.from_native, in_axes=(None, 0))(sys, z_last)


def apply(params: Params, cfg: MixerConfig, u: jnp.ndarray, mode: str = "scan", state=None, lengths=None,
          segments=None):
    """The layer on a batch.

    params    dict of arrays keyed like the layer bundle, one real dtype (the compute dtype)
    u         (B L H) real                       the input sequences (cast to the compute dtype)
    mode      one of MODES (attention: full or chunked)
    state     None, or the forward state before u in the reference's convention (see module docstring)
    lengths   (B,) integers or None: padded rows, each row's valid part computed as if alone (its input zeroed
              at the padding; attention: no valid query sees a padded key), the output 0 at the padding; may
              be traced (jit)
    segments  (B L) integer ids or None: packed sequences, each computed as if alone: `step` resets its state
              where the id changes (ids may be traced); the other modes run the segments as one padded batch,
              which needs the ids as concrete values (NumPy), not traced
    -> y (B L H) in the compute dtype, and the forward state after the last position (None with lengths or
       segments)
    """
    check_call(cfg, mode, np.shape(u), state)
    stateful = spec(cfg.kind).stateful                            # attention: no recurrence, `attention.apply`
    streamed = mode == "step" and stateful                        # resets its state: takes traced ids
    lengths, segments = _check_packing(lengths, segments, state, np.shape(u), streamed)
    if segments is not None and not streamed:
        return _per_segment(params, cfg, u, mode, segments), None
    weights = _weights(params)
    check_compute_dtype(weights)
    u = jnp.asarray(u)
    io = u.dtype if u.dtype.name in LOW_DTYPES else None      # a low-dtype input: its output in that dtype too
    u = u.astype(weights.dtype)
    valid = None if lengths is None else (jnp.arange(u.shape[1])[None, :] < lengths[:, None])[..., None]   # (B L 1)
    if not stateful:
        y, x = spec(cfg.kind).implementation("jax").apply(params, cfg, u, mode, lengths=lengths), None
    else:
        resets = None if segments is None else jnp.pad(segments[:, 1:] != segments[:, :-1], ((0, 0), (1, 0)))
        own = lengths if getattr(MIXERS[cfg.kind], "RUN_TAKES_LENGTH", False) else None   # others: one program less
        y, x = _run_checked(materialise(params, cfg), cfg, u if valid is None else jnp.where(valid, u, 0), mode, state,
                            resets, own)
    y = y if io is None else y.astype(io)
    if valid is None and segments is None:
        return y, x
    return (y if valid is None else jnp.where(valid, y, jnp.zeros((), y.dtype))), None


def _check_packing(lengths, segments, state, shape, streamed: bool):
    """The checks of lengths and segments (`linrnn.impls.segments.check_packing`); traced ones by shape and dtype only
    (traced segments in the `step` mode alone, `streamed`). -> (lengths, segments): a jnp int array or None, and
    NumPy ids (a jnp array if traced) or None"""
    traced = [isinstance(a, jax.core.Tracer) for a in (lengths, segments)]
    if traced[1] and not streamed:
        raise LinrnnError("segments: expected concrete ids (a NumPy array), found a traced array (under jit); pass "
                          "them from outside the jitted function, or use mode step, which takes traced ids")
    placeholders = (np.ones(shape[0], np.int64), np.zeros(shape[:2], np.int64))
    checked = checks_packing(*(p if t else a for a, p, t in zip((lengths, segments), placeholders, traced)),
                             state is not None, *shape[:2])
    out = []
    for a, c, t, want in zip((lengths, segments), checked, traced, (shape[:1], shape[:2])):
        if t and (a.shape != want or not jnp.issubdtype(a.dtype, jnp.integer)):
            name = "lengths" if want == shape[:1] else "segments"
            raise LinrnnError(f"{name}: expected integers of shape {want}, found {a.dtype} {a.shape}")
        out.append(a if t else c)
    return (None if out[0] is None else jnp.asarray(out[0])), out[1]


def _per_segment(params: Params, cfg: MixerConfig, u, mode: str, segments: np.ndarray):
    """Packed sequences as one padded batch of their segments (`linrnn.impls.segments.pieces`), each row run with
    its length, every position put back.     u (B L H) -> y (B L H)"""
    B, L, H = np.shape(u)
    p = pieces(segments, power_of_two=True)           # one compiled program per bucket of shapes, not per segmentation
    rows, _ = apply(params, cfg, jnp.reshape(jnp.asarray(u), (B * L, H))[p.index], mode, lengths=p.lengths)
    return jnp.reshape(rows, (-1, H))[p.inverse.ravel()].reshape(B, L, H)


def _weights(params: Params):
    """One of the layer's parameters: they share the compute dtype (a mixer's keys are its spec's: none is fixed)."""
    return next(iter(params.values()))


def _run_checked(sys, cfg: MixerConfig, u, mode: str, state, resets=None, lengths=None):
    """`_run`, with JAX's refusal of forward-mode autodiff through a `custom_vjp` (the `scan` mode's
    backwards: `scan.blocked`, `scan.chunked` and `pallas_scan`) as a one-line LinrnnError that names the modes that support it."""
    try:
        return _run(sys, cfg, u, mode, state, resets, lengths)
    except TypeError as err:
        if "forward-mode" not in str(err) or "custom_vjp" not in str(err):
            raise
        raise LinrnnError(f"mode {mode}: its backward is the adjoint scan (a jax.custom_vjp), which has no forward "
                          f"mode (jax.jvp, jax.jacfwd, jax.linearize); use mode sequential, conv or step, or reverse "
                          f"mode (jax.grad, jax.vjp, jax.jacrev, jax.hessian)") from None


def apply_system(sys, cfg: MixerConfig, u: jnp.ndarray, mode: str = "scan", state=None):
    """`apply` from the materialised system (`materialise(params, cfg)`): the same checks and result.

    For a caller that differentiates the parameters' materialisation once and each mode on its own
    (`linrnn.verify.crosscheck`: RotRNN's expm and its derivative then compile once, not once per mode).
    u must already be in the system's real dtype. Not for attention, which has no system.
    """
    check_call(cfg, mode, np.shape(u), state)
    if not spec(cfg.kind).stateful:
        raise LinrnnError(f"{cfg.kind} has no materialised system: use apply(params, cfg, u, mode)")
    return _run_checked(sys, cfg, u, mode, state)


@partial(jax.jit, static_argnames=("cfg",))
def _step(sys, cfg: MixerConfig, u_t: jnp.ndarray, state):
    module = MIXERS[cfg.kind]
    z = _initial_native(module, sys, cfg, state, u_t.shape[0], u_t.dtype)
    y_t, z = jax.vmap(lambda u1, z1: module.step(sys, cfg, u1, z1))(u_t, z)
    return y_t, jax.vmap(module.from_native, in_axes=(None, 0))(sys, z)


def step(params: Params, cfg: MixerConfig, u_t: jnp.ndarray, state=None):
    """One position of a stream: u_t (B H), state (reference convention) or None -> y_t (B H), state."""
    check_call(cfg, "step", np.shape(u_t), state, streaming=True)
    check_compute_dtype(_weights(params))
    u_t = jnp.asarray(u_t)
    io = u_t.dtype if u_t.dtype.name in LOW_DTYPES else None
    y_t, state = _step(materialise(params, cfg), cfg, u_t.astype(_weights(params).dtype), state)
    return (y_t if io is None else y_t.astype(io)), state
