"""`linrnn conform`'s PyTorch peers beyond LRU-pytorch and s5-pytorch, and the project's torch scan as a scan target.

Each follows the protocol of docs/conform.md and loads the bundle's numbers into the peer as it ships:

    lrnnx                   `lrnnx.models.lti` `LRU` (kind lru) and `S5` (kind s5), float32 only
    accelerated-scan        `accelerated_scan.scalar.scan` (real) / `.complex.scan` (complex): Triton kernels, run by
                            Triton's interpreter on the CPU (TRITON_INTERPRET=1, set before triton is imported)
    accelerated-scan-ref    `accelerated_scan.ref.scan`, the package's torch tree scan (forward and reverse)
    torch-associative-scan  `torch._higher_order_ops.associative_scan`, combine_mode "generic"
    linrnn-torch-scan       the project's chunked scans: `linrnn.impls.torch.scan.chunked` (a constant a) and
                            `linrnn.impls.torch.varying_scan.chunked` (a varying a)

* lrnnx imports its CUDA extensions (`selective_scan_cuda`, `simplified_scan_cuda`) unconditionally from
  `lrnnx.ops`; where they are not built, empty modules stand in for them (its LTI layers never call them).
  Its FFT convolution casts every operand to complex64 (`arg.cfloat()`), so it computes in float32 only: in
  float64 the adapter says so ("n/a"). LRU: `nu_log`, `theta_log`, `gamma_log`, `B_re`, `B_im`, `C_re`,
  `C_im`, `D` as they are. S5: `A = (log(exp(-Lambda_re) - 1), Lambda_im)` (its `-softplus` gives back
  `Lambda_re`), `log_dt = log_step`, its `B` the complex `B~` (its own is real: the bundle's imaginary part has
  nowhere else to go), `C = (C_re, C_im)`, and its dense `D` (applied as `x @ D`) the bundle's D on the
  diagonal and its own initialisation off it; `discretization` as the config says. It has no clip of
  Re(Lambda) (clip_eigs: "n/a"), no backward scan, and keeps no conjugate half (`conj_sym` raises).
* The scans take (B L D) a and b and return x (B L D); the peers' own layouts are (B D L) (accelerated-scan)
  and complex tensors. accelerated-scan's kernels run forward only; its complex kernel needs a complex a.

    mamba-ssm-ref           `mamba_ssm.ops.selective_scan_interface.selective_scan_ref` (PyTorch, one position at a
                            time), on the CPU, or on the device `linrnn gpucheck` passes
    mamba-ssm               the same module's `selective_scan_fn`, its fused CUDA kernel (a CUDA device only)

* mamba-ssm builds its CUDA extension `selective_scan_cuda` when it is installed and imports it unconditionally, so
  both run only where mamba-ssm is installed: a machine with CUDA (`linrnn gpucheck` checks both there). Its scan is
  x_l = exp(delta_l A) x_{l-1} + delta_l B_l u_l per channel and state, read out as y_l = C_l x_l (2 Re(C_l x_l)
  for a complex A), in float32 (float64: "n/a"). The adapter maps the scan contract onto it with N = 1, exactly in
  exact arithmetic (in float32, delta_t and 1 / delta_t round once each, a few eps against the tolerance's 32):
  - real a: A = -1, delta_t = -log|a_t|, B_t = 1 / delta_t (one group per channel), u_t = s_t b_t, C = 1, and
    x_t = s_t y_t, where s_t = sign(a_1 ... a_t): its real transitions are positive, and the change of variables
    only flips signs, which do not round. |a_t| = 0 or 1 is "n/a" (delta_t would be infinite, or 0 with no input);
  - complex a, constant: delta = -log|a|, A = log(a) / delta (Re A = -1), u = 1, B_t = b_t / delta (its (real,
    imaginary) pairs along L), each lane twice, read out with C = 1/2 (2 Re(C x) = Re x) and C = -i/2 (= Im x).
    A complex a_t that changes with t is "n/a": exp(delta_t A) keeps one ratio of log-modulus to phase per channel;
  - reverse: it has no backward scan; the sequence is reversed in and out (as bidirectional Mamba models do).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.util
import io
import os
import sys
import types

import numpy as np
import torch

# Triton's interpreter runs accelerated-scan's and fla-core's kernels on the CPU; it must be chosen before triton is
# imported (lrnnx imports it too, and so does the project's PyTorch side, through torch's compiler), so here, after
# torch (which does not import triton) and before anything else
if not torch.cuda.is_available() and "triton" not in sys.modules:
    os.environ.setdefault("TRITON_INTERPRET", "1")

from linrnn.base.errors import LinrnnError  # noqa: E402  (after the interpreter's switch)
from linrnn.impls.torch.layer import torch_dtype  # noqa: E402
from linrnn.impls.torch import varying_scan  # noqa: E402
from linrnn.impls.torch.scan import chunked, complex_dtype  # noqa: E402

SEED = 0                   # the peers' own initialisation of what the contract does not set
LRNNX_EXTENSIONS = ("selective_scan_cuda", "simplified_scan_cuda")
IMPORTS = {"lrnnx": "lrnnx.models.lti", "accelerated-scan": "accelerated_scan.scalar",
           "accelerated-scan-ref": "accelerated_scan.ref",
           "torch-associative-scan": "torch._higher_order_ops.associative_scan",
           "fla-hgrn-naive": "fla.ops.hgrn.naive", "fla-hgrn": "fla.ops.hgrn.fused_recurrent",
           "mambapy": "mambapy.pscan"}
INSTALL = "install linrnn[peers] (pip install 'linrnn[peers]'; docs/conform.md says how)"


__all__ = ["accelerated_scan", "accelerated_scan_ref", "fla_hgrn", "fla_hgrn_naive", "linrnn_torch_scan", "lrnnx",
           "mamba_missing", "mamba_ssm", "mamba_ssm_ref", "mambapy", "missing_reason", "torch_associative_scan"]


def _stand_in(extension: str) -> None:
    """An empty module for a compiled CUDA extension that is not built here (the code called never uses it). It has a
    module spec, so that `importlib.util.find_spec` of it answers instead of raising (lrnnx and mamba-ssm import
    `selective_scan_cuda` both: whichever is imported first puts the stand-in in place for the other)."""
    if extension not in sys.modules and importlib.util.find_spec(extension) is None:
        module = types.ModuleType(extension)
        module.__spec__ = importlib.machinery.ModuleSpec(extension, None)
        sys.modules[extension] = module


def _import(name: str):
    if name == "lrnnx":
        for ext in LRNNX_EXTENSIONS:                     # stand-ins for its CUDA extensions, where not built
            _stand_in(ext)
    if name in ("accelerated-scan", "fla-hgrn") and not torch.cuda.is_available() and \
            os.environ.get("TRITON_INTERPRET") != "1":
        raise ImportError("its Triton kernels run on the CPU only in Triton's interpreter, and triton was imported "
                          "before TRITON_INTERPRET=1 was set: set it before Python starts")
    with contextlib.redirect_stdout(io.StringIO()):          # lrnnx prints a notice about its kernels on import
        return importlib.import_module(IMPORTS[name])


def missing_reason(name: str) -> str | None:
    """None when peer `name` imports here, else one line saying why not and what to install."""
    if name in MAMBA_FUNCTIONS:
        why = mamba_missing(name)
        fused = "; its fused kernel needs a CUDA device, where `linrnn gpucheck` checks it (docs/gpu.md)"
        return why and f"{name}: {why}" + (fused if why == MAMBA_ABSENT and name == "mamba-ssm" else "")
    try:
        _import(name)
    except Exception as err:                  # a broken install fails in its own ways
        return f"{name} cannot be imported (`import {IMPORTS[name]}`: {type(err).__name__}: {err}); {INSTALL}"
    return None


def _numpy_call(fn):
    """call(u) on NumPy u (no graph, NumPy out) or on a tensor (graph kept)."""
    def call(u):
        x = u if isinstance(u, torch.Tensor) else torch.from_numpy(np.array(u, dtype=np.float64))
        with torch.set_grad_enabled(x.requires_grad):
            y = fn(x)
        return y if x.requires_grad else y.detach().double().numpy()
    return call


# -- lrnnx --------------------------------------------------------------------------------------

def _parameter(array) -> torch.nn.Parameter:
    return torch.nn.Parameter(torch.as_tensor(np.asarray(array)).to(
        torch.complex64 if np.iscomplexobj(array) else torch.float32))


def lrnnx(bundle: dict, config: dict, dtype: str = "float64"):
    """lrnnx's LRU or S5 holding the bundle (see the module docstring), in float32."""
    kind = config["kind"]
    if kind not in ("lru", "s5"):
        raise LinrnnError(f"lrnnx implements lru, s5, found --model {kind}")
    if dtype != "float32":
        raise NotImplementedError("lrnnx computes in float32 only: its FFT convolution casts to complex64")
    if config["bidirectional"]:
        raise NotImplementedError("lrnnx's LTI layers have no backward scan")
    lti = _import("lrnnx")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        module = {"lru": _lrnnx_lru, "s5": _lrnnx_s5}[kind](lti, bundle, config)   # lrnnx's two layers
    return _numpy_call(lambda x: module(x.float()))


def _lrnnx_lru(lti, bundle: dict, config: dict):
    module = lti.LRU(d_model=config["d_model"], d_state=config["d_state"])
    for key in ("nu_log", "theta_log", "gamma_log", "B_re", "B_im", "C_re", "C_im", "D"):
        setattr(module, key, _parameter(bundle[key]))
    return module


def _lrnnx_s5(lti, bundle: dict, config: dict):
    if config["clip_eigs"]:
        raise NotImplementedError("lrnnx's S5 does not clip Re(Lambda)")
    module = lti.S5(d_model=config["d_model"], d_state=config["d_state"], discretization=config["discretization"])
    module.A = _parameter(np.stack([np.log(np.expm1(-bundle["Lambda_re"])), bundle["Lambda_im"]], axis=-1))
    module.log_dt = _parameter(bundle["log_step"])
    module.B = _parameter(bundle["B_re"] + 1j * bundle["B_im"])                    # (N H) complex
    module.C = _parameter(np.stack([bundle["C_re"], bundle["C_im"]], axis=-1))     # (H N 2)
    D = module.D.detach().clone()
    D.diagonal().copy_(torch.as_tensor(bundle["D"]))
    module.D = torch.nn.Parameter(D)
    return module


# -- the scans ------------------------------------------------------------------------------------

def _tensors(a, b, dtype: str) -> tuple[torch.Tensor, torch.Tensor]:
    real = torch_dtype(dtype)
    cast = complex_dtype(real) if np.iscomplexobj(a) or np.iscomplexobj(b) else real
    return torch.as_tensor(np.asarray(a)).to(cast), torch.as_tensor(np.asarray(b)).to(cast)


def _out(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


def accelerated_scan(bundle: dict, config: dict, dtype: str = "float64"):
    """accelerated-scan's Triton kernels (forward only): `scalar.scan` for real, `complex.scan` for complex."""
    if config["reverse"]:
        raise NotImplementedError("accelerated-scan's Triton kernels scan forward only")
    _import("accelerated-scan")
    module = importlib.import_module("accelerated_scan.complex" if config["complex"] else "accelerated_scan.scalar")

    def call(a, b):
        a, b = _tensors(a, b, dtype)                       # (B L D)
        x = module.scan(a.transpose(1, 2).contiguous(), b.transpose(1, 2).contiguous())   # its (B D L)
        return _out(x.transpose(1, 2))

    return call


def accelerated_scan_ref(bundle: dict, config: dict, dtype: str = "float64"):
    """accelerated-scan's torch reference (`ref.scan`, a tree scan; forward and reverse)."""
    ref = _import("accelerated-scan-ref")

    def call(a, b):
        a, b = _tensors(a, b, dtype)
        if a.shape[1] == 1:       # its tree has log2(1) = 0 levels: it splits a length-1 sequence and fails
            raise NotImplementedError("accelerated_scan.ref.scan fails on L = 1 (its tree splits the one position: "
                                      "RuntimeError: shape '[B, D, 0, 2]' is invalid)")
        x = ref.scan(a.transpose(1, 2).contiguous(), b.transpose(1, 2).contiguous(), reverse=config["reverse"])
        return _out(x.transpose(1, 2))

    return call


def torch_associative_scan(bundle: dict, config: dict, dtype: str = "float64"):
    """PyTorch's associative_scan on the pairs (a, b) with (a1, b1) then (a2, b2) -> (a1 a2, a2 b1 + b2)."""
    associative_scan = _import("torch-associative-scan").associative_scan

    def combine(earlier, later):
        return earlier[0] * later[0], later[0] * earlier[1] + later[1]

    def call(a, b):
        a, b = _tensors(a, b, dtype)
        _, x = associative_scan(combine, (a, b), dim=1, reverse=config["reverse"], combine_mode="generic")
        return _out(x)

    return call


def linrnn_torch_scan(bundle: dict, config: dict, dtype: str = "float64"):
    """The project's chunked scans: with a constant a, `scan.chunked` (one diagonal transition per channel, `log_lam`;
    the backward scan as the project's bidirectional layers run it, on the reversed sequence); with a varying a,
    `varying_scan.chunked` on log a (complex: a real a of either sign has its log's phase pi), reverse as it is."""
    real = torch_dtype(dtype)
    if config["varying"]:
        return _varying_scan(config, real)

    def call(a, b):
        log_lam = torch.as_tensor(np.log(np.asarray(a[0, 0], dtype=complex))).to(complex_dtype(real))   # (D,)
        v = torch.as_tensor(np.asarray(b, dtype=complex)).to(complex_dtype(real))                        # (B L D)
        if config["reverse"]:
            v = v.flip(1)
        states = torch.view_as_complex(chunked(log_lam, torch.view_as_real(v).contiguous()).contiguous())
        if config["reverse"]:
            states = states.flip(1)
        x = _out(states)
        return x if config["complex"] else x.real

    return call


def _varying_scan(config: dict, real: torch.dtype):
    """The scan contract's call by `varying_scan.chunked`, a transition per position (the gated layers' scan)."""
    def call(a, b):
        log_a = torch.as_tensor(np.log(np.asarray(a, dtype=complex))).to(complex_dtype(real))           # (B L D)
        v = torch.as_tensor(np.asarray(b, dtype=complex)).to(complex_dtype(real))                        # (B L D)
        x = _out(varying_scan.chunked(log_a, v, reverse=config["reverse"]))
        return x if config["complex"] else x.real

    return call


# -- mamba-ssm ------------------------------------------------------------------------------------

MAMBA_MODULE = "mamba_ssm.ops.selective_scan_interface"
MAMBA_ABSENT = "mamba_ssm is not installed (sh tools/install-peers.sh installs it without its CUDA build)"
MAMBA_FUNCTIONS = {"mamba-ssm-ref": "selective_scan_ref", "mamba-ssm": "selective_scan_fn"}
MAMBA_FUSED_DEVICES = ("cuda",)       # where `selective_scan_fn` runs (the tests add the CPU for a stand-in module)


def _where(device: str | None) -> str:
    """`device`, else the CUDA device where there is one, else torch's default device (no device is hard-coded)."""
    return device or ("cuda" if torch.cuda.is_available() else torch.get_default_device().type)


def _mamba_module():
    """mamba-ssm's `selective_scan_interface`. Installed without its CUDA build (`MAMBA_SKIP_CUDA_BUILD=TRUE
    MAMBA_FORCE_BUILD=TRUE pip install --no-deps --no-build-isolation mamba-ssm`), its compiled `selective_scan_cuda`
    is absent: an empty module stands in for it (`selective_scan_ref` never calls it), as for lrnnx's. Its package's
    `__init__` imports its models (huggingface_hub, transformers), which the scan needs none of: the package is
    entered by its path, without that `__init__`."""
    if MAMBA_MODULE in sys.modules:
        return sys.modules[MAMBA_MODULE]
    package_without_init("mamba_ssm")
    _stand_in("selective_scan_cuda")
    return importlib.import_module(MAMBA_MODULE)


def package_without_init(name: str) -> None:
    """Enter the installed package `name` by its path, without running its `__init__` (where the code a target calls
    needs none of what it imports: mamba-ssm's models, RecurrentGemma's JAX side); nothing where it is imported."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"No module named '{name}'", name=name)
    package = types.ModuleType(name)
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules[name] = package


def mamba_missing(name: str = "mamba-ssm-ref", device: str | None = None) -> str | None:
    """None when target `name`'s function of mamba-ssm can run here (on `device`), else why not, in one line:
    `MAMBA_ABSENT` itself where the package is not installed."""
    try:
        module = _mamba_module()
    except Exception as err:                   # an install whose CUDA extension does not load fails in its own ways
        if isinstance(err, ModuleNotFoundError) and (err.name or "").partition(".")[0] == "mamba_ssm":
            return MAMBA_ABSENT
        return f"mamba_ssm is installed but does not import (`import {MAMBA_MODULE}`: {type(err).__name__}: {err})"
    function = MAMBA_FUNCTIONS[name]
    if not callable(getattr(module, function, None)):
        return f"{MAMBA_MODULE} has no {function}"
    device = _where(device)
    if name == "mamba-ssm" and device not in MAMBA_FUSED_DEVICES:
        return f"selective_scan_fn is mamba-ssm's fused CUDA kernel: it needs a CUDA device (here: {device})"
    if name == "mamba-ssm" and not hasattr(sys.modules.get("selective_scan_cuda"), "fwd"):
        return ("mamba-ssm was installed without its CUDA build (MAMBA_SKIP_CUDA_BUILD): its fused kernel's extension "
                "selective_scan_cuda is an empty stand-in here")
    return None


def mamba_ssm_ref(bundle: dict, config: dict, dtype: str = "float64", device: str | None = None):
    """mamba-ssm's `selective_scan_ref` as a scan target (see the module docstring for the mapping), on `device`
    (torch's default device when not given)."""
    return _mamba_scan("mamba-ssm-ref", config, dtype, device or torch.get_default_device().type)


def mamba_ssm(bundle: dict, config: dict, dtype: str = "float64", device: str | None = None):
    """mamba-ssm's fused CUDA kernel `selective_scan_fn` as a scan target (the same mapping), on the CUDA device."""
    return _mamba_scan("mamba-ssm", config, dtype, _where(device))


def _mamba_scan(name: str, config: dict, dtype: str, device: str):
    if config["kind"] != "scan":
        raise LinrnnError(f"{name} implements scan, found --model {config['kind']}")
    if dtype != "float32":
        raise NotImplementedError("mamba-ssm's selective scan computes in float32 only: selective_scan_ref casts u, "
                                  "delta, B and C with .float(), and its CUDA kernel takes float32 weights")
    if config["complex"] and config["varying"]:
        raise NotImplementedError("mamba-ssm's transition exp(delta_t A) keeps one ratio of log-modulus to phase per "
                                  "channel (delta_t is real): a complex a_t whose modulus and phase change apart has "
                                  "no delta_t")
    why = mamba_missing(name, device)
    if why:
        raise LinrnnError(f"{name}: {why}")
    scan = getattr(_mamba_module(), MAMBA_FUNCTIONS[name])

    def call(a, b):
        a, b = np.asarray(a), np.asarray(b)                  # (B L D)
        if config["reverse"]:
            a, b = a[:, ::-1], b[:, ::-1]
        with torch.no_grad():
            x = (_mamba_complex if config["complex"] else _mamba_real)(scan, a, b, device)
        return x[:, ::-1] if config["reverse"] else x

    return call


def _bdl(v: np.ndarray, device: str, dtype=torch.float32) -> torch.Tensor:
    """(B L D) NumPy -> its (B D L) layout, contiguous, on `device`."""
    return torch.as_tensor(np.ascontiguousarray(np.swapaxes(v, 1, 2))).to(device=device, dtype=dtype)


def _mamba_steps(a: np.ndarray) -> np.ndarray:
    """delta_t = -log|a_t| > 0: the step that makes exp(delta_t A) = a_t with Re A = -1."""
    size = np.abs(a)
    if not np.all((size > 0) & (size != 1)):
        raise NotImplementedError("mamba-ssm's transition exp(delta_t A) with Re A = -1 needs 0 < |a_t| != 1 (delta_t "
                                  "= -log|a_t| would be infinite, or 0 with no input)")
    return -np.log(size)


def _mamba_real(scan, a: np.ndarray, b: np.ndarray, device: str) -> np.ndarray:
    """x_t = a_t x_{t-1} + b_t as y_t = exp(delta_t A) y_{t-1} + delta_t B_t u_t with A = -1, delta_t = -log|a_t|,
    B_t = 1 / delta_t, u_t = s_t b_t, and x_t = s_t y_t (s_t = sign(a_1 ... a_t): the signs flip exactly)."""
    delta = _mamba_steps(a)
    signs = np.cumprod(np.sign(a), axis=1)
    D = b.shape[2]
    y = scan(_bdl(signs * b, device), _bdl(delta, device),
             -torch.ones(D, 1, dtype=torch.float32, device=device),              # A (D N=1)
             _bdl(1.0 / delta, device)[:, :, None, :],                          # B (B G=D N=1 L), variable
             torch.ones(D, 1, dtype=torch.float32, device=device),               # C (D N=1)
             D=None, z=None, delta_bias=None, delta_softplus=False)
    return signs * np.swapaxes(y.double().cpu().numpy(), 1, 2)


def _mamba_complex(scan, a: np.ndarray, b: np.ndarray, device: str) -> np.ndarray:
    """A constant complex a: delta = -log|a|, A = log(a) / delta (so Re A = -1), u = 1, B_t = b_t / delta as
    (real, imaginary) pairs along L; each lane twice, read out by C = 1/2 and C = -i/2, so that its 2 Re(C x)
    gives Re x and Im x."""
    batch, L, D = b.shape
    delta = np.tile(_mamba_steps(a[0, 0]), 2)                                # (2D,): a is the same at every t
    A = np.log(np.tile(a[0, 0], 2).astype(np.complex128)) / delta            # (2D,)
    v = np.swapaxes(np.concatenate([b, b], axis=2), 1, 2) / delta[:, None]   # (B 2D L) complex
    pairs = np.stack([v.real, v.imag], axis=-1).reshape(batch, 2 * D, 1, 2 * L)
    y = scan(torch.ones(batch, 2 * D, L, dtype=torch.float32, device=device),                          # u
             torch.as_tensor(delta).to(device=device, dtype=torch.float32)[None, :, None].expand(batch, 2 * D, L)
             .contiguous(),                                                                             # delta
             torch.as_tensor(A[:, None]).to(device=device, dtype=torch.complex64),                     # A (2D N=1)
             torch.as_tensor(pairs).to(device=device, dtype=torch.float32),   # B (B G=2D N=1 (L two)), variable
             torch.tensor([0.5] * D + [-0.5j] * D, dtype=torch.complex64, device=device)[:, None],     # C (2D N=1)
             D=None, z=None, delta_bias=None, delta_softplus=False)
    y = np.swapaxes(y.double().cpu().numpy(), 1, 2)                            # (B L 2D)
    return y[..., :D] + 1j * y[..., D:]


# -- fla-core's HGRN and mambapy ------------------------------------------------------------------------------------

def _positive(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A real scan with positive transitions only: (|a_t|, s_t b_t, s_t), s_t = sign(a_1 ... a_t) along L; the scan
    of |a| and s b, times s, is the scan of a and b (the signs flip, they do not round)."""
    s = np.cumprod(np.sign(a), axis=1)
    return np.abs(a), s * b, s


def _hgrn(scan, config: dict, why: str, dtype: str):
    """The scan contract on HGRN's `h_t = exp(g_t) h_{t-1} + x_t` (B T D): g = log|a|, x = s b, out s h."""
    if dtype != "float32":
        raise NotImplementedError(f"it computes in float32 only: {why}")
    if config["complex"]:
        raise NotImplementedError("HGRN's decay exp(g_t) is real")

    def call(a, b):
        if config["reverse"]:                          # it has no backward scan: reversed in and out
            a, b = a[:, ::-1], b[:, ::-1]
        mag, sb, s = _positive(a, b)
        if np.any(mag == 0):
            raise NotImplementedError("a_t = 0: log|a_t| is -inf")
        h, _ = scan(torch.tensor(sb, dtype=torch.float32), torch.tensor(np.log(mag), dtype=torch.float32))
        x = s * h.double().numpy()
        return x[:, ::-1] if config["reverse"] else x

    return call


def fla_hgrn_naive(bundle: dict, config: dict, dtype: str = "float64"):
    """fla-core's `naive_recurrent_hgrn(x, g)`, its reference loop (float32: it casts x and g with .float())."""
    return _hgrn(_import("fla-hgrn-naive").naive_recurrent_hgrn, config,
                 "naive_recurrent_hgrn casts x and g with .float()", dtype)


def fla_hgrn(bundle: dict, config: dict, dtype: str = "float64"):
    """fla-core's `fused_recurrent_hgrn(x, g)`, its Triton kernel (Triton's interpreter on the CPU, where its
    autotuner keeps its first configuration: the interpreter has no driver to time the others with)."""
    module = _import("fla-hgrn")
    if os.environ.get("TRITON_INTERPRET") == "1":
        for name in dir(module):
            kernel = getattr(module, name)
            while kernel is not None:
                if type(kernel).__name__ == "Autotuner":
                    kernel.configs = kernel.configs[:1]
                kernel = getattr(kernel, "fn", None)
    return _hgrn(module.fused_recurrent_hgrn, config,
                 "its Triton kernel loads x and g as float32 and accumulates in float32", dtype)


def mambapy(bundle: dict, config: dict, dtype: str = "float64"):
    """mambapy's `pscan(A, X)` (a Blelloch scan in PyTorch over (B L D N), the length padded to a power of two):
    N = 1; reverse: the sequence reversed in and out (its `pscan_rev` is its backward pass's, not a forward API)."""
    pscan = _import("mambapy").pscan

    def call(a, b):
        a, b = _tensors(a, b, dtype)
        if config["reverse"]:
            a, b = a.flip(1), b.flip(1)
        x = pscan(a[..., None].contiguous(), b[..., None].contiguous())[..., 0]
        return _out(x.flip(1) if config["reverse"] else x)

    return call
