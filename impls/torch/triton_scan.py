"""The diagonal scan as Triton kernels: forward and backward, chunk-parallel, for CUDA tensors.

The recurrence of `scan.py`, with its signature and its storage (interleaved (Re, Im) pairs):

    x_t = lambda * x_{t-1} + v_t,        lambda = exp(log_lambda) in C^n,  |lambda| <= 1

    log_lam  (n,) complex           log of the diagonal transition
    v        (B L n 2) real         inputs, float32 or float64
    x0       (B n 2) real or None   state before v_0 (zeros if None)
    -> states (B L n 2) real, x_t for t = 0..L-1

Triton has no complex dtype: a program holds the real and imaginary parts of its K lanes as two float
vectors and multiplies by hand,  (a + ib)(c + id) = (ac - bd) + i(ad + bc).

Forward, over nc = ceil(L / T) chunks of T positions, in three launches (`chunk_scan`):

    1. reduce  grid (nc, n/K, B): each program runs the recurrence over its chunk from a zero state and
               writes only the chunk's end, E_c (B nc n 2);
    2. carry   grid (n/K, B): one program per batch row and lane block walks the chunks in order,
               S_0 = x0,  S_{c+1} = lambda^T S_c + E_c,  and writes S_c, the state entering chunk c;
    3. rescan  grid (nc, n/K, B): each program runs the recurrence over its chunk again, now from S_c,
               and writes the states.

This is the two-level scan of `scan.chunked` with its fix-up (x_{cT+t} = local_t + lambda^(t+1) S_c)
replaced by a second pass of the recurrence from the right start: it reads v twice and writes the
states once (three passes over B L n pairs, where "local states, then fix-up" makes four), needs no
table of powers, and every state is computed by the very steps of the plain loop from S_c. The only
power is lambda^T for the carries, computed on the host by `scan.powers` as exp(T log lambda), never
by repeated multiplication. Within a program the T steps are sequential; the parallelism is over
chunks, lanes and batch, so the critical path is 2T + nc dependent steps.

Backward (`scan_backward_op`; the derivation is in `scan.DiagonalScan`): with g_t = dLoss/dRe x_t +
i dLoss/dIm x_t, PyTorch's convention for a real loss,

    a_t = g_t + conj(lambda) a_{t+1},  a_L = 0         the same three launches, reverse in time,
                                                       with the transition conjugated
    grad v_t = a_t,   grad x0 = conj(lambda) a_0,
    grad lambda = sum_{b,t} a_t conj(x_{t-1})  (x_{-1} = x0 or 0),   grad log lambda = conj(lambda) grad lambda

The reverse scan indexes time backwards inside a chunk and walks the chunks from the last; it enters
the zero padding of a ragged last chunk from a zero state, which stays zero. grad lambda needs the
states x_{t-1}: the forward saves only the states entering the chunks (B nc n 2, the carry pass's
output, which it computes anyway), and a fourth kernel recomputes each chunk's states from its S_c
while it reads a_t, writing one partial sum per (batch row, chunk, lane) that the host adds up. So
the backward holds v, g and a (B L n 2 each), not the forward's trajectory: 5 passes over B L n
pairs (2 for the adjoint's reduce and rescan reading g, 1 writing a, 2 reading v and a).

Defaults: T = `scan.chunk_length(L)` = 2^round(log2 sqrt L), which nearly minimises the 2T + nc
dependent steps of the critical path, as it minimises `scan.chunked`'s T + nc Python-level steps;
K = 32 lanes per program, one warp. Neither is measured on a GPU yet. T is a run-time argument (no recompilation per
L); K is a compile-time constant and must be a power of two (`tl.arange`).

Dtypes: float32 and float64 (Triton does float64 loads, multiplies and adds; the kernels use no
transcendental function, the two powers come from the host). log_lam is cast to the complex dtype of
v's precision, as in `scan.chunked`. Compiled, a * b + c becomes one FMA (FP fusion, asked for in
`options`); the interpreter rounds twice. A fused step has fewer roundings, so the tolerance table's
bound, checked here under the interpreter, should hold compiled too (not yet checked on a GPU). So far the
kernels have run only under the interpreter; compiled for sm_90 (`triton.compile`, no device) they
build in float32 and float64.

Grid limits: chunks on axis 0 (up to 2^31 - 1), lane blocks on axis 1 and batch on axis 2 (each at
most 65535 on CUDA).

Running without a GPU: `TRITON_INTERPRET=1` makes `triton.jit` return an interpreted function that
runs the kernel body in NumPy, on CPU tensors. Triton 3.9 reads the variable in `triton.jit`, when a
function is decorated, not when it is launched: for the kernels of triton.language itself (`tl.zeros`
and the rest of its standard library) that is at `import triton`. The kernels here are therefore plain
functions, decorated at their first launch and kept per mode (`kernels`), and use only `tl` builtins:
the mode follows TRITON_INTERPRET at call time, so a test can set it for itself (pytest's monkeypatch)
without touching anything else, whenever triton was imported.

Importing this module needs no triton; `available()` and `unavailable_reason()` say whether the
kernels can run here.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from linrnn.base.errors import LinrnnError
from linrnn.impls.torch.autodiff import recorded, transformed, vjp_through
from linrnn.impls.torch.scan import chunk_length, complex_dtype, powers, sequential

try:                       # an optional dependency: the module imports without it, `available()` says so
    import triton
    import triton.language as tl
except ImportError:
    triton = tl = None

LANES = 32                 # K: lanes per program (a power of two); 32 lanes are one warp's threads
MAX_GRID = 65535           # CUDA's limit on grid axes 1 and 2 (lane blocks, batch)


def interpreted() -> bool:
    """Whether Triton runs kernels in its interpreter (TRITON_INTERPRET=1): NumPy on CPU tensors."""
    return triton is not None and bool(triton.knobs.runtime.interpret)


def unavailable_reason() -> str:
    """'' when the kernels can run here, else one line saying why not."""
    if triton is None:
        return "triton is not installed (pip install triton)"
    if interpreted():
        return ""
    if not torch.cuda.is_available():
        return "no CUDA device (set TRITON_INTERPRET=1 to run the kernels in Triton's interpreter on the CPU)"
    return ""


def available() -> bool:
    """Triton is importable, and a CUDA device is present unless TRITON_INTERPRET=1 is set."""
    return unavailable_reason() == ""


# -- the kernels: plain functions, decorated by `kernels` at first use ---------------------------------
# Written for both Triton's compiler and its interpreter: one assignment target per statement (the
# interpreter rewrites assignments), no nested functions, no globals but `tl`, and only `tl` builtins:
# `tl.full`, not `tl.zeros`, because triton.language's own helpers (`tl.zeros`, `tl.cdiv`, ...) are
# `triton.jit` functions decorated once, at `import triton`, in whatever mode was set then.
# (*) The position test is broadcast to a vector before `&`: Triton 3.9's interpreter turns
# `bool vector & bool scalar` into an int32 mask, which `tl.load` rejects.

def chunk_scan_kernel(lam_ptr, w_ptr, start_ptr, out_ptr, L, n, T,
                      K: tl.constexpr, REVERSE: tl.constexpr, RESCAN: tl.constexpr):
    """One chunk of one batch row, K lanes: the recurrence over its T positions.

    lam (n 2), w and out (B L n 2), start (B nc n 2); program ids (chunk c, lane block, batch row b).
    RESCAN false: from a zero state; writes only the end, into out (B nc n 2) at (b, c).
    RESCAN true: from start[b, c]; writes every state into out (B L n 2).
    REVERSE: positions cT + T-1 down to cT (the end is then the state at cT).
    """
    c = tl.program_id(0)
    lanes = tl.program_id(1) * K + tl.arange(0, K)                   # (K,)
    b = tl.program_id(2).to(tl.int64)
    nc = tl.num_programs(0)
    live = lanes < n
    lam_re = tl.load(lam_ptr + 2 * lanes, mask=live, other=0.0)
    lam_im = tl.load(lam_ptr + 2 * lanes + 1, mask=live, other=0.0)
    boundary = ((b * nc + c) * n + lanes) * 2                        # (K,) offsets into (B nc n 2)
    if RESCAN:
        x_re = tl.load(start_ptr + boundary, mask=live, other=0.0)
        x_im = tl.load(start_ptr + boundary + 1, mask=live, other=0.0)
    else:
        x_re = tl.full([K], 0.0, lam_re.dtype)
        x_im = tl.full([K], 0.0, lam_re.dtype)
    for i in range(T):
        if REVERSE:
            t = c * T + (T - 1 - i)
        else:
            t = c * T + i
        at = ((b * L + t) * n + lanes) * 2                           # (K,) offsets into (B L n 2)
        inside = live & (tl.full([K], t, tl.int32) < L)              # zero padding after position L - 1 (*)
        w_re = tl.load(w_ptr + at, mask=inside, other=0.0)
        w_im = tl.load(w_ptr + at + 1, mask=inside, other=0.0)
        y_re = lam_re * x_re - lam_im * x_im + w_re
        x_im = lam_re * x_im + lam_im * x_re + w_im
        x_re = y_re
        if RESCAN:
            tl.store(out_ptr + at, x_re, mask=inside)
            tl.store(out_ptr + at + 1, x_im, mask=inside)
    if not RESCAN:
        tl.store(out_ptr + boundary, x_re, mask=live)
        tl.store(out_ptr + boundary + 1, x_im, mask=live)


def carry_kernel(lam_T_ptr, ends_ptr, x0_ptr, starts_ptr, nc, n,
                 K: tl.constexpr, REVERSE: tl.constexpr, HAS_X0: tl.constexpr):
    """The carries of one batch row, K lanes: S_first = x0 (or 0), S_next = lambda^T S + E, chunk by chunk.

    lam_T (n 2), ends and starts (B nc n 2), x0 (B n 2); program ids (lane block, batch row b).
    Writes starts[b, c] = S_c, the state entering chunk c (from its end, REVERSE).
    """
    lanes = tl.program_id(0) * K + tl.arange(0, K)                   # (K,)
    b = tl.program_id(1).to(tl.int64)
    live = lanes < n
    p_re = tl.load(lam_T_ptr + 2 * lanes, mask=live, other=0.0)
    p_im = tl.load(lam_T_ptr + 2 * lanes + 1, mask=live, other=0.0)
    if HAS_X0:
        s_re = tl.load(x0_ptr + (b * n + lanes) * 2, mask=live, other=0.0)
        s_im = tl.load(x0_ptr + (b * n + lanes) * 2 + 1, mask=live, other=0.0)
    else:
        s_re = tl.full([K], 0.0, p_re.dtype)
        s_im = tl.full([K], 0.0, p_re.dtype)
    for j in range(nc):
        if REVERSE:
            c = nc - 1 - j
        else:
            c = j
        at = ((b * nc + c) * n + lanes) * 2                          # (K,) offsets into (B nc n 2)
        tl.store(starts_ptr + at, s_re, mask=live)
        tl.store(starts_ptr + at + 1, s_im, mask=live)
        e_re = tl.load(ends_ptr + at, mask=live, other=0.0)
        e_im = tl.load(ends_ptr + at + 1, mask=live, other=0.0)
        y_re = p_re * s_re - p_im * s_im + e_re
        s_im = p_re * s_im + p_im * s_re + e_im
        s_re = y_re


def transition_gradient_kernel(lam_ptr, v_ptr, adjoint_ptr, starts_ptr, partial_ptr, L, n, T,
                               K: tl.constexpr):
    """One chunk's share of grad lambda: sum_t a_t conj(x_{t-1}), the states recomputed from S_c.

    lam (n 2), v and adjoint (B L n 2), starts and partial (B nc n 2); program ids (chunk c, lane block,
    batch row b). x_{cT-1} = S_c; then x_t = lambda x_{t-1} + v_t, the forward's own steps.
    """
    c = tl.program_id(0)
    lanes = tl.program_id(1) * K + tl.arange(0, K)                   # (K,)
    b = tl.program_id(2).to(tl.int64)
    nc = tl.num_programs(0)
    live = lanes < n
    lam_re = tl.load(lam_ptr + 2 * lanes, mask=live, other=0.0)
    lam_im = tl.load(lam_ptr + 2 * lanes + 1, mask=live, other=0.0)
    boundary = ((b * nc + c) * n + lanes) * 2                        # (K,) offsets into (B nc n 2)
    x_re = tl.load(starts_ptr + boundary, mask=live, other=0.0)
    x_im = tl.load(starts_ptr + boundary + 1, mask=live, other=0.0)
    acc_re = tl.full([K], 0.0, lam_re.dtype)
    acc_im = tl.full([K], 0.0, lam_re.dtype)
    for i in range(T):
        t = c * T + i
        at = ((b * L + t) * n + lanes) * 2                           # (K,) offsets into (B L n 2)
        inside = live & (tl.full([K], t, tl.int32) < L)              # (*)
        a_re = tl.load(adjoint_ptr + at, mask=inside, other=0.0)
        a_im = tl.load(adjoint_ptr + at + 1, mask=inside, other=0.0)
        acc_re += a_re * x_re + a_im * x_im                          # a conj(x): x is still x_{t-1}
        acc_im += a_im * x_re - a_re * x_im
        v_re = tl.load(v_ptr + at, mask=inside, other=0.0)
        v_im = tl.load(v_ptr + at + 1, mask=inside, other=0.0)
        y_re = lam_re * x_re - lam_im * x_im + v_re
        x_im = lam_re * x_im + lam_im * x_re + v_im
        x_re = y_re
    tl.store(partial_ptr + boundary, acc_re, mask=live)
    tl.store(partial_ptr + boundary + 1, acc_im, mask=live)


_BUILT: dict[bool, SimpleNamespace] = {}


def kernels() -> SimpleNamespace:
    """The kernels decorated by `triton.jit` for the current mode (compiled or interpreted), built once per mode."""
    mode = interpreted()
    if mode not in _BUILT:
        _BUILT[mode] = SimpleNamespace(chunk_scan=triton.jit(chunk_scan_kernel), carry=triton.jit(carry_kernel),
                                       transition_gradient=triton.jit(transition_gradient_kernel))
    return _BUILT[mode]


# -- host side ----------------------------------------------------------------------------------------

def options(K: int) -> dict:
    """Launch options: one warp per 32 lanes; FP fusion (a * b + c as one FMA, one rounding fewer) asked for
    explicitly, as Triton 3.9 warns that its default will change. The interpreter ignores both (it does not fuse)."""
    return {"num_warps": max(1, K // 32), "enable_fp_fusion": True}


def transition(log_lam: torch.Tensor, T: int, conjugate: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """lambda and lambda^T (conjugated for the adjoint) as real pairs, from exp(k log lambda) (`scan.powers`).

    log_lam (n,) complex -> lam (n 2), lam_T (n 2) real, contiguous
    """
    real = log_lam.real.dtype
    p = powers(log_lam, torch.tensor([1.0, float(T)], dtype=real, device=log_lam.device))   # (2 n)
    pairs = torch.stack([p.real, -p.imag if conjugate else p.imag], -1)                      # (2 n 2)
    return pairs[0].contiguous(), pairs[1].contiguous()


def chunk_scan(lam: torch.Tensor, lam_T: torch.Tensor, w: torch.Tensor, start: torch.Tensor | None,
               T: int, K: int, reverse: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Reduce, carry, rescan (module docstring): the states and the state entering every chunk.

    lam, lam_T (n 2); w (B L n 2) contiguous; start (B n 2) or None, entering the first chunk (the last, reverse)
    -> states (B L n 2), starts (B nc n 2)
    """
    B, L, n, _ = w.shape
    nc, blocks = triton.cdiv(L, T), triton.cdiv(n, K)
    k, launch = kernels(), options(K)
    ends = w.new_empty(B, nc, n, 2)
    k.chunk_scan[(nc, blocks, B)](lam, w, ends, ends, L, n, T, K=K, REVERSE=reverse, RESCAN=False, **launch)
    starts = torch.empty_like(ends)
    k.carry[(blocks, B)](lam_T, ends, ends if start is None else start, starts, nc, n, K=K, REVERSE=reverse,
                         HAS_X0=start is not None, **launch)
    states = torch.empty_like(w)
    k.chunk_scan[(nc, blocks, B)](lam, w, starts, states, L, n, T, K=K, REVERSE=reverse, RESCAN=True, **launch)
    return states, starts


def transition_gradient(lam: torch.Tensor, v: torch.Tensor, adjoint: torch.Tensor, starts: torch.Tensor,
                        T: int, K: int) -> torch.Tensor:
    """grad lambda = sum_{b,t} a_t conj(x_{t-1}), the states recomputed from the chunk starts.

    lam (n 2); v, adjoint (B L n 2); starts (B nc n 2) -> (n,) complex
    """
    B, L, n, _ = v.shape
    nc = starts.shape[1]
    partial = torch.empty_like(starts)                                # (B nc n 2)
    kernels().transition_gradient[(nc, triton.cdiv(n, K), B)](lam, v, adjoint, starts, partial, L, n, T, K=K,
                                                                 **options(K))
    return torch.view_as_complex(partial.sum((0, 1)))


# -- the kernels as PyTorch custom ops (`torch.library`): opaque to torch.compile, with fake (meta) shapes -----------
# `linrnn::triton_scan` is the forward, `linrnn::triton_scan_backward` the adjoint; `register_autograd` joins them.
# A compiled graph holds each as one node (Dynamo cannot trace a Triton launch from Python); their fake
# implementations give the outputs' shapes and dtypes without running anything. `torch.library.opcheck` checks the
# registration (tests/impls/test_torch_triton_scan.py, under the interpreter).

def _scan_impl(log_lam: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None, T: int, K: int
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """log_lam (n,) complex of v's precision, v (B L n 2) contiguous, x0 (B n 2) contiguous or None
    -> states (B L n 2), the chunk starts (B nc n 2) that the backward recomputes the states from."""
    lam, lam_T = transition(log_lam, T)
    return chunk_scan(lam, lam_T, v, x0, T, K)


def _scan_fake(log_lam, v, x0, T, K):
    B, L, n, _ = v.shape
    return v.new_empty(B, L, n, 2), v.new_empty(B, -(-L // T), n, 2)


def _scan_backward_impl(log_lam: torch.Tensor, v: torch.Tensor, starts: torch.Tensor, grad_states: torch.Tensor,
                     T: int, K: int, need_log_lam: bool, need_x0: bool
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The adjoint (module docstring) -> grad log_lam (n,) complex, grad v (B L n 2), grad x0 (B n 2); a gradient
    not asked for (need_log_lam, need_x0 false) is an empty tensor."""
    lam_conj, lam_T_conj = transition(log_lam, T, conjugate=True)
    adjoint, _ = chunk_scan(lam_conj, lam_T_conj, grad_states.contiguous(), None, T, K, reverse=True)
    lam_conj = torch.view_as_complex(lam_conj)                        # (n,) conj(lambda)
    grad_x0 = (torch.view_as_real(lam_conj * torch.view_as_complex(adjoint[:, 0])) if need_x0
               else v.new_empty(0))
    grad_log_lam = log_lam.new_empty(0)
    if need_log_lam:
        lam, _ = transition(log_lam, T)
        grad_log_lam = lam_conj * transition_gradient(lam, v, adjoint, starts, T, K)
    return grad_log_lam, adjoint, grad_x0


def _scan_backward_fake(log_lam, v, starts, grad_states, T, K, need_log_lam, need_x0):
    B, _, n, _ = v.shape
    return (log_lam.new_empty(n if need_log_lam else 0), torch.empty_like(v),
            v.new_empty((B, n, 2) if need_x0 else (0,)))


def _setup_context(ctx, inputs, output):
    log_lam, v, x0, T, K = inputs
    ctx.save_for_backward(log_lam, v, output[1], x0)
    ctx.mark_non_differentiable(output[1])
    ctx.T, ctx.K, ctx.has_x0 = T, K, x0 is not None


def _backward(ctx, grad_states, _grad_starts):
    log_lam, v, starts, x0 = ctx.saved_tensors
    if recorded(grad_states):                       # a derivative of the backward: the plain route's (`autodiff`)
        return vjp_through(lambda *a: sequential(*a[:3]), (log_lam, v, x0, ctx.T, ctx.K), ctx.needs_input_grad,
                           (grad_states,))
    need_log_lam, need_v, need_x0 = ctx.needs_input_grad[:3]
    grad_log_lam, grad_v, grad_x0 = scan_backward_op(log_lam, v, starts, grad_states, ctx.T, ctx.K, need_log_lam,
                                                     bool(ctx.has_x0 and need_x0))
    return (grad_log_lam if need_log_lam else None, grad_v if need_v else None,
            grad_x0 if ctx.has_x0 and need_x0 else None, None, None)


def _register():
    """The two ops, registered once per process: a second copy of this module (loaded by a test without triton)
    finds them registered and uses them, rather than replacing their implementation with its own."""
    if hasattr(torch.ops.linrnn, "triton_scan"):
        return torch.ops.linrnn.triton_scan, torch.ops.linrnn.triton_scan_backward
    forward = torch.library.custom_op("linrnn::triton_scan", _scan_impl, mutates_args=())
    forward.register_fake(_scan_fake)
    backward = torch.library.custom_op("linrnn::triton_scan_backward", _scan_backward_impl, mutates_args=())
    backward.register_fake(_scan_backward_fake)
    forward.register_autograd(_backward, setup_context=_setup_context)
    return forward, backward


scan_op, scan_backward_op = _register()


def check_inputs(log_lam: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None, chunk: int | None,
                 lanes: int) -> None:
    """One-line `LinrnnError`s for shapes, dtypes, devices and the two block sizes."""
    if not isinstance(log_lam, torch.Tensor) or log_lam.ndim != 1 or not log_lam.is_complex():
        raise LinrnnError(f"log_lam must be a (n,) complex64 or complex128 tensor, got {_describe(log_lam)}")
    if not isinstance(v, torch.Tensor) or v.ndim != 4 or v.shape[-1] != 2 or v.shape[2] != log_lam.shape[0]:
        raise LinrnnError(f"v must be a (B L n 2) tensor with n = {log_lam.shape[0]} (the lanes of log_lam), "
                          f"got {_describe(v)}")
    if v.dtype not in (torch.float32, torch.float64):
        raise LinrnnError(f"v must be float32 or float64, got {v.dtype}; a bfloat16 or float16 layer keeps its scan "
                          f"in float32 (docs/precision.md, 'Low precision'): cast v to float32, or use the layer's "
                          f"scan mode")
    B, _, n, _ = v.shape
    if x0 is not None and (not isinstance(x0, torch.Tensor) or tuple(x0.shape) != (B, n, 2) or x0.dtype != v.dtype):
        raise LinrnnError(f"x0 must be None or a ({B} {n} 2) {v.dtype} tensor like v's states, got {_describe(x0)}")
    devices = {t.device for t in (log_lam, v, x0) if t is not None}
    if len(devices) > 1:
        raise LinrnnError(f"log_lam, v and x0 must be on one device, got {', '.join(sorted(map(str, devices)))}")
    if v.device.type != "cuda" and not interpreted():
        raise LinrnnError(f"the Triton scan needs CUDA tensors, got {v.device} "
                          "(set TRITON_INTERPRET=1 to run it in Triton's interpreter on the CPU)")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise LinrnnError(f"chunk must be None or a positive int (positions per chunk), got {chunk!r}")
    if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1 or lanes & (lanes - 1):
        raise LinrnnError(f"lanes must be a power of two (lanes per program), got {lanes!r}")
    if B > MAX_GRID or triton.cdiv(n, lanes) > MAX_GRID:
        raise LinrnnError(f"at most {MAX_GRID} batch rows and {MAX_GRID} lane blocks, got B = {B}, "
                          f"{triton.cdiv(n, lanes)} blocks of {lanes} lanes")


def _describe(x) -> str:
    if not isinstance(x, torch.Tensor):
        return type(x).__name__
    return f"shape {tuple(x.shape)} {x.dtype} on {x.device}"


def scan(log_lam: torch.Tensor, v: torch.Tensor, x0: torch.Tensor | None = None, *,
         chunk: int | None = None, lanes: int = LANES) -> torch.Tensor:
    """x_t = lambda * x_{t-1} + v_t by the Triton kernels, differentiable in log_lam, v and x0.

    log_lam  (n,) complex           log of the diagonal transition (cast to v's precision)
    v        (B L n 2) real         inputs, interleaved (Re, Im) pairs, float32 or float64
    x0       (B n 2) real or None   state before v_0 (zeros if None)
    chunk    T, positions per chunk; None for `scan.chunk_length(L)`
    lanes    K, lanes per program, a power of two
    -> states (B L n 2) real, x_t for t = 0..L-1
    """
    if not available():
        raise LinrnnError(f"the Triton scan cannot run here: {unavailable_reason()}")
    check_inputs(log_lam, v, x0, chunk, lanes)
    T = chunk_length(v.shape[1]) if chunk is None else chunk
    log_lam = log_lam.to(complex_dtype(v.dtype))
    if v.numel() == 0:                                                # B, L or n is 0: no states, no launch
        return v.clone()
    if transformed(log_lam, v, x0):                                   # its plain route (`autodiff`)
        return sequential(log_lam, v, x0)
    return scan_op(log_lam, v.contiguous(), None if x0 is None else x0.contiguous(), T, lanes)[0]
