"""The framework-neutral parameter bundle: float64 NumPy arrays plus a config, stored as `.npz`.

Two levels of bundle (docs/models.md, "Bundle conventions"):

* a **layer bundle** holds one mixer; its keys are exactly those of the mixer's table in docs/models.md
  (`M`, `theta`, `gamma_log`, `B`, `C`, `D`, ...);
* a **model bundle** holds the deep model; its keys are dotted (`encoder.weight`,
  `layers.0.mixer.theta`, `layers.0.norm.scale`, `head.weight`, `decoder.bias`, ...).

Every bundle is validated on construction and on load, in the spirit of nanoGPT's `from_pretrained`:
the exact key set, every shape, the dtype (float64), finiteness and the schema version. Nothing is
matched or cast silently; every error names the key, what was expected and what was found.

The `.npz` file holds the arrays under their keys and one extra entry, `__meta__`: a JSON string with
`schema_version`, the bundle's level (`"bundle"`: layer or model) and the full config. It loads without pickle.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import numpy as np

from linrnn.impls.config import SCHEMA_VERSION, Config, MixerConfig, ModelConfig, config_from_dict, config_to_dict
from linrnn.base.errors import LinrnnError
from linrnn.impls.specs import SPECS, SpecView, spec

META_KEY = "__meta__"
Shape = tuple[int, ...]

# The raw parameters of each recurrence (docs/models.md): trained in their own optimiser group, with
# their own learning rate and no weight decay. Everything else (B, C, D, W, encoder, norms, GLU,
# decoder) is an ordinary weight. kind -> its spec's `recurrence_keys`, a view that follows every registration.
RECURRENCE_KEYS: Mapping[str, tuple[str, ...]] = SpecView(lambda s: s.recurrence_keys)


def is_recurrence_key(key: str, config: Config) -> bool:
    """`theta` in a layer bundle, or `layers.3.mixer.theta` in a model bundle; never a non-mixer weight.

    The mixer's kind decides (`config` is the bundle's, a layer or a model config): `B_re` is a recurrence
    parameter of S5 and an ordinary weight of the LRU.
    """
    parts = key.split(".")
    in_mixer = len(parts) == 1 or (len(parts) >= 2 and parts[-2] == "mixer")
    return in_mixer and parts[-1] in RECURRENCE_KEYS[mixer_kind(config)]


def mixer_kind(config: Config) -> str:
    """The mixer kind of a layer or model config: the mixer's own for a layer, its blocks' mixer's for a model."""
    return config.mixer.kind if isinstance(config, ModelConfig) else config.kind


# ----------------------------------------------------------------------------------------------
# Shapes: the contract of docs/models.md, one function per mixer
# ----------------------------------------------------------------------------------------------

def mixer_shapes(cfg: MixerConfig) -> dict[str, Shape]:
    """Keys and shapes of one mixer's raw parameters (docs/models.md tables; each model's spec holds its own)."""
    found = SPECS.get(getattr(cfg, "kind", None))
    if found is None or not isinstance(cfg, found.config):
        raise TypeError(f"not a mixer config: {cfg!r}")
    return found.shapes(cfg)


def model_shapes(cfg: ModelConfig) -> dict[str, Shape]:
    """Dotted keys and shapes of the deep model."""
    H = cfg.d_model
    if cfg.vocab_size is not None:
        shapes: dict[str, Shape] = {"encoder.weight": (cfg.vocab_size, H)}
    else:
        shapes = {"encoder.weight": (H, cfg.d_input), "encoder.bias": (H,)}
    for i in range(cfg.n_layers):
        pre = f"layers.{i}."
        shapes[pre + "norm.scale"] = (H,)
        shapes[pre + "norm.bias"] = (H,)
        if cfg.norm == "batch":
            shapes[pre + "norm.mean"] = (H,)  # stored running statistics (evaluation mode)
            shapes[pre + "norm.var"] = (H,)
        for key, shape in mixer_shapes(cfg.mixer).items():
            shapes[pre + "mixer." + key] = shape
        shapes[pre + "glu.W1"] = (H, H)
        shapes[pre + "glu.b1"] = (H,)
        shapes[pre + "glu.W2"] = (H, H)
        shapes[pre + "glu.b2"] = (H,)
    if cfg.head == "retrieval":
        shapes["head.weight"] = (H, 4 * H)  # Dense(4H -> H) on [z1, z2, z1 - z2, z1 * z2]
        shapes["head.bias"] = (H,)
    shapes["decoder.weight"] = (cfg.d_output, H)
    shapes["decoder.bias"] = (cfg.d_output,)
    return shapes


def expected_shapes(cfg: Config) -> dict[str, Shape]:
    return model_shapes(cfg) if isinstance(cfg, ModelConfig) else mixer_shapes(cfg)


def sub_params(params: Mapping[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The entries under `prefix` (e.g. `layers.0.mixer.`), with the prefix removed."""
    return {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}


# ----------------------------------------------------------------------------------------------
# The bundle
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bundle:
    """A validated, read-only set of float64 parameters together with the config that shapes them."""

    config: Config
    params: Mapping[str, np.ndarray]

    def __post_init__(self) -> None:
        validate(self.config, self.params)
        frozen = {}
        for key in expected_shapes(self.config):  # canonical key order
            array = np.array(self.params[key], dtype=np.float64, copy=True)
            array.setflags(write=False)
            frozen[key] = array
        object.__setattr__(self, "params", MappingProxyType(frozen))

    @property
    def level(self) -> str:
        """'model' for a model bundle, 'layer' for a layer bundle (the file's `"bundle"` entry)."""
        return "model" if isinstance(self.config, ModelConfig) else "layer"

    @property
    def mixer_kind(self) -> str:
        """The kind of its mixer (rotrnn, lru, ...): the layer's own, or that of every block of a model."""
        return mixer_kind(self.config)

    def replace(self, **updates: np.ndarray) -> "Bundle":
        """A new bundle with some arrays replaced (validated again)."""
        unknown = sorted(set(updates) - set(self.params))
        if unknown:
            raise LinrnnError(f"replace: unknown key(s) {', '.join(unknown)}")
        return Bundle(self.config, {**self.params, **updates})

    def digest(self) -> str:
        """SHA-256 of the config and every array: the identity recorded in results files."""
        h = hashlib.sha256(json.dumps(config_to_dict(self.config), sort_keys=True).encode())
        for key, array in self.params.items():
            h.update(key.encode())
            h.update(np.ascontiguousarray(array).tobytes())
        return h.hexdigest()

    def save(self, path: str | os.PathLike) -> Path:
        path = Path(path)
        meta = {"schema_version": SCHEMA_VERSION, "bundle": self.level, "config": config_to_dict(self.config)}
        try:
            with open(path, "wb") as fh:  # np.savez would silently append '.npz' to other names
                np.savez(fh, **{META_KEY: np.array(json.dumps(meta))}, **dict(self.params))
        except OSError as err:
            raise LinrnnError(f"cannot write bundle {path}: {err.strerror or err}") from None
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Bundle":
        return load(path)


def validate(config: Config, params: Mapping[str, np.ndarray]) -> None:
    """Raise `LinrnnError` unless `params` has exactly the keys, shapes, dtype and finite values of `config`."""
    shapes = expected_shapes(config)
    missing = [k for k in shapes if k not in params]
    unexpected = sorted(k for k in params if k not in shapes)
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing key(s) {', '.join(missing)}")
        if unexpected:
            parts.append(f"unexpected key(s) {', '.join(unexpected)}")
        raise LinrnnError(f"bundle for {config.kind}: {'; '.join(parts)}")
    for key, shape in shapes.items():
        array = params[key]
        if not isinstance(array, np.ndarray):
            raise LinrnnError(f"{key}: expected a NumPy array, found {type(array).__name__}")
        if array.dtype != np.float64:
            raise LinrnnError(f"{key}: expected dtype float64, found {array.dtype}")
        if array.shape != shape:
            raise LinrnnError(f"{key}: expected shape {shape}, found {array.shape}")
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        if bad:
            raise LinrnnError(f"{key}: expected finite values, found {bad} NaN/Inf entr{'y' if bad == 1 else 'ies'}")
    _validate_values(config, params)


def _validate_values(config: Config, params: Mapping[str, np.ndarray]) -> None:
    """Checks that go beyond shapes: values for which the model's equations are undefined."""
    if isinstance(config, ModelConfig):
        for i in range(config.n_layers):
            _validate_values(config.mixer, sub_params(params, f"layers.{i}.mixer."))
            if config.norm == "batch" and np.any(params[f"layers.{i}.norm.var"] < 0):
                raise LinrnnError(f"layers.{i}.norm.var: expected non-negative running variances")
    else:
        check = spec(config.kind).validate        # each model's own (`ModelSpec.validate`)
        if check is not None:
            check(config, params)


def check_compute_range(config: Config, params: Mapping[str, np.ndarray], dtype: str) -> None:
    """Refuse, in one line and before any computation, a bundle whose numbers leave `dtype`'s finite range: a value
    beyond its largest number (float32: 3.4e38), or a derived log-modulus, step or phase (each spec's `derived`) that overflows
    it (float32: nu_log, gamma_log, log_A_real above ~88.7, DLR's a above ~1.8e19). Such a layer would give NaN or
    Inf in the backends' scans and convolutions (docs/precision.md, "Numeric edges"). float64 bundles are finite
    (`validate`), so in float64 only the derived quantities can overflow (above ~709.8)."""
    real = np.dtype(dtype)
    if isinstance(config, ModelConfig):
        for key, array in params.items():
            if not key.startswith("layers."):
                _check_range(key, array, real)
        for i in range(config.n_layers):
            prefix = f"layers.{i}.mixer."
            _check_mixer(config.mixer.kind, sub_params(params, prefix), real, prefix)
            for key in [k for k in params if k.startswith(f"layers.{i}.") and not k.startswith(prefix)]:
                _check_range(key, params[key], real)
        return
    _check_mixer(config.kind, params, real, "")


def _check_mixer(kind: str, params: Mapping[str, np.ndarray], real: np.dtype, prefix: str) -> None:
    found = spec(kind)      # its derived quantities (`ModelSpec.derived`) and their product
    for key, array in params.items():
        _check_range(key, array, real, prefix, found.derived.get(key))
    # a product of two derived quantities (the spec's `product`): S4D's dt A (dt Re A), S5's Delta Lambda
    if found.product is not None:
        keys, what, fn = found.product
        with np.errstate(over="ignore"):
            over = ~np.isfinite(fn(params, real))
        if np.any(over):
            at = np.argwhere(over)[0].tolist()
            raise LinrnnError(f"{prefix.rstrip('.') + ': ' if prefix else ''}{keys}: at index {at}, {what} overflows "
                              f"{real.name} (beyond {float(np.finfo(real).max):.6g}), which would give NaN in the "
                              f"recurrence; compute in float64, or bring the parameters into range")


def _check_range(key: str, array: np.ndarray, real: np.dtype, prefix: str = "", derived=None) -> None:
    top = float(np.finfo(real).max)
    a = np.asarray(array, np.float64)
    big = np.abs(a) > top
    if np.any(big):
        i = int(np.flatnonzero(big.ravel())[0])
        raise LinrnnError(f"{prefix}{key}: entry {i} = {a.ravel()[i]:.6g} is beyond the largest {real.name} number "
                          f"({top:.6g}); compute in float64, or bring the parameter into range")
    if derived is not None:
        what, fn = derived
        with np.errstate(over="ignore"):
            value = fn(a.astype(real))
        over = ~np.isfinite(value)
        if np.any(over):
            i = int(np.flatnonzero(over.ravel())[0])
            raise LinrnnError(f"{prefix}{key}: entry {i} = {a.ravel()[i]:.6g} makes {what} overflow {real.name} "
                              f"(beyond {top:.6g}), which would give NaN in the recurrence; compute in float64, "
                              f"or bring the parameter into range")


def read_npz(path: str | os.PathLike, what: str = "bundle") -> dict[str, np.ndarray]:
    """Every array of a plain (non-pickled) .npz file, or a one-line LinrnnError naming `what` and the file."""
    path = Path(path)
    if not path.is_file():
        raise LinrnnError(f"cannot read {what} {path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as err:
        raise LinrnnError(f"cannot read {what} {path}: not a valid .npz file ({err})") from None


def load(path: str | os.PathLike) -> Bundle:
    """Read and validate a bundle written by `Bundle.save`."""
    path = Path(path)
    arrays = read_npz(path, "bundle")
    if META_KEY not in arrays:
        raise LinrnnError(f"{path}: not a linrnn bundle (no {META_KEY} entry)")
    try:
        meta = json.loads(str(arrays.pop(META_KEY)))
    except json.JSONDecodeError as err:
        raise LinrnnError(f"{path}: {META_KEY} is not valid JSON ({err})") from None
    if not isinstance(meta, dict):
        raise LinrnnError(f"{path}: {META_KEY}: expected a JSON object")
    version = meta.get("schema_version")
    if version != SCHEMA_VERSION:
        raise LinrnnError(f"{path}: schema_version: expected {SCHEMA_VERSION}, found {version!r}")
    config = config_from_dict(meta.get("config"), where=f"{path}: config")
    try:
        bundle = Bundle(config, arrays)
    except LinrnnError as err:
        raise LinrnnError(f"{path}: {err}") from None
    if meta.get("bundle") != bundle.level:
        raise LinrnnError(f"{path}: bundle: expected {bundle.level!r} for a {config.kind} config, "
                          f"found {meta.get('bundle')!r}")
    return bundle
