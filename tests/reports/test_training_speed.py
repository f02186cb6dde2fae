"""The training-speed sweep and its report section, at tiny sizes (no timing is asserted, only structure).

- the sweep returns one well-formed row per (implementation, direction, L), and its ratios are the
  rows' own times divided as documented (recomputed here from the rows, never compared with literals);
- the budget stops an implementation's longer lengths, and says so;
- peak memory: `PeakRSS` counts touched pages only, and the fresh-process probe returns a positive
  number that grows with L;
- a missing peer becomes a skip reason naming the extra to install;
- the section renders from a stored sweep (a small generated file) and lists a bad file as skipped.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

from linrnn.cli import main as cli_main
from linrnn.experiments import training_speed as ts
from linrnn.experiments.memory_probe import probe_memory
from linrnn.base import results
from linrnn.verify.bench import DIRECTIONS, PeakRSS, input_bytes
from linrnn.base.errors import LinrnnError
from linrnn.reports.render import render
from linrnn.reports.results import read_results, write_result
from linrnn.reports.sections import training_speed as section

pytestmark = pytest.mark.slow   # half a minute or more in all: the workers take this file early (conftest.py)

TINY = dict(batch=1, width=8, state=8, heads=2)
KEYS = {"framework", "implementation", "direction", "L", "ms", "repeats", "peak_bytes", "peak_over_BLH4",
        "xla_bytes", "skipped", "over_gemm_floor", "over_s5_pytorch"}


def check_ratios(rows: list[dict], B: int, H: int) -> None:
    """Every derived number equals its definition, recomputed from the rows' own ms and peak_bytes."""
    ms = {(r["framework"], r["implementation"], r["direction"], r["L"]): r["ms"] for r in rows}
    for r in rows:
        gemm = ms.get((r["framework"], ts.GEMM, r["direction"], r["L"]))
        s5 = ms.get(("torch", ts.S5, r["direction"], r["L"]))
        expect = {"over_gemm_floor": None if r["ms"] is None or not gemm else r["ms"] / gemm,
                  "over_s5_pytorch": None if r["ms"] is None or not s5 else r["ms"] / s5,
                  "peak_over_BLH4": None if r["peak_bytes"] is None else r["peak_bytes"] / (B * r["L"] * H * 4)}
        for key, want in expect.items():
            got = r[key]
            assert (got is None) == (want is None), (key, r)
            assert got is None or math.isclose(got, want, rel_tol=1e-12), (key, r, want)


@pytest.fixture(scope="module")
def tiny_sweep():
    """PyTorch: LRU and the GEMM floor; JAX: the GEMM floor only (a layer's compilation costs seconds here;
    the JAX layer's forward+backward builder is exercised in `test_the_builders_run_and_differentiate`)."""
    calls = []
    result = ts.sweep(lengths=(16, 32), frameworks=("torch",), mixers=("lru",), peers=False, memory=False,
                      progress=lambda done, total, what: calls.append((done, total, what)), **TINY)
    jax = ts.sweep(lengths=(16, 32), frameworks=("jax",), mixers=(), peers=False, memory=False, **TINY)
    return {**result, "rows": result["rows"] + jax["rows"]}, calls


def test_sweep_rows_are_well_formed(tiny_sweep):
    result, calls = tiny_sweep
    rows = result["rows"]
    expected = {(f, i, d, L) for f, impls in (("torch", ("lru scan", ts.GEMM)), ("jax", (ts.GEMM,)))
                for i in impls for d in DIRECTIONS for L in (16, 32)}
    assert {(r["framework"], r["implementation"], r["direction"], r["L"]) for r in rows} == expected
    assert len(rows) == len(expected) and all(set(r) == KEYS for r in rows)
    assert all(r["skipped"] is None and r["ms"] > 0 and r["repeats"] >= 1 for r in rows)
    assert all(isinstance(r["xla_bytes"], int) for r in rows if r["framework"] == "jax")
    assert calls[-1][:2] == (8, 8) and len({what for _, _, what in calls}) == 9
    c = result["config"]
    assert (c["B"], c["H"], c["N"], c["heads"], c["lengths"], c["memory"]) == (1, 8, 8, 2, [16, 32], None)
    json.dumps(result, allow_nan=False)                   # plain JSON


def test_sweep_ratios_come_from_the_rows(tiny_sweep):
    result, _ = tiny_sweep
    check_ratios(result["rows"], 1, 8)
    assert all(r["over_gemm_floor"] == 1.0 for r in result["rows"] if r["implementation"] == ts.GEMM)
    ms = {(r["framework"], r["implementation"], r["direction"], r["L"]): r["ms"] for r in result["rows"]}
    growth = ts.scaling(result["rows"], (16, 32))
    assert len(growth) == 6 and all(g["ratio"] == ms[(g["framework"], g["implementation"], g["direction"], 32)]
                                    / ms[(g["framework"], g["implementation"], g["direction"], 16)] for g in growth)
    assert result["scaling"] == []                        # the default pair (4096, 65536) was not run


def test_the_ratio_check_catches_a_planted_bug(tiny_sweep):
    """Dividing by the other direction's GEMM floor (a plausible slip) is caught by `check_ratios`."""
    rows = [dict(r) for r in tiny_sweep[0]["rows"]]
    floor = {(r["framework"], r["L"], r["direction"]): r["ms"] for r in rows if r["implementation"] == ts.GEMM}
    for r in rows:
        other = DIRECTIONS[1 - DIRECTIONS.index(r["direction"])]
        r["over_gemm_floor"] = r["ms"] / floor[(r["framework"], r["L"], other)]
    with pytest.raises(AssertionError):
        check_ratios(rows, 1, 8)


def test_the_budget_stops_longer_lengths():
    result = ts.sweep(lengths=(8, 16, 32), frameworks=("torch",), mixers=("lru",), peers=False, memory=False,
                      budget_s=0.0, **TINY)
    for key in {(r["implementation"], r["direction"]) for r in result["rows"]}:
        rows = sorted((r for r in result["rows"] if (r["implementation"], r["direction"]) == key),
                      key=lambda r: r["L"])
        assert rows[0]["ms"] is not None and rows[0]["skipped"] is None
        assert all(r["ms"] is None and "over the budget of 0 s" in r["skipped"] and "L = 8" in r["skipped"]
                   for r in rows[1:])


def test_interleaved_rounds_call_every_case_in_turn_and_keep_each_ones_median(monkeypatch):
    """Built first, warmed once each, then one call of every case per round; the ratios from the medians."""
    log, clock = [], iter(range(10**6))
    monkeypatch.setattr(ts.time, "perf_counter", lambda: float(next(clock)))

    def fake_build(spec, before_inputs=None):
        name = spec["arg"] or spec["builder"]
        log.append(("built", name, spec["direction"], spec["L"]))
        return (lambda: log.append(("call", name, spec["direction"]))), {}

    monkeypatch.setattr(ts, "build", fake_build)
    rows = ts.interleaved(L=64, mixers=("lru", "dlr"), peers=False, rounds=3, **TINY)
    names = ["lru:scan", "dlr:conv", "dlr:scan", "gemm"]
    for direction in DIRECTIONS:
        mine = [e for e in log if e[2] == direction]
        assert mine == ([("built", n, direction, 64) for n in names] + [("call", n, direction) for n in names] * 4)
    assert [(r["implementation"], r["direction"]) for r in rows] == [
        (i, d) for d in DIRECTIONS for i in ("lru scan", "dlr conv", "dlr scan", ts.GEMM)]
    # the fake clock advances one second per read, so every timed call lasted 1 s: a median of 1e3 ms
    assert all(r["ms"] == 1e3 and r["rounds"] == 3 and r["round_ms"] == [1e3] * 3 for r in rows)
    assert all(r["over_gemm_floor"] == 1.0 and r["over_gemm_floor_range"] == [1.0, 1.0] for r in rows)
    assert all(r["over_s5_pytorch"] is None and r["over_s5_pytorch_range"] is None for r in rows)   # no s5-pytorch
    with pytest.raises(LinrnnError, match="rounds: expected at least 1"):
        ts.interleaved(rounds=0)


def test_interleaved_ratios_are_the_median_of_each_rounds_ratio_not_a_ratio_of_medians(monkeypatch):
    """A spell that slows the layer in one round and the floor in another: the ratio within each round is kept."""
    durations = {"lru:scan": [9, 2, 2, 6], "gemm": [9, 1, 3, 3]}     # warm-up, then three rounds (seconds)
    now = [0.0]
    monkeypatch.setattr(ts.time, "perf_counter", lambda: now[0])

    def fake_build(spec, before_inputs=None):
        left = list(durations[spec["arg"] or spec["builder"]])
        return (lambda: now.__setitem__(0, now[0] + left.pop(0))), {}

    monkeypatch.setattr(ts, "build", fake_build)
    rows = ts.interleaved(L=64, mixers=("lru",), peers=False, rounds=3, **TINY)     # each direction alike
    for direction in DIRECTIONS:
        lru, floor = (next(r for r in rows if (r["implementation"], r["direction"]) == (name, direction))
                      for name in ("lru scan", ts.GEMM))
        assert lru["round_ms"] == [2e3, 2e3, 6e3] and lru["ms"] == 2e3 and floor["ms"] == 3e3
        assert lru["over_gemm_floor"] == 2.0 and lru["over_gemm_floor_range"] == [2 / 3, 2.0]   # rounds: 2, 2/3, 2
        assert lru["ms"] / floor["ms"] == 2 / 3                                                 # medians: 2 / 3


def test_interleaved_ratios_divide_by_the_same_directions_floor_and_peer():
    rows = ts.interleaved(L=32, mixers=("lru",), peers=False, rounds=2, **TINY)
    floor = {r["direction"]: r["round_ms"] for r in rows if r["implementation"] == ts.GEMM}
    for r in rows:
        ratios = [t / f for t, f in zip(r["round_ms"], floor[r["direction"]])]
        assert r["ms"] > 0 and math.isclose(r["over_gemm_floor"], sum(ratios) / 2, rel_tol=1e-12)
        assert r["over_gemm_floor_range"] == [min(ratios), max(ratios)]
    result = {"rows": [], "config": {"B": 1, "H": 8, "N": 8, "heads": 2, "dtype": "float32", "device": "cpu",
                                     "memory": None}, "targets": [], "interleaved": rows}
    assert "Interleaved rounds at L = 32" in ts.markdown(result) and "| lru scan | forward |" in ts.markdown(result)


def test_peak_rss_counts_touched_pages_only():
    probe = PeakRSS()
    probe.start()
    reserved = np.empty(64 * 2**20, dtype=np.uint8)       # allocated, never written: not resident
    untouched = probe.peak_bytes()
    touched = np.ones(64 * 2**20, dtype=np.uint8)          # 64 MiB written
    peak = probe.peak_bytes()
    del reserved, touched
    assert untouched < 16 * 2**20 <= 48 * 2**20 < peak


def test_memory_probe_grows_with_length():
    spec = {"framework": "torch", "builder": "gemm", "arg": "", "direction": "forward+backward", "B": 2,
            "H": 64, "N": 64, "heads": 16, "dtype": "float32", "device": "cpu"}
    peaks = {}
    for L in (2048, 32768):
        peaks[L], reason = probe_memory({**spec, "L": L}, ts.BUILD)
        assert reason is None and peaks[L] > 0
    assert peaks[32768] > 4 * peaks[2048]                   # 16x the length: coarse on purpose
    assert peaks[32768] >= 3 * input_bytes(2, 32768, 64)   # u, its gradient and y at least


def test_a_missing_peer_is_a_skip_reason(monkeypatch):
    from linrnn.verify import peers_torch as peers

    monkeypatch.setitem(sys.modules, "s5", None)           # `import s5` now raises ImportError
    reason = peers.missing_reason("s5-pytorch")
    assert reason is not None and "install linrnn[peers]" in reason and "s5-pytorch" in reason
    with pytest.raises(LinrnnError, match=r"install linrnn\[peers\]"):
        peers.make_layer("s5-pytorch", 8, 8)
    monkeypatch.setitem(sys.modules, "LRU_pytorch", None)
    result = ts.sweep(lengths=(8,), frameworks=("torch",), mixers=("lru",), peers=True, memory=False, **TINY)
    peer_rows = [r for r in result["rows"] if r["implementation"] in ts.PEERS]
    assert len(peer_rows) == 4 and all(r["ms"] is None and "install linrnn[peers]" in r["skipped"]
                                       for r in peer_rows)
    assert all(r["over_s5_pytorch"] is None for r in result["rows"])


def test_the_device_cases_name_the_kernels():
    """On CUDA the sweep adds the scan alone: plain device code and kernel, the kernel with its reason if absent."""
    names = {c.implementation: c for c in ts.cases("cuda", mixers=("lru",), peers=False)}
    assert {"scan alone (chunked)", "scan alone (triton)", "scan alone (lax.scan)", "scan alone (pallas)"} <= set(names)
    assert names["scan alone (chunked)"].unavailable is None and names["scan alone (lax.scan)"].unavailable is None
    for kernel in ("triton", "pallas"):                      # no CUDA here: each says why it cannot run
        reason = names[f"scan alone ({kernel})"].unavailable
        assert reason is None or f"{kernel} scan" in reason
    assert not any("scan alone" in c.implementation for c in ts.cases("cpu", mixers=("lru",), peers=False))


def _leaves(out) -> list:
    if isinstance(out, dict):
        return [x for v in out.values() for x in _leaves(v)]
    if isinstance(out, (tuple, list)):
        return [x for v in out for x in _leaves(v)]
    return [np.asarray(out.detach()) if hasattr(out, "detach") else np.asarray(out)]


@pytest.mark.parametrize("framework, builder, arg, directions, input_shape", [
    ("torch", "scan", "chunked", DIRECTIONS, (2, 5, 4, 2)),           # v (B L n 2) real pairs
    ("jax", "scan", "sequential", DIRECTIONS, (2, 5, 4)),             # v (B L n) complex
    ("jax", "layer", "lru:scan", ("forward+backward",), (2, 5, 4))])  # u (B L H)
def test_the_builders_run_and_differentiate(framework, builder, arg, directions, input_shape):
    """The scans alone (the sweep times them on CUDA) and the JAX layer's gradient, at a tiny size."""
    for direction in directions:
        call, info = ts.build({"framework": framework, "builder": builder, "arg": arg, "direction": direction,
                               "B": 2, "L": 5, "H": 4, "N": 4, "heads": 2, "dtype": "float32", "device": "cpu"})
        leaves = _leaves(call())
        assert info["direction"] == direction and all(np.all(np.isfinite(x)) for x in leaves)
        if direction == "forward+backward":
            assert any(x.shape == input_shape for x in leaves)             # the input's gradient is among them


def test_the_two_harnesses_share_their_builders_signatures():
    """The sweep calls either side's builders with one set of arguments: same names, same defaults."""
    import inspect

    from linrnn.verify import bench_jax as jax_bench
    from linrnn.verify import bench_torch as torch_bench

    for name in ("make_forward", "make_forward_backward", "make_gemm_floor", "make_scan_alone"):
        t, j = (inspect.signature(getattr(m, name)).parameters for m in (torch_bench, jax_bench))
        assert list(t) == list(j), name
        assert [p.default for p in t.values()] == [p.default for p in j.values()], name


# -- the report section ---------------------------------------------------------------------------

def synthetic_sweep() -> dict:
    """A stored sweep's result at the issue's lengths without running anything: ms and peaks from formulas."""
    B, H = 8, 128
    rows = []
    for framework, impls in (("torch", ("lru scan", ts.GEMM, ts.S5)), ("jax", ("lru scan", ts.GEMM))):
        for k, impl in enumerate(impls):
            for d, direction in enumerate(DIRECTIONS):
                for L in ts.LENGTHS:
                    oom = impl == ts.S5 and L == ts.LENGTHS[-1]
                    rows.append({"framework": framework, "implementation": impl, "direction": direction, "L": L,
                                 "ms": None if oom else (1 + k) * (1 + 2 * d) * L / 1000 * (1 + (L > 16384)),
                                 "repeats": 0 if oom else 3, "xla_bytes": None,
                                 "peak_bytes": None if oom else (2 + k + d) * input_bytes(B, L, H),
                                 "skipped": "out of memory: the probe process was killed by signal 9" if oom else None})
    ts.derive(rows, B, H)
    config = {"device": "cpu", "lengths": list(ts.LENGTHS), "B": B, "H": H, "N": 128, "heads": 16,
              "dtype": "float32", "memory": {"torch": "fresh-process peak RSS growth"}, "budget_s": None}
    return {"rows": rows, "config": config, "scaling": ts.scaling(rows), "targets": ts.targets(rows)}


def test_the_section_renders_from_a_stored_sweep(tmp_path, monkeypatch):
    stored = tmp_path / "results"
    stored.mkdir()
    result = synthetic_sweep()
    result["interleaved"] = [{"implementation": "lru scan", "direction": "forward+backward", "L": 4096, "ms": 123.4,
                              "rounds": 7, "over_gemm_floor": 1.87, "over_s5_pytorch": 0.29, "skipped": None},
                             {"implementation": "rotrnn scan", "direction": "forward+backward", "L": 4096, "ms": 98.7,
                              "rounds": 7, "round_ms": [98.7] * 7, "over_gemm_floor": 1.51,
                              "over_gemm_floor_range": [1.25, 1.75], "over_s5_pytorch": 0.21,
                              "over_s5_pytorch_range": [0.17, 0.33], "skipped": None}]
    result["growth_rounds"] = [{"implementation": "lru scan", "direction": "forward+backward", "from_L": 4096,
                                "to_L": 65536, "linear": 16.0, "ms": [150.0, 2300.0], "rounds": 7, "ratio": 15.3,
                                "ratio_range": [12.0, 18.0]}]
    results.write(stored / "training_speed_test.json", ts.stored_record(result, "python -m x --out y"))
    broken = ts.stored_record({**result, "interleaved": [{"implementation": "lru scan"}]}, "python -m x")
    results.write(stored / "training_speed_broken.json", broken)
    (stored / "training_speed_bad.json").write_text('{"schema_version": 2, "kind": "something else"}')
    monkeypatch.setattr(section, "STORED_DIR", stored)
    live = synthetic_sweep()
    monkeypatch.setattr(section, "sweep", lambda **kwargs: live)         # no live timing in this test
    data, config = section.compute(True, lambda *args: None)
    write_result(tmp_path / "out", section.NAME, data, {**config, "quick": True})
    html = render(read_results([tmp_path / "out"], [section.NAME]), (section,), tmp_path / "page").read_text()

    lru = next(t for t in data["stored"][0]["sweep"]["targets"] if t["implementation"] == "lru scan"
               and t["framework"] == "torch")
    ms = {(r["implementation"], r["direction"], r["L"]): r["ms"] for r in result["rows"] if r["framework"] == "torch"}
    fwd_bwd = "forward+backward"
    assert lru["fwd_bwd_growth"] == ms[("lru scan", fwd_bwd, 65536)] / ms[("lru scan", fwd_bwd, 4096)]
    assert lru["forward_over_s5"] == ms[("lru scan", "forward", 4096)] / ms[(ts.S5, "forward", 4096)]
    assert lru["forward_over_gemm"] == ms[("lru scan", "forward", 4096)] / ms[(ts.GEMM, "forward", 4096)]
    assert lru["peak_L"] == 262144 and lru["peak_over_BLH4"] == 3.0
    assert f">{lru['fwd_bwd_growth']:.1f}<" in html and f">{lru['forward_over_s5']:.2f}<" in html
    assert "training_speed_test.json" in html and "training_speed_bad.json" in html and "kind: expected" in html
    assert ">123.4<" in html and ">0.29<" in html and "interleaved rounds" in html
    assert ">0.21 <span class=\"range\">(0.17–0.33)</span><" in html and "(1.25–1.75)" in html
    assert "the median over the rounds of the ratio within a round" in html
    assert "The growth target in 7 interleaved rounds" in html and "(12.0–18.0)" in html
    assert "| rotrnn scan | forward+backward | 98.7 | 1.51 (1.25-1.75) | 0.21 (0.17-0.33) |" in ts.markdown(result)
    assert "training_speed_broken.json" in html and "sweep.interleaved[0]: expected an object with" in html
    assert "out of memory: the probe process was killed by signal 9" in html and "python -m x --out y" in html
    assert html.count("<svg") == 3                          # stored time, stored memory, live time
    assert "<script" not in html
    assert "| torch | lru scan |" in ts.markdown(result)


def test_the_section_says_how_to_produce_a_missing_stored_sweep(tmp_path, monkeypatch):
    monkeypatch.setattr(section, "STORED_DIR", tmp_path)
    monkeypatch.setattr(section, "sweep", lambda **kwargs: synthetic_sweep())
    data, config = section.compute(False, lambda *args: None)
    write_result(tmp_path / "out", section.NAME, data, config)
    html = render(read_results([tmp_path / "out"], [section.NAME]), (section,), tmp_path / "page").read_text()
    assert data["stored"] == [] and 'id="training-speed-no-stored"' in html
    assert "linrnn bench training-speed --out" in html


def test_growth_rounds_time_both_lengths_in_every_round_and_divide_within_a_round(monkeypatch):
    """Calls at both lengths interleaved; the growth is the median of the rounds' t(long) / t(short)."""
    durations = {("lru:scan", 16): [9, 1, 1, 2], ("lru:scan", 64): [9, 4, 8, 4],   # warm-up, then 3 rounds (s)
                 ("gemm", 16): [9, 1, 2, 1], ("gemm", 64): [9, 4, 4, 4]}
    now, order = [0.0], []
    monkeypatch.setattr(ts.time, "perf_counter", lambda: now[0])

    def fake_build(spec, before_inputs=None):
        key = (spec["arg"] or spec["builder"], spec["L"])
        left = list(durations[key])
        return (lambda: (order.append(key), now.__setitem__(0, now[0] + left.pop(0)))), {}

    monkeypatch.setattr(ts, "build", fake_build)
    rows = ts.growth_rounds(lengths=(16, 64), mixers=("lru",), rounds=3, **TINY)
    assert order == list(durations) * 4                                   # warm-up, then each round in turn
    lru, floor = rows
    assert (lru["implementation"], floor["implementation"]) == ("lru scan", ts.GEMM)
    assert lru["ratio"] == 4.0 and lru["ratio_range"] == [2.0, 8.0] and lru["ms"] == [1e3, 4e3]   # rounds 4, 8, 2
    assert floor["ratio"] == 4.0 and floor["ratio_range"] == [2.0, 4.0] and floor["linear"] == 4.0
    assert "| lru scan | 4.0 (2.0-8.0) | 1000.0 | 4000.0 |" in ts.growth_markdown(rows)
    with pytest.raises(LinrnnError, match="rounds: expected at least 1"):
        ts.growth_rounds(rounds=0)
    for lengths in [(4096,), (65536, 4096), (4096, 65536.0)]:
        with pytest.raises(LinrnnError, match="lengths: expected two positive integers, shorter first"):
            ts.growth_rounds(lengths=lengths)
    with pytest.raises(LinrnnError, match="direction"):
        ts.growth_rounds(direction="backward")


def test_the_command_checks_its_rounds_first_and_stores_the_rounds_and_growth(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ts, "SCALING", (16, 64))
    with pytest.raises(LinrnnError, match="--growth-rounds: expected 0 or more, found -1"):
        ts.main(["--growth-rounds", "-1", "--lengths", "16"])            # refused before any timing
    out = tmp_path / "sweep.json"
    options = ["--out", str(out), "--lengths", "16,64", "--batch", "1", "--width", "8", "--state", "8", "--heads", "2",
               "--frameworks", "torch", "--mixers", "lru", "--no-peers", "--no-memory", "--interleaved-rounds", "2",
               "--growth-rounds", "2"]
    assert cli_main(["bench", "training-speed", *options]) == 0
    record = json.loads(out.read_text())
    assert results.read(out, results.TrainingSpeedRecord).sweep == record["sweep"]
    assert ts.check_stored(record) is None and [p.name for p in tmp_path.iterdir()] == ["sweep.json"]
    assert record["command"] == " ".join(["linrnn", "bench", "training-speed", *options])   # the command as typed
    growth = record["sweep"]["growth_rounds"]
    assert [r["implementation"] for r in growth] == ["lru scan", ts.GEMM]
    assert all((r["from_L"], r["to_L"], r["rounds"]) == (16, 64, 2) and r["ratio"] > 0 for r in growth)
    assert {r["rounds"] for r in record["sweep"]["interleaved"]} == {2}
    assert "t(64) / t(16) in 2 interleaved rounds" in capsys.readouterr().out
    broken = {**record, "sweep": {**record["sweep"], "growth_rounds": [{"implementation": "lru scan"}]}}
    assert ts.check_stored(broken).startswith("sweep.growth_rounds[0]: expected an object with")


def test_a_case_is_followed_by_a_full_collection_only_where_its_garbage_could_count(monkeypatch):
    collections_ = []
    monkeypatch.setattr(ts.gc, "collect", lambda *args: collections_.append(args))
    ts._collect(8, 4096, 128)                 # the sweep's sizes at L = 4096: 16 MiB of input
    assert len(collections_) == 1
    ts._collect(8, 1024, 128)
    ts._collect(1, 32, 8)
    assert len(collections_) == 1
