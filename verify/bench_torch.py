"""The timing harness of the PyTorch layers, shared by `tests/bench/` and the report.

    forward, info = make_forward("lru", "scan", B=8, L=4096, H=128, N=128, heads=16, dtype="float32")
    forward()                      # one forward pass, synchronised (inference: no autograd graph)
    median_ms(forward)             # warm-up, then the median of a few timed calls
    train, info = make_forward_backward("lru", "scan", B=8, L=4096, H=128, N=128)
    train()                        # y = layer(u); y.sum().backward(): gradients of every parameter and u

`N` is the layer's whole state: RotRNN gets `heads` heads of N / heads each; LRU and DLR get N.
Beside the layers, with the same `(call, info)` return and a `direction` ('forward' or
'forward+backward', the latter always `sum(out).backward()` including the forward):

    make_gemm_floor     the two projections of an LRU layer alone, (u W_in) W_out with W_in (H 2N):
                        N complex modes as 2N real columns; a layer that projects into its state and
                        back cannot be faster than these two matrix products
    make_peer           s5-pytorch or LRU-pytorch at (H, N) (`linrnn.verify.peers_torch`)
    make_scan_alone     the recurrence alone on (B L n 2) pairs: 'chunked' (this package's scan,
                        `scan.chunked`) or 'triton' (`triton_scan.scan`, CUDA)

Every builder allocates its parameters and inputs last, after calling `before_inputs()` if given
(the memory probes' start: `linrnn.verify.bench.PeakRSS`, `CudaPeak`); no builder runs its call.
Numbers on a shared CPU are noisy (docs/speed.md): time alone, compare ratios, and never
assert on a timing in a test.
"""

from __future__ import annotations

import platform
import statistics
from typing import Callable, Sequence

import torch

from linrnn.verify.bench import (check_direction, info_record, interleaved_ms, layer_config,  # noqa: F401  (median_ms: re-exported)
                                median_ms)
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init
from linrnn.impls.torch.layer import torch_dtype

SCAN_ROUTES = ("chunked", "triton")


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"{device.type} ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def _device(device) -> torch.device:
    """The given device, or torch's default device (where a tensor made without `device=` lives)."""
    return torch.device(device) if device is not None else torch.empty(0).device


def _synchronise(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _call(direction: str, run: Callable[[], torch.Tensor], leaves: Sequence[torch.Tensor],
          dev: torch.device) -> Callable[[], torch.Tensor]:
    """A synchronised call of `run` (-> out): forward under no_grad, or sum(out).backward() w.r.t. `leaves`.

    forward+backward returns the gradient of the last leaf (the input); gradients are reset to None
    before each call, so nothing accumulates from call to call.
    """
    if check_direction(direction) == "forward":
        def forward() -> torch.Tensor:
            with torch.no_grad():
                out = run()
            _synchronise(dev)
            return out
        return forward

    for leaf in leaves:
        leaf.requires_grad_(True)

    def forward_backward() -> torch.Tensor:
        for leaf in leaves:
            leaf.grad = None
        run().sum().backward()
        _synchronise(dev)
        return leaves[-1].grad
    return forward_backward


def _normal(shape, dtype: torch.dtype, dev: torch.device, seed: int) -> torch.Tensor:
    """Standard normal numbers drawn on the device itself (no host copy of a large input)."""
    return torch.randn(shape, generator=torch.Generator(dev).manual_seed(seed), dtype=dtype, device=dev)


def _info(what: dict, B: int, L: int, dtype: str, dev: torch.device, direction: str) -> dict:
    return {"backend": "torch", **what, "B": B, "L": L, "dtype": dtype, "device": device_name(dev),
            "torch": torch.__version__, "direction": direction, "grad": direction != "forward"}


def _layer_call(direction: str, kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int, dtype: str,
                seed: int, device, before_inputs) -> tuple[Callable[[], torch.Tensor], dict]:
    from linrnn.impls.torch import from_bundle   # the package imports this module's siblings

    cfg = layer_config(kind, H, N, heads)
    dev, real = _device(device), torch_dtype(dtype)
    if before_inputs is not None:
        before_inputs()
    layer = from_bundle(init(cfg, seed), real, dev)
    u = _normal((B, L, H), real, dev, seed)                                        # (B L H)
    call = _call(direction, lambda: layer(u, mode, final_state=False)[0], [*layer.parameters(), u], dev)
    return call, _info(info_record(kind, mode, B, L, H, N, heads, dtype), B, L, dtype, dev, direction)


def make_forward(kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int = 16, dtype: str = "float32",
                 seed: int = 0, device: str | torch.device | None = None, *,
                 before_inputs: Callable[[], None] | None = None) -> tuple[Callable[[], torch.Tensor], dict]:
    """A layer at the given sizes and a callable running its forward pass in `mode` on a fixed input.

    -> (forward, info): forward() returns y (B L H) after synchronising the device; info records
       kind, mode, B, L, H, N, heads, dtype, device and torch's version, for benchmark records.
       The same signature, defaults and return type as `linrnn.verify.bench_jax.make_forward`.
    """
    return _layer_call("forward", kind, mode, B, L, H, N, heads, dtype, seed, device, before_inputs)


def make_forward_backward(kind: str, mode: str, B: int, L: int, H: int, N: int, heads: int = 16,
                          dtype: str = "float32", seed: int = 0, device: str | torch.device | None = None, *,
                          before_inputs: Callable[[], None] | None = None) -> tuple[Callable[[], torch.Tensor], dict]:
    """As `make_forward`, but the call runs y = layer(u, mode), then y.sum().backward().

    Every parameter and u require gradients; the call returns du (B L H) after synchronising.
    """
    return _layer_call("forward+backward", kind, mode, B, L, H, N, heads, dtype, seed, device, before_inputs)


def make_gemm_floor(direction: str, B: int, L: int, H: int, N: int, dtype: str = "float32", seed: int = 0,
                    device: str | torch.device | None = None, *,
                    before_inputs: Callable[[], None] | None = None) -> tuple[Callable[[], torch.Tensor], dict]:
    """The two real matrix products of an LRU layer of N complex modes alone: y = (u W_in) W_out.

    W_in (H 2N), W_out (2N H), u (B L H): the projection into the state and back, nothing between.
    forward+backward differentiates sum(y) with respect to W_in, W_out and u.
    """
    dev, real = _device(device), torch_dtype(dtype)
    if before_inputs is not None:
        before_inputs()
    W_in = _normal((H, 2 * N), real, dev, seed + 1) / H ** 0.5                     # (H 2N)
    W_out = _normal((2 * N, H), real, dev, seed + 2) / (2 * N) ** 0.5              # (2N H)
    u = _normal((B, L, H), real, dev, seed)                                        # (B L H)
    call = _call(direction, lambda: (u @ W_in) @ W_out, [W_in, W_out, u], dev)
    return call, _info({"what": "gemm floor", "H": H, "N": N}, B, L, dtype, dev, direction)


def make_peer(name: str, direction: str, B: int, L: int, H: int, N: int, dtype: str = "float32", seed: int = 0,
              device: str | torch.device | None = None, *,
              before_inputs: Callable[[], None] | None = None) -> tuple[Callable[[], torch.Tensor], dict]:
    """Peer `name` ('s5-pytorch', 'lru-pytorch') at (H, N) on u (B L H); LinrnnError if it is not installed."""
    from linrnn.verify import peers_torch as peers

    dev = _device(device)
    reason = peers.missing_reason(name)
    if reason:
        raise LinrnnError(reason)
    if before_inputs is not None:
        before_inputs()
    layer = peers.make_layer(name, H, N, seed=seed, dtype=torch_dtype(dtype), device=dev)
    u = _normal((B, L, H), torch_dtype(dtype), dev, seed)                          # (B L H)
    call = _call(direction, lambda: layer(u), [*layer.parameters(), u], dev)
    return call, _info({"what": "peer", "peer": name, "H": H, "N": N}, B, L, dtype, dev, direction)


def make_scan_alone(route: str, direction: str, B: int, L: int, n: int, dtype: str = "float32", seed: int = 0,
                    device: str | torch.device | None = None, *,
                    before_inputs: Callable[[], None] | None = None) -> tuple[Callable[[], torch.Tensor], dict]:
    """The recurrence alone on v (B L n 2) pairs from x0 = 0: route 'chunked' (`scan.chunked`) or 'triton'.

    forward+backward differentiates the sum of the states with respect to log_lambda (n,) and v.
    'triton' needs `linrnn.impls.torch.triton_scan` and its `available()`; else a LinrnnError with the reason.
    """
    if route not in SCAN_ROUTES:
        raise LinrnnError(f"route: expected one of {', '.join(SCAN_ROUTES)}, found {route!r}")
    if route == "triton":
        try:
            from linrnn.impls.torch import triton_scan
        except ImportError as err:
            raise LinrnnError(f"triton scan: cannot import linrnn.impls.torch.triton_scan ({err})") from None
        if not triton_scan.available():
            raise LinrnnError(f"triton scan: {triton_scan.unavailable_reason()}")
        scan = triton_scan.scan
    else:
        from linrnn.impls.torch.scan import chunked as scan
    dev, real = _device(device), torch_dtype(dtype)
    if before_inputs is not None:
        before_inputs()
    generator = torch.Generator(dev).manual_seed(seed)
    log_lam = torch.complex(-0.1 * torch.rand(n, generator=generator, dtype=real, device=dev),
                            6.0 * torch.rand(n, generator=generator, dtype=real, device=dev))   # (n,)
    v = _normal((B, L, n, 2), real, dev, seed)                                                   # (B L n 2)
    call = _call(direction, lambda: scan(log_lam, v), [log_lam, v], dev)
    return call, _info({"what": "scan alone", "route": route, "n": n}, B, L, dtype, dev, direction)


class CudaPeak:
    """Peak CUDA memory allocated by tensors from `start()` to `peak_bytes()` (PyTorch's caching allocator).

    Counts what `torch.cuda.max_memory_allocated` counts: live tensors' bytes (rounded to the
    allocator's blocks), not memory the cache holds unused; the baseline is what was allocated at start.
    """

    def __init__(self, device=None):
        self.device = torch.device(device or "cuda")
        self.baseline: int | None = None

    def start(self) -> None:
        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        self.baseline = torch.cuda.memory_allocated(self.device)

    def peak_bytes(self) -> int:
        if self.baseline is None:
            raise LinrnnError("peak memory: CudaPeak.peak_bytes() called before start()")
        torch.cuda.synchronize(self.device)
        return torch.cuda.max_memory_allocated(self.device) - self.baseline


def scan_candidates(B: int = 8, L: int = 4096, n: int = 128, chunks=(16, 32, 64, 128, 256),
                    dtype: str = "float32") -> dict[str, Callable[[], torch.Tensor]]:
    """The scans alone (n lanes, no projections) on one fixed input: the candidates behind `scan.py`'s choice.

    'complex loop' is a baseline kept here only: the plain loop at one complex addcmul per step.
    """
    from linrnn.impls.torch import scan as scans

    real = torch_dtype(dtype)
    generator = torch.Generator().manual_seed(0)
    log_lam = torch.complex(-0.1 * torch.rand(n, generator=generator, dtype=real),
                            6.0 * torch.rand(n, generator=generator, dtype=real))
    v = torch.randn(B, L, n, 2, generator=generator, dtype=real)

    def complex_loop():
        w, lam = torch.view_as_complex(v), torch.exp(log_lam)
        out, x = torch.empty_like(w), torch.zeros_like(w[:, 0])
        for t in range(L):
            x = torch.addcmul(w[:, t], lam, x, out=out[:, t])
        return out

    candidates = {"complex loop": complex_loop, "sequential (2x2 pairs)": lambda: scans.sequential(log_lam, v)}
    for T in chunks:
        candidates[f"chunked T={T}"] = lambda T=T: scans.chunked(log_lam, v, chunk=T)
    return {name: torch.no_grad()(f) for name, f in candidates.items()}


def scan_timings(B: int = 8, L: int = 4096, n: int = 128, chunks=(16, 32, 64, 128, 256), repeats: int = 9,
                 dtype: str = "float32") -> dict[str, float]:
    """Median ms of each of `scan_candidates`, the candidates interleaved run by run (fairer on a busy machine)."""
    times = interleaved_ms(scan_candidates(B, L, n, chunks, dtype), repeats)
    return {name: statistics.median(ts) for name, ts in times.items()}


def dlr_chunk_forward(chunk: int | None, B: int = 8, L: int = 4096, H: int = 128, N: int = 128,
                      dtype: str = "float32", seed: int = 0) -> Callable[[], torch.Tensor]:
    """DLR's kernel-form chunked scan with chunk length `chunk` (None: `conv`), for `dlr.chunk_length`'s sweep."""
    from linrnn.impls.torch import dlr

    layer = dlr.DLR.from_bundle(init(layer_config("dlr", H, N), seed), torch_dtype(dtype))
    u = torch.randn(B, L, H, generator=torch.Generator().manual_seed(seed), dtype=layer.dtype)

    @torch.no_grad()
    def forward() -> torch.Tensor:
        f = layer.materialise()
        if chunk is None:
            return dlr.conv(f, layer.config, u)[0]
        return dlr.scan(f, layer.config, u, chunk=chunk)[0]
    return forward


def dlr_forward_parts(B: int = 8, L: int = 4096, H: int = 128, N: int = 128, dtype: str = "float32",
                      seed: int = 0) -> dict[str, Callable[[], torch.Tensor]]:
    """DLR's forwards and their parts, each alone (inference): what bounds the layer's forward.

    'layer conv'          the whole layer in `conv`, as `make_forward('dlr', 'conv', ...)` runs it;
    'kernel alone'        K = Re(W lambda^l) + D at lag 0, (L H), from the raw parameters;
    'FFT convolution'     the depthwise causal convolution of u with that K (zero-padded real FFTs);
    'layer scan'          the whole layer in `scan` (`dlr.ChunkedScan`, chunks of `dlr.chunk_length` positions);
    'scan carries'        its pass over the chunks alone (`dlr.carries`: each chunk's free response and the
                          state it leaves, two products of (B H) rows with a (T 2N) block of powers per chunk),
                          without the in-chunk convolution.
    """
    from linrnn.impls.torch import dlr
    from linrnn.impls.torch.conv import depthwise_conv

    layer = dlr.DLR.from_bundle(init(layer_config("dlr", H, N), seed), torch_dtype(dtype))
    u = torch.randn(B, L, H, generator=torch.Generator().manual_seed(seed), dtype=layer.dtype)
    T = dlr.chunk_length(L, N)
    with torch.no_grad():
        f = layer.materialise()
        K = dlr.kernel(f.log_lam, f.W, L, f.D)
        chunks = dlr._padded_chunks(u, T)
        y = torch.zeros_like(chunks)

    def whole(mode: str):
        @torch.no_grad()
        def run() -> torch.Tensor:
            return layer(u, mode, final_state=False)[0]
        return run

    @torch.no_grad()
    def kernel_alone() -> torch.Tensor:
        g = layer.materialise()
        return dlr.kernel(g.log_lam, g.W, L, g.D)

    @torch.no_grad()
    def convolution() -> torch.Tensor:
        return depthwise_conv(K, u)

    @torch.no_grad()
    def scan_carries() -> torch.Tensor:
        g = layer.materialise()
        return torch.view_as_real(dlr.carries(g.log_lam, g.W, chunks, L, None, False, y.zero_()))
    return {"layer conv": whole("conv"), "kernel alone": kernel_alone, "FFT convolution": convolution,
            "layer scan": whole("scan"), "scan carries": scan_carries}


DIAGONAL_PARTS = ("layer scan", "parameters", "projections and copies", "two products in blocks", "scan in blocks")


def diagonal_forward_parts(kind: str, B: int = 8, L: int = 4096, H: int = 128, N: int = 128, heads: int = 16,
                           dtype: str = "float32", seed: int = 0,
                           device: str | torch.device | None = None) -> dict[str, Callable[[], torch.Tensor]]:
    """RotRNN's or LRU's `scan` forward and its parts, each alone (inference): what bounds the layer's forward.

    The layer's forward (`layer_scan.forward_blocks`) goes over time in blocks, each as time-major chunks:

    'layer scan'              the whole layer in `scan`, as `make_forward(kind, 'scan', ...)` runs it
    'parameters'              the raw parameters to the diagonal form (`materialise`; RotRNN: an expm per head)
    'projections and copies'  `forward_blocks` with a recurrence that does nothing: each block copied into
                              time-major chunks, v = W_in u, y = W_out v + D u, y copied back (the layer
                              with lambda = 0)
    'two products in blocks'  the two matrix products alone, on the same blocks of contiguous rows
    'scan in blocks'          the recurrence alone (`scan.scan_chunks`: the steps inside the chunks, the
                              carries, the fix-up) on the same blocks, from the previous block's state

    The GEMM floor (`make_gemm_floor`) does the same two products on the whole sequence at once.
    These are the parts of the block-by-block path (`layer_scan`), which the layer takes wherever no fused
    kernel does: on CUDA with Triton the layer's `scan` is `triton_scan`, and the calls here do not synchronise.
    """
    from linrnn.impls.torch import from_bundle, layer_scan
    from linrnn.impls.torch import scan as scans

    if kind not in ("rotrnn", "lru"):
        raise LinrnnError(f"kind: expected rotrnn or lru (a diagonal layer with a `scan` view), found {kind!r}")
    dev, real = _device(device), torch_dtype(dtype)
    layer = from_bundle(init(layer_config(kind, H, N, heads), seed), real, dev)
    u = _normal((B, L, H), real, dev, seed)                                      # (B L H)
    with torch.no_grad():
        f = layer.materialise()
        n = f.lanes
        block = layer_scan.block_length(L, B, n)
        T = scans.chunk_length(block)
        steps = torch.arange(T + 1, dtype=real, device=dev)
        lam_powers = scans.powers(f.log_lam.to(scans.complex_dtype(real)), steps)
        rows = [layer_scan._rows(u[:, s:s + block], T) for s in range(0, L, block)]    # (T B nb H) each
        inputs = [layer_scan._project(r, f.W_in) for r in rows]                         # (T B nb n) each
        states = [torch.empty_like(w) for w in inputs]

    def nothing(lam_powers, w, carry, time_dim, out):
        return w, None

    @torch.no_grad()
    def whole() -> torch.Tensor:
        return layer(u, "scan", final_state=False)[0]

    @torch.no_grad()
    def parameters() -> torch.Tensor:
        return layer.materialise().W_in

    @torch.no_grad()
    def projections_and_copies() -> torch.Tensor:
        return layer_scan.forward_blocks(u, f.W_in, lam_powers, f.W_out, f.D, None, block, T, nothing)[0]

    @torch.no_grad()
    def products() -> torch.Tensor:
        for r in rows:
            y = (r @ f.W_in.T) @ f.W_out.T                                        # (T B nb H)
        return y

    @torch.no_grad()
    def recurrence() -> torch.Tensor:
        carry = None
        for s, w, x in zip(range(0, L, block), inputs, states):
            scans.scan_chunks(lam_powers, w, carry, time_dim=0, out=x)
            carry = layer_scan._last(x, min(block, L - s))
        return torch.view_as_real(states[-1])
    return dict(zip(DIAGONAL_PARTS, (whole, parameters, projections_and_copies, products, recurrence)))


def forward_parts_table(rounds: int = 11, B: int = 8, L: int = 4096, H: int = 128, N: int = 128,
                        heads: int = 16) -> str:
    """RotRNN's, LRU's and DLR's forward parts beside the GEMM floor and s5-pytorch, timed in interleaved rounds.

    -> a markdown table: each call's median ms, and its ratios to the two yardsticks as the median of the
    ratios within a round, with their range over the rounds (a slow spell that hits one call and not the
    other shows there). s5-pytorch's column is left out, with a note, without the [peers] extra.
    """
    from linrnn.verify import peers_torch as peers

    calls = {"GEMM floor": make_gemm_floor("forward", B, L, H, N)[0]}
    s5_missing = peers.missing_reason("s5-pytorch")
    if s5_missing is None:
        calls["s5-pytorch"] = make_peer("s5-pytorch", "forward", B, L, H, N)[0]
    for kind in ("rotrnn", "lru"):
        calls.update({f"{kind}: {part}": f for part, f in diagonal_forward_parts(kind, B, L, H, N, heads).items()})
    calls.update({f"dlr: {part}": f for part, f in dlr_forward_parts(B, L, H, N).items()})
    times = interleaved_ms(calls, rounds)

    def ratio(name: str, yardstick: str) -> str:
        if yardstick not in times:
            return "-"
        r = sorted(a / b for a, b in zip(times[name], times[yardstick]))
        return f"{statistics.median(r):.2f} ({r[0]:.2f}-{r[-1]:.2f})"
    lines = [f"B = {B}, L = {L}, H = N = {H} (RotRNN {heads} heads), float32, {torch.get_num_threads()} threads, "
             f"{rounds} interleaved rounds; ratios: median of the rounds' ratios (their range)", "",
             "| call | ms | / GEMM floor | / s5-pytorch |", "|---|---|---|---|"]
    lines += [f"| {name} | {statistics.median(ts):.1f} | {ratio(name, 'GEMM floor')} | {ratio(name, 's5-pytorch')} |"
              for name, ts in times.items()]
    if s5_missing:
        lines += ["", f"s5-pytorch: {s5_missing}"]
    return "\n".join(lines)


def routes_table(threads: int | None = None) -> str:
    """The numbers behind `scan.py`'s choice (`linrnn bench torch`): the scan routes alone at n = 64 and 128 lanes,
    then RotRNN's and LRU's layers in `sequential` and `scan`, B = 8, L = 4096, H = N = 128, float32; `threads`
    sets torch's intra-op threads for this process first (None: torch's default)."""
    if threads is not None:
        if threads < 1:
            raise LinrnnError(f"threads: expected 1 or more, found {threads}")
        torch.set_num_threads(threads)
    lines = [f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, B=8, L=4096"]
    for lanes in (64, 128):
        for name, ms in scan_timings(n=lanes).items():
            lines.append(f"scan alone n={lanes:<4d} {name:24s} {ms:7.1f} ms")
    for kind in ("rotrnn", "lru"):
        for mode in ("sequential", "scan"):
            forward, _ = make_forward(kind, mode, 8, 4096, 128, 128, heads=16)
            lines.append(f"layer {kind:6s} H=N=128 {mode:13s} {median_ms(forward, repeats=7):7.1f} ms")
    return "\n".join(lines)
