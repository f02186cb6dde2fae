"""What the package's own autograd Functions share: when they step aside, and their backward once it is recorded.

Each Function here (`scan.Powers`, `scan.DiagonalScan`, `layer_scan.DiagonalLayerScan`, `conv.DepthwiseConv`,
`dlr.ChunkedScan`, and `triton_scan`'s custom op `linrnn::triton_scan`) computes its backward by hand, for memory
and speed: the adjoint scan, FFT correlations, states recomputed from saved boundaries, written with `out=` buffers and
in-place updates. Such a backward is right for a first derivative and nothing else. So each Function also
names a *plain route*: the same outputs from the same inputs in ordinary differentiable operations (the step
loop, a plain FFT convolution), and

* `recorded(grads)`: while autograd records the backward (`create_graph=True`: a Hessian-vector product, a
  gradient penalty, `gradgradcheck`) or the gradients come batched (`autograd.grad(..., is_grads_batched=True)`),
  the Function's backward is the vector-Jacobian product of the plain route (`vjp_through`), itself
  differentiable, instead of the hand-written one;
* `transformed(tensors)`: under a `torch.func` transform (jvp, vmap, grad, jacrev, jacfwd, hessian) or
  forward-mode AD (a tensor carrying a tangent), which an old-style Function does not support, the caller
  runs the plain route in its place.

The first derivative of an ordinary backward pass keeps the fast hand-written route. docs/precision.md,
"Derivatives", lists what each route supports.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.autograd.forward_ad as forward_ad


def transformed(*tensors) -> bool:
    """Whether a torch.func transform is active, or one of `tensors` carries a forward-mode tangent."""
    if torch._C._are_functorch_transforms_active():
        return True
    return any(isinstance(t, torch.Tensor) and forward_ad.unpack_dual(t).tangent is not None for t in tensors)


def recorded(*grads) -> bool:
    """Whether a backward runs under `create_graph=True`, or with batched gradients (`is_grads_batched`)."""
    return torch.is_grad_enabled() or any(isinstance(g, torch.Tensor) and torch._C._functorch.is_legacy_batchedtensor(g)
                                          for g in grads)


def vjp_through(route: Callable, inputs: Sequence, needs: Sequence[bool], grads: Sequence) -> tuple:
    """A Function's backward by autograd through `route(*inputs)`, the plain route to the same outputs.

    inputs  the Function's inputs as it received them (non-tensors passed through)
    needs   ctx.needs_input_grad
    grads   the gradients of the Function's outputs (None where an output received none)
    -> one gradient per input (None where not needed), recorded by autograd when the caller records it
    """
    wanted = [i for i, (x, need) in enumerate(zip(inputs, needs)) if need and isinstance(x, torch.Tensor)]
    create_graph = torch.is_grad_enabled()
    with torch.enable_grad():
        # Each input through an alias of its own: an input computed from another (S5's W_in from log lambda) must
        # receive its partial derivative, as the hand-written backward returns, not the total one.
        inputs = [x.view_as(x) if i in wanted else x for i, x in enumerate(inputs)]
        outputs = route(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, torch.Tensor) and o.requires_grad and g is not None]
        found = torch.autograd.grad([o for o, _ in pairs], [inputs[i] for i in wanted], [g for _, g in pairs],
                                    create_graph=create_graph, allow_unused=True) if pairs else ()
    out = [None] * len(inputs)
    for i, g in zip(wanted, found):
        out[i] = torch.zeros_like(inputs[i]) if g is None else g
    return tuple(out)
