"""`linrnn conform` (`linrnn.impls.conform`): each planted deviation is named, the project's own layers conform,
bad input is a one-line error, and the peers' real behaviour is what is known about them.

Each planted target is the float64 reference plus one bug, written here; conform must find it by its probes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from linrnn.impls import conform
from linrnn.impls.config import KINDS, config_from_dict, config_to_dict
from linrnn.impls.reference import apply_mixer

DOCS = Path(__file__).resolve().parents[2] / "docs" / "conform.md"
F64 = ("float64",)


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
    return apply_mixer(cfg, p, u, "sequential", state)


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


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bug, key", [
    (dense_D, "dense_D"), (state_dropped, "state_not_carried"), (state_batch0, "state_batch0"),
    (forward_only, "backward_missing"), (backward_causal, "backward_not_anticausal"),
])
def test_each_planted_deviation_is_named(kind, bug, key):
    result = conform.run(planted(bug), kind, F64, (1, 8))
    assert not result.ok and keys(result) == {key}, conform.format_result(result)


@pytest.mark.parametrize("kind", ["lru", "dlr", "s4d", "s5"])
@pytest.mark.parametrize("bug, key", [(half_output, "factor_missing"), (double_output, "factor_doubled")])
def test_a_factor_2_is_named(kind, bug, key):
    result = conform.run(planted(bug), kind, F64, (1, 8))
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


@pytest.mark.parametrize("kind, bug, key", [("lru", dense_D, "dense_D"), ("dlr", forward_only, "backward_missing"),
                                            ("s5", half_output, "factor_missing"),
                                            ("rotrnn", state_batch0, "state_batch0")])
def test_a_deviation_in_float32_arithmetic_is_named_with_it(kind, bug, key):
    result = conform.run(planted(in_float32(bug)), kind, F64, (1, 8))
    assert keys(result) == {key, "float32_only"}, conform.format_result(result)


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
    record = json.loads((tmp_path / "ok.json").read_text())
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


# -- the project's own layers ------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
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
    ("lru", "target: expected module:function or one of lru-pytorch, s5-pytorch, linrnn-torch, linrnn-jax, "
            "found 'lru'"),
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
    assert keys(result) == {"dense_D", "float32_only", "state_batch0", "gradient_follows_output"}, \
        conform.format_result(result)
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
    assert all(c.status == "pass" for c in result.checks if c.dtype == "float32")
    assert {c.name for c in result.checks if c.status == "pass" and c.dtype == "float64"} == {"state"}


def test_s5_pytorch_as_an_s5_as_known():
    """Measured (seed 0, lengths 1 7 16): the recurrent part of every output is 0.5 x the contract's 2 Re(C x)
    (fit error 8.0e-9 in float64, the float32 level: B_tilde cast to complex64), the backward part too; the skip
    and the state hand-over conform (3.0e-18 in float64)."""
    peer_or_skip("s5-pytorch")
    result = conform.run("s5-pytorch", "s5")
    assert keys(result) == {"factor_missing", "float32_only", "gradient_follows_output"}, conform.format_result(result)
    by = {(c.name, c.dtype): c for c in result.checks}
    backward = by["bidirectional", "float32"].diagnoses
    assert [d.key for d in backward] == ["factor_missing"]
    assert "the backward part is 0.5 x the contract's 2 Re(C_rev x_bwd)" in backward[0].words
    assert by["state", "float64"].status == "pass" and by["state", "float32"].status == "pass"
