"""The kernel steps of `linrnn gpucheck` (experiments/gpucheck.py): (c) kernels, (d) mamba, (e) bandwidth.

    kernels    `triton_scan.scan` against `torch.scan.chunked` (outputs and gradients) and
               `pallas_scan.scan` against `jax.scan.sequential`, both references in float64; the kernels with a
               transition per position, `triton_varying.scan` and `pallas_varying.scan`, against the float64 loops
               (`varying_scan.sequential`, PyTorch and JAX) on real transitions (the RG-LRU's)
    mamba      mamba-ssm's reference path `selective_scan_ref` and its fused CUDA kernel `selective_scan_fn`
               through the scan contract's battery of `linrnn conform` (float32, against the float64 reference
               scan), where mamba-ssm is installed; otherwise "skipped: mamba_ssm is not installed (...)"
    bandwidth  a device-to-device copy (GB/s, bytes read + written) and each scan's effective bandwidth,
               2 x (B L n 2) x 4 bytes / time, as a fraction of the copy's (the H200 goal: >= 0.5)

Each step is `step(run, result) -> result`, driven by `gpucheck.Run` (its deadline, sizes and saving).
"""

from __future__ import annotations

from importlib import import_module
from typing import Protocol

import numpy as np

from linrnn.verify import crosscheck
from linrnn.base.tolerance import compare


GOAL_FRACTION = 0.5           # the scan's effective bandwidth / the copy's, the H200 goal (issue 13)
KERNEL_MODULES = {"triton": "linrnn.impls.torch.triton_scan", "pallas": "linrnn.impls.jax.pallas_scan",
                  "triton varying": "linrnn.impls.torch.triton_varying",
                  "pallas varying": "linrnn.impls.jax.pallas_varying"}


class Run(Protocol):
    """What a step reads of the run that drives it (`gpucheck.Run`, in the module above this one): the device, the
    profile's sizes, the seconds left to the step, and where it is (saved with the record)."""

    device: str
    sizes: dict

    def left(self) -> float: ...

    def progress(self, what: str) -> None: ...


def error_line(err: Exception) -> str:
    """'Type: first line of the message', at most 500 characters."""
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:500]


def kernel(name: str, device: str):
    """(module, None) for a kernel module that imports and can run here, else (None, "not available: why").

    On the CPU (the test path) Triton runs under TRITON_INTERPRET=1 (set by `check`) and Pallas with
    interpret=True; `available()` says whether that is possible.
    """
    try:
        module = import_module(KERNEL_MODULES[name])
    except Exception as err:  # ImportError, or Triton / JAX failing to start: the reason is the result
        return None, f"not available: {KERNEL_MODULES[name]} does not import ({type(err).__name__}: {err})"
    mode = {"interpret": True} if name.startswith("pallas") and device == "cpu" else {}
    if not module.available(**mode):
        return None, f"not available: {module.unavailable_reason(**mode)}"
    return module, None



# -- (c) the kernels against the chunked scan --------------------------------------------------------

def decays(n: int, seed: int) -> np.ndarray:
    """log lambda (n,) complex: |lambda| from 0.5 up to 0.9999 (long memory), phases in [0, pi]."""
    rng = np.random.default_rng(seed)
    modulus = np.concatenate([[0.9999], rng.uniform(0.5, 0.999, n - 1)])[:n]
    return np.log(modulus) + 1j * rng.uniform(0.0, np.pi, n)


def kernel_inputs(B: int, L: int, n: int, seed: int = 0):
    """log_lam (n,) complex, v and w (B L n 2), x0 (B n 2) float64 NumPy, and max |lambda|."""
    rng = np.random.default_rng([seed, B, L, n])
    log_lam = decays(n, seed)
    return log_lam, rng.standard_normal((B, L, n, 2)), rng.standard_normal((B, L, n, 2)), \
        rng.standard_normal((B, n, 2)), float(np.exp(log_lam.real).max())


def triton_case(module, device: str, B: int, L: int, n: int) -> dict:
    """Triton's states and gradients (float32) against `chunked` in float64 on the same device."""
    import torch
    from linrnn.impls.torch.scan import chunked

    log_lam, v, w, x0, r = kernel_inputs(B, L, n)

    def states_and_grads(scan, real, cplx):
        lam = torch.tensor(log_lam, dtype=cplx, device=device, requires_grad=True)    # (n,)
        vv = torch.tensor(v, dtype=real, device=device, requires_grad=True)           # (B L n 2)
        xx = torch.tensor(x0, dtype=real, device=device, requires_grad=True)          # (B n 2)
        states = scan(lam, vv, xx)                                                    # (B L n 2)
        (states * torch.tensor(w, dtype=real, device=device)).sum().backward()
        grads = {"v": vv.grad, "x0": xx.grad, "log_lambda": torch.view_as_real(lam.grad)}
        return states.detach().double().cpu().numpy(), {k: g.double().cpu().numpy() for k, g in grads.items()}

    ref_y, ref_g = states_and_grads(chunked, torch.float64, torch.complex128)
    got_y, got_g = states_and_grads(module.scan, torch.float32, torch.complex64)
    return judged(ref_y, got_y, ref_g, got_g, L, r)


def pallas_case(module, device: str, B: int, L: int, n: int) -> dict:
    """Pallas's states (complex64) against `sequential` in float64, one sequence of B n lanes; its gradients
    too where it has them (a forward-only kernel records why in `grads`, and is judged on its states)."""
    import jax
    import jax.numpy as jnp
    from linrnn.impls.jax.params import float64
    from linrnn.impls.jax.scan import sequential

    log_lam, v, w, x0, r = kernel_inputs(B, L, n)
    lanes = lambda a: (a[..., 0] + 1j * a[..., 1]).transpose(1, 0, 2).reshape(L, B * n)   # noqa: E731  -> (L, B n)
    pairs = lambda z: np.stack([np.real(z), np.imag(z)], -1).astype(np.float64)           # noqa: E731
    args = (np.tile(log_lam, B), lanes(v), (x0[..., 0] + 1j * x0[..., 1]).reshape(B * n))  # (B n), (L, B n), (B n)
    got_scan = lambda a, b, c: module.scan(a, b, c, interpret=device == "cpu")            # noqa: E731

    def states_and_grads(scan, cplx, with_grads: bool = True):
        inputs = [jnp.asarray(a, cplx) for a in args]
        if not with_grads:
            return pairs(scan(*inputs)), None
        states, vjp = jax.vjp(scan, *inputs)
        g_lam, g_v, g_x = vjp(jnp.asarray(lanes(w), cplx))                  # the real loss Re<w, states>
        return pairs(states), {"v": pairs(g_v), "x0": pairs(g_x), "log_lambda": pairs(g_lam)}

    with jax.default_device(crosscheck.jax_device(device)):
        with float64():
            ref_y, ref_g = states_and_grads(sequential, jnp.complex128)
        try:
            got_y, got_g = states_and_grads(got_scan, jnp.complex64)
        except Exception as err:  # no VJP rule: judge the states, say why there are no gradients
            got_y, _ = states_and_grads(got_scan, jnp.complex64, with_grads=False)
            return judged(ref_y, got_y, None, f"not available: {error_line(err)}", L, r)
    return judged(ref_y, got_y, ref_g, got_g, L, r)


def varying_inputs(B: int, L: int, n: int, seed: int = 0):
    """log a, v, w (B L n) and x0 (B n) float64 NumPy: real transitions in [0.5, 0.9999] (0.9999 reached), the
    RG-LRU's case; and max a."""
    rng = np.random.default_rng([seed, B, L, n, 1])
    a = rng.uniform(0.5, 0.9999, (B, L, n))
    a[..., 0] = 0.9999
    return np.log(a), rng.standard_normal((B, L, n)), rng.standard_normal((B, L, n)), rng.standard_normal((B, n)), \
        float(a.max())


def triton_varying_case(module, device: str, B: int, L: int, n: int) -> dict:
    """The Triton scan with a transition per position (float32) against `varying_scan.sequential` in float64."""
    import torch
    from linrnn.impls.torch.varying_scan import sequential

    log_a, v, w, x0, r = varying_inputs(B, L, n)

    def states_and_grads(scan, real):
        la, vv, xx = (torch.tensor(x, dtype=real, device=device, requires_grad=True) for x in (log_a, v, x0))
        states = scan(la, vv, xx)                                                     # (B L n)
        (states * torch.tensor(w, dtype=real, device=device)).sum().backward()
        grads = {"v": vv.grad, "x0": xx.grad, "log_a": la.grad}
        return states.detach().double().cpu().numpy(), {k: g.double().cpu().numpy() for k, g in grads.items()}

    ref_y, ref_g = states_and_grads(sequential, torch.float64)
    got_y, got_g = states_and_grads(module.scan, torch.float32)
    return judged(ref_y, got_y, ref_g, got_g, L, r)


def pallas_varying_case(module, device: str, B: int, L: int, n: int) -> dict:
    """The Pallas scan with a transition per position (float32), one sequence of B n lanes, against
    `varying_scan.sequential` in float64."""
    import jax
    import jax.numpy as jnp
    from linrnn.impls.jax.params import float64
    from linrnn.impls.jax.varying_scan import sequential

    log_a, v, w, x0, r = varying_inputs(B, L, n)
    lanes = lambda a: a.transpose(1, 0, 2).reshape(L, B * n)                             # noqa: E731  -> (L, B n)
    args = (lanes(log_a), lanes(v), x0.reshape(B * n))
    got_scan = lambda a, b, c: module.scan(a, b, c, interpret=device == "cpu")            # noqa: E731

    def states_and_grads(scan, real):
        inputs = [jnp.asarray(a, real) for a in args]
        states, vjp = jax.vjp(scan, *inputs)
        g_a, g_v, g_x = vjp(jnp.asarray(lanes(w), real))
        as64 = lambda z: np.asarray(z, dtype=np.float64)                                  # noqa: E731
        return as64(states), {"v": as64(g_v), "x0": as64(g_x), "log_a": as64(g_a)}

    with jax.default_device(crosscheck.jax_device(device)):
        with float64():
            ref_y, ref_g = states_and_grads(sequential, jnp.float64)
        got_y, got_g = states_and_grads(got_scan, jnp.float32)
    return judged(ref_y, got_y, ref_g, got_g, L, r)


def judged(ref_y, got_y, ref_g, got_g, L: int, r: float) -> dict:
    """States (kind 'state') and each gradient part (`crosscheck.compare_gradients`), float32 rows of the table.

    got_g: the gradients, or a string saying why there are none (then only the states are judged)."""
    c = compare("states", ref_y, got_y, "state", "float32", L, r)
    out = {"states": {"rel": c.rel, "rtol": c.rtol, "ok": c.ok}, "worst_ratio": c.rel / c.rtol, "ok": c.ok}
    if isinstance(got_g, str):
        out["grads"] = got_g
        return out
    grads = crosscheck.compare_gradients(ref_g, got_g, "float32", L, r)
    out["grads"] = {k: {"rel": g.rel, "rtol": g.rtol, "ok": g.ok} for k, g in grads.items()}
    out["grads_worst_ratio"] = max(g.rel / g.rtol for g in grads.values())
    out["worst_ratio"] = max(out["worst_ratio"], out["grads_worst_ratio"])
    out["ok"] = c.ok and all(g.ok for g in grads.values())
    return out


def kernels_step(run: Run, result: dict) -> dict:
    """Each kernel at each shape: states and gradients against its float64 reference, with the tolerance table."""
    cases = {"triton": triton_case, "pallas": pallas_case, "triton varying": triton_varying_case,
             "pallas varying": pallas_varying_case}
    result["not_run"] = []
    for name, case in cases.items():
        module, why = kernel(name, run.device)
        part = result[name] = {"status": why or "done", "rows": []}
        for B, L, n in run.sizes["kernel_shapes"]:
            if module is None:
                break
            if run.left() <= 0:
                result["not_run"].append(f"{name} B{B} L{L} n{n}")
                continue
            run.progress(f"{name} B{B} L{L} n{n}")
            row = {"B": B, "L": L, "n": n}
            try:
                row.update(case(module, run.device, B, L, n))
            except Exception as err:      # one shape's failure is a result; the other shapes still run
                row.update({"ok": False, "error": error_line(err)})
            part["rows"].append(row)
    if result["not_run"]:
        result["status"] = "partial: budget"
    return result


# -- (d) mamba-ssm's selective scan against the scan contract --------------------------------------------

MAMBA_PATHS = {"selective_scan_ref": "mamba-ssm-ref", "selective_scan_fn": "mamba-ssm"}   # function -> conform target


def mamba_step(run: Run, result: dict) -> dict:
    """mamba-ssm's reference path and fused kernel, each as its `linrnn conform` built-in target (the adapter of
    `conform_peers`, on the run's device) through the scan contract's battery in float32: every check's error
    against the float64 reference scan and the `forward` rows of the tolerance table."""
    from importlib import metadata

    from linrnn.verify import conform
    from linrnn.verify import conform_peers_torch as peers

    why = peers.mamba_missing()
    if why:
        return {"status": f"skipped: {why}" if why == peers.MAMBA_ABSENT else f"not available: {why}"}
    sizes = run.sizes["mamba"]
    try:
        version = metadata.version("mamba-ssm")
    except metadata.PackageNotFoundError:
        version = "unknown (no metadata)"
    result.update(version=version, device=run.device, dtype="float32", lengths=list(sizes["lengths"]),
                  long_length=sizes["long"], not_run=[])
    for function, name in MAMBA_PATHS.items():
        if run.left() <= 0:
            result["not_run"].append(function)
            continue
        run.progress(function)
        why = peers.mamba_missing(name, run.device)
        if why:
            result[function] = {"status": f"not available: {why}", "target": name, "checks": []}
            continue
        try:
            target = on_device(getattr(peers, conform.BUILTINS[name][1]), run.device)
            res = conform.run(target, "scan", ("float32",), sizes["lengths"], long_length=sizes["long"])
        except Exception as err:         # a target that raises is a result; the other path still runs
            result[function] = {"status": f"failed: {error_line(err)}", "target": name, "checks": []}
            continue
        result[function] = mamba_summary(name, res)
    if result["not_run"]:
        result["status"] = "partial: budget"
    return result


def on_device(build, device: str):
    """The built-in target `build(bundle, config, dtype, device)` as a conform target on `device`, named as it is."""
    def target(bundle, config, dtype="float32"):
        return build(bundle, config, dtype, device=device)
    target.__module__, target.__qualname__ = build.__module__, build.__qualname__
    return target


def mamba_summary(name: str, res) -> dict:
    """A conform result as gpucheck's JSON: counts, the worst error / tolerance, the deviations and every check."""
    checks = [{"name": c.name, "status": c.status, "rel": c.rel, "rtol": c.rtol, "detail": c.detail,
               "diagnoses": [d.words for d in c.diagnoses]} for c in res.checks]
    ratios = [c.rel / c.rtol for c in res.checks if c.rel is not None]
    count = {s: sum(c.status == s for c in res.checks) for s in ("pass", "fail", "n/a")}
    return {"status": "done", "target": name, "passed": count["pass"], "failed": count["fail"],
            "not_applicable": count["n/a"], "worst_ratio": max(ratios) if ratios else None, "ok": res.ok,
            "deviations": [d.words for d in res.diagnoses()], "checks": checks}


# -- (e) copy bandwidth and the scans' effective bandwidth --------------------------------------------

def torch_sync(device: str):
    import torch

    return torch.cuda.synchronize if device == "cuda" else (lambda: None)


def bandwidth_step(run: Run, result: dict) -> dict:
    """GB/s of a copy, and of one forward scan of (B L n 2) float32 at each shape of the profile's
    `bandwidth` (bytes read + written / median time), as a fraction of the copy's."""
    import torch
    from linrnn.verify.bench import median_ms

    repeats, sync = run.sizes["repeats"], torch_sync(run.device)
    nbytes = run.sizes["copy_mib"] * 2**20
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=run.device)
    dst = torch.empty_like(src)
    ms = median_ms(lambda: (dst.copy_(src), sync()), repeats=repeats, warmup=min(2, repeats))
    result.update(copy={"bytes": 2 * nbytes, "ms": ms, "gb_per_s": 2 * nbytes / ms / 1e6}, shapes=[], not_run=[])
    del src, dst
    for B, L, n in run.sizes["bandwidth"]:
        if run.left() <= 0:
            result["not_run"].append(f"B{B} L{L} n{n}")
            continue
        result["shapes"].append(scan_bandwidths(run, B, L, n, result["copy"]["gb_per_s"]))
    if result["not_run"]:
        result["status"] = "partial: budget"
    return result


def scan_bandwidths(run: Run, B: int, L: int, n: int, copy_gb_per_s: float) -> dict:
    """Torch's chunked scan, Triton and Pallas on the same (B L n 2) float32 input."""
    import torch
    from linrnn.impls.torch.scan import chunked

    repeats, sync = run.sizes["repeats"], torch_sync(run.device)
    nbytes = 2 * B * L * n * 2 * 4                        # v read once, the states written once, float32
    out = {"B": B, "L": L, "n": n, "scan_bytes": nbytes, "scans": {}}
    log_lam, *_ = kernel_inputs(1, 1, n)
    v = torch.randn(B, L, n, 2, device=run.device, generator=torch.Generator(run.device).manual_seed(0))  # (B L n 2)
    lam = torch.tensor(log_lam, dtype=torch.complex64, device=run.device)                     # (n,)
    triton, why = kernel("triton", run.device)
    for name, call in {"torch chunked": lambda: chunked(lam, v),
                       "triton": (lambda: triton.scan(lam, v)) if triton else why}.items():
        run.progress(f"{name} B{B} L{L} n{n}")
        out["scans"][name] = timed(call, sync, repeats, nbytes, copy_gb_per_s, run.device)
    del v
    run.progress(f"pallas B{B} L{L} n{n}")
    try:
        out["scans"]["pallas"] = pallas_timing(run, B, L, n, log_lam, nbytes, copy_gb_per_s)
    except Exception as err:
        out["scans"]["pallas"] = {"status": f"failed: {error_line(err)}"}
    return out


def timed(call, sync, repeats: int, nbytes: int, copy_gb_per_s: float, device: str) -> dict:
    """One scan's median time, effective GB/s, fraction of the copy's, and peak memory (torch, CUDA)."""
    import torch
    from linrnn.verify.bench import median_ms

    if isinstance(call, str):
        return {"status": call}
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    try:
        with torch.no_grad():
            ms = median_ms(lambda: (call(), sync()), repeats=repeats, warmup=min(2, repeats))
    except Exception as err:  # one scan's failure is a result; the others are still timed
        return {"status": f"failed: {error_line(err)}"}
    gb = nbytes / ms / 1e6
    out = {"status": "done", "ms": ms, "gb_per_s": gb, "fraction_of_copy": gb / copy_gb_per_s,
           "meets_goal": gb / copy_gb_per_s >= GOAL_FRACTION}
    if device == "cuda":
        out["peak_bytes"] = torch.cuda.max_memory_allocated()
    return out


def pallas_timing(run: Run, B: int, L: int, n: int, log_lam, nbytes: int, copy_gb_per_s: float) -> dict:
    """Pallas on one sequence of B n lanes, (L, B n) complex64: the same bytes as the torch scans."""
    pallas, why = kernel("pallas", run.device)
    if pallas is None:
        return {"status": why}
    import jax
    import jax.numpy as jnp

    target = crosscheck.jax_device(run.device)
    with jax.default_device(target):
        lam = jnp.asarray(np.tile(log_lam, B), jnp.complex64)                             # (B n)
        key_re, key_im = jax.random.split(jax.random.PRNGKey(0))
        v = (jax.random.normal(key_re, (L, B * n)) + 1j * jax.random.normal(key_im, (L, B * n))).astype(jnp.complex64)
        x0 = jnp.zeros(B * n, jnp.complex64)                                              # (B n)
        scan = jax.jit(lambda a, b, c: pallas.scan(a, b, c, interpret=run.device == "cpu"))
        out = timed(lambda: scan(lam, v, x0).block_until_ready(), lambda: None,
                    run.sizes["repeats"], nbytes, copy_gb_per_s, "cpu")
    return {**out, "device": str(target)}


