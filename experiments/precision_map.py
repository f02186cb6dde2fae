"""The precision map: the error of every model x route against float64, over L and the eigenvalue radius, forward and
gradient, in float32, bfloat16 and float16 (docs/precision.md, "Low precision").

    linrnn precision-map [--quick] [--out reports/results/sections/precision_map.json]

The record is in the report's section format (`linrnn.reports.results.write_result`); the default report renders the
stored one (`linrnn.reports.sections.precision_map`).

Cases: each recurrent mixer registered (RotRNN, LRU, DLR, S4D, S5, any added later; attention has no eigenvalue and
no radius axis, and its low dtypes are checked by tests/impls/test_low_precision.py) at B = 1, H = N = 2 (RotRNN one
head of N = 2), with every eigenvalue's modulus set to the radius r exactly (`with_radius`; the RG-LRU, whose decay the
input moves, its decay at the gate's largest value, so its decays lie in [r, 1), and its cells' tolerance counts the
whole length as memory), on a standard normal input u and cotangent g.
Routes: every mode of both frameworks (PyTorch scan, sequential, conv, step; JAX scan, sequential, conv, step), and
the diagonal scan kernels alone, Triton's under TRITON_INTERPRET=1 and Pallas' with interpret=True, on n = 4 lanes of
modulus r and phases spread over (0, pi].

Measured, each as the normwise relative error max|got - ref| / max|ref| (`linrnn.base.tolerance.compare`):

* forward: y against the float64 reference (`linrnn.impls.reference`, the recurrence, `sequential`); a kernel's
  states against a float64 `scipy.signal.lfilter` of each lane;
* gradient: the vector-Jacobian product with g, in the input and in every raw parameter (one vector, as the
  cross-check measures a pass's gradient), against the float64 JAX `sequential` route's (itself within 1e-12 of the
  reference in the cross-check); a kernel's gradient in its input v against the float64 adjoint recurrence
  a_t = g_t + conj(lambda) a_{t+1} by lfilter.

In a low dtype the layer runs under the policy (inputs, projection weights and outputs in the low dtype, the
recurrence in float32); a kernel, which takes float32 only, gets v and g rounded to the low dtype (its input under the
policy) and returns float32 states. Each cell also records the tolerance table's row (`tolerance`, the row `forward` or
`gradient`); a cell above it is a finding.

Sizes: `default` L = 2^4, 2^8, 2^12 at r = 0.9, 0.99, 0.999, 0.9999, and L = 2^16 at r = 0.9999 only (`long`): one
case at 2^16 (every route but the loops, three dtypes, forward and gradient) took about 3 minutes on the shared
2-core CPU, so the full 2^16 column would have taken an hour; r = 0.9999 is its hardest radius (memory 10^4). PyTorch's
`sequential` and `step` (a Python loop over positions, a forward and a backward of tens of microseconds a position)
stop at L = 2^12, the interpreted kernels (NumPy per program step) at 2^8. `quick` (tests): LRU and the kernels at L = 16, r = 0.9, 0.999.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from pathlib import Path

import numpy as np

from linrnn.impls.bundle import Bundle
from linrnn.impls.config import mixer_config, modes
from linrnn.base.errors import LinrnnError
from linrnn.impls.specs import recurrent_kinds, spec
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, placed_radius, spectral_radius
from linrnn.base.tolerance import compare

NAME = "precision_map"
DTYPES = ("float32", "bfloat16", "float16")
H, N, LANES = 2, 2, 4
SIZES = {
    "quick": {"kinds": ("lru",), "lengths": (16,), "radii": (0.9, 0.999), "loop_max": 16, "kernel_max": 16,
              "long": [], "long_radii": []},
    "default": {"kinds": None, "lengths": (2**4, 2**8, 2**12), "radii": (0.9, 0.99, 0.999, 0.9999),
                "loop_max": 2**12, "kernel_max": 2**8, "long": [2**16], "long_radii": [0.9999]},
}
# "kinds" None: every recurrent mixer registered when the map runs (`linrnn.impls.specs.recurrent_kinds()`)
LOOPS = (("torch", "sequential"), ("torch", "step"))         # Python loops over positions: capped at loop_max
KERNELS = (("torch", "triton"), ("jax", "pallas"))
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "reports" / "results" / "sections" / f"{NAME}.json"


def routes(kind: str) -> list[tuple[str, str]]:
    return [(backend, mode) for backend in ("torch", "jax") for mode in modes(backend, kind)]


def with_radius(bundle: Bundle, r: float) -> Bundle:
    """The bundle with every eigenvalue's modulus exactly r (phases kept; the LRU's input normalisation
    gamma_log = log sqrt(1 - r^2) follows, as its initialisation sets it)."""
    kind = bundle.config.kind
    setter = spec(kind).with_radius              # each model's own (`ModelSpec.with_radius`)
    if setter is None:
        raise LinrnnError(f"with_radius: {kind} has no eigenvalues")
    out = bundle.replace(**setter(bundle.config, bundle.params, r))
    got = placed_radius(out.config, out.params)                 # the RG-LRU: its decay floor (`placed_radius`)
    if abs(got - r) > 1e-12:
        raise RuntimeError(f"with_radius({kind}, {r}): radius {got}")       # a programming error
    return out


def _rel(ref, got) -> float:
    return compare("", ref, got, "forward", "float64").rel


def _flat(parts) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(p, dtype=np.float64)) for p in parts])


# -- the layer routes --------------------------------------------------------------------------------

def torch_route(bundle: Bundle, u: np.ndarray, g: np.ndarray, mode: str, dtype: str):
    """-> y, the gradient (in u, then every parameter in bundle order) as float64 NumPy."""
    import torch

    from linrnn.impls.torch import from_bundle

    low = getattr(torch, dtype)
    layer = from_bundle(bundle, low)
    x = torch.tensor(u.astype(np.float32)).to(low).requires_grad_()
    y, _ = layer(x, mode, final_state=False)
    params = [getattr(layer, k) for k in bundle.params]
    grads = torch.autograd.grad(y, [x, *params], torch.tensor(g.astype(np.float32)).to(y.dtype))
    return y.detach().double().numpy(), _flat([t.double().numpy() for t in grads])


def jax_route(bundle: Bundle, u: np.ndarray, g: np.ndarray, mode: str, dtype: str):
    import jax
    import jax.numpy as jnp

    from linrnn.impls import jax as lj

    with lj.precision(dtype):
        params = lj.from_bundle(bundle, dtype)
        as_dtype = lambda a: jnp.asarray(a.astype(np.float32)).astype(dtype) if dtype != "float64" else jnp.asarray(a)
        y, vjp = jax.vjp(lambda p, x: lj.apply(p, bundle.config, x, mode)[0], params, as_dtype(u))
        d_params, d_u = vjp(as_dtype(g).astype(y.dtype))
        out = np.asarray(y.astype(jnp.float32) if dtype != "float64" else y, dtype=np.float64)
        flat = _flat([np.asarray(d_u.astype(jnp.float32) if dtype != "float64" else d_u)]
                     + [np.asarray(d_params[k].astype(jnp.float32)) for k in bundle.params])
    return out, flat


def layer_cells(kind: str, L: int, r: float, sizes: dict, seed: int = 0) -> list[dict]:
    bundle = with_radius(init(mixer_config(kind, H, N, heads=1), seed), r)
    rng = np.random.default_rng([seed, L])
    u, g = rng.standard_normal((1, L, H)), rng.standard_normal((1, L, H))
    y_ref = apply_mixer(bundle.config, bundle.params, u, "sequential")[0]
    _, grad_ref = jax_route(bundle, u, g, "sequential", "float64")
    cells = []
    for backend, mode in routes(kind):
        if (backend, mode) in LOOPS and L > sizes["loop_max"]:
            continue
        run = torch_route if backend == "torch" else jax_route
        for dtype in DTYPES:
            y, grad = run(bundle, u, g, mode, dtype)
            cells.append(cell(kind, f"{backend} {mode}", dtype, L, r, _rel(y_ref, y), _rel(grad_ref, grad),
                              max(r, spectral_radius(bundle.config, bundle.params))))
    return cells


# -- the kernels ---------------------------------------------------------------------------------------

def kernel_case(L: int, r: float, seed: int = 0):
    """lambda (n,) of modulus r, phases in (0, pi]; v, g (L n) complex float64."""
    from scipy.signal import lfilter   # here, not at the top: the CLI imports this module for every command

    rng = np.random.default_rng([seed, L, 7])
    lam = r * np.exp(1j * np.pi * np.arange(1, LANES + 1) / LANES)
    v = rng.standard_normal((L, LANES)) + 1j * rng.standard_normal((L, LANES))
    g = rng.standard_normal((L, LANES)) + 1j * rng.standard_normal((L, LANES))
    states = np.stack([lfilter([1.0], [1.0, -lam[i]], v[:, i]) for i in range(LANES)], axis=1)
    adjoint = np.stack([lfilter([1.0], [1.0, -np.conj(lam[i])], g[::-1, i])[::-1] for i in range(LANES)], axis=1)
    return lam, v, g, states, adjoint


def _rounded(a: np.ndarray, dtype: str) -> np.ndarray:
    """float64 -> float32 -> dtype -> float32 values (as float32 NumPy): the policy's low-dtype input of a kernel."""
    import torch
    return torch.tensor(a.astype(np.float32)).to(getattr(torch, dtype)).float().numpy()


def _pairs(z: np.ndarray, dtype: str) -> np.ndarray:
    return _rounded(np.stack([z.real, z.imag], axis=-1), dtype)


@contextlib.contextmanager
def _triton_interpreter():
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = old


def triton_kernel(lam, v, g, dtype: str):
    import torch

    from linrnn.impls.torch import triton_scan

    with _triton_interpreter():
        log_lam = torch.tensor(np.log(lam)).to(torch.complex64)
        x = torch.tensor(_pairs(v, dtype))[None].requires_grad_()                     # (1 L n 2)
        states = triton_scan.scan(log_lam, x)
        (d_v,) = torch.autograd.grad(states, [x], torch.tensor(_pairs(g, dtype))[None])
    s, d = states.detach().double().numpy()[0], d_v.double().numpy()[0]
    return s[..., 0] + 1j * s[..., 1], d[..., 0] + 1j * d[..., 1]


def pallas_kernel(lam, v, g, dtype: str):
    import jax
    import jax.numpy as jnp

    from linrnn.impls.jax import pallas_scan

    vp, gp = _pairs(v, dtype), _pairs(g, dtype)
    log_lam = jnp.asarray(np.log(lam), dtype=jnp.complex64)

    def loss(v_re, v_im):
        x = pallas_scan.scan(log_lam, jax.lax.complex(v_re, v_im), jnp.zeros(LANES, jnp.complex64), interpret=True)
        return jnp.sum(x.real * gp[..., 0] + x.imag * gp[..., 1]), x

    (_, x), (d_re, d_im) = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(jnp.asarray(vp[..., 0]),
                                                                                  jnp.asarray(vp[..., 1]))
    return np.asarray(x, dtype=np.complex128), np.asarray(d_re, np.float64) + 1j * np.asarray(d_im, np.float64)


def kernel_cells(L: int, r: float) -> list[dict]:
    lam, v, g, states, adjoint = kernel_case(L, r)
    cells = []
    for (backend, name), run in zip(KERNELS, (triton_kernel, pallas_kernel)):
        for dtype in DTYPES:
            s, d = run(lam, v, g, dtype)
            cells.append(cell("kernel", f"{backend} {name}", dtype, L, r, _rel(states, s), _rel(adjoint, d)))
    return cells


# -- the map -------------------------------------------------------------------------------------------

def cell(kind: str, route: str, dtype: str, L: int, r: float, forward: float, gradient: float,
         memory_radius: float | None = None) -> dict:
    """One cell; its tolerance's memory from `memory_radius` (None: r), the largest decay the layer can take (the
    RG-LRU's is 1 whatever its floor r: its gate moves the decay towards 1)."""
    from linrnn.base.tolerance import tolerance
    m = r if memory_radius is None else memory_radius
    tol_f, tol_g = tolerance("forward", dtype, L, m).rtol, tolerance("gradient", dtype, L, m).rtol
    return {"kind": kind, "route": route, "dtype": dtype, "L": L, "r": r, "forward": forward, "gradient": gradient,
            "forward_rtol": tol_f, "gradient_rtol": tol_g,
            "within": bool(forward <= tol_f and gradient <= tol_g)}


def run(size: str = "default", progress=None, kinds=None, kernels: bool = True) -> dict:
    """The map at `size` ('quick' or 'default') -> {'cells': [...], 'sizes': ..., 'seconds': ...}; `kinds` (default:
    the size's) and `kernels` pick a part of it (`merge` joins parts run in several processes)."""
    if size not in SIZES:
        raise LinrnnError(f"size: expected one of {', '.join(SIZES)}, found {size!r}")
    known = recurrent_kinds()
    unknown = sorted(set(kinds or ()) - set(known))
    if unknown:
        raise LinrnnError(f"kinds: expected some of {', '.join(known)}, found {', '.join(unknown)}")
    sizes = {**SIZES[size], **({"kinds": tuple(kinds)} if kinds else {})}
    sizes["kinds"] = known if sizes["kinds"] is None else sizes["kinds"]
    if not kernels:
        sizes["kernel_max"] = 0
    start, cells = time.perf_counter(), []
    cases = [(k, L, r) for k in sizes["kinds"] for L in sizes["lengths"] for r in sizes["radii"]]
    cases += [(k, L, r) for k in sizes["kinds"] for L in sizes["long"] for r in sizes["long_radii"]]
    cases += [("kernel", L, r) for L in sizes["lengths"] if L <= sizes["kernel_max"] for r in sizes["radii"]]
    for i, (kind, L, r) in enumerate(cases):
        if progress:
            progress(i, len(cases), f"{kind} L={L} r={r}")
        cells += kernel_cells(L, r) if kind == "kernel" else layer_cells(kind, L, r, sizes)
    findings = [c for c in cells if not c["within"]]
    return {"size": size, "sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in sizes.items()},
            "dtypes": list(DTYPES), "cells": cells, "findings": findings, "seconds": time.perf_counter() - start}


def merge(parts: list[dict]) -> dict:
    """One map from parts of one size run apart (`run(kinds=..., kernels=...)`): their cells, in kind order."""
    if len({p["size"] for p in parts}) != 1:
        raise LinrnnError("merge: parts of different sizes")
    order = {k: i for i, k in enumerate((*recurrent_kinds(), "kernel"))}
    cells = sorted((c for p in parts for c in p["cells"]), key=lambda c: order[c["kind"]])
    sizes = {**SIZES[parts[0]["size"]], "kinds": [k for k in recurrent_kinds() if any(c["kind"] == k for c in cells)],
             "kernel_max": max(p["sizes"]["kernel_max"] for p in parts)}
    return {"size": parts[0]["size"], "sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in sizes.items()},
            "dtypes": list(DTYPES), "cells": cells, "findings": [c for c in cells if not c["within"]],
            "seconds": sum(p["seconds"] for p in parts), "parts": len(parts)}


def write(data: dict, out: str | os.PathLike) -> Path:
    """The results record: a section record of `linrnn.base.results`, written atomically."""
    from linrnn.base import results

    out = Path(out)
    if out.suffix != ".json":
        raise LinrnnError(f"--out: expected a .json file, found {out}")
    config = {"size": data["size"], **data["sizes"], "quick": data["size"] == "quick",
              "command": "linrnn precision-map" + (" --quick" if data["size"] == "quick" else "")}
    return results.write(out, results.SectionRecord(out.stem, "cpu", config, data,
                                                   results.Envelope.here(config["command"])))


def summary_lines(data: dict) -> list[str]:
    lines = []
    for dtype in data["dtypes"]:
        cells = [c for c in data["cells"] if c["dtype"] == dtype]
        worst_f = max(cells, key=lambda c: c["forward"] / c["forward_rtol"])
        worst_g = max(cells, key=lambda c: c["gradient"] / c["gradient_rtol"])
        lines.append(f"{dtype}: {len(cells)} cells, {sum(not c['within'] for c in cells)} outside the table; largest "
                     f"forward {max(c['forward'] for c in cells):.2e}, gradient {max(c['gradient'] for c in cells):.2e}; "
                     f"closest to its row: forward {worst_f['kind']} {worst_f['route']} L={worst_f['L']} "
                     f"r={worst_f['r']} at {worst_f['forward'] / worst_f['forward_rtol']:.2f}, gradient "
                     f"{worst_g['kind']} {worst_g['route']} L={worst_g['L']} r={worst_g['r']} at "
                     f"{worst_g['gradient'] / worst_g['gradient_rtol']:.2f}")
    return lines


def register(subparsers) -> None:
    p = subparsers.add_parser("precision-map", help="the error of every model x route against float64 over L and the "
                                                    "eigenvalue radius, float32 / bfloat16 / float16, as a results record")
    p.add_argument("--quick", action="store_true", help="LRU and the kernels at L = 16 only")
    p.add_argument("--kinds", default=None, help="a comma-separated part of the mixers (default: all of the size's)")
    p.add_argument("--no-kernels", action="store_true", help="leave out the Triton and Pallas kernels")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="the results record (default "
                                                           "reports/results/sections/precision_map.json, which the "
                                                           "report renders)")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    data = run("quick" if args.quick else "default",
               progress=lambda i, n, what: print(f"[{i + 1}/{n}] {what}", flush=True),
               kinds=None if args.kinds is None else args.kinds.split(","), kernels=not args.no_kernels)
    path = write(data, args.out)
    print("\n".join(summary_lines(data)))
    print(f"wrote {path} ({len(data['cells'])} cells in {data['seconds']:.0f} s)")
    return 0
