"""The peers' CPU routes as timed calls (`linrnn.verify.bench_peers`): each builds at the shapes asked, its call returns
finite numbers of the right shape in both directions (a peer that is not installed is skipped with its reason), each
peer is read against the project's route of its contract, and bad input is one line. No test looks at a time."""

from __future__ import annotations

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.verify import bench_peers

pytest.importorskip("torch")
B, L, H, N = 2, 8, 3, 2


def _array(out):
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in _array(o)]
    if hasattr(out, "detach"):
        out = out.detach()
    return [np.asarray(out)]


@pytest.mark.parametrize("name", [n for n, r in bench_peers.ROUTES.items() if r.framework == "torch"])
@pytest.mark.parametrize("direction", ["forward", "forward+backward"])
def test_every_torch_route_runs_at_the_shapes_asked(name, direction):
    why = bench_peers.missing(name)
    if why:
        pytest.skip(why)
    call, info = bench_peers.make_route(name, direction, B, L, H, N)
    out = _array(call())
    assert out and all(np.all(np.isfinite(a)) for a in out)
    assert info["route"] == name and info["direction"] == direction and info["B"] == B and info["L"] == L
    if direction == "forward":
        route = bench_peers.ROUTES[name]
        lanes = 2 * N if name in ("fla-hgrn-naive", "mamba-ssm-ref", "linrnn varying scan, real") else N
        expected = (B, L, H) if route.family == "layer" else (B, lanes, L) if name == "mamba-ssm-ref" else \
            (B, N, L, 2) if name == "accelerated-scan-ref" else (B, L, lanes) if lanes == 2 * N else (B, L, N, 2)
        assert out[0].shape == expected, (name, out[0].shape)


def test_a_jax_peer_and_its_yardstick_run_in_both_directions():
    pytest.importorskip("jax")
    for name in ("linrnn lax.scan", "recurrentgemma"):
        why = bench_peers.missing(name)
        if why:
            pytest.skip(why)
        for direction in ("forward", "forward+backward"):
            out = _array(bench_peers.make_route(name, direction, B, L, H, N)[0]())
            assert out and all(np.all(np.isfinite(a)) for a in out)
            if direction == "forward":
                assert out[0].shape == (B, L, N)


@pytest.mark.parametrize("name", ["linrnn varying scan, real", "torch-associative-scan", "mambapy",
                                  "accelerated-scan-ref"])
def test_a_group_of_real_varying_decays_gives_every_route_2n_real_lanes(name):
    why = bench_peers.missing(name)
    if why:
        pytest.skip(why)
    call, info = bench_peers.make_route(name, "forward", B, L, H, N, varying=True, real=True)
    out = _array(call())[0]
    assert info["varying"] and info["real"] and np.isrealobj(out) and np.all(np.isfinite(out))
    assert out.shape == ((B, 2 * N, L) if name == "accelerated-scan-ref" else (B, L, 2 * N)), (name, out.shape)
    assert bench_peers.yardstick(name, varying=True, real=True) in (None, "linrnn varying scan, real")


def test_every_peer_is_read_against_the_projects_route_of_its_contract():
    for name, route in bench_peers.ROUTES.items():
        yard = bench_peers.yardstick(name)
        if route.own:
            assert yard is None and not route.target
            continue
        own = bench_peers.ROUTES[yard]
        assert own.own and own.framework == route.framework and own.family == route.family, name
        if route.family == "scan":                       # a varying a: the project's scan with a transition per position
            varying = bench_peers.ROUTES[bench_peers.yardstick(name, varying=True)]
            assert varying.own and varying.framework == route.framework and "varying" in varying.name, name
        if route.family == "layer":                      # the LRU peers against the LRU, the S5 ones against the S5
            assert yard.split()[1] in ("lru" if "lru" in name else "s5",), name
        from linrnn.verify.conform import PEERS
        assert route.target in PEERS, name


def test_bad_input_is_one_line(monkeypatch):
    with pytest.raises(LinrnnError, match=r"^route: expected one of linrnn lru scan, .*, found 'nope'$"):
        bench_peers.make_route("nope", "forward", B, L, H, N)
    with pytest.raises(LinrnnError, match=r"^direction: expected one of forward, forward\+backward, found 'up'$"):
        bench_peers.make_route("mambapy", "up", B, L, H, N)
    with pytest.raises(LinrnnError, match=r"^dtype: expected float32 \(the peers compute in float32\), found 'float64'$"):
        bench_peers.make_route("mambapy", "forward", B, L, H, N, dtype="float64")
    with pytest.raises(LinrnnError, match=r"^L: expected a positive integer, found 0$"):
        bench_peers.make_route("mambapy", "forward", B, 0, H, N)
    monkeypatch.setattr("linrnn.verify.conform.unavailable", lambda target: f"{target} is not installed (here)")
    assert bench_peers.missing("linrnn chunked scan") is None
    with pytest.raises(LinrnnError, match=r"^mambapy is not installed \(here\)$"):
        bench_peers.make_route("mambapy", "forward", B, L, H, N)
