"""Claim D9's check (`linrnn.experiments.step_cost`) against steps written here, each O(t) in a way an older check
missed, and against the project's DLR step, which must still be verified:

- a JAX step with `lax.fori_loop(0, t)` over a counter kept in its state (XLA's cost analysis counted the loop's
  body once): its program cannot be read, and the per-token timing decides, contradicted;
- a PyTorch step doing O(t) NumPy work on a history kept in the layer object (the operator count never sees it):
  the count holds, the per-token timing decides, contradicted;
- a PyTorch step with a Python loop over t of tensor operations: the count itself grows, contradicted;
- the jaxpr reading multiplies loops through, takes a cond's costliest branch and names what it cannot read;
- the staggered rounds time every position once per round; the rule on rows whose numbers are set here.

Streams are short (256 tokens); the planted steps' O(t) work is a convolution over the whole history, which
passes a token's constant work well before the last position timed.
"""

from __future__ import annotations

import numpy as np
import pytest

from linrnn.experiments import speed, step_cost
from linrnn.reports import ledger

SIZES = {"B": 4, "H": 64, "N": 64, "heads": 8}
POSITIONS, BLOCK, ROUNDS, TOKENS = (16, 64, 256), step_cost.TOKEN_BLOCK, step_cost.TOKEN_ROUNDS, 32


def diagonal_rnn(H: int, N: int, seed: int = 0):
    """lambda (N) complex inside the unit circle, B (N H) and C (H N) complex: h_t = lambda h_{t-1} + B u_t,
    y_t = Re(C h_t)."""
    rng = np.random.default_rng(seed)
    lam = rng.uniform(0.8, 0.99, N) * np.exp(1j * rng.uniform(0, np.pi, N))
    B = (rng.standard_normal((N, H)) + 1j * rng.standard_normal((N, H))) / np.sqrt(2 * H)
    C = (rng.standard_normal((H, N)) + 1j * rng.standard_normal((H, N))) / np.sqrt(N)
    return lam.astype(np.complex64), B.astype(np.complex64), C.astype(np.complex64)


class NumpyHistoryRNN:
    """A PyTorch step that keeps every input in the layer object and recomputes y_t as the convolution of that
    history with the kernel C lambda^k B, in NumPy: right outputs, O(t) work per token that no ATen operator does.
    The state it returns (the recurrence's h, a few tensor operations) is the same size at every token."""

    def __init__(self, H: int, N: int):
        import torch

        self.lam, self.B, self.C = diagonal_rnn(H, N)
        self.history: list[np.ndarray] = []
        self.torch_lam, self.torch_B = torch.from_numpy(self.lam), torch.from_numpy(self.B)

    def step(self, u_t, state=None):
        import torch

        self.history.append(u_t.numpy())
        U = np.stack(self.history[::-1])                            # (t B H), the latest first
        decay = self.lam[None, :] ** np.arange(len(self.history))[:, None]   # (t N)
        x = np.einsum("kn,kbn->bn", decay, U @ self.B.T)           # (B N): h_t by convolution
        y = torch.from_numpy((x @ self.C.T).real)
        h = torch.zeros(u_t.shape[0], len(self.lam), dtype=torch.complex64) if state is None else state
        return y, self.torch_lam * h + u_t.to(torch.complex64) @ self.torch_B.T


class TorchLoopRNN(NumpyHistoryRNN):
    """The same convolution in tensor operations, a Python loop over the history: O(t) ATen operators per token."""

    def step(self, u_t, state=None):
        import torch

        self.history.append(u_t.to(torch.complex64))
        x = torch.zeros(u_t.shape[0], len(self.lam), dtype=torch.complex64)
        for k, u in enumerate(reversed(self.history)):
            x = x + self.torch_lam ** k * (u @ self.torch_B.T)
        h = torch.zeros_like(x) if state is None else state
        return (x @ torch.from_numpy(self.C).T).real, self.torch_lam * h + u_t.to(torch.complex64) @ self.torch_B.T


def torch_make(layer_class, tokens: int):
    import torch

    from linrnn.verify.step_count_torch import TorchStream

    u = torch.from_numpy(np.random.default_rng(1).standard_normal((SIZES["B"], tokens + 1, SIZES["H"]))
                         .astype(np.float32))
    return lambda: TorchStream(layer_class(SIZES["H"], SIZES["N"] // 2), u)     # N 32: its O(t) work still dominates


def jax_fori_loop_make(tokens: int):
    """A JAX step whose state keeps g_t = sum_k lambda^-k B u_k and the counter t, and recomputes lambda^t at every
    token by `lax.fori_loop(0, t)` over the whole (B H N) decay: O(t) work per token from a counter in the state."""
    import jax
    import jax.numpy as jnp

    from linrnn.verify.step_count_jax import JaxStep, JaxStream

    lam, B, C = (jnp.asarray(x) for x in diagonal_rnn(SIZES["H"], SIZES["N"]))
    lam_bhn = jnp.broadcast_to(lam, (SIZES["B"], SIZES["H"], SIZES["N"]))     # (B H N)

    def step(params, u_t, state):
        g, t = (jnp.zeros((u_t.shape[0], SIZES["N"]), jnp.complex64), jnp.int32(0)) if state is None else state
        power = jax.lax.fori_loop(0, t, lambda i, p: p * lam_bhn, jnp.ones_like(lam_bhn))[0, 0]   # lambda^t (N)
        g = g + (u_t.astype(jnp.complex64) @ B.T) / power
        return ((power * g) @ C.T).real, (g, t + 1)

    u = jnp.asarray(np.random.default_rng(1).standard_normal((SIZES["B"], tokens + 1, SIZES["H"])), jnp.float32)
    shared = JaxStep(step)
    return lambda: JaxStream(shared, None, u)


def measured(backend: str, make) -> tuple[dict, dict]:
    counted, timed = step_cost.measure(backend, make, TOKENS, POSITIONS, BLOCK, ROUNDS)
    return {"backend": backend, "mixer": "dlr", **counted}, {"backend": backend, "mixer": "dlr", **timed}


@pytest.fixture(scope="module")
def faithful():
    """The project's DLR step in both backends, measured as the speed section measures it (shorter streams)."""
    return {b: measured(b, step_cost.streams(b, "dlr", POSITIONS[-1], SIZES)) for b in ("torch", "jax")}


def d9(rows: dict) -> tuple[str, list]:
    data = {"step_rounds": [], "step_structure": [r[0] for r in rows.values()],
            "step_tokens": [r[1] for r in rows.values()]}
    claim = next(r for r in ledger.build({"speed": [{"section": "speed", "meta": {"machine": {"label": "here"},
                                                                                    "config": {}}, "data": data}]})
                 if r["id"] == "D9")
    return claim["verdict"], [p for p in claim["parts"] if p["decides"]]


def test_the_faithful_dlr_step_is_verified_by_its_count_and_its_per_token_time(faithful):
    verdict, deciding = d9(faithful)
    assert verdict == "verified", [p["evidence"] for p in deciding]
    assert [p["part"] for p in deciding] == ["O(L) inference: torch dlr", "O(L) inference, per token: torch dlr",
                                             "O(L) inference: jax dlr"]
    assert all(p["verdict"] == "verified" for p in deciding)
    torch_count, jax_count = faithful["torch"][0], faithful["jax"][0]
    assert len(set(torch_count["ops"])) == 1 and len(set(jax_count["elements"])) == 1 and jax_count["programs"] == 1


def test_a_jax_fori_loop_over_a_counter_in_the_state_is_unreadable_and_its_timing_contradicts(faithful):
    rows = {"torch": faithful["torch"], "jax": measured("jax", jax_fori_loop_make(POSITIONS[-1]))}
    verdict, deciding = d9(rows)
    assert verdict == "contradicted"
    assert "O(L) inference: jax dlr" not in [p["part"] for p in deciding]      # the count cannot read the loop
    count = step_cost.counted_part("jax", "dlr", rows["jax"][0])
    assert not count.decides and "a while loop at" in count.evidence and "test_step_cost.py" in count.evidence
    assert "trip count is decided at run time" in count.evidence
    timed = next(p for p in deciding if p["part"] == "O(L) inference, per token: jax dlr")
    assert timed["verdict"] == "contradicted" and "one token's time grows with t" in timed["evidence"]
    assert timed["ci"][0] > step_cost.TOKEN_EXPONENT_BOUND


def test_numpy_work_on_a_history_in_the_layer_object_passes_the_count_and_fails_the_timing(faithful):
    rows = {"torch": measured("torch", torch_make(NumpyHistoryRNN, POSITIONS[-1])), "jax": faithful["jax"]}
    verdict, deciding = d9(rows)
    assert verdict == "contradicted"
    count, timed = deciding[0], deciding[1]
    assert count["part"] == "O(L) inference: torch dlr" and count["verdict"] == "verified"   # NumPy is not counted
    assert timed["part"] == "O(L) inference, per token: torch dlr" and timed["verdict"] == "contradicted"
    assert "one token's time grows with t" in timed["evidence"] and timed["effect"] > 0.3


def test_a_python_loop_over_t_of_tensor_operations_grows_the_count():
    from linrnn.verify.step_count_torch import count_stream

    counted = count_stream(torch_make(TorchLoopRNN, 8), 8)
    part = step_cost.counted_part("torch", "dlr", counted)
    assert part.verdict == "contradicted" and part.decides
    assert "grows with t: ops per token" in part.evidence and "elements per token" in part.evidence
    assert counted["ops"][-1] > counted["ops"][0] + 8


# -- the jaxpr reading -----------------------------------------------------------------------------------------

def read(fn, *args) -> dict:
    import jax

    from linrnn.verify.step_count_jax import read_jaxpr

    return read_jaxpr(jax.make_jaxpr(fn)(*args))


def test_the_jaxpr_reading_multiplies_loop_bodies_by_their_trip_counts_nested_loops_through():
    import jax
    import jax.numpy as jnp

    x = jnp.ones((4, 8))
    once = read(lambda x: x * 2.0 + 1.0, x)
    loop = read(lambda x: jax.lax.fori_loop(0, 8, lambda i, y: y * 2.0 + 1.0, x), x)
    nested = read(lambda x: jax.lax.scan(lambda c, _: (jax.lax.fori_loop(0, 4, lambda i, y: y * 2.0 + 1.0, c), None),
                                         x, None, length=3)[0], x)
    assert once["elements"] == 2 * 32 and not once["unreadable"]
    assert loop["elements"] == 8 * once["elements"] + 8          # the body's two writes, and the counter's
    assert [lp["trips"] for lp in nested["loops"]] == [3, 12] and nested["elements"] == 3 * (4 * 65)
    branch = read(lambda x, b: jax.lax.cond(b, lambda y: jnp.sin(y) * 2.0 + 1.0, lambda y: y, x), x, True)
    assert branch["elements"] == 3 * 32 + 1                       # the costlier branch, and the predicate's index
    solve = read(jnp.linalg.solve, jnp.eye(4) * 2.0, jnp.ones(4))  # a custom_linear_solve: its solve, once
    assert solve["ops"] > 0 and not solve["unreadable"]


def test_the_jaxpr_reading_names_what_it_cannot_read():
    import jax
    import jax.numpy as jnp

    x, n = jnp.ones(8), jnp.int32(5)
    dynamic = read(lambda x, n: jax.lax.fori_loop(0, n, lambda i, y: y * 2.0, x), x, n)
    assert len(dynamic["unreadable"]) == 1 and "trip count is decided at run time" in dynamic["unreadable"][0]
    host = read(lambda x: jax.pure_callback(lambda v: np.asarray(v) * 2, jax.ShapeDtypeStruct((8,), jnp.float32), x),
                x)
    assert "host callback (pure_callback)" in host["unreadable"][0] and "Python work" in host["unreadable"][0]


# -- the staggered rounds and the rule on rows set here -------------------------------------------------------

class FakeStream:
    """Each token takes t units of a fake clock."""

    clock = [0.0]

    def advance(self, t: int) -> None:
        FakeStream.clock[0] += t * 1e-6


def test_every_round_times_every_position_once_and_the_rounds_are_staggered():
    from linrnn.verify.step_time import token_times

    calls, streams = [], []

    class Recorded(FakeStream):
        def __init__(self):
            streams.append(self)

        def advance(self, t):
            calls.append(t)
            super().advance(t)

    us = token_times(Recorded, (4, 8, 16), 4, 4, clock=lambda: FakeStream.clock[0])
    assert np.allclose(us, [[2.5, 6.5, 14.5]] * 4)                  # the median of tokens p-3..p, in every round
    assert len(calls) == 4 * 17 + (4 + 8 + 12)                      # every token once a round, and the untimed start
    assert calls[24:28] == [0, 4, 8, 12]                            # the rounds spread over the stream ...
    assert len(streams) == 4 + 3                                    # ... and each but the first starts again fresh


def timed_row(exponent: float, noise: float = 0.02, rounds: int = 5) -> dict:
    """us = 100 t^exponent at TOKEN_POSITIONS, times log-normal noise; noise None: a wiggle (+, -, -, +) of a size
    that differs between rounds and has no trend in log t, so the fitted exponent is `exponent` exactly."""
    rng = np.random.default_rng(0)
    wiggle = [[0.05 * (r + 1) * s for s in (1, -1, -1, 1)] for r in range(rounds)]
    return {"positions": list(step_cost.TOKEN_POSITIONS), "block": 16, "clock": "process CPU time", "rounds": rounds,
            "us": [[100.0 * p ** exponent * np.exp(rng.normal(0, noise) if noise is not None else w)
                    for p, w in zip(step_cost.TOKEN_POSITIONS, wiggle[r])] for r in range(rounds)]}


@pytest.mark.parametrize("exponent, noise, rounds, verdict", [
    (0.0, 0.02, 5, "verified"), (0.5, 0.02, 5, "contradicted"),
    (0.1, None, 5, "inconclusive"),                   # exactly at the bound: neither side shown
    (0.0, 0.02, 2, "inconclusive")])                  # too few rounds to fit
def test_the_per_token_exponent_decides_by_a_one_sided_test_each_way(exponent, noise, rounds, verdict):
    part = step_cost.timed_part("torch", "dlr", timed_row(exponent, noise, rounds), decides=True)
    assert part.verdict == verdict
    if rounds >= 3:
        assert part.against is not None and part.against.note.startswith("one-sided p that the exponent is above")
        assert part.tests[0]["effect"] == pytest.approx(part.effect) and len(part.tests) == 2
    if verdict == "inconclusive":
        assert part.power["assumption"]


def counted_row(ops: list, unreadable=(), programs=None) -> dict:
    return {"reading": "set here", "positions": list(range(1, len(ops) + 1)), "ops": ops, "flops": None,
            "elements": [10 * x for x in ops], "state_bytes": [64] * len(ops), "state_shapes": [[[4, 4]]],
            "programs": programs, "loops": [], "unreadable": list(unreadable)}


@pytest.mark.parametrize("ops, unreadable, programs, verdict, decides, words", [
    ([5] * 8, (), 1, "verified", True, "the same counted work"),
    ([5, 6, 7, 8, 9, 10, 11, 12], (), None, "contradicted", True, "grows with t: ops per token 5, 6"),
    ([5, 9, 5, 9, 5, 9, 5, 5], (), None, "inconclusive", False, "cannot be read: ops per token"),
    ([5] * 8, ("a while loop at x.py:3",), 1, "inconclusive", False, "cannot be read: a while loop at x.py:3"),
    ([5] * 8, (), 2, "inconclusive", False, "2 programs in one stream")])
def test_the_count_verifies_contradicts_or_hands_over_to_the_timing(ops, unreadable, programs, verdict, decides, words):
    part = step_cost.counted_part("jax", "dlr", counted_row(ops, unreadable, programs))
    assert (part.verdict, part.decides) == (verdict, decides) and words in part.evidence


def test_an_unreadable_jax_count_makes_its_timing_decide_and_a_readable_one_keeps_it_a_side_finding():
    readable = step_cost.d9_parts("jax", "dlr", counted_row([5] * 8, programs=1), timed_row(0.0))
    unreadable = step_cost.d9_parts("jax", "dlr", counted_row([5] * 8, ("a while loop",), 1), timed_row(0.0))
    torch = step_cost.d9_parts("torch", "dlr", counted_row([5] * 8), timed_row(0.0))
    assert [p.decides for p in readable] == [True, False]
    assert [p.decides for p in unreadable] == [False, True]
    assert [p.decides for p in torch] == [True, True]


def test_older_records_counted_per_call_decide_nothing_and_say_how_to_measure_again():
    old = {"backend": "torch", "mixer": "dlr", "L": 4, "calls": 4, "ops": 400, "flops": 4000.0, "elements": 2000,
           "bytes_accessed": None, "programs": None, "state_bytes": 2048, "state_shapes": [[4, 64, 64]]}
    parts = speed.settle_d9({"step_rounds": [], "step_structure": [old]})
    deciding = [p for p in parts if p.decides]
    assert {p.verdict for p in deciding} == {"inconclusive"}
    assert "older code" in deciding[0].evidence and "linrnn report --out DIR" in deciding[1].power["assumption"]
