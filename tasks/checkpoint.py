"""Framework-neutral checkpoints: the model bundle, the AdamW moments under the same keys, the step.

A checkpoint written by the PyTorch side can be read by the JAX side and vice versa: it holds NumPy
float64 arrays only,

    model.<key>     the model bundle's arrays (docs/models.md keys)
    opt.m.<key>     AdamW first moment of that parameter (trainable keys: not BatchNorm statistics)
    opt.v.<key>     AdamW second moment
    opt.count       (), the number of optimiser updates so far
    __meta__        JSON: schema version, the model config, the train config, the step, the loop's
                    own state (`extra`: the best evaluation so far)

Writing goes to a temporary file that is then renamed, so an interrupted save leaves the previous
checkpoint intact ("the last good checkpoint"). A run's checkpoint also keeps the one before it
(`save(..., keep_previous=True)`: CHECKPOINT.previous.npz), which a resume falls back to where the
newest is damaged (`linrnn.tasks.train`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from linrnn.impls.bundle import Bundle, read_npz
from linrnn.impls.config import SCHEMA_VERSION, config_from_dict, config_to_dict
from linrnn.base.errors import LinrnnError

CHECKPOINT_SCHEMA = 1


@dataclass(frozen=True)
class Checkpoint:
    step: int                      # optimiser steps done; training resumes at batch `step`
    bundle: Bundle                 # the model after `step` updates
    optimizer: dict[str, np.ndarray]  # 'm.<key>', 'v.<key>', 'count'
    train_config: dict             # the TrainConfig as a dict (written before mixer tables: flat; see
                                   # linrnn.tasks.config.nest_legacy)
    extra: dict = field(default_factory=dict)  # the loop's state, JSON ({"best": evaluation})


def previous(path: str | os.PathLike) -> Path:
    """Where `save(path, ..., keep_previous=True)` keeps the checkpoint it replaced: NAME.previous.npz."""
    path = Path(path)
    return path.with_name(f"{path.stem}.previous{path.suffix}")


def save(path: str | os.PathLike, ckpt: Checkpoint, keep_previous: bool = False) -> Path:
    path = Path(path)
    meta = {"checkpoint_schema": CHECKPOINT_SCHEMA, "bundle_schema": SCHEMA_VERSION, "step": ckpt.step,
            "model_config": config_to_dict(ckpt.bundle.config), "train_config": ckpt.train_config,
            "extra": ckpt.extra}
    arrays = {f"model.{k}": v for k, v in ckpt.bundle.params.items()}
    arrays.update({f"opt.{k}": np.asarray(v, dtype=np.float64) for k, v in ckpt.optimizer.items()})
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, __meta__=np.array(json.dumps(meta)), **arrays)
        if keep_previous and path.exists():
            path.replace(previous(path))
        tmp.replace(path)
    except OSError as err:
        raise LinrnnError(f"cannot write checkpoint {path}: {err.strerror or err}") from None
    return path


def load(path: str | os.PathLike) -> Checkpoint:
    path = Path(path)
    arrays = read_npz(path, "checkpoint")
    try:
        meta = json.loads(str(arrays.pop("__meta__")))
    except (KeyError, json.JSONDecodeError) as err:
        raise LinrnnError(f"cannot read checkpoint {path}: no valid __meta__ entry ({err})") from None
    if meta.get("checkpoint_schema") != CHECKPOINT_SCHEMA or meta.get("bundle_schema") != SCHEMA_VERSION:
        raise LinrnnError(f"{path}: checkpoint schema {meta.get('checkpoint_schema')!r}/"
                          f"{meta.get('bundle_schema')!r}, expected {CHECKPOINT_SCHEMA}/{SCHEMA_VERSION}")
    config = config_from_dict(meta["model_config"], where=f"{path}: model_config")
    bundle = Bundle(config, {k[len("model."):]: v for k, v in arrays.items() if k.startswith("model.")})
    optimizer = {k[len("opt."):]: v for k, v in arrays.items() if k.startswith("opt.")}
    moments = {k for k in optimizer if k != "count"}
    keys = {k.split(".", 1)[1] for k in moments}
    if "count" not in optimizer or moments != {f"{m}.{k}" for m in ("m", "v") for k in keys} \
            or not keys <= set(bundle.params):
        raise LinrnnError(f"{path}: the optimizer state does not match the model's parameters")
    return Checkpoint(int(meta["step"]), bundle, optimizer, meta["train_config"], meta.get("extra", {}))
