"""linrnn's pytest plugin (entry point `pytest11`, name `linrnn`; `pytest -p no:linrnn` turns it off).

Inert where a run does not use it: loading it imports pytest and the standard library only (no NumPy, no PyTorch,
no JAX) and sets no environment variable (XLA_FLAGS is never touched); its fixtures import linrnn when a test
asks for them.

    @pytest.mark.linrnn_conform(kind="lru", d_model=4, d_state=4, seed=0, **config)
        the contract a test checks: `linrnn_bundle` is that layer's bundle (the paper's initialisation from
        `seed`; d_model and d_state default to 4; other config fields as given), `linrnn_reference(u, **kw)` the
        float64 reference on it (`linrnn.testing.reference`'s keywords: mode, lengths, segments, state,
        return_state)
    linrnn_dtype                 a fixture parametrized by --linrnn-dtypes (default "float64", "float32")
    --linrnn-profile P           quick | default | full (PROFILES): quick is float32 only with no long checks (a
                                 pre-commit hook), default every check in every dtype the battery plans, full adds
                                 the random check at longer lengths; the options below override a profile's value
    --linrnn-dtypes D[,D]        the dtypes checked (float64, float32, bfloat16, float16): parametrize_with_checks'
                                 cases of other dtypes are deselected, and linrnn_dtype takes these (default: every
                                 dtype the battery plans; linrnn_dtype float64,float32)
    --linrnn-long L              the long check's length in parametrize_with_checks' cases (default 4096; 0
                                 leaves it out: deselected)
    --linrnn-very-long L         the very long check's (default 65537, past 2^16; 0 leaves it out)
    --linrnn-replay DIR|print|off  where a failing case writes its replay file (default .linrnn-replay under the
                                 directory pytest was started in); print: the failure shows the case as a literal
                                 instead; off: neither
"""

from __future__ import annotations

import pytest

DTYPES = ("float64", "float32")                          # linrnn_dtype's default
CHECK_DTYPES = ("float64", "float32", "bfloat16", "float16")   # what --linrnn-dtypes may name (the battery's)
LONG_DEFAULT = 4096          # linrnn.verify.conform.LONG_LENGTH, not imported here: this module stays light
VERY_LONG_DEFAULT = 65537    # linrnn.verify.conform.VERY_LONG_LENGTH
MARKER = ("linrnn_conform(kind, **config): the layer contract the test checks; the fixtures linrnn_bundle and "
          "linrnn_reference are that layer's bundle and its float64 reference")
# profile -> the settings it gives (None: the battery's default): dtypes, long and very long lengths, the random
# check's lengths
PROFILES: dict[str, dict] = {
    "quick": {"dtypes": ("float32",), "long": 0, "very_long": 0, "lengths": None},
    "default": {"dtypes": None, "long": None, "very_long": None, "lengths": None},
    "full": {"dtypes": None, "long": LONG_DEFAULT, "very_long": VERY_LONG_DEFAULT,       # every dtype it plans
             "lengths": (1, 2, 7, 16, 64, 255, 1024)},
}
REPLAY_DEFAULT = ".linrnn-replay"
# Read by linrnn.testing when a case is planned or runs; the defaults hold where the plugin is not loaded.
# invocation: the directory pytest was started in; pythonpath: the ini's `pythonpath` entries (the replay command)
SETTINGS: dict = {"dtypes": None, "long": None, "very_long": None, "lengths": None, "profile": "default",
                  "replay": REPLAY_DEFAULT, "invocation": None, "pythonpath": ()}


def _dtypes(text: str) -> tuple[str, ...]:
    found = tuple(d.strip() for d in text.split(",") if d.strip())
    bad = [d for d in found if d not in CHECK_DTYPES]
    if bad or not found:
        raise pytest.UsageError(f"--linrnn-dtypes: expected a comma-separated subset of {','.join(CHECK_DTYPES)}, "
                                f"found {text!r}")
    return found


def _length(option: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise pytest.UsageError(f"{option}: expected a length >= 0 (0 leaves the check out), found {text!r}")
    return value


def pytest_addoption(parser):
    group = parser.getgroup("linrnn", "linrnn: conformance of linear RNN layers (linrnn.testing)")
    group.addoption("--linrnn-profile", default=None, metavar="P",
                    help=f"linrnn's checks: {' | '.join(PROFILES)} (quick: float32, no long checks; default: every "
                         f"check; full: also the random check at longer lengths)")
    group.addoption("--linrnn-dtypes", default=None, metavar="D[,D]",
                    help=f"dtypes of linrnn's checks: a subset of {','.join(CHECK_DTYPES)} (default: every dtype the "
                         "battery plans)")
    group.addoption("--linrnn-long", default=None, metavar="L",
                    help=f"length of linrnn's long check (default {LONG_DEFAULT}; 0 leaves it out)")
    group.addoption("--linrnn-very-long", default=None, metavar="L",
                    help=f"length of linrnn's very long check (default {VERY_LONG_DEFAULT}; 0 leaves it out)")
    group.addoption("--linrnn-replay", default=None, metavar="DIR|print|off",
                    help=f"where a failing linrnn check writes its replay file (default {REPLAY_DEFAULT}); print: "
                         f"show the case in the message instead; off: neither")


def _profile(text: str | None) -> str:
    if text is None:
        return "default"
    if text not in PROFILES:
        raise pytest.UsageError(f"--linrnn-profile: expected one of {', '.join(PROFILES)}, found {text!r}")
    return text


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER)
    profile = _profile(config.getoption("--linrnn-profile"))
    SETTINGS.update(PROFILES[profile], profile=profile)
    text = config.getoption("--linrnn-dtypes")
    if text is not None:
        SETTINGS["dtypes"] = _dtypes(text)
    for option, key in (("--linrnn-long", "long"), ("--linrnn-very-long", "very_long")):
        text = config.getoption(option)
        if text is not None:
            SETTINGS[key] = _length(option, text)
    replay = config.getoption("--linrnn-replay")
    SETTINGS["replay"] = REPLAY_DEFAULT if replay is None else replay
    if not SETTINGS["replay"]:
        raise pytest.UsageError("--linrnn-replay: expected a folder, print or off, found ''")
    SETTINGS["invocation"] = str(config.invocation_params.dir)
    try:
        SETTINGS["pythonpath"] = tuple(str(p) for p in config.getini("pythonpath"))
    except (ValueError, KeyError):       # a pytest without the `pythonpath` ini option
        SETTINGS["pythonpath"] = ()


def pytest_generate_tests(metafunc):
    if "linrnn_dtype" in metafunc.fixturenames:
        metafunc.parametrize("linrnn_dtype", SETTINGS["dtypes"] or DTYPES)


def _left_out(case) -> bool:
    """A case of a dtype the run leaves out, or a long or very long check of length 0."""
    wanted = SETTINGS["dtypes"]
    if wanted and case.dtype not in wanted:
        return True
    return (case.check == "long" and not case.long()) or (case.check == "very-long" and not case.very_long())


def pytest_collection_modifyitems(config, items):
    """Deselect parametrize_with_checks' cases of the dtypes --linrnn-dtypes (or the profile) leaves out, and the long
    and very long checks of length 0."""
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        case = next((v for v in params.values() if getattr(v, "linrnn_case", False)), None)
        (drop if case is not None and _left_out(case) else keep).append(item)
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
    from linrnn.base.errors import LinrnnError
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
