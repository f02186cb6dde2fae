"""`linrnn conform`'s side of the target protocol (docs/conform.md, "The target"): a built target (`Layer`), every
output it returns checked (`check_output`: shape, real, finite; a one-line `LinrnnError` otherwise), and the input
gradient through the framework the target uses (`input_gradient`).

The protocol's optional parts, each found on the built callable: `state=` (states between calls), `lengths=` and
`segments=` (padded rows, packed sequences), `params=` (the bundle in the target's framework, for the parameter
gradients) and a `step` attribute (one position at a time). A low dtype (bfloat16, float16) is asked of a build
function with a `dtype` parameter only; one without it, or one that raises while building or calling for a low dtype
(NumPy has no bfloat16: `np.asarray(u, "bfloat16")` raises), refuses that dtype: its checks are "n/a", not failures.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any, Callable, Mapping

import numpy as np

from linrnn.impls.config import MixerConfig, config_to_dict
from linrnn.base.errors import LinrnnError
from linrnn.verify.conform_bundles import LOW

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
        self.dtype = dtype
        if dtype in LOW and not _accepts(build, "dtype"):
            raise NotImplementedError(f"the target refuses {dtype}: its build function takes no dtype= parameter")
        kwargs = {"dtype": dtype} if _accepts(build, "dtype") else {}
        bundle = {key: np.array(value) for key, value in params.items()}   # writeable copies
        try:
            self.fn = build(bundle, config_to_dict(cfg), **kwargs)
        except (NotImplementedError, LinrnnError):
            raise
        except Exception as err:
            if dtype in LOW:
                raise NotImplementedError(f"the target refuses {dtype}: {_why(err)}") from None
            raise LinrnnError(f"target {name}: building it for {describe(cfg)} raised "
                              f"{_why(err)}") from None
        if not callable(self.fn):
            raise LinrnnError(f"target {name}: function(bundle, config) returned {type(self.fn).__name__}, "
                              f"expected a callable u -> y")
        self.takes_state = _accepts(self.fn, "state")
        self.takes_lengths = _accepts(self.fn, "lengths")       # padded rows
        self.takes_segments = _accepts(self.fn, "segments")     # packed sequences
        self.takes_params = _accepts(self.fn, "params")         # the bundle in its framework: parameter gradients
        step = getattr(self.fn, "step", None)
        self.step = step if callable(step) else None            # step(u_t, state) -> (y_t, state)
        self.output_dtype = None      # the dtype of the last output as the target returned it

    def raw(self, u, state=None, params=None, **packing):
        """The target's own output for u (NumPy, tensor or array): y as returned, and its state. `packing`: lengths=
        or segments=, and `params`, each passed only when given."""
        if params is not None:
            packing["params"] = params
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
            if self.dtype in LOW:      # built for a low dtype, but its call cannot take it: it refuses the dtype
                raise NotImplementedError(f"the target refuses {self.dtype}: {what}: {_why(err)}") from None
            raise LinrnnError(f"target {self.name}: {what}: calling it on u of shape {u.shape} raised "
                              f"{_why(err)}") from None
        arr = as_array(self.name, what, y)
        self.output_dtype = arr.dtype
        return check_output(self.name, what, arr, u.shape), state

    def stepped(self, u: np.ndarray, what: str, state=None) -> tuple[np.ndarray, Any]:
        """The target's `step` at every position of u in turn, each state passed on: (y (B L H) float64, the last
        state); each output checked as a position's (B H)."""
        out = []
        for t in range(u.shape[1]):
            where = f"{what}, position {t}"
            try:
                result = self.step(u[:, t].copy(), state)
            except (NotImplementedError, LinrnnError):
                raise
            except Exception as err:
                raise LinrnnError(f"target {self.name}: {where}: step(u_t, state) on u_t of shape {u[:, t].shape} "
                                  f"raised {_why(err)}") from None
            if not (isinstance(result, tuple) and len(result) == 2):
                raise LinrnnError(f"target {self.name}: {where}: step must return (y_t, state), found "
                                  f"{type(result).__name__}")
            y_t, state = result
            out.append(check_output(self.name, where, as_array(self.name, where, y_t), (u.shape[0], u.shape[2]),
                                    "(B, H)"))
        return np.stack(out, axis=1), state


def as_array(name: str, what: str, y) -> np.ndarray:
    try:
        return np.asarray(y)
    except Exception as err:
        raise LinrnnError(f"target {name}: {what}: numpy.asarray cannot read its output "
                          f"({_why(err)})") from None


def check_output(name: str, what: str, arr: np.ndarray, shape: tuple[int, ...],
                 letters: str = "(B, L, H)") -> np.ndarray:
    """The target's output as a float64 array of `shape`, or a one-line LinrnnError (shape, complex, NaN/Inf). A
    bfloat16 array (ml_dtypes', as JAX returns one) is read as float32, which holds every bfloat16 value."""
    if arr.dtype.name == "bfloat16":
        arr = arr.astype(np.float32)
    if np.iscomplexobj(arr):
        raise LinrnnError(f"target {name}: {what}: expected a real output, found dtype {arr.dtype}")
    if arr.dtype.kind not in "fiu":
        raise LinrnnError(f"target {name}: {what}: expected a numeric output, found dtype {arr.dtype}")
    if arr.shape != shape:
        raise LinrnnError(f"target {name}: {what}: expected an output of shape {shape} {letters}, found {arr.shape}")
    bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
    if bad:
        raise LinrnnError(f"target {name}: {what}: expected finite outputs, found {bad} NaN/Inf")
    return arr.astype(np.float64)


def describe(cfg: MixerConfig) -> str:
    return f"{cfg.kind}{' bidirectional' if cfg.bidirectional else ''}"


def differentiate(function: str, *args) -> tuple[Any | None, str]:
    """`function(*args)` of the gradient probe of the first framework (one the target has imported already) that
    differentiates the call: (its result, how), or (None, why not, for every framework tried)."""
    reasons = []
    for framework, module in GRADIENT_PROBES.items():
        if framework not in sys.modules:
            continue
        probe = getattr(importlib.import_module(module), function)
        try:
            out, how = probe(*args)
        except Exception as err:      # a target written for another framework fails on its arrays in its own way
            out, how = None, f"{framework}: {_why(err)}"
        if out is not None:
            return out, how
        reasons.append(how)
    return None, "; ".join(reasons) or "the target imported neither torch nor JAX"


def input_gradient(layer: Layer, u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray | None, str]:
    """d<w, y>/du through the first framework (already imported by the target) that differentiates the call."""
    return differentiate("input_gradient", lambda x: layer.raw(x)[0], u, w)


def state_gradient(layer: Layer, u: np.ndarray, state, w: np.ndarray, v: np.ndarray) -> tuple[dict | None, str]:
    """{"input", "state"}: the gradients of <w, y> + <v, state out> from the target's own `state` passed in."""
    return differentiate("state_gradient", lambda x, s: layer.raw(x, s), u, state, w, v)


def parameter_gradient(layer: Layer, u: np.ndarray, params: Mapping[str, np.ndarray],
                       w: np.ndarray) -> tuple[dict | None, str]:
    """{key: d<w, y>/d key} through `params=` (the protocol's optional bundle in the target's framework)."""
    return differentiate("parameter_gradient", lambda x, p: layer.raw(x, params=p)[0], u, dict(params), w)


def state_array(state) -> np.ndarray:
    """A state the target returned (NumPy, a torch tensor with or without its graph, a JAX array) as NumPy."""
    if isinstance(state, np.ndarray):
        return state
    if type(state).__module__.startswith("torch"):
        return importlib.import_module(GRADIENT_PROBES["torch"]).state_array(state)
    return np.asarray(state)


def state_like(state, array: np.ndarray):
    """`array` as a state of the target's own type (NumPy, a torch tensor, a JAX array) and dtype."""
    if isinstance(state, np.ndarray):
        return np.asarray(array).astype(state.dtype)
    framework = "jax" if type(state).__module__.startswith(("jax", "jaxlib")) else "torch"
    return importlib.import_module(GRADIENT_PROBES[framework]).state_like(state, array)
