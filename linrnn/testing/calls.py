"""`check_vjp` and `check_step`: two checks of a user's layer against itself, with the tolerance table.

check_vjp   the input gradient by the call's own autodiff (PyTorch autograd or `jax.vjp`) against J^T w, where J is
            the call's exact Jacobian: its response to each unit input (the layer is linear in u, so J e_i =
            call(e_i) - call(0), no finite differences)
check_step  the step mode, one token at a time with the state carried, against the whole-sequence forward
"""

from __future__ import annotations

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import tolerance
from linrnn.testing.oracle import DTYPE_ROWS, _framework, assert_close, to_numpy


def _differentiate(call, u, seed: int):
    """(y, w, d<w, call(u)>/du, the call on each unit input less its value at 0 (n, *y.shape)) as NumPy, w random
    from `seed`; `u` is a PyTorch tensor or a JAX array, and the call runs in its framework."""
    framework = _framework(u)
    if framework == "torch":
        import torch
        x = u.detach().clone().requires_grad_(True)
        y = call(x)
        if not isinstance(y, torch.Tensor) or not y.requires_grad:
            raise AssertionError(f"check_vjp: the call's output on a tensor that requires grad is a "
                                 f"{type(y).__name__} without a gradient")
        w = np.random.default_rng(seed).standard_normal(tuple(y.shape))
        (y * torch.as_tensor(w, dtype=y.dtype, device=y.device)).sum().backward()
        if x.grad is None:
            raise AssertionError("check_vjp: the input received no gradient")
        grad = x.grad
        with torch.no_grad():
            base = call(torch.zeros_like(u))
            columns = []
            for i in range(u.numel()):
                e = torch.zeros_like(u).reshape(-1)
                e[i] = 1
                columns.append(to_numpy(call(e.reshape(u.shape)) - base)[0])
        return to_numpy(y)[0], w, to_numpy(grad)[0], np.stack(columns)
    import jax
    import jax.numpy as jnp
    y, pullback = jax.vjp(call, u)
    w = np.random.default_rng(seed).standard_normal(tuple(y.shape))
    (grad,) = pullback(jnp.asarray(w, dtype=y.dtype))
    base = call(jnp.zeros_like(u))
    flat = np.zeros(u.size)
    columns = []
    for i in range(u.size):
        flat[:] = 0
        flat[i] = 1
        columns.append(to_numpy(call(jnp.asarray(flat.reshape(u.shape), dtype=u.dtype)) - base)[0])
    return to_numpy(y)[0], w, to_numpy(grad)[0], np.stack(columns)


def check_vjp(call, u, *, seed: int = 0, max_abs_eigenvalue: float | None = None, length: int | None = None):
    """Assert that the input gradient of <w, call(u)> by the call's autodiff is J^T w, J the call's exact Jacobian.

    call    a layer's forward, linear (or affine) in u: u -> y, in PyTorch or JAX
    u       a PyTorch tensor or a JAX array (B L H), small: J takes one forward call per entry of u
    w       random (from `seed`), of y's shape
    The bound is the tolerance table's 'gradient' row in u's dtype at L = u.shape[-2] (`max_abs_eigenvalue`: see
    `assert_close`). Returns the comparison; raises AssertionError naming the worst entry.
    """
    __tracebackhide__ = True
    if _framework(u) not in ("torch", "jax", "jaxlib"):
        raise LinrnnError(f"u: expected a PyTorch tensor or a JAX array (check_vjp differentiates the call), found "
                          f"{type(u).__name__}")
    y, w, grad, columns = _differentiate(call, u, seed)
    u_np, dtype = to_numpy(u, "u")
    flat = columns.reshape(len(columns), -1)                         # row i: J e_i = call(e_i) - call(0)
    length = length if length is not None else (u_np.shape[-2] if u_np.ndim >= 2 else 1)
    offset = to_numpy(call(_zeros_like(u)))[0]
    try:       # J's columns must rebuild the call (an affine map): otherwise J^T w is not its gradient
        assert_close(y, (u_np.reshape(-1).astype(np.float64) @ flat).reshape(y.shape) + offset, dtype=dtype,
                     length=length, max_abs_eigenvalue=max_abs_eigenvalue, name="call(u)")
    except AssertionError as err:
        raise AssertionError(f"check_vjp: the call is not linear in u (its responses to the unit inputs do not add "
                             f"up to its output), so they do not give its exact Jacobian: {err}") from None
    expected = (flat @ w.reshape(-1)).reshape(u_np.shape)
    try:
        return assert_close(grad, expected, row="gradient", dtype=dtype, length=length,
                            max_abs_eigenvalue=max_abs_eigenvalue, name="input gradient")
    except AssertionError as err:
        raise AssertionError(f"check_vjp: the input gradient by autodiff is not J^T w, the adjoint of the call's own "
                             f"forward: {err}") from None


def _zeros_like(u):
    if _framework(u) == "torch":
        import torch
        with torch.no_grad():
            return torch.zeros_like(u)
    import jax.numpy as jnp
    return jnp.zeros_like(u)


def check_step(step_fn, forward_fn, u, *, state=None, max_abs_eigenvalue: float | None = None,
               dtype: str | None = None):
    """Assert that stepping one token at a time gives the whole-sequence forward's output.

    step_fn(u_t, state) -> (y_t, state)   u_t (B H); state None at the start (or `state`), then as returned
    forward_fn(u) -> y (B L H)            (a tuple's first element is taken as y)
    u                                     (B L H), NumPy, PyTorch or JAX: each u[:, t] is passed as it is
    The bound is the 'forward' row at L (`max_abs_eigenvalue`: see `assert_close`); the message names the first
    position whose outputs exceed it. Returns the comparison.
    """
    __tracebackhide__ = True
    shape = tuple(getattr(u, "shape", ()))
    if len(shape) != 3:
        raise LinrnnError(f"u: expected an array of shape (B, L, H), found shape {shape}")
    whole = forward_fn(u)
    whole = whole[0] if isinstance(whole, tuple) else whole
    whole, got_dtype = to_numpy(whole, "forward_fn(u)")
    steps = []
    for t in range(shape[1]):
        out = step_fn(u[:, t], state)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise LinrnnError(f"step_fn: expected (y_t, state), found {type(out).__name__}")
        y_t, state = out
        steps.append(to_numpy(y_t, "step_fn's y_t")[0])
    stepped = np.stack(steps, axis=1)
    row = dtype or DTYPE_ROWS.get(got_dtype, "float64")
    try:
        return assert_close(stepped, whole, row="forward", dtype=row, length=shape[1],
                            max_abs_eigenvalue=max_abs_eigenvalue, name="step outputs")
    except AssertionError as err:
        bound = tolerance("forward", row, shape[1], 1.0 if max_abs_eigenvalue is None else max_abs_eigenvalue).rtol
        scale = float(np.max(np.abs(whole))) or 1.0
        per_t = np.max(np.abs(stepped - whole), axis=(0, 2)) / scale
        where = (f"first at position t = {int(np.argmax(per_t > bound))} of L = {shape[1]}: "
                 if np.any(per_t > bound) else "")
        raise AssertionError(f"check_step: stepping token by token departs from the whole-sequence forward, "
                             f"{where}{err}") from None
