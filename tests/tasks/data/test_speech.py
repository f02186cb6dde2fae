"""Speech Commands loaders (SC35, SC10, MFCC) on small WAVs written here in the exact v0.02 format."""

from __future__ import annotations

import wave

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import assert_close
from linrnn.tasks.data import load, speech

RATE = 16000


def write_wav(path, samples, rate=RATE, channels=1, width=2):
    """A RIFF/WAVE PCM file as the dataset's, with the standard library."""
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = np.asarray(samples)
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(channels)
        handle.setsampwidth(width)
        handle.setframerate(rate)
        dtype = {1: np.uint8, 2: "<i2"}[width]
        handle.writeframes(np.ascontiguousarray(samples, dtype=dtype).tobytes())


def clip(seed, n=RATE):
    return np.random.default_rng(seed).integers(-3000, 3000, size=n).astype(np.int16)


def make_root(tmp_path, clips: dict[str, np.ndarray], val=(), test=()):
    """A Speech Commands root: all 35 word folders, the given clips, the lists, a noise folder."""
    root = tmp_path / "speech_commands_v0.02"
    for word in speech.CLASSES_35:
        (root / word).mkdir(parents=True, exist_ok=True)
    for rel, samples in clips.items():
        write_wav(root / rel, samples)
    write_wav(root / "_background_noise_" / "white_noise.wav", clip(99, 3 * RATE))
    (root / "validation_list.txt").write_text("".join(f"{r}\n" for r in val))
    (root / "testing_list.txt").write_text("".join(f"{r}\n" for r in test))
    return root


@pytest.fixture
def sc35_root(tmp_path):
    clips = {"bed/aaaa0000_nohash_0.wav": clip(0), "bed/bbbb0000_nohash_0.wav": clip(1),
             "zero/aaaa0000_nohash_0.wav": clip(2, 8000),  # short: padded
             "yes/cccc0000_nohash_0.wav": clip(3), "backward/aaaa0000_nohash_0.wav": clip(4),
             "yes/dddd0000_nohash_0.wav": clip(5), "backward/dddd0000_nohash_1.wav": clip(6)}
    root = make_root(tmp_path, clips, val=["yes/dddd0000_nohash_0.wav"], test=["backward/dddd0000_nohash_1.wav"])
    return root, clips


def test_sc35_class_order_lists_and_zero_padding(sc35_root, tmp_path):
    root, clips = sc35_root
    train = load("sc35", tmp_path, "train", normalise="none")  # found below the folder given
    assert train.source == root
    order = ["backward/aaaa0000_nohash_0.wav", "bed/aaaa0000_nohash_0.wav", "bed/bbbb0000_nohash_0.wav",
             "yes/cccc0000_nohash_0.wav", "zero/aaaa0000_nohash_0.wav"]
    # S4's ALL_CLASSES order, not alphabetical: bed 0, yes 16, backward 17, zero 34; clips by word order
    assert speech.CLASSES_35.index("backward") == 17 and speech.CLASSES_35[16] == "yes"
    assert train.arrays["labels"].tolist() == [0, 0, 16, 17, 34]
    expected = np.zeros((5, RATE))
    by_label = sorted(order, key=lambda r: (speech.CLASSES_35.index(r.split("/")[0]), r))
    for row, rel in enumerate(by_label):
        expected[row, :len(clips[rel])] = clips[rel] / 32768.0
    assert train.arrays["samples"].shape == (5, RATE) and train.arrays["samples"].dtype == np.float32
    assert_close("sc35 samples", expected, train.arrays["samples"], "identity", "float32")
    assert train.arrays["clip_lengths"].tolist() == [RATE, RATE, RATE, RATE, 8000]
    assert np.all(train.arrays["samples"][4, 8000:] == 0)  # zero-padded at the end
    assert train.manifest["extra"]["padded"] == 1
    val = load("sc35", root, "val", normalise="none")
    test = load("sc35", root, "test", normalise="none")
    assert val.arrays["labels"].tolist() == [16] and test.arrays["labels"].tolist() == [17]


def test_sc35_normalisation_uses_train_statistics(sc35_root):
    root, _ = sc35_root
    raw = {s: np.asarray(load("sc35", root, s, normalise="none").arrays["samples"], dtype=np.float64)
           for s in ("train", "val")}
    for kind in ("s4", "global"):
        train = load("sc35", root, "train", normalise=kind)
        val = load("sc35", root, "val", normalise=kind)
        if kind == "s4":  # S4's loop over the last axis of (n 1 16000): one mu, sigma per time step
            mu, sigma = raw["train"].mean(axis=0), raw["train"].std(axis=0, ddof=1)
        else:
            mu, sigma = np.array([raw["train"].mean()]), np.array([raw["train"].std(ddof=1)])
        assert_close(f"{kind} mu", mu, train.arrays["mu"], "identity", "float64", length=1)
        assert_close(f"{kind} sigma", sigma, train.arrays["sigma"], "identity", "float64")
        for split, values in (("train", train), ("val", val)):
            want = (raw[split] - mu) / (sigma + speech.EPS)
            assert_close(f"{kind} {split}", want, values.arrays["samples"], "identity", "float32")
        summary = train.manifest["extra"]["normalisation"]
        assert summary["kind"] == kind and summary["mu"]["count"] == mu.size
        assert val.manifest["key"]["train_mu_sha256"] == summary["mu"]["sha256"]


def test_sc35_val_rebuilds_when_train_changes(sc35_root):
    root, _ = sc35_root
    first = load("sc35", root, "val")
    assert first.built and not load("sc35", root, "val").built
    write_wav(root / "bed" / "bbbb0000_nohash_0.wav", clip(42))  # new train data, new statistics
    again = load("sc35", root, "val")
    assert again.built
    assert again.manifest["key"]["train_mu_sha256"] != first.manifest["key"]["train_mu_sha256"]


@pytest.mark.parametrize("name, writer, message", [
    ("rate", lambda p: write_wav(p, clip(0, 8000), rate=8000), "expected a sample rate of 16000 Hz, found 8000 Hz"),
    ("stereo", lambda p: write_wav(p, np.repeat(clip(0), 2), channels=2), "expected mono (1 channel), found 2"),
    ("8bit", lambda p: write_wav(p, np.full(RATE, 128), width=1), "expected 16-bit samples, found 8-bit"),
    ("truncated", lambda p: (write_wav(p, clip(0)), p.write_bytes(p.read_bytes()[:20000])),
     "truncated: the header announces 16000 samples"),
    ("garbage", lambda p: p.write_bytes(b"RIFF\x00\x00"), "not a readable WAV file"),
])
def test_bad_wav_is_one_line_error_naming_the_file(tmp_path, name, writer, message):
    root = make_root(tmp_path, {"yes/aaaa0000_nohash_0.wav": clip(0), "no/aaaa0000_nohash_0.wav": clip(1)})
    writer(root / "cat" / "bad00000_nohash_0.wav")
    with pytest.raises(LinrnnError) as err:
        load("sc35", root, "train")
    text = str(err.value)
    assert "\n" not in text and text.startswith("cat/bad00000_nohash_0.wav: ") and message in text
    assert not (root / ".linrnn-cache" / "sc35-raw" / "train").exists()  # nothing half-written is trusted


def test_check_lists_every_problem_one_line_each(tmp_path):
    root = make_root(tmp_path, {"yes/aaaa0000_nohash_0.wav": clip(0), "no/aaaa0000_nohash_0.wav": clip(1),
                                "up/aaaa0000_nohash_0.wav": clip(2)}, val=["up/aaaa0000_nohash_0.wav", "up/gone_nohash_0.wav"])
    write_wav(root / "cat" / "rate0000_nohash_0.wav", clip(0, 8000), rate=8000)
    write_wav(root / "dog" / "ster0000_nohash_0.wav", np.repeat(clip(1), 2), channels=2)
    write_wav(root / "hello" / "aaaa0000_nohash_0.wav", clip(3))  # a label folder not in the class list
    problems = speech.check(root, variant="sc35")
    joined = "\n".join(problems)
    for needle in ("cat/rate0000_nohash_0.wav: expected a sample rate", "dog/ster0000_nohash_0.wav: expected mono",
                   "hello/: a label folder not among the 35", "validation_list.txt: line 2: up/gone_nohash_0.wav does not exist"):
        assert needle in joined, needle
    assert all("\n" not in p for p in problems)
    with pytest.raises(LinrnnError, match="hello/: a label folder"):
        load("sc35", root, "val")


def test_missing_word_folder_and_list_are_named(tmp_path):
    root = make_root(tmp_path, {"yes/aaaa0000_nohash_0.wav": clip(0)})
    (root / "testing_list.txt").unlink()
    with pytest.raises(LinrnnError, match="testing_list.txt not found"):
        load("sc35", root, "test")
    (root / "visual").rmdir()
    with pytest.raises(LinrnnError, match=r"missing word folder\(s\) visual/"):
        load("sc35", root, "train")
    (root / "no").rmdir()  # SC10 does not need visual/, but it needs no/
    with pytest.raises(LinrnnError, match=r"missing word folder\(s\) no/ in"):
        load("sc10", root, "train")


def test_split_sizes_rule():
    assert speech.split_sizes(34975) == (24482, 5246, 5247)  # S4's asserted count -> sklearn's sizes
    for n in (3, 10, 27, 101, 1000):
        assert sum(speech.split_sizes(n)) == n


def test_sc10_drops_short_clips_ignores_lists_and_stratifies(tmp_path):
    clips, counts = {}, {}
    for i, word in enumerate(speech.CLASSES_10):
        counts[word] = 8 + 3 * i
        for k in range(counts[word]):
            clips[f"{word}/{i:04d}{k:04d}_nohash_0.wav"] = clip(100 * i + k)
        clips[f"{word}/short{i:03d}_nohash_0.wav"] = clip(7, 12000)  # dropped
    clips["cat/aaaa0000_nohash_0.wav"] = clip(5)  # not one of the 10 words
    every_yes = sorted(r for r in clips if r.startswith("yes/") and "short" not in r)
    root = make_root(tmp_path, clips, val=every_yes)  # the official lists must not matter
    n = sum(counts.values())
    parts = {s: load("sc10", root, s, normalise="none") for s in ("train", "val", "test")}
    assert tuple(len(parts[s]) for s in ("train", "val", "test")) == speech.split_sizes(n)
    assert parts["train"].manifest["extra"]["dropped_short"] == 10
    assert parts["train"].num_classes == 10 and parts["train"].task == "sc10"
    rows = np.concatenate([np.asarray(parts[s].arrays["samples"]) for s in parts])
    assert len(np.unique(rows[:, :64], axis=0)) == n  # disjoint, and together every kept clip
    per = {s: np.bincount(parts[s].arrays["labels"], minlength=10) for s in parts}
    for c, word in enumerate(speech.CLASSES_10):
        # each class's share: train within 1 of 70 %, val within 1 of half the rest
        assert abs(per["train"][c] - 0.7 * counts[word]) < 1
        assert abs(per["val"][c] - 0.5 * (counts[word] - per["train"][c])) < 1
    assert per["val"][0] < counts["yes"]  # not every "yes" in val, as the lists would have it


def test_stratified_split_is_seeded_and_proportional():
    labels = np.repeat(np.arange(4), [40, 30, 20, 11])
    a = speech.sc10_split(labels, 0)
    b = speech.sc10_split(labels, 0)
    c = speech.sc10_split(labels, 5)
    assert all(np.array_equal(a[s], b[s]) for s in a)
    assert any(not np.array_equal(a[s], c[s]) for s in a)
    assert np.array_equal(np.sort(np.concatenate(list(a.values()))), np.arange(len(labels)))
    assert tuple(len(a[s]) for s in ("train", "val", "test")) == speech.split_sizes(len(labels))


def direct_mfcc(x: np.ndarray) -> np.ndarray:
    """MFCC straight from the definitions, loop by loop (the spec `speech.mfcc` must meet)."""
    n_fft, hop, n_mels = 200, 100, 64
    padded = np.concatenate([x[1:101][::-1], x, x[-101:-1][::-1]])  # reflect, edge not repeated
    window = np.array([0.5 - 0.5 * np.cos(2 * np.pi * k / n_fft) for k in range(n_fft)])
    freqs = np.array([k * 8000 / 100 for k in range(101)])
    mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
    edges = [700 * (10 ** (m / 2595) - 1) for m in np.linspace(mel(0), mel(8000), n_mels + 2)]
    bank = np.zeros((101, n_mels))
    for j in range(n_mels):
        lo, mid, hi = edges[j], edges[j + 1], edges[j + 2]
        for k, f in enumerate(freqs):
            if lo <= f <= mid:
                bank[k, j] = (f - lo) / (mid - lo)
            elif mid < f <= hi:
                bank[k, j] = (hi - f) / (hi - mid)
    frames = 1 + len(x) // hop
    out = np.zeros((frames, 20))
    dft = np.exp(-2j * np.pi * np.outer(np.arange(101), np.arange(n_fft)) / n_fft)
    m = np.arange(n_mels)
    cosines = [np.sqrt((1 if q == 0 else 2) / n_mels) * np.cos(np.pi * q * (2 * m + 1) / (2 * n_mels)) for q in range(20)]
    for t in range(frames):
        segment = padded[t * hop:t * hop + n_fft] * window
        power = np.abs(dft @ segment) ** 2
        logmel = np.log(power @ bank + 1e-6)
        out[t] = [np.dot(logmel, c) for c in cosines]  # DCT-II, orthonormal
    return out


def test_mfcc_shape_and_pure_tone_against_direct_computation():
    t = np.arange(RATE) / RATE
    tone = 0.5 * np.sin(2 * np.pi * 1000.0 * t + 0.3)
    got = speech.mfcc(tone[None, :])
    assert got.shape == (1, 161, 20)  # 16000 samples, hop 100, centre padding -> 161 frames
    want = direct_mfcc(tone)
    # each value is a sum over the 200 samples of a frame, all of which contribute: memory = 200
    assert_close("mfcc of a 1 kHz tone", want, got[0], "identity", "float64", length=speech.N_FFT,
                 max_abs_eigenvalue=1.0)


def test_mfcc_variant_is_stored_n_L_C_and_normalised_per_coefficient(sc35_root):
    root, _ = sc35_root
    train = load("sc35", root, "train", mfcc=True)
    features = np.asarray(train.arrays["mfcc"], dtype=np.float64)
    assert features.shape == (5, 161, 20) and train.sequences[0].max_length == 161
    flat = features.reshape(-1, 20)
    assert np.all(np.abs(flat.mean(axis=0)) < 1e-4)  # zero mean per coefficient on train (float32 storage)
    assert np.all(np.abs(flat.std(axis=0, ddof=1) - 1) < 1e-3)  # unit std (sigma >> 1e-5 here)
    assert train.arrays["mu"].shape == (20,)


def test_bad_options_are_one_line_errors(sc35_root):
    root, _ = sc35_root
    with pytest.raises(LinrnnError, match="normalise must be one of s4, global, none"):
        load("sc35", root, "train", normalise="zscore")
    with pytest.raises(LinrnnError, match="unknown split 'dev'"):
        load("sc10", root, "dev")
    with pytest.raises(LinrnnError, match="scale must be positive"):
        load("sc35", root, "train", scale=0.0)
