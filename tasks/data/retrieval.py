"""LRA Retrieval (AAN): `tsv_data/new_aan_pairs.{train,eval,test}.tsv` (train 147,086 pairs).

Format: tab-separated, **no header**, one pair per line, 5 columns `label, id1, id2, text1, text2`
(S4's names; the ids are dropped). Quotes are ordinary characters (the official reader sets
`use_quote_delim=False`), so a line is split on tabs and nothing else. The label is read as a number
(LRA reads float, S4 casts to int) and must be 0 or 1. Splits: train = `train`, val = `eval`,
test = `test`.

Tokeniser (S4): characters; vocabulary from the train pairs' text1 and text2 with no frequency cut
(`min_freq` = 1; S4's "full size 98" with specials), built as in `chars.py`. Each document is cut to
L - 1 = 3999 characters and `<eos>` appended: L = 4000 per document (S4; the official LRA code takes
the first 10,000 bytes, byte-level, then 4000). Batches pad both documents to one common length (S4);
the model encodes each with shared weights (docs/tasks.md).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cache as cachemod
from linrnn.tasks.data import chars
from linrnn.tasks.data import dataset as ds_
from linrnn.tasks.data import layout

FILES = {"train": "new_aan_pairs.train.tsv", "val": "new_aan_pairs.eval.tsv", "test": "new_aan_pairs.test.tsv"}
COLUMNS = ("label", "id1", "id2", "text1", "text2")


@dataclasses.dataclass(frozen=True)
class Options:
    max_length: int = 4000  # L per document, including <eos> (S4)
    min_freq: int = 1  # a train character is in the vocabulary if seen this often (S4: no cut)
    append_eos: bool = True  # append <eos> to each document (S4)


def read_pairs(path, problems: ds_.Problems):
    """Yield (label, text1, text2) per line; problems for an empty file, a header, a wrong column count,
    a label that is not 0 or 1."""
    name = path.name
    empty = True
    with open(path, "rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                problems.add(f"{name}: line {line_number}: not UTF-8 ({err.reason} at byte {err.start})")
                continue
            line = line.rstrip("\r\n")
            if not line:
                continue
            empty = False
            fields = line.split("\t")
            if len(fields) != len(COLUMNS):
                problems.add(f"{name}: line {line_number}: expected {len(COLUMNS)} tab-separated columns "
                             f"({', '.join(COLUMNS)}), found {len(fields)}")
                continue
            try:
                value = float(fields[0])
            except ValueError:
                if line_number == 1:
                    problems.add(f"{name}: line 1 looks like a header ({fields[0][:20]!r} is not a label); "
                                 "AAN files have no header")
                else:
                    problems.add(f"{name}: line {line_number}: label {fields[0][:20]!r} is not a number")
                continue
            if value not in (0.0, 1.0):
                problems.add(f"{name}: line {line_number}: label {fields[0]!r} out of range (expected 0 or 1)")
                continue
            yield int(value), fields[3], fields[4]
    if empty:
        problems.add(f"{name}: empty file (expected lines of {', '.join(COLUMNS)})")


class Retrieval(ds_.Dataset):
    task = "retrieval"
    format_version = 1
    num_classes = 2

    def __init__(self, folder, options: Options, cache=None):
        super().__init__(folder, options, "retrieval", cache)
        self.sequences = (ds_.SequenceSpec("tokens1", chars.PAD, options.max_length),
                          ds_.SequenceSpec("tokens2", chars.PAD, options.max_length))
        self._vocabulary: list[str] | None = None

    def sources(self, split):
        path = self.folder / FILES[split]
        if not path.is_file():
            raise LinrnnError(f"missing split {split}: {path} does not exist")
        return cachemod.Sources(self.folder, files=(FILES[split],))

    def vocabulary(self, problems):
        """The train vocabulary, from its own cache entry."""
        if self._vocabulary is None:
            self._vocabulary = chars.train_vocabulary(
                self, lambda: (text for _, text1, text2 in read_pairs(self.folder / FILES["train"], problems)
                               for text in (text1, text2)), problems)
        return self._vocabulary

    def key_extra(self, split, problems):
        return {"vocabulary": self.vocabulary(problems)}

    def parse(self, split, writer, problems):
        encoder = chars.Encoder(self.vocabulary(problems))
        docs = (writer.ragged("tokens1", encoder.dtype), writer.ragged("tokens2", encoder.dtype))
        labels, truncated, unknown = [], 0, 0
        keep = self.options.max_length - (1 if self.options.append_eos else 0)
        for label, *texts in read_pairs(self.folder / FILES[split], problems):
            for out, text in zip(docs, texts):
                ids, unk = encoder.encode(text, self.options.max_length, self.options.append_eos)
                out.append(ids)
                truncated += len(text) > keep
                unknown += unk
            labels.append(label)
        writer.put("labels", np.asarray(labels, dtype=np.int32))
        return {"n": len(labels), "vocabulary": encoder.vocabulary, "truncated": truncated, "unknown_tokens": unknown}


def _options(options) -> Options:
    made = ds_.make_options(Options, "retrieval", options)
    if made.max_length < 2 or made.min_freq < 1:
        raise LinrnnError(f"retrieval: expected max_length >= 2 and min_freq >= 1, got {made.max_length}, {made.min_freq}")
    return made


def dataset(root, cache=None, **options) -> Retrieval:
    opts = _options(options)  # bad options first: they need no folder
    folder = layout.find(root, ("tsv_data", "aan"), layout.has_any(*FILES.values()),
                         "Retrieval (AAN)", "new_aan_pairs.{train,eval,test}.tsv")
    return Retrieval(folder, opts, cache)


load, check, info = ds_.entry_points(dataset)   # the loader interface (linrnn.tasks.data)
