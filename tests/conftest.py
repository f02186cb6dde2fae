"""Test set-up of this folder: JAX computes in float64 inside every test, as the product does inside its scope.

Importing `linrnn.impls.jax` leaves JAX's 64-bit mode off (docs/precision.md). The tests build float64
parameters in module-level fixtures and helpers as well as in test bodies, so the whole session runs
inside one `linrnn.impls.jax.float64()` scope (thread-local; pytest runs tests in its main thread).
The float32 results do not depend on it: every array is created with an explicit dtype. The user's
default, float32 with the mode off, is checked by tests/impls/test_jax_float64.py, which leaves the
scope on purpose.
"""

import importlib.util

import pytest


@pytest.fixture(autouse=True, scope="session")
def jax_float64():
    if importlib.util.find_spec("jax") is None:      # the reference and torch work without JAX
        yield
        return
    from linrnn.impls.jax import float64
    with float64():
        yield
