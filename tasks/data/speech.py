"""Speech Commands v0.02: SC35 (all 35 words, the official lists) and SC10 (10 words, S4's split).

Layout (as `speech_commands_v0.02.tar.gz` extracts, and what `linrnn data generate speech` writes):
the root holds one folder per word (35), `_background_noise_/` (long noise recordings, not a class),
`validation_list.txt` and `testing_list.txt` (one relative path per line, `right/<file>.wav`), and
`LICENSE` / `README.md`. A clip is `<word>/<speaker>_nohash_<n>.wav`: RIFF/WAVE, 16-bit PCM, mono,
16 kHz, at most 16,000 samples (some are shorter). Every clip is read with the standard library's
`wave` module and checked: a wrong sample rate, channel count or sample width, a compressed or
truncated file (fewer frames than its header says) is a one-line error naming the file (`linrnn
data check`: one line per bad file). Samples are int16 / `scale` (2^15: values in [-1, 1)).

SC35 (S4 `_process_all`, `all_classes=True`; S5's "speech35"): label = position in S4's
`ALL_CLASSES` (not alphabetical, `CLASSES_35`); a clip listed in `validation_list.txt` is val, in
`testing_list.txt` test, any other train; a short clip is zero-padded at the end to 16,000 (a longer
one, which the real data does not have, is cut, as S4's negative `F.pad` does; both are counted).

SC10 (S4 `_process_data`, `all_classes=False`; S4, CKConv, NCDE): the 10 words of `CLASSES_10`,
label = position in that list; clips shorter than 16,000 samples are dropped (counted; the real data
keeps 34,975); the official lists are ignored: a stratified split 70/15/15, as S4's two sklearn
`train_test_split(stratify=y)` calls (train_size 0.7, random_state 0; then 0.5, random_state 1).
Sizes rule (sklearn's): n_train = floor(0.7 n), then n_val = floor(0.5 (n - n_train)), n_test the
rest (34,975 -> 24,482 / 5,246 / 5,247); per class, the counts follow sklearn's `_approximate_mode`
(floor of the proportional share, the remainder to the largest fractional parts, ties drawn at
random). The draws use NumPy's `default_rng(split_seed)` and `default_rng(split_seed + 1)`, so the
split is *not* bit-identical to sklearn's (nor could it be: S4 lists files with `os.listdir`, whose
order depends on the file system; here clips are in word order, then by file name).

Normalisation (S4's code, both variants): (x - mu) / (sigma + 1e-5), mu and sigma (unbiased, as
torch's `std`) from the train split only. `normalise="s4"` (default) reproduces what S4's loops
compute: for raw audio of shape (n 1 16000) they run over the last axis, so there is one mu and
sigma **per time step** (16,000 of each, over the train clips); for MFCCs, one per coefficient (20,
over train clips and frames). `normalise="global"`: one mu and sigma over all raw train samples
(MFCCs as "s4"); `"none"`: raw values. mu and sigma are stored as `mu.npy` / `sigma.npy` in every
split's cache entry and summarised in the manifest (values when at most 64, else their sha256); val
and test are keyed by them, so a changed train split rebuilds them.

Known quirk of S4 (a finding, docs/data.md): S4 reads clips with `torchaudio.load`, which already
returns float values in [-1, 1], and divides by 2^15 again, so its samples are int16 / 2^30; the std
of one time step is then about 1e-6, below the 1e-5 added to sigma, so S4's "normalised" inputs have
a standard deviation near 0.1, not 1. `scale=1073741824` (2^30) reproduces that; the default 2^15 is
the scale the brief and the dataset's format intend.

MFCC (`mfcc=True`): the features of `torchaudio.transforms.MFCC(log_mels=True, n_mfcc=20,
melkwargs=dict(n_fft=200, n_mels=64))` at 16 kHz, computed with NumPy/SciPy (see `mfcc`): 161 frames
x 20 coefficients per clip, stored (n 161 20) = (n L C) so that batches pad along L like every
other sequence (S4's tensor is (n 20 161), transposed before the model).

Arrays per split: `samples` float32 (n 16000) or `mfcc` float32 (n 161 20); `labels` int32 (n,);
`clip_lengths` int32 (n,) the clips' true lengths before padding (the model sees all 16,000 steps,
as in S4, so this is information, not a mask); `mu`, `sigma` float64.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import wave
from pathlib import Path

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cache as cachemod
from linrnn.tasks.data import dataset as ds_
from linrnn.tasks.data import layout

CLASSES_35 = ("bed", "cat", "down", "five", "forward", "go", "house", "left", "marvin", "no", "on", "right",
              "sheila", "tree", "up", "visual", "yes", "backward", "bird", "dog", "eight", "follow", "four",
              "happy", "learn", "nine", "off", "one", "seven", "six", "stop", "three", "two", "wow", "zero")
CLASSES_10 = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go")
VARIANTS = {"sc35": CLASSES_35, "sc10": CLASSES_10}
NOISE = "_background_noise_"
LISTS = {"val": "validation_list.txt", "test": "testing_list.txt"}
SAMPLE_RATE = 16000
LENGTH = 16000  # samples per clip after padding (1 s)
EPS = 1e-5  # added to sigma (S4)
NORMALISE = ("s4", "global", "none")

# MFCC, torchaudio's MFCC(log_mels=True, n_mfcc=20, melkwargs=dict(n_fft=200, n_mels=64)) at 16 kHz
N_FFT = 200  # window = FFT length (torchaudio: win_length defaults to n_fft)
HOP = 100  # torchaudio: hop_length defaults to win_length // 2
N_MELS = 64
N_MFCC = 20
LOG_OFFSET = 1e-6  # torchaudio MFCC: log(mel + 1e-6) when log_mels=True
FRAMES = 1 + LENGTH // HOP  # 161: centre padding of n_fft // 2 on both sides
CHUNK_ROWS = 512  # clips per chunk in the statistics passes


@dataclasses.dataclass(frozen=True)
class Options:
    variant: str = "sc35"  # "sc35" or "sc10" (the registry's task name fixes it)
    mfcc: bool = False  # 20 MFCCs x 161 frames instead of 16,000 raw samples
    normalise: str = "s4"  # "s4" (raw: per time step; MFCC: per coefficient), "global" or "none"
    scale: float = 32768.0  # int16 samples are divided by this (2^15; S4 effectively uses 2^30)
    split_seed: int = 0  # SC10: seed of the first stratified split (the second uses split_seed + 1)


# ---------------------------------------------------------------------------------------- WAVs


@dataclasses.dataclass(frozen=True)
class WavInfo:
    """What a WAV header says."""

    channels: int  # 1 expected
    sample_width: int  # bytes per sample; 2 expected (16-bit)
    sample_rate: int  # 16000 expected
    frames: int  # samples per channel the header announces


def _wav_error(name: str, err: Exception) -> LinrnnError:
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return LinrnnError(f"{name}: not a readable WAV file ({text})")


def wav_info(path: Path, name: str | None = None) -> WavInfo:
    """The header of one WAV, checked to be 16-bit PCM, mono, 16 kHz (else a one-line LinrnnError)."""
    name = name or str(path)
    try:
        with wave.open(str(path), "rb") as handle:
            info = WavInfo(handle.getnchannels(), handle.getsampwidth(), handle.getframerate(), handle.getnframes())
            comptype = handle.getcomptype()
    except (wave.Error, EOFError, OSError, ValueError) as err:
        raise _wav_error(name, err) from None
    if comptype != "NONE":
        raise LinrnnError(f"{name}: expected uncompressed PCM, found {comptype}")
    if info.channels != 1:
        raise LinrnnError(f"{name}: expected mono (1 channel), found {info.channels} channels")
    if info.sample_width != 2:
        raise LinrnnError(f"{name}: expected 16-bit samples, found {8 * info.sample_width}-bit")
    if info.sample_rate != SAMPLE_RATE:
        raise LinrnnError(f"{name}: expected a sample rate of {SAMPLE_RATE} Hz, found {info.sample_rate} Hz")
    return info


def read_wav(path: Path, name: str | None = None) -> np.ndarray:
    """(frames,) int16 samples of one checked WAV (see `wav_info`); a truncated file is an error."""
    name = name or str(path)
    info = wav_info(path, name)
    try:
        with wave.open(str(path), "rb") as handle:
            data = handle.readframes(info.frames)
    except (wave.Error, EOFError, OSError, ValueError) as err:
        raise _wav_error(name, err) from None
    if len(data) != 2 * info.frames:
        raise LinrnnError(f"{name}: truncated: the header announces {info.frames} samples, the file holds "
                          f"{len(data) // 2}")
    if info.frames == 0:
        raise LinrnnError(f"{name}: no samples")
    return np.frombuffer(data, dtype="<i2")


# ---------------------------------------------------------------------------------------- MFCC


def hann_window(n: int) -> np.ndarray:
    """Periodic Hann window of length n (torch.hann_window's default)."""
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)


def hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + np.asarray(f, dtype=np.float64) / 700.0)


def mel_to_hz(m):
    return 700.0 * (10.0 ** (np.asarray(m, dtype=np.float64) / 2595.0) - 1.0)


def mel_filterbank(n_freqs: int = N_FFT // 2 + 1, n_mels: int = N_MELS, sample_rate: int = SAMPLE_RATE,
                   f_min: float = 0.0, f_max: float | None = None) -> np.ndarray:
    """(n_freqs n_mels) triangular filters, HTK mel scale, no area normalisation: torchaudio's
    `melscale_fbanks(norm=None, mel_scale="htk")`. With 101 frequency bins and 64 bands the lowest
    bands fall between bins and are all zero, as in torchaudio (which warns about it)."""
    f_max = sample_rate / 2 if f_max is None else f_max
    freqs = np.linspace(0.0, sample_rate // 2, n_freqs)
    f_pts = mel_to_hz(np.linspace(hz_to_mel(f_min), hz_to_mel(f_max), n_mels + 2))
    f_diff = np.diff(f_pts)
    slopes = f_pts[None, :] - freqs[:, None]
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return np.maximum(0.0, np.minimum(down, up))


def mfcc(samples: np.ndarray) -> np.ndarray:
    """(b T) waveforms -> (b F 20) float64 log-mel MFCCs, F = 1 + T // 100 (161 for T = 16000).

    Follows torchaudio's MFCC / MelSpectrogram / Spectrogram defaults: STFT with centre padding
    n_fft // 2 by reflection (`pad_mode="reflect"`), a periodic Hann window of 200, hop 100,
    one-sided power spectrum (power 2, no normalisation), 64 HTK mel bands from 0 to 8 kHz without
    area normalisation, log(mel + 1e-6), DCT-II with orthonormal scaling (`norm="ortho"`) keeping the
    first 20 coefficients. Differs from torchaudio in: the arithmetic (float64 here, float32 there,
    so values agree to float32 rounding, not bit for bit) and nothing else we know of.
    """
    from numpy.lib.stride_tricks import sliding_window_view
    from scipy.fft import dct, rfft

    x = np.asarray(samples, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] <= N_FFT // 2:
        raise LinrnnError(f"mfcc: expected waveforms (b T) with T > {N_FFT // 2}, got shape {x.shape}")
    pad = N_FFT // 2
    padded = np.pad(x, ((0, 0), (pad, pad)), mode="reflect")
    frames = sliding_window_view(padded, N_FFT, axis=1)[:, ::HOP]  # (b F n_fft)
    spectrum = rfft(frames * hann_window(N_FFT), axis=-1)  # (b F 101)
    power = spectrum.real ** 2 + spectrum.imag ** 2
    b, n_frames, n_freqs = power.shape
    mel = (power.reshape(-1, n_freqs) @ mel_filterbank()).reshape(b, n_frames, N_MELS)  # 2-D: one BLAS call
    return dct(np.log(mel + LOG_OFFSET), type=2, norm="ortho", axis=-1)[..., :N_MFCC]


# ---------------------------------------------------------------------------------------- splits


def approximate_mode(counts: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """sklearn's `_approximate_mode`: per-class draws summing to `draws`, each the floor of its
    proportional share, the remainder given to the largest fractional parts (ties at random)."""
    continuous = counts / counts.sum() * draws
    floored = np.floor(continuous)
    need = int(draws - floored.sum())
    if need > 0:
        remainder = continuous - floored
        for value in np.sort(np.unique(remainder))[::-1]:
            (indices,) = np.nonzero(remainder == value)
            take = min(len(indices), need)
            floored[rng.choice(indices, size=take, replace=False)] += 1
            need -= take
            if need == 0:
                break
    return floored.astype(np.int64)


def stratified_split(labels: np.ndarray, train_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(first, second) sorted index arrays: a stratified split of range(n) with
    len(first) = floor(train_size n), as sklearn's StratifiedShuffleSplit draws it (see the module
    docstring; not bit-identical)."""
    labels = np.asarray(labels)
    n = len(labels)
    n_first = int(np.floor(train_size * n))
    classes, y = np.unique(labels, return_inverse=True)
    counts = np.bincount(y, minlength=len(classes))
    rng = np.random.default_rng(seed)
    first_counts = approximate_mode(counts, n_first, rng)
    second_counts = approximate_mode(counts - first_counts, n - n_first, rng)
    first, second = [], []
    for c in range(len(classes)):
        members = np.flatnonzero(y == c)[rng.permutation(counts[c])]
        first.append(members[:first_counts[c]])
        second.append(members[first_counts[c]:first_counts[c] + second_counts[c]])
    return np.sort(np.concatenate(first)), np.sort(np.concatenate(second))


def sc10_split(labels: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """split -> sorted indices: 70 % train, then the rest halved into val and test (S4)."""
    train, rest = stratified_split(labels, 0.7, seed)
    val_local, test_local = stratified_split(labels[rest], 0.5, seed + 1)
    return {"train": train, "val": rest[val_local], "test": rest[test_local]}


def split_sizes(n: int) -> tuple[int, int, int]:
    """SC10's (train, val, test) sizes for n clips: floor(0.7 n), floor(0.5 rest), the remainder."""
    n_train = int(np.floor(0.7 * n))
    n_val = int(np.floor(0.5 * (n - n_train)))
    return n_train, n_val, n - n_train - n_val


# ---------------------------------------------------------------------------------------- dataset


def _read_list(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _summary(values: np.ndarray) -> dict:
    """How mu or sigma appear in the manifest: their count and sha256, and the values when few."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = {"count": int(values.size), "sha256": hashlib.sha256(values.tobytes()).hexdigest()}
    if values.size <= 64:
        out["values"] = values.tolist()
    return out


class Speech(ds_.Dataset):
    format_version = 1
    labels = "labels"

    def __init__(self, folder, options: Options, cache=None):
        self.classes = VARIANTS[options.variant]
        self.task = options.variant
        self.num_classes = len(self.classes)
        kind = "mfcc" if options.mfcc else "raw"
        super().__init__(folder, options, f"{options.variant}-{kind}", cache)
        self.array = "mfcc" if options.mfcc else "samples"
        self.sequences = (ds_.SequenceSpec(self.array, 0.0, FRAMES if options.mfcc else LENGTH),)
        self._clips: tuple[dict, list[str]] | None = None  # the listing and its problems
        self._train_stats: tuple[np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------------------ sources

    def sources(self, split):
        missing = [w for w in self.classes if not (self.folder / w).is_dir()]
        if missing:
            raise LinrnnError(f"missing word folder(s) {', '.join(w + '/' for w in missing)} in {self.folder}")
        files = ()
        if self.options.variant == "sc35":
            absent = [name for name in LISTS.values() if not (self.folder / name).is_file()]
            if absent:
                raise LinrnnError(f"missing split {split}: {', '.join(absent)} not found in {self.folder}")
            files = tuple(LISTS.values())
        return cachemod.Sources(self.folder, files=files, trees=tuple(self.classes))

    # ------------------------------------------------------------------------------ listing

    def _foreign_folders(self, problems: ds_.Problems) -> None:
        """A folder that is neither a word nor `_background_noise_` is a label outside the class list."""
        for entry in sorted(os.scandir(self.folder), key=lambda e: e.name):
            if entry.is_dir() and not entry.name.startswith((".", "_")) and entry.name not in CLASSES_35:
                problems.add(f"{entry.name}/: a label folder not among the 35 Speech Commands words "
                             f"(expected only word folders and {NOISE}/)")

    def _files(self, word: str) -> list[str]:
        folder = self.folder / word
        return sorted(f"{word}/{p.name}" for p in folder.iterdir() if p.suffix.lower() == ".wav" and p.is_file())

    def clips(self, problems: ds_.Problems) -> dict:
        """{"splits": split -> [(relative path, label)] in word order then by file name,
        "dropped_short": count}. Listed once per dataset; its problems are replayed into every
        caller's `problems`, so each split that depends on the listing reports (or raises) them."""
        if self._clips is None:
            found = ds_.Problems(strict=False)
            self._clips = (self._list_clips(found), found.summary())
        listing, lines = self._clips
        for line in lines:
            problems.add(line)
        return listing

    def _list_clips(self, problems: ds_.Problems) -> dict:
        self._foreign_folders(problems)
        every = [(rel, label) for label, word in enumerate(self.classes) for rel in self._files(word)]
        out: dict[str, list] = {s: [] for s in ds_.SPLITS}
        if self.options.variant == "sc35":
            known = {rel for rel, _ in every}
            listed = {}
            for split, name in LISTS.items():
                for number, rel in enumerate(_read_list(self.folder / name), start=1):
                    word = rel.split("/")[0]
                    if word not in CLASSES_35:
                        problems.add(f"{name}: line {number}: {rel!r} is not in a word folder")
                    elif rel not in known and not (self.folder / rel).is_file():
                        problems.add(f"{name}: line {number}: {rel} does not exist")
                    elif rel in listed and listed[rel] != split:
                        problems.add(f"{name}: line {number}: {rel} is also in {LISTS[listed[rel]]}")
                    listed.setdefault(rel, split)
            for rel, label in every:
                out[listed.get(rel, "train")].append((rel, label))
            return {"splits": out, "dropped_short": 0}
        kept, labels, dropped = [], [], 0
        for rel, label in every:
            try:
                frames = wav_info(self.folder / rel, rel).frames
            except LinrnnError as err:
                problems.add(str(err))
                continue
            if frames != LENGTH:
                dropped += 1
                continue
            kept.append(rel)
            labels.append(label)
        labels = np.asarray(labels, dtype=np.int64)
        if len(kept) >= 3:
            parts = sc10_split(labels, self.options.split_seed)
        else:
            problems.add(f"SC10: {len(kept)} clips of {LENGTH} samples; the stratified split needs at least 3")
            parts = {s: np.zeros(0, np.int64) for s in ds_.SPLITS}
        for split, indices in parts.items():
            out[split] = [(kept[i], int(labels[i])) for i in indices]
        return {"splits": out, "dropped_short": dropped}

    # ------------------------------------------------------------------------------ parsing

    def _waveforms(self, clips, problems: ds_.Problems):
        """Yield (row, float64 (16000,) padded waveform, true length) per readable clip."""
        for row, (rel, _) in enumerate(clips):
            try:
                raw = read_wav(self.folder / rel, rel)
            except LinrnnError as err:
                problems.add(str(err))
                continue
            x = np.zeros(LENGTH, dtype=np.float64)
            n = min(len(raw), LENGTH)
            x[:n] = raw[:n] / self.options.scale
            yield row, x, len(raw)

    def _write_features(self, clips, out: np.ndarray, problems: ds_.Problems) -> tuple[np.ndarray, int, int]:
        """Fill `out` with the clips' raw (unnormalised) features; (true lengths, padded, cut)."""
        lengths = np.zeros(len(clips), dtype=np.int32)
        rows, block = [], []

        def flush():
            if rows:
                values = np.stack(block)
                out[rows] = (mfcc(values) if self.options.mfcc else values).astype(np.float32)
                rows.clear()
                block.clear()

        for row, x, n in self._waveforms(clips, problems):
            lengths[row] = n
            rows.append(row)
            block.append(x)
            if len(rows) >= CHUNK_ROWS:
                flush()
        flush()
        return lengths, int(np.count_nonzero((lengths > 0) & (lengths < LENGTH))), int(np.count_nonzero(lengths > LENGTH))

    def _statistics(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mu, sigma) of the train features by `normalise` (two chunked passes, float64, ddof 1)."""
        kind = self.options.normalise
        shape = features.shape[1:]
        if kind == "none":
            return np.zeros(1), np.ones(1)
        # axes reduced inside a chunk: raw "s4" keeps the time axis; MFCC keeps the coefficient axis
        if self.options.mfcc:
            reduce, keep = (0, 1), (shape[1],)
        elif kind == "s4":
            reduce, keep = (0,), (shape[0],)
        else:
            reduce, keep = (0, 1), (1,)
        per = int(np.prod([features.shape[a] for a in reduce]))
        if per < 2:
            raise LinrnnError(f"train: {len(features)} clips; normalisation statistics need at least 2")
        total = np.zeros(keep)
        for start in range(0, len(features), CHUNK_ROWS):
            total += np.asarray(features[start:start + CHUNK_ROWS], dtype=np.float64).sum(axis=reduce).reshape(keep)
        mu = total / per
        square = np.zeros(keep)
        for start in range(0, len(features), CHUNK_ROWS):
            chunk = np.asarray(features[start:start + CHUNK_ROWS], dtype=np.float64)
            square += ((chunk - self._broadcast(mu)) ** 2).sum(axis=reduce).reshape(keep)
        return mu, np.sqrt(square / (per - 1))

    def _broadcast(self, values: np.ndarray) -> np.ndarray:
        """mu or sigma shaped to broadcast against one chunk of features."""
        if self.options.mfcc:
            return values.reshape(1, 1, -1)
        return values.reshape(1, -1)

    def _normalise(self, features: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> None:
        if self.options.normalise == "none":
            return
        for start in range(0, len(features), CHUNK_ROWS):
            chunk = np.asarray(features[start:start + CHUNK_ROWS], dtype=np.float64)
            features[start:start + CHUNK_ROWS] = ((chunk - self._broadcast(mu))
                                                  / (self._broadcast(sigma) + EPS)).astype(np.float32)

    def train_statistics(self, problems: ds_.Problems) -> tuple[np.ndarray, np.ndarray]:
        """(mu, sigma) of the train split, from its cache entry (built first if needed)."""
        if self._train_stats is None:
            split = ds_.load_split(self, "train")
            self._train_stats = (np.asarray(split.arrays["mu"]), np.asarray(split.arrays["sigma"]))
        return self._train_stats

    def key_extra(self, split, problems):
        if split == "train":
            return {}
        mu, sigma = self.train_statistics(problems)
        return {"train_mu_sha256": _summary(mu)["sha256"], "train_sigma_sha256": _summary(sigma)["sha256"]}

    def parse(self, split, writer, problems):
        listing = self.clips(problems)
        clips = listing["splits"][split]
        shape = (len(clips), FRAMES, N_MFCC) if self.options.mfcc else (len(clips), LENGTH)
        features = writer.dense(self.array, shape, np.float32)
        lengths, padded, cut = self._write_features(clips, features, problems)
        if split == "train":
            if problems.count:
                return {"n": len(clips)}
            mu, sigma = self._statistics(features)
        else:
            mu, sigma = self.train_statistics(problems)
        self._normalise(features, mu, sigma)
        writer.put("labels", np.asarray([label for _, label in clips], dtype=np.int32))
        writer.put("clip_lengths", lengths)
        writer.put("mu", mu)
        writer.put("sigma", sigma)
        return {"n": len(clips), "classes": list(self.classes), "sample_rate": SAMPLE_RATE, "padded": padded,
                "truncated": cut, "dropped_short": listing["dropped_short"],
                "normalisation": {"kind": self.options.normalise, "eps": EPS, "mu": _summary(mu),
                                  "sigma": _summary(sigma)}}


def _options(options) -> Options:
    made = ds_.make_options(Options, "speech", options)
    if made.variant not in VARIANTS:
        raise LinrnnError(f"speech: variant must be one of {', '.join(VARIANTS)}, got {made.variant!r}")
    if made.normalise not in NORMALISE:
        raise LinrnnError(f"{made.variant}: normalise must be one of {', '.join(NORMALISE)}, got {made.normalise!r}")
    if not made.scale > 0:
        raise LinrnnError(f"{made.variant}: scale must be positive, got {made.scale}")
    return made


def _is_root(folder: Path) -> bool:
    return (folder / LISTS["val"]).is_file() or ((folder / "yes").is_dir() and (folder / "no").is_dir())


def dataset(root, cache=None, **options) -> Speech:
    opts = _options(options)
    folder = layout.find(root, ("speech_commands_v0.02", "SpeechCommands", "speech_commands"), _is_root,
                         "Speech Commands", "validation_list.txt or word folders yes/ and no/")
    return Speech(folder, opts, cache)


load, check, info = ds_.entry_points(dataset)   # the loader interface (linrnn.tasks.data)
