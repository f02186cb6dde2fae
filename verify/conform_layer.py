"""`linrnn conform`'s side of the target protocol (docs/conform.md, "The target"): a built target (`Layer`), every
output it returns checked (`check_output`: shape, real, finite; a one-line `LinrnnError` otherwise), and the input
gradient through the framework the target uses (`input_gradient`).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any, Callable, Mapping

import numpy as np

from linrnn.impls.config import MixerConfig, config_to_dict
from linrnn.impls.errors import LinrnnError

# The gradient probes: framework -> module with `input_gradient(call, u, w) -> (gradient or None, how or why
# not)`, raising what the call raises on that framework's arrays. A framework is tried only when the target
# has imported it already.
GRADIENT_PROBES = {"torch": "linrnn.verify.conform_torch", "jax": "linrnn.verify.conform_jax"}


def _why(err: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    return f"{type(err).__name__}: {next(iter(str(err).splitlines()), '')}"


def _accepts(fn: Callable, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):        # a callable without an inspectable signature
        return False


class Layer:
    """One built target: `call(u)` -> (y float64 (B L H), state or None), every output checked."""

    def __init__(self, name: str, build: Callable, cfg: MixerConfig, params: Mapping[str, np.ndarray], dtype: str):
        self.name = name
        kwargs = {"dtype": dtype} if _accepts(build, "dtype") else {}
        bundle = {key: np.array(value) for key, value in params.items()}   # writeable copies
        try:
            self.fn = build(bundle, config_to_dict(cfg), **kwargs)
        except (NotImplementedError, LinrnnError):
            raise
        except Exception as err:
            raise LinrnnError(f"target {name}: building it for {describe(cfg)} raised "
                              f"{_why(err)}") from None
        if not callable(self.fn):
            raise LinrnnError(f"target {name}: function(bundle, config) returned {type(self.fn).__name__}, "
                              f"expected a callable u -> y")
        self.takes_state = _accepts(self.fn, "state")
        self.takes_lengths = _accepts(self.fn, "lengths")       # padded rows
        self.takes_segments = _accepts(self.fn, "segments")     # packed sequences
        self.output_dtype = None      # the dtype of the last output as the target returned it

    def raw(self, u, state=None, **packing):
        """The target's own output for u (NumPy, tensor or array): y as returned, and its state. `packing`: lengths=
        or segments=, passed only when given."""
        if not self.takes_state:
            return self.fn(u, **packing), None
        out = self.fn(u, state=state, **packing)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise LinrnnError(f"target {self.name}: a callable with a state parameter must return (y, state), "
                              f"found {type(out).__name__}")
        return out

    def __call__(self, u: np.ndarray, what: str, state=None, **packing) -> tuple[np.ndarray, Any]:
        try:
            y, state = self.raw(u.copy(), state, **packing)
        except (NotImplementedError, LinrnnError):
            raise
        except Exception as err:
            raise LinrnnError(f"target {self.name}: {what}: calling it on u of shape {u.shape} raised "
                              f"{_why(err)}") from None
        arr = as_array(self.name, what, y)
        self.output_dtype = arr.dtype
        return check_output(self.name, what, arr, u.shape), state


def as_array(name: str, what: str, y) -> np.ndarray:
    try:
        return np.asarray(y)
    except Exception as err:
        raise LinrnnError(f"target {name}: {what}: numpy.asarray cannot read its output "
                          f"({_why(err)})") from None


def check_output(name: str, what: str, arr: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The target's output as a float64 array of `shape`, or a one-line LinrnnError (shape, complex, NaN/Inf)."""
    if np.iscomplexobj(arr):
        raise LinrnnError(f"target {name}: {what}: expected a real output, found dtype {arr.dtype}")
    if arr.dtype.kind not in "fiu":
        raise LinrnnError(f"target {name}: {what}: expected a numeric output, found dtype {arr.dtype}")
    if arr.shape != shape:
        raise LinrnnError(f"target {name}: {what}: expected an output of shape {shape} (B, L, H), found {arr.shape}")
    bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
    if bad:
        raise LinrnnError(f"target {name}: {what}: expected finite outputs, found {bad} NaN/Inf")
    return arr.astype(np.float64)


def describe(cfg: MixerConfig) -> str:
    return f"{cfg.kind}{' bidirectional' if cfg.bidirectional else ''}"


def input_gradient(layer: Layer, u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray | None, str]:
    """d<w, y>/du through the first framework (already imported by the target) that differentiates the call."""
    reasons = []
    for framework, module in GRADIENT_PROBES.items():
        if framework not in sys.modules:
            continue
        probe = importlib.import_module(module).input_gradient
        try:
            grad, how = probe(lambda x: layer.raw(x)[0], u, w)
        except Exception as err:      # a target written for another framework fails on its arrays in its own way
            grad, how = None, f"{framework}: {_why(err)}"
        if grad is not None:
            return grad, how
        reasons.append(how)
    return None, "; ".join(reasons) or "the target imported neither torch nor JAX"
