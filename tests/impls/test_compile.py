"""`torch.compile` of every PyTorch mode of every mixer gives the eager result (issue 30 §4; docs/precision.md,
"Compiled paths").

Each route (every registered kind x mode, `modes("torch", kind)`) is compiled once, at tiny sizes (B = 2, L = 5, H = N = 2, RotRNN N = 4, float32),
with `backend="aot_eager"`: Dynamo's graph capture and AOTAutograd's joint forward-backward graph, run without
code generation (the capture is what can break or crash; inductor's C++ build would cost tens of seconds a
route here). The output and the gradients of <w, y> in the input and in every raw parameter are compared with the
eager layer's within the float32 tolerance table. A route compiles with `fullgraph=True` unless it is in
`BREAKS`, whose reasons are the ones docs/precision.md gives; for each of those, a test asserts that
`fullgraph=True` still fails with that reason, so the document goes stale only with a failing test. Two routes
are also compiled by inductor (generated C++ code), one fullgraph and one with graph breaks.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pytest
import torch
import torch._dynamo

from linrnn.impls import specs
from linrnn.impls.config import mixer_config, modes
from linrnn.impls.init import init
from linrnn.base.tolerance import assert_close
from linrnn.impls.torch import MIXERS

pytestmark = pytest.mark.slow

B, L, H, N = 2, 5, 2, 2
ROUTES = [(kind, mode) for kind in specs.kinds() for mode in modes("torch", kind)]

# The graph breaks docs/precision.md, "Compiled paths", documents: (pattern of the error of `torch.compile(...,
# fullgraph=True)`, pattern of the innermost user frame), keyed by the function a mixer class runs for the mode (its
# module and qualified name), so that a model built on the same machinery (a `DiagonalMixer`'s scan) breaks where the
# built-in ones do; a mode in a class's `Mixer.eager_modes` runs eagerly by design
LAYER_SCAN = (r"Skip calling `torch.compiler.disable\(\)`d function[\s\S]*reason: layer_scan: out= buffers",
              r"diagonal.py, line \d+ in scan")
RECORDED = (r"Attempted to call function marked as skipped[\s\S]*is_legacy_batchedtensor", r"autodiff.py")
EAGER = (r"Skip calling `torch.compiler.disable\(\)`d function[\s\S]*reason: a mode in Mixer.eager_modes",
         r"layer.py, line \d+ in forward")
BREAKING_ROUTES = {
    "linrnn.impls.torch.diagonal.scan": LAYER_SCAN,   # RotRNN, LRU, S5
    "linrnn.impls.torch.dlr.DLR.scan": RECORDED,      # dlr.ChunkedScan's backward: autodiff.recorded
    "linrnn.impls.torch.s4d.conv": RECORDED,          # conv.DepthwiseConv's backward: autodiff.recorded
    "linrnn.impls.torch.s4d.scan": (r"Attempted to call op with non-contiguous `out=` tensor",
                                    r"scan.py, line \d+ in local_scan"),
    "linrnn.impls.torch.rglru.RGLRU.scan": (r"Attempted to call op with non-contiguous `out=` tensor",
                                            r"varying_scan.py, line \d+ in scan"),
}


def graph_break(kind: str, mode: str) -> tuple[str, str] | None:
    """The documented break of a route, or None (it compiles with `fullgraph=True`)."""
    cls = MIXERS[kind]
    if mode in cls.eager_modes:
        return EAGER
    route = getattr(cls, mode)
    return BREAKING_ROUTES.get(f"{route.__module__}.{route.__qualname__}")


BREAKS = {route: found for route in ROUTES if (found := graph_break(*route)) is not None}


@lru_cache(maxsize=None)
def case(kind: str, bidirectional: bool = False):
    # RotRNN at N = 4 (two rotation blocks): at N = 2 its basis P = expm(M - M^T) commutes with the one block, so M
    # drops out and d/dM is rounding noise around 0 (inductor's reordering gave it a relative error of 2.2 at N = 2)
    cfg = mixer_config(kind, H, 4 if kind == "rotrnn" else N, heads=1, bidirectional=bidirectional)
    rng = np.random.default_rng(3)
    return init(cfg, 2), rng.standard_normal((B, L, H)), rng.standard_normal((B, L, H))


def run(layer, f, u_np, w_np) -> list[np.ndarray]:
    """[y, d<w, y>/du, d<w, y>/d(every parameter)] of f(u) (the layer's output), float64 NumPy."""
    u = torch.tensor(u_np, dtype=torch.float32, requires_grad=True)
    y = f(u)
    grads = torch.autograd.grad((y * torch.tensor(w_np, dtype=torch.float32)).sum(), [u, *layer.parameters()])
    return [t.detach().double().numpy() for t in (y, *grads)]


def check_compiled(kind: str, mode: str, backend: str, fullgraph: bool, bidirectional: bool = False) -> None:
    bundle, u, w = case(kind, bidirectional)
    layer = MIXERS[kind].from_bundle(bundle, torch.float32)
    eager = run(layer, lambda x: layer(x, mode)[0], u, w)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: layer(x, mode)[0], backend=backend, fullgraph=fullgraph)
    got = run(layer, compiled, u, w)
    names = ["y", "d/du"] + [f"d/d{name}" for name, _ in layer.named_parameters()]
    for name, ref, out in zip(names, eager, got):
        assert_close(f"torch.compile {backend} {kind} {mode} {name}", ref, out,
                     "forward" if name == "y" else "gradient", "float32", L)


@pytest.mark.parametrize("kind, mode", ROUTES)
def test_compiled_route_gives_the_eager_result(kind, mode):
    check_compiled(kind, mode, "aot_eager", fullgraph=(kind, mode) not in BREAKS)


@pytest.mark.parametrize("kind, mode", sorted(BREAKS))
def test_documented_graph_break_still_happens(kind, mode):
    bundle, u, _ = case(kind)
    layer = MIXERS[kind].from_bundle(bundle, torch.float32)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: layer(x, mode)[0], backend="eager", fullgraph=True)
    with pytest.raises(torch._dynamo.exc.Unsupported) as err:
        compiled(torch.tensor(u, dtype=torch.float32))
    message, frame = BREAKS[kind, mode]
    assert re.search(message, err.value.msg), err.value.msg[:2000]
    assert re.search(frame, str(err.value.innermost_user_frame_summary)), err.value.innermost_user_frame_summary


def test_the_documented_breaks_are_the_routes_docs_name():
    """The page names the built-in models' breaking routes (a model added later shares their implementations)."""
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "precision.md").read_text()
    section = doc.split("## Compiled paths", 1)[1].split("\n## ", 1)[0]
    assert {kind for kind, _ in BREAKS} >= {"rotrnn", "lru", "s5", "dlr", "s4d", "rglru"}, "a documented break is gone"
    for kind, mode in BREAKS:
        if kind not in specs.BUILTIN:
            continue
        assert f"{kind} {mode}" in section.lower().replace("`", ""), f"{kind} {mode} missing from the doc"


@pytest.mark.parametrize("kind, mode", [("dlr", "conv"), ("lru", "scan")])
def test_bidirectional_graph_broken_routes_give_the_eager_result(kind, mode):
    check_compiled(kind, mode, "aot_eager", fullgraph=False, bidirectional=True)


@pytest.mark.parametrize("kind, mode, fullgraph", [("attention", "full", True), ("lru", "scan", False)])
def test_inductor_gives_the_eager_result(kind, mode, fullgraph):
    check_compiled(kind, mode, "inductor", fullgraph=fullgraph)
