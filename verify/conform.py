"""`linrnn conform`: check an implementation written elsewhere against the reference, and name each deviation.

    linrnn conform TARGET --model lru|rotrnn|dlr|... [--dtype float32|float64] [--lengths L ...] [--seed S]
                   [--json FILE]

TARGET is `module:function` (importable from PYTHONPATH or the working directory) or a built-in name
(`BUILTINS`: the published peers, `lru-pytorch`, `s5-pytorch`, `lrnnx`, the scans, `mamba-ssm` where it is
installed, and `linrnn-torch` / `linrnn-jax`, the project's own layers). The protocol (docs/conform.md):

    function(bundle, config[, dtype=...]) -> call
        bundle  {key: float64 array}: a layer bundle's keys (docs/models.md), no prefixes
        config  the bundle's config as a plain dict (`linrnn.impls.config.config_to_dict`)
        dtype   'float64' | 'float32', passed only to a function that has a `dtype` parameter
        raises NotImplementedError for a config it does not support (e.g. bidirectional): "n/a", not a failure
    call(u) -> y                          u (B L H) float64 NumPy; y (B L H), anything numpy.asarray takes
    call(u, state=s) -> (y, state)        when `call` has a `state` parameter; s = None starts from zeros and
                                          the state returned is opaque: it is only passed back

The battery, for each dtype (the target's own output compared with the float64 reference's, with the
tolerance table of `linrnn.impls.tolerance`, never a looser one):

    impulse      one impulse per input channel: the impulse responses at lag 0 and at lags >= 1, each on its
                 own scale (a large skip D u cannot hide the recurrence)
    random L=..  random inputs at each length (L = 1 and an odd L by default)
    radius ..    the bundle re-initialised with decay radii near 1 and small (the config's init fields): the
                 impulse responses and a random input
    bidirectional  the bundle re-initialised with `bidirectional`, where the kind has one
    state        a sequence split over two calls, the state passed on, against the target's own single call
    gradient     where the call differentiates (a torch tensor or a JAX array in, a gradient out): the input
                 gradient of <w, y> against the reference's J^T w (exact: the layer is linear in u, and J is
                 the reference's response to unit impulses)

A failed check is explained by probes, never by the target's name (`Diagnosis`): the lag-0 error of the
impulse responses (the skip D), fits of the recurrent part to the contract's output scaled or to its
imaginary part, the error level of a float64 run, the target's own single-call and zero-state outputs
(the state), its own forward-only layer (the backward direction), and its output check (the gradient).
From Python: `run` (every check, as the command), `battery(target, kind, dtype, ...)` whose `one(name)` runs one check
alone and `plan` (the checks' names, nothing built or run): `linrnn.testing` makes a pytest case of each. Each check
draws its random inputs from the seed and its own name (`rng_for`), so a check run alone sees what it sees in the
whole battery.
Exit status: 0 conforms, 1 deviates, 2 bad input (a one-line `LinrnnError`: an unimportable target, one that
is not callable, an output of the wrong shape, a complex output, NaN or Inf).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import inspect
import importlib.metadata
import itertools
import json
import os
import sys
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from linrnn.verify import conform_scan as scan
from linrnn.verify import conform_spectrum as spectrum
from linrnn.impls.bundle import mixer_shapes
from linrnn.impls import specs
from linrnn.impls.config import MIXER_CONFIGS, MixerConfig, config_to_dict, mixer_config
from linrnn.impls.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.reference import apply_mixer, spectral_radius
from linrnn.impls.tolerance import compare, tolerance

# Built-in targets: name -> (module, function). The modules live on the framework sides and are imported
# only when named, so this module imports neither framework (docs/architecture.md, "The layers").
BUILTINS: dict[str, tuple[str, str]] = {
    "lru-pytorch": ("linrnn.verify.conform_torch", "lru_pytorch"),
    "s5-pytorch": ("linrnn.verify.conform_torch", "s5_pytorch"),
    "lrnnx": ("linrnn.verify.conform_peers_torch", "lrnnx"),
    "accelerated-scan": ("linrnn.verify.conform_peers_torch", "accelerated_scan"),
    "accelerated-scan-ref": ("linrnn.verify.conform_peers_torch", "accelerated_scan_ref"),
    "torch-associative-scan": ("linrnn.verify.conform_peers_torch", "torch_associative_scan"),
    "recurrentgemma": ("linrnn.verify.conform_jax", "recurrentgemma"),
    "mamba-ssm-ref": ("linrnn.verify.conform_peers_torch", "mamba_ssm_ref"),
    "mamba-ssm": ("linrnn.verify.conform_peers_torch", "mamba_ssm"),
    "fla-hgrn-naive": ("linrnn.verify.conform_peers_torch", "fla_hgrn_naive"),
    "fla-hgrn": ("linrnn.verify.conform_peers_torch", "fla_hgrn"),
    "mambapy": ("linrnn.verify.conform_peers_torch", "mambapy"),
    "linrnn-torch": ("linrnn.verify.conform_torch", "linrnn_torch"),
    "linrnn-jax": ("linrnn.verify.conform_jax", "linrnn_jax"),
    "linrnn-torch-scan": ("linrnn.verify.conform_peers_torch", "linrnn_torch_scan"),
    "linrnn-jax-scan": ("linrnn.verify.conform_jax", "linrnn_jax_scan"),
}


@dataclass(frozen=True)
class PeerInfo:
    distribution: str           # the package on PyPI (the `[peers]` extra), or "" for the project's own
    module: str                 # its import name
    models: tuple[str, ...]     # the contracts its adapter implements
    what: str                   # what is checked
    lineage: str                # where its code came from, and which other built-in targets share it


# The published implementations (docs/conform.md, "Built-in targets"). Two targets whose code shares an origin
# are not two independent checks: `lineage` says so.
PEERS: dict[str, PeerInfo] = {
    "lru-pytorch": PeerInfo("LRU-pytorch", "LRU_pytorch", ("lru",), "its `LRU`",
                            "written from the LRU paper's pseudo-code; shares no code with the other targets"),
    "s5-pytorch": PeerInfo("s5-pytorch", "s5", ("s5", "lru"), "its `S5`",
                           "a port of the authors' JAX S5 (lindermanlab/S5, via kavorite/S5); its initialisation "
                           "from annotated-s4"),
    "lrnnx": PeerInfo("lrnnx", "lrnnx", ("lru", "s5"), "`lrnnx.models.lti` `LRU`, `S5`",
                      "its own LTI layers over one FFT convolution (`opt_ssm_forward`) and one table of "
                      "discretisations (`lrnnx.core.discretization`) shared by its LRU and S5; its S4/S4D "
                      "kernels are taken from state-spaces/s4"),
    "accelerated-scan": PeerInfo("accelerated-scan", "accelerated_scan", ("scan",),
                                 "`accelerated_scan.scalar.scan` (real) and `.complex.scan` (Triton, forward "
                                 "only; TRITON_INTERPRET=1 on the CPU)",
                                 "one package with accelerated-scan-ref, which is written to check these kernels"),
    "accelerated-scan-ref": PeerInfo("accelerated-scan", "accelerated_scan", ("scan",),
                                     "`accelerated_scan.ref.scan`, its torch tree scan (forward and reverse)",
                                     "the reference of accelerated-scan's kernels, same package: a different "
                                     "algorithm (Blelloch's tree), the same author"),
    "torch-associative-scan": PeerInfo("torch", "torch", ("scan",),
                                       "`torch._higher_order_ops.associative_scan` (combine_mode 'generic' on the "
                                       "CPU)", "PyTorch's own; shares no code with the other targets"),
    "recurrentgemma": PeerInfo("recurrentgemma", "recurrentgemma", ("scan",),
                               "`recurrentgemma.jax.scan.linear_scan` (JAX, its native linear scan on the CPU)",
                               "Google DeepMind's Griffin code; its PyTorch `rnn_scan` is a port of this one (not "
                               "a target: importing it imports the JAX side too)"),
    "mamba-ssm-ref": PeerInfo("mamba-ssm", "mamba_ssm", ("scan",),
                              "`mamba_ssm.ops.selective_scan_interface.selective_scan_ref` (PyTorch, one position at "
                              "a time; float32 only)",
                              "the reference mamba-ssm tests its fused kernel against: one package with mamba-ssm, "
                              "same authors (Tri Dao, Albert Gu), another algorithm; lrnnx's "
                              "`lrnnx.ops.selective_scan` (not a target) is modified from this file"),
    "mamba-ssm": PeerInfo("mamba-ssm", "mamba_ssm", ("scan",),
                          "`selective_scan_fn`, mamba-ssm's fused CUDA kernel (float32 only, on a CUDA device)",
                          "one package with mamba-ssm-ref, written to check this kernel"),
    "fla-hgrn-naive": PeerInfo("fla-core", "fla", ("scan",),
                               "`fla.ops.hgrn.naive.naive_recurrent_hgrn`, HGRN's reference loop (real decays "
                               "exp(g_t); float32 only)",
                               "flash-linear-attention's (fla-org) reference its HGRN kernels are tested against: one "
                               "package with fla-hgrn"),
    "fla-hgrn": PeerInfo("fla-core", "fla", ("scan",),
                         "`fla.ops.hgrn.fused_recurrent_hgrn`, HGRN's fused Triton kernel (float32 only; Triton's "
                         "interpreter on the CPU)",
                         "one package with fla-hgrn-naive, written to check this kernel; its `chunk_hgrn` is not a "
                         "target: Triton 3.9's interpreter fails on it (InterpreterError: mask has unsupported dtype)"),
    "mambapy": PeerInfo("mambapy", "mambapy", ("scan",),
                        "`mambapy.pscan.pscan`, a Blelloch scan in PyTorch, the length padded to a power of two",
                        "alxndrTL/mamba.py: written apart from mamba-ssm (its scan is its own; its Mamba block follows "
                        "mamba-ssm's selective_scan_ref); shares no code with the other targets"),
}
# The module that sets TRITON_INTERPRET=1 (no CUDA device) before triton is first imported, so that the Triton peers'
# kernels (accelerated-scan, fla-hgrn) are decorated for Triton's interpreter: imported before the other targets'
TRITON_FIRST = "linrnn.verify.conform_peers_torch"


def own_models(target: str) -> tuple[str, ...]:
    """The contracts this project's own target implements: every recurrent model registered (its spec), or the scan."""
    return ("scan",) if target.endswith("-scan") else specs.recurrent_kinds()


OWN = ("linrnn-torch", "linrnn-jax", "linrnn-torch-scan", "linrnn-jax-scan")
# The gradient probes: framework -> module with `input_gradient(call, u, w) -> (gradient or None, how or why
# not)`, raising what the call raises on that framework's arrays. A framework is tried only when the target
# has imported it already.
GRADIENT_PROBES = {"torch": "linrnn.verify.conform_torch", "jax": "linrnn.verify.conform_jax"}

def models() -> tuple[str, ...]:
    """The contracts: each recurrent mixer kind registered (`linrnn.impls.specs`), and the scan x_t = a_t x_{t-1} + b_t."""
    return specs.recurrent_kinds() + ("scan",)


DTYPES = ("float64", "float32")
DEFAULT_LENGTHS = (1, 7, 16)
LONG_LENGTH = 4096             # the long check: radius near 1, where float32 routes drift
VERY_LONG_LENGTH = 2**16 + 1   # the very long check: past 2^16, where chunked kernels have skipped their tail chunk
SHORT_LENGTHS = tuple(range(1, 9))   # the short-lengths check: every length a chunked route may mishandle (L <= 8)
H, N, HEADS = 3, 4, 2          # the battery's layer: H != N, so that a transposed matrix cannot pass
BATCH = H                      # rows of every input (the impulses need H): one shape per length, so that a
                               # compiling target (JAX) compiles once per length

# The radius checks: label -> (the radius, a discretised model's steps Delta, log-uniform in the range). Every
# eigenvalue's modulus is set to the radius, phases kept, by the model's own `ModelSpec.with_radius` (near 1: a memory
# of 10^4 steps, where float32 routes drift; small: a fast decay); small steps near 1, where the zero-order hold's
# (exp(Delta Lambda) - 1) cancels.
RADII = {"near 1": (0.9999, (1e-4, 2e-4)), "small": (0.1, (4.0, 6.0))}
# Kinds whose output is the real part of a complex read-out: kind -> (its output matrix, the (real, imaginary)
# key pairs of that matrix, the factor before Re: 2 where the conjugate half of the modes is dropped), from each
# model's spec (`ModelSpec.readout`). Im(C x) = Re((C_im - i C_re) x) probes "the imaginary part".
COMPLEX_READOUTS = specs.SpecView(lambda s: s.readout, only=lambda s: s.readout is not None)
LAG0_DOMINANCE = 10.0   # the lag-0 error names the skip D when it is this many times the error at lags >= 1

# The discrete choices of each contract (docs/models.md), from each model's spec (`ModelSpec.variants`): the battery
# checks every combination (and each in its bidirectional form) that `--set` does not pin; the first value of each
# is the base configuration's.
VARIANTS = specs.SpecView(lambda s: s.variants)
SHORT_NAME = f"lengths {SHORT_LENGTHS[0]}-{SHORT_LENGTHS[-1]}"
SIZES = ("d_model", "d_state")   # the battery's own sizes: `--set` cannot change them
CLIPPED_RE = 0.05                # Re(Lambda) of every other S5 mode under clip_eigs, so that the clip acts


# -- results ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Diagnosis:
    key: str      # stable name of the deviation (tests and the report match on it)
    words: str    # what was found, with the measured error against the tolerance


@dataclass
class Check:
    name: str                   # 'impulse', 'random L=7', 'radius near 1', 'bidirectional', 'state', 'gradient'
    dtype: str
    status: str                 # 'pass', 'fail' or 'n/a'
    rel: float | None = None    # the normwise relative error (linrnn.impls.tolerance)
    rtol: float | None = None   # its tolerance
    detail: str = ""            # what was compared, or why the check does not apply
    diagnoses: list[Diagnosis] = field(default_factory=list)

    def line(self) -> str:
        head = f"{self.status.upper() if self.status == 'fail' else self.status:<4} {self.name} ({self.dtype})"
        if self.rel is None:
            return f"{head}: {self.detail}"
        verdict = "<=" if self.status == "pass" else ">"
        return f"{head}: relative error {self.rel:.2e} {verdict} tolerance {self.rtol:.2e}; {self.detail}"


@dataclass
class Result:
    target: str
    model: str
    dtypes: tuple[str, ...]
    lengths: tuple[int, ...]
    seed: int
    checks: list[Check]
    pins: dict = field(default_factory=dict)     # the fields `--set` pins
    long_length: int = LONG_LENGTH
    very_long_length: int = VERY_LONG_LENGTH

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    def diagnoses(self) -> list[Diagnosis]:
        """Each deviation once (its first measurement), in the order the checks found them."""
        seen: dict[str, Diagnosis] = {}
        for check in self.checks:
            for d in check.diagnoses:
                seen.setdefault(d.key, d)
        return list(seen.values())

    def __str__(self) -> str:
        return format_result(self)

    def to_dict(self) -> dict:
        return {"target": self.target, "model": self.model, "dtypes": list(self.dtypes),
                "lengths": list(self.lengths), "seed": self.seed, "sets": dict(self.pins),
                "long_length": self.long_length, "very_long_length": self.very_long_length, "conforms": self.ok,
                "checks": [dataclasses.asdict(c) for c in self.checks],
                "diagnoses": [dataclasses.asdict(d) for d in self.diagnoses()]}


# -- the target ---------------------------------------------------------------------------------

def _why(err: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    return f"{type(err).__name__}: {next(iter(str(err).splitlines()), '')}"


def _accepts(fn: Callable, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):        # a callable without an inspectable signature
        return False


def resolve(target: str) -> Callable:
    """The build function of `target`: a built-in name or `module:function`."""
    if target in BUILTINS:
        reason = unavailable(target)
        if reason:
            raise LinrnnError(reason)
        module_name, function = BUILTINS[target]
        return getattr(importlib.import_module(module_name), function)
    if ":" not in target:
        raise LinrnnError(f"target: expected module:function or one of {', '.join(BUILTINS)}, found {target!r}")
    module_name, _, function = target.rpartition(":")
    if os.getcwd() not in sys.path:            # the working directory, after everything else on the path
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as err:                   # the user's module may fail in any way while importing
        raise LinrnnError(f"target {target}: cannot import {module_name!r} "
                          f"({_why(err)})") from None
    if not hasattr(module, function):
        raise LinrnnError(f"target {target}: module {module_name!r} has no attribute {function!r}")
    build = getattr(module, function)
    if not callable(build):
        raise LinrnnError(f"target {target}: expected a function(bundle, config), found {type(build).__name__}")
    return build


class Layer:
    """One built target: `call(u)` -> (y float64 (B L H), state or None), every output checked."""

    def __init__(self, name: str, build: Callable, cfg: MixerConfig, params: Mapping[str, np.ndarray], dtype: str):
        self.name = name
        kwargs = {"dtype": dtype} if _accepts(build, "dtype") else {}
        bundle = {key: np.array(value) for key, value in params.items()}   # writeable copies
        try:
            self.fn = build(bundle, config_to_dict(cfg), **kwargs)
        except (NotImplementedError, LinrnnError):
            raise
        except Exception as err:
            raise LinrnnError(f"target {name}: building it for {_describe(cfg)} raised "
                              f"{_why(err)}") from None
        if not callable(self.fn):
            raise LinrnnError(f"target {name}: function(bundle, config) returned {type(self.fn).__name__}, "
                              f"expected a callable u -> y")
        self.takes_state = _accepts(self.fn, "state")
        self.takes_lengths = _accepts(self.fn, "lengths")       # padded rows
        self.takes_segments = _accepts(self.fn, "segments")     # packed sequences
        self.output_dtype = None      # the dtype of the last output as the target returned it

    def raw(self, u, state=None, **packing):
        """The target's own output for u (NumPy, tensor or array): y as returned, and its state. `packing`: lengths=
        or segments=, passed only when given."""
        if not self.takes_state:
            return self.fn(u, **packing), None
        out = self.fn(u, state=state, **packing)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise LinrnnError(f"target {self.name}: a callable with a state parameter must return (y, state), "
                              f"found {type(out).__name__}")
        return out

    def __call__(self, u: np.ndarray, what: str, state=None, **packing) -> tuple[np.ndarray, Any]:
        try:
            y, state = self.raw(u.copy(), state, **packing)
        except (NotImplementedError, LinrnnError):
            raise
        except Exception as err:
            raise LinrnnError(f"target {self.name}: {what}: calling it on u of shape {u.shape} raised "
                              f"{_why(err)}") from None
        arr = as_array(self.name, what, y)
        self.output_dtype = arr.dtype
        return check_output(self.name, what, arr, u.shape), state


def as_array(name: str, what: str, y) -> np.ndarray:
    try:
        return np.asarray(y)
    except Exception as err:
        raise LinrnnError(f"target {name}: {what}: numpy.asarray cannot read its output "
                          f"({_why(err)})") from None


def check_output(name: str, what: str, arr: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The target's output as a float64 array of `shape`, or a one-line LinrnnError (shape, complex, NaN/Inf)."""
    if np.iscomplexobj(arr):
        raise LinrnnError(f"target {name}: {what}: expected a real output, found dtype {arr.dtype}")
    if arr.dtype.kind not in "fiu":
        raise LinrnnError(f"target {name}: {what}: expected a numeric output, found dtype {arr.dtype}")
    if arr.shape != shape:
        raise LinrnnError(f"target {name}: {what}: expected an output of shape {shape} (B, L, H), found {arr.shape}")
    bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
    if bad:
        raise LinrnnError(f"target {name}: {what}: expected finite outputs, found {bad} NaN/Inf")
    return arr.astype(np.float64)


def _describe(cfg: MixerConfig) -> str:
    return f"{cfg.kind}{' bidirectional' if cfg.bidirectional else ''}"


# -- the reference and measurements ----------------------------------------------------------

def reference(cfg: MixerConfig, params: Mapping[str, np.ndarray], u: np.ndarray, **packing) -> np.ndarray:
    """The float64 reference from a zero state (`packing`: lengths= or segments=).     u (B L H) -> y (B L H)"""
    mode = "conv" if getattr(cfg, "max_kernel_length", None) else "sequential"
    return apply_mixer(cfg, params, u, mode, **packing)[0]


def rel_error(ref: np.ndarray, got: np.ndarray, scale: float | None = None) -> float:
    """max|got - ref| / max(max|ref|, scale): `linrnn.impls.tolerance.compare`'s normwise measure (inf on NaN)."""
    return compare("conform", ref, got, "forward", "float64", scale=scale).rel


def fit_factor(ref: np.ndarray, got: np.ndarray) -> tuple[float, float]:
    """The least-squares c in got ~ c ref, and the relative error of that fit."""
    denom = float(np.sum(ref * ref))
    if denom == 0:
        return 0.0, np.inf
    c = float(np.sum(got * ref)) / denom
    return c, rel_error(c * ref, got, float(np.max(np.abs(ref))))


def impulses(length: int, at: int = 0) -> np.ndarray:
    """One sequence per input channel, a unit impulse on that channel at position `at`.     -> (H L H)"""
    u = np.zeros((H, length, H))
    u[np.arange(H), at, np.arange(H)] = 1.0
    return u


def float32_level(dtype: str, rel: float, length: int, radius: float, row: str = "forward",
                  output_dtype=None) -> Diagnosis | None:
    """'computes in float32 only' when a float64 run's error is at the float32 level (within its tolerance)."""
    tol32 = tolerance(row, "float32", length, radius).rtol
    if dtype != "float64" or not (tolerance(row, "float64", length, radius).rtol < rel <= tol32):
        return None
    seen = f"; its output has dtype {output_dtype}" if output_dtype == np.float32 else ""
    return Diagnosis("float32_only", f"computes in float32 only: a float64 run's error {rel:.2e} is at the "
                                     f"float32 level (float32 tolerance {tol32:.2e}){seen}")


# -- the battery --------------------------------------------------------------------------------

def rng_for(seed: int, check: str) -> np.random.Generator:
    """The random inputs of the check named `check`: from the seed and the name alone, so that one check run alone
    draws what it draws in the whole battery."""
    return np.random.default_rng([seed, zlib.crc32(check.encode())])


def variant_name(fields: Mapping[str, Any]) -> str:
    """A variant check's name: 'variant discretization="bilinear", bidirectional=true'."""
    return "variant " + ", ".join(f"{k}={json.dumps(v)}" for k, v in fields.items())


def run_one(battery, name: str):
    """Check `name` of `battery` (either battery: a layer's or the scan's), run once and kept; an unknown name is a
    one-line error naming the battery's checks."""
    if name not in battery.done:
        checks = {n: thunk for n, _, thunk in battery.schedule()}
        if name not in checks:
            raise LinrnnError(f"check: expected one of {', '.join(checks)}, found {name!r}")
        battery.done[name] = checks[name]()
    return battery.done[name]


@dataclass(frozen=True)
class Planned:
    name: str                   # the check's name, as its `Check.name`
    dtype: str
    variant: dict               # the config fields its variant sets ({}: the base configuration)


def battery(target: str | Callable, kind: str, dtype: str, lengths=DEFAULT_LENGTHS, seed: int = 0, sets=(),
            long_length: int = LONG_LENGTH, very_long_length: int | None = None):
    """One dtype's battery of `target` claiming the contract of `kind`, with its arguments checked as `run` checks
    them; nothing is built or run until a check is (`Battery.one`, `.run`). `target` may be None to `plan` only.
    very_long_length None: `VERY_LONG_LENGTH` as the module holds it when called."""
    very_long_length = VERY_LONG_LENGTH if very_long_length is None else very_long_length
    if kind not in models():
        raise LinrnnError(f"--model: expected one of {', '.join(models())}, found {kind!r}")
    if dtype not in DTYPES:
        raise LinrnnError(f"--dtype: expected {' or '.join(DTYPES)}, found {dtype!r}")
    lengths = check_lengths(lengths)
    for option, value in (("--long", long_length), ("--very-long", very_long_length)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LinrnnError(f"{option}: expected a length >= 0 (0 leaves the check out), found {value}")
    if isinstance(sets, Mapping):
        sets = [f"{k}={json.dumps(v)}" for k, v in sets.items()]
    pins = scan.parse_sets(sets) if kind == "scan" else parse_sets(kind, sets)
    if target is None:
        name, build = "", None
    elif callable(target):
        name, build = f"{getattr(target, '__module__', '')}:{getattr(target, '__qualname__', repr(target))}", target
    else:
        name, build = target, resolve(target)
    if kind == "scan":
        return scan.Battery(name, build, dtype, lengths, seed, pins, long_length, sys.modules[__name__],
                            very_long_length)
    return Battery(name, build, kind, dtype, lengths, seed, pins, long_length, very_long_length)


def plan(kind: str, dtypes: tuple[str, ...] = DTYPES, lengths=DEFAULT_LENGTHS, seed: int = 0, sets=(),
         long_length: int = LONG_LENGTH, very_long_length: int | None = None) -> list[Planned]:
    """The checks `run` makes for a target of `kind`, in its order, without building a target or running one."""
    return [Planned(name, dtype, dict(fields)) for dtype in dtypes
            for name, fields, _ in battery(None, kind, dtype, lengths, seed, sets, long_length,
                                           very_long_length).schedule()]


class Battery:
    """Every check of one target at one model kind and dtype; `pins` are the config fields `--set` fixes."""

    def __init__(self, name: str, build: Callable, kind: str, dtype: str, lengths: tuple[int, ...], seed: int,
                 pins: Mapping[str, Any] | None = None, long_length: int = LONG_LENGTH,
                 very_long_length: int = VERY_LONG_LENGTH):
        self.name, self.build, self.kind, self.dtype = name, build, kind, dtype
        self.lengths, self.seed, self.pins, self.long_length = lengths, seed, dict(pins or {}), long_length
        self.very_long_length = very_long_length
        self.cfg = make_config(kind, **self.pins)
        self.params = bundle_for(self.cfg, seed)
        self.radius = spectral_radius(self.cfg, self.params)
        self.done: dict[str, Check] = {}         # the checks run so far, by name
        self.probed: dict[MixerConfig, list[Diagnosis]] = {}    # the discretisation probes, once per config

    @functools.cached_property
    def layer(self) -> Layer:
        """The target built on the base bundle, on first use (`schedule` and `plan` build no target)."""
        return Layer(self.name, self.build, self.cfg, self.params, self.dtype)

    def rng(self, check: str) -> np.random.Generator:
        """The random inputs of one check, from the seed and the check's name: a check run alone (`one`, as
        `linrnn.testing` runs it) sees the inputs it sees in the whole battery."""
        return rng_for(self.seed, check)

    def tol(self, length: int, radius: float | None = None, row: str = "forward") -> float:
        return tolerance(row, self.dtype, length, self.radius if radius is None else radius).rtol

    def fit_tol(self, length: int, radius: float) -> float:
        """How closely a probe's hypothesis must fit: the tolerance, or in a float64 run the float32 one (the
        finding is then named beside "computes in float32 only")."""
        return tolerance("forward", "float32" if self.dtype == "float64" else self.dtype, length, radius).rtol

    def check(self, name: str, rel: float, rtol: float, detail: str) -> Check:
        return Check(name, self.dtype, "pass" if rel <= rtol else "fail", rel, rtol, detail)

    def schedule(self) -> list[tuple[str, dict[str, Any], Callable[[], Check]]]:
        """The battery in order: (the check's name, the config fields its variant sets ({}: the base
        configuration), the check itself). Building it runs nothing."""
        L = max(self.lengths)
        out = [("impulse", {}, functools.partial(self.impulse, L))]
        out += [(f"random L={n}", {}, functools.partial(self.random, n)) for n in self.lengths]
        out += [(f"radius {label}", {}, functools.partial(self.radii, label, L)) for label in ("near 1", "small")]
        if self.long_length:
            name = f"long L={self.long_length}"
            out.append((name, {}, functools.partial(self.radii, "near 1", self.long_length, name)))
        out += [("bidirectional", {}, functools.partial(self.bidirectional, L)),
                ("state", {}, functools.partial(self.state, L)), ("gradient", {}, functools.partial(self.gradient, L))]
        out += [("state hand-over", {}, functools.partial(self.handover, L)),
                (SHORT_NAME, {}, self.short)]
        if self.very_long_length:
            out.append((f"very long L={self.very_long_length}", {}, self.very_long))
        out += [("packing", {}, functools.partial(self.packing, L)), ("padding", {}, functools.partial(self.padding, L))]
        out += [(variant_name(fields), fields, functools.partial(self.variant, fields, L))
                for fields in variants(self.kind, self.pins)[1:]
                if fields != {"bidirectional": True}]          # that one is the bidirectional check
        return out

    def run(self) -> list[Check]:
        return [self.one(name) for name, _, _ in self.schedule()]

    def one(self, name: str) -> Check:
        """The check `name` (as `schedule` names it) alone, run once."""
        return run_one(self, name)

    # -- the discretisation ---------------------------------------------------------------------

    def respond(self, cfg: MixerConfig, params: Mapping[str, np.ndarray], u: np.ndarray) -> np.ndarray:
        """The target built on another bundle of `cfg`, on u: the probes' question."""
        return Layer(self.name, self.build, cfg, params, self.dtype)(u, "discretisation probe")[0]

    def discretisation(self, cfg: MixerConfig) -> list[Diagnosis]:
        """What the discretisation probes find for `cfg` (forward-only), once per config; [] for kinds without a
        discretisation, and for a config the target does not build."""
        cfg = dataclasses.replace(cfg, bidirectional=False) if hasattr(cfg, "bidirectional") else cfg
        if cfg.kind not in spectrum.DISCRETISED:
            return []
        if cfg not in self.probed:
            params = bundle_for(cfg, self.seed)
            tol = self.tol(spectrum.PROBE_LENGTH, 1.0)
            try:
                found = spectrum.discretisation(cfg, params, self.respond, self.fit_tol(spectrum.PROBE_LENGTH, 1.0),
                                                tol)
                found += spectrum.cancellation(cfg, params, self.respond, self.dtype)
            except NotImplementedError:
                found = []
            self.probed[cfg] = [Diagnosis(f.key, f.words) for f in found]
        return self.probed[cfg]

    def level(self, cfg: MixerConfig, rel: float, length: int, radius: float, row: str = "forward",
              output_dtype=None) -> list[Diagnosis]:
        """The cause of an error at rounding level: the zero-order hold's cancellation where the probes find its
        signature (not "float32 only", whose error level it can reach in a float64 run), else the float32 level."""
        small = self.tol(length, radius) < rel <= self.fit_tol(length, radius)
        cancel = [d for d in self.discretisation(cfg) if d.key == "expm1"] if small else []
        if cancel:
            return cancel
        found = float32_level(self.dtype, rel, length, radius, row, output_dtype)
        return [found] if found else []

    # -- impulse responses --------------------------------------------------------------------

    def impulse(self, L: int) -> Check:
        return self.impulse_check("impulse", self.cfg, self.params, self.radius, self.layer, L,
                                  f"one impulse per input channel, L = {L}, r = {self.radius:.6g}")

    def impulse_check(self, name: str, cfg: MixerConfig, params: Mapping[str, np.ndarray], radius: float,
                      layer: Layer, L: int, detail: str, u_random: np.ndarray | None = None) -> Check:
        """The impulse responses at lag 0 (the skip and the first step) and at lags >= 1 (the recurrence), each
        on its own scale, so that a large skip D u cannot hide the recurrence; and a random input, if given."""
        u = impulses(L)
        y, _ = layer(u, name)
        ref = reference(cfg, params, u)
        parts = {"lag 0": rel_error(ref[:, :1], y[:, :1])}
        if L > 1:
            parts["lags >= 1"] = rel_error(ref[:, 1:], y[:, 1:])
        if u_random is not None:
            parts["random input"] = rel_error(reference(cfg, params, u_random), layer(u_random, name)[0])
        tol = self.tol(L, radius)
        c = self.check(name, max(parts.values()), tol,
                       f"{detail}; errors: " + ", ".join(f"{k} {v:.2e}" for k, v in parts.items()))
        if c.status == "fail":
            c.diagnoses = self.explain_impulse(cfg, params, radius, u, ref, y, tol, layer.output_dtype)
        return c

    def explain_impulse(self, cfg: MixerConfig, params: Mapping[str, np.ndarray], radius: float, u: np.ndarray,
                        ref: np.ndarray, y: np.ndarray, tol: float, output_dtype) -> list[Diagnosis]:
        """Probes of the impulse responses (H_in L H_out): the lag-0 error (the skip), then fits of the recurrent
        part (lags >= 1) to the contract's output times a factor and to its imaginary part.

        In a float64 run a fit that leaves an error at the float32 level is accepted too, and the float32
        rounding is named beside it (a target can both drop a factor and compute in float32)."""
        found = []
        L = u.shape[1]
        lag0 = (y[:, 0, :] - ref[:, 0, :]) / float(np.max(np.abs(ref[:, 0, :])))     # (H_in H_out)
        off = float(np.max(np.abs(lag0 - np.diag(np.diag(lag0)))))
        diag = float(np.max(np.abs(np.diag(lag0))))
        rest = rel_error(ref[:, 1:], y[:, 1:]) if L > 1 else 0.0
        if max(off, diag) > tol and max(off, diag) > LAG0_DOMINANCE * rest:
            if off > tol:
                found.append(Diagnosis("dense_D", f"D is applied as a dense matrix, not elementwise: the impulse "
                                                  f"responses at lag 0 err off the diagonal by {off:.2e} (tolerance "
                                                  f"{tol:.2e}), at lags >= 1 by {rest:.2e}"))
            else:
                found.append(Diagnosis("skip_D", f"the skip D u is wrong: the impulse responses err at lag 0 on the "
                                                 f"diagonal by {diag:.2e} (tolerance {tol:.2e}), at lags >= 1 by "
                                                 f"{rest:.2e}"))
        if rest <= tol:
            return found
        fit_tol = self.fit_tol(L, radius)
        residual = rest                                                 # what no finding explains
        factor = factor_diagnosis(ref[:, 1:], y[:, 1:], tol, fit_tol, "its recurrent part", readout(cfg.kind))
        if factor:
            found.append(factor[0])
            residual = factor[1]
        if cfg.kind in COMPLEX_READOUTS:
            matrix, pairs, _ = COMPLEX_READOUTS[cfg.kind]
            imag = reference(cfg, imaginary_readout(params, pairs), u)
            c, fit = fit_factor(imag[:, 1:], y[:, 1:])
            if fit <= fit_tol:
                residual = fit
                found.append(Diagnosis("imaginary", f"the output is not the real part of {matrix} x: its recurrent "
                                                    f"part is {c:.6g} x the imaginary part "
                                                    f"{readout(cfg.kind).replace('Re(', 'Im(')} (fit error {fit:.2e}, "
                                                    f"tolerance {tol:.2e}; against the real part {rest:.2e})"))
        probes = self.discretisation(cfg)
        if any(d.key == "expm1" for d in probes):      # its cancellation, not float32 arithmetic, is the rounding
            return found + probes
        return found + probes + self.level(cfg, residual, L, radius, output_dtype=output_dtype)

    # -- random inputs, radii -------------------------------------------------------------------

    def random(self, L: int) -> Check:
        u = self.rng(f"random L={L}").standard_normal((BATCH, L, H))
        y, _ = self.layer(u, f"random L={L}")
        ref = reference(self.cfg, self.params, u)
        c = self.check(f"random L={L}", rel_error(ref, y), self.tol(L), f"B = {BATCH}, r = {self.radius:.6g}")
        if c.status == "fail":
            c.diagnoses = self.level(self.cfg, c.rel, L, self.radius, output_dtype=self.layer.output_dtype)
        return c

    def radius_bundle(self, label: str) -> tuple[dict | None, str]:
        """The base bundle of the radius check `label` (`RADII`) and its words; or None and why there is none.

        A model with a discretisation first takes the label's steps (its spec's `discretisation.step_key`: small
        near 1, where a discretisation's cancellation shows); then the model's `with_radius` sets every decay's
        modulus to the radius. Where that cannot place this config's decays (a bilinear S5), the steps alone set
        them (about the radius: Re Lambda = -1/2 at initialisation)."""
        r, steps = RADII[label]
        params, words = dict(self.params), []
        discretisation = specs.spec(self.kind).discretisation
        if discretisation is not None:
            key = discretisation.step_key
            params[key] = self.rng(f"radius {label} steps").uniform(*np.log(steps), np.shape(params[key]))
            words.append(f"steps Delta log-uniform in [{steps[0]:g}, {steps[1]:g}]")
        placed, why = at_radius(self.cfg, params, r)
        if placed is not None:
            return placed, ", ".join(words + [f"every |lambda| = {r:g} (with_radius)"])
        if words:
            return params, ", ".join(words + [f"the decays as these steps leave them ({why})"])
        return None, why

    def radii(self, label: str, L: int, name: str | None = None) -> Check:
        """The radius check's bundle (`radius_bundle`): impulse responses and a random input (the long check: near 1
        at its own length)."""
        name = name or f"radius {label}"
        params, words = self.radius_bundle(label)
        if params is None:
            return Check(name, self.dtype, "n/a", detail=words)
        radius = spectral_radius(self.cfg, params)
        try:
            layer = Layer(self.name, self.build, self.cfg, params, self.dtype)
        except NotImplementedError as err:
            return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
        return self.impulse_check(name, self.cfg, params, radius, layer, L, f"{words}: r = {radius:.6g}, L = {L}",
                                  self.rng(name).standard_normal((BATCH, L, H)))

    def variant(self, fields: Mapping[str, Any], L: int) -> Check:
        """One variant of the contract (`VARIANTS`): its impulse responses and a random input."""
        name = variant_name(fields)
        cfg = make_config(self.kind, **{**self.pins, **fields})
        if getattr(cfg, "bidirectional", False):
            return self.bidirectional_check(name, cfg, L)
        params = bundle_for(cfg, self.seed)
        radius = spectral_radius(cfg, params)
        try:
            layer = Layer(self.name, self.build, cfg, params, self.dtype)
        except NotImplementedError as err:
            return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
        return self.impulse_check(name, cfg, params, radius, layer, L, f"{_describe(cfg)}, r = {radius:.6g}, L = {L}",
                                  self.rng(name).standard_normal((BATCH, L, H)))

    # -- bidirectional --------------------------------------------------------------------------

    def bidirectional(self, L: int) -> Check:
        name = "bidirectional"
        if not hasattr(self.cfg, "bidirectional"):
            return Check(name, self.dtype, "n/a", detail=f"a {self.kind} layer has no bidirectional form")
        if "bidirectional" in self.pins:
            return Check(name, self.dtype, "n/a", detail="bidirectional pinned by --set")
        return self.bidirectional_check(name, make_config(self.kind, **{**self.pins, "bidirectional": True}), L)

    def bidirectional_check(self, name: str, cfg: MixerConfig, L: int) -> Check:
        """A random input through the bidirectional layer of `cfg`; a failure explained by its backward part."""
        params = bundle_for(cfg, self.seed)
        try:
            layer = Layer(self.name, self.build, cfg, params, self.dtype)
        except NotImplementedError as err:
            return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
        u = self.rng(name).standard_normal((BATCH, L, H))
        y, _ = layer(u, name)
        radius = spectral_radius(cfg, params)
        tol = self.tol(L, radius)
        c = self.check(name, rel_error(reference(cfg, params, u), y), tol, f"{_describe(cfg)}, L = {L}, r = {radius:.6g}")
        if c.status == "fail":
            level = self.level(cfg, c.rel, L, radius)
            c.diagnoses = level or (self.explain_backward(layer, cfg, params, L, tol) if L > 1 else [])
        return c

    def explain_backward(self, layer: Layer, cfg: MixerConfig, params: dict, L: int, tol: float) -> list[Diagnosis]:
        """The backward part, the target's bidirectional output less its own forward-only layer's, on an impulse
        in the middle of the sequence: missing, responding after the input (not anti-causal), or off by a factor.

        Errors are relative to the larger of the backward part and the whole output (the difference of two
        outputs rounds on the outputs' scale); the structural probes accept the float32 level in a float64 run
        (`fit_tol`), where that rounding is named by the output checks."""
        forward_cfg = dataclasses.replace(cfg, bidirectional=False)
        forward_params = {k: v for k, v in params.items() if k in mixer_shapes(forward_cfg)}
        at = L // 2
        u = impulses(L, at)
        whole = reference(cfg, params, u)
        ref = whole - reference(forward_cfg, forward_params, u)
        got = layer(u, "bidirectional, impulse at L/2")[0]
        got = got - Layer(self.name, self.build, forward_cfg, forward_params, self.dtype)(u, "forward-only")[0]
        scale = max(float(np.max(np.abs(ref))), float(np.max(np.abs(whole))))
        probe_tol = self.fit_tol(L, spectral_radius(cfg, params))
        size = float(np.max(np.abs(got))) / scale
        if size <= probe_tol:
            return [Diagnosis("backward_missing", f"the backward direction is missing: the bidirectional output "
                                                  f"equals the forward-only one (difference {size:.2e}, tolerance "
                                                  f"{tol:.2e}; the reference's backward part "
                                                  f"{float(np.max(np.abs(ref))) / scale:.2e})")]
        after = float(np.max(np.abs(got[:, at + 1:]))) / scale
        if after > probe_tol:
            return [Diagnosis("backward_not_anticausal", f"the backward direction is not anti-causal: it responds "
                                                         f"after the input (error {after:.2e} at positions after an "
                                                         f"impulse, tolerance {tol:.2e})")]
        err = rel_error(ref, got, scale)
        if err <= probe_tol:
            return []          # the backward part conforms: the deviation is the forward part's, named by its checks
        factor = factor_diagnosis(ref, got, tol, probe_tol, "the backward part", readout(cfg.kind, backward=True))
        if factor:
            return [factor[0]]
        return [Diagnosis("backward_wrong", f"the backward direction is anti-causal but wrong: error {err:.2e} "
                                            f"(tolerance {tol:.2e})")]

    # -- the state --------------------------------------------------------------------------------

    def state(self, L: int) -> Check:
        name = "state"
        if not self.layer.takes_state:
            return Check(name, self.dtype, "n/a", detail="the callable takes no state=")
        if getattr(self.cfg, "bidirectional", False) or getattr(self.cfg, "max_kernel_length", None):
            return Check(name, self.dtype, "n/a", detail="a bidirectional layer, or a truncated DLR kernel, has no "
                                                         "state (docs/models.md)")
        if L < 2:
            return Check(name, self.dtype, "n/a", detail="needs a length >= 2 to split")
        k = L // 2
        u = self.rng(name).standard_normal((BATCH, L, H))
        whole, _ = self.layer(u, "state: one call")
        first, carried = self.layer(u[:, :k], "state: first call")
        second, _ = self.layer(u[:, k:], "state: second call", carried)
        tol = self.tol(L)
        split = np.concatenate([first, second], axis=1)
        c = self.check(name, rel_error(whole, split), tol,
                       f"L = {L} split {k} + {L - k}, B = {BATCH}, against the target's own single call")
        if c.status == "fail":
            level = self.level(self.cfg, c.rel, L, self.radius)
            zero, _ = self.layer(u[:, k:], "state: second part from zero")
            c.diagnoses = level or explain_state(whole[:, k:], second, zero, tol,
                                                              self.fit_tol(L, self.radius))
        return c

    def stateless(self, name: str) -> Check | None:
        """The "n/a" of a check that passes states, where the target or the layer has none; else None."""
        if not self.layer.takes_state:
            return Check(name, self.dtype, "n/a", detail="the callable takes no state=")
        if getattr(self.cfg, "bidirectional", False) or getattr(self.cfg, "max_kernel_length", None):
            return Check(name, self.dtype, "n/a", detail="a bidirectional layer, or a truncated DLR kernel, has no "
                                                         "state (docs/models.md)")
        return None

    def handover(self, L: int) -> Check:
        """The sequence split in two calls at several points (1, L/2, L - 1) and run one token at a time, each state
        passed on, against the target's own single call."""
        name = "state hand-over"
        if (na := self.stateless(name)) or L < 2:
            return na or Check(name, self.dtype, "n/a", detail="needs a length >= 2 to split")
        u = self.rng(name).standard_normal((BATCH, L, H))
        whole, _ = self.layer(u, f"{name}: one call")
        runs: dict[str, np.ndarray] = {}
        for k in sorted({1, L // 2, L - 1}):
            first, carried = self.layer(u[:, :k], f"{name}: the first {k} positions")
            runs[f"split {k} + {L - k}"] = np.concatenate(
                [first, self.layer(u[:, k:], f"{name}: the positions after {k}", carried)[0]], axis=1)
        carried, steps = None, []
        for t in range(L):
            y, carried = self.layer(u[:, t:t + 1], f"{name}: position {t} alone", carried)
            steps.append(y)
        runs["token by token"] = np.concatenate(steps, axis=1)
        errors = {what: rel_error(whole, y) for what, y in runs.items()}
        tol = self.tol(L)
        c = self.check(name, max(errors.values()), tol, f"L = {L}, B = {BATCH}, against the target's own single "
                                                        f"call; errors: " + ", ".join(f"{k} {v:.2e}"
                                                                                      for k, v in errors.items()))
        if c.status == "fail":
            c.diagnoses = self.level(self.cfg, c.rel, L, self.radius) or self.explain_handover(u, whole, runs, errors,
                                                                                                 tol)
        return c

    def explain_handover(self, u, whole, runs, errors, tol) -> list[Diagnosis]:
        """Which hand-over fails: one token at a time only (from which position), or a split (named as `state`)."""
        probe_tol = self.fit_tol(u.shape[1], self.radius)
        splits = {what: e for what, e in errors.items() if what != "token by token"}
        if all(e <= tol for e in splits.values()):
            scale = float(np.max(np.abs(whole)))
            per_t = np.max(np.abs(runs["token by token"] - whole), axis=(0, 2)) / scale
            t = int(np.argmax(per_t > tol))
            return [Diagnosis("handover_tokens", f"the state hand-over fails one token at a time: its outputs depart "
                                                 f"from the single call at position t = {t} (error "
                                                 f"{errors['token by token']:.2e}, tolerance {tol:.2e}), while every "
                                                 f"split in two calls conforms")]
        what = next(w for w, e in splits.items() if e > tol)
        k = int(what.split()[1])
        zero, _ = self.layer(u[:, k:], "state hand-over: the second part from zero")
        return explain_state(whole[:, k:], runs[what][:, k:], zero, tol, probe_tol)

    def short(self) -> Check:
        """Random inputs at every length 1..8 (where chunked routes have failed) against the reference."""
        rng = self.rng(SHORT_NAME)
        found = {}
        for n in SHORT_LENGTHS:
            u = rng.standard_normal((BATCH, n, H))
            found[n] = (rel_error(reference(self.cfg, self.params, u), self.layer(u, f"{SHORT_NAME}: L={n}")[0]),
                        self.tol(n))
        worst = max(found, key=lambda n: found[n][0] / found[n][1])
        bad = [n for n, (e, t) in found.items() if e > t]
        c = self.check(SHORT_NAME, *found[worst], f"B = {BATCH}, r = {self.radius:.6g}; the worst against its "
                                                  f"tolerance at L = {worst}; failing lengths: "
                                                  f"{' '.join(map(str, bad)) or 'none'}")
        if c.status == "fail":
            level = self.level(self.cfg, c.rel, worst, self.radius, output_dtype=self.layer.output_dtype)
            if level:
                c.diagnoses = level
            elif len(bad) < len(found):
                good = [n for n in found if n not in bad]
                c.diagnoses = [Diagnosis("short_lengths", f"the output is wrong at L = {', '.join(map(str, bad))} and "
                                                          f"conforms at L = {', '.join(map(str, good))} (error "
                                                          f"{c.rel:.2e} at L = {worst}, tolerance {c.rtol:.2e})")]
        return c

    def very_long(self) -> Check:
        """One random row at the very long length, past 2^16, with the radius-near-1 bundle: a chunked route's every
        chunk, its tail included; a failure names the first position that departs."""
        L = self.very_long_length
        name = f"very long L={L}"
        cfg, near_one = self.cfg, self.radius_bundle("near 1")[0]
        params = self.params if near_one is None else near_one
        radius = spectral_radius(cfg, params)
        try:
            layer = self.layer if near_one is None else Layer(self.name, self.build, cfg, params, self.dtype)
        except NotImplementedError as err:
            return Check(name, self.dtype, "n/a", detail=f"not supported by the target: {err}")
        u = self.rng(name).standard_normal((1, L, H))
        ref, y = reference(cfg, params, u), layer(u, name)[0]
        tol = self.tol(L, radius)
        c = self.check(name, rel_error(ref, y), tol, f"one row, r = {radius:.6g}")
        if c.status == "fail":
            level = self.level(cfg, c.rel, L, radius, output_dtype=layer.output_dtype)
            per_t = np.max(np.abs(y - ref), axis=(0, 2)) / float(np.max(np.abs(ref)))
            t = int(np.argmax(per_t > tol))
            c.diagnoses = level or ([Diagnosis("long_tail", f"the output departs from the reference from position "
                                                            f"t = {t} of L = {L} on, conforming before it (error "
                                                            f"{c.rel:.2e}, tolerance {tol:.2e}): a chunk past it is "
                                                            f"lost or wrong")] if t > 0 else [])
        return c

    def packing(self, L: int) -> Check:
        """Packed sequences (segment ids, where the callable takes `segments=`): each computed as if alone, the state
        reset where one begins."""
        name = "packing"
        if not self.layer.takes_segments:
            return Check(name, self.dtype, "n/a", detail="the callable takes no segments= (packed sequences)")
        if L < 2:
            return Check(name, self.dtype, "n/a", detail="needs a length >= 2 to pack two sequences")
        rng = self.rng(name)
        u = rng.standard_normal((BATCH, L, H))
        starts = rng.random((BATCH, L - 1)) < 0.3
        starts[0, L // 2 - 1] = True                          # row 0 has a boundary, row 1 none
        starts[1] = False
        segments = np.concatenate([np.zeros((BATCH, 1), np.int64), np.cumsum(starts, axis=1)], axis=1)
        try:
            ref = reference(self.cfg, self.params, u, segments=segments)
        except LinrnnError as err:              # a registered model whose reference has no packed sequences
            return Check(name, self.dtype, "n/a", detail=f"the {self.kind} reference takes no packed sequences: {err}")
        y, _ = self.layer(u, name, segments=segments)
        tol = self.tol(L)
        c = self.check(name, rel_error(ref, y), tol, f"L = {L}, B = {BATCH}, segments of lengths "
                                                     f"{[np.bincount(r).tolist() for r in segments]}")
        if c.status == "fail":
            level = self.level(self.cfg, c.rel, L, self.radius)
            whole = reference(self.cfg, self.params, u)
            if level:
                c.diagnoses = level
            elif rel_error(whole, y) <= self.fit_tol(L, self.radius):
                c.diagnoses = [Diagnosis("packing_no_reset", f"the state does not reset where a packed sequence "
                                                             f"begins: the output is each row's run as one sequence "
                                                             f"(error against the sequences alone {c.rel:.2e}, "
                                                             f"tolerance {tol:.2e})")]
        return c

    def padding(self, L: int) -> Check:
        """Padded rows (valid lengths, where the callable takes `lengths=`), in the bidirectional form where the kind
        has one (its backward scan starts in the padding): each row's valid part as if alone, 0 at the padding."""
        name = "padding"
        if not self.layer.takes_lengths:
            return Check(name, self.dtype, "n/a", detail="the callable takes no lengths= (padded rows)")
        cfg, params, layer = self.cfg, self.params, self.layer
        if hasattr(cfg, "bidirectional") and "bidirectional" not in self.pins:
            both = make_config(self.kind, **{**self.pins, "bidirectional": True})
            try:
                layer = Layer(self.name, self.build, both, bundle_for(both, self.seed), self.dtype)
                cfg, params = both, bundle_for(both, self.seed)
            except NotImplementedError:
                pass                                             # the forward-only layer's padding, then
        rng = self.rng(name)
        lengths = np.array([L, max(1, (L + 1) // 2), 1][:BATCH], np.int64)
        u = rng.standard_normal((BATCH, L, H))
        mask = np.arange(L)[None, :] < lengths[:, None]
        u = np.where(mask[..., None], u, 10.0 * rng.standard_normal((BATCH, L, H)))    # loud padding
        try:
            ref = reference(cfg, params, u, lengths=lengths)
        except LinrnnError as err:              # a registered model whose reference has no padded rows
            return Check(name, self.dtype, "n/a", detail=f"the {self.kind} reference takes no padded rows: {err}")
        y, _ = layer(u, name, lengths=lengths)
        radius = spectral_radius(cfg, params)
        tol = self.tol(L, radius)
        c = self.check(name, rel_error(ref, y), tol, f"{_describe(cfg)}, L = {L}, valid lengths "
                                                     f"{' '.join(map(str, lengths))}, padding 10 x the inputs")
        if c.status == "fail":
            level = self.level(cfg, c.rel, L, radius)
            scale = float(np.max(np.abs(ref)))
            valid = float(np.max(np.abs(np.where(mask[..., None], y - ref, 0.0)))) / scale
            if level:
                c.diagnoses = level
            elif valid <= self.fit_tol(L, radius):
                c.diagnoses = [Diagnosis("padding_not_zero", f"the output at the padded positions is not 0 (error "
                                                             f"{c.rel:.2e}, tolerance {tol:.2e}); the valid positions "
                                                             f"conform")]
            else:
                c.diagnoses = [Diagnosis("padding_leaks", f"the padding reaches the valid positions: they err by "
                                                          f"{valid:.2e} against each row alone (tolerance {tol:.2e})")]
        return c

    # -- gradients --------------------------------------------------------------------------------

    def gradient(self, L: int) -> Check:
        name = "gradient"
        rng = self.rng(name)
        u = rng.standard_normal((BATCH, L, H))
        w = rng.standard_normal((BATCH, L, H))
        grad, how = input_gradient(self.layer, u, w)
        if grad is None:
            return Check(name, self.dtype, "n/a", detail=f"not differentiable here: {how}")
        if np.shape(grad) != u.shape:
            raise LinrnnError(f"target {self.name}: gradient: expected d<w, y>/du of shape {u.shape}, "
                              f"found {np.shape(grad)}")
        tol = self.tol(L, row="gradient")
        c = self.check(name, rel_error(reference_gradient(self.cfg, self.params, w), grad), tol,
                       f"input gradient of <w, y> by {how}, L = {L}, against the reference's J^T w")
        if c.status == "fail":
            level = self.level(self.cfg, c.rel, L, self.radius, row="gradient")
            if level:
                c.diagnoses = level
            elif self.one(f"random L={L}").status == "fail":
                c.diagnoses = [Diagnosis("gradient_follows_output", f"the input gradient follows the output's "
                                                                    f"deviation (the random L={L} check fails)")]
            else:
                c.diagnoses = [Diagnosis(
                    "gradient_not_adjoint", f"the input gradient is not the adjoint of the output: the output "
                                            f"conforms at L = {L}, its gradient errs by {c.rel:.2e} (tolerance "
                                            f"{tol:.2e})")]
        return c


def readout(kind: str, backward: bool = False) -> str:
    """The output term of the contract as docs/models.md writes it: 'Re(C x)', '2 Re(C x)', 'C x' (RotRNN, real);
    the backward scan's with `backward`: 'Re(C_rev x_bwd)'."""
    matrix, _, factor = COMPLEX_READOUTS.get(kind, ("C", (), 0))
    term = f"{matrix}_rev x_bwd" if backward else f"{matrix} x"
    return f"{'2 ' if factor == 2 else ''}Re({term})" if factor else term


def factor_diagnosis(ref: np.ndarray, got: np.ndarray, tol: float, fit_tol: float, what: str,
                     name: str) -> tuple[Diagnosis, float] | None:
    """(the finding, the fit's error) when `got` is c x `ref` for some c != 1, within `fit_tol`; else None."""
    c, fit = fit_factor(ref, got)
    if fit > fit_tol or abs(c - 1.0) <= fit_tol:
        return None
    measured = f"{what} is {c:.6g} x the contract's {name} (fit error {fit:.2e}, tolerance {tol:.2e})"
    if abs(c - 0.5) <= fit_tol:
        return Diagnosis("factor_missing", f"the output is missing the factor 2 of conjugate symmetry: {measured}"), fit
    if abs(c - 2.0) <= 2 * fit_tol:
        return Diagnosis("factor_doubled", f"the output doubles the factor 2 of conjugate symmetry: {measured}"), fit
    return Diagnosis("factor", f"the output is off by a constant factor: {measured}"), fit


def explain_state(whole: np.ndarray, second: np.ndarray, zero: np.ndarray, tol: float,
                  probe_tol: float) -> list[Diagnosis]:
    """The second call against the single call (state carried) and against a zero start, row by row; rows match
    within `probe_tol` (the float32 level in a float64 run, whose rounding the output checks name)."""
    if rel_error(whole, zero) <= probe_tol:
        return []     # the state does not change this output measurably: nothing to tell apart
    carried = [rel_error(whole[b], second[b]) <= probe_tol for b in range(len(whole))]
    dropped = [rel_error(zero[b], second[b]) <= probe_tol for b in range(len(whole))]
    err = rel_error(whole, second)
    if all(dropped):
        return [Diagnosis("state_not_carried", f"the state is not carried between calls: the second call equals a "
                                               f"start from zero (error against the single call {err:.2e}, "
                                               f"tolerance {tol:.2e})")]
    if carried[0] and all(dropped[1:]):
        return [Diagnosis("state_batch0", f"the state is applied to batch element 0 only: rows 1.. of the second "
                                          f"call start from zero (error {err:.2e}, tolerance {tol:.2e})")]
    return [Diagnosis("state_wrong", f"the state carried between calls is wrong: the second call errs by {err:.2e} "
                                     f"against the single call (tolerance {tol:.2e})")]


def input_gradient(layer: Layer, u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray | None, str]:
    """d<w, y>/du through the first framework (already imported by the target) that differentiates the call."""
    reasons = []
    for framework, module in GRADIENT_PROBES.items():
        if framework not in sys.modules:
            continue
        probe = importlib.import_module(module).input_gradient
        try:
            grad, how = probe(lambda x: layer.raw(x)[0], u, w)
        except Exception as err:      # a target written for another framework fails on its arrays in its own way
            grad, how = None, f"{framework}: {_why(err)}"
        if grad is not None:
            return grad, how
        reasons.append(how)
    return None, "; ".join(reasons) or "the target imported neither torch nor JAX"


def reference_gradient(cfg: MixerConfig, params: Mapping[str, np.ndarray], w: np.ndarray) -> np.ndarray:
    """J^T w for y = J u: J is the reference's response to each unit impulse (exact, the layer is linear in u).

    w (B L H) -> (B L H)"""
    _, L, _ = w.shape
    basis = np.eye(L * H).reshape(L * H, L, H)                    # impulse at (position, channel)
    J = reference(cfg, params, basis).reshape(L * H, L * H)       # row: the input entry; column: the output entry
    return (w.reshape(len(w), L * H) @ J.T).reshape(w.shape)


def imaginary_readout(params: Mapping[str, np.ndarray], pairs: tuple[tuple[str, str], ...]) -> dict:
    """Parameters whose Re(C' x) is Im(C x): C' = C_im - i C_re for every (real, imaginary) pair present."""
    out = dict(params)
    for re, im in pairs:
        if re in params:
            out[re], out[im] = params[im], -params[re]
    return out


def make_config(kind: str, **fields) -> MixerConfig:
    """The battery's layer of `kind` (H = 3, N = 4; RotRNN: 2 heads), with some fields set."""
    fields = {"heads": HEADS, "bidirectional": False, **fields}
    return mixer_config(kind, H, N, **fields)


def at_radius(cfg: MixerConfig, params: Mapping[str, np.ndarray], r: float) -> tuple[dict | None, str]:
    """`params` with every eigenvalue's modulus r, phases kept (the model's `ModelSpec.with_radius`), and "";
    or None and why the model's spec cannot place its decays there (no `with_radius`, or not for this config)."""
    setter = specs.spec(cfg.kind).with_radius
    if setter is None:
        return None, f"the {cfg.kind} spec has no with_radius (where its decays sit)"
    try:
        return {**params, **setter(cfg, params, r)}, ""
    except LinrnnError as err:
        return None, str(err)


def bundle_for(cfg: MixerConfig, seed: int) -> dict[str, np.ndarray]:
    """The battery's bundle of `cfg`: its initialisation, and under a config's clip_eigs (S5) every other mode with
    Re(Lambda) = CLIPPED_RE > 0, so that the clip acts (the initialisation's Re(Lambda) = -1/2 never reaches it)."""
    params = dict(init(cfg, seed).params)
    if getattr(cfg, "clip_eigs", False):
        params["Lambda_re"] = params["Lambda_re"].copy()
        params["Lambda_re"][::2] = CLIPPED_RE
    return params


def variants(kind: str, pins: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the kind's discrete choices that `pins` leaves free, each also bidirectional; the
    first is the base configuration ({}). Each is the fields that differ from the base."""
    choices = {field: values for field, values in VARIANTS[kind].items() if field not in pins}
    if "bidirectional" not in pins:
        choices["bidirectional"] = (False, True)
    out = []
    for values in itertools.product(*choices.values()):
        out.append({f: v for (f, options), v in zip(choices.items(), values) if v != options[0]})
    return out


def parse_sets(kind: str, items) -> dict[str, Any]:
    """`--set FIELD=VALUE` items -> {field: value}; VALUE as JSON (true, 3, 0.5, null) or else a string. A field
    the kind's config does not have, or one of the battery's sizes, is a one-line error."""
    fields = {f.name for f in dataclasses.fields(MIXER_CONFIGS[kind])} - set(SIZES)
    out = {}
    for item in items or ():
        field, sep, text = item.partition("=")
        if not sep or not field:
            raise LinrnnError(f"--set: expected FIELD=VALUE, found {item!r}")
        if field not in fields:
            raise LinrnnError(f"--set: a {kind} config has no field {field!r} (expected one of "
                              f"{', '.join(sorted(fields))}; the battery's sizes {', '.join(SIZES)} are fixed)")
        try:
            out[field] = json.loads(text)
        except ValueError:
            out[field] = text
    make_config(kind, **out)                 # a bad value is the config's own one-line error
    return out


def check_lengths(lengths) -> tuple[int, ...]:
    lengths = tuple(lengths)
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in lengths):
        raise LinrnnError(f"--lengths: expected positive integers, found {' '.join(map(str, lengths)) or 'none'}")
    return tuple(sorted(set(lengths)))


def run(target: str | Callable, kind: str, dtypes: tuple[str, ...] = DTYPES, lengths=DEFAULT_LENGTHS, seed: int = 0,
        progress: Callable[[str], None] | None = None, sets=(), long_length: int = LONG_LENGTH,
        very_long_length: int | None = None) -> Result:
    """Every check of `target` claiming the contract of `kind` (a mixer kind, or "scan").

    target: a built-in name, `module:function`, or the build function itself (as Python code calls it)
    sets: `FIELD=VALUE` strings (`--set`) or a {field: value} dict, pinning fields of every config checked
    long_length: the long check's length (0 leaves it out)
    very_long_length: the very long check's length, past 2^16 (0 leaves it out; None: VERY_LONG_LENGTH)
    """
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        raise LinrnnError(f"--dtype: expected {' or '.join(DTYPES)}, found {', '.join(bad) or 'none'}")
    checks = []
    for dtype in dtypes:
        one = battery(target, kind, dtype, lengths, seed, sets, long_length, very_long_length)
        if progress:
            progress(f"{one.name} {kind} {dtype}")
        try:
            checks += one.run()
        except NotImplementedError as err:
            checks.append(Check("build", dtype, "n/a", detail=f"not supported by the target: {err}"))
    return Result(one.name, kind, tuple(dtypes), one.lengths, seed, checks, one.pins, long_length,
                  one.very_long_length)


def unavailable(name: str) -> str | None:
    """Why built-in target `name` cannot run here (its framework or package missing), or None."""
    module_name, _ = BUILTINS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        return f"target {name}: its framework is not installed ({err})"
    return module.missing_reason(name) if name in PEERS else None


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def peers_table() -> list[dict[str, Any]]:
    """Every built-in target: name, contracts, package and version (or why it cannot run here), lineage."""
    try:        # first: where triton is not imported yet, it chooses Triton's interpreter for the Triton peers
        importlib.import_module(TRITON_FIRST)
    except ImportError:
        pass    # no PyTorch: each target says so below
    rows = []
    for name in BUILTINS:
        info = PEERS.get(name)
        why = unavailable(name)
        if info:
            version = installed_version(info.distribution)
            rows.append({"target": name, "group": "peer", "models": list(info.models), "what": info.what,
                         "package": info.distribution, "version": version, "missing": why, "lineage": info.lineage})
        else:
            rows.append({"target": name, "group": "own", "models": list(own_models(name)), "what": "this project's",
                         "package": "linrnn", "version": installed_version("linrnn"), "missing": why,
                         "lineage": "this project's code"})
    return rows


def format_peers(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        state = f"{r['package']} {r['version']}" if not r["missing"] else f"not runnable here: {r['missing']}"
        lines.append(f"{r['target']:<24} --model {'|'.join(r['models'])}: {r['what']}; {state}")
        lines.append(f"{'':<24} lineage: {r['lineage']}")
    return "\n".join(lines)


# -- the command line ---------------------------------------------------------------------------

def register(subparsers) -> None:
    p = subparsers.add_parser("conform", help="check an implementation written elsewhere against the reference "
                                              "and name every deviation (exit 1 if it deviates)")
    p.add_argument("target", nargs="?", help=f"module:function (on PYTHONPATH or in the working directory), or one "
                                             f"of {', '.join(BUILTINS)}")
    p.add_argument("--model", choices=models(), help="the contract the target claims to implement")
    p.add_argument("--dtype", default=None, choices=DTYPES, help="check this dtype only (default: both)")
    p.add_argument("--lengths", type=int, nargs="+", default=list(DEFAULT_LENGTHS),
                   help=f"input lengths of the random inputs (default {' '.join(map(str, DEFAULT_LENGTHS))}); "
                        f"the longest is also the impulse, radius, bidirectional, state, gradient and variant length")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="FIELD=VALUE",
                   help="pin a config field in every check (repeatable), for a target that implements only some "
                        "variants, e.g. --set discretization=zoh")
    p.add_argument("--long", type=int, default=LONG_LENGTH,
                   help=f"length of the long check at radius near 1 (default {LONG_LENGTH}; 0 leaves it out)")
    p.add_argument("--very-long", type=int, default=VERY_LONG_LENGTH,
                   help=f"length of the very long check, past 2^16 (default {VERY_LONG_LENGTH}; 0 leaves it out)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bundles and inputs (default 0)")
    p.add_argument("--json", default=None, help="write every check to this JSON file")
    p.add_argument("--peers", action="store_true", help="list the built-in targets (package, installed version or "
                                                        "why missing, lineage) and exit")
    p.set_defaults(func=_main)


def format_result(result: Result) -> str:
    pinned = "".join(f" --set {k}={json.dumps(v)}" for k, v in result.pins.items())
    lines = [f"linrnn conform {result.target} --model {result.model}{pinned}: seed {result.seed}, "
             f"lengths {' '.join(map(str, result.lengths))}, long check L={result.long_length}, very long check "
             f"L={result.very_long_length}"]
    lines += ["  " + c.line() for c in result.checks]
    failed = sum(c.status == "fail" for c in result.checks)
    if result.ok:
        lines.append(f"conforms: every applicable check within the tolerance table "
                     f"({sum(c.status == 'n/a' for c in result.checks)} not applicable)")
    else:
        lines.append(f"deviates: {failed} of {len(result.checks)} checks exceed the tolerance table")
        lines += [f"  - {d.words}" for d in result.diagnoses()]
    return "\n".join(lines)


def _main(args: argparse.Namespace) -> int:
    if args.peers:
        print(format_peers(peers_table()))
        return 0
    if not args.target or not args.model:
        raise LinrnnError("expected TARGET and --model KIND (or --peers to list the built-in targets)")
    dtypes = (args.dtype,) if args.dtype else DTYPES
    progress = (lambda what: print(f"checking {what}", file=sys.stderr)) if sys.stderr.isatty() else None
    result = run(args.target, args.model, dtypes, args.lengths, args.seed, progress, args.sets, args.long,
                 args.very_long)
    print(format_result(result))
    if args.json:
        from linrnn.impls.results import ConformRecord, Envelope, command_line, write

        peer = (PEERS[args.target].distribution,) if args.target in PEERS else ()     # its version in the record
        write(args.json, ConformRecord(result=result.to_dict(), envelope=Envelope.here(command_line(args), peer)))
    return 0 if result.ok else 1
