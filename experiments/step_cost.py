"""Claim D9 ("O(L) inference"): what one token of a stream through the step mode costs, counted and timed.

A stream of L tokens costs O(L) when no token's work grows with its position t. Two readings of a step:

- **counted** (`counted_part`): the work of each token 1..STRUCTURE_TOKENS of one stream, token by token
  (`linrnn.verify.step_count_torch`: every ATen operator, FlopCounterMode's flops, the elements written;
  `linrnn.verify.step_count_jax`: the jaxpr of the program each token runs, every loop's body times its trip
  count, nested loops multiplied through), and the bytes of the state. The same at every token: verified;
  growing with t (the later half's mean above the first half's): contradicted. A JAX program with a loop whose
  trip count is decided at run time (a `while_loop`, a `fori_loop` up to a counter in the state) or a host
  callback cannot be read, nor can counts that vary with t without growing: the counted part then decides
  nothing and the timed part decides.
- **timed** (`timed_part`): the time of one token at TOKEN_POSITIONS (the median of the TOKEN_BLOCK tokens ending
  at each) in TOKEN_ROUNDS staggered, interleaved rounds (`linrnn.verify.step_time`), process CPU time. The
  exponent b of per-token time = c t^b by least squares on log-log, each round a cluster
  (`stats.exponent_clustered`): verified when its one-sided 95 % upper bound is below TOKEN_EXPONENT_BOUND,
  contradicted when its one-sided lower bound is above it (that test Holm-adjusted with the claim's other
  contradiction tests by the ledger), inconclusive otherwise. It decides in PyTorch always (Python and NumPy work
  outside the framework, e.g. on a history kept in the layer object, is never dispatched, so never counted) and
  in JAX where the program cannot be read; where a jitted JAX step is read whole, it is supporting evidence.

    measure(backend, make, tokens, positions, block, rounds) -> (counted row, timed row)
    streams(backend, kind, tokens)                           -> make(): a fresh stream through the built-in layer
    d9_parts(backend, kind, counted, timed)                  -> the Parts of one step, deciding or not as above
"""

from __future__ import annotations

from dataclasses import replace

from linrnn.experiments.decide.evidence import Part, needs, side, tested

STRUCTURE_TOKENS = 64                    # tokens 1..64 of one stream counted one by one
TOKEN_POSITIONS = (32, 128, 512, 2048)   # per-token time at these positions (each the median of a block) ...
QUICK_TOKEN_POSITIONS = (16, 64, 256)
TOKEN_BLOCK = 16                         # ... of the 16 tokens ending there
TOKEN_ROUNDS = 5                         # staggered, interleaved rounds (clusters of the fit: t with 4 df)
# The per-token time's exponent bound. An O(t) step's exponent tends to 1 as its O(t) part comes to dominate; 0.1
# admits a growth of at most 1.5x over the 64x span of TOKEN_POSITIONS (1.3x over the quick 16x span), room for a
# shared machine's noise and a growing process's caches, while a step whose O(t) work reaches about half a
# token's time at the last position already fits about 0.16. Fixed before any stream was timed.
TOKEN_EXPONENT_BOUND = 0.1
COUNTED = ("ops", "flops", "elements", "state_bytes")
SOURCE = "benchmark (speed)"


# -- measuring -------------------------------------------------------------------------------------------------

def streams(backend: str, kind: str, tokens: int, sizes: dict, seed: int = 0):
    """make(): a fresh stream through `kind`'s built-in layer at `sizes` (B, H, N, heads), float32, over a random
    input of `tokens` + 1 tokens (B T+1 H); every stream shares the parameters and the input."""
    import numpy as np

    from linrnn.impls.init import init
    from linrnn.verify.bench import layer_config

    cfg = layer_config(kind, sizes["H"], sizes["N"], sizes["heads"])
    bundle = init(cfg, seed)
    u = np.random.default_rng(seed).standard_normal((sizes["B"], tokens + 1, sizes["H"])).astype(np.float32)
    if backend == "torch":
        import torch

        from linrnn.impls.torch import from_bundle
        from linrnn.verify.step_count_torch import TorchStream

        layer, u_t = from_bundle(bundle, torch.float32), torch.from_numpy(u)
        return lambda: TorchStream(layer, u_t)
    import jax.numpy as jnp

    from linrnn.impls.jax import from_bundle
    from linrnn.impls.jax import layer as jlayer
    from linrnn.verify.step_count_jax import JaxStep, JaxStream

    params, u_j = from_bundle(bundle, "float32"), jnp.asarray(u)
    step = JaxStep(lambda p, x, s: jlayer.step(p, cfg, x, s))
    return lambda: JaxStream(step, params, u_j)


def measure(backend: str, make, tokens: int = STRUCTURE_TOKENS, positions=TOKEN_POSITIONS, block: int = TOKEN_BLOCK,
            rounds: int = TOKEN_ROUNDS) -> tuple[dict, dict]:
    """The counted row of tokens 1..`tokens` and the timed row of `rounds` staggered streams (`make()`: a fresh
    stream whose input holds at least max(tokens, positions[-1]) + 1 tokens)."""
    from linrnn.verify.step_time import token_times

    if backend == "torch":
        from linrnn.verify.step_count_torch import count_stream, one_thread

        counted = count_stream(make, tokens)
        with one_thread():
            us = token_times(make, positions, block, rounds)
    else:
        from linrnn.verify.step_count_jax import count_stream

        counted = count_stream(make, tokens)
        us = token_times(make, positions, block, rounds)
    timed = {"positions": list(positions), "block": block, "rounds": rounds, "us": us, "clock": "process CPU time",
             "schedule": "staggered interleaved rounds"}
    return counted, timed


# -- the rule --------------------------------------------------------------------------------------------------

def _constant(values: list) -> bool:
    return min(values) == max(values)


def _grows(values: list) -> bool:
    """The later half's mean above the first half's."""
    half = len(values) // 2
    return sum(values[half:]) / (len(values) - half) > sum(values[:half]) / max(half, 1)


def _listed(values: list) -> str:
    shown = values if len(values) <= 8 else values[:4] + ["..."] + values[-3:]
    return ", ".join(str(v) for v in shown)


def _loops(row: dict) -> str:
    read = [f"{x['primitive']} of {x['length']} at {x['where']} ({x['trips']} trips a token)"
            for x in row.get("loops") or [] if x["trips"] is not None]
    return "; loops read and multiplied through: " + "; ".join(read) if read else ""


def _old_row(backend: str, kind: str) -> Part:
    return Part(SOURCE, "inconclusive", f"{backend} {kind}: the step was counted by older code (the work per call "
                "averaged over streams of L, which a loop inside the step can fool)", part=f"O(L) inference: "
                f"{backend} {kind}", power=needs("the count token by token: `linrnn report --out DIR` measures it"))


def counted_part(backend: str, kind: str, row: dict) -> Part:
    """verified when every count and the state are the same at every token; contradicted when a count grows with
    t; an unreadable program, or counts that vary without growing, decide nothing (`decides` False: the timed part
    decides), with the reason."""
    if "positions" not in row:
        return _old_row(backend, kind)
    counts = {key: row[key] for key in COUNTED if row.get(key) is not None}
    grows = [f"{key} per token {_listed(v)}" for key, v in counts.items() if not _constant(v) and _grows(v)]
    varies = [f"{key} per token {_listed(v)}" for key, v in counts.items() if not _constant(v) and not _grows(v)]
    if len(row["state_shapes"]) > 1:
        varies.append(f"state shapes {row['state_shapes']}")
    if (row.get("programs") or 1) > 1:
        varies.append(f"{row['programs']} programs in one stream")
    T, first = row["positions"][-1], {key: v[0] for key, v in counts.items()}
    text = (f"{backend} {kind}, step mode, tokens 1-{T} of a stream counted one by one ({row['reading']}): "
            + ", ".join(f"{key} {v:,}" for key, v in first.items() if key != "state_bytes")
            + f" at token 1; state {first['state_bytes']} bytes {row['state_shapes'][0]}" + _loops(row))
    common = {"part": f"O(L) inference: {backend} {kind}", "test": "structure", "n": (T,),
              "scale": f"step mode, tokens 1-{T} counted"}
    if grows:
        return Part(SOURCE, "contradicted", text + ": grows with t: " + "; ".join(grows), **common)
    if row["unreadable"] or varies:
        return Part(SOURCE, "inconclusive", text + ": cannot be read: " + "; ".join(row["unreadable"] + varies)
                    + "; the per-token timing decides", decides=False, **common,
                    power=needs("nothing from the count: the per-token timing decides"))
    return Part(SOURCE, "verified", text + ": the same counted work and state at every token, so a stream of L "
                "tokens costs L times one token's", effect=float(first["ops"]), **common)


def _above(positions: list, us: list, rounds: list, bound: float):
    """The one-sided test that the exponent is above `bound`: the same clustered fit on 1 / time (slope -b), whose
    one-sided p that -b < -bound is the p that b > bound."""
    from linrnn.experiments.decide import stats

    mirror = stats.exponent_clustered(positions, [1.0 / x for x in us], rounds, -bound)
    return replace(mirror, name="least-squares exponent of per-token time against t (log-log), rounds as "
                   "clusters, above the bound", effect=-mirror.effect, ci=(-mirror.ci[1], float("inf")),
                   note=f"one-sided p that the exponent is above {bound:g}; the interval's low end is its one-sided "
                        f"{100 * (1 - mirror.alpha):g} % bound; cluster-robust over {len(set(rounds))} rounds")


def timed_part(backend: str, kind: str, row: dict, decides: bool) -> Part:
    """The exponent of per-token time against the position t: verified below TOKEN_EXPONENT_BOUND, contradicted
    above it (its raw test in `against`, Holm-adjusted by the ledger), each by a one-sided test at alpha."""
    from linrnn.experiments.decide import stats

    positions, x, y, cluster = row["positions"], [], [], []
    for r, per_round in enumerate(row["us"]):
        for p, us in zip(positions, per_round):
            x.append(p), y.append(us), cluster.append(r)
    name = f"O(L) inference, per token: {backend} {kind}"
    scale = f"step mode, tokens at t = {positions[0]:,}-{positions[-1]:,}, {len(row['us'])} rounds"
    if len(positions) < 3 or len(row["us"]) < 3:
        return Part(SOURCE, "inconclusive", f"{backend} {kind}: {len(row['us'])} rounds at {len(positions)} "
                    "positions: the fit needs 3 or more of each", part=name, decides=decides, scale=scale,
                    power=needs("3 or more rounds at 3 or more positions: `linrnn report --out DIR`"))
    below = replace(stats.exponent_clustered(x, y, cluster, TOKEN_EXPONENT_BOUND),
                    name="least-squares exponent of per-token time against t (log-log), rounds as clusters")
    above = _above(x, y, cluster, TOKEN_EXPONENT_BOUND)
    medians = [sorted(col)[len(col) // 2] for col in zip(*row["us"])]
    text = (f"{backend} {kind}, step mode: one token's {row['clock']} at t = {', '.join(map(str, positions))} "
            f"(median of the {row['block']} tokens ending there, {len(row['us'])} staggered rounds): "
            + ", ".join(f"{v:.4g}" for v in medians) + " us; " + below.words("exponent"))
    if below.significant:
        verdict, why, first = "verified", f": below {TOKEN_EXPONENT_BOUND:g}, no token's time grows with t", below
    elif above.significant:
        verdict, why, first = "contradicted", (f": above {TOKEN_EXPONENT_BOUND:g} (one-sided p = {above.p:.2g}), "
                                               "one token's time grows with t"), above
    else:
        verdict, why, first = "inconclusive", f": not shown below {TOKEN_EXPONENT_BOUND:g}", below
    return Part(SOURCE, verdict, text + why, part=name, decides=decides, scale=scale,
                against=above if decides else None, **tested(first, above if first is below else below),
                power=needs("more rounds on a quieter machine: `linrnn report --out DIR`")
                if verdict == "inconclusive" else None)


def d9_parts(backend: str, kind: str, counted: dict | None, timed: dict | None) -> list[Part]:
    """One step's parts: the counted one, and the timed one, which decides in PyTorch and wherever the count
    cannot be read, and is supporting evidence (a side finding) where a JAX program is read whole."""
    missing = needs("the step measured token by token: `linrnn report --out DIR` measures it")
    count = (counted_part(backend, kind, counted) if counted is not None else
             Part(SOURCE, "inconclusive", f"{backend} {kind}: no count of the step", part=f"O(L) inference: "
                  f"{backend} {kind}", power=missing))
    read = count.decides and count.verdict != "inconclusive"
    decides = backend == "torch" or not read
    clock = (timed_part(backend, kind, timed, decides) if timed is not None else
             Part(SOURCE, "inconclusive", f"{backend} {kind}: no per-token timing of the step", power=missing,
                  part=f"O(L) inference, per token: {backend} {kind}", decides=decides))
    if decides:
        return [count, clock]
    return [count] + side([clock], "the jaxpr reads the whole step; the timing supports the count")
