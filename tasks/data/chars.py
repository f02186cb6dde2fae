"""Character-level tokenisation (Text, Retrieval), vectorised over Unicode code points.

Vocabulary as S4 builds it with torchtext's `build_vocab_from_iterator`: the specials first
(`<pad>` = 0, `<unk>` = 1, `<eos>` = 2), then every character seen at least `min_freq` times in the
training documents, most frequent first, ties broken by the character. Counting is over the
documents *after* truncation to L - 1 characters, as S4 truncates before it builds the vocabulary.
A character outside the vocabulary becomes `<unk>`.
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from linrnn import __version__
from linrnn.tasks.data import cache as cachemod
from linrnn.tasks.data import dataset as ds_

SPECIALS = ("<pad>", "<unk>", "<eos>")
PAD, UNK, EOS = 0, 1, 2
CODEPOINTS = 0x110000


def codes(text: str) -> np.ndarray:
    """(len(text),) uint32 the text's code points."""
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)


class Counter:
    """Counts of every code point over many documents."""

    FLUSH = 1 << 22  # buffered code points per bincount: one pass over 4M, not one 0x110000 table per document

    def __init__(self):
        self.counts = np.zeros(CODEPOINTS, dtype=np.int64)
        self._buffer: list[np.ndarray] = []
        self._buffered = 0

    def add(self, text: str) -> None:
        self._buffer.append(codes(text))
        self._buffered += len(text)
        if self._buffered >= self.FLUSH:
            self._flush()

    def _flush(self) -> None:
        if self._buffer:
            self.counts += np.bincount(np.concatenate(self._buffer), minlength=CODEPOINTS)
        self._buffer, self._buffered = [], 0

    def vocabulary(self, min_freq: int) -> list[str]:
        """Specials, then characters with count >= min_freq by (count descending, character)."""
        self._flush()
        kept = np.flatnonzero(self.counts >= min_freq)
        order = sorted(kept.tolist(), key=lambda c: (-int(self.counts[c]), chr(c)))
        return list(SPECIALS) + [chr(c) for c in order]


class Encoder:
    """Maps text to token ids with one table lookup per code point."""

    def __init__(self, vocabulary: list[str]):
        if len(vocabulary) > np.iinfo(np.int32).max:  # pragma: no cover
            raise ValueError("vocabulary too large")
        self.vocabulary = vocabulary
        self.dtype = np.uint8 if len(vocabulary) <= 256 else np.int32
        self.table = np.full(CODEPOINTS, UNK, dtype=self.dtype)
        for i, token in enumerate(vocabulary[len(SPECIALS):], start=len(SPECIALS)):
            self.table[ord(token)] = i

    def encode(self, text: str, max_length: int, append_eos: bool) -> tuple[np.ndarray, int]:
        """(ids, number of unknown characters): at most max_length ids, the last one `<eos>` if
        `append_eos` (so the text is cut to max_length - 1 characters)."""
        keep = max_length - 1 if append_eos else max_length
        ids = self.table[codes(text[:keep])]
        unknown = int(np.count_nonzero(ids == UNK))
        if append_eos:
            ids = np.concatenate([ids, np.array([EOS], dtype=self.dtype)])
        return ids, unknown


def train_vocabulary(ds, texts: Callable[[], Iterable[str]], problems) -> list[str]:
    """The vocabulary of a character-level data set's train split, from its own cache entry, so that
    loading val or test does not read train again. `ds` is the loader's `Dataset` (options `min_freq`,
    `max_length`, `append_eos`); `texts()` yields every train document (Retrieval: both of each pair)."""
    opts = ds.options
    key = {"task": ds.task, "entry": "vocabulary", "format_version": ds.format_version,
           "code_version": __version__, "min_freq": opts.min_freq, "max_length": opts.max_length,
           "append_eos": opts.append_eos}
    keep = opts.max_length - (1 if opts.append_eos else 0)   # S4 counts after truncation

    def build(writer):
        counter = Counter()
        for text in texts():
            counter.add(text[:keep])
        if problems.count:
            raise ds_._Abandon()
        return {"n": 0, "vocabulary": counter.vocabulary(opts.min_freq)}

    entry = cachemod.open_or_build(ds.cache / "vocabulary", key, ds.sources("train"), build)
    return list(entry.manifest["extra"]["vocabulary"])
