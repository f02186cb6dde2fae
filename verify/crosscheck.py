"""`linrnn crosscheck`: every mixer x mode x dtype x pair of backends, outputs and gradients.

For random bundles and inputs of several shapes (L = 1, odd L, decays near 1, bidirectional), each
backend computes the layer's output y and, for torch and jax, the gradients of the scalar loss
sum(y * w) (w a fixed random weight) with respect to the input and to every raw parameter of the
bundle (torch autograd and `jax.vjp`). Each pair of backends is compared with the project's tolerance
table (outputs: row 'forward'; gradients: row 'gradient', each part on its own scale with an absolute
floor for cancellation, see `compare_gradients`; in the lower precision of the pair; with the case's
length and largest |eigenvalue|). The reference has no gradients: its outputs are compared
with both frameworks; gradients are compared between torch and jax.

The reference computes `sequential` and `conv`; the frameworks' `scan` and `step` modes are compared
with the reference's `sequential`. Attention has its own modes (`linrnn.impls.config.KIND_MODES`): the
frameworks' `full` and `chunked` against the reference's `full`; `applicable` picks each kind's modes.

Device (`run(..., device=)`): the reference always runs on the CPU in float64 NumPy. With "cuda" the
PyTorch side runs on the current CUDA device and the JAX side on its default backend's first device
(the GPU where JAX has one; the result's `devices` records where each side ran, so a JAX without a GPU
shows as 'cpu' rather than passing unnoticed). Off the CPU both sides compute float32 matrix products
in full float32: TF32 (PyTorch's cuDNN default, JAX's default on GPUs) rounds inputs to 10 mantissa
bits, which the float32 rows of the tolerance table are not for. "cpu" (the default) pins JAX to its
CPU device and changes nothing else.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

import numpy as np

from linrnn.impls.bundle import Bundle
from linrnn.impls.config import mixer_config as config_mixer
from linrnn.impls.config import modes
from linrnn.base.errors import LinrnnError
from linrnn.impls import specs
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.base.tolerance import Comparison, compare, memory

MODES = ("sequential", "scan", "conv", "step", "full", "chunked")   # of every kind (`applicable`: a kind's own)
DTYPES = ("float64", "float32")
REFERENCE_MODE = {"sequential": "sequential", "scan": "sequential", "step": "sequential", "conv": "conv",
                  "full": "full", "chunked": "full"}


@dataclass(frozen=True)
class Shape:
    B: int
    L: int
    H: int
    N: int              # state size (RotRNN: per head, 2 heads)
    bidirectional: bool
    near_one: bool      # decays up to 0.9999 (long memory), else each paper's default range

    @property
    def label(self) -> str:
        return (f"B{self.B} L{self.L} H{self.H} N{self.N}{' bi' if self.bidirectional else ''}"
                f"{' r~1' if self.near_one else ''}")


DEFAULT_SHAPES = (
    Shape(2, 1, 3, 4, False, False),
    Shape(2, 17, 3, 4, False, True),
    Shape(1, 33, 4, 4, True, True),
)


def mixer_config(kind: str, shape: Shape):
    """The case's layer (`linrnn.impls.config.mixer_config`, 2 heads where the kind has heads), its decays reaching
    0.9999 when `near_one`: each model's spec says how (`ModelSpec.crosscheck`: e.g. S5 by ZOH, and in the
    bidirectional case by the bilinear transform with clip_eigs; attention local in the causal case with decays
    near 1, its width `ModelSpec.crosscheck_width`)."""
    found = specs.spec(kind)
    return config_mixer(kind, found.crosscheck_width(shape.H), shape.N, heads=2, bidirectional=shape.bidirectional,
                        **found.crosscheck(shape.near_one, shape.bidirectional))


# -- one backend: output and gradients ------------------------------------------------------------

DEVICES = ("cpu", "cuda")


def check_device(device: str) -> None:
    if device not in DEVICES:
        raise LinrnnError(f"device: expected one of {', '.join(DEVICES)}, found {device!r}")


def torch_output_and_grads(bundle: Bundle, u: np.ndarray, w: np.ndarray, mode: str, dtype: str,
                           device: str = "cpu"):
    import torch
    from linrnn.impls.torch import from_bundle

    check_device(device)
    with _torch_full_float32(device):
        layer = from_bundle(bundle, getattr(torch, dtype), device)
        x = torch.tensor(u, dtype=getattr(torch, dtype), device=device, requires_grad=True)
        y, _ = layer(x, mode=mode)
        (y * torch.tensor(w, dtype=y.dtype, device=device)).sum().backward()
    grads = {"input": x.grad.double().cpu().numpy()}
    # a parameter the output does not reach has no .grad (RG-LRU's decay at L = 1, where the first input enters
    # unnormalised): its gradient is zero, as JAX returns it
    grads.update({name: (torch.zeros_like(p) if p.grad is None else p.grad).double().cpu().numpy()
                  for name, p in layer.named_parameters()})
    return y.detach().double().cpu().numpy(), grads


@contextlib.contextmanager
def _torch_full_float32(device: str):
    """On CUDA: float32 matrix products and convolutions in IEEE float32, not TF32, for this block."""
    if device == "cpu":
        yield
        return
    import torch

    # PyTorch >= 2.9 has per-backend `fp32_precision` and refuses reads of the legacy flags once it is set
    flags = [(torch.backends.cuda.matmul, "fp32_precision", "ieee"),
             (torch.backends.cudnn.conv, "fp32_precision", "ieee")]
    if not hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        flags = [(torch.backends.cuda.matmul, "allow_tf32", False), (torch.backends.cudnn, "allow_tf32", False)]
    saved = [getattr(owner, name) for owner, name, _ in flags]
    for owner, name, value in flags:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for (owner, name, _), value in zip(flags, saved):
            setattr(owner, name, value)


def torch_device_name(device: str) -> str:
    """Where the PyTorch side runs for `device`: 'cpu' or 'cuda:<index> (<GPU name>)'."""
    if device == "cpu":
        return "cpu"
    import torch

    index = torch.cuda.current_device()
    return f"cuda:{index} ({torch.cuda.get_device_name(index)})"


def jax_device(device: str):
    """The JAX device for `device`: its CPU device for 'cpu', else the default backend's first device."""
    import jax

    check_device(device)
    return jax.devices("cpu")[0] if device == "cpu" else jax.devices()[0]


@lru_cache(maxsize=None)
def _jax_vjp(cfg, mode: str):
    """(params, u, w) -> (y, grad params, grad u) of the loss sum(y * w), compiled.

    A recurrent layer is differentiated in two compiled parts chained by the VJP: the parameters'
    materialisation (once per layer config and dtype, shared by the modes) and the mode on the
    materialised system. As one program per mode, RotRNN's expm and its derivative were compiled into
    every mode's program (1.3-1.6 s of XLA compile time each on the development machine; its quick
    cross-check went from 22 to 12 s of JAX time).
    """
    import jax
    from linrnn.impls.jax import layer

    if not specs.spec(cfg.kind).stateful:            # no materialised system (attention): one program
        def run_attention(params, u, w):
            y, vjp = jax.vjp(lambda p, x: layer.apply(p, cfg, x, mode)[0], params, u)
            grad_params, grad_u = vjp(w.astype(y.dtype))
            return y, grad_params, grad_u
        return jax.jit(run_attention)

    def run_mode(sys, u, w):
        y, vjp = jax.vjp(lambda s, x: layer.apply_system(s, cfg, x, mode)[0], sys, u)
        grad_sys, grad_u = vjp(w.astype(y.dtype))
        return y, grad_sys, grad_u
    mode_vjp, system_vjp = jax.jit(run_mode), _jax_system_vjp(cfg)

    def run(params, u, w):
        sys, pull_back = system_vjp(params)
        y, grad_sys, grad_u = mode_vjp(sys, u, w)
        return y, _pull()(pull_back, grad_sys), grad_u
    return run


@lru_cache(maxsize=None)
def _jax_system_vjp(cfg):
    """params -> (the materialised system, its VJP function), compiled once per config (and dtype)."""
    import jax
    from linrnn.impls.jax import layer

    return jax.jit(lambda params: jax.vjp(lambda p: layer.materialise(p, cfg), params))


@lru_cache(maxsize=None)
def _pull():
    """(the materialisation's VJP function, the system's gradient) -> the parameters' gradient, compiled."""
    import jax

    return jax.jit(lambda pull_back, grad_sys: pull_back(grad_sys)[0])


def jax_output_and_grads(bundle: Bundle, u: np.ndarray, w: np.ndarray, mode: str, dtype: str,
                         device: str = "cpu"):
    import jax
    from linrnn.impls.jax import precision

    target = jax_device(device)
    full = jax.default_matmul_precision("float32") if target.platform != "cpu" else contextlib.nullcontext()
    with precision(dtype), jax.default_device(target), full:   # float64: JAX's 64-bit mode for this call only
        return _jax_output_and_grads(bundle, u, w, mode, dtype)


def _jax_output_and_grads(bundle: Bundle, u: np.ndarray, w: np.ndarray, mode: str, dtype: str):
    import jax.numpy as jnp
    from linrnn.impls.jax import from_bundle

    params = from_bundle(bundle, dtype)
    y, grad_params, grad_u = _jax_vjp(bundle.config, mode)(params, jnp.asarray(u, dtype), jnp.asarray(w, dtype))
    grads = {"input": np.asarray(grad_u, np.float64)}
    grads.update({k: np.asarray(v, np.float64) for k, v in grad_params.items()})
    return np.asarray(y, np.float64), grads


def compare_gradients(ref: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray], dtype: str, length: int,
                      max_abs_eigenvalue: float) -> dict[str, Comparison]:
    """Each part of one gradient (input, every raw parameter) judged on its own scale, with a floor.

    Part p passes when  max|got_p - ref_p| <= rtol * max(max|ref_p|, floor),  rtol the 'gradient' entry of
    the tolerance table and  floor = G / memory,  G the largest entry of the whole vector (every part), so

        allowed error = max(factor * eps * memory * max|ref_p|,  factor * eps * G).

    Why each part on its own scale: judged against G (as before), a part below rtol * G (about 5e-4 of
    the largest part in float32 at L = 33) was unchecked: zeroing it passed. Why a floor: a part can
    cancel to zero in exact arithmetic (d/dM at L = 1, where P P^T = I; every L at N = 2, where P
    commutes with Theta), and then its computed value is rounding noise of the terms that cancel. Those
    terms are products of the same forward and adjoint quantities (x_t, C^T w_t, B u_t) whose sums form
    the other parts, so their size is about G; summing them leaves an absolute error of a few eps * G
    (measured over the default shapes in both dtypes: at most 22 eps * G, LRU), which the floor
    factor * eps * G covers with the table's own constant and nothing more. The floor has no memory factor: it bounds the noise of
    a sum whose magnitude G already includes the sum over positions. A real error in a part of size s is
    caught once its relative size exceeds max(rtol, factor * eps * G / s): in float64 at s = 1e-3 G, about
    3e-11 (see docs/precision.md for the measured thresholds in both precisions).
    """
    whole = max(float(np.max(np.abs(g))) for g in ref.values())
    floor = whole / memory(length, max_abs_eigenvalue)          # rtol * floor = factor * eps * whole
    return {key: compare(f"d loss / d {key}", ref[key], got[key], "gradient", dtype, length, max_abs_eigenvalue,
                         scale=floor)
            for key in ref}


def applicable(cfg, mode: str) -> bool:
    """A mode of the kind in both frameworks (`linrnn.impls.config.modes`); `step` streams, so a bidirectional
    layer has no step mode."""
    own = all(mode in modes(framework, cfg.kind) for framework in ("torch", "jax"))
    return own and not (mode == "step" and cfg.bidirectional)


# -- the matrix ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Selection:
    kinds: tuple[str, ...] = dataclasses.field(default_factory=specs.kinds)   # every registered model
    modes: tuple[str, ...] = MODES
    dtypes: tuple[str, ...] = DTYPES
    seeds: tuple[int, ...] = (0,)
    shapes: tuple[Shape, ...] = DEFAULT_SHAPES


def run(selection: Selection, progress=None, device: str = "cpu") -> dict:
    """Every comparison of the selection -> {'entries': [...], 'ok': bool, 'selection': ..., 'devices': ...}.

    device: "cpu", or "cuda" for the frameworks on the GPU (module docstring); the reference stays on the CPU.
    """
    check_device(device)
    on = {} if device == "cpu" else {"device": device}   # the CPU call keeps the five-argument form
    entries = []
    cases = [(k, s, seed) for k in selection.kinds for s in selection.shapes for seed in selection.seeds]
    for i, (kind, shape, seed) in enumerate(cases):
        if progress:
            progress(i, len(cases), f"{kind} {shape.label} seed {seed}")
        cfg = mixer_config(kind, shape)
        bundle = init(cfg, seed)
        rng = np.random.default_rng([seed, shape.L, shape.B])
        u = rng.standard_normal((shape.B, shape.L, cfg.d_model))
        w = rng.standard_normal((shape.B, shape.L, cfg.d_model))
        r = spectral_radius(cfg, bundle.params)
        ref = {m: apply_mixer(cfg, bundle.params, u, m)[0] for m in modes("reference", kind)}
        for mode in selection.modes:
            if not applicable(cfg, mode):
                continue
            for dtype in selection.dtypes:
                y_t, g_t = torch_output_and_grads(bundle, u, w, mode, dtype, **on)
                y_j, g_j = jax_output_and_grads(bundle, u, w, mode, dtype, **on)
                base = {"mixer": kind, "shape": shape.label, "L": shape.L, "seed": seed, "mode": mode,
                        "dtype": dtype, "radius": r}
                outputs = {"reference": ref[REFERENCE_MODE[mode]], "torch": y_t, "jax": y_j}
                for a, b in (("reference", "torch"), ("reference", "jax"), ("torch", "jax")):
                    c = compare("output", outputs[a], outputs[b], "forward", dtype, shape.L, r)
                    entries.append({**base, "pair": f"{a}-{b}", "quantity": "output", "max_abs": c.max_abs,
                                    "rel": c.rel, "rtol": c.rtol, "ok": c.ok})
                for key, c in compare_gradients(g_t, g_j, dtype, shape.L, r).items():
                    entries.append({**base, "pair": "torch-jax", "quantity": f"grad {key}", "max_abs": c.max_abs,
                                    "rel": c.rel, "rtol": c.rtol, "ok": c.ok})
    if progress:
        progress(len(cases), len(cases), "done")
    devices = {"reference": "cpu", "torch": torch_device_name(device), "jax": str(jax_device(device))}
    return {"entries": entries, "ok": all(e["ok"] for e in entries), "summary": summarise(entries),
            "devices": devices,
            "selection": {"kinds": list(selection.kinds), "modes": list(selection.modes),
                          "dtypes": list(selection.dtypes), "seeds": list(selection.seeds),
                          "shapes": [dataclasses.asdict(s) | {"label": s.label} for s in selection.shapes]}}


def summarise(entries: list[dict]) -> list[dict]:
    """One row per mixer x mode x dtype x pair x (output | gradients): the worst error against its tolerance."""
    groups: dict[tuple, list[dict]] = {}
    for e in entries:
        what = "output" if e["quantity"] == "output" else "gradients"
        groups.setdefault((e["mixer"], e["mode"], e["dtype"], e["pair"], what), []).append(e)
    rows = []
    for (mixer, mode, dtype, pair, what), group in groups.items():
        worst = max(group, key=lambda e: e["rel"] / e["rtol"])
        rows.append({"mixer": mixer, "mode": mode, "dtype": dtype, "pair": pair, "quantity": what,
                     "comparisons": len(group), "max_rel": max(e["rel"] for e in group),
                     "worst_ratio": worst["rel"] / worst["rtol"], "worst": f"{worst['quantity']} at {worst['shape']}",
                     "ok": all(e["ok"] for e in group)})
    return rows


def format_table(summary: list[dict]) -> str:
    header = f"{'mixer':<7} {'mode':<10} {'dtype':<8} {'pair':<16} {'what':<9} {'n':>4} {'max rel':>9} {'err/tol':>8}  verdict"
    lines = [header, "-" * len(header)]
    for r in summary:
        lines.append(f"{r['mixer']:<7} {r['mode']:<10} {r['dtype']:<8} {r['pair']:<16} {r['quantity']:<9} "
                     f"{r['comparisons']:>4} {r['max_rel']:>9.2e} {r['worst_ratio']:>8.3f}  "
                     f"{'ok' if r['ok'] else 'EXCEEDS (' + r['worst'] + ')'}")
    return "\n".join(lines)


# -- command line ---------------------------------------------------------------------------------

def register(subparsers) -> None:
    p = subparsers.add_parser("crosscheck", help="compare reference, torch and jax: outputs and gradients")
    p.add_argument("--models", default=",".join(specs.kinds()),
                   help=f"comma-separated subset of {','.join(specs.kinds())}")
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {','.join(MODES)}")
    p.add_argument("--dtypes", default=",".join(DTYPES), help=f"comma-separated subset of {','.join(DTYPES)}")
    p.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    p.add_argument("--device", default="cpu", choices=DEVICES,
                   help="where torch and jax run (cuda: torch on the GPU, jax on its default backend); "
                        "the reference always runs on the CPU")
    p.add_argument("--json", default=None, help="write every comparison to this JSON file")
    p.set_defaults(func=_main)


def _subset(flag: str, text: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise LinrnnError(f"--{flag}: expected a comma-separated subset of {','.join(allowed)}, found {text!r}")
    return items


def _main(args: argparse.Namespace) -> int:
    try:
        seeds = tuple(int(s) for s in args.seeds.split(","))
    except ValueError:
        raise LinrnnError(f"--seeds: expected comma-separated integers, found {args.seeds!r}") from None
    selection = Selection(_subset("models", args.models, specs.kinds()), _subset("modes", args.modes, MODES),
                          _subset("dtypes", args.dtypes, DTYPES), seeds)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise LinrnnError(f"--device cuda: PyTorch {torch.__version__} sees no CUDA device")
    start = time.perf_counter()
    result = run(selection, progress=lambda i, n, what: print(f"\r[{i}/{n}] {what:<40}", end="", file=sys.stderr),
                 device=args.device)
    print(file=sys.stderr)
    print(format_table(result["summary"]))
    bad = sum(not e["ok"] for e in result["entries"])
    print(f"{len(result['entries'])} comparisons in {time.perf_counter() - start:.0f} s: "
          + ("all within the tolerance table" if not bad else f"{bad} EXCEED the tolerance table"))
    if args.json:
        from linrnn.base.results import CrosscheckRecord, Envelope, command_line, write

        write(args.json, CrosscheckRecord(result=result, envelope=Envelope.here(command_line(args))))
    return 0 if result["ok"] else 1
