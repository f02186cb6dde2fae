"""Scan speed: RotRNN, LRU and DLR x backend x mode, forward time against L (the report's speed section, claim D9).

Uses the same harnesses as `pytest --benchmark` (`linrnn.verify.bench_torch`, `linrnn.verify.bench_jax`):
one layer, float32, compiled and warmed up before timing, the median of a few calls. The float64
reference is an oracle, not a contender, and is not timed. `step` mode runs the sequence one position
at a time: its time should grow as L (claim D9). For D9 it is also timed at five lengths in interleaved
rounds, from which the ledger fits the exponent of time against L with its interval.

    run(quick, progress) -> (data, config)     data["rows"]: backend, mixer, mode, L, ms, us_per_position;
                                               data["step_rounds"]: backend, mixer, L, ms (one per round), the
                                               step mode in interleaved rounds for D9's exponent fit;
                                               data["step_structure"]: backend, mixer, L, the operations a stream
                                               of L step calls executes and the bytes of the state it carries

D9 ("O(L) inference") is decided by the structure, not the clock (`settle_d9`): a stream of L tokens through the
step mode executes L times the same work with a state of the same size, at every L (torch: every ATen operator
dispatched and FlopCounterMode's multiply-adds, counted; JAX: one compiled step program, XLA's cost analysis of it,
and the state's bytes). The timing fit is supporting evidence beside it, with the rounds as clusters, so a loaded
machine widens its interval instead of flipping the verdict. DLR's step mode decides (the claim is DLR's); the
other mixers are side findings.

Training speed (forward and forward+backward, peak memory, the GEMM floor and the peers, up to
L = 262144) is `linrnn.experiments.training_speed`; its `sweep` is re-exported here as `speed.sweep`.
"""

from __future__ import annotations

from linrnn.experiments.training_speed import sweep  # noqa: F401  (re-exported: `linrnn gpucheck` calls it)

SIZES = {"B": 4, "H": 64, "N": 64, "heads": 8, "dtype": "float32"}
# D9: step mode timed in interleaved rounds (every length once per round) at five lengths, for the fit of the
# exponent of time against L (the ledger's `stats.exponent`: at least 5 rounds at 3 or more lengths)
STEP_LENGTHS = (128, 256, 512, 1024, 2048)
QUICK_STEP_LENGTHS = (64, 128, 256)
STEP_ROUNDS = 5
LENGTHS = (256, 1024, 4096, 16384)
QUICK_LENGTHS = (128, 512)      # two lengths 4x apart: enough for the step mode's time per position (D9)
BUDGET_MS = 1500.0  # a call slower than this is not timed at the next, 4x longer, L (ms = None)
TIMED_KINDS = ("rotrnn", "lru", "dlr")   # fixed: the three recurrences D9 compares, not every registered model
MODES = ("sequential", "scan", "conv", "step")
BACKENDS = ("torch", "jax")


def _timer(backend: str, kind: str, mode: str, L: int):
    """A zero-argument synchronised forward call at the section's sizes, and the device it runs on."""
    if backend == "torch":
        from linrnn.verify.bench_torch import make_forward
        forward, info = make_forward(kind, mode, L=L, **SIZES)
        return forward, info["device"]
    from linrnn.verify.bench_jax import make_forward
    forward, info = make_forward(kind, mode, L=L, **SIZES)
    return forward, info["device"]


def run(quick: bool, progress) -> tuple[dict, dict]:
    from linrnn.verify.bench import median_ms

    lengths = QUICK_LENGTHS if quick else LENGTHS
    cases = [(b, k, m, L) for b in BACKENDS for k in TIMED_KINDS for m in MODES for L in lengths]
    rows, devices, too_slow = [], {}, set()
    for i, (backend, kind, mode, L) in enumerate(cases):
        progress(i, len(cases), f"{backend} {kind} {mode} L={L}")
        if (backend, kind, mode) in too_slow:   # a step loop in Python: 4x longer again would blow the budget
            rows.append({"backend": backend, "mixer": kind, "mode": mode, "L": L, "ms": None, "us_per_position": None})
            continue
        forward, devices[backend] = _timer(backend, kind, mode, L)
        ms = median_ms(forward, repeats=3, warmup=1)
        if ms > BUDGET_MS:
            too_slow.add((backend, kind, mode))
        rows.append({"backend": backend, "mixer": kind, "mode": mode, "L": L, "ms": ms, "us_per_position": 1e3 * ms / L})
    step_rounds = []
    step_lengths = QUICK_STEP_LENGTHS if quick else STEP_LENGTHS
    for backend in BACKENDS:
        for kind in TIMED_KINDS:
            progress(len(cases), len(cases), f"{backend} {kind} step mode, {STEP_ROUNDS} interleaved rounds")
            step_rounds.extend(step_mode_rounds(backend, kind, step_lengths, STEP_ROUNDS))
    structure = []
    for backend in BACKENDS:
        for kind in TIMED_KINDS:
            progress(len(cases), len(cases), f"{backend} {kind} step mode, operations counted")
            structure.extend(step_structure(backend, kind, STRUCTURE_LENGTHS))
    progress(len(cases), len(cases), "done")
    return ({"rows": rows, "step_rounds": step_rounds, "step_structure": structure},
            {**SIZES, "lengths": list(lengths), "devices": devices, "budget_ms": BUDGET_MS,
             "step_lengths": list(step_lengths), "step_rounds": STEP_ROUNDS, "structure_lengths": list(STRUCTURE_LENGTHS)})


# D9's structural check: streams of these lengths through the step mode, every operation counted
STRUCTURE_LENGTHS = (4, 16, 64)


def step_structure(backend: str, kind: str, lengths=STRUCTURE_LENGTHS) -> list[dict]:
    """Streaming inference through the step mode, counted rather than timed: per length L, the work of the L step
    calls after the first (which makes the state) and the bytes of the state carried between them.

    torch: `ops`, every ATen operator dispatched (a TorchDispatchMode), `flops`, FlopCounterMode's count, `elements`,
    the elements those operators wrote; JAX: `flops` and `bytes_accessed`, XLA's cost analysis of the one compiled
    step program times the calls, and `programs`, how many times the step was traced for the whole stream (one: the
    same program at every position). Each row: {"backend", "mixer", "L", "calls", "ops", "flops", "elements",
    "bytes_accessed", "programs", "state_bytes", "state_shapes"} (None where a backend does not count it)."""
    from linrnn.impls.init import init
    from linrnn.verify.bench import layer_config

    cfg = layer_config(kind, SIZES["H"], SIZES["N"], SIZES["heads"])
    bundle = init(cfg, 0)
    B, H = SIZES["B"], SIZES["H"]
    rng = __import__("numpy").random.default_rng(0)
    rows = []
    if backend == "torch":
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten
        from torch.utils.flop_counter import FlopCounterMode

        from linrnn.impls.torch import from_bundle

        class Count(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.ops, self.elements = 0, 0

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                self.ops += 1
                self.elements += sum(t.numel() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor))
                return out

        layer = from_bundle(bundle, torch.float32)
        for L in lengths:
            u = torch.as_tensor(rng.standard_normal((B, L + 1, H)), dtype=torch.float32)
            with torch.no_grad():
                _, state = layer.step(u[:, 0])
                with FlopCounterMode(display=False) as flops, Count() as count:
                    for t in range(1, L + 1):
                        _, state = layer.step(u[:, t], state)
            tensors = [x for x in tree_flatten(state)[0] if isinstance(x, torch.Tensor)]
            rows.append({"backend": backend, "mixer": kind, "L": L, "calls": L, "ops": count.ops,
                         "flops": int(flops.get_total_flops()), "elements": count.elements, "bytes_accessed": None,
                         "programs": None, "state_bytes": sum(x.numel() * x.element_size() for x in tensors),
                         "state_shapes": [list(x.shape) for x in tensors]})
        return rows
    import jax
    import jax.numpy as jnp

    from linrnn.impls.jax import from_bundle
    from linrnn.impls.jax import layer as jlayer

    params = from_bundle(bundle, "float32")
    traced = []

    def one(p, u_t, s):
        traced.append(1)                  # runs once per trace, never per call
        return jlayer.step(p, cfg, u_t, s)

    step = jax.jit(one)
    for L in lengths:
        u = jnp.asarray(rng.standard_normal((B, L + 1, H)), dtype=jnp.float32)
        _, state = jlayer.step(params, cfg, u[:, 0])
        cost = step.lower(params, u[:, 1], state).compile().cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost
        step(params, u[:, 1], state)      # compiled (or found compiled) before the stream: its calls trace nothing
        before = len(traced)
        for t in range(1, L + 1):
            _, state = step(params, u[:, t], state)
        jax.block_until_ready(state)
        leaves = jax.tree_util.tree_leaves(state)
        rows.append({"backend": backend, "mixer": kind, "L": L, "calls": L, "ops": None,
                     "flops": float(cost.get("flops", float("nan"))) * L, "elements": None,
                     "bytes_accessed": float(cost.get("bytes accessed", float("nan"))) * L,
                     "programs": 1 + len(traced) - before,
                     "state_bytes": sum(int(x.size) * x.dtype.itemsize for x in leaves),
                     "state_shapes": [list(x.shape) for x in leaves]})
    return rows


# -- the rule (D9) ---------------------------------------------------------------------------------------------

def _structure_part(rows: list[dict], backend: str, kind: str):
    """verified when every counted quantity per call and the state's bytes and shapes are the same at every L;
    contradicted otherwise (naming what grows)."""
    from linrnn.experiments.evidence import Part

    rows = sorted(rows, key=lambda r: r["L"])
    lengths = [r["L"] for r in rows]
    grows = []
    for key in ("ops", "flops", "elements", "bytes_accessed"):
        per_call = [r[key] / r["calls"] for r in rows if r.get(key) is not None]
        if per_call and max(per_call) != min(per_call):
            grows.append(f"{key} per call {', '.join(f'{v:.6g}' for v in per_call)}")
    states = {(r["state_bytes"], str(r["state_shapes"])) for r in rows}
    if len(states) > 1:
        grows.append(f"state bytes {', '.join(str(r['state_bytes']) for r in rows)}")
    programs = [r["programs"] for r in rows if r.get("programs") is not None]
    if programs and max(programs) > 1:
        grows.append(f"the step traced {max(programs)} times in one stream")
    first = rows[0]
    counted = "; ".join(f"{key} per call {first[key] / first['calls']:.6g}" for key in ("ops", "flops", "elements",
                                                                                        "bytes_accessed")
                        if first.get(key) is not None)
    text = (f"{backend} {kind}, step mode, streams of L = {', '.join(map(str, lengths))} tokens: {counted}; state "
            f"{first['state_bytes']} bytes {first['state_shapes']}"
            + ("; one compiled program for every position" if programs else ""))
    if grows:
        return Part("benchmark (speed)", "contradicted", text + ": grows with L: " + "; ".join(grows),
                    part=f"O(L) inference: {backend} {kind}", test="structure", n=(len(rows),),
                    scale=f"step mode, operations counted at L = {lengths[0]}-{lengths[-1]}")
    return Part("benchmark (speed)", "verified", text + ": the same work and state at every L, so a stream of L "
                "tokens costs L times one step", part=f"O(L) inference: {backend} {kind}", test="structure",
                n=(len(rows),), effect=float(first["flops"] / first["calls"]),
                scale=f"step mode, operations counted at L = {lengths[0]}-{lengths[-1]}")


def _timing_part(backend: str, kind: str, rounds: list[dict], scale: str):
    """The exponent of step-mode CPU time against L, the rounds as clusters (`stats.exponent_clustered`)."""
    from linrnn.experiments import stats
    from linrnn.experiments.evidence import EXPONENT_BOUND, Part, num, tested

    L, t, cluster = [], [], []
    for r in rounds:
        for i, ms in enumerate(r["ms"]):
            L.append(int(r["L"])), t.append(num(ms)), cluster.append(i)
    lengths = sorted(set(L))
    n_rounds = min(sum(1 for x in L if x == length) for length in lengths)
    if len(lengths) < 3 or n_rounds < 3:
        return Part("benchmark (speed)", "inconclusive", f"{backend} {kind}, step mode: {n_rounds} rounds at "
                    f"{len(lengths)} lengths: the fit needs 3 or more rounds at 3 or more lengths", scale,
                    part=f"O(L) inference, timed: {backend} {kind}",
                    power={"seeds_per_arm": None, "cpu_hours": None, "assumption": "3 or more interleaved rounds"})
    test = stats.exponent_clustered(L, t, cluster, EXPONENT_BOUND)
    verdict = "verified" if test.significant else "inconclusive"
    why = (f"below {EXPONENT_BOUND:g} at alpha {test.alpha:g}" if test.significant else
           f"not shown below {EXPONENT_BOUND:g}")
    return Part("benchmark (speed)", verdict, f"{backend} {kind}, step mode: CPU time against L = "
                f"{', '.join(map(str, lengths))} ({n_rounds} interleaved rounds each): " + test.words("exponent")
                + f": {why}", scale or "one layer, sizes as in the speed section",
                part=f"O(L) inference, timed: {backend} {kind}",
                scale=f"step mode, L = {lengths[0]:,}-{lengths[-1]:,}, {n_rounds} rounds", **tested(test))


def settle_d9(data: dict, scale: str = "") -> list:
    """D9 ("O(L) inference", DLR's claim): decided on DLR's step mode in each backend by its structure
    (`_structure_part`: the same counted work and state size per call at every L); the timing fit of every mixer,
    and the other mixers' structure, are side findings (supporting evidence that decides nothing)."""
    from linrnn.experiments.evidence import Part, side

    structure: dict[tuple[str, str], list[dict]] = {}
    for r in data.get("step_structure") or []:
        structure.setdefault((r["backend"], r["mixer"]), []).append(r)
    timings: dict[tuple[str, str], list[dict]] = {}
    for r in data["step_rounds"]:
        timings.setdefault((r["backend"], r["mixer"]), []).append(r)
    deciding = [_structure_part(rows, b, k) for (b, k), rows in structure.items() if k == "dlr"]
    if not deciding:
        deciding = [Part("benchmark (speed)", "inconclusive", "no operation count of DLR's step mode in these results "
                         "(written by older code: `linrnn report --out DIR` measures it)", scale,
                         part="O(L) inference: DLR",
                         power={"seeds_per_arm": None, "cpu_hours": None,
                                "assumption": "the step's operation count: `linrnn report --out DIR` measures it"})]
    others = [_structure_part(rows, b, k) for (b, k), rows in structure.items() if k != "dlr"]
    timed = [_timing_part(b, k, rows, scale) for (b, k), rows in timings.items()]
    return (deciding + side(others, "D9 is DLR's claim") +
            side(timed, "timing supports the counted structure; the machine's load moves it"))


def step_mode_rounds(backend: str, kind: str, lengths, rounds: int) -> list[dict]:
    """Step mode at every length, timed in `rounds` interleaved rounds (`verify.bench.interleaved_ms`) of the
    process's CPU time: one row per length, {"backend", "mixer", "L", "ms": [CPU ms per round], "clock"}.

    CPU time, not wall time: O(L) is a statement about work, and on a shared CPU a long call spans more of the
    other processes' turns than a short one, which inflates wall time more at the longer lengths and biases the
    fitted exponent upwards (seen here: wall-clock rounds taken beside two training runs gave JAX's step mode
    an exponent of 1.5 over L = 64-256)."""
    import time

    from linrnn.verify.bench import interleaved_ms

    calls = {L: _timer(backend, kind, "step", L)[0] for L in lengths}
    if backend == "torch":         # one thread: idle intra-op threads spinning would add CPU time, not work
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            times = interleaved_ms(calls, repeats=rounds, clock=time.process_time)
        finally:
            torch.set_num_threads(threads)
    else:
        times = interleaved_ms(calls, repeats=rounds, clock=time.process_time)
    return [{"backend": backend, "mixer": kind, "L": L, "ms": times[L], "clock": "process CPU time"}
            for L in lengths]
