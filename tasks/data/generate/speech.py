"""A small Speech Commands corpus spoken by espeak-ng, in the exact v0.02 layout (synthetic speech).

Why: the real dataset cannot be downloaded here, and the speech pipeline (WAV checks, lists,
padding, SC10's dropping rule, normalisation, MFCC, cache) should run end to end on real audio. The
clips are words synthesised by espeak-ng (Debian package `espeak-ng`), not recordings of people: a
model's accuracy on them says nothing about the Speech Commands claims.

Layout written (DIR/speech_commands_v0.02/, what `linrnn.tasks.data.speech` reads):
    <word>/<speaker>_nohash_<n>.wav     35 word folders, 16-bit PCM, mono, 16 kHz, <= 16,000 samples
    _background_noise_/*.wav             white, pink and brown noise (10 s each), mixed into clips
    validation_list.txt, testing_list.txt   `word/file.wav` lines, sorted; everything else is train
    README.md                            says what this is

Speakers. A speaker is one (voice, pitch) combination: an espeak-ng voice (en, en-us, en-gb-scotland,
en-gb-x-rp, en-gb-x-gbclan, en-gb-x-gbcwmd, en-029, en-us-nyc) with a variant (+m1..+m7, +f1..+f4)
and a pitch (20-80). Its id is 8 hex digits of sha1("voice+variant:pitch:seed"). As in the real
dataset, the split of a clip is decided by its speaker alone, by the dataset's own rule (`which_set`
of TensorFlow's `speech_commands/input_data.py`: sha1 of the name before `_nohash_`, modulo
2^27, scaled to a percentage; < 10 validation, < 20 testing, else training). The generator walks
the speaker pool in a seeded order and gives each split the first ceil(n / 2) speakers that the rule
sends there; each speaker says every word n // speakers + 1 times at most (`_nohash_0`, `_nohash_1`, ...).

A clip. espeak-ng -v VOICE+VARIANT -p PITCH -s SPEED -a AMPLITUDE -w out.wav WORD (speed 130-220
words/min, amplitude 60-160 per clip) writes 22,050 Hz; silence is trimmed, the word resampled to
16 kHz with `scipy.signal.resample_poly(x, 160, 441)`, placed at a random offset in a clip of 16,000
samples (or, for `SHORT_FRACTION` of the clips, a random shorter length, as some real clips are, so
that SC10's dropping rule has work), mixed with a random stretch of one background noise at an SNR of
10-40 dB, scaled to a peak of 0.3-0.9 and written as int16.

Determinism: espeak-ng gives the same bytes for the same arguments (checked by a test), and every
random choice of clip i comes from `default_rng(stream_seed(seed, i))`, so the same seed writes the
same bytes whatever the number of worker threads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import math
import re
import shutil
import subprocess
import tempfile
import time
import wave
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data.generate import check_counts, check_seed, staged, stream_seed, worker_count

FOLDER = "speech_commands_v0.02"
WORDS = ("bed", "cat", "down", "five", "forward", "go", "house", "left", "marvin", "no", "on", "right",
         "sheila", "tree", "up", "visual", "yes", "backward", "bird", "dog", "eight", "follow", "four",
         "happy", "learn", "nine", "off", "one", "seven", "six", "stop", "three", "two", "wow", "zero")
VOICES = ("en", "en-us", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan", "en-gb-x-gbcwmd", "en-029", "en-us-nyc")
VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4")
PITCHES = tuple(range(20, 81, 5))
SAMPLE_RATE = 16000
ESPEAK_RATE = 22050  # espeak-ng's output rate; 16000 / 22050 = 160 / 441
LENGTH = 16000
SHORT_FRACTION = 0.1  # clips shorter than 1 s, as in the real data
NOISES = ("white_noise", "pink_noise", "brown_noise")
NOISE_SECONDS = 10
VALIDATION_PERCENTAGE = 10.0  # the real dataset's which_set percentages
TESTING_PERCENTAGE = 10.0
MAX_NUM_WAVS_PER_CLASS = 2 ** 27 - 1  # ~134M, from TensorFlow's input_data.py
INSTALL = "espeak-ng is not installed: apt-get install espeak-ng"


def which_set(filename: str, validation_percentage: float = VALIDATION_PERCENTAGE,
              testing_percentage: float = TESTING_PERCENTAGE) -> str:
    """'validation', 'testing' or 'training': the Speech Commands rule (TensorFlow's
    `speech_commands/input_data.py`), by the sha1 of the file name's part before `_nohash_`."""
    base = Path(filename).name
    speaker = re.sub(r"_nohash_.*$", "", base)
    hashed = hashlib.sha1(speaker.encode("utf-8")).hexdigest()
    percentage = (int(hashed, 16) % (MAX_NUM_WAVS_PER_CLASS + 1)) * (100.0 / MAX_NUM_WAVS_PER_CLASS)
    if percentage < validation_percentage:
        return "validation"
    if percentage < testing_percentage + validation_percentage:
        return "testing"
    return "training"


SET_OF_SPLIT = {"train": "training", "val": "validation", "test": "testing"}


@dataclasses.dataclass(frozen=True)
class Speaker:
    """One synthetic speaker."""

    id: str  # 8 hex digits, the file name's part before `_nohash_`
    voice: str  # espeak-ng voice with variant, e.g. "en-us+f2"
    pitch: int  # espeak-ng pitch 0-99


@dataclasses.dataclass(frozen=True)
class Clip:
    """One clip to synthesise."""

    index: int  # global index: its random stream
    word: str  # the word spoken (its folder)
    speaker: Speaker  # who speaks it
    repeat: int  # n of `<speaker>_nohash_<n>.wav`
    split: str  # train, val or test

    @property
    def path(self) -> str:
        return f"{self.word}/{self.speaker.id}_nohash_{self.repeat}.wav"


def espeak() -> str:
    """The espeak-ng executable; a one-line LinrnnError saying how to install it if missing."""
    found = shutil.which("espeak-ng")
    if found is None:
        raise LinrnnError(INSTALL)
    return found


def speakers(seed: int, needed: dict[str, int]) -> dict[str, list[Speaker]]:
    """split -> speakers: the seeded walk over the pool, each speaker sent where `which_set` says."""
    pool = [(v, var, p) for v in VOICES for var in VARIANTS for p in PITCHES]
    order = np.random.default_rng(stream_seed(seed, 2 ** 31)).permutation(len(pool))
    out: dict[str, list[Speaker]] = {s: [] for s in needed}
    for i in order:
        voice, variant, pitch = pool[i]
        sid = hashlib.sha1(f"{voice}+{variant}:{pitch}:{seed}".encode()).hexdigest()[:8]
        split = {v: k for k, v in SET_OF_SPLIT.items()}[which_set(f"{sid}_nohash_0.wav")]
        if len(out[split]) < needed[split]:
            out[split].append(Speaker(sid, f"{voice}+{variant}", pitch))
        if all(len(out[s]) >= needed[s] for s in needed):
            break
    return out


def plan(counts: dict[str, int], seed: int, words=WORDS) -> list[Clip]:
    """Every clip: per split, n clips of each word, clip k by speaker k mod S, repeat k // S."""
    needed = {s: (math.ceil(n / 2) if n else 0) for s, n in counts.items()}
    chosen = speakers(seed, needed)
    for split, n in needed.items():
        if len(chosen[split]) < n:
            raise LinrnnError(f"n_{split}: the speaker pool has only {len(chosen[split])} speakers for {split}; "
                              f"expected {n}")
    clips = []
    for word in words:
        for split in ("train", "val", "test"):
            group = chosen[split]
            for k in range(counts[split]):
                clips.append(Clip(len(clips), word, group[k % len(group)], k // len(group), split))
    return clips


def _read_wav_bytes(data: bytes) -> np.ndarray:
    with wave.open(io.BytesIO(data), "rb") as handle:
        if handle.getsampwidth() != 2 or handle.getnchannels() != 1:
            raise LinrnnError("espeak-ng wrote an unexpected WAV format (expected 16-bit mono)")
        rate = handle.getframerate()
        samples = np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2")
    if rate != ESPEAK_RATE:
        raise LinrnnError(f"espeak-ng wrote {rate} Hz, expected {ESPEAK_RATE} Hz")
    return samples.astype(np.float64) / 32768.0


def synthesise(executable: str, clip: Clip, speed: int, amplitude: int, workdir: Path) -> np.ndarray:
    """The word as espeak-ng speaks it, float64 at 22,050 Hz."""
    out = workdir / f"clip-{clip.index}.wav"
    command = [executable, "-v", clip.speaker.voice, "-p", str(clip.speaker.pitch), "-s", str(speed),
               "-a", str(amplitude), "-w", str(out), clip.word]
    result = subprocess.run(command, capture_output=True, timeout=60)
    if result.returncode != 0 or not out.exists():
        raise LinrnnError(f"espeak-ng failed for {clip.path}: {result.stderr.decode(errors='replace').strip()[:120]}")
    data = out.read_bytes()
    out.unlink()
    return _read_wav_bytes(data)


def trim(x: np.ndarray, threshold: float = 0.02, margin: int = 220) -> np.ndarray:
    """x without the leading and trailing silence (below `threshold` of the peak), plus a margin."""
    loud = np.flatnonzero(np.abs(x) > threshold * max(np.abs(x).max(), 1e-12))
    if len(loud) == 0:
        return x
    return x[max(0, loud[0] - margin): loud[-1] + margin + 1]


def noises(seed: int) -> dict[str, np.ndarray]:
    """The background noises (10 s each at 16 kHz, peak 0.5): white, pink (1/f) and brown (1/f^2)."""
    rng = np.random.default_rng(stream_seed(seed, 2 ** 31 + 1))
    n = NOISE_SECONDS * SAMPLE_RATE
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spectrum), dtype=np.float64)
    f[0] = 1.0
    out = {}
    for name, power in zip(NOISES, (0.0, 1.0, 2.0)):
        x = np.fft.irfft(spectrum / f ** (power / 2), n)
        x -= x.mean()
        out[name] = 0.5 * x / np.abs(x).max()
    return out


def to_int16(x: np.ndarray) -> np.ndarray:
    return np.clip(np.round(x * 32768.0), -32768, 32767).astype("<i2")


def write_wav(path: Path, samples: np.ndarray) -> None:
    """16-bit PCM mono 16 kHz, with the standard library (the same header as the real files)."""
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(SAMPLE_RATE)
        handle.writeframes(np.ascontiguousarray(samples, dtype="<i2").tobytes())


def render(executable: str, clip: Clip, seed: int, background: dict[str, np.ndarray], workdir: Path) -> np.ndarray:
    """The int16 samples of one clip (see the module docstring)."""
    from scipy.signal import resample_poly

    rng = np.random.default_rng(stream_seed(seed, clip.index))
    speed = int(rng.integers(130, 221))
    amplitude = int(rng.integers(60, 161))
    speech = resample_poly(trim(synthesise(executable, clip, speed, amplitude, workdir)), 160, 441)
    speech = speech[:LENGTH]
    length = LENGTH
    if rng.random() < SHORT_FRACTION:
        length = int(rng.integers(min(len(speech) + 800, LENGTH - 1), LENGTH))
    offset = int(rng.integers(0, length - len(speech) + 1))
    x = np.zeros(length)
    x[offset:offset + len(speech)] = speech
    noise_name = NOISES[int(rng.integers(len(NOISES)))]
    source = background[noise_name]
    start = int(rng.integers(0, len(source) - length + 1))
    noise = source[start:start + length]
    snr_db = float(rng.uniform(10.0, 40.0))
    rms_speech = np.sqrt(np.mean(speech ** 2)) if len(speech) else 0.0
    x += noise * (rms_speech / max(np.sqrt(np.mean(noise ** 2)), 1e-12)) * 10 ** (-snr_db / 20)
    peak = float(rng.uniform(0.3, 0.9))
    x *= peak / max(np.abs(x).max(), 1e-12)
    return to_int16(x)


README = """# Synthetic Speech Commands (espeak-ng)

Written by `linrnn data generate speech` in the layout of Speech Commands v0.02
(word folders, `validation_list.txt`, `testing_list.txt`, `_background_noise_/`, 16 kHz mono 16-bit WAVs).
The clips are words synthesised by espeak-ng with varied voices, pitch, speed, gain and background
noise. This is synthetic speech, not the Speech Commands dataset: use it to run the pipeline, not to
compare accuracies with published numbers.
"""


def generate(out, n_train=32, n_val=4, n_test=4, seed=0, resolution=None, difficulty=None, workers=None,
             progress=None, words=None) -> dict:
    """Write DIR/speech_commands_v0.02/ with n_train / n_val / n_test clips per word and split.

    `words`: only these words get clips (their folders only): for quick tests; the default writes all 35.
    """
    if resolution is not None or difficulty is not None:
        raise LinrnnError("speech: --resolution and --difficulty do not apply")
    n_train, n_val, n_test = check_counts(n_train, n_val, n_test)
    seed = check_seed(seed)
    threads = worker_count(workers)
    words = tuple(WORDS if words is None else words)
    unknown = [w for w in words if w not in WORDS]
    if unknown:
        raise LinrnnError(f"words: {', '.join(unknown)} are not Speech Commands words")
    executable = espeak()
    start = time.perf_counter()
    counts = {"train": n_train, "val": n_val, "test": n_test}
    clips = plan(counts, seed, words)
    background = noises(seed)
    final = Path(out) / FOLDER
    with staged(final) as tmp, tempfile.TemporaryDirectory(prefix="espeak-") as work:
        for word in words:
            (tmp / word).mkdir()
        (tmp / "_background_noise_").mkdir()
        for name, x in background.items():
            write_wav(tmp / "_background_noise_" / f"{name}.wav", to_int16(x))
        done = 0

        def one(clip: Clip) -> int:
            samples = render(executable, clip, seed, background, Path(work))
            write_wav(tmp / clip.path, samples)
            return len(samples)

        lengths = []
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for n in pool.map(one, clips):
                lengths.append(n)
                done += 1
                if progress is not None:
                    progress(done, len(clips))
        for split, name in (("val", "validation_list.txt"), ("test", "testing_list.txt")):
            lines = sorted(c.path for c in clips if c.split == split)
            (tmp / name).write_text("".join(line + "\n" for line in lines))
        (tmp / "README.md").write_text(README)
    lengths = np.asarray(lengths)
    return {"folder": str(final), "clips": len(clips), "words": len(words),
            "per word": f"train {n_train}, val {n_val}, test {n_test}",
            "shorter than 16000": int(np.count_nonzero(lengths < LENGTH)),
            "speakers": len({c.speaker.id for c in clips}), "seconds": round(time.perf_counter() - start, 2)}
