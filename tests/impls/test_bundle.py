"""The bundle: exact key sets, shapes, dtype, finiteness, schema version; save/load; every load error."""

import json
import zipfile

import numpy as np
import pytest

from linrnn.impls import specs
from linrnn.impls.bundle import META_KEY, Bundle, load, mixer_shapes, model_shapes
from linrnn.impls.config import SCHEMA_VERSION, ModelConfig, config_from_dict, config_to_dict
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.specs.dlr import DLRConfig
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rglru import RGLRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.impls.specs.s4d import S4DConfig
from linrnn.impls.specs.s5 import S5Config

MIXERS = [RotRNNConfig(d_model=6, d_state=4, heads=3), LRUConfig(d_model=6, d_state=5),
          DLRConfig(d_model=6, d_state=5), RotRNNConfig(d_model=6, d_state=4, heads=3, bidirectional=True),
          LRUConfig(d_model=6, d_state=5, bidirectional=True), DLRConfig(d_model=6, d_state=5, bidirectional=True),
          S4DConfig(d_model=6, d_state=5, init="inv"), S4DConfig(d_model=6, d_state=5, bidirectional=True),
          S5Config(d_model=6, d_state=4, blocks=2),
          S5Config(d_model=6, d_state=4, bidirectional=True, discretization="bilinear", clip_eigs=True),
          RGLRUConfig(d_model=6, blocks=3), RGLRUConfig(d_model=6, bidirectional=True, c=4.0)]
MODELS = [ModelConfig(mixer=LRUConfig(d_model=8, d_state=4), n_layers=2, d_input=3, d_output=5),
          ModelConfig(mixer=RotRNNConfig(d_model=8, d_state=2, heads=2), n_layers=1, vocab_size=11,
                      norm="batch", prenorm=False, pooling="last"),
          ModelConfig(mixer=DLRConfig(d_model=8, d_state=4, bidirectional=True), pooling="none"),
          ModelConfig(mixer=RGLRUConfig(d_model=8, blocks=2), n_layers=1, d_input=3, d_output=2)]


@pytest.mark.parametrize("cfg", MIXERS + MODELS, ids=lambda c: f"{c.kind}")
def test_save_load_round_trip_is_exact(cfg, tmp_path):
    bundle = init(cfg, seed=3)
    loaded = load(bundle.save(tmp_path / "b.npz"))
    assert loaded.config == cfg
    assert list(loaded.params) == list(bundle.params)
    for key in bundle.params:
        assert np.array_equal(loaded.params[key], bundle.params[key]), key
    assert loaded.digest() == bundle.digest()


def test_same_seed_same_numbers_other_seed_other_numbers():
    cfg = MIXERS[0]
    assert init(cfg, 1).digest() == init(cfg, 1).digest()
    assert init(cfg, 1).digest() != init(cfg, 2).digest()


def test_layer_keys_are_exactly_those_of_models_md():
    assert set(mixer_shapes(RotRNNConfig(d_model=6, d_state=4, heads=3, bidirectional=True))) == \
        {"M", "theta", "gamma_log", "B", "C", "D", "C_rev"}
    assert mixer_shapes(RotRNNConfig(d_model=6, d_state=4, heads=3))["C"] == (6, 12)
    assert set(mixer_shapes(LRUConfig(bidirectional=True))) == \
        {"nu_log", "theta_log", "gamma_log", "B_re", "B_im", "C_re", "C_im", "D", "C_re_rev", "C_im_rev"}
    assert set(mixer_shapes(DLRConfig(bidirectional=True))) == {"a", "theta", "W_re", "W_im", "D", "W_re_rev", "W_im_rev"}
    assert mixer_shapes(S4DConfig(d_model=6, d_state=5, bidirectional=True)) == {
        "log_dt": (6,), "log_A_real": (6, 5), "A_imag": (6, 5), "C_re": (6, 5), "C_im": (6, 5), "D": (6,),
        "C_re_rev": (6, 5), "C_im_rev": (6, 5)}
    assert mixer_shapes(S5Config(d_model=6, d_state=4, bidirectional=True)) == {
        "Lambda_re": (4,), "Lambda_im": (4,), "B_re": (4, 6), "B_im": (4, 6), "C_re": (6, 4), "C_im": (6, 4),
        "D": (6,), "log_step": (4,), "C_re_rev": (6, 4), "C_im_rev": (6, 4)}
    assert mixer_shapes(RGLRUConfig(d_model=6, blocks=3, bidirectional=True)) == {       # no key for the backward scan
        "Lambda": (6,), "W_a": (3, 2, 2), "b_a": (6,), "W_x": (3, 2, 2), "b_x": (6,)}


def test_model_keys_are_dotted():
    shapes = model_shapes(MODELS[1])
    assert shapes["encoder.weight"] == (11, 8) and "encoder.bias" not in shapes
    assert shapes["layers.0.mixer.theta"] == (2, 1)
    assert {"layers.0.norm.mean", "layers.0.norm.var", "layers.0.glu.W1", "decoder.bias"} <= set(shapes)


@pytest.mark.parametrize("cfg, count", [
    # RotRNN: heads*N*N + heads*N/2 + heads + heads*N*H + H*heads*N + H = 48 + 6 + 3 + 72 + 72 + 6
    (RotRNNConfig(d_model=6, d_state=4, heads=3), 207),
    # LRU: 4NH + 3N + H = 120 + 15 + 6
    (LRUConfig(d_model=6, d_state=5), 141),
    # DLR: 2N + 2HN + H = 10 + 60 + 6
    (DLRConfig(d_model=6, d_state=5), 76),
    # S4D: H + 4HN + H = 6 + 120 + 6
    (S4DConfig(d_model=6, d_state=5), 132),
    # S5: 2N + 4NH + H + N = 10 + 120 + 6 + 5
    (S5Config(d_model=6, d_state=5), 141),
    # RG-LRU: H + 2 (blocks W^2 + H) = 6 + 2 (3*4 + 6)
    (RGLRUConfig(d_model=6, blocks=3), 42),
    # model: encoder 8*3+8, 2 x (norm 16 + LRU 4*4*8+3*4+8=148 + GLU 2*(64+8)=144), decoder 5*8+5
    (MODELS[0], 32 + 2 * (16 + 148 + 144) + 45),
])
def test_parameter_counts(cfg, count):
    assert sum(a.size for a in init(cfg, 0).params.values()) == count


def test_bundle_arrays_are_read_only_copies():
    params = dict(init(MIXERS[1], 0).params)
    original = params["D"].copy()
    bundle = Bundle(MIXERS[1], {k: v.copy() for k, v in params.items()})
    with pytest.raises(ValueError):
        bundle.params["D"][0] = 1.0
    assert np.array_equal(bundle.params["D"], original)


# -- every error names the key, what was expected and what was found -------------------------

def _params(cfg=MIXERS[1]):
    return {k: v.copy() for k, v in init(cfg, 0).params.items()}


def test_missing_and_unexpected_keys_are_named():
    params = _params()
    del params["B_im"]
    params["B_imag"] = np.zeros((5, 6))
    with pytest.raises(LinrnnError, match=r"missing key\(s\) B_im; unexpected key\(s\) B_imag"):
        Bundle(MIXERS[1], params)


def test_wrong_shape_is_named():
    params = _params()
    params["C_re"] = params["C_re"].T
    with pytest.raises(LinrnnError, match=r"C_re: expected shape \(6, 5\), found \(5, 6\)"):
        Bundle(MIXERS[1], params)


def test_wrong_dtype_is_named():
    params = _params()
    params["D"] = params["D"].astype(np.float32)
    with pytest.raises(LinrnnError, match="D: expected dtype float64, found float32"):
        Bundle(MIXERS[1], params)


def test_non_finite_values_are_named():
    params = _params()
    params["nu_log"][2] = np.nan
    params["nu_log"][3] = np.inf
    with pytest.raises(LinrnnError, match="nu_log: expected finite values, found 2 NaN/Inf entries"):
        Bundle(MIXERS[1], params)


def test_rotrnn_head_with_zero_input_matrix_is_refused():
    cfg = MIXERS[0]
    params = _params(cfg)
    params["B"][1] = 0.0
    with pytest.raises(LinrnnError, match=r"B: head 1 has \|\|B_h\|\|_F = 0"):
        Bundle(cfg, params)


def test_s4d_values_without_a_zoh_discretisation_are_refused():
    bundle = init(S4DConfig(d_model=2, d_state=3), 0)
    zero_A = bundle.params["log_A_real"].copy()
    zero_A[1, 0] = -800.0                              # exp underflows to 0 and A_imag[:, 0] = 0 (S4D-Lin): A = 0
    with pytest.raises(LinrnnError, match="at channel 1, mode 0, A = 0 .* is undefined"):
        bundle.replace(log_A_real=zero_A)
    huge_dt = bundle.params["log_dt"].copy()
    huge_dt[0] = 800.0                                 # dt = exp(800) overflows
    with pytest.raises(LinrnnError, match="at channel 0, mode 0, dt A overflows"):
        bundle.replace(log_dt=huge_dt)
    shifted = bundle.params["A_imag"] + 1.0            # A_imag != 0: the same tiny Re A is fine
    assert bundle.replace(log_A_real=zero_A, A_imag=shifted).params["log_A_real"][1, 0] == -800.0


def test_s5_values_without_a_discretisation_are_refused():
    zoh = init(S5Config(d_model=2, d_state=2), 0)
    zero = np.array([0.0, -0.5])
    with pytest.raises(LinrnnError, match="at mode 0, Lambda = 0, so the ZOH factor .* is undefined"):
        zoh.replace(Lambda_re=zero, Lambda_im=zero)
    with pytest.raises(LinrnnError, match="at mode 1, Delta Lambda overflows"):
        zoh.replace(log_step=np.array([0.0, 800.0]))
    clipped = init(S5Config(d_model=2, d_state=2, clip_eigs=True), 0)   # Re Lambda <= -1e-4 in use: never 0
    assert clipped.replace(Lambda_re=zero, Lambda_im=zero).params["Lambda_re"][0] == 0.0
    bilinear = init(S5Config(d_model=2, d_state=2, discretization="bilinear"), 0)
    assert bilinear.replace(Lambda_re=zero, Lambda_im=zero).params["Lambda_im"][0] == 0.0
    with pytest.raises(LinrnnError, match="at mode 1, Delta Lambda = 2, so the bilinear factor"):
        bilinear.replace(Lambda_re=np.array([-0.5, 2.0]), Lambda_im=np.zeros(2), log_step=np.zeros(2))  # Delta = 1


def test_replace_rejects_unknown_keys():
    with pytest.raises(LinrnnError, match="replace: unknown key"):
        init(MIXERS[1], 0).replace(E=np.zeros(3))


@pytest.mark.parametrize("make, message", [
    (lambda: RotRNNConfig(d_state=3), "RotRNNConfig.d_state: expected an even state size"),
    (lambda: RotRNNConfig(heads=0), r"RotRNNConfig.heads: expected an integer >= 1, found 0"),
    (lambda: RotRNNConfig(gamma_min=0.99, gamma_max=0.9), r"RotRNNConfig.gamma_max: expected a value in"),
    (lambda: RotRNNConfig(gamma_max=1.0), r"RotRNNConfig.gamma_max: expected a value in"),
    (lambda: RotRNNConfig(m_init="eye"), "RotRNNConfig.m_init: expected one of normal, near_identity"),
    (lambda: LRUConfig(d_model=2.5), "LRUConfig.d_model: expected an integer, found 2.5"),
    (lambda: LRUConfig(r_max=1.0), r"LRUConfig.r_max: expected a value in"),
    (lambda: LRUConfig(bidirectional="yes"), "LRUConfig.bidirectional: expected true or false"),
    (lambda: DLRConfig(dt_min=-1.0), r"DLRConfig.dt_min: expected a value in"),
    (lambda: DLRConfig(max_kernel_length=0), "DLRConfig.max_kernel_length: expected an integer >= 1"),
    (lambda: S4DConfig(init="legs"), "S4DConfig.init: expected one of lin, inv, found 'legs'"),
    (lambda: S4DConfig(dt_min=0.1, dt_max=0.01), r"S4DConfig.dt_max: expected a value in \[0.1, 1000"),
    (lambda: S5Config(d_state=6, blocks=4), "S5Config.blocks: expected a divisor of d_state = 6 .*, found 4"),
    (lambda: S5Config(blocks=0), "S5Config.blocks: expected an integer >= 1, found 0"),
    (lambda: S5Config(discretization="euler"), "S5Config.discretization: expected one of zoh, bilinear"),
    (lambda: S5Config(clip_eigs=1), "S5Config.clip_eigs: expected true or false"),
    (lambda: RGLRUConfig(d_model=6, blocks=4), "RGLRUConfig.blocks: expected a divisor of d_model = 6, found 4"),
    (lambda: RGLRUConfig(r_max=0.999999999), r"RGLRUConfig.r_max: expected r_max\^2 \+ 1e-08 < 1"),
    (lambda: RGLRUConfig(c=0.0), r"RGLRUConfig.c: expected a value in \(0"),
    (lambda: ModelConfig(norm="group"), "ModelConfig.norm: expected one of layer, batch, found 'group'"),
    (lambda: ModelConfig(pooling="max"), "ModelConfig.pooling: expected one of mean, last, none"),
    (lambda: ModelConfig(mixer="lru"), "ModelConfig.mixer: expected a mixer config"),
    (lambda: ModelConfig(dropout=1.0), r"ModelConfig.dropout: expected a value in"),
])
def test_bad_configs_name_the_field(make, message):
    with pytest.raises(LinrnnError, match=message):
        make()


def test_config_dict_round_trip_and_errors():
    for cfg in MIXERS + MODELS:
        assert config_from_dict(json.loads(json.dumps(config_to_dict(cfg)))) == cfg
    with pytest.raises(LinrnnError, match=rf"config.kind: expected one of {', '.join(specs.kinds())}, model, found 'gru'"):
        config_from_dict({"kind": "gru"})
    with pytest.raises(LinrnnError, match=r"unknown field\(s\) width for lru"):
        config_from_dict({"kind": "lru", "width": 3})
    with pytest.raises(LinrnnError, match="config.mixer: expected a mixer, found a model"):
        config_from_dict({"kind": "model", "mixer": {"kind": "model"}})


# -- loading files ------------------------------------------------------------------------

def _write_npz(path, arrays):
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def _meta(cfg, **overrides):
    meta = {"schema_version": SCHEMA_VERSION, "bundle": "layer", "config": config_to_dict(cfg), **overrides}
    return np.array(json.dumps(meta))


def test_load_missing_file(tmp_path):
    with pytest.raises(LinrnnError, match=r"cannot read bundle .*nope.npz: no such file"):
        load(tmp_path / "nope.npz")


def test_load_corrupt_file(tmp_path):
    path = tmp_path / "bad.npz"
    path.write_bytes(b"this is not a zip archive")
    with pytest.raises(LinrnnError, match="not a valid .npz file"):
        load(path)


def test_load_truncated_file(tmp_path):
    good = init(MIXERS[1], 0).save(tmp_path / "good.npz").read_bytes()
    path = tmp_path / "cut.npz"
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(LinrnnError, match="not a valid .npz file"):
        load(path)


def test_load_npz_without_meta(tmp_path):
    path = _write_npz(tmp_path / "plain.npz", {"D": np.zeros(3)})
    with pytest.raises(LinrnnError, match=f"not a linrnn bundle \\(no {META_KEY} entry\\)"):
        load(path)


def test_load_bad_json_meta(tmp_path):
    path = _write_npz(tmp_path / "j.npz", {META_KEY: np.array("{not json")})
    with pytest.raises(LinrnnError, match="is not valid JSON"):
        load(path)


def test_load_wrong_schema_version(tmp_path):
    arrays = {**_params(), META_KEY: _meta(MIXERS[1], schema_version=SCHEMA_VERSION + 1)}
    with pytest.raises(LinrnnError, match=f"schema_version: expected {SCHEMA_VERSION}, found {SCHEMA_VERSION + 1}"):
        load(_write_npz(tmp_path / "v.npz", arrays))


def test_load_wrong_bundle_kind(tmp_path):
    arrays = {**_params(), META_KEY: _meta(MIXERS[1], bundle="model")}
    with pytest.raises(LinrnnError, match="bundle: expected 'layer' for a lru config, found 'model'"):
        load(_write_npz(tmp_path / "k.npz", arrays))


def test_load_names_the_file_and_the_key(tmp_path):
    params = _params()
    params["theta_log"] = params["theta_log"][:-1]
    arrays = {**params, META_KEY: _meta(MIXERS[1])}
    with pytest.raises(LinrnnError, match=r"s.npz: theta_log: expected shape \(5,\), found \(4,\)"):
        load(_write_npz(tmp_path / "s.npz", arrays))


def test_load_refuses_pickled_object_arrays(tmp_path):
    arrays = {**_params(), META_KEY: _meta(MIXERS[1]), "D": np.array([object()] * 6, dtype=object)}
    path = tmp_path / "o.npz"
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(LinrnnError, match="not a valid .npz file"):
        load(path)


def test_save_to_unwritable_place(tmp_path):
    with pytest.raises(LinrnnError, match="cannot write bundle"):
        init(MIXERS[1], 0).save(tmp_path / "no" / "such" / "dir" / "b.npz")


def test_saved_file_is_a_plain_zip_with_the_exact_name(tmp_path):
    path = init(MIXERS[1], 0).save(tmp_path / "bundle.params")
    assert path.name == "bundle.params" and zipfile.is_zipfile(path)
