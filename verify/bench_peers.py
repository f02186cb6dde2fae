"""The published peers' CPU routes as timed calls, each at the shapes of the project's route it is compared with.

    call, info = make_route("mambapy", "forward+backward", B=8, L=4096, H=128, N=128)
    call()                       # one synchronised call: the forward, or sum(out).backward() / jax.grad of it

Each framework's builders are in `bench_peers_torch.py` and `bench_peers_jax.py` (this module imports neither).
Every route of `ROUTES` is one (framework, family) with the same `direction`s and `(call, info)` return as
`linrnn.verify.bench_torch`'s builders, so that `linrnn.experiments.peer_speed` times them beside the project's own
routes in interleaved rounds. Two families, each with its shapes:

    layer   u (B L H) real -> y (B L H), N complex modes: the project's `lru` and `s5` layers in mode `scan`;
            s5-pytorch's `S5`, LRU-pytorch's `LRU`, lrnnx's LTI `LRU` and `S5` (`lrnnx.models.lti`), each with its own
            package's initialisation (seed 0), in float32
    scan    x_t = a_t x_{t-1} + b_t over B rows, L positions and n = N complex lanes whose a is the same at every
            position: the project's chunked scan (PyTorch) and its `lax.scan` and associative scans (JAX), which take
            one transition per lane; torch's `associative_scan`, mambapy's `pscan`, accelerated-scan's `ref.scan` and
            recurrentgemma's `linear_scan` on the same complex a and b, a materialised (B L n) as their APIs take one
            per position; fla-core's `naive_recurrent_hgrn` and mamba-ssm's `selective_scan_ref`, which take real
            decays only, on 2n real lanes (the same count of real numbers per position; a complex lane costs four
            real multiplies, a real one one: this favours them). With `varying` (a group's flag) a is drawn anew at
            every position and row, and the project's yardstick is its scan with a transition per position
            (PyTorch: `varying_scan.chunked`, on 2n real lanes beside the real-decay peers; JAX: its `lax.scan`,
            the RG-LRU's route on a CPU, with the two-level `chunked` beside it). With `real` (a PyTorch group's flag)
            every route takes real decays on 2n real lanes: the gated layers' case (the RG-LRU's state is real)

Forward+backward differentiates the sum of the output (of its real and imaginary parts for a complex one) with
respect to every input and parameter, as the project's builders do. A peer that is not installed is a
`LinrnnError` with `missing(name)`'s reason. The Triton peers (accelerated-scan's kernels, fla-core's
`fused_recurrent_hgrn`) and mamba-ssm's fused kernel are not routes: on a CPU they run only in Triton's interpreter
or not at all, whose time says nothing about the kernels.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from linrnn.base.errors import LinrnnError
from linrnn.verify.bench import check_direction


@dataclass(frozen=True)
class Route:
    name: str           # the row's name
    framework: str      # "torch" | "jax"
    family: str         # "layer" | "scan"
    own: bool           # the project's route (a yardstick) or a peer's
    what: str           # what is called, in words
    target: str = ""    # the peer's `linrnn conform` target (its package and why it is missing come from there)


ROUTES: dict[str, Route] = {r.name: r for r in (
    Route("linrnn lru scan", "torch", "layer", True, "the project's LRU layer, mode scan"),
    Route("linrnn s5 scan", "torch", "layer", True, "the project's S5 layer, mode scan"),
    Route("s5-pytorch", "torch", "layer", False, "s5-pytorch's `S5` (torch.vmap of an associative scan)",
          "s5-pytorch"),
    Route("lru-pytorch", "torch", "layer", False, "LRU-pytorch's `LRU` (a Python loop over B x L)", "lru-pytorch"),
    Route("lrnnx lru", "torch", "layer", False, "lrnnx's LTI `LRU` (an FFT convolution)", "lrnnx"),
    Route("lrnnx s5", "torch", "layer", False, "lrnnx's LTI `S5` (an FFT convolution), zero-order hold", "lrnnx"),
    Route("linrnn chunked scan", "torch", "scan", True, "the project's `scan.chunked` (complex lanes, constant a)"),
    Route("torch-associative-scan", "torch", "scan", False,
          "`torch._higher_order_ops.associative_scan`, combine_mode 'generic'", "torch-associative-scan"),
    Route("mambapy", "torch", "scan", False, "mambapy's `pscan` (Blelloch, the length padded to a power of two)",
          "mambapy"),
    Route("accelerated-scan-ref", "torch", "scan", False, "accelerated-scan's `ref.scan` (a torch tree scan)",
          "accelerated-scan-ref"),
    Route("fla-hgrn-naive", "torch", "scan", False, "fla-core's `naive_recurrent_hgrn` (a loop over positions; real, "
          "2n lanes)", "fla-hgrn-naive"),
    Route("mamba-ssm-ref", "torch", "scan", False, "mamba-ssm's `selective_scan_ref` (a loop over positions; real, "
          "2n channels, one state each)", "mamba-ssm-ref"),
    Route("linrnn varying scan", "torch", "scan", True, "the project's `varying_scan.chunked` (complex lanes, a per "
          "position)"),
    Route("linrnn varying scan, real", "torch", "scan", True, "the project's `varying_scan.chunked` on 2n real lanes "
          "(real decays per position)"),
    Route("linrnn lax.scan", "jax", "scan", True, "the project's JAX `scan.sequential` (lax.scan), vmapped over B"),
    Route("linrnn associative scan", "jax", "scan", True, "the project's JAX `scan.associative`, vmapped over B"),
    Route("linrnn varying lax.scan", "jax", "scan", True, "the project's JAX `varying_scan.sequential` (a per "
          "position; the RG-LRU's route inside a block on a CPU), vmapped over B"),
    Route("linrnn varying scan (JAX)", "jax", "scan", True, "the project's JAX `varying_scan.chunked` (a per "
          "position, two levels, its own backward), vmapped over B"),
    Route("recurrentgemma", "jax", "scan", False, "recurrentgemma's `linear_scan` (its native scan on a CPU)",
          "recurrentgemma"),
)}
# Where each peer's ratio is read: the project's route of the same contract and framework
YARDSTICK = {"s5-pytorch": "linrnn s5 scan", "lrnnx s5": "linrnn s5 scan", "lru-pytorch": "linrnn lru scan",
             "lrnnx lru": "linrnn lru scan", "recurrentgemma": "linrnn lax.scan"}
TORCH_SCAN_YARDSTICK = "linrnn chunked scan"
# ... and in a group whose a varies along the sequence (`varying`): the project's scan with a transition per position
VARYING_YARDSTICK = {"fla-hgrn-naive": "linrnn varying scan, real", "mamba-ssm-ref": "linrnn varying scan, real",
                     "recurrentgemma": "linrnn varying lax.scan"}
TORCH_VARYING_YARDSTICK = "linrnn varying scan"
# Each framework's builders (`build(name, family, direction, B, L, H, N, seed) -> call`), imported when a route of it is
# built: this module imports neither framework
SIDES = {"torch": "linrnn.verify.bench_peers_torch", "jax": "linrnn.verify.bench_peers_jax"}


def yardstick(name: str, varying: bool = False, real: bool = False) -> str | None:
    """The project's route a peer's time is divided by (None for the project's own routes); `varying`: in a group whose
    a varies along the sequence; `real`: one on real decays (2n real lanes)."""
    route = check_route(name)
    if route.own:
        return None
    if varying and real:
        return "linrnn varying scan, real"
    if varying:
        return VARYING_YARDSTICK.get(name, TORCH_VARYING_YARDSTICK)
    return YARDSTICK.get(name, TORCH_SCAN_YARDSTICK)


def check_route(name: str) -> Route:
    if name not in ROUTES:
        raise LinrnnError(f"route: expected one of {', '.join(ROUTES)}, found {name!r}")
    return ROUTES[name]


def missing(name: str) -> str | None:
    """None when route `name` can run here, else one line saying why not (the peer's `linrnn conform` reason)."""
    route = check_route(name)
    if route.own:
        return None
    from linrnn.verify.conform import unavailable

    return unavailable(route.target)


def make_route(name: str, direction: str, B: int, L: int, H: int, N: int, dtype: str = "float32",
               seed: int = 0, varying: bool = False, real: bool = False) -> tuple[Callable[[], object], dict]:
    """(call, info) of route `name` at B, L and its family's width (layer: H and N modes; scan: n = N lanes), float32,
    on the CPU; `varying`: a scan's a drawn anew at every position and row; `real`: real decays on 2n real lanes for
    every route (PyTorch). LinrnnError where the peer is missing, for another dtype, or a size below 1."""
    route = check_route(name)
    check_direction(direction)
    if dtype != "float32":
        raise LinrnnError(f"dtype: expected float32 (the peers compute in float32), found {dtype!r}")
    for what, n in (("B", B), ("L", L), ("H", H), ("N", N)):
        if not isinstance(n, int) or n < 1:
            raise LinrnnError(f"{what}: expected a positive integer, found {n!r}")
    why = missing(name)
    if why:
        raise LinrnnError(why)
    side = importlib.import_module(SIDES[route.framework])
    call = side.build(name, route.family, direction, B, L, H, N, seed, varying, real) if real else \
        side.build(name, route.family, direction, B, L, H, N, seed, varying)
    info = {"route": name, "framework": route.framework, "family": route.family, "what": route.what,
            "direction": direction, "B": B, "L": L, "dtype": dtype, "device": "cpu", "varying": varying, "real": real,
            **({"H": H, "N": N} if route.family == "layer" else {"n": N})}
    return call, info
