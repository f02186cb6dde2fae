"""Small layers written for the conform battery's tests (tests/verify/test_conform_findings.py), apart from the
project's implementations: each computes one contract from the bundle by its own route (NumPy loops, SciPy's real
Schur form, powers of lambda, a PyTorch loop) with one bug or none, so that a probe is judged on code it was not
written from.

    lru(bug)      NumPy LRU (state=, segments=, lengths=, step): bugs no_gamma, gamma_difference, float32, a float
                  eps (the output times 1 + eps), grouped, step_late, half
    torch_lru(bug)  PyTorch LRU (state=, params=): bugs state_grad, nu_grad
    rotrnn(bug)   NumPy RotRNN, P from the real Schur form: bugs transposed, p2b, interleaved, bidirectional_heads,
                  xi_difference
    dlr(bug)      NumPy DLR kernel by powers of lambda: bug shift
    s4d(bug)      NumPy S4D kernel: bug difference (C (exp(dt A) - 1) / A)
    s5(bug)       NumPy S5 (zoh) in float64, float32 and bfloat16 (emulated: values rounded to bfloat16's):
                  bug bf16_scan (the state rounded to bfloat16 at every step)
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

FULL = ("float64", "float32")


def _real(dtype: str):
    return np.float32 if dtype in ("float32", "bfloat16") else np.float64


def _complex(dtype: str):
    return np.complex64 if dtype in ("float32", "bfloat16") else np.complex128


def to_bfloat16(x) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32 (complex: each part)."""
    x = np.asarray(x)
    if np.iscomplexobj(x):
        return (to_bfloat16(x.real) + 1j * to_bfloat16(x.imag)).astype(np.complex64)
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)


# -- the LRU -----------------------------------------------------------------------------------------------------

def lru(bug=None):
    def build(bundle, config, dtype="float64"):
        if dtype not in FULL:
            raise NotImplementedError(f"this LRU computes in {' and '.join(FULL)}")
        if config["bidirectional"]:
            raise NotImplementedError("forward scan only")
        work = "float32" if bug == "float32" else dtype
        real, cplx = _real(work), _complex(work)
        lam = np.exp(-np.exp(bundle["nu_log"]) + 1j * np.exp(bundle["theta_log"])).astype(cplx)         # (N,)
        gamma = np.exp(bundle["gamma_log"]).astype(real)
        if bug == "no_gamma":
            gamma = np.ones_like(gamma)
        if bug == "gamma_difference":                      # 1 - |lambda|^2 as a difference, in the layer's dtype
            gamma = np.sqrt(real(1) - np.abs(lam).astype(real) ** 2)
        B = (gamma[:, None] * (bundle["B_re"] + 1j * bundle["B_im"])).astype(cplx)                       # (N H)
        C = (bundle["C_re"] + 1j * bundle["C_im"]).astype(cplx)                                         # (H N)
        D = bundle["D"].astype(real)
        excess = 1.0 + (bug if isinstance(bug, float) else 0.0)

        def scan(u, x):                                   # u (B L H) -> y (B L H), the last state
            y = np.empty(u.shape, real)
            for t in range(u.shape[1]):
                x = lam * x + u[:, t].astype(real) @ B.T
                rec = (x @ C.T).real
                y[:, t] = (0.5 * rec if bug == "half" else rec) + D * u[:, t]
            return y * excess, x

        def call(u, state=None, segments=None, lengths=None):
            x0 = np.zeros((len(u), len(lam)), cplx) if state is None else state
            if lengths is not None:                       # each row's valid part alone, 0 at the padding
                y = np.zeros(u.shape, real)
                for b, n in enumerate(np.asarray(lengths)):
                    y[b, :n] = scan(u[b:b + 1, :n], np.zeros((1, len(lam)), cplx))[0][0]
                return y, None
            if segments is None:
                return scan(u, x0)
            y = np.zeros(u.shape, real)
            for b, row in enumerate(np.asarray(segments)):
                groups = ([np.flatnonzero(row == i) for i in np.unique(row)] if bug == "grouped" else
                          np.split(np.arange(len(row)), np.flatnonzero(np.diff(row)) + 1))
                for where in groups:                      # each sequence from a zero state
                    y[b, where] = scan(u[b:b + 1, where], np.zeros((1, len(lam)), cplx))[0][0]
            return y, None

        def step(u_t, state=None):
            x = np.zeros((len(u_t), len(lam)), cplx) if state is None else state
            before = (x @ C.T).real
            x = lam * x + u_t @ B.T
            return (before if bug == "step_late" else (x @ C.T).real) + D * u_t, x

        call.step = step
        return call
    return build


def torch_lru(bug=None):
    """The LRU in PyTorch, differentiable: state=, params= (the bundle's keys as tensors). bug 'state_grad': a
    hand-written backward that drops the gradient of the state passed in; 'nu_grad': one that doubles d/d nu_log."""
    import torch

    class DropGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return torch.zeros_like(g)

    class DoubleGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    def build(bundle, config, dtype="float64"):
        if dtype not in FULL:
            raise NotImplementedError(f"this LRU computes in {' and '.join(FULL)}")
        if config["bidirectional"]:
            raise NotImplementedError("forward scan only")
        real = {"float64": torch.float64, "float32": torch.float32}[dtype]
        own = {k: torch.tensor(v) for k, v in bundle.items()}

        def forward(u, x, p):
            p = {k: v.to(real) for k, v in p.items()}
            nu = DoubleGradient.apply(p["nu_log"]) if bug == "nu_grad" else p["nu_log"]
            lam = torch.exp(torch.complex(-torch.exp(nu), torch.exp(p["theta_log"])))              # (N,)
            B = torch.exp(p["gamma_log"])[:, None] * torch.complex(p["B_re"], p["B_im"])            # (N H)
            C = torch.complex(p["C_re"], p["C_im"])                                                 # (H N)
            x = torch.zeros(u.shape[0], lam.shape[0], dtype=lam.dtype) if x is None else x
            x = DropGradient.apply(x) if bug == "state_grad" else x
            ys = []
            for t in range(u.shape[1]):
                x = lam * x + u[:, t].to(lam.dtype) @ B.T
                ys.append((x @ C.T).real + p["D"] * u[:, t])
            return torch.stack(ys, dim=1), x

        def call(u, state=None, params=None):
            tensor = isinstance(u, torch.Tensor)
            x = (u if tensor else torch.from_numpy(np.asarray(u))).to(real)
            with torch.set_grad_enabled(tensor or params is not None):
                y, s = forward(x, state, own if params is None else params)
            return (y, s) if tensor or params is not None else (y.detach().numpy(), s.detach())

        return call
    return build


# -- RotRNN ------------------------------------------------------------------------------------------------------

def rotation(M: np.ndarray) -> np.ndarray:
    """expm(M - M^T) by the real Schur form S = Q T Q^T of the skew-symmetric S (T: 2x2 blocks [[0, w], [-w, 0]],
    whose exponential is a rotation by w): orthogonal to rounding.     M (N N) -> (N N)"""
    T, Q = scipy.linalg.schur(M - M.T, output="real")
    E = np.eye(len(M))
    i = 0
    while i < len(M):
        if i + 1 < len(M) and abs(T[i + 1, i]) > 0:
            w = T[i, i + 1]
            E[i:i + 2, i:i + 2] = [[np.cos(w), np.sin(w)], [-np.sin(w), np.cos(w)]]
            i += 2
        else:
            i += 1
    return Q @ E @ Q.T


def rotrnn(bug=None):
    def build(bundle, config, dtype="float64"):
        if dtype not in FULL:
            raise NotImplementedError(f"this RotRNN computes in {' and '.join(FULL)}")
        heads, N = config["heads"], config["d_state"]
        real = _real(dtype)
        gamma = np.exp(-np.exp(bundle["gamma_log"]))                                               # (heads,)
        norm = np.sqrt(np.sum(bundle["B"] ** 2, axis=(1, 2)))
        xi = (np.sqrt(1 - gamma.astype(real) ** 2) if bug == "xi_difference"
              else np.sqrt(-np.expm1(-2 * np.exp(bundle["gamma_log"])))) / norm
        A, Bh = np.zeros((heads, N, N)), np.array(bundle["B"])
        for h in range(heads):
            P = rotation(bundle["M"][h])
            c, s = np.cos(bundle["theta"][h]), np.sin(bundle["theta"][h])
            Theta = np.zeros((N, N))
            for j in range(N // 2):
                Theta[2 * j:2 * j + 2, 2 * j:2 * j + 2] = [[c[j], -s[j]], [s[j], c[j]]]
            A[h] = gamma[h] * (P.T @ Theta @ P if bug == "transposed" else P @ Theta @ P.T)
            if bug == "p2b":
                Bh[h] = P @ P @ Bh[h]
        A, Bh = A.astype(real), (xi[:, None, None] * Bh).astype(real)
        C = bundle["C"].astype(real)
        C_rev = bundle["C_rev"].astype(real) if config["bidirectional"] else None

        def scan(u, x, reverse=False):                    # -> states (B L heads N)
            out = np.empty((u.shape[0], u.shape[1], heads, N), real)
            for t in (range(u.shape[1] - 1, -1, -1) if reverse else range(u.shape[1])):
                x = np.einsum("hij,bhj->bhi", A, x) + np.einsum("hnk,bk->bhn", Bh, u[:, t].astype(real))
                out[:, t] = x
            return out

        def flat(states):                                 # (B L heads N) -> (B L heads*N), head-major
            return (states.transpose(0, 1, 3, 2) if bug == "interleaved" else states).reshape(*states.shape[:2], -1)

        def call(u, state=None):
            x0 = np.zeros((len(u), heads, N), real) if state is None else state
            fwd = scan(u, x0)
            if C_rev is None:
                return flat(fwd) @ C.T + bundle["D"].astype(real) * u, fwd[:, -1]
            bwd = scan(u, np.zeros_like(x0), reverse=True)
            if bug == "bidirectional_heads":              # [fwd_1, bwd_1, fwd_2, bwd_2, ...] under [C, C_rev]
                both = np.stack([fwd, bwd], axis=3).reshape(*fwd.shape[:2], -1)
                y = both @ np.concatenate([C, C_rev], axis=1).T
            else:
                y = flat(fwd) @ C.T + flat(bwd) @ C_rev.T
            return y + bundle["D"].astype(real) * u, None

        return call
    return build


# -- DLR, S4D: kernels ---------------------------------------------------------------------------------------------

def convolve(K: np.ndarray, D: np.ndarray, u: np.ndarray) -> np.ndarray:
    """y_t = sum_{l <= t} K_l u_{t-l} + D u_t, per channel.     K (L H), u (B L H) -> (B L H)"""
    y = D * u
    for lag in range(u.shape[1]):
        y[:, lag:] += K[lag] * u[:, :u.shape[1] - lag]
    return y


def dlr(bug=None):
    def build(bundle, config):
        if config["bidirectional"]:
            raise NotImplementedError("causal kernel only")
        lam = np.exp(-bundle["a"] ** 2 + 1j * bundle["theta"])                                     # (N,)
        W = bundle["W_re"] + 1j * bundle["W_im"]                                                   # (H N)
        Lk = config["max_kernel_length"]

        def call(u):
            lags = np.arange(u.shape[1])
            powers = lam[None, :] ** (lags[:, None] + (1 if bug == "shift" else 0))                 # (L N)
            K = (powers @ W.T).real                                                                # (L H)
            if Lk:
                K[Lk:] = 0.0
            return convolve(K, bundle["D"], u)

        return call
    return build


def s4d(bug=None):
    def build(bundle, config, dtype="float64"):
        if dtype not in FULL:
            raise NotImplementedError(f"this S4D computes in {' and '.join(FULL)}")
        if config["bidirectional"]:
            raise NotImplementedError("causal kernel only")
        real, cplx = _real(dtype), _complex(dtype)
        dt = np.exp(bundle["log_dt"]).astype(real)[:, None]                                        # (H 1)
        A = (-np.exp(bundle["log_A_real"]) + 1j * bundle["A_imag"]).astype(cplx)                  # (H N)
        gain = (np.exp(dt * A) - 1) / A if bug == "difference" else np.expm1(dt * A) / A
        Ct = (2 * (bundle["C_re"] + 1j * bundle["C_im"]) * gain).astype(cplx)                     # (H N)
        lam = np.exp(dt * A)

        def call(u):
            lags = np.arange(u.shape[1])
            K = np.einsum("hn,lhn->lh", Ct, lam[None] ** lags[:, None, None]).real                 # (L H)
            return convolve(K.astype(real), bundle["D"].astype(real), u.astype(real))

        return call
    return build


# -- S5 in a low dtype ---------------------------------------------------------------------------------------------

def s5(bug=None):
    """S5 by zero-order hold. bfloat16, under the mixed-precision policy: u, C and D rounded to bfloat16's values, the
    discretisation and the recurrence in float32 (complex64), the output rounded once; bug 'bf16_scan': the state
    rounded to bfloat16 at every step (a scan accumulated in bfloat16)."""
    def build(bundle, config, dtype="float64"):
        if dtype not in FULL + ("bfloat16",):
            raise NotImplementedError(f"this S5 computes in float64, float32 and bfloat16, not {dtype}")
        if config["bidirectional"] or config["discretization"] != "zoh" or config["clip_eigs"]:
            raise NotImplementedError("forward zero-order hold only")
        low = dtype == "bfloat16"
        real, cplx = _real(dtype), _complex(dtype)
        rnd = to_bfloat16 if low else (lambda v: v)
        Lam = (bundle["Lambda_re"] + 1j * bundle["Lambda_im"]).astype(cplx)
        step = np.exp(bundle["log_step"]).astype(real)
        lam = np.exp(step * Lam)
        B = (np.expm1(step * Lam) / Lam)[:, None] * (bundle["B_re"] + 1j * bundle["B_im"]).astype(cplx)   # (N H)
        C = rnd((bundle["C_re"] + 1j * bundle["C_im"]).astype(cplx))
        D = rnd(bundle["D"].astype(real))

        def call(u):
            u = rnd(u.astype(real))
            x = np.zeros((len(u), len(lam)), cplx)
            y = np.empty(u.shape, real)
            for t in range(u.shape[1]):
                x = lam * x + u[:, t] @ B.T
                if bug == "bf16_scan" and low:
                    x = to_bfloat16(x)
                y[:, t] = rnd(2 * (x @ C.T).real + D * u[:, t])
            return y

        return call
    return build


# for `linrnn conform planted_layers:NAME` from this folder
lru_faithful, lru_float32 = lru(), lru("float32")
