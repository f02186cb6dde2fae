"""The Triton diagonal scan (`triton_scan.scan`, forward and backward) against the plain loop, in Triton's interpreter.

Every test here runs the kernels with TRITON_INTERPRET=1 on CPU tensors. Triton 3.9 reads the variable
when `triton.jit` decorates a kernel, and `triton_scan` decorates its kernels at first launch per mode,
so the autouse fixture below sets the variable for each test of this module only (monkeypatch restores
it), and nothing leaks into other modules. The interpreter does not check what only the compiler
checks (a loop-carried variable changing type, for one), so every kernel variant is also compiled
ahead of time for sm_90, which needs no device. The interpreter runs every kernel step in NumPy, slowly:
the cases are few and small (B <= 2, n <= 8), chosen to reach L = 1, odd L, L < T, L not a multiple
of T, several chunks and lane blocks, a partly empty lane block, decays up to 0.999 and phases up to pi.
"""

import importlib.util
import inspect
import sys

import numpy as np
import pytest
import torch

triton = pytest.importorskip("triton", reason="the Triton scan needs triton (pip install triton)")

from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import fast_scan, scan, triton_scan

R_MAX = 0.999


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def diagonal_inputs(seed, B, L, n, dtype):
    """|lambda| in [0.3, 0.999] with 0.999 reached, phases in (-pi, pi] with pi reached; v and x0 pairs.

    Drawn in float64 and rounded to `dtype` (log lambda to its complex dtype), all requiring grad.
    """
    g = torch.Generator().manual_seed(seed)
    modulus = 0.3 + (R_MAX - 0.3) * torch.rand(n, generator=g, dtype=torch.float64)
    phase = np.pi * (2 * torch.rand(n, generator=g, dtype=torch.float64) - 1)
    modulus[0], phase[-1] = R_MAX, np.pi
    log_lam = torch.complex(modulus.log(), phase).to(scan.complex_dtype(dtype)).requires_grad_()
    v = torch.randn(B, L, n, 2, generator=g, dtype=torch.float64).to(dtype).requires_grad_()
    x0 = torch.randn(B, n, 2, generator=g, dtype=torch.float64).to(dtype).requires_grad_()
    return log_lam, v, x0


def as_numpy(t):
    """float64 NumPy, a complex tensor as its (Re, Im) pairs (so no part of a complex gradient goes unchecked)."""
    return (torch.view_as_real(t) if t.is_complex() else t).detach().double().numpy()


def states_and_gradients(f, inputs, weight):
    """f(*inputs) and the gradients of sum(weight * f) with respect to every input."""
    states = f(*inputs)
    return [as_numpy(states)] + [as_numpy(g) for g in torch.autograd.grad((states * weight).sum(), inputs)]


# B, L, n, chunk T (None: scan.chunk_length(L)), lanes K, dtype, with x0
CASES = [
    (2, 1, 3, None, 32, "float64", True),     # L = 1, one chunk of T = 1, one lane block mostly empty
    (2, 5, 5, None, 8, "float64", False),     # odd L, T = 2: three chunks, the last ragged
    (2, 17, 8, 4, 4, "float64", True),        # five chunks (the last of one position), two lane blocks
    (1, 70, 4, 64, 4, "float32", True),       # L = 64 + 6: a full chunk and a ragged one
    (2, 17, 6, 64, 8, "float32", False),      # L < T: one chunk, mostly padding
]


@pytest.mark.parametrize("B, L, n, T, K, dtype, with_x0", CASES)
def test_states_and_gradients_equal_the_loop(B, L, n, T, K, dtype, with_x0):
    """The kernel in `dtype` against `scan.sequential` and autograd through it, in float64 on the same inputs."""
    log_lam, v, x0 = diagonal_inputs(L + n, B, L, n, getattr(torch, dtype))
    inputs = (log_lam, v, x0) if with_x0 else (log_lam, v)
    weight = torch.randn(v.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got = states_and_gradients(lambda *a: triton_scan.scan(*a, chunk=T, lanes=K), inputs, weight.to(v.dtype))
    exact = [t.detach().to(torch.complex128 if t.is_complex() else torch.float64).requires_grad_() for t in inputs]
    expected = states_and_gradients(scan.sequential, exact, weight)
    r = float(torch.exp(log_lam.detach().real).max())                # the largest |lambda|
    assert_close(f"states L={L} T={T}", expected[0], got[0], "forward", dtype, L, r)
    for name, e, g in zip(("log_lambda", "v", "x0"), expected[1:], got[1:]):
        assert_close(f"grad {name} L={L} T={T}", e, g, "gradient", dtype, L, r)


def test_only_the_requested_gradients_are_computed():
    """log lambda constant, x0 given without grad: grad v alone, as through the loop."""
    log_lam, v, x0 = diagonal_inputs(3, 2, 9, 3, torch.float64)
    log_lam, x0 = log_lam.detach(), x0.detach()
    weight = torch.randn(v.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    got = states_and_gradients(lambda a: triton_scan.scan(log_lam, a, x0, chunk=4, lanes=4), (v,), weight)
    expected = states_and_gradients(lambda a: scan.sequential(log_lam, a, x0), (v,), weight)
    for name, kind, e, g in zip(("states", "grad v"), ("forward", "gradient"), expected, got):
        assert_close(name, e, g, kind, "float64", 9, R_MAX)


def test_the_forward_saves_chunk_starts_not_states():
    log_lam, v, x0 = diagonal_inputs(0, 2, 17, 3, torch.float64)
    states = triton_scan.scan(log_lam, v, x0, chunk=4, lanes=4)
    saved = {tuple(t.shape) for t in states.grad_fn.saved_tensors}
    assert saved == {(3,), (2, 17, 3, 2), (2, 5, 3, 2), (2, 3, 2)}, saved   # log lambda, v, starts (B nc n 2), x0


def test_second_derivatives_and_forward_mode_equal_the_loops():
    """A Hessian-vector product through the kernel (its backward recorded: the plain route's VJP, `autodiff`) and
    forward mode (torch.func.jvp: the plain route) against the same through `scan.sequential`."""
    log_lam, v, x0 = diagonal_inputs(5, 2, 9, 3, torch.float64)
    direction = [torch.randn(t.shape, generator=torch.Generator().manual_seed(i), dtype=t.dtype)
                 for i, t in enumerate((log_lam, v, x0))]

    def hvp_and_jvp(f):
        states = f(log_lam, v, x0)
        grads = torch.autograd.grad((states ** 2).sum(), (log_lam, v, x0), create_graph=True)
        hvp = torch.autograd.grad(sum((g * d.conj()).real.sum() for g, d in zip(grads, direction)), (log_lam, v, x0))
        detached = [t.detach() for t in (log_lam, v, x0)]
        return [as_numpy(t) for t in hvp] + [as_numpy(torch.func.jvp(f, tuple(detached), tuple(direction))[1])]

    got = hvp_and_jvp(lambda *a: triton_scan.scan(*a, chunk=4, lanes=4))
    for name, e, g in zip(("hvp log_lambda", "hvp v", "hvp x0", "jvp"), hvp_and_jvp(scan.sequential), got):
        assert_close(name, e, g, "gradient", "float64", 9, R_MAX)


@pytest.mark.parametrize("bug, checked", [
    ("adjoint not conjugated", "grad"),
    ("carry lambda^T dropped", "states"),
])
def test_a_planted_mistake_is_caught(monkeypatch, bug, checked):
    real_transition = triton_scan.transition

    def planted(log_lam, T, conjugate=False):
        lam, lam_T = real_transition(log_lam, T, conjugate=False if bug.startswith("adjoint") else conjugate)
        return (lam, lam_T * 0) if bug.startswith("carry") else (lam, lam_T)

    monkeypatch.setattr(triton_scan, "transition", planted)
    with pytest.raises(AssertionError, match=checked):
        test_states_and_gradients_equal_the_loop(*CASES[2])


KERNEL_VARIANTS = [
    (triton_scan.chunk_scan_kernel, {"REVERSE": reverse, "RESCAN": rescan})
    for reverse in (False, True) for rescan in (False, True)
] + [
    (triton_scan.carry_kernel, {"REVERSE": False, "HAS_X0": True}),
    (triton_scan.carry_kernel, {"REVERSE": False, "HAS_X0": False}),
    (triton_scan.carry_kernel, {"REVERSE": True, "HAS_X0": False}),
    (triton_scan.transition_gradient_kernel, {}),
]


@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_every_kernel_compiles_for_a_gpu(monkeypatch, tmp_path, dtype):
    """The interpreter runs the kernels as Python; the compiler must accept them too. Compiled ahead of time
    for sm_90 (no device needed, nothing is run), every variant the host code launches, into a fresh cache."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    for fn, flags in KERNEL_VARIANTS:
        parameters = inspect.signature(fn).parameters.values()                    # annotations are strings
        signature = {p.name: "constexpr" if "constexpr" in str(p.annotation) else f"*{dtype}"
                     if p.name.endswith("_ptr") else "i32" for p in parameters}
        source = ASTSource(fn=triton.jit(fn), signature=signature,
                           constexprs={"K": triton_scan.LANES, **flags})
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=triton_scan.options(32))
        assert ".entry " + fn.__name__ in compiled.asm["ptx"], (fn.__name__, flags)


def bad_inputs():
    log_lam, v, x0 = (t.detach() for t in diagonal_inputs(0, 2, 3, 4, torch.float64))
    return [
        ("log_lam must be a \\(n,\\) complex", (log_lam.real, v, x0), {}),
        ("v must be a \\(B L n 2\\) tensor with n = 4", (log_lam, v[..., 0], x0), {}),
        ("v must be a \\(B L n 2\\) tensor with n = 4", (log_lam, v[:, :, :3], x0), {}),
        ("v must be float32 or float64", (log_lam, v.half(), None), {}),
        ("x0 must be None or a \\(2 4 2\\) torch.float64", (log_lam, v, x0[:1]), {}),
        ("x0 must be None or a \\(2 4 2\\) torch.float64", (log_lam, v, x0.float()), {}),
        ("chunk must be None or a positive int", (log_lam, v, x0), {"chunk": 0}),
        ("lanes must be a power of two", (log_lam, v, x0), {"lanes": 12}),
    ]


@pytest.mark.parametrize("case", range(8))
def test_bad_input_is_one_line_error(case):
    match, args, kwargs = bad_inputs()[case]
    with pytest.raises(LinrnnError, match=match) as error:
        triton_scan.scan(*args, **kwargs)
    assert "\n" not in str(error.value)


def test_cpu_tensors_need_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET")
    log_lam, v, x0 = (t.detach() for t in diagonal_inputs(0, 1, 2, 2, torch.float64))
    with pytest.raises(LinrnnError, match="TRITON_INTERPRET=1"):
        triton_scan.scan(log_lam, v, x0)


def test_availability_follows_the_interpreter_switch(monkeypatch):
    assert triton_scan.available() and triton_scan.unavailable_reason() == ""
    monkeypatch.delenv("TRITON_INTERPRET")
    assert triton_scan.available() == torch.cuda.is_available()
    if not torch.cuda.is_available():
        assert "no CUDA device" in triton_scan.unavailable_reason()


def test_the_module_imports_without_triton(monkeypatch):
    """A copy of the module loaded while `import triton` fails: it imports, and says why it cannot run."""
    monkeypatch.setitem(sys.modules, "triton", None)
    monkeypatch.setitem(sys.modules, "triton.language", None)
    spec = importlib.util.spec_from_file_location("triton_scan_without_triton", triton_scan.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not module.available() and "triton is not installed" in module.unavailable_reason()
    log_lam, v, _ = (t.detach() for t in diagonal_inputs(0, 1, 2, 2, torch.float64))
    with pytest.raises(LinrnnError, match="triton is not installed"):
        module.scan(log_lam, v)


# -- the layers' `scan` view on the Triton route (the routing CUDA takes) -------------------------

@pytest.mark.parametrize("kind", ["rotrnn", "lru"])   # a real basis and complex pairs; S5's form is the LRU's
def test_the_layers_scan_view_through_the_triton_kernel_equals_the_loop(kind, monkeypatch):
    """`diagonal.scan` routes to `fast_scan.device_kernel(device)`, which is the Triton scan on CUDA; here the
    interpreter stands in for the device, through both directions, a given state and every gradient."""
    from linrnn.verify.bench import layer_config
    from linrnn.impls.init import init
    from linrnn.impls.reference import spectral_radius
    from linrnn.impls.torch import from_bundle

    calls = []

    def triton_route(device):
        calls.append(device)
        return triton_scan.scan

    cfg = layer_config(kind, 4, 8, 2)          # RotRNN: 2 heads of 4 (at N = 2 per head, M drops out)
    layer = from_bundle(init(cfg, 0), torch.float64)
    g = torch.Generator().manual_seed(1)
    u = torch.randn(2, 9, 4, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 9, 4, generator=g, dtype=torch.float64)

    def run(mode):
        y, _ = layer(u, mode)
        return [as_numpy(y)] + [as_numpy(t) for t in torch.autograd.grad((y * w).sum(), [u, *layer.parameters()])]

    expected = run("sequential")
    monkeypatch.setattr(fast_scan, "device_kernel", triton_route)
    got = run("scan")
    assert calls, "the scan view did not take the device route"
    bundle = init(cfg, 0)
    r = spectral_radius(bundle.config, bundle.params)
    for name, e, t in zip(["y", "grad u"] + [n for n, _ in layer.named_parameters()], expected, got):
        assert_close(f"{kind} {name}", e, t, "forward" if name == "y" else "gradient", "float64", 9, r)


# -- the kernels as PyTorch custom ops ------------------------------------------------------------------

@pytest.mark.parametrize("op", ["forward", "backward"])
def test_the_custom_ops_pass_opcheck(op):
    """`torch.library.opcheck` of `linrnn::triton_scan` and `linrnn::triton_scan_backward` at tiny sizes: the schema,
    the fake implementation against the real one (shapes, dtypes, strides), the autograd registration, and the op
    inside an AOTAutograd graph with dynamic shapes (the forward: its gradients too)."""
    log_lam, v, x0 = diagonal_inputs(7, 1, 3, 2, torch.float64)
    if op == "forward":
        args = (log_lam, v, x0, 2, 2)
        target = torch.ops.linrnn.triton_scan.default
    else:
        starts = torch.ops.linrnn.triton_scan(log_lam.detach(), v.detach(), x0.detach(), 2, 2)[1]
        grad = torch.randn(v.shape, generator=torch.Generator().manual_seed(3), dtype=v.dtype)
        args = (log_lam.detach(), v.detach(), starts, grad, 2, 2, True, True)
        target = torch.ops.linrnn.triton_scan_backward.default
    result = torch.library.opcheck(target, args)
    assert set(result.values()) == {"SUCCESS"}, result


def test_the_scan_runs_through_the_registered_op():
    """`scan` is the op's first output, and the op's autograd node keeps the backward's inputs."""
    log_lam, v, x0 = diagonal_inputs(8, 1, 5, 2, torch.float64)
    states = triton_scan.scan(log_lam, v, x0, chunk=2, lanes=2)
    expected = torch.ops.linrnn.triton_scan(log_lam.detach(), v.detach(), x0.detach(), 2, 2)[0]
    assert torch.equal(states.detach(), expected)
    assert "linrnn" in type(states.grad_fn).__name__.lower() or "triton_scan" in str(states.grad_fn), states.grad_fn
