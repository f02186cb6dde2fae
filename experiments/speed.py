"""Scan speed: RotRNN, LRU and DLR x backend x mode, forward time against L (the report's speed section, claim D9).

Uses the same harnesses as `pytest --benchmark` (`linrnn.verify.bench_torch`, `linrnn.verify.bench_jax`):
one layer, float32, compiled and warmed up before timing, the median of a few calls. The float64
reference is an oracle, not a contender, and is not timed. `step` mode runs the sequence one position
at a time: its time should grow as L (claim D9). For D9 it is also timed at five lengths in interleaved
rounds, from which the ledger fits the exponent of time against L with its interval.

    run(quick, progress) -> (data, config)     data["rows"]: backend, mixer, mode, L, ms, us_per_position;
                                               data["step_rounds"]: backend, mixer, L, ms (one per round), the
                                               step mode in interleaved rounds for D9's exponent fit;
                                               data["step_structure"]: backend, mixer and the counted work of
                                               each token of one stream (`step_cost.measure`);
                                               data["step_tokens"]: backend, mixer and the time of one token at
                                               several positions, in staggered interleaved rounds

D9 ("O(L) inference") is decided token by token (`settle_d9`, the rule in `linrnn.experiments.step_cost`): the
work each token of a stream does, counted (torch: every ATen operator, flops, elements; JAX: the jaxpr of the
program each token runs, every loop's body times its trip count), must not grow with the token's position t, and
where the count cannot see everything (PyTorch: Python and NumPy work outside the framework; JAX: a loop whose trip
count is decided at run time) the time of one token must not grow with t either (an exponent fitted with the
rounds as clusters). DLR's step mode decides (the claim is DLR's); the other mixers, and the fit of whole step-mode
calls against L, are side findings.

Training speed (forward and forward+backward, peak memory, the GEMM floor and the peers, up to
L = 262144) is `linrnn.experiments.training_speed`; its `sweep` is re-exported here as `speed.sweep`.
"""

from __future__ import annotations

from linrnn.experiments import step_cost
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
    structure, tokens = _step_cost(quick, lambda what: progress(len(cases), len(cases), what))
    progress(len(cases), len(cases), "done")
    positions = step_cost.QUICK_TOKEN_POSITIONS if quick else step_cost.TOKEN_POSITIONS
    return ({"rows": rows, "step_rounds": step_rounds, "step_structure": structure, "step_tokens": tokens},
            {**SIZES, "lengths": list(lengths), "devices": devices, "budget_ms": BUDGET_MS,
             "step_lengths": list(step_lengths), "step_rounds": STEP_ROUNDS,
             "structure_tokens": step_cost.STRUCTURE_TOKENS, "token_positions": list(positions),
             "token_block": step_cost.TOKEN_BLOCK, "token_rounds": step_cost.TOKEN_ROUNDS})


def _step_cost(quick: bool, progress) -> tuple[list[dict], list[dict]]:
    """D9's rows: every timed mixer's step, per backend, counted token by token and timed per token
    (`step_cost.measure`)."""
    positions = step_cost.QUICK_TOKEN_POSITIONS if quick else step_cost.TOKEN_POSITIONS
    tokens = max(step_cost.STRUCTURE_TOKENS, positions[-1])
    structure, timed = [], []
    for backend in BACKENDS:
        for kind in TIMED_KINDS:
            progress(f"{backend} {kind} step mode, counted and timed token by token")
            counted, per_token = step_cost.measure(backend, step_cost.streams(backend, kind, tokens, SIZES),
                                                   positions=positions)
            structure.append({"backend": backend, "mixer": kind, **counted})
            timed.append({"backend": backend, "mixer": kind, **per_token})
    return structure, timed


# -- the rule (D9) ---------------------------------------------------------------------------------------------

def _timing_part(backend: str, kind: str, rounds: list[dict], scale: str):
    """The exponent of step-mode CPU time against L, the rounds as clusters (`stats.exponent_clustered`)."""
    from linrnn.experiments.decide import stats
    from linrnn.experiments.decide.evidence import EXPONENT_BOUND, Part, num, tested

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
    """D9 ("O(L) inference", DLR's claim): decided on DLR's step mode in each backend, token by token
    (`step_cost.d9_parts`: the counted work of every token and, in PyTorch and wherever the count cannot be read,
    the per-token time against t); the other mixers' parts and the timing fit of whole step-mode calls against L
    are side findings (supporting evidence that decides nothing)."""
    from linrnn.experiments.decide.evidence import Part, needs, side
    from linrnn.experiments.step_cost import d9_parts

    counted = {(r["backend"], r["mixer"]): r for r in data.get("step_structure") or []}
    timed = {(r["backend"], r["mixer"]): r for r in data.get("step_tokens") or []}
    timings: dict[tuple[str, str], list[dict]] = {}
    for r in data["step_rounds"]:
        timings.setdefault((r["backend"], r["mixer"]), []).append(r)
    steps = sorted(set(counted) | set(timed), key=lambda key: (BACKENDS.index(key[0]) if key[0] in BACKENDS else 9,
                                                               key[1]))
    deciding = [p for b, k in steps if k == "dlr" for p in d9_parts(b, k, counted.get((b, k)), timed.get((b, k)))]
    if not deciding:
        deciding = [Part("benchmark (speed)", "inconclusive", "no count of DLR's step mode in these results "
                         "(written by older code: `linrnn report --out DIR` measures it)", scale,
                         part="O(L) inference: DLR",
                         power=needs("the step's count and per-token timing: `linrnn report --out DIR` measures it"))]
    others = [p for b, k in steps if k != "dlr" for p in d9_parts(b, k, counted.get((b, k)), timed.get((b, k)))]
    timed_fits = [_timing_part(b, k, rows, scale) for (b, k), rows in timings.items()]
    return (deciding + side(others, "D9 is DLR's claim") +
            side(timed_fits, "the whole step-mode call timed against L supports the per-token reading; the "
                 "machine's load moves it"))


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
