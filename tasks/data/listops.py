"""LRA ListOps: `listops-1000/basic_{train,val,test}.tsv` (96,000 / 2,000 / 2,000 in the archive).

Format: tab-separated, written by LRA's generator with Python's `csv.writer` (so CRLF line ends), a
header row `Source\tTarget`, then one row per example: the expression with every tuple node in
parentheses, e.g. `( ( ( [MAX 2 ) 9 ) ] )` for [MAX 2 9], and the answer, an integer 0-9.

Tokeniser (LRA and S4): `]` becomes `X`, `(` and `)` are deleted, the rest split on whitespace. The
vocabulary is fixed, not read from the data: `<pad>` 0, `<unk>` 1, `<eos>` 2, the digits 0-9, `[MIN`,
`[MAX`, `[MED`, `[SM`, `X` (18 tokens, S4's "actual size 18"; S4's torchtext ids differ in order,
which no model can tell). `<eos>` is appended and L = 2048 (S4; the official LRA code uses 2000
without `<eos>`: `max_length=2000, append_eos=False`). An unknown token becomes `<unk>`, is counted,
and `linrnn data check` reports it.
"""

from __future__ import annotations

import csv
import dataclasses
import io

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cache as cachemod
from linrnn.tasks.data import dataset as ds_
from linrnn.tasks.data import layout

FILES = {"train": "basic_train.tsv", "val": "basic_val.tsv", "test": "basic_test.tsv"}
HEADER = ["Source", "Target"]
VOCABULARY = ("<pad>", "<unk>", "<eos>", *map(str, range(10)), "[MIN", "[MAX", "[MED", "[SM", "X")
PAD, UNK, EOS = 0, 1, 2
TOKEN_ID = {t: i for i, t in enumerate(VOCABULARY)}
CLASSES = 10


@dataclasses.dataclass(frozen=True)
class Options:
    max_length: int = 2048  # L, including <eos> (S4: 2048; official LRA: 2000 without <eos>)
    append_eos: bool = True  # append <eos> (S4) or not (official LRA)


def tokenize(source: str) -> list[str]:
    """LRA/S4 tokeniser: `]` -> `X`, parentheses deleted, split on whitespace."""
    return source.replace("]", "X").replace("(", "").replace(")", "").split()


def read_tsv(path, problems: ds_.Problems) -> list[tuple[str, int]]:
    """The (source, target) rows of one ListOps file; problems for a missing header, a wrong column
    count, a bad target; an empty file is a problem."""
    name = path.name
    text = path.read_bytes().decode("utf-8", errors="strict")
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter="\t"))
    if not rows:
        problems.add(f"{name}: empty file (expected the header {chr(9).join(HEADER)!r} and rows)")
        return []
    if rows[0] != HEADER:
        problems.add(f"{name}: line 1: expected the header 'Source<TAB>Target', found {chr(9).join(rows[0])[:60]!r}")
        return []
    out = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != 2:
            problems.add(f"{name}: line {line}: expected 2 tab-separated columns (Source, Target), found {len(row)}")
            continue
        try:
            target = int(row[1])
        except ValueError:
            problems.add(f"{name}: line {line}: Target {row[1][:20]!r} is not an integer")
            continue
        if not 0 <= target < CLASSES:
            problems.add(f"{name}: line {line}: Target {target} out of range 0-9")
            continue
        out.append((row[0], target))
    if len(rows) == 1:
        problems.add(f"{name}: no examples after the header")
    return out


class ListOps(ds_.Dataset):
    task = "listops"
    format_version = 1
    num_classes = CLASSES

    def __init__(self, folder, options: Options, cache=None):
        super().__init__(folder, options, "listops", cache)
        self.sequences = (ds_.SequenceSpec("tokens", PAD, options.max_length),)

    def sources(self, split):
        path = self.folder / FILES[split]
        if not path.is_file():
            raise LinrnnError(f"missing split {split}: {path} does not exist")
        return cachemod.Sources(self.folder, files=(FILES[split],))

    def parse(self, split, writer, problems):
        rows = read_tsv(self.folder / FILES[split], problems)
        tokens = writer.ragged("tokens", np.uint8)
        keep = self.options.max_length - (1 if self.options.append_eos else 0)
        truncated = unknown = 0
        for source, _ in rows:
            ids = [TOKEN_ID.get(t, UNK) for t in tokenize(source)]
            unknown += ids.count(UNK)
            truncated += len(ids) > keep
            ids = ids[:keep] + ([EOS] if self.options.append_eos else [])
            tokens.append(np.asarray(ids, dtype=np.uint8))
        writer.put("labels", np.asarray([t for _, t in rows], dtype=np.int32))
        return {"n": len(rows), "vocabulary": list(VOCABULARY), "truncated": truncated, "unknown_tokens": unknown}

    def check_split(self, split, problems):
        unknown = split.manifest["extra"].get("unknown_tokens", 0)
        if unknown:
            problems.add(f"{split.split}: {unknown} tokens outside the ListOps vocabulary (mapped to <unk>)")


def _options(options) -> Options:
    made = ds_.make_options(Options, "listops", options)
    if made.max_length < 2:
        raise LinrnnError(f"listops: max_length must be at least 2, got {made.max_length}")
    return made


def dataset(root, cache=None, **options) -> ListOps:
    opts = _options(options)  # bad options first: they need no folder
    folder = layout.find(root, ("listops-1000", "listops"), layout.has_any(*FILES.values()),
                         "ListOps", "basic_{train,val,test}.tsv")
    return ListOps(folder, opts, cache)


load, check, info = ds_.entry_points(dataset)   # the loader interface (linrnn.tasks.data)
