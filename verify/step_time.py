"""The time of one token of a stream at several positions, in interleaved rounds (claim D9's timed part).

    us = token_times(make, positions=(32, 128, 512), block=16, rounds=5)
    us[r][i]      round r's median time (microseconds) of the `block` tokens ending at positions[i]

`make()` returns a fresh stream (an object whose `advance(t)` runs token t, waits for it and keeps the state:
`linrnn.verify.step_count_torch.TorchStream`, `linrnn.verify.step_count_jax.JaxStream`). It sees what no count
does: Python or NumPy work outside the framework, such as a history kept in the layer object.

A stream visits its positions in order, so a machine that slows down during a stream would look like a step that
slows with t. The rounds are therefore staggered: round r's stream starts r/R of the way along (run there untimed
first), all rounds advance one token in turn, and a stream that reaches the end starts again, fresh, at token 0.
Every round times every position once, and at any moment the rounds are spread over the whole stream, so a slow
spell falls on early and late positions alike. The clock is the process's CPU time by default (a neighbour's turn
on a shared CPU does not inflate it).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

from linrnn.base.errors import LinrnnError


def _check(positions: Sequence[int], block: int, rounds: int) -> None:
    if rounds < 1 or block < 1:
        raise LinrnnError(f"token_times: expected at least 1 round and a block of 1 token, found {rounds}, {block}")
    if list(positions) != sorted(set(positions)) or positions[0] < block:
        raise LinrnnError(f"positions: expected increasing positions, the first at least the block ({block}), "
                          f"found {list(positions)}")


def token_times(make: Callable[[], object], positions: Sequence[int], block: int, rounds: int,
                clock: Callable[[], float] = time.process_time) -> list[list[float]]:
    """Per round, per position p: the median time in microseconds of tokens p - block + 1 .. p (token 0, which
    makes the state, is never timed). A stream runs tokens 0..max(positions)."""
    _check(positions, block, rounds)
    end = positions[-1]
    timed = {t: i for i, p in enumerate(positions) for t in range(p - block + 1, p + 1)}
    samples = [[[] for _ in positions] for _ in range(rounds)]
    streams, at = [], []
    for r in range(rounds):                      # round r starts r / rounds of the way along, untimed
        streams.append(make())
        at.append(r * (end + 1) // rounds)
        for t in range(at[r]):
            streams[r].advance(t)
    for _ in range(end + 1):
        for r in range(rounds):
            if at[r] > end:                      # the end: a fresh stream from token 0
                streams[r], at[r] = make(), 0
            t = at[r]
            start = clock()
            streams[r].advance(t)
            elapsed = clock() - start
            if t in timed:
                samples[r][timed[t]].append(1e6 * elapsed)
            at[r] += 1
    return [[statistics.median(s) for s in per_round] for per_round in samples]
