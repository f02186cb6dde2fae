"""Speed beside the peers (`linrnn.experiments.peer_speed`), on routes whose times are set here (no clock is read):

- each peer's ratio is the median over the rounds of its time over its yardstick's in the same round, with the range;
- the reading: the project faster, the peer faster, or undecided (within 10 % of 1, or a range across 1);
- a peer that is not installed, or fails to build, is a row that says why, and its group's others are still timed;
- the stored record round-trips, a bad one is a reason; the command checks its rounds first;
- the report's training-speed section shows the stored record and, in the quick report, why there are no live rounds.
"""

from __future__ import annotations

import pytest

from linrnn.experiments import peer_speed
from linrnn.base.errors import LinrnnError
from linrnn.verify import bench_peers

GROUP = peer_speed.group("scans, PyTorch", ("linrnn chunked scan", "mambapy", "fla-hgrn-naive", "mamba-ssm-ref"),
                         2, 8, 4, 4)
# ms per round: mambapy 2x the yardstick in every round; fla-hgrn-naive 1.05x (undecided); mamba-ssm-ref 0.5x
TIMES = {"linrnn chunked scan": [10.0, 20.0, 10.0], "mambapy": [20.0, 40.0, 20.0],
         "fla-hgrn-naive": [10.5, 21.0, 10.5], "mamba-ssm-ref": [5.0, 11.0, 4.0]}


@pytest.fixture
def fake(monkeypatch):
    built = []

    def make_route(name, direction, B, L, H, N, dtype="float32", seed=0, varying=False, real=False):
        if name == "fla-hgrn-naive" and direction == "forward+backward":
            raise RuntimeError("planted: no backward\nsecond line")
        built.append((name, direction, B, L, H, N) + ((varying, real) if varying or real else ()))
        return (lambda: None), {}

    def interleaved_ms(calls, repeats, clock=None):
        import time

        import torch

        assert repeats == 3 and clock is time.process_time      # the default: this process's CPU time
        built.append(("threads while timing", torch.get_num_threads()))
        return {name: TIMES[name] for name in calls}

    monkeypatch.setattr(bench_peers, "make_route", make_route)
    monkeypatch.setattr(bench_peers, "missing", lambda name: None)
    monkeypatch.setattr(peer_speed, "interleaved_ms", interleaved_ms)
    return built


def test_ratios_ranges_and_readings(fake):
    import torch

    before = torch.get_num_threads()
    rows = {r["route"]: r for r in peer_speed.group_rounds(GROUP, "forward", 3)}
    assert fake[-1] == ("threads while timing", 1) and torch.get_num_threads() == before
    assert [b[:2] for b in fake[:-1]] == [(n, "forward") for n in GROUP["routes"]] and fake[0][2:] == (2, 8, 4, 4)
    own, twice, near, half = (rows[n] for n in GROUP["routes"])
    assert own["own"] and own["ratio"] is None and own["yardstick"] is None and own["ms"] == 10.0
    assert twice["yardstick"] == "linrnn chunked scan" and twice["ratio"] == 2.0 and twice["ratio_range"] == [2.0, 2.0]
    assert twice["ms"] == 20.0 and twice["rounds"] == 3 and twice["round_ms"] == TIMES["mambapy"]
    assert near["ratio"] == pytest.approx(1.05) and half["ratio"] == 0.5 and half["ratio_range"] == [0.4, 0.55]
    assert [peer_speed.reading(r) for r in (twice, near, half)] == ["the project faster", "undecided",
                                                                   "the peer faster"]
    assert peer_speed.reading({"ratio": 1.5, "ratio_range": [0.9, 2.0]}) == "undecided"     # a range across 1
    assert peer_speed.reading(own) == "-"


def test_a_varying_group_builds_its_routes_varying_and_reads_them_against_the_varying_scan(fake):
    TIMES.update({"linrnn varying scan, real": [10.0, 10.0, 10.0]})
    group = peer_speed.group("varying", ("linrnn varying scan, real", "mambapy"), 2, 8, 4, 4, varying=True, real=True)
    rows = {r["route"]: r for r in peer_speed.group_rounds(group, "forward", 3)}
    assert [b[-2:] for b in fake[:-1]] == [(True, True), (True, True)]           # varying and real, every route
    assert rows["mambapy"]["yardstick"] == "linrnn varying scan, real" and rows["mambapy"]["ratio"] == 2.0
    assert rows["mambapy"]["varying"] and rows["mambapy"]["real"]


def test_a_peer_that_fails_or_is_missing_says_why_and_the_others_are_timed(fake, monkeypatch):
    rows = {r["route"]: r for r in peer_speed.group_rounds(GROUP, "forward+backward", 3)}
    assert rows["fla-hgrn-naive"]["skipped"] == "failed: RuntimeError: planted: no backward"
    assert rows["fla-hgrn-naive"]["ms"] is None and rows["fla-hgrn-naive"]["ratio"] is None
    assert rows["mambapy"]["ratio"] == 2.0 and rows["mamba-ssm-ref"]["ratio"] == 0.5
    monkeypatch.setattr(bench_peers, "missing", lambda name: f"{name}: not installed (here)"
                        if name == "mambapy" else None)
    rows = {r["route"]: r for r in peer_speed.group_rounds(GROUP, "forward", 3)}
    assert rows["mambapy"]["skipped"] == "mambapy: not installed (here)" and rows["mambapy"]["ms"] is None
    assert "mambapy" not in [b[0] for b in fake[-4:]]
    with pytest.raises(LinrnnError, match="^clock: expected one of cpu, wall, found 'sun'$"):
        peer_speed.group_rounds(GROUP, "forward", 3, clock="sun")
    with pytest.raises(LinrnnError, match=r"^threads: expected 0 \(PyTorch's own\) or more, found -1$"):
        peer_speed.measure((GROUP,), 3, threads=-1)
    text = peer_speed.markdown({"rows": list(rows.values()), "config": {
        "rounds": 3, "torch_threads": 1, "clock": "cpu", "load_average": [1.0, 1.0, 1.0], "groups": [GROUP]}})
    assert text.startswith("3 interleaved rounds per group and direction, float32, CPU (1 PyTorch threads, this "
                           "process's CPU time), load average - at the start and [1.0, 1.0, 1.0] at the end"), text
    assert "| mambapy / linrnn chunked scan | - | not run | - | - | -; - not run: mambapy: not installed (here) |" \
        in text, text
    assert "| mamba-ssm-ref / linrnn chunked scan | 5.00 | 0.50 (0.40-0.55) |" in text, text
    assert "| linrnn chunked scan (yardstick) | 10.0 | - |" in text, text
    with pytest.raises(LinrnnError, match="^rounds: expected at least 1, found 0$"):
        peer_speed.group_rounds(GROUP, "forward", 0)


def test_the_stored_record_round_trips_and_a_bad_one_is_a_reason(fake, tmp_path):
    from linrnn.base.results import write

    result = peer_speed.measure((GROUP,), 3)
    assert len(result["rows"]) == 8 and result["config"]["rounds"] == 3
    write(tmp_path / peer_speed.STORED, peer_speed.stored_record(result, "linrnn bench peers --out X"))
    stored, why = peer_speed.load_stored(tmp_path)
    assert why is None and stored["command"] == "linrnn bench peers --out X" and stored["file"] == peer_speed.STORED
    assert stored["result"]["rows"][1]["ratio"] == 2.0 and "mambapy" in stored["libraries"]
    stored, why = peer_speed.load_stored(tmp_path / "none")
    assert stored is None and why == f"no stored record ({peer_speed.STORED}): `{peer_speed.COMMAND}` writes it"
    bad = {**peer_speed.stored_record(result, "x").sweep}
    bad["peers"] = {"rows": [{"route": "mambapy"}], "config": {}}
    from linrnn.base.results import TrainingSpeedRecord
    write(tmp_path / peer_speed.STORED, TrainingSpeedRecord(sweep=bad))
    stored, why = peer_speed.load_stored(tmp_path)
    assert stored is None and why.startswith(f"{peer_speed.STORED}: sweep.peers.rows[0]: expected an object with ")


def test_the_command_checks_its_rounds_before_timing(cli):
    assert cli.error_line("bench", "peers", "--rounds", "0") == \
        "linrnn bench: error: --rounds: expected 1 or more, found 0"
    assert cli.error_line("bench", "peers", "--clock", "sun") == \
        "linrnn bench: error: --clock: expected one of cpu, wall, found 'sun'"
    assert cli.error_line("bench", "peers", "--threads", "-2") == \
        "linrnn bench: error: --threads: expected 0 (PyTorch's own) or more, found -2"


def test_the_section_shows_the_stored_record_and_why_the_quick_report_has_no_live_rounds(fake, tmp_path, monkeypatch):
    from linrnn.base.results import write
    from linrnn.reports.render import render
    from linrnn.reports.results import read_results, write_result
    from linrnn.reports.sections import training_speed as section

    write(tmp_path / peer_speed.STORED, peer_speed.stored_record(peer_speed.measure((GROUP,), 3), "linrnn bench peers"))
    monkeypatch.setattr(section, "STORED_DIR", tmp_path)
    part = section.peers(True, lambda *a: None)
    assert part["live"] is None and part["live_omitted"] == section.PEERS_QUICK_OMITTED
    assert section.peers_headline(part) == (
        f"Beside the peers ({peer_speed.STORED}, 3 interleaved rounds), forward+backward, the peer's time over the "
        "project's route of the same contract: mambapy 2.00, mamba-ssm-ref 0.50.")
    data = {"live": {"rows": [], "config": {"B": 2, "H": 4, "N": 4, "heads": 2, "dtype": "float32", "lengths": [8],
                                            "budget_s": 2.0, "memory": None}},
            "stored": [], "stored_skipped": [], "peers": part, "plots": {}}
    write_result(tmp_path / "out", section.NAME, data, {"stored_dir": "x", "stored_glob": "y", "command": "z"})
    page = render(read_results([tmp_path / "out"], [section.NAME]), (section,), tmp_path / "page").read_text()
    html = page[page.index('<h3 id="training-speed-peers">'):]
    assert "Stored record <code>peer_speed_cpu.json</code>" in html and "<code>linrnn bench peers</code>" in html
    assert "<td>mambapy</td><td>linrnn chunked scan</td>" in html and "2.00 <span class=\"range\">(2.00–2.00)" in html
    assert "the project faster; the project faster" in html and "the peer faster; the peer faster" in html
    assert "not run: failed: RuntimeError: planted: no backward" in html
    assert "Live rounds beside the peers: left out of the quick report" in html
