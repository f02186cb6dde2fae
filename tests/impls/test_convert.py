"""RotRNN <-> LRU converters (claim R5): same outputs in every backend, round trips, every refusal."""

import numpy as np
import pytest

from linrnn.impls.backends import backend
from linrnn.impls.bundle import Bundle, load
from linrnn.impls.config import ModelConfig
from linrnn.impls.convert import group_modes, lru_to_rotrnn, output_terms, rotrnn_to_lru
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.base.tolerance import assert_close

L = 17  # odd; memory min(L, 1/(1 - r)) with r up to 0.9999


def rotrnn(H=3, N=4, heads=2, bidirectional=False, seed=0):
    return init(RotRNNConfig(d_model=H, d_state=N, heads=heads, bidirectional=bidirectional, gamma_max=0.9999), seed)


def lru(H=3, N=4, bidirectional=False, seed=0):
    return init(LRUConfig(d_model=H, d_state=N, bidirectional=bidirectional, r_min=0.0, r_max=0.9999), seed)


def shared_moduli_lru(heads, per_head, H=3, bidirectional=False, seed=0, shuffle=False):
    """An LRU whose modes come in `heads` groups of `per_head` modes with one nu_log per group."""
    base = lru(H, heads * per_head, bidirectional, seed)
    nu_log = np.repeat(base.params["nu_log"][:heads], per_head)
    if shuffle:
        nu_log = np.random.default_rng(seed).permutation(nu_log)
    return base.replace(nu_log=nu_log)


def outputs(bundle, u, name="reference", mode=None):
    if name == "reference":
        return apply_mixer(bundle.config, bundle.params, u, mode or "sequential")[0]
    impl = backend(name)
    return impl.apply_bundle(bundle, u, mode=mode or impl.MODES[0], dtype="float64")


def assert_same_map(a, b, what, length=L, name="reference", mode=None, seed=1):
    u = np.random.default_rng(seed).standard_normal((2, length, a.config.d_model))
    r = spectral_radius(a.config, a.params)
    return assert_close(what, outputs(a, u, name, mode), outputs(b, u, name, mode), "forward", "float64", length, r,
                        scale=float(np.max(output_terms(a, u))))


# -- output equality in the reference ------------------------------------------------------------

@pytest.mark.parametrize("H, N, heads, bidirectional", [
    (1, 2, 1, False), (3, 4, 2, False), (2, 6, 3, True), (4, 2, 4, True), (5, 8, 1, False),
])
@pytest.mark.parametrize("length", [1, L])
def test_rotrnn_to_lru_reproduces_the_outputs(H, N, heads, bidirectional, length):
    rot = rotrnn(H, N, heads, bidirectional, seed=N + heads)
    converted = rotrnn_to_lru(rot)
    cfg = converted.config
    assert isinstance(cfg, LRUConfig) and (cfg.d_model, cfg.d_state, cfg.bidirectional) == (H, heads * N // 2, bidirectional)
    assert_same_map(rot, converted, "RotRNN vs its LRU", length)
    for mode in ("sequential", "conv"):
        assert_same_map(rot, converted, f"RotRNN vs its LRU ({mode})", length, mode=mode)


def test_rotrnn_to_lru_parameters_follow_the_documented_convention():
    rot = rotrnn(3, 6, 2, seed=4)
    p, q = rot.params, rotrnn_to_lru(rot).params
    gamma = np.exp(-np.exp(p["gamma_log"]))
    assert np.array_equal(q["nu_log"], np.repeat(p["gamma_log"], 3))            # the same number, no rounding
    # log sqrt(1 - |lambda|^2), with 1 - gamma^2 = -expm1(-2 exp(gamma_log)) as the reference computes it
    assert np.array_equal(q["gamma_log"], np.repeat(np.log(np.sqrt(-np.expm1(-2 * np.exp(p["gamma_log"])))), 3))
    assert_close("exp(gamma_log)", np.repeat(np.sqrt(1 - gamma**2), 3), np.exp(q["gamma_log"]), "identity", "float64")
    head_norms = (q["B_re"] ** 2 + q["B_im"] ** 2).reshape(2, 3, -1).sum(axis=(1, 2))
    assert_close("per-head ||B||_F^2 of the LRU", np.ones(2), head_norms, "identity", "float64")
    assert_close("LRU phases", p["theta"].reshape(-1), np.exp(q["theta_log"]), "identity", "float64")
    assert np.array_equal(q["D"], p["D"])


@pytest.mark.parametrize("H, N, bidirectional", [(1, 1, False), (3, 4, True), (2, 7, False)])
@pytest.mark.parametrize("length", [1, L])
def test_lru_to_rotrnn_one_head_per_mode(H, N, bidirectional, length):
    lr = lru(H, N, bidirectional, seed=N)
    converted = lru_to_rotrnn(lr)
    cfg = converted.config
    assert (cfg.heads, cfg.d_state, cfg.bidirectional) == (N, 2, bidirectional)
    assert np.all(converted.params["M"] == 0)                                  # P = expm(0) = I exactly
    assert np.array_equal(converted.params["gamma_log"], lr.params["nu_log"])
    assert_same_map(lr, converted, "LRU vs its RotRNN", length)


@pytest.mark.parametrize("heads, per_head, shuffle", [(1, 3, False), (2, 2, False), (3, 2, True), (2, 4, True)])
def test_lru_to_rotrnn_groups_modes_that_share_a_modulus(heads, per_head, shuffle):
    lr = shared_moduli_lru(heads, per_head, bidirectional=shuffle, seed=heads, shuffle=shuffle)
    converted = lru_to_rotrnn(lr, heads=heads)
    assert (converted.config.heads, converted.config.d_state) == (heads, 2 * per_head)
    assert_same_map(lr, converted, f"LRU vs its {heads}-head RotRNN")


def test_grouping_keeps_the_mode_order_when_it_can():
    assert group_modes(np.array([0.5, 0.5, 0.9, 0.9]), 2).tolist() == [[0, 1], [2, 3]]
    assert group_modes(np.array([0.9, 0.5, 0.9, 0.5]), 2).tolist() == [[1, 3], [0, 2]]


def test_moduli_equal_within_the_tolerance_group_and_still_agree():
    lr = shared_moduli_lru(2, 2, seed=5)
    nu_log = lr.params["nu_log"] * (1 + np.array([0.0, 1.0, 0.0, -1.0]) * 4 * np.finfo(float).eps)
    lr = lr.replace(nu_log=nu_log)
    assert_same_map(lr, lru_to_rotrnn(lr, heads=2), "LRU vs RotRNN, moduli a few ulps apart")


# -- angles, dead heads, empty heads ------------------------------------------------------------

def test_negative_and_large_angles_are_mapped_through_their_period():
    rot = rotrnn(3, 4, 2, seed=2)
    theta = np.array([[-0.5, -7.0], [9.0, 1e-300]])
    rot = rot.replace(theta=theta)
    converted = rotrnn_to_lru(rot)
    phases = np.exp(converted.params["theta_log"])
    assert np.all(phases > 0)
    assert_close("e^{i theta} after mapping", np.exp(1j * theta.reshape(-1)), np.exp(1j * phases), "identity", "float64",
                 scale=None)
    assert_same_map(rot, converted, "RotRNN with negative angles vs its LRU")


@pytest.mark.parametrize("angle", [0.0, -2 * np.pi, -4 * np.pi])
def test_an_angle_that_is_zero_mod_two_pi_is_refused_naming_head_and_block(angle):
    rot = rotrnn(3, 4, 2, seed=2)
    theta = np.array(rot.params["theta"])
    theta[1, 0] = angle
    with pytest.raises(LinrnnError, match=r"head 1, block 0 has theta = .*0 mod 2 pi"):
        rotrnn_to_lru(rot.replace(theta=theta))


def test_a_head_whose_gamma_rounds_to_one_still_converts_exactly():
    """gamma_0 = exp(-exp(-40)) rounds to 1.0, but xi_0 = sqrt(-expm1(-2 e^-40)) / ||B|| = 2.9e-9 / ||B|| is not 0."""
    rot = rotrnn(3, 4, 2, seed=3)
    rot = rot.replace(gamma_log=np.array([-40.0, rot.params["gamma_log"][1]]))
    converted = rotrnn_to_lru(rot)
    assert np.all(np.isfinite(converted.params["gamma_log"])) and np.any(converted.params["B_re"][:2] != 0)
    assert_same_map(rot, converted, "RotRNN with a head at gamma ~ 1 vs its LRU")


def test_modes_without_input_become_a_head_that_outputs_nothing():
    lr = lru(3, 3, seed=6)
    B_re, B_im = np.array(lr.params["B_re"]), np.array(lr.params["B_im"])
    B_re[1], B_im[1] = 0.0, 0.0
    lr = lr.replace(B_re=B_re, B_im=B_im)
    converted = lru_to_rotrnn(lr)
    assert np.all(converted.params["C"][:, 2:4] == 0)
    assert_same_map(lr, converted, "LRU with an input-less mode vs its RotRNN")


# -- round trips ---------------------------------------------------------------------------------

@pytest.mark.parametrize("bidirectional", [False, True])
def test_round_trips_preserve_the_input_output_map(bidirectional):
    rot = rotrnn(3, 6, 2, bidirectional, seed=7)
    via = rotrnn_to_lru(rot)
    for heads in (None, 2, 6):
        back = lru_to_rotrnn(via, heads=heads)
        assert back.config.heads == (6 if heads is None else heads)
        assert_same_map(rot, back, f"RotRNN -> LRU -> RotRNN (heads={heads})")
    lr = lru(3, 5, bidirectional, seed=8)
    back = rotrnn_to_lru(lru_to_rotrnn(lr))
    assert np.array_equal(back.params["nu_log"], lr.params["nu_log"])
    assert_close("eigenvalue phases after LRU -> RotRNN -> LRU", np.exp(lr.params["theta_log"]),
                 np.exp(back.params["theta_log"]), "identity", "float64")
    assert_same_map(lr, back, "LRU -> RotRNN -> LRU")


# -- the frameworks ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["torch", "jax"])
def test_converted_pairs_agree_in_the_frameworks(name):
    impl = backend(name)
    rot = rotrnn(3, 4, 2, bidirectional=True, seed=9)
    lr = lru(3, 3, seed=10)
    modes = ("scan", "conv") if name == "jax" else impl.MODES  # jax: each mode compiles (about 1 s each)
    for mode in modes:
        if mode != "step":
            assert_same_map(rot, rotrnn_to_lru(rot), f"{name} {mode}: RotRNN vs its LRU", name=name, mode=mode)
        assert_same_map(lr, lru_to_rotrnn(lr), f"{name} {mode}: LRU vs its RotRNN", name=name, mode=mode)
    u = np.random.default_rng(1).standard_normal((2, L, 3))
    assert_close(f"{name} converted LRU vs reference RotRNN", outputs(rot, u), outputs(rotrnn_to_lru(rot), u, name),
                 "forward", "float64", L, spectral_radius(rot.config, rot.params))


# -- refusals ------------------------------------------------------------------------------------

def test_every_refusal_is_a_linrnn_error_that_says_why():
    rot, lr = rotrnn(), lru()
    model = init(ModelConfig(mixer=RotRNNConfig(d_model=4, d_state=2, heads=1), n_layers=1), 0)
    dlr = init(DLRConfig(d_model=3, d_state=4), 0)
    cases = [
        (lambda: rotrnn_to_lru(model), "expected a layer bundle .* found a model bundle"),
        (lambda: rotrnn_to_lru({"M": 0}), "expected a layer bundle, found dict"),
        (lambda: rotrnn_to_lru(lr), "already a lru layer"),
        (lambda: lru_to_rotrnn(rot), "already a rotrnn layer"),
        (lambda: rotrnn_to_lru(dlr), "only RotRNN <-> LRU layers convert exactly; found a dlr layer"),
        (lambda: lru_to_rotrnn(dlr), "found a dlr layer"),
        (lambda: lru_to_rotrnn(lr, heads=3), "heads = 3 does not divide the LRU's 4 modes"),
        (lambda: lru_to_rotrnn(lr, heads=0), "heads: expected a positive integer, found 0"),
        (lambda: lru_to_rotrnn(lr, heads=True), "heads: expected a positive integer, found True"),
        (lambda: lru_to_rotrnn(lr, heads=1), r"cannot be grouped into 1 heads of 4 modes sharing one modulus"),
        (lambda: lru_to_rotrnn(lr.replace(nu_log=np.full(4, -40.0))), "mode 0 .* rounds to 1"),
        (lambda: lru_to_rotrnn(lr.replace(nu_log=np.array([0.0, 0.0, 7.0, 800.0]))), "mode 2 .* rounds to 0"),
        (lambda: lru_to_rotrnn(lr.replace(B_re=lr.params["B_re"] * 1e200)), "overflows float64"),
        (lambda: lru_to_rotrnn(lr.replace(C_re=lr.params["C_re"] * 1e306, gamma_log=np.full(4, 345.0))),
         "C overflowed"),
    ]
    for call, message in cases:
        with pytest.raises(LinrnnError, match=message):
            call()


# -- the command line ----------------------------------------------------------------------------



def test_cli_converts_both_ways(cli, tmp_path):
    src, mid, dst = tmp_path / "rot.npz", tmp_path / "lru.npz", tmp_path / "back.npz"
    rot = rotrnn(3, 4, 2, bidirectional=True, seed=11)
    rot.save(src)
    code, out, err = cli.run("params", "convert", "--to", "lru", src, mid)
    assert code == 0 and err == "" and "wrote lru layer bundle" in out and "N = 4 modes" in out
    converted = load(mid)
    assert converted.digest() == rotrnn_to_lru(rot).digest()
    assert_same_map(rot, converted, "CLI: RotRNN vs its LRU")
    code, out, _ = cli.run("params", "convert", "--to", "rotrnn", "--heads", 2, mid, dst)
    assert code == 0 and "2 head(s) of N = 4" in out
    assert_same_map(rot, load(dst), "CLI: RotRNN -> LRU -> RotRNN")


def test_cli_bad_inputs_give_one_line(cli, tmp_path):
    rot_path, lru_path, model_path, dlr_path = (tmp_path / f"{n}.npz" for n in ("rot", "lru", "model", "dlr"))
    rotrnn().save(rot_path)
    lru().save(lru_path)
    init(ModelConfig(mixer=LRUConfig(d_model=4, d_state=2), n_layers=1), 0).save(model_path)
    init(DLRConfig(d_model=3, d_state=4), 0).save(dlr_path)
    out = tmp_path / "out.npz"
    cases = [
        (("--to", "lru", model_path), "found a model bundle"),
        (("--to", "rotrnn", rot_path), "already a rotrnn layer"),
        (("--to", "lru", lru_path), "already a lru layer"),
        (("--to", "lru", dlr_path), "found a dlr layer"),
        (("--to", "rotrnn", "--heads", 1, lru_path), "cannot be grouped into 1 heads"),
        (("--to", "rotrnn", "--heads", 3, lru_path), "heads = 3 does not divide"),
        (("--to", "rotrnn", "--heads", 0, lru_path), "--heads: expected a positive integer, found 0"),
        (("--to", "lru", "--heads", 2, rot_path), "--heads: only --to rotrnn takes heads"),
        (("--to", "dlr", rot_path), "--to: expected one of lru, rotrnn, found 'dlr'"),
        (("--to", "lru", tmp_path / "missing.npz"), "no such file"),
    ]
    for args, message in cases:
        line = cli.error_line("params", "convert", *args[:-1], args[-1], out)
        assert line.startswith("linrnn params: error: ") and message in line, line
    assert not out.exists()
    theta = np.array(load(rot_path).params["theta"])
    theta[0, 1] = 0.0
    Bundle(load(rot_path).config, {**load(rot_path).params, "theta": theta}).save(rot_path)
    assert "head 0, block 1" in cli.error_line("params", "convert", "--to", "lru", rot_path, out)
