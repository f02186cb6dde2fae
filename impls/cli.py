"""`linrnn params ...` and `linrnn apply`: the oracle on the command line.

    linrnn params init --model {rotrnn,lru,dlr,s4d,s5,attention,rglru} [--layer-only] [sizes] --seed S --out FILE.npz
    linrnn params show FILE.npz
    linrnn params convert --to {lru,rotrnn} IN.npz OUT.npz [--heads K]
    linrnn apply --params FILE.npz --input U.npy --out Y.npy [--backend B] [--mode M] [--dtype D] [--lengths N.npy]
                 [--segments S.npy]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

import numpy as np

from linrnn.impls.backends import BACKENDS, backend
from linrnn.impls.bundle import load
from linrnn.impls.config import DTYPES, MIXER_CONFIGS, ModelConfig, config_to_dict, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init


# The .npy dtype `linrnn apply` writes for a computation dtype (else float64): NumPy has no bfloat16, so its values
# are written as float32, which holds every bfloat16 exactly; float16 values as float16.
OUTPUT_DTYPES = {"bfloat16": np.float32, "float16": np.float16}


def register(subparsers) -> None:
    params = subparsers.add_parser("params", help="create and inspect parameter bundles")
    actions = params.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    p = actions.add_parser("init", help="initialise a bundle from a seed (each paper's initialisation)")
    p.add_argument("--model", required=True, help="mixer: rotrnn, lru, dlr, s4d, s5, attention or rglru")
    p.add_argument("--layer-only", action="store_true", help="a layer bundle (one mixer) instead of a deep model")
    p.add_argument("--d-model", type=int, default=None, help="H, features of the mixer (default: the config's)")
    p.add_argument("--state", type=int, default=None, help="N, state size (RotRNN: per head; not attention or rglru)")
    p.add_argument("--heads", type=int, default=None, help="RotRNN or attention heads")
    p.add_argument("--window", type=int, default=None, help="attention: local windows of this many positions")
    p.add_argument("--bidirectional", action="store_true", help="bidirectional mixer")
    p.add_argument("--layers", type=int, default=None, help="model: number of blocks")
    p.add_argument("--d-input", type=int, default=None, help="model: input features (linear encoder)")
    p.add_argument("--vocab-size", type=int, default=None, help="model: token inputs with an embedding encoder")
    p.add_argument("--d-output", type=int, default=None, help="model: output features")
    p.add_argument("--norm", default=None, help="model: layer or batch")
    p.add_argument("--postnorm", action="store_true", help="model: norm after the residual")
    p.add_argument("--pooling", default=None, help="model: mean, last or none")
    p.add_argument("--head", default=None, help="model: linear, or retrieval (two documents per example, rows b "
                                                "and B + b of the input; LRA Retrieval)")
    p.add_argument("--seed", type=int, required=True, help="the seed of NumPy's generator")
    p.add_argument("--out", required=True, help="the .npz file to write")
    p.set_defaults(func=_params_init)

    p = actions.add_parser("show", help="print a bundle's config and the shape of every key")
    p.add_argument("file")
    p.set_defaults(func=_params_show)

    p = actions.add_parser("convert", help="convert a RotRNN layer bundle to an LRU one or back, with the same "
                                           "outputs (claim R5)")
    p.add_argument("--to", required=True, metavar="KIND", help="the target mixer: lru or rotrnn")
    p.add_argument("--heads", type=int, default=None,
                   help="--to rotrnn: heads sharing a modulus (default: one head of size 2 per LRU mode)")
    p.add_argument("input", help="a layer bundle (.npz)")
    p.add_argument("output", help="the .npz file to write")
    p.set_defaults(func=_params_convert)

    p = subparsers.add_parser("apply", help="apply a layer or model bundle to an input with one backend")
    p.add_argument("--params", required=True, help="a bundle written by `linrnn params init`")
    p.add_argument("--input", required=True, help=".npy input: (B, L, H) for a layer; (B, L, d_input) or "
                                                  "integer (B, L) tokens for a model")
    p.add_argument("--out", required=True, help=".npy output file")
    p.add_argument("--backend", default="reference", help=f"one of {', '.join(BACKENDS)} (default reference)")
    p.add_argument("--mode", default=None, help="the backend's computation mode (default: its first)")
    p.add_argument("--dtype", default="float64",
                   help="float64, float32, bfloat16 or float16 (the reference: float64 only); the low dtypes keep the "
                        "recurrence in float32 (docs/precision.md, 'Low precision'). The output file is float64, "
                        "except bfloat16 (float32: its exact upcast, NumPy has no bfloat16) and float16 (float16)")
    p.add_argument("--lengths", default=None, help=".npy integer (B,) valid lengths: padded rows, each row's valid "
                                                   "part computed as if alone (a model's mixers and its pooling)")
    p.add_argument("--segments", default=None, help="layer only: .npy integer (B, L) segment ids: packed sequences, "
                                                    "each computed as if alone (the state resets where the id changes)")
    p.set_defaults(func=_apply)


def _positive(value, name: str):
    if value is not None and value < 1:
        raise LinrnnError(f"--{name}: expected a positive integer, found {value}")
    return value


def _params_init(args: argparse.Namespace) -> int:
    if args.model not in MIXER_CONFIGS:
        raise LinrnnError(f"--model: expected one of {', '.join(MIXER_CONFIGS)}, found {args.model!r}")
    mixer_fields = {"d_model": _positive(args.d_model, "d-model"), "d_state": _positive(args.state, "state"),
                    "heads": _positive(args.heads, "heads"), "bidirectional": args.bidirectional or None,
                    "window": _positive(args.window, "window")}
    fields = {f.name for f in dataclasses.fields(MIXER_CONFIGS[args.model])}
    with_field = lambda name: ", ".join(k for k, c in MIXER_CONFIGS.items()   # noqa: E731
                                        if name in {f.name for f in dataclasses.fields(c)})
    if "heads" not in fields and args.heads is not None:
        raise LinrnnError(f"--heads: only {with_field('heads')} have heads, found --heads with --model {args.model}")
    if "d_state" not in fields and args.state is not None:
        raise LinrnnError(f"--state: {args.model} has no state, found --state with --model {args.model}")
    if "window" not in fields and args.window is not None:
        raise LinrnnError(f"--window: only {with_field('window')} has windows, found --window with --model {args.model}")
    mixer = MIXER_CONFIGS[args.model](**{k: v for k, v in mixer_fields.items() if v is not None})
    model_fields = {"n_layers": _positive(args.layers, "layers"), "d_input": _positive(args.d_input, "d-input"),
                    "vocab_size": _positive(args.vocab_size, "vocab-size"),
                    "d_output": _positive(args.d_output, "d-output"),
                    "norm": args.norm, "prenorm": False if args.postnorm else None, "pooling": args.pooling,
                    "head": args.head}
    model_fields = {k: v for k, v in model_fields.items() if v is not None}
    if args.layer_only:
        if model_fields:
            raise LinrnnError(f"--layer-only: model options ({', '.join(sorted(model_fields))}) "
                              f"do not apply to a layer bundle")
        config = mixer
    else:
        config = ModelConfig(mixer=mixer, **model_fields)
    bundle = init(config, args.seed)
    path = bundle.save(args.out)
    print(f"wrote {bundle.level} bundle {path} ({config.kind}, {len(bundle.params)} arrays, "
          f"{sum(a.size for a in bundle.params.values())} parameters, sha256 {bundle.digest()[:12]})")
    return 0


def _params_show(args: argparse.Namespace) -> int:
    import json
    bundle = load(args.file)
    print(json.dumps(config_to_dict(bundle.config), indent=2))
    width = max(len(k) for k in bundle.params)
    for key, array in bundle.params.items():
        print(f"{key:<{width}}  {str(array.shape):<16} |max| {np.max(np.abs(array)):.4g}")
    print(f"{sum(a.size for a in bundle.params.values())} parameters, sha256 {bundle.digest()}")
    return 0


def _params_convert(args: argparse.Namespace) -> int:
    from linrnn.impls.convert import CONVERTERS

    if args.to not in CONVERTERS:
        raise LinrnnError(f"--to: expected one of {', '.join(CONVERTERS)}, found {args.to!r}")
    if args.heads is not None and args.to != "rotrnn":
        raise LinrnnError(f"--heads: only --to rotrnn takes heads, found --heads with --to {args.to}")
    _positive(args.heads, "heads")
    bundle = load(args.input)
    converted = CONVERTERS[args.to](bundle) if args.heads is None else CONVERTERS[args.to](bundle, heads=args.heads)
    path = converted.save(args.output)
    cfg = converted.config
    shape = f"{cfg.heads} head(s) of N = {cfg.d_state}" if args.to == "rotrnn" else f"N = {cfg.d_state} modes"
    print(f"wrote {args.to} layer bundle {path} ({shape}, from a {bundle.config.kind} layer, "
          f"sha256 {converted.digest()[:12]})")
    return 0


def read_npy(path: str | os.PathLike, what: str) -> np.ndarray:
    """Load a plain (non-pickled) .npy array, or raise a one-line LinrnnError."""
    path = Path(path)
    if not path.is_file():
        raise LinrnnError(f"cannot read {what} {path}: no such file")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise LinrnnError(f"cannot read {what} {path}: not a valid .npy array ({err})") from None


def _apply(args: argparse.Namespace) -> int:
    bundle = load(args.params)
    inputs = read_npy(args.input, "input")
    lengths = read_npy(args.lengths, "lengths") if args.lengths is not None else None
    segments = read_npy(args.segments, "segments") if args.segments is not None else None
    impl = backend(args.backend)
    allowed = modes(args.backend, bundle.mixer_kind)
    mode = args.mode or allowed[0]
    if mode not in allowed:
        raise LinrnnError(f"--mode: backend {args.backend} has modes {', '.join(allowed)}, found {mode!r}")
    if args.dtype not in impl.DTYPES:
        others = [b for b in BACKENDS if b != args.backend and args.dtype in DTYPES[b]]
        hint = f"; use --backend {' or '.join(others)}" if others else ""
        raise LinrnnError(f"--dtype: backend {args.backend} computes in {', '.join(impl.DTYPES)}, "
                          f"found {args.dtype!r}{hint}")
    if bundle.level == "layer" or bundle.config.vocab_size is None:
        d = bundle.config.d_model if bundle.level == "layer" else bundle.config.d_input
        if inputs.ndim != 3 or inputs.shape[-1] != d:
            raise LinrnnError(f"--input: expected shape (B, L, {d}) for this {bundle.level} bundle, "
                              f"found {inputs.shape}")
    y = impl.apply_bundle(bundle, inputs, mode=mode, dtype=args.dtype, lengths=lengths, segments=segments)
    y = np.asarray(y).astype(OUTPUT_DTYPES.get(args.dtype, np.float64))     # exact: the values are the dtype's
    try:
        with open(args.out, "wb") as fh:  # np.save(path) would silently append '.npy' to other names
            np.save(fh, y, allow_pickle=False)
    except OSError as err:
        raise LinrnnError(f"cannot write {args.out}: {err.strerror or err}") from None
    print(f"wrote {args.out} {tuple(np.shape(y))} {y.dtype} ({args.backend}, mode {mode}, {args.dtype})")
    return 0
