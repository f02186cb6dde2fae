"""`linrnn conform` (`linrnn.verify.conform`): each planted deviation is named, the project's own layers conform,
bad input is a one-line error, and the peers' real behaviour is what is known about them.

Each planted target is the float64 reference plus one bug, written here; conform must find it by its probes.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from linrnn.base import results
from linrnn.impls import specs
from linrnn.verify import conform, conform_bundles
from linrnn.impls.config import RECURRENT_KINDS, config_from_dict, config_to_dict
from linrnn.impls.reference import apply_mixer

DOCS = Path(__file__).resolve().parents[2] / "docs" / "conform.md"
F64 = ("float64",)


@pytest.fixture(autouse=True)
def no_very_long_check(request, monkeypatch):
    """The very long check (L = 2^16 + 1: about a second of reference per dtype) runs in the tests about it (named
    `..._very_long_...`); the others leave it out, as `linrnn conform --very-long 0` does."""
    if "very_long" not in request.node.name:
        monkeypatch.setattr(conform_bundles, "VERY_LONG_LENGTH", 0)


def keys(result: conform.Result) -> set[str]:
    return {d.key for d in result.diagnoses()}


def failed(result: conform.Result) -> set[str]:
    return {f"{c.name} ({c.dtype})" for c in result.checks if c.status == "fail"}


def planted(bug):
    """A target on the reference: bug(cfg, bundle, u, state) -> (y, state) replaces the exact layer."""
    def build(bundle, config):
        cfg = config_from_dict(config)

        def call(u, state=None):
            return bug(cfg, bundle, u, state)
        return call
    return build


def exact(cfg, p, u, state):
    """The reference: sequential, or for a truncated DLR kernel its own view, conv (no state)."""
    return apply_mixer(cfg, p, u, "conv" if getattr(cfg, "max_kernel_length", None) else "sequential", state)


# -- planted deviations ----------------------------------------------------------------------

def dense_D(cfg, p, u, state):
    y, x = exact(cfg, p, u, state)
    off = np.random.default_rng(1).standard_normal((cfg.d_model, cfg.d_model)) / np.sqrt(cfg.d_model)
    np.fill_diagonal(off, 0.0)
    return y + u @ off.T, x                       # D as a dense matrix: diag(D) plus off-diagonal entries


def state_dropped(cfg, p, u, state):
    return exact(cfg, p, u, None)


def state_batch0(cfg, p, u, state):
    if state is not None:
        state = state.copy()
        state[1:] = 0.0                             # only the first sequence continues
    return exact(cfg, p, u, state)


def half_output(cfg, p, u, state):
    y, x = exact(cfg, p, u, state)
    return p["D"] * u + 0.5 * (y - p["D"] * u), x


def double_output(cfg, p, u, state):
    y, x = exact(cfg, p, u, state)
    return p["D"] * u + 2.0 * (y - p["D"] * u), x


def float32_only(cfg, p, u, state):
    rounded = {k: v.astype(np.float32).astype(np.float64) for k, v in p.items()}
    y, x = exact(cfg, rounded, u.astype(np.float32).astype(np.float64), state)
    return y.astype(np.float32), x


def forward_only(cfg, p, u, state):
    if not cfg.bidirectional:
        return exact(cfg, p, u, state)
    uni = config_from_dict({**config_to_dict(cfg), "bidirectional": False})
    return exact(uni, {k: v for k, v in p.items() if "_rev" not in k}, u, None)


def backward_causal(cfg, p, u, state):
    """The backward part run forward in time: its time reversal, so it sees the past instead of the future."""
    if not cfg.bidirectional:
        return exact(cfg, p, u, state)
    y_uni, _ = forward_only(cfg, p, u, None)
    flipped = u[:, ::-1]
    backward = exact(cfg, p, flipped, None)[0] - forward_only(cfg, p, flipped, None)[0]
    return y_uni + backward[:, ::-1], None


@pytest.mark.parametrize("kind", RECURRENT_KINDS)
@pytest.mark.parametrize("bug, key", [
    (dense_D, "dense_D"), (state_dropped, "state_not_carried"), (state_batch0, "state_batch0"),
    (forward_only, "backward_missing"), (backward_causal, "backward_not_anticausal"),
])
def test_each_planted_deviation_is_named(kind, bug, key):
    result = conform.run(planted(bug), kind, F64, (1, 8))
    assert not result.ok and keys(result) == {key}, conform.format_result(result)
    assert result.diagnoses()[0].words.startswith(SENTENCES[key]), result.diagnoses()[0].words


# What the user reads for each deviation, written out here (not read from the code that words it)
SENTENCES = {
    "dense_D": "D is applied as a dense matrix, not elementwise: the impulse responses at lag 0 err off the diagonal by",
    "state_not_carried": "the state is not carried between calls: the second call equals a start from zero",
    "state_batch0": "the state is applied to batch element 0 only: rows 1.. of the second call start from zero",
    "backward_missing": "the backward direction is missing: the bidirectional output equals the forward-only one",
    "backward_not_anticausal": "the backward direction is not anti-causal: it responds after the input",
}


@pytest.mark.parametrize("kind", [k for k in specs.kinds() if specs.spec(k).readout is not None])   # a complex read-out
@pytest.mark.parametrize("bug, key", [(half_output, "factor_missing"), (double_output, "factor_doubled")])
def test_a_factor_2_is_named(kind, bug, key):
    """The factor 2 of conjugate symmetry where the read-out has it (S4D, S5: 2 Re(C x)); elsewhere (the LRU's and
    DLR's Re(C x)) a constant factor, with its value."""
    result = conform.run(planted(bug), kind, F64, (1, 8))
    key = key if specs.spec(kind).readout[2] == 2 else "factor"      # the read-out's factor before Re
    assert key in keys(result) and "impulse (float64)" in failed(result), conform.format_result(result)
    words = next(d.words for d in result.diagnoses() if d.key == key)
    assert ("0.5 x" if bug is half_output else "2 x") in words


def test_float32_arithmetic_is_named_in_float64_and_passes_in_float32():
    result = conform.run(planted(float32_only), "lru", ("float64", "float32"), (1, 8))
    assert keys(result) == {"float32_only"}, conform.format_result(result)
    assert all(c.status != "fail" for c in result.checks if c.dtype == "float32")
    assert "its output has dtype float32" in result.diagnoses()[0].words


def in_float32(bug):
    """`bug`, its output rounded to float32: a second deviation on top of the first."""
    def rounded(cfg, p, u, state):
        y, x = bug(cfg, p, u, state)
        return y.astype(np.float32), x
    return rounded


# each planted bug on one kind that has the part it breaks (all of them on every kind: above, in float64)
@pytest.mark.parametrize("kind, bug, key", [("lru", dense_D, "dense_D"), ("dlr", forward_only, "backward_missing"),
                                            ("s5", half_output, "factor_missing"),
                                            ("rotrnn", state_batch0, "state_batch0")])
def test_a_deviation_in_float32_arithmetic_is_named_with_it(kind, bug, key):
    result = conform.run(planted(in_float32(bug)), kind, F64, (1, 8))
    assert causes(result) == {key, "float32_only"}, conform.format_result(result)


def causes(result: conform.Result) -> set[str]:
    """The named deviations less the checks that follow another check's deviation ("follows the output's
    deviation": e.g. the small-steps check of a layer whose output is already off by a factor)."""
    return {k for k in keys(result) if not k.endswith("_follows_output")}


def docs_adapter() -> str:
    """The adapter docs/conform.md shows (its first Python block)."""
    return re.search(r"```python\n(.*?)```", DOCS.read_text(), flags=re.S).group(1)


def test_the_docs_adapter_conforms_and_its_imaginary_part_is_named(cli, tmp_path, monkeypatch):
    source = docs_adapter()
    (tmp_path / "my_lru.py").write_text(source)
    (tmp_path / "my_lru_imag.py").write_text(source.replace("(x @ C.T).real", "(x @ C.T).imag"))
    monkeypatch.chdir(tmp_path)                               # importable from the working directory
    code, out, _ = cli.run("conform", "my_lru:lru", "--model", "lru", "--lengths", "1", "8",
                           "--json", tmp_path / "ok.json")
    assert code == 0 and out.strip().splitlines()[-1].startswith("conforms"), out
    record = results.read(tmp_path / "ok.json", results.ConformRecord).result
    assert record["conforms"] is True and record["diagnoses"] == []
    assert {(c["name"], c["status"]) for c in record["checks"]} >= {("bidirectional", "n/a"), ("state", "pass"),
                                                                      ("gradient", "n/a"), ("impulse", "pass")}

    code, out, _ = cli.run("conform", "my_lru_imag:lru", "--model", "lru", "--dtype", "float64", "--lengths", "8")
    assert code == 1 and "the output is not the real part of C x: its recurrent part is 1 x the imaginary part" in out


def test_a_gradient_that_is_not_the_adjoint_is_named():
    torch = pytest.importorskip("torch")

    def build(bundle, config):
        cfg = config_from_dict(config)

        class Layer(torch.autograd.Function):
            @staticmethod
            def forward(ctx, u):
                return torch.from_numpy(exact(cfg, bundle, u.detach().numpy(), None)[0])

            @staticmethod
            def backward(ctx, w):                 # J w, the forward map, where J^T w is due
                return torch.from_numpy(exact(cfg, bundle, w.numpy(), None)[0])

        return lambda u: Layer.apply(u) if isinstance(u, torch.Tensor) else Layer.apply(torch.from_numpy(u)).numpy()

    result = conform.run(build, "lru", F64, (1, 8))
    assert keys(result) == {"gradient_not_adjoint"} and failed(result) == {"gradient (float64)"}


# -- the checks from users' bug reports: hand-over, short and very long inputs, packing, padding --------------------

def packed(bug=None):
    """A target on the reference that takes lengths= and segments= (padded rows, packed sequences), with `bug`:
    'no_reset' (segments ignored), 'leak' (lengths ignored, then the padding zeroed), 'pad_not_zero' (the padded
    positions left at 1)."""
    def build(bundle, config):
        cfg = config_from_dict(config)

        def call(u, state=None, lengths=None, segments=None):
            if segments is not None:
                return exact(cfg, bundle, u, None)[0] if bug == "no_reset" else \
                    apply_mixer(cfg, bundle, u, "sequential", segments=segments)[0], None
            if lengths is not None:
                valid = (np.arange(u.shape[1])[None, :] < np.asarray(lengths)[:, None])[..., None]
                if bug == "leak":
                    return np.where(valid, exact(cfg, bundle, u, None)[0], 0.0), None
                y = apply_mixer(cfg, bundle, u, "sequential", lengths=lengths)[0]
                return (np.where(valid, y, 1.0) if bug == "pad_not_zero" else y), None
            return exact(cfg, bundle, u, state)
        return call
    return build


def state_lost_alone(cfg, p, u, state):
    """A one-position call (the step path) starts from zero: only hand-overs into a single token show it."""
    return exact(cfg, p, u, None if u.shape[1] == 1 else state)


def wrong_when_short(cfg, p, u, state):
    y, x = exact(cfg, p, u, state)
    return (y * 1.5 if u.shape[1] in (2, 3) else y), x


def tail_restarts(cfg, p, u, state):
    """A chunked route that loses the carry into its chunk past 2^16 (its tail starts from zero)."""
    if u.shape[1] <= 2**16:
        return exact(cfg, p, u, state)
    head, x = exact(cfg, p, u[:, :2**16], state)
    return np.concatenate([head, exact(cfg, p, u[:, 2**16:], None)[0]], axis=1), None


def new_checks(result):
    return {c.name: c for c in result.checks if c.name in ("state hand-over", "lengths 1-8", "packing", "padding")
            or c.name.startswith("very long")}


def test_a_state_lost_in_one_token_calls_is_named_by_the_hand_over_alone():
    result = conform.run(planted(state_lost_alone), "lru", F64, (8,), long_length=0)
    assert failed(result) == {"state hand-over (float64)"}, conform.format_result(result)     # the old split passes
    assert keys(result) == {"state_not_carried"}


def test_wrong_short_lengths_are_named():
    result = conform.run(planted(wrong_when_short), "s5", F64, (1, 7, 16), long_length=0)
    assert failed(result) == {"lengths 1-8 (float64)"}, conform.format_result(result)
    words = result.diagnoses()[0].words
    assert words.startswith("the output is wrong at L = 2, 3 and conforms at L = 1, 4, 5, 6, 7, 8")


def test_the_very_long_check_names_a_lost_tail_chunk():
    result = conform.run(planted(tail_restarts), "lru", F64, (8,), long_length=0, very_long_length=2**16 + 8)
    assert failed(result) == {f"very long L={2**16 + 8} (float64)"}, conform.format_result(result)
    assert result.diagnoses()[0].words.startswith(f"the output departs from the reference from position t = 65536 of "
                                                  f"L = {2**16 + 8} on, conforming before it")


@pytest.mark.parametrize("kind", ["lru", "s5"])   # `packed()` is written for the LRU's parameters and S5's equal form
def test_packing_and_padding_pass_a_faithful_target_and_name_each_bug(kind):
    ok = new_checks(conform.run(packed(), kind, F64, (1, 8), long_length=0))
    assert {n: c.status for n, c in ok.items()} == {n: "pass" for n in ("state hand-over", "lengths 1-8", "packing",
                                                                         "padding")}
    assert "bidirectional" in ok["padding"].detail                   # the padding check runs the backward scan
    for bug, check, key in (("no_reset", "packing", "packing_no_reset"), ("leak", "padding", "padding_leaks"),
                            ("pad_not_zero", "padding", "padding_not_zero")):
        result = conform.run(packed(bug), kind, F64, (1, 8), long_length=0)
        assert failed(result) == {f"{check} (float64)"} and keys(result) == {key}, conform.format_result(result)


def test_packing_and_padding_do_not_apply_without_their_parameters():
    checks = new_checks(conform.run(planted(exact), "dlr", F64, (8,), long_length=0))
    assert checks["packing"].status == checks["padding"].status == "n/a"
    assert checks["padding"].detail == "the callable takes no lengths= (padded rows)"


def test_the_projects_layers_pass_the_very_long_check():
    pytest.importorskip("torch")
    result = conform.run("linrnn-torch", "s5", F64, (8,), long_length=0)
    assert result.ok and result.checks[[c.name for c in result.checks].index(f"very long L={2**16 + 1}")].rel < 1e-12


# -- the project's own layers ------------------------------------------------------------------

@pytest.mark.parametrize("kind", RECURRENT_KINDS)
def test_the_projects_torch_layers_conform(kind):
    pytest.importorskip("torch")
    result = conform.run("linrnn-torch", kind)
    assert result.ok, conform.format_result(result)
    assert {c.status for c in result.checks} == {"pass"}        # every check applies, gradients included


@pytest.mark.slow
def test_the_projects_jax_layer_conforms(cli):
    """One kind and dtype: JAX compiles each shape and config of the battery (about 13 s here); the crosscheck
    matrix covers the JAX side's kinds and dtypes."""
    pytest.importorskip("jax")
    code, out, _ = cli.run("conform", "linrnn-jax", "--model", "lru", "--dtype", "float64", "--lengths", "1", "8")
    assert code == 0 and "gradient (float64): relative error" in out and "n/a" not in out, out


# -- bad input -----------------------------------------------------------------------------------

BAD_TARGETS = {
    "no_call": "def build(bundle, config):\n    return 3\n",
    "wrong_shape": "def build(bundle, config):\n    return lambda u: u[:, :, :1]\n",
    "nan": "import numpy as np\ndef build(bundle, config):\n    return lambda u: u * np.nan\n",
    "complex": "def build(bundle, config):\n    return lambda u: u + 1j\n",
    "no_tuple": "def build(bundle, config):\n    return lambda u, state=None: u\n",
    "raises": "def build(bundle, config):\n    raise KeyError('C')\n",
    "broken": "import no_such_module_here\n",
    "not_a_function": "build = 3\n",
}


@pytest.mark.parametrize("target, message", [
    ("no_call:build", "target no_call:build: function(bundle, config) returned int, expected a callable u -> y"),
    ("wrong_shape:build", "target wrong_shape:build: impulse: expected an output of shape (3, 8, 3) (B, L, H), "
                          "found (3, 8, 1)"),
    ("nan:build", "target nan:build: impulse: expected finite outputs, found 72 NaN/Inf"),
    ("complex:build", "target complex:build: impulse: expected a real output, found dtype complex128"),
    ("no_tuple:build", "target no_tuple:build: a callable with a state parameter must return (y, state), "
                       "found ndarray"),
    ("raises:build", "target raises:build: building it for lru raised KeyError: 'C'"),
    ("broken:build", "target broken:build: cannot import 'broken' (ModuleNotFoundError: No module named "
                     "'no_such_module_here')"),
    ("not_a_function:build", "target not_a_function:build: expected a function(bundle, config), found int"),
    ("missing:build", "target missing:build: cannot import 'missing' (ModuleNotFoundError: No module named "
                      "'missing')"),
    ("wrong_shape:absent", "target wrong_shape:absent: module 'wrong_shape' has no attribute 'absent'"),
    ("lru", f"target: expected module:function or one of {', '.join(conform.BUILTINS)}, found 'lru'"),
])
def test_bad_input_is_a_one_line_error(cli, tmp_path, monkeypatch, target, message):
    for name, source in BAD_TARGETS.items():
        (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    assert cli.error_line("conform", target, "--model", "lru", "--lengths", "8") == f"linrnn conform: error: {message}"


def test_bad_lengths_and_peer_kinds(cli):
    assert cli.error_line("conform", "linrnn-torch", "--model", "lru", "--lengths", "0", "4") == \
        "linrnn conform: error: --lengths: expected positive integers, found 0 4"
    peer_or_skip("lru-pytorch")
    assert cli.error_line("conform", "lru-pytorch", "--model", "dlr") == \
        "linrnn conform: error: lru-pytorch implements lru, found --model dlr"


# -- the peers ---------------------------------------------------------------------------------------

def peer_or_skip(name: str) -> None:
    pytest.importorskip("torch")
    reason = conform.unavailable(name)
    if reason:
        pytest.skip(reason)


def test_lru_pytorch_as_known():
    """Measured (seed 0, lengths 1 7 16): D dense (lag-0 off-diagonal error 1.04; lags >= 1: 4.5e-8 in float64,
    1.4e-6 in float32); float64 at the float32 level (its output buffers are float32); the state reaches batch
    element 0 only (error 0.74 against its single call); no backward scan (n/a); its gradient follows the output."""
    peer_or_skip("lru-pytorch")
    result = conform.run("lru-pytorch", "lru")
    assert keys(result) == {"dense_D", "float32_only", "state_batch0", "gradient_follows_output",
                            "state_gradient_follows_output", "short_lengths_follows_output"}, \
        conform.format_result(result)
    assert result.verdict == "deviates"
    by = {(c.name, c.dtype): c for c in result.checks}
    bidirectional = by["bidirectional", "float64"]
    assert bidirectional.status == "n/a" and "no backward scan" in bidirectional.detail
    impulse = next(d for d in by["impulse", "float32"].diagnoses if d.key == "dense_D")
    assert "lags >= 1 by" in impulse.words and float(impulse.words.split("lags >= 1 by ")[1]) < 6.1e-5
    assert [d.key for d in by["state", "float32"].diagnoses] == ["state_batch0"]


def test_s5_pytorch_as_an_lru_as_known():
    """Measured (seed 0, lengths 1 7 16): every float32 check passes (worst 1.4e-6 against 6.1e-5, the lags >= 1
    at radius near 1); in float64 every output is off at the float32 level (1.3e-8 on the impulses): its
    `as_complex` casts B_tilde to complex64 whatever the parameter's dtype. States carry over (1.1e-16)."""
    peer_or_skip("s5-pytorch")
    result = conform.run("s5-pytorch", "lru")
    assert keys(result) == {"float32_only"}, conform.format_result(result)
    assert result.verdict == "conforms (float32 only)"       # right, but not in float64 (issue 47)
    unsupported = {"packing", "padding", "parameter gradient", "step"}    # no segments=, lengths=, params=, step
    assert all(c.status == "pass" for c in result.checks if c.dtype == "float32" and c.name not in unsupported)
    assert {c.status for c in result.checks if c.name in unsupported} == {"n/a"}
    assert {c.name for c in result.checks if c.status == "pass" and c.dtype == "float64"} == {"state",
                                                                                              "state hand-over",
                                                                                              "state gradient"}
    assert {c.status for c in result.checks if c.dtype in ("bfloat16", "float16")} == {"n/a"}   # complex params


def test_s5_pytorch_as_an_s5_as_known():
    """Measured (seed 0, lengths 1 7 16): the recurrent part of every output is 0.5 x the contract's 2 Re(C x)
    (fit error 8.0e-9 in float64, the float32 level: B_tilde cast to complex64), the backward part too; its B_bar
    is (Lambda_bar - 1) / Lambda, so the error at lags >= 1 grows as Delta shrinks (expm1); the skip and the state
    hand-over conform (3.0e-18 in float64)."""
    peer_or_skip("s5-pytorch")
    result = conform.run("s5-pytorch", "s5")
    assert keys(result) == {"factor_missing", "float32_only", "expm1", "gradient_follows_output",
                            "steps_follows_output", "short_lengths_follows_output"}, conform.format_result(result)
    by = {(c.name, c.dtype): c for c in result.checks}
    backward = by["bidirectional", "float32"].diagnoses
    assert [d.key for d in backward] == ["factor_missing"]
    assert "the backward part is 0.5 x the contract's 2 Re(C_rev x_bwd)" in backward[0].words
    assert by["state", "float64"].status == "pass" and by["state", "float32"].status == "pass"


# -- variants, --set, the discretisation probes ---------------------------------------------------

def s5_rule(rule):
    """An S5 in NumPy on the target's dtype: `rule(z = Delta Lambda, Delta, Lambda) -> (Lambda_bar, g)`, B_bar = g B~,
    for each discretisation the config names (a dict); forward only."""
    def build(bundle, config, dtype="float64"):
        cfg = config_from_dict(config)
        if cfg.bidirectional:
            raise NotImplementedError("forward scan only")
        real, cplx = (np.float32, np.complex64) if dtype == "float32" else (np.float64, np.complex128)
        re = np.minimum(bundle["Lambda_re"], cfg.CLIP_RE) if cfg.clip_eigs else bundle["Lambda_re"]
        Lam = (re + 1j * bundle["Lambda_im"]).astype(cplx)
        delta = np.exp(bundle["log_step"]).astype(real)
        lam, g = rule[cfg.discretization](delta * Lam, delta, Lam)
        B_bar = g[:, None] * (bundle["B_re"] + 1j * bundle["B_im"]).astype(cplx)        # (N H)
        C = (bundle["C_re"] + 1j * bundle["C_im"]).astype(cplx)                         # (H N)

        def call(u):
            u = u.astype(real)
            x = np.zeros((len(u), len(lam)), cplx)
            y = np.empty(u.shape, real)
            for t in range(u.shape[1]):
                x = lam * x + u[:, t] @ B_bar.T
                y[:, t] = 2 * (x @ C.T).real + bundle["D"].astype(real) * u[:, t]
            return y
        return call
    return build


ZOH = lambda z, d, Lam: (np.exp(z), np.expm1(z) / Lam)                                  # noqa: E731
BILINEAR = lambda z, d, Lam: ((1 + z / 2) / (1 - z / 2), d / (1 - z / 2))                 # noqa: E731
FLIPPED = lambda z, d, Lam: ((1 - z / 2) / (1 + z / 2), d / (1 + z / 2))                  # noqa: E731
DIFFERENCE = lambda z, d, Lam: (np.exp(z), (np.exp(z) - 1) / Lam)                         # noqa: E731
STRETCHED = lambda z, d, Lam: (np.exp(1.2 * z), np.expm1(1.2 * z) / Lam)                  # noqa: E731
FAST = {"dtypes": ("float32",), "lengths": (1, 16), "long_length": 64}


def test_a_flipped_bilinear_sign_is_named_and_zoh_alone_passes(cli, tmp_path, monkeypatch):
    """docs/conform.md: the bilinear variant fails and the probe names the rule; --set discretization=zoh passes."""
    (tmp_path / "flipped_s5.py").write_text(
        "import numpy as np\nfrom linrnn.impls.config import config_from_dict\n\n\n" + inspect.getsource(s5_rule) +
        "\n\nbuild = s5_rule({'zoh': lambda z, d, Lam: (np.exp(z), np.expm1(z) / Lam),\n"
        "                 'bilinear': lambda z, d, Lam: ((1 - z / 2) / (1 + z / 2), d / (1 + z / 2))})\n")
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli.run("conform", "flipped_s5:build", "--model", "s5", "--dtype", "float32", "--lengths", "1",
                           "16", "--long", "64")
    assert code == 1, out
    failing = [line for line in out.splitlines() if line.startswith("  FAIL")]
    assert failing and all('discretization="bilinear"' in line for line in failing), out
    assert "the discretisation is the bilinear transform with the sign of Delta flipped" in out
    assert "|lambda| > 1" in out
    code, out, _ = cli.run("conform", "flipped_s5:build", "--model", "s5", "--dtype", "float32", "--lengths", "1",
                           "16", "--long", "64", "--set", "discretization=zoh")
    assert code == 0 and "bilinear" not in out, out


@pytest.mark.parametrize("rule, key", [
    ({"zoh": ZOH, "bilinear": BILINEAR}, None),                          # faithful: no finding
    ({"zoh": ZOH, "bilinear": FLIPPED}, "discretisation"),
    ({"zoh": ZOH, "bilinear": STRETCHED}, "discretisation_unknown"),     # exp(1.2 z): no rule of the table
])
def test_the_rule_the_eigenvalues_follow_is_named(rule, key):
    result = conform.run(s5_rule(rule), "s5", **FAST)
    assert keys(result) == ({key} if key else set()), conform.format_result(result)
    assert result.ok == (key is None)


@pytest.mark.parametrize("contract, rule, sentence", [
    ("zoh", BILINEAR, "the discretisation is the bilinear transform, where the contract has zero-order hold: "),
    ("bilinear", ZOH, "the discretisation is zero-order hold, where the contract has the bilinear transform: "),
    ("bilinear", FLIPPED, "the discretisation is the bilinear transform with the sign of Delta flipped, where the "
                          "contract has the bilinear transform: "),
    ("zoh", lambda z, d, Lam: (1 + z, d + 0 * z), "the discretisation is forward Euler, where the contract has "
                                                   "zero-order hold: "),
    ("zoh", lambda z, d, Lam: (1 / (1 - z), d / (1 - z)), "the discretisation is backward Euler, where the contract "
                                                           "has zero-order hold: "),
])
def test_the_discretisation_is_named_in_the_words_a_user_reads(contract, rule, sentence):
    """Each rule by its own name and the contract's by its: swapping two rules' words fails here."""
    result = conform.run(s5_rule({contract: rule}), "s5", ("float64",), (16,), sets={"discretization": contract},
                         long_length=0, very_long_length=0)
    words = next(d.words for d in result.diagnoses() if d.key == "discretisation")
    assert words.startswith(sentence), words


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_zoh_difference_is_named_expm1_not_float32(dtype):
    """(exp(Delta Lambda) - 1) / Lambda in the target's dtype fails 'radius near 1', and the cause is named."""
    result = conform.run(s5_rule({"zoh": DIFFERENCE}), "s5", (dtype,), (1, 16), sets={"discretization": "zoh"},
                         long_length=64)
    assert keys(result) == {"expm1"}, conform.format_result(result)
    assert "radius near 1" in {c.name for c in result.checks if c.status == "fail"}
    assert "B_bar computed as exp(Delta Lambda) - 1: use expm1" in result.diagnoses()[0].words


@pytest.mark.parametrize("kind", [k for k in specs.kinds() if specs.spec(k).discretisation is not None])
def test_the_discretisation_probes_are_silent_on_the_projects_layers(kind):
    """The probes themselves (the battery runs them only on a failure) name nothing on linrnn-torch."""
    pytest.importorskip("torch")
    for dtype in ("float32", "float64"):
        battery = conform.Battery("linrnn-torch", conform.resolve("linrnn-torch"), kind, dtype, (16,), 0)
        assert battery.discretisation(battery.cfg) == []


def test_every_variant_is_checked_and_named():
    result = conform.run(planted(exact), "s5", ("float64",), (1, 8), long_length=64)
    names = {c.name for c in result.checks}
    assert {'variant discretization="bilinear"', "variant clip_eigs=true", "variant blocks=2",
            'variant discretization="bilinear", clip_eigs=true, blocks=2, bidirectional=true', "long L=64"} <= names
    assert result.ok, conform.format_result(result)
    assert len([n for n in names if n.startswith("variant")]) == 2 * 2 * 2 * 2 - 2     # less the base and bidirectional


def test_a_target_without_the_clip_fails_its_variant():
    def unclipped(cfg, p, u, state):
        return exact(config_from_dict({**config_to_dict(cfg), "clip_eigs": False}), p, u, state)
    result = conform.run(planted(unclipped), "s5", ("float64",), (1, 8), long_length=0)
    failing = {c.name for c in result.checks if c.status == "fail"}
    assert failing and all("clip_eigs=true" in name for name in failing), conform.format_result(result)


@pytest.mark.parametrize("item, message", [
    ("bogus=1", "--set: a s5 config has no field 'bogus' (expected one of blocks, clip_eigs, discretization, "
                "dt_max, dt_min, bidirectional"),
    ("d_state=8", "--set: a s5 config has no field 'd_state'"),
    ("discretization=euler", "S5Config.discretization: expected one of zoh, bilinear, found 'euler'"),
    ("discretization", "--set: expected FIELD=VALUE, found 'discretization'"),
])
def test_set_is_checked(cli, item, message):
    line = cli.error_line("conform", "linrnn-torch", "--model", "s5", "--set", item)
    assert line.startswith(f"linrnn conform: error: {message.split(' (expected')[0]}"), line


# -- the scan contract ---------------------------------------------------------------------------

def scan_target(bug=None):
    def build(bundle, config):
        def call(a, b):
            x = conform.scan.reference(config, a, b)
            return bug(config, a, b, x) if bug else x
        return call
    return build


@pytest.mark.parametrize("bug, key", [
    (None, None),
    (lambda cfg, a, b, x: conform.scan.reference({**cfg, "reverse": not cfg["reverse"]}, a, b), "scan_direction"),
    (lambda cfg, a, b, x: conform.scan.reference({**cfg, "complex": False}, a.real, b.real) if cfg["complex"] else x,
     "scan_real_only"),
    (lambda cfg, a, b, x: x.astype(np.complex64 if cfg["complex"] else np.float32), "float32_only"),
])
def test_the_scan_contract_names_its_deviations(bug, key):
    result = conform.run(scan_target(bug), "scan", ("float64",), (1, 8), long_length=64)
    assert keys(result) == ({key} if key else set()) and result.ok == (key is None), conform.format_result(result)
    assert {c.name for c in result.checks} >= {"variant complex=true, reverse=true", "long L=64", "radius near 1"}


def test_the_peers_are_listed_with_package_and_lineage(cli):
    code, out, _ = cli.run("conform", "--peers")
    assert code == 0
    listed = {line.split()[0] for line in out.splitlines() if not line.startswith(" ")}
    assert listed == set(conform.BUILTINS)
    assert len(conform.PEERS) >= 5 and any("scan" in p.models for p in conform.PEERS.values())
    assert out.count("lineage: ") == len(conform.BUILTINS)
    for name, info in conform.PEERS.items():
        line = next(x for x in out.splitlines() if x.startswith(name + " "))
        assert (f"{info.distribution} " in line) or "not runnable here" in line, line
    stored = re.findall(r"stored verdict as (\w+): (.+?) \(", out)        # the stored findings' verdicts (issue 47)
    assert stored and {verdict for _, verdict in stored} <= set(conform.VERDICTS), out


@pytest.mark.parametrize("name, dtypes", [("fla-hgrn-naive", ("float32",)), ("mambapy", ("float64", "float32"))])
def test_fla_core_hgrn_and_mambapy_as_known(name, dtypes):
    """Measured (seed 0, lengths 1 7 16, long L = 4096, very long L = 65537 in float32): each conforms wherever the
    scan contract can be expressed; HGRN's decay exp(g_t) is real (complex: n/a) and both of fla-core's compute in
    float32 (float64: n/a, with why). fla-hgrn runs its Triton kernel in Triton's interpreter (12 s at the default
    lengths, 40 s for the very long check); here short lengths keep the test quick."""
    peer_or_skip(name)
    result = conform.run(name, "scan", lengths=(1, 8), long_length=64)
    assert result.ok, conform.format_result(result)
    ran = {c.dtype for c in result.checks if c.status == "pass"}
    assert ran == set(dtypes), conform.format_result(result)
    if name.startswith("fla"):
        assert all("computes in float32 only" in c.detail for c in result.checks if c.dtype == "float64")
        assert {c.name for c in result.checks if c.status == "n/a" and c.dtype == "float32"} == \
            {n for n in (c.name for c in result.checks) if "complex=true" in n}


def test_fla_core_hgrn_kernel_in_tritons_interpreter():
    """fla-hgrn in a process of its own: Triton's interpreter must be chosen before triton is imported, which this test
    process has done (through torch's compiler). Its float32 checks conform; float64 and complex a are n/a."""
    peer_or_skip("fla-hgrn-naive")                             # the same package; fla-hgrn needs the interpreter
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    run = subprocess.run([sys.executable, "-m", "linrnn", "conform", "fla-hgrn", "--model", "scan", "--lengths", "1",
                          "8", "--long", "64", "--very-long", "0"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "\nconforms (float32 only): every applicable check within the tolerance table" in run.stdout, run.stdout
    assert "pass lengths 1-8 (float32)" in run.stdout and "n/a  variant complex=true (float32): not supported by the " \
        "target: HGRN's decay exp(g_t) is real" in run.stdout, run.stdout


def test_mamba_ssms_own_reference_as_known():
    """Measured with mamba-ssm 2.3.2.post1 installed without its CUDA build (docs/conform.md): its real
    `selective_scan_ref` conforms in float32 wherever the scan contract can be expressed (a complex a_t that changes
    with t cannot), float64 n/a; the very long check too (1.7e-6 against 3.8e-2 at L = 65537, run by hand)."""
    peer_or_skip("mamba-ssm-ref")
    result = conform.run("mamba-ssm-ref", "scan", lengths=(1, 8), long_length=64)
    assert result.ok, conform.format_result(result)
    assert {c.name for c in result.checks if c.status == "n/a" and c.dtype == "float32"} == \
        {"variant complex=true", "variant complex=true, reverse=true"}
    assert sum(c.status == "pass" for c in result.checks) == 11      # 2 lengths, 2 radii, long, 1-8, 5 variants


def test_mamba_ssm_where_it_is_absent_is_one_line_saying_why(cli):
    """mamba-ssm compiles CUDA when installed: where it is absent, naming either of its targets says so in one line,
    and where it is checked instead (`linrnn gpucheck`; its stand-in tests are in tests/experiments/test_gpucheck.py)."""
    pytest.importorskip("torch")
    if "mamba_ssm is not installed" not in (conform.unavailable("mamba-ssm-ref") or ""):
        pytest.skip("mamba_ssm is installed here")
    absent = "mamba_ssm is not installed (sh tools/install-peers.sh installs it without its CUDA build)"
    assert cli.error_line("conform", "mamba-ssm-ref", "--model", "scan") == \
        f"linrnn conform: error: mamba-ssm-ref: {absent}"
    assert cli.error_line("conform", "mamba-ssm", "--model", "scan") == (
        f"linrnn conform: error: mamba-ssm: {absent}; its fused kernel needs a CUDA device, where `linrnn gpucheck` "
        "checks it (docs/gpu.md)")
