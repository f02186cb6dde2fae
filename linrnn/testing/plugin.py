"""linrnn's pytest plugin (entry point `pytest11`, name `linrnn`; `pytest -p no:linrnn` turns it off).

Inert where a run does not use it: loading it imports pytest and the standard library only (no NumPy, no PyTorch,
no JAX) and sets no environment variable (XLA_FLAGS is never touched); its fixtures import linrnn when a test
asks for them.

    @pytest.mark.linrnn_conform(kind="lru", d_model=4, d_state=4, seed=0, **config)
        the contract a test checks: `linrnn_bundle` is that layer's bundle (the paper's initialisation from
        `seed`; d_model and d_state default to 4; other config fields as given), `linrnn_reference(u, **kw)` the
        float64 reference on it (`linrnn.testing.reference`'s keywords: mode, lengths, segments, state,
        return_state)
    linrnn_dtype                 a fixture parametrized by --linrnn-dtypes ("float64", "float32")
    --linrnn-dtypes D[,D]        the dtypes checked: parametrize_with_checks' cases of other dtypes are
                                 deselected, and linrnn_dtype takes these (default: float64,float32)
    --linrnn-long L              the long check's length in parametrize_with_checks' cases (default 4096; 0
                                 skips it)
    --linrnn-very-long L         the very long check's (default 65537, past 2^16; 0 skips it)
"""

from __future__ import annotations

import pytest

DTYPES = ("float64", "float32")
LONG_DEFAULT = 4096          # linrnn.verify.conform.LONG_LENGTH, not imported here: this module stays light
VERY_LONG_DEFAULT = 65537    # linrnn.verify.conform.VERY_LONG_LENGTH
MARKER = ("linrnn_conform(kind, **config): the layer contract the test checks; the fixtures linrnn_bundle and "
          "linrnn_reference are that layer's bundle and its float64 reference")
# Read by linrnn.testing.battery when a case runs; the defaults hold where the plugin is not loaded.
SETTINGS: dict = {"dtypes": None, "long": None, "very_long": None}


def _dtypes(text: str) -> tuple[str, ...]:
    found = tuple(d.strip() for d in text.split(",") if d.strip())
    bad = [d for d in found if d not in DTYPES]
    if bad or not found:
        raise pytest.UsageError(f"--linrnn-dtypes: expected a comma-separated subset of {','.join(DTYPES)}, "
                                f"found {text!r}")
    return found


def _length(option: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise pytest.UsageError(f"{option}: expected a length >= 0 (0 skips the check), found {text!r}")
    return value


def pytest_addoption(parser):
    group = parser.getgroup("linrnn", "linrnn: conformance of linear RNN layers (linrnn.testing)")
    group.addoption("--linrnn-dtypes", default=None, metavar="D[,D]",
                    help=f"dtypes of linrnn's checks: {','.join(DTYPES)} (default both)")
    group.addoption("--linrnn-long", default=None, metavar="L",
                    help=f"length of linrnn's long check (default {LONG_DEFAULT}; 0 skips it)")
    group.addoption("--linrnn-very-long", default=None, metavar="L",
                    help=f"length of linrnn's very long check (default {VERY_LONG_DEFAULT}; 0 skips it)")


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER)
    text = config.getoption("--linrnn-dtypes")
    SETTINGS["dtypes"] = _dtypes(text) if text is not None else None
    for option, key in (("--linrnn-long", "long"), ("--linrnn-very-long", "very_long")):
        text = config.getoption(option)
        SETTINGS[key] = _length(option, text) if text is not None else None


def pytest_generate_tests(metafunc):
    if "linrnn_dtype" in metafunc.fixturenames:
        metafunc.parametrize("linrnn_dtype", SETTINGS["dtypes"] or DTYPES)


def pytest_collection_modifyitems(config, items):
    """Deselect parametrize_with_checks' cases of the dtypes --linrnn-dtypes leaves out."""
    wanted = SETTINGS["dtypes"]
    if not wanted:
        return
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        case = next((v for v in params.values() if getattr(v, "linrnn_case", False)), None)
        (drop if case is not None and case.dtype not in wanted else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _marker(request):
    marker = request.node.get_closest_marker("linrnn_conform")
    if marker is None:
        pytest.fail(f"{request.fixturename}: expected the test marked @pytest.mark.linrnn_conform(kind=...), found "
                    f"no such marker", pytrace=False)
    return marker


@pytest.fixture
def linrnn_bundle(request):
    """The bundle (`linrnn.impls.bundle.Bundle`: `.config`, `.params`) of the test's linrnn_conform marker."""
    marker = _marker(request)
    fields = dict(marker.kwargs)
    if marker.args:
        fields.setdefault("kind", marker.args[0])
    from linrnn.impls.errors import LinrnnError
    from linrnn.testing.oracle import make_bundle
    try:
        return make_bundle(**fields)
    except (LinrnnError, TypeError) as err:
        pytest.fail(f"@pytest.mark.linrnn_conform: {err}", pytrace=False)


@pytest.fixture
def linrnn_reference(linrnn_bundle):
    """u -> the float64 reference's y on linrnn_bundle (keywords as `linrnn.testing.reference`'s)."""
    from linrnn.testing.oracle import reference

    def call(u, **kwargs):
        return reference(linrnn_bundle, u, **kwargs)
    call.bundle = linrnn_bundle
    return call
