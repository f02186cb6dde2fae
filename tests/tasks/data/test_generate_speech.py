"""The espeak-ng Speech Commands generator: the dataset's split rule, determinism, the layout round trip."""

from __future__ import annotations

import argparse
import hashlib
import shutil
import wave

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cli as data_cli
from linrnn.tasks.data import speech
from linrnn.tasks.data.generate import GENERATORS
from linrnn.tasks.data.generate import speech as gen

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None,
                                  reason="espeak-ng is not installed: apt-get install espeak-ng")


def data_command(argv: list[str]) -> int:
    """`linrnn data ...` through the data CLI alone (the main CLI maps a LinrnnError to exit 2)."""
    parser = argparse.ArgumentParser()
    data_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["data", *argv])
    try:
        return args.func(args)
    except LinrnnError:
        return 2


def test_which_set_is_the_datasets_rule():
    # the speaker decides, not the repetition; TensorFlow's formula: sha1 mod 2^27 scaled to [0, 100]
    assert gen.which_set("3cfc6b3a_nohash_0.wav") == gen.which_set("right/3cfc6b3a_nohash_4.wav")
    ids = [hashlib.sha1(str(i).encode()).hexdigest()[:8] for i in range(3000)]
    sets = [gen.which_set(f"{s}_nohash_0.wav") for s in ids]
    share = {name: sets.count(name) / len(sets) for name in ("validation", "testing", "training")}
    assert abs(share["validation"] - 0.1) < 0.02 and abs(share["testing"] - 0.1) < 0.02  # 3.6 sigma
    # hand-computed for one name: sha1("c0ffee00") mod 2^27, scaled
    digest = int(hashlib.sha1(b"c0ffee00").hexdigest(), 16)
    percent = (digest % 2 ** 27) * (100.0 / (2 ** 27 - 1))
    expected = "validation" if percent < 10 else "testing" if percent < 20 else "training"
    assert gen.which_set("c0ffee00_nohash_1.wav") == expected


def test_missing_espeak_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(gen.shutil, "which", lambda name: None)
    with pytest.raises(LinrnnError) as err:
        gen.generate(tmp_path / "out", 1, 1, 1, seed=0)
    assert str(err.value) == "espeak-ng is not installed: apt-get install espeak-ng"
    assert data_command(["generate", "speech", "--out", str(tmp_path / "cli"), "--n-train", "1", "--n-val", "1",
                         "--n-test", "1"]) == 2
    assert not (tmp_path / "out").exists() and not (tmp_path / "cli").exists()


def test_registered():
    assert "speech" in GENERATORS


def files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@needs_espeak
def test_same_seed_same_bytes_whatever_the_workers(tmp_path):
    a = gen.generate(tmp_path / "a", 2, 1, 1, seed=3, words=("yes", "six"), workers=1)
    gen.generate(tmp_path / "b", 2, 1, 1, seed=3, words=("yes", "six"), workers=2)
    gen.generate(tmp_path / "c", 2, 1, 1, seed=4, words=("yes", "six"), workers=2)
    fa, fb, fc = (files(tmp_path / x / gen.FOLDER) for x in "abc")
    assert a["clips"] == 8 and len([f for f in fa if f.endswith(".wav") and "_nohash_" in f]) == 8
    assert fa == fb
    assert fa != fc


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed: apt-get install espeak-ng")
    out = tmp_path_factory.mktemp("speech")
    summary = gen.generate(out, 1, 1, 1, seed=0)
    return out / gen.FOLDER, summary


@needs_espeak
def test_layout_sample_rate_duration_and_lists(corpus):
    root, summary = corpus
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == sorted([*speech.CLASSES_35, "_background_noise_"])
    assert len(list((root / "_background_noise_").glob("*.wav"))) == 3
    lengths = []
    for path in sorted(root.glob("*/*_nohash_*.wav")):
        with wave.open(str(path), "rb") as handle:
            assert (handle.getframerate(), handle.getnchannels(), handle.getsampwidth()) == (16000, 1, 2)
            lengths.append(handle.getnframes())
            samples = np.frombuffer(handle.readframes(handle.getnframes()), "<i2")
        assert np.abs(samples).max() > 3000  # a spoken word, not silence
    assert len(lengths) == 105 and max(lengths) == 16000
    assert 0 < sum(n < 16000 for n in lengths) < 105  # some short clips, as in the real data
    listed = {}
    for name, expected in (("validation_list.txt", "validation"), ("testing_list.txt", "testing")):
        for line in (root / name).read_text().splitlines():
            assert (root / line).is_file() and gen.which_set(line) == expected
            listed[line] = expected
    for path in root.glob("*/*_nohash_*.wav"):
        rel = path.relative_to(root).as_posix()
        assert gen.which_set(rel) == listed.get(rel, "training")  # split by speaker, the dataset's rule
    assert summary["speakers"] == 3


@needs_espeak
@pytest.mark.parametrize("task", ["sc35", "sc10"])
def test_round_trip_through_data_check(corpus, task, capsys, tmp_path):
    root, _ = corpus
    assert data_command(["check", str(root.parent), "--task", task, "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "no problems found" in out
    if task == "sc10":
        assert "dropped short" in out
