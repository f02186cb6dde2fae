"""LRA Text: IMDB reviews at character level, from the `aclImdb/` folder of `aclImdb_v1.tar.gz`.

Layout: `aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt`, one UTF-8 review per file, 12,500 per
folder (`train/unsup/` and the other files are not used). Label: neg 0, pos 1 (tfds and HF `imdb`).
Order within a split: neg then pos, each by numeric id.

Splits: train = `train/`; test = `test/`; **val = test** (LRA and S4: "as done in the LRA paper"),
so val and test share one cache entry.

Tokeniser (S4, `list(text)`): one token per character, the text kept as it is (case, the `<br />`
tags). Vocabulary from the train reviews, characters seen at least `min_freq` = 15 times (S4's value;
about 135 tokens with the specials), built as described in `chars.py`. Each review is cut to L - 1 =
4095 characters and `<eos>` appended: L = 4096 (S4, S5, minimal-LRU; the official LRA code is byte
level with 1000 by default, though its paper says 4K). The vocabulary is part of every split's cache
key, so changing it (new train files, another min_freq) rebuilds val and test too.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cache as cachemod
from linrnn.tasks.data import chars
from linrnn.tasks.data import dataset as ds_
from linrnn.tasks.data import layout

FOLDERS = {"train": "train", "val": "test", "test": "test"}
LABELS = ("neg", "pos")  # index = label
NAME = re.compile(r"^(\d+)_(\d+)\.txt$")


@dataclasses.dataclass(frozen=True)
class Options:
    max_length: int = 4096  # L, including <eos> (S4)
    min_freq: int = 15  # a train character is in the vocabulary if seen this often (S4)
    append_eos: bool = True  # append <eos> (S4)


def review_files(folder) -> list:
    """The review files of one label folder, by numeric id (other names after them, by name)."""
    def order(path):
        match = NAME.match(path.name)
        return (0, int(match.group(1)), path.name) if match else (1, 0, path.name)
    return sorted((p for p in folder.iterdir() if p.suffix == ".txt"), key=order)


def read_review(path, problems: ds_.Problems) -> str | None:
    data = path.read_bytes()
    if not data.strip():
        problems.add(f"{path.parent.parent.name}/{path.parent.name}/{path.name}: empty file")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        problems.add(f"{path.parent.parent.name}/{path.parent.name}/{path.name}: not UTF-8 ({err.reason} at byte {err.start})")
        return None


class Text(ds_.Dataset):
    task = "text"
    format_version = 1
    num_classes = 2

    def __init__(self, folder, options: Options, cache=None):
        super().__init__(folder, options, "text", cache)
        self.sequences = (ds_.SequenceSpec("tokens", chars.PAD, options.max_length),)
        self._vocabulary: list[str] | None = None

    def stored(self, split):
        return FOLDERS[split]

    def sources(self, split):
        trees = tuple(f"{split}/{label}" for label in LABELS)
        missing = [t for t in trees if not (self.folder / t).is_dir()]
        if missing:
            raise LinrnnError(f"missing split {split}: no folder {', '.join(str(self.folder / t) for t in missing)}")
        return cachemod.Sources(self.folder, trees=trees)

    def _documents(self, split, problems):
        for label, name in enumerate(LABELS):
            for path in review_files(self.folder / split / name):
                text = read_review(path, problems)
                if text is not None:
                    yield label, text

    def vocabulary(self, problems: ds_.Problems) -> list[str]:
        """The train vocabulary, from its own cache entry (so loading test does not re-read train)."""
        if self._vocabulary is None:
            self._vocabulary = chars.train_vocabulary(
                self, lambda: (text for _, text in self._documents("train", problems)), problems)
        return self._vocabulary

    def key_extra(self, split, problems):
        return {"vocabulary": self.vocabulary(problems)}

    def parse(self, split, writer, problems):
        encoder = chars.Encoder(self.vocabulary(problems))
        tokens = writer.ragged("tokens", encoder.dtype)
        labels, truncated, unknown = [], 0, 0
        keep = self.options.max_length - (1 if self.options.append_eos else 0)
        for label, text in self._documents(split, problems):
            ids, unk = encoder.encode(text, self.options.max_length, self.options.append_eos)
            tokens.append(ids)
            labels.append(label)
            truncated += len(text) > keep
            unknown += unk
        if not labels:
            problems.add(f"{split}: no reviews in {split}/neg and {split}/pos")
        writer.put("labels", np.asarray(labels, dtype=np.int32))
        return {"n": len(labels), "vocabulary": encoder.vocabulary, "truncated": truncated, "unknown_tokens": unknown,
                "vocabulary_sha256": _sha(encoder.vocabulary)}


def _sha(vocabulary) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(vocabulary).encode()).hexdigest()


def _options(options) -> Options:
    made = ds_.make_options(Options, "text", options)
    if made.max_length < 2 or made.min_freq < 1:
        raise LinrnnError(f"text: expected max_length >= 2 and min_freq >= 1, got {made.max_length}, {made.min_freq}")
    return made


def _is_imdb(folder) -> bool:
    return (folder / "train" / "pos").is_dir() or (folder / "test" / "pos").is_dir()


def dataset(root, cache=None, **options) -> Text:
    opts = _options(options)  # bad options first: they need no folder
    folder = layout.find(root, ("aclImdb", "imdb"), _is_imdb, "Text (IMDB)", "train/pos/ or test/pos/ (aclImdb)")
    return Text(folder, opts, cache)


load, check, info = ds_.entry_points(dataset)   # the loader interface (linrnn.tasks.data)
