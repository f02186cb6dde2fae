"""`linrnn conform`'s targets on the PyTorch side, and its torch gradient probe (`linrnn.verify.conform`).

Each target follows the protocol of docs/conform.md: `target(bundle, config, dtype)` with the bundle's
float64 arrays (layer keys) and its config as a plain dict returns `call(u, state=None) -> (y, state)`.
`call` takes u as NumPy (then y is NumPy, computed without autograd) or as a tensor (then y is a tensor
with its graph, for the gradient check).

    linrnn-torch   the project's own layer (`linrnn.impls.torch.from_bundle`), mode `scan`
    lru-pytorch    LRU-pytorch's `LRU` (kind lru)
    s5-pytorch     s5-pytorch's `S5` (kind s5; kind lru: an LRU bundle is an S5 with step Delta = 1)

The peers are loaded with the bundle's numbers and otherwise run as shipped, in the requested dtype:

* LRU-pytorch: `nu_log`, `theta_log`, `gamma_log`, `B = B_re + i B_im`, `C = C_re + i C_im` as they are.
  Its `D` is a full (H, H) matrix: the bundle's D goes on its diagonal, and the off-diagonal entries, which
  the contract does not have, keep the peer's own initialisation (N(0, 1/H), `torch.manual_seed(SEED)`).
  It takes one state of shape (N,) per call (its `self.state`), so the adapter passes batch element 0's;
  it returns no final state (it resets `self.state` to zero after each batch element), so the adapter
  computes the final state from the peer's loaded parameters by the LRU recurrence. It has no backward scan.
* s5-pytorch, an S5 bundle: `Lambda = Lambda_re + i Lambda_im`, `log_step`, `B = B_re + i B_im` (stored as its
  (N, H, 2) real pairs), `C`, `D` as they are; its `S5` discretises by zero-order hold and never clips, so
  `discretization = "bilinear"` and `clip_eigs` raise NotImplementedError.
  An LRU bundle: `Lambda = log lambda = -exp(nu_log) + i exp(theta_log)`, `log_step = 0` (Delta = 1), so its
  zero-order hold gives `Lambda_bar = lambda`; `B_tilde = Lambda / (lambda - 1) * exp(gamma_log) (B_re + i B_im)`,
  so that its `B_bar = (Lambda_bar - 1) / Lambda * B_tilde` is the LRU's input matrix; `C`, `D` as they are.
  Bidirectional: `C = [C, C_rev]` and its `bidir=True`. States pass through its `state=` / `return_state`.
"""

from __future__ import annotations

import importlib

import numpy as np
import torch
from torch import nn

from linrnn.impls.bundle import Bundle
from linrnn.impls.config import config_from_dict
from linrnn.base.errors import LinrnnError
from linrnn.impls.torch import from_bundle
from linrnn.impls.torch.layer import MODES, torch_dtype
from linrnn.verify.peers_torch import PEERS, check_peer, missing_reason
from linrnn.impls.torch.scan import complex_dtype

SEED = 0          # the peers' own initialisation of what the contract does not set
CLASSES = {"lru-pytorch": "LRU", "s5-pytorch": "S5"}
PEER_KINDS = {"lru-pytorch": ("lru",), "s5-pytorch": ("s5", "lru")}

__all__ = ["input_gradient", "linrnn_torch", "lru_pytorch", "missing_reason", "parameter_gradient", "s5_pytorch",
           "state_array", "state_gradient", "state_like"]


def _tensor(u) -> torch.Tensor:
    return u if isinstance(u, torch.Tensor) else torch.from_numpy(np.array(u, dtype=np.float64))


def _run(forward, u):
    """forward(x tensor) -> (y, state) on u given as NumPy (no graph, NumPy out) or as a tensor (graph kept)."""
    x = _tensor(u)
    with torch.set_grad_enabled(x.requires_grad):
        y, state = forward(x)
    if x.requires_grad:
        return y, state
    y = y.detach().cpu()
    return (y.float() if y.dtype == torch.bfloat16 else y).numpy(), state      # NumPy has no bfloat16


def linrnn_torch(bundle: dict, config: dict, dtype: str = "float64"):
    """The project's own PyTorch layer, holding the bundle's numbers in `dtype`."""
    layer = from_bundle(Bundle(config_from_dict(config), bundle), torch_dtype(dtype))
    mode = "conv" if config.get("max_kernel_length") else MODES[0]     # a truncated DLR kernel: only its own view

    io = layer.io_dtype or layer.dtype                                 # a low dtype's input and output (bf16, fp16)

    def call(u, state=None, lengths=None, segments=None, params=None):
        """params: {bundle key: tensor} computed with in place of the layer's own (the parameter gradients)."""
        def forward(x):
            kwargs = {"mode": mode, "state": state, "lengths": lengths, "segments": segments}
            if params is None:
                return layer(x.to(io), **kwargs)
            own = {k: v.to(layer.dtype) for k, v in params.items()}
            return torch.func.functional_call(layer, own, (x.to(io),), kwargs)
        return _run(forward, u)

    def step(u_t, state=None):
        """One position: u_t (B H) NumPy -> (y_t (B H) NumPy, the state after it), by the layer's own `step`."""
        with torch.no_grad():
            y_t, state = layer.step(torch.from_numpy(np.array(u_t, dtype=np.float64)).to(io), state)
        y_t = y_t.cpu()
        return (y_t.float() if y_t.dtype == torch.bfloat16 else y_t).numpy(), state

    if not config.get("max_kernel_length") and not config.get("bidirectional"):     # the layers that stream
        call.step = step
    return call


# -- the peers ----------------------------------------------------------------------------------

def _check(name: str, config: dict) -> None:
    """The peer is installed and implements the config's kind, else a LinrnnError saying why not."""
    reason = missing_reason(check_peer(name))
    if reason:
        raise LinrnnError(reason)
    if config["kind"] not in PEER_KINDS[name]:
        raise LinrnnError(f"{name} implements {', '.join(PEER_KINDS[name])}, found --model {config['kind']}")


def _peer(name: str, **kwargs) -> nn.Module:
    """The peer's module (after `_check`), built by its package's own initialisation under `torch.manual_seed(SEED)`."""
    package = importlib.import_module(PEERS[name][1])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        return getattr(package, CLASSES[name])(**kwargs)


def _dtypes(dtype: str) -> tuple[torch.dtype, torch.dtype]:
    real = torch_dtype(dtype)
    return real, complex_dtype(real)


def _parameter(array, dtype: torch.dtype) -> nn.Parameter:
    return nn.Parameter(torch.as_tensor(np.asarray(array)).to(dtype))


def lru_pytorch(bundle: dict, config: dict, dtype: str = "float64"):
    """LRU-pytorch's `LRU` holding an LRU bundle (see the module docstring for what is loaded and how)."""
    _check("lru-pytorch", config)
    if dtype not in ("float64", "float32"):
        raise NotImplementedError(f"LRU-pytorch holds B and C as complex parameters: torch has no complex {dtype}")
    if config["bidirectional"]:
        raise NotImplementedError("LRU-pytorch has no backward scan")
    H, N = config["d_model"], config["d_state"]
    module = _peer("lru-pytorch", in_features=H, out_features=H, state_features=N)
    real, cplx = _dtypes(dtype)
    for key in ("nu_log", "theta_log", "gamma_log"):
        setattr(module, key, _parameter(bundle[key], real))
    module.B = _parameter(bundle["B_re"] + 1j * bundle["B_im"], cplx)
    module.C = _parameter(bundle["C_re"] + 1j * bundle["C_im"], cplx)
    D = module.D.detach().to(real).clone()
    D.diagonal().copy_(torch.as_tensor(bundle["D"]))
    module.D = nn.Parameter(D)

    def final_state(x: torch.Tensor, x0) -> torch.Tensor:
        """The LRU recurrence on the peer's own parameters (it keeps no final state).   x (B L H) -> (B N)"""
        with torch.no_grad():
            lam = torch.exp(torch.complex(-torch.exp(module.nu_log), torch.exp(module.theta_log)))
            drive = torch.exp(module.gamma_log) * (x.to(cplx) @ module.B.T)          # (B L N)
            state = torch.zeros(x.shape[0], N, dtype=cplx) if x0 is None else x0
            for t in range(x.shape[1]):
                state = lam * state + drive[:, t]
        return state

    def call(u, state=None):
        def forward(x):
            x = x.to(real)
            return module(x, state=None if state is None else state[0]), final_state(x, state)
        return _run(forward, u)

    return call


def s5_pytorch(bundle: dict, config: dict, dtype: str = "float64"):
    """s5-pytorch's `S5` holding an S5 bundle, or an LRU bundle with step Delta = 1 (see the module docstring)."""
    H, N, bidirectional = config["d_model"], config["d_state"], config["bidirectional"]
    _check("s5-pytorch", config)
    if dtype not in ("float64", "float32"):
        raise NotImplementedError(f"s5-pytorch holds Lambda and C as complex parameters: torch has no complex {dtype}")
    if config["kind"] == "lru":
        log_lambda = -np.exp(bundle["nu_log"]) + 1j * np.exp(bundle["theta_log"])         # (N,)
        B = np.exp(bundle["gamma_log"])[:, None] * (bundle["B_re"] + 1j * bundle["B_im"])  # (N H)
        Lambda, log_step = log_lambda, np.zeros(N)
        B_tilde = (log_lambda / np.expm1(log_lambda))[:, None] * B                         # (N H)
    else:
        if config["clip_eigs"]:
            raise NotImplementedError("s5-pytorch does not clip Re(Lambda) (its clip_eigs is a TODO)")
        if config["discretization"] != "zoh":
            raise NotImplementedError("s5-pytorch's S5 discretises by zero-order hold only")
        Lambda, log_step = bundle["Lambda_re"] + 1j * bundle["Lambda_im"], bundle["log_step"]
        B_tilde = bundle["B_re"] + 1j * bundle["B_im"]                                        # (N H)
    module = _peer("s5-pytorch", width=H, state_width=N, bidir=bidirectional)
    real, cplx = _dtypes(dtype)
    C = bundle["C_re"] + 1j * bundle["C_im"]
    if bidirectional:
        C = np.concatenate([C, bundle["C_re_rev"] + 1j * bundle["C_im_rev"]], axis=1)  # (H 2N)
    ssm = module.seq
    ssm.Lambda = _parameter(Lambda, cplx)
    ssm.log_step = _parameter(log_step, real)
    ssm.B = _parameter(np.stack([B_tilde.real, B_tilde.imag], axis=-1), real)           # (N H 2)
    ssm.C = _parameter(C, cplx)
    ssm.D = _parameter(bundle["D"], real)

    def call(u, state=None):
        def forward(x):
            x = x.to(real)
            if bidirectional:         # its return_state refuses a bidirectional layer
                return module(x), None
            return module(x, state=state, return_state=True)
        return _run(forward, u)

    return call


# -- the gradient probe --------------------------------------------------------------------------

def input_gradient(call, u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray | None, str]:
    """d<w, call(u)>/du by torch autograd, or (None, why not) when its output has no gradient; a call that
    fails on a tensor raises.

    u, w (B L H) float64 -> (B L H) float64"""
    x = torch.tensor(u, dtype=torch.float64, requires_grad=True)
    y = call(x)                   # what a target written for NumPy or JAX raises here, conform reports
    if not isinstance(y, torch.Tensor) or not y.requires_grad:
        return None, f"torch: its output on a tensor that requires grad is a {type(y).__name__} without a gradient"
    (y * torch.as_tensor(w, dtype=y.dtype, device=y.device)).sum().backward()
    if x.grad is None:
        return None, "torch: the input received no gradient"
    return x.grad.double().numpy(), "torch autograd"


def _inner(s: torch.Tensor, v: np.ndarray) -> torch.Tensor:
    """sum(Re(s) Re(v) + Im(s) Im(v)): the real inner product of a state with a cotangent of its shape."""
    v = torch.as_tensor(np.asarray(v), device=s.device)
    if s.is_complex():
        return (s.real * v.real.to(s.real.dtype)).sum() + (s.imag * v.imag.to(s.real.dtype)).sum()
    return (s * v.real.to(s.dtype)).sum()


def state_gradient(call, u: np.ndarray, state, w: np.ndarray, v: np.ndarray) -> tuple[dict | None, str]:
    """{"input", "state"}: the gradients of <w, y> + <v, state out> ((y, state out) = call(x, s), from the state
    `state` passed in) by torch autograd, as NumPy (a complex state's: d/dRe + i d/dIm); or (None, why not)."""
    if not isinstance(state, torch.Tensor):
        return None, f"torch: the state is a {type(state).__name__}, not a tensor"
    x = torch.tensor(u, dtype=torch.float64, requires_grad=True)
    s = state.detach().clone().requires_grad_(True)
    y, out = call(x, s)
    if not isinstance(y, torch.Tensor) or not y.requires_grad:
        return None, f"torch: its output on a tensor that requires grad is a {type(y).__name__} without a gradient"
    loss = (y * torch.as_tensor(w, dtype=y.dtype, device=y.device)).sum()
    if isinstance(out, torch.Tensor):
        loss = loss + _inner(out, v)
    gx, gs = torch.autograd.grad(loss, (x, s), allow_unused=True)
    zero = lambda t: torch.zeros_like(t)                                         # noqa: E731 (no gradient reached it)
    return {"input": (zero(x) if gx is None else gx).detach().double().numpy(),
            "state": (zero(s) if gs is None else gs).detach().cpu().numpy()}, "torch autograd"


def state_array(state: torch.Tensor) -> np.ndarray:
    """A state tensor (its graph dropped) as NumPy."""
    return state.detach().cpu().numpy()


def state_like(state: torch.Tensor, array: np.ndarray) -> torch.Tensor:
    """`array` as a state of `state`'s dtype and device (a state the target returned, moved by a probe)."""
    return torch.as_tensor(np.asarray(array)).to(dtype=state.dtype, device=state.device)


def parameter_gradient(call, u: np.ndarray, params: dict, w: np.ndarray) -> tuple[dict | None, str]:
    """{key: d<w, y>/d key} for y = call(x, {key: float64 tensor}) by torch autograd, as NumPy (None where no gradient
    reached a key); or (None, why not)."""
    x = torch.tensor(u, dtype=torch.float64, requires_grad=True)     # a call on it keeps its graph
    leaves = {k: torch.tensor(np.asarray(v), dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    y = call(x, leaves)
    if not isinstance(y, torch.Tensor) or not y.requires_grad:
        return None, f"torch: its output on parameter tensors that require grad is a {type(y).__name__} without a " \
                     f"gradient"
    loss = (y * torch.as_tensor(w, dtype=y.dtype, device=y.device)).sum()
    grads = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
    return {k: None if g is None else g.detach().double().numpy() for k, g in zip(leaves, grads)}, "torch autograd"
