"""Training speed and memory: forward and forward+backward time and peak memory against L, beside the peers.

One layer, float32, B = 8, H = N = 128 (RotRNN: 16 heads of 8) by default, for each mixer's training
modes (`linrnn.verify.bench.TRAINING_MODES`) in both frameworks, beside the GEMM floor (the layer's two
projections alone), s5-pytorch and LRU-pytorch (`linrnn.verify.peers_torch`), and on CUDA the scan
alone by the plain device code and by the Triton / Pallas kernels. Every case is built by the same
harnesses as `pytest --benchmark` (`linrnn.verify.bench_torch`, `linrnn.verify.bench_jax`).

    sweep(device="cpu", lengths=(1024, ..., 262144), ...) -> {"rows", "config", "scaling", "targets"}
    interleaved(device="cpu", L=4096, ...) -> rows: PyTorch's cases at one length, timed in interleaved rounds
    growth_rounds(lengths=(4096, 65536), ...) -> rows: PyTorch's growth, both lengths in interleaved rounds

A row is one (framework, implementation, direction, L):

    ms               median wall time of one call (None if not run; `skipped` says why)
    peak_bytes       peak memory of one call above the state before its parameters and input existed
    peak_over_BLH4   peak_bytes / (B L H 4): the peak in units of one float32 input u
    over_gemm_floor  ms / the same framework's GEMM floor at the same L and direction
    over_s5_pytorch  ms / s5-pytorch's at the same L and direction

forward is one call without gradients; forward+backward is y = layer(u); sum(y).backward() with every
parameter and u requiring gradients (torch), or `jax.grad` of sum(y) w.r.t. (params, u), jitted (JAX).

How memory is measured (`config["memory"]` says which was used):
- CPU: every (implementation, direction, L) in a fresh process (`linrnn.experiments.memory_probe`):
  peak resident-size growth, /proc/self/status VmHWM after one call minus VmRSS before its parameters
  and u were allocated (after imports, a tiny warm-up and, for JAX, compilation). It counts the
  parameters, u, temporaries, outputs and gradients.
- CUDA, torch: `torch.cuda.max_memory_allocated` above the bytes allocated before the parameters (in
  process; the caching allocator's statistics are exact and resettable).
- GPU, JAX: XLA's memory analysis of the compiled call (arguments + outputs + temporaries), since
  JAX's device statistics cannot reset their peak within a process.

Lengths stop growing for an implementation when a call took longer than `budget_s`, when memory ran
out (or the peak scaled linearly from the last length would exceed 80% of the memory available), or
at `deadline`; each such row says so. LRU-pytorch loops over batch and time in Python and is run up
to L = 4096 only. Timing is the median of up to 7 calls after a warm-up (`timed_median_ms`).

    linrnn bench training-speed --out reports/results/training_speed_cpu.json

runs the whole sweep, then `interleaved` at L = 4096 (stored as the sweep's "interleaved" rows;
`--interleaved-rounds 0` leaves it out) and `growth_rounds` (the sweep's "growth_rounds" rows;
`--growth-rounds 0` leaves it out), prints the markdown tables (`markdown`) and writes the stored
file that the report's training-speed section renders (docs/speed.md, "Training speed and memory").
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable

from linrnn.experiments.memory_probe import available_bytes, out_of_memory, probe_memory
from linrnn.verify.bench import DIRECTIONS, TRAINING_MODES, check_direction, input_bytes, interleaved_ms, timed_median_ms
from linrnn.base.errors import LinrnnError

LENGTHS = (1024, 4096, 16384, 65536, 262144)
FRAMEWORKS = ("torch", "jax")
MIXERS = ("rotrnn", "lru", "dlr")   # fixed: the three recurrences timed beside the peers, not every registered model
PEERS = ("s5-pytorch", "lru-pytorch")
BUILD = f"{__name__}:build"    # the builder the memory probe's child process imports by name (`memory_probe`)
PEER_MAX_L = {"lru-pytorch": 4096}      # a Python loop over B x L steps: minutes beyond this
MEMORY_HEADROOM = 0.8                   # skip a length whose predicted peak exceeds this share of free memory
SCALING = (4096, 65536)                 # the fwd+bwd growth ratio t(65536) / t(4096)
REFERENCE_L = 4096                      # where the ratios to s5-pytorch and the GEMM floor are read
GEMM = "gemm floor"
S5 = "s5-pytorch"


@dataclass(frozen=True)
class Case:
    """One implementation of one framework: how to build it, and why it cannot run here (None: it can)."""
    framework: str          # "torch" | "jax"
    implementation: str     # the row's name: "lru scan", "gemm floor", "s5-pytorch", "scan alone (triton)"
    builder: str            # "layer" | "gemm" | "peer" | "scan"
    arg: str = ""           # "kind:mode" | peer name | scan route
    unavailable: str | None = None

    def spec(self, direction: str, L: int, *, B: int, H: int, N: int, heads: int, dtype: str, device: str) -> dict:
        """The plain-data spec of this case at one length (what `build` and a probe process take)."""
        return {"framework": self.framework, "builder": self.builder, "arg": self.arg, "direction": direction,
                "B": B, "L": L, "H": H, "N": N, "heads": heads, "dtype": dtype, "device": device}


def _kernel_reason(module: str, what: str) -> str | None:
    """None if `linrnn.impls.<module>` imports and reports available(), else why not (one line)."""
    import importlib
    try:
        kernel = importlib.import_module(f"linrnn.impls.{module}")
    except ImportError as err:
        return f"{what}: linrnn.impls.{module} cannot be imported ({err})"
    if not kernel.available():
        return f"{what}: " + getattr(kernel, "unavailable_reason", lambda: "available() is False")()
    return None


def cases(device: str, frameworks=FRAMEWORKS, mixers=MIXERS, peers: bool = True) -> list[Case]:
    """Every implementation the sweep runs, in row order, with the reason where one cannot run."""
    out = []
    for framework in frameworks:
        if framework not in FRAMEWORKS:
            raise LinrnnError(f"frameworks: expected a subset of {', '.join(FRAMEWORKS)}, found {framework!r}")
        for kind in mixers:
            if kind not in TRAINING_MODES:
                raise LinrnnError(f"mixers: expected a subset of {', '.join(TRAINING_MODES)}, found {kind!r}")
            out += [Case(framework, f"{kind} {mode}", "layer", f"{kind}:{mode}") for mode in TRAINING_MODES[kind]]
        out.append(Case(framework, GEMM, "gemm"))
        if framework == "torch" and peers:
            from linrnn.verify.peers_torch import missing_reason
            out += [Case("torch", name, "peer", name, missing_reason(name)) for name in PEERS]
        if device != "cpu" and framework == "torch":
            out += [Case("torch", "scan alone (chunked)", "scan", "chunked"),
                    Case("torch", "scan alone (triton)", "scan", "triton",
                         _kernel_reason("torch.triton_scan", "triton scan"))]
        if device != "cpu" and framework == "jax":
            out += [Case("jax", "scan alone (lax.scan)", "scan", "sequential"),
                    Case("jax", "scan alone (pallas)", "scan", "pallas",
                         _kernel_reason("jax.pallas_scan", "pallas scan"))]
    return out


def build(spec: dict, before_inputs: Callable[[], None] | None = None):
    """The (call, info) of one case at one length, from a plain-data spec (what a probe process receives)."""
    if spec["framework"] == "torch":
        from linrnn.verify import bench_torch as bench
    else:
        from linrnn.verify import bench_jax as bench
    B, L, H, N, dtype, direction = (spec[k] for k in ("B", "L", "H", "N", "dtype", "direction"))
    device = spec["device"] if spec["framework"] == "torch" else ("cpu" if spec["device"] == "cpu" else "gpu")
    common = dict(dtype=dtype, seed=spec.get("seed", 0), device=device, before_inputs=before_inputs)
    if spec["builder"] == "layer":
        kind, mode = spec["arg"].split(":")
        make = bench.make_forward if direction == "forward" else bench.make_forward_backward
        return make(kind, mode, B, L, H, N, heads=spec["heads"], **common)
    if spec["builder"] == "gemm":
        return bench.make_gemm_floor(direction, B, L, H, N, **common)
    if spec["builder"] == "peer":
        return bench.make_peer(spec["arg"], direction, B, L, H, N, **common)
    return bench.make_scan_alone(spec["arg"], direction, B, L, N, **common)


# -- the sweep ------------------------------------------------------------------------------------

def _check_device(device: str, frameworks) -> str | None:
    """Refuse a CUDA sweep without CUDA; -> why JAX cannot run on this device (None: it can).

    On a GPU, JAX would take 75% of the device's memory at its first use and leave PyTorch little:
    unless the caller chose otherwise, it allocates on demand (set before JAX's backend starts).
    """
    if device != "cpu":
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        import torch
        if "torch" in frameworks and not torch.cuda.is_available():
            raise LinrnnError(f"device: {device!r} was requested but torch sees no CUDA device")
    if "jax" not in frameworks:
        return None
    import jax
    try:
        jax.devices("cpu" if device == "cpu" else "gpu")
    except RuntimeError:
        return f"JAX has no GPU backend here (devices: {', '.join(str(d) for d in jax.devices())})"
    return None


def sweep(*, device: str = "cpu", lengths=LENGTHS, batch: int = 8, width: int = 128, state: int = 128,
          heads: int = 16, dtype: str = "float32", frameworks=FRAMEWORKS, mixers=MIXERS, peers: bool = True,
          memory: bool = True, budget_s: float | None = None, progress=None, deadline: float | None = None) -> dict:
    """Time (and measure the peak memory of) every case at every length; -> JSON-able results.

    device    'cpu' or 'cuda' (JAX then uses its GPU backend); batch, width, state, heads: B, H, N, and
              RotRNN's heads (N is the total state); budget_s: a call slower than this stops its
              implementation's longer lengths; deadline: a `time.monotonic()` value after which nothing
              new starts; progress(done, total, what) reports how far it is.
    -> {"rows": [...], "config": {...}, "scaling": [...], "targets": [...]} (module docstring).
    """
    lengths = sorted(int(L) for L in lengths)
    if not lengths or lengths[0] < 1:
        raise LinrnnError(f"lengths: expected positive integers, found {lengths!r}")
    jax_reason = _check_device(device, frameworks)
    todo = [(c, d) for c in cases(device, frameworks, mixers, peers) for d in DIRECTIONS]
    progress = progress or (lambda done, total, what: None)
    rows, count = [], 0
    for case, direction in todo:
        stop = case.unavailable or (jax_reason if case.framework == "jax" else None)
        last_peak = None                                   # (L, bytes) of the last length measured
        for L in lengths:
            progress(count, len(todo) * len(lengths), f"{case.framework} {case.implementation} {direction} L={L}")
            count += 1
            if stop is None and deadline is not None and time.monotonic() > deadline:
                stop = "not run: the sweep's deadline passed"
            row = {"framework": case.framework, "implementation": case.implementation, "direction": direction,
                   "L": L, "ms": None, "repeats": 0, "peak_bytes": None, "xla_bytes": None, "skipped": stop}
            rows.append(row)
            if stop is not None:
                continue
            if L > PEER_MAX_L.get(case.arg, L):
                row["skipped"] = f"{case.implementation} loops over B x L steps in Python: run up to L = " \
                                 f"{PEER_MAX_L[case.arg]} only"
                continue
            spec = case.spec(direction, L, B=batch, H=width, N=state, heads=heads, dtype=dtype, device=device)
            stop = _run_case(row, spec, memory, last_peak, budget_s)
            if row["peak_bytes"] is not None:
                last_peak = (L, row["peak_bytes"])
    progress(count, count, "done")
    memory_method = {"torch": "fresh-process peak RSS growth" if device == "cpu" else "torch.cuda.max_memory_allocated",
                     "jax": "fresh-process peak RSS growth" if device == "cpu" else "XLA memory analysis"}
    config = {"device": device, "lengths": lengths, "B": batch, "H": width, "N": state, "heads": heads,
              "dtype": dtype, "frameworks": list(frameworks), "mixers": list(mixers), "peers": peers,
              "memory": memory_method if memory else None, "budget_s": budget_s,
              "training_modes": {k: list(TRAINING_MODES[k]) for k in mixers}, "peer_max_L": PEER_MAX_L}
    derive(rows, batch, width)                             # ratios first: the targets read them
    return {"rows": rows, "config": config, "scaling": scaling(rows), "targets": targets(rows)}


INTERLEAVED_ROUNDS = 7
INTERLEAVED_LEFT_OUT = ("lru-pytorch",)      # 20 s and more a call at L = 4096: a round would be mostly its


def interleaved(*, device: str = "cpu", L: int = REFERENCE_L, batch: int = 8, width: int = 128, state: int = 128,
                heads: int = 16, dtype: str = "float32", mixers=MIXERS, peers: bool = True,
                rounds: int = INTERLEAVED_ROUNDS, progress=None) -> list[dict]:
    """The ratio targets' times at one length, every PyTorch case of a direction timed in interleaved rounds.

    The sweep times one case after another, so whatever changes the machine's speed between cases (a
    neighbour on a shared machine, the clock, the page cache) moves their ratios: on the development
    machine the same code's LRU fwd+bwd / s5-pytorch read 0.32 in one sweep and 0.46 in another. Here
    the cases of one direction are all built first, then each round calls every case once in turn
    (`interleaved_ms`). A ratio is the median over the rounds of the ratio within a round, stored with its
    range: a slow spell falls on the calls of the rounds it lasts, but not always on each alike, and the
    range shows how much it moved the ratio. PyTorch's layers, its GEMM floor and s5-pytorch
    (LRU-pytorch is left out: one call takes 20 s or more).

    -> rows {"implementation", "direction", "L", "ms" (the median), "rounds", "round_ms" (every round's),
             "over_gemm_floor", "over_gemm_floor_range", "over_s5_pytorch", "over_s5_pytorch_range", "skipped"}
    """
    if rounds < 1:
        raise LinrnnError(f"rounds: expected at least 1, found {rounds}")
    progress = progress or (lambda done, total, what: None)
    todo = [c for c in cases(device, ("torch",), mixers, peers)
            if c.builder in ("layer", "gemm", "peer") and c.arg not in INTERLEAVED_LEFT_OUT]
    rows = []
    for i, direction in enumerate(DIRECTIONS):
        progress(i, len(DIRECTIONS), f"interleaved rounds, torch {direction} L={L}")
        calls, mine = {}, []
        for case in todo:
            row = {"implementation": case.implementation, "direction": direction, "L": L, "ms": None,
                   "rounds": 0, "round_ms": None, "skipped": case.unavailable}
            mine.append(row)
            if case.unavailable is None:
                spec = case.spec(direction, L, B=batch, H=width, N=state, heads=heads, dtype=dtype, device=device)
                calls[case.implementation] = build(spec)[0]
        times = interleaved_ms(calls, rounds)
        for row in mine:
            if row["implementation"] in times:
                row["round_ms"] = times[row["implementation"]]
                row["ms"], row["rounds"] = statistics.median(row["round_ms"]), rounds
            for key, yardstick in (("over_gemm_floor", GEMM), ("over_s5_pytorch", S5)):
                row[key], row[key + "_range"] = _round_ratios(row["round_ms"], times.get(yardstick))
        rows += mine
        del calls
        _collect(batch, L, width)
    progress(len(DIRECTIONS), len(DIRECTIONS), "interleaved rounds done")
    return rows


def growth_rounds(*, device: str = "cpu", lengths=SCALING, batch: int = 8, width: int = 128, state: int = 128,
                  heads: int = 16, dtype: str = "float32", mixers=MIXERS, rounds: int = INTERLEAVED_ROUNDS,
                  direction: str = "forward+backward") -> list[dict]:
    """The growth target in interleaved rounds: every PyTorch layer and the GEMM floor at both lengths.

    The sweep times L = 4096 and L = 65536 of one implementation minutes apart, so a drift of the machine
    between them is read as growth. Here all the calls (each implementation at both lengths) are built
    first and called in turn, round by round; the growth is the median over the rounds of
    t(lengths[1]) / t(lengths[0]) within a round, with its range.

    -> rows {"implementation", "direction", "from_L", "to_L", "linear", "ms" ([at from_L, at to_L], medians),
             "rounds", "ratio", "ratio_range"}
    """
    if rounds < 1:
        raise LinrnnError(f"rounds: expected at least 1, found {rounds}")
    if len(lengths) != 2 or not all(isinstance(L, int) and L >= 1 for L in lengths) or lengths[0] >= lengths[1]:
        raise LinrnnError(f"lengths: expected two positive integers, shorter first, found {tuple(lengths)}")
    check_direction(direction)
    todo = [c for c in cases(device, ("torch",), mixers, peers=False) if c.builder in ("layer", "gemm")]
    calls = {}
    for case in todo:
        for L in lengths:
            spec = case.spec(direction, L, B=batch, H=width, N=state, heads=heads, dtype=dtype, device=device)
            calls[(case.implementation, L)] = build(spec)[0]
    times = interleaved_ms(calls, rounds)
    rows = []
    for case in todo:
        short, long = (times[(case.implementation, L)] for L in lengths)
        ratio, spread = _round_ratios(long, short)
        rows.append({"implementation": case.implementation, "direction": direction, "from_L": lengths[0],
                     "to_L": lengths[1], "linear": lengths[1] / lengths[0],
                     "ms": [statistics.median(short), statistics.median(long)], "rounds": rounds,
                     "ratio": ratio, "ratio_range": spread})
    return rows


def growth_markdown(rows: list[dict]) -> str:
    """`growth_rounds`' rows as a markdown table."""
    r0 = rows[0]
    lines = [f"{r0['direction']} t({r0['to_L']}) / t({r0['from_L']}) in {r0['rounds']} interleaved rounds (linear: "
             f"{r0['linear']:g}); the median of the rounds' ratios, their range in brackets", "",
             f"| implementation | growth | ms at {r0['from_L']} | ms at {r0['to_L']} |", "|---|---|---|---|"]
    lines += [f"| {r['implementation']} | {r['ratio']:.1f} ({r['ratio_range'][0]:.1f}-{r['ratio_range'][1]:.1f}) | "
              f"{_ms(r['ms'][0])} | {_ms(r['ms'][1])} |" for r in rows]
    return "\n".join(lines) + "\n"


def _round_ratios(times, yardstick) -> tuple[float | None, list[float] | None]:
    """The median over the rounds of time / the yardstick's time in the same round, and [min, max] of them."""
    if not times or not yardstick:
        return None, None
    ratios = sorted(t / y for t, y in zip(times, yardstick))
    return statistics.median(ratios), [ratios[0], ratios[-1]]


COLLECT_BYTES = 2**24     # after a case whose input u is at least this large, collect its cyclic garbage


def _collect(B: int, L: int, H: int) -> None:
    """Free a finished case's cyclic garbage before the next case, where it could hold memory that counts.

    A full collection costs up to a second in a process holding many objects (a test worker, the report);
    a case with an input under 16 MiB leaves too little behind to matter, and Python's own collector runs
    anyway.
    """
    if input_bytes(B, L, H) >= COLLECT_BYTES:
        gc.collect()


def _run_case(row: dict, spec: dict, memory: bool, last_peak, budget_s) -> str | None:
    """Measure one row in place; -> the reason to stop this implementation's longer lengths (None: go on)."""
    L, device = spec["L"], spec["device"]
    free = available_bytes(device) if memory else None
    if last_peak is not None and free is not None and last_peak[1] * L / last_peak[0] > MEMORY_HEADROOM * free:
        row["skipped"] = (f"out of memory (predicted): the peak at L = {last_peak[0]} scaled to L = {L} is "
                          f"{last_peak[1] * L / last_peak[0] / 2**30:.1f} GiB, over {MEMORY_HEADROOM:.0%} of the "
                          f"{free / 2**30:.1f} GiB free")
        return row["skipped"]
    if memory and device == "cpu":
        row["peak_bytes"], reason = probe_memory(spec, BUILD)
        if reason is not None:
            row["skipped"] = reason
            return reason
    probe = None
    if memory and device != "cpu" and spec["framework"] == "torch":
        from linrnn.verify.bench_torch import CudaPeak
        probe = CudaPeak(device)
    try:
        call, info = build(spec, before_inputs=probe.start if probe else None)
        if probe is not None:
            call()
            row["peak_bytes"] = probe.peak_bytes()
        row["xla_bytes"] = info.get("xla_bytes")
        if memory and device != "cpu" and spec["framework"] == "jax":
            row["peak_bytes"] = row["xla_bytes"]
        row["ms"], row["repeats"] = timed_median_ms(call)
        del call
    except Exception as err:  # one failing case must not lose the others: the row says what happened
        first = str(err).splitlines()[0] if str(err) else ""
        row["skipped"] = ("out of memory: " if out_of_memory(err) else "failed: ") + f"{type(err).__name__}: {first}"
        return row["skipped"]
    finally:
        _collect(spec["B"], L, spec["H"])
        if device != "cpu" and spec["framework"] == "torch":     # hand cached blocks back: JAX runs next
            import torch
            torch.cuda.empty_cache()
    if budget_s is not None and row["ms"] > 1e3 * budget_s:
        return f"not run: a call took {row['ms'] / 1e3:.1f} s at L = {L}, over the budget of {budget_s:g} s"
    return None


# -- derived quantities ---------------------------------------------------------------------------

def derive(rows: list[dict], B: int, H: int) -> list[dict]:
    """Add peak_over_BLH4, over_gemm_floor and over_s5_pytorch to every row (None where a term is missing)."""
    ms = {(r["framework"], r["implementation"], r["direction"], r["L"]): r["ms"] for r in rows}
    for r in rows:
        gemm = ms.get((r["framework"], GEMM, r["direction"], r["L"]))
        s5 = ms.get(("torch", S5, r["direction"], r["L"]))
        r["peak_over_BLH4"] = None if r["peak_bytes"] is None else r["peak_bytes"] / input_bytes(B, r["L"], H)
        r["over_gemm_floor"] = r["ms"] / gemm if r["ms"] is not None and gemm else None
        r["over_s5_pytorch"] = r["ms"] / s5 if r["ms"] is not None and s5 else None
    return rows


def scaling(rows: list[dict], lengths=SCALING) -> list[dict]:
    """t(lengths[1]) / t(lengths[0]) per (framework, implementation, direction) where both were timed."""
    ms = {(r["framework"], r["implementation"], r["direction"], r["L"]): r["ms"] for r in rows}
    out = []
    for key in dict.fromkeys((r["framework"], r["implementation"], r["direction"]) for r in rows):
        a, b = ms.get((*key, lengths[0])), ms.get((*key, lengths[1]))
        if a and b:
            out.append({"framework": key[0], "implementation": key[1], "direction": key[2],
                        "from_L": lengths[0], "to_L": lengths[1], "ratio": b / a, "linear": lengths[1] / lengths[0]})
    return out


def targets(rows: list[dict], at: int = REFERENCE_L, growth=SCALING) -> list[dict]:
    """The issue's quantities per (framework, implementation), from the rows (None where not measured).

    fwd_bwd_growth     fwd+bwd t(growth[1]) / t(growth[0])        (linear: growth[1] / growth[0])
    fwd_bwd_over_s5    fwd+bwd time / s5-pytorch's at L = at
    forward_over_s5    forward time / s5-pytorch's at L = at
    forward_over_gemm  forward time / the GEMM floor's at L = at
    peak_over_BLH4     fwd+bwd peak / (B L H 4) at the longest L measured (peak_L)
    """
    by = {(r["framework"], r["implementation"], r["direction"], r["L"]): r for r in rows}
    grow = {(s["framework"], s["implementation"]): s["ratio"] for s in scaling(rows, growth)
            if s["direction"] == "forward+backward"}
    out = []
    for framework, impl in dict.fromkeys((r["framework"], r["implementation"]) for r in rows):
        fb, fw = by.get((framework, impl, "forward+backward", at), {}), by.get((framework, impl, "forward", at), {})
        peaks = [r for r in rows if (r["framework"], r["implementation"], r["direction"]) ==
                 (framework, impl, "forward+backward") and r.get("peak_over_BLH4") is not None]
        out.append({"framework": framework, "implementation": impl, "at_L": at, "growth_L": list(growth),
                    "fwd_bwd_growth": grow.get((framework, impl)), "fwd_bwd_over_s5": fb.get("over_s5_pytorch"),
                    "forward_over_s5": fw.get("over_s5_pytorch"), "forward_over_gemm": fw.get("over_gemm_floor"),
                    "peak_over_BLH4": peaks[-1]["peak_over_BLH4"] if peaks else None,
                    "peak_L": peaks[-1]["L"] if peaks else None})
    return out


def _cell(x, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _ms(x) -> str:
    return "-" if x is None else f"{x:.{2 if x < 10 else 1}f}"


def _ranged(row: dict, key: str) -> str:
    """A ratio with its range over the rounds, where the row has one (sweeps stored before it had none)."""
    spread = row.get(key + "_range")
    return _cell(row[key]) + ("" if spread is None else f" ({spread[0]:.2f}-{spread[1]:.2f})")


def markdown(result: dict) -> str:
    """The targets and every row as markdown tables (what docs/speed.md quotes)."""
    c = result["config"]
    t = result["targets"][0] if result["targets"] else {"at_L": REFERENCE_L, "growth_L": list(SCALING)}
    lines = [f"B = {c['B']}, H = {c['H']}, N = {c['N']} (RotRNN: {c['heads']} heads of {c['N'] // c['heads']}), "
             f"{c['dtype']}, device {c['device']}; memory: {c['memory'] or 'not measured'}", "",
             f"| framework | implementation | fwd+bwd t({t['growth_L'][1]})/t({t['growth_L'][0]}) | "
             f"fwd+bwd / s5-pytorch at {t['at_L']} | forward / s5-pytorch at {t['at_L']} | "
             f"forward / GEMM floor at {t['at_L']} | fwd+bwd peak / (B L H 4) (L) |", "|---" * 7 + "|"]
    for t in result["targets"]:
        peak = "-" if t["peak_over_BLH4"] is None else f"{t['peak_over_BLH4']:.1f} ({t['peak_L']})"
        lines.append(f"| {t['framework']} | {t['implementation']} | {_cell(t['fwd_bwd_growth'], 1)} | "
                     f"{_cell(t['fwd_bwd_over_s5'])} | {_cell(t['forward_over_s5'])} | "
                     f"{_cell(t['forward_over_gemm'])} | {peak} |")
    lines += ["", "| framework | implementation | direction | L | ms | x GEMM floor | x s5-pytorch | peak MiB | "
              "peak / (B L H 4) | skipped |", "|---" * 10 + "|"]
    for r in result["rows"]:
        peak = None if r["peak_bytes"] is None else r["peak_bytes"] / 2**20
        lines.append(f"| {r['framework']} | {r['implementation']} | {r['direction']} | {r['L']} | "
                     f"{_ms(r['ms'])} | "
                     f"{_cell(r['over_gemm_floor'])} | {_cell(r['over_s5_pytorch'])} | {_cell(peak, 0)} | "
                     f"{_cell(r['peak_over_BLH4'], 1)} | {r['skipped'] or ''} |")
    if result.get("interleaved"):
        L = result["interleaved"][0]["L"]
        lines += ["", f"Interleaved rounds at L = {L} (PyTorch; `interleaved`; ratios: the median of the rounds' "
                  "ratios, their range in brackets):", "",
                  "| implementation | direction | ms | x GEMM floor | x s5-pytorch | skipped |", "|---" * 6 + "|"]
        for r in result["interleaved"]:
            lines.append(f"| {r['implementation']} | {r['direction']} | {_ms(r['ms'])} | "
                         f"{_ranged(r, 'over_gemm_floor')} | {_ranged(r, 'over_s5_pytorch')} | {r['skipped'] or ''} |")
    if result.get("growth_rounds"):
        lines += ["", growth_markdown(result["growth_rounds"]).rstrip("\n")]
    return "\n".join(lines) + "\n"


# -- the stored sweep: what `linrnn bench training-speed --out FILE` writes ------------------------------

EXTRA_LIBRARIES = ("s5-pytorch", "LRU-pytorch", "triton", "pytest-benchmark")


def stored_record(result: dict, command: str):
    """A sweep with what a reader needs to trust it (`linrnn.base.results`: command, date, code version,
    machine, libraries, with EXTRA_LIBRARIES beside the usual ones)."""
    from linrnn.base.results import Envelope, TrainingSpeedRecord

    return TrainingSpeedRecord(sweep=result, envelope=Envelope.here(command, EXTRA_LIBRARIES))


def check_stored(record) -> str | None:
    """What is wrong with a stored sweep's content (None: nothing), so that a reader can skip it with the reason;
    its envelope and fields are checked by `linrnn.base.results.read`."""
    sweep_ = record.get("sweep")
    if not isinstance(sweep_, dict) or not isinstance(sweep_.get("rows"), list) or not isinstance(
            sweep_.get("config"), dict):
        return "sweep: expected an object with rows (a list) and config (an object)"
    if not isinstance(record.get("machine"), dict):
        return "machine: expected an object"
    keys = {"framework", "implementation", "direction", "L", "ms", "peak_bytes", "skipped"}
    for i, row in enumerate(sweep_["rows"]):
        if not isinstance(row, dict) or not keys <= set(row):
            return f"sweep.rows[{i}]: expected an object with {', '.join(sorted(keys))}"
    keys = {"implementation", "direction", "L", "ms", "over_gemm_floor", "over_s5_pytorch", "skipped"}
    for i, row in enumerate(sweep_.get("interleaved") or []):
        if not isinstance(row, dict) or not keys <= set(row):
            return f"sweep.interleaved[{i}]: expected an object with {', '.join(sorted(keys))}"
    keys = {"implementation", "direction", "from_L", "to_L", "ms", "rounds", "ratio", "ratio_range"}
    for i, row in enumerate(sweep_.get("growth_rounds") or []):
        if not isinstance(row, dict) or not keys <= set(row):
            return f"sweep.growth_rounds[{i}]: expected an object with {', '.join(sorted(keys))}"
    return None


PROG = "linrnn bench training-speed"
DESCRIPTION = ("time and peak memory of one layer, forward and forward+backward, against L, beside the GEMM floor "
               "and the peers")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `linrnn bench training-speed` (`run_command` reads them)."""
    parser.add_argument("--out", default=None, help="write the stored sweep here (JSON), e.g. "
                                                    "reports/results/training_speed_cpu.json")
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help="comma-separated L")
    for name, default, what in (("batch", 8, "B"), ("width", 128, "H"), ("state", 128, "N, the total state"),
                                ("heads", 16, "RotRNN heads")):
        parser.add_argument(f"--{name}", type=int, default=default, help=f"{what} (default {default})")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--mixers", default=",".join(MIXERS))
    parser.add_argument("--no-peers", action="store_true", help="leave out s5-pytorch and LRU-pytorch")
    parser.add_argument("--no-memory", action="store_true", help="time only (no probe processes)")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="a call slower than this stops its implementation's longer lengths")
    parser.add_argument("--interleaved-rounds", type=int, default=INTERLEAVED_ROUNDS,
                        help=f"after the sweep, time PyTorch's cases at L = {REFERENCE_L} in this many interleaved "
                             f"rounds (default {INTERLEAVED_ROUNDS}; 0: not)")
    parser.add_argument("--growth-rounds", type=int, default=INTERLEAVED_ROUNDS,
                        help=f"then time PyTorch's growth t({SCALING[1]}) / t({SCALING[0]}) in this many interleaved "
                             f"rounds (`growth_rounds`; default {INTERLEAVED_ROUNDS}; 0: not; only when --lengths has "
                             "both)")


def main(argv: list[str] | None = None) -> int:
    """`linrnn bench training-speed` with these options, in-process (bad input raises `LinrnnError`)."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    add_arguments(parser)
    given = list(sys.argv[1:] if argv is None else argv)
    return run_command(parser.parse_args(given), " ".join([PROG, *given]))


def run_command(args: argparse.Namespace, command: str) -> int:
    """The sweep the options ask for: printed, and stored in `--out` with `command` (the command line that ran it)."""
    for flag, least in (("interleaved_rounds", 0), ("growth_rounds", 0), ("batch", 1), ("width", 1), ("state", 1),
                        ("heads", 1)):                               # before the sweep, not after its minutes
        if getattr(args, flag) < least:
            raise LinrnnError(f"--{flag.replace('_', '-')}: expected {least} or more, found {getattr(args, flag)}")
    if args.budget_s is not None and not args.budget_s > 0:
        raise LinrnnError(f"--budget-s: expected a positive number of seconds, found {args.budget_s}")

    def progress(done: int, total: int, what: str) -> None:
        print(f"[{done}/{total}] {what}", file=sys.stderr, flush=True)

    try:
        lengths = [int(x) for x in args.lengths.split(",")]
    except ValueError:
        raise LinrnnError(f"--lengths: expected comma-separated integers, found {args.lengths!r}") from None
    if not lengths or min(lengths) < 1:
        raise LinrnnError(f"--lengths: expected positive integers, found {args.lengths!r}")
    result = sweep(device=args.device, lengths=lengths, batch=args.batch, width=args.width, state=args.state,
                   heads=args.heads, frameworks=tuple(args.frameworks.split(",")), mixers=tuple(args.mixers.split(",")),
                   peers=not args.no_peers, memory=not args.no_memory, budget_s=args.budget_s, progress=progress)
    sizes = dict(device=args.device, batch=args.batch, width=args.width, state=args.state, heads=args.heads,
                 mixers=tuple(args.mixers.split(",")))
    if args.interleaved_rounds and "torch" in result["config"]["frameworks"]:
        result["interleaved"] = interleaved(L=REFERENCE_L, peers=not args.no_peers, rounds=args.interleaved_rounds,
                                            progress=progress, **sizes)
    if args.growth_rounds and "torch" in result["config"]["frameworks"] and set(SCALING) <= set(lengths):
        progress(0, 1, f"growth rounds, torch L={SCALING[0]} and {SCALING[1]}")
        result["growth_rounds"] = growth_rounds(lengths=SCALING, rounds=args.growth_rounds, **sizes)
    print(markdown(result))
    if args.out:
        from linrnn.base.results import write

        write(args.out, stored_record(result, command))
        print(f"wrote {args.out}", file=sys.stderr)
    return 0

