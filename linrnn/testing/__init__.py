"""linrnn inside your own tests: the float64 reference, the tolerance table and the conform battery as functions.

    from linrnn.testing import assert_close, reference, check_layer, parametrize_with_checks, check_vjp, check_step

    assert_close(actual, expected, *, row="forward", dtype=None, length=None, max_abs_eigenvalue=None,
                 rtol=None, atol=None, equal_nan=False)
        actual first; NumPy, PyTorch or JAX arrays, or dicts of them; the tolerance table's bound
        (docs/precision.md), or the caller's rtol / atol; the message names the worst entry and the bound
    reference(bundle, u, *, mode=None, lengths=None, segments=None, state=None, return_state=False)
        the float64 NumPy reference on a bundle (a `linrnn.impls.bundle.Bundle`, a path to a `.npz` bundle,
        or a (params, config) pair)
    check_layer(target, kind, **config) -> Report
        the conform battery (`linrnn conform`) as a function; target: the factory `make(bundle, config) ->
        callable` that `linrnn conform module:function` calls, so one adapter serves both
    parametrize_with_checks({"mine": make, ...}, kind="lru", expected_failed_checks=None, **config)
        a pytest decorator: one case per check, variant and dtype, ids such as
        `mine-s5-bilinear-float32-impulse`, so that `-k` selects; known failures as strict xfails
    replay(path_or_case, make)  rerun one failing case alone, from the replay file it wrote
    check_vjp(call, u)       the input gradient by autodiff against the exact J^T w of the call's own forward
    check_step(step_fn, forward_fn, u)    the step mode token by token against the whole-sequence forward
    make_bundle(kind, d_model=4, d_state=4, seed=0, **config), spectral_radius(bundle)

Hypothesis strategies are in `linrnn.testing.strategies`; the pytest plugin (fixtures `linrnn_bundle` and
`linrnn_reference`, the marker `linrnn_conform`, the options `--linrnn-profile`, `--linrnn-dtypes`, `--linrnn-long`,
`--linrnn-very-long` and `--linrnn-replay`) in `linrnn.testing.plugin`. docs/testing.md shows a whole test file.

Importing this package imports nothing but the standard library: each name loads its module on first use, and
neither PyTorch nor JAX is imported unless an array of theirs is handed in.
"""

from __future__ import annotations

import importlib

# name -> the module that defines it (loaded on first use)
_NAMES = {
    "assert_close": "linrnn.testing.oracle",
    "reference": "linrnn.testing.oracle",
    "to_numpy": "linrnn.testing.oracle",
    "make_bundle": "linrnn.testing.oracle",
    "spectral_radius": "linrnn.testing.oracle",
    "check_layer": "linrnn.testing.battery",
    "parametrize_with_checks": "linrnn.testing.api",
    "replay": "linrnn.testing.api",
    "cases": "linrnn.testing.battery",
    "Case": "linrnn.testing.battery",
    "Report": "linrnn.testing.battery",
    "check_vjp": "linrnn.testing.calls",
    "check_step": "linrnn.testing.calls",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES))
