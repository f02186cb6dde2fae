"""`assert_close` and `reference`: the tolerance table and the float64 reference, for a user's own arrays.

Arrays may be NumPy, PyTorch or JAX (or anything `numpy.asarray` reads); PyTorch and JAX are recognised by their
types' modules and never imported here.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from typing import Any, Mapping

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import FACTORS, LOW, compare

# NumPy's names of the dtypes an array can be compared in, and the tolerance table's row for each
DTYPE_ROWS = {"float64": "float64", "complex128": "float64", "float32": "float32", "complex64": "float32",
              "bfloat16": "bfloat16", "float16": "float16"}
TOLERANCE_ROWS = tuple(FACTORS)   # the tolerance table's rows: forward, state, gradient, identity


def _framework(x) -> str | None:
    module = type(x).__module__ or ""
    top = module.split(".")[0]
    return top if top in ("torch", "jax", "jaxlib") else None


def to_numpy(x, what: str = "array") -> tuple[np.ndarray, str]:
    """(the array as NumPy, its dtype's name as it came: 'float32', 'bfloat16', ...). A PyTorch tensor is detached
    and moved to the CPU; a bfloat16 array (which NumPy cannot hold) is widened to float32, exactly."""
    if _framework(x) == "torch":
        name = str(x.dtype).removeprefix("torch.")
        t = x.detach().cpu()
        if name == "bfloat16":
            t = t.float()
        if t.is_complex():
            t = t.resolve_conj()
        return t.numpy(), name
    if isinstance(x, tuple):      # a layer's (y, state): never stacked into one array
        raise LinrnnError(f"{what}: expected an array (NumPy, PyTorch or JAX), found a tuple of {len(x)} (a layer's "
                          f"(y, state)? pass y)")
    try:
        arr = np.asarray(x)
    except Exception as err:      # anything numpy cannot read
        raise LinrnnError(f"{what}: expected a NumPy, PyTorch or JAX array, found {type(x).__name__} "
                          f"({type(err).__name__}: {err})") from None
    if arr.dtype == object or arr.dtype.kind in "USVM":       # None, strings, bytes, datetimes: no numbers
        raise LinrnnError(f"{what}: expected a NumPy, PyTorch or JAX array, found {type(x).__name__}")
    name = str(arr.dtype)
    if name == "bfloat16":        # JAX's bfloat16 (ml_dtypes)
        arr = arr.astype(np.float32)
    return arr, name


def _row(name: str, where: str) -> str:
    if name not in DTYPE_ROWS:
        raise LinrnnError(f"{where}: expected a floating array (float64, float32, bfloat16, float16 or complex), "
                          f"found dtype {name}; pass dtype= to compare other arrays")
    return DTYPE_ROWS[name]


def _deprecated_kind(row: str, kind: str | None) -> str:
    """`assert_close`'s `kind=`, the row's former name: it still selects the row, with a DeprecationWarning."""
    if kind is None:
        return row
    warnings.warn("assert_close: kind= is deprecated, pass row= (the tolerance table's row)", DeprecationWarning,
                  stacklevel=3)
    return kind


def _check_bounds(rtol, atol, equal_nan) -> None:
    for label, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float, np.floating))
                                  or not value >= 0):
            raise LinrnnError(f"{label}: expected a number >= 0 (or None), found {value!r}")
    if not isinstance(equal_nan, (bool, np.bool_)):
        raise LinrnnError(f"equal_nan: expected True or False, found {equal_nan!r}")


def _same_nonfinite(got: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray, str | None]:
    """equal_nan: NaN where both are NaN and Inf where both are the same Inf count as equal and become 0 in both;
    any other NaN or Inf is named (its first index)."""
    both = (np.isnan(got) & np.isnan(ref)) | (np.isinf(got) & (got == ref))
    other = ~both & ~(np.isfinite(got) & np.isfinite(ref))
    if np.any(other):
        at = tuple(int(i) for i in np.argwhere(other)[0])
        return got, ref, (f"NaN/Inf at index {at} in one only: actual {got[at].item()}, expected {ref[at].item()} "
                          f"({int(other.sum())} such entries; equal_nan=True matches NaN with NaN, Inf with the same "
                          f"Inf)")
    return np.where(both, 0, got), np.where(both, 0, ref), None


def _caller_bound(result, ref: np.ndarray, rtol, atol):
    """The Comparison judged by the caller's bound: max|actual - expected| <= atol + rtol max|expected| (rtol None:
    the table's)."""
    rtol_used = result.rtol if rtol is None else float(rtol)
    atol = float(atol or 0.0)
    top = float(np.max(np.abs(ref))) if ref.size else 0.0
    bound = atol + rtol_used * top
    why = (f"the caller's rtol={rtol_used:.3e}" if rtol is not None
           else f"the table's {result.rtol:.3e} [{result.why}]")
    why += f" and atol={atol:.3e}" if atol else ""
    return dataclasses.replace(result, rtol=bound / top if top > 0 else (np.inf if bound > 0 else 0.0),
                               ok=result.max_abs <= bound, why=why)


def assert_close(actual, expected, *, row: str = "forward", dtype: str | None = None, length: int | None = None,
                 max_abs_eigenvalue: float | None = None, rtol: float | None = None, atol: float | None = None,
                 equal_nan: bool = False, name: str = "actual", kind: str | None = None):
    """Assert that `actual` is within the tolerance table's bound of `expected` (docs/precision.md).

    actual, expected  arrays of one shape (NumPy, PyTorch, JAX), or dicts of them with the same keys
    row           the table's row: 'forward' (outputs), 'state', 'gradient' or 'identity' (`kind`, its former
                  name, still works and warns: DeprecationWarning)
    dtype         the precision `actual` was computed in ('float64', 'float32', 'bfloat16', 'float16'); None:
                  `actual`'s own dtype
    length        the sequence length L behind each entry; None: the second-last axis of a (..., L, H) array
                  (1 for a vector)
    max_abs_eigenvalue  the largest |eigenvalue| of the recurrence; None: unknown, and the whole length counts
                  (the bound's memory is min(L, 1 / (1 - r)))
    rtol, atol    the caller's own bound instead of the table's: max|actual - expected| <= atol + rtol max|expected|
                  (normwise, as the table's; rtol None keeps the table's relative bound, atol adds to it)
    equal_nan     NaN in both at one index (and the same Inf) count as equal; any other NaN/Inf still fails
    Returns the `Comparison` (or a dict of them); raises AssertionError naming the worst entry and the bound.
    """
    __tracebackhide__ = True
    row = _deprecated_kind(row, kind)
    _check_bounds(rtol, atol, equal_nan)
    if row not in TOLERANCE_ROWS:
        raise LinrnnError(f"row: expected one of {', '.join(TOLERANCE_ROWS)}, found {row!r}")
    if isinstance(actual, Mapping) or isinstance(expected, Mapping):
        if not (isinstance(actual, Mapping) and isinstance(expected, Mapping)):
            raise LinrnnError(f"assert_close: expected two dicts or two arrays, found {type(actual).__name__} and "
                              f"{type(expected).__name__}")
        if set(actual) != set(expected):
            missing, extra = sorted(set(expected) - set(actual), key=str), sorted(set(actual) - set(expected), key=str)
            raise AssertionError(f"{name}: the keys differ: missing {missing}, not expected {extra}")
        out, failures = {}, []
        for key in expected:
            try:
                out[key] = assert_close(actual[key], expected[key], row=row, dtype=dtype, length=length,
                                        max_abs_eigenvalue=max_abs_eigenvalue, rtol=rtol, atol=atol,
                                        equal_nan=equal_nan, name=f"{name}[{key!r}]")
            except AssertionError as err:
                failures.append(str(err))
        if failures:
            raise AssertionError("\n".join(failures))
        return out
    got, got_dtype = to_numpy(actual, "actual")
    ref, _ = to_numpy(expected, "expected")
    computed = _row(got_dtype, "actual") if dtype is None else dtype
    if computed not in ("float64", "float32", *LOW):
        raise LinrnnError(f"dtype: expected float64, float32, bfloat16 or float16, found {computed!r}")
    if got.shape != ref.shape:
        raise AssertionError(f"{name}: shape {got.shape}, expected {ref.shape}")
    if length is None:
        length = got.shape[-2] if got.ndim >= 2 else 1
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise LinrnnError(f"length: expected a positive integer, found {length!r}")
    radius = 1.0 if max_abs_eigenvalue is None else float(max_abs_eigenvalue)
    if not radius >= 0:
        raise LinrnnError(f"max_abs_eigenvalue: expected a number >= 0, found {max_abs_eigenvalue!r}")
    if equal_nan:
        got, ref, why = _same_nonfinite(got, ref)
        if why:
            raise AssertionError(f"{name}: {why}")
    result = compare(name, ref, got, row, computed, int(length), radius)
    if (rtol is not None or atol) and np.all(np.isfinite(got)) and np.all(np.isfinite(ref)):
        result = _caller_bound(result, ref, rtol, atol)
    if not result.ok:
        raise AssertionError(_message(name, ref, got, result))
    return result


def _message(name: str, ref: np.ndarray, got: np.ndarray, result) -> str:
    """The failure in words: the worst entry's index and values, the error measure and the bound."""
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(ref))):
        bad = np.argwhere(~np.isfinite(got)) if not np.all(np.isfinite(got)) else np.argwhere(~np.isfinite(ref))
        where = "actual" if not np.all(np.isfinite(got)) else "expected"
        return (f"{name}: {len(bad)} NaN/Inf in {where}, the first at index {tuple(int(i) for i in bad[0])}; "
                f"bound {result.rtol:.3e} [{result.why}]")
    diff = np.abs(got.astype(np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(ref) else np.float64) - ref)
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape)) if diff.ndim else ()
    return (f"{name}: relative error {result.rel:.3e} exceeds the bound {result.rtol:.3e}; worst entry at index "
            f"{worst}: actual {got[worst].item():.10g}, expected {ref[worst].item():.10g} (|difference| {result.max_abs:.3e}, "
            f"max |expected| {float(np.max(np.abs(ref))):.3e}); the bound: {result.why}")


# -- the reference ------------------------------------------------------------------------------

def _bundle(bundle) -> tuple[Any, dict[str, np.ndarray]]:
    """(config, params) of a Bundle, a path to a bundle file, or a (params, config) pair (config: a config object
    or its dict, `config_to_dict`)."""
    from linrnn.impls.bundle import Bundle, load
    from linrnn.impls.config import config_from_dict
    if isinstance(bundle, (str, os.PathLike)):
        bundle = load(bundle)
    if isinstance(bundle, Bundle):
        return bundle.config, dict(bundle.params)
    if isinstance(bundle, tuple) and len(bundle) == 2 and isinstance(bundle[0], Mapping):
        params, config = bundle
        if isinstance(config, Mapping):
            config = config_from_dict(dict(config))
        made = Bundle(config, {k: np.asarray(v, dtype=np.float64) for k, v in params.items()})
        return made.config, dict(made.params)
    raise LinrnnError(f"bundle: expected a linrnn Bundle, a path to a .npz bundle or a (params, config) pair, found "
                      f"{type(bundle).__name__}")


def reference(bundle, u, *, mode: str | None = None, lengths=None, segments=None, state=None,
              return_state: bool = False):
    """The float64 reference (`linrnn.impls.reference`) of a layer or model bundle on u (B L H) -> y (B L H).

    mode      the reference's view: None the kind's default ('sequential'; attention 'full'; DLR with a truncated
              kernel 'conv', its definition), or 'conv'
    lengths   (B,) padded rows, each row's valid part computed as if alone, 0 at the padding
    segments  (B L) packed sequences (a layer), each computed as if alone
    state     a layer's state to start from (the reference's layout, docs/models.md); None: zeros
    return_state  return (y, the state after the last step) instead of y (a layer)
    The arrays may be NumPy, PyTorch or JAX; the results are float64 NumPy.
    """
    from linrnn.impls.config import ModelConfig
    from linrnn.impls.reference import apply_bundle, apply_mixer
    config, params = _bundle(bundle)
    u = to_numpy(u, "u")[0]
    lengths = None if lengths is None else to_numpy(lengths, "lengths")[0]
    segments = None if segments is None else to_numpy(segments, "segments")[0]
    if isinstance(config, ModelConfig):
        if state is not None or return_state:
            raise LinrnnError("state: a model bundle's reference takes no state and returns none; use a layer bundle")
        from linrnn.impls.bundle import Bundle
        return apply_bundle(Bundle(config, params), u, mode or "sequential", lengths=lengths, segments=segments)
    x0 = None if state is None else to_numpy(state, "state")[0]
    if mode is None and getattr(config, "max_kernel_length", None) and state is None and not return_state:
        mode = "conv"          # DLR with a truncated kernel: the kernel is the model's definition (docs/models.md)
    y, x = apply_mixer(config, params, u.astype(np.float64), mode, x0, lengths, segments)
    return (y, x) if return_state else y


def with_radius(bundle, r: float):
    """`bundle` with every eigenvalue's modulus r, phases kept, through its model's own `ModelSpec.with_radius` (the
    registry's: no field names here); a model without eigenvalues, or a config its rule cannot place (S5's bilinear
    one), is the model's one-line error."""
    from linrnn.impls.specs import spec
    place = spec(bundle.config.kind).with_radius
    if place is None:
        raise LinrnnError(f"radius: {bundle.config.kind} has no eigenvalues to place (its spec has no "
                          f"with_radius)")
    return bundle.replace(**place(bundle.config, bundle.params, r))


def make_bundle(kind: str | None = None, *, d_model: int = 4, d_state: int = 4, seed: int = 0,
                radius: float | None = None, **config):
    """A layer bundle of `kind` from the paper's initialisation (`linrnn params init --layer-only`): d_model H,
    d_state N (where the kind has one), other config fields as given (RotRNN's heads default to 2); radius: every
    eigenvalue's |lambda| set to it, phases kept (`with_radius`). A bundle that `linrnn.testing.strategies` draws
    prints as the call of this function that makes it again."""
    import dataclasses

    from linrnn.impls.config import MIXER_CONFIGS
    from linrnn.impls.init import init
    kinds = dict(MIXER_CONFIGS)
    if kind not in kinds:
        raise LinrnnError(f"kind: expected one of {', '.join(kinds)}, found {kind!r}")
    cls = kinds[kind]
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(config) - names)
    if unknown:
        raise LinrnnError(f"a {kind} config has no field(s) {', '.join(unknown)} (expected some of "
                          f"{', '.join(sorted(names))})")
    sizes = {"d_model": d_model}
    if "d_state" in names:
        sizes["d_state"] = d_state
    if kind == "rotrnn":
        sizes["heads"] = 2
    bundle = init(cls(**{**sizes, **config}), seed)
    if radius is None:
        return bundle
    if isinstance(radius, bool) or not isinstance(radius, (int, float)) or not 0 <= radius < 1:
        raise LinrnnError(f"radius: expected a number in [0, 1), found {radius!r}")
    return with_radius(bundle, float(radius))


def spectral_radius(bundle) -> float:
    """The largest |eigenvalue| of a layer bundle's recurrence: `assert_close`'s `max_abs_eigenvalue`."""
    from linrnn.impls.reference import spectral_radius as radius
    config, params = _bundle(bundle)
    return radius(config, params)
