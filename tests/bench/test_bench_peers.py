"""Speed beside the peers (`pytest --benchmark -k peers`): every published peer's CPU route beside the project's route of
the same contract, at the same shapes, forward and forward+backward, in interleaved rounds, as ratios.

One benchmark per group and direction of `linrnn.experiments.peer_speed.GROUPS` (the full sizes: B = 8, L = 4096,
H = N = 128; the peers that loop over the positions in Python at B = 2, L = 256, beside the project's routes there): pytest-benchmark times the group's rounds as
one call (its time says how long the rounds took, nothing more); the rows, each peer's ratio to its yardstick with its
range over the rounds, go into the benchmark's extra_info and, at the end of the session, into the terminal summary
(tests/bench/conftest.py) and `$LINRNN_BENCH_PEERS` or FILE.peers.json beside --benchmark-json FILE (the record
`linrnn bench peers --out` writes). A peer that is not installed is a row that says why. Never asserts on a timing:
only that every route that could run was timed and every peer's ratio was read.
"""

import pytest

from linrnn.experiments import peer_speed

ROUNDS = 5


@pytest.mark.bench
@pytest.mark.parametrize("direction", ["forward", "forward+backward"])
@pytest.mark.parametrize("group", peer_speed.GROUPS, ids=lambda g: g["name"].replace(", ", "-").replace(" ", "_"))
def test_peers_beside_the_projects_routes(benchmark, peer_rows, group, direction):
    rows = benchmark.pedantic(peer_speed.group_rounds, args=(group, direction, ROUNDS), rounds=1, iterations=1)
    peer_rows.extend(rows)
    benchmark.extra_info.update({"group": group["name"], "direction": direction, "rounds": ROUNDS,
                                 "sizes": group["sizes"], "rows": rows})
    ran = [r for r in rows if r["skipped"] is None]
    assert all(r["rounds"] == ROUNDS and len(r["round_ms"]) == ROUNDS for r in ran)
    assert all(r["ratio"] is not None for r in ran if not r["own"])
