"""DLR ListOpsSubTrees: `listops_subtrees/subtrees_{train,val,test}.tsv` (DLR's generator; ours writes it).

Format (DLR `prepare/listops/listops.py`): tab-separated by Python's `csv.writer` (CRLF line ends),
header `Source Target SubTreeEvals SubTreeLengths SubTreeHeights SubTreeOps SubTreeInds Id`. Source is
the expression (DLR's paper data: without parentheses); SubTreeEvals and SubTreeInds are
space-separated: the value of every operator node and the index, in the tokenised Source, of its
closing `]`, the root last. The other SubTree columns are statistics for analysis (read, not stored).

Tokeniser (LRA's, as DLR): `]` -> `X`, parentheses deleted, split on whitespace. Vocabulary: fixed,
`<pad>` 0, `<unk>` 1, the digits, `[MIN`, `[MAX`, `[MED`, `[SM`, `X` (17 tokens; DLR builds the same
tokens from train with torchtext, in another order, which no model can tell).

Arrays per split: `tokens` (ragged uint8 ids) and `targets` (ragged int8, same lengths): the subtree
value 0-9 at each `]`, IGNORE_INDEX (-100) elsewhere, DLR's `accuracy_ignore_m100` positions. DLR maps
target digits to vocabulary ids; here they are the values 0-9 (10 classes): the same labelling up to a
renaming. A sequence longer than `max_length` is an error (DLR asserts it; no truncation); DLR's paper
setting has 7000 < length < 8180 and L = 8192.
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

FILES = {"train": "subtrees_train.tsv", "val": "subtrees_val.tsv", "test": "subtrees_test.tsv"}
HEADER = ["Source", "Target", "SubTreeEvals", "SubTreeLengths", "SubTreeHeights", "SubTreeOps", "SubTreeInds", "Id"]
VOCABULARY = ("<pad>", "<unk>", *map(str, range(10)), "[MIN", "[MAX", "[MED", "[SM", "X")
PAD, UNK = 0, 1
TOKEN_ID = {t: i for i, t in enumerate(VOCABULARY)}
CLASSES = 10
IGNORE_INDEX = -100  # DLR's ignore index for positions that are not a `]`


@dataclasses.dataclass(frozen=True)
class Options:
    max_length: int = 8192  # L: DLR's l_max for the paper's data (trees of 7000-8180 tokens)


def tokenize(source: str) -> list[str]:
    """LRA/DLR tokeniser: `]` -> `X`, parentheses deleted, split on whitespace."""
    return source.replace("]", "X").replace("(", "").replace(")", "").split()


def parse_row(row: list[str], where: str, max_length: int) -> tuple[np.ndarray, np.ndarray]:
    """One TSV row -> (token ids uint8 (L), targets int8 (L)); a LinrnnError naming `where` if the
    row is malformed (columns, numbers, indices that are not a `]`, a root value unlike Target)."""
    if len(row) != len(HEADER):
        raise LinrnnError(f"{where}: expected {len(HEADER)} tab-separated columns ({', '.join(HEADER)}), found {len(row)}")
    tokens = tokenize(row[0])
    if len(tokens) > max_length:
        raise LinrnnError(f"{where}: {len(tokens)} tokens, more than max_length {max_length} (no truncation, as DLR)")
    try:
        target = int(row[1])
        values = [int(v) for v in row[2].split()]
        positions = [int(v) for v in row[6].split()]
    except ValueError:
        raise LinrnnError(f"{where}: Target, SubTreeEvals and SubTreeInds must be integers") from None
    if len(values) != len(positions) or not values:
        raise LinrnnError(f"{where}: {len(values)} SubTreeEvals but {len(positions)} SubTreeInds (expected equal, >= 1)")
    if any(not 0 <= v < CLASSES for v in values) or not 0 <= target < CLASSES:
        raise LinrnnError(f"{where}: a value out of range 0-9")
    if values[-1] != target:
        raise LinrnnError(f"{where}: the root's value {values[-1]} (last SubTreeEvals) differs from Target {target}")
    targets = np.full(len(tokens), IGNORE_INDEX, dtype=np.int8)
    for value, position in zip(values, positions):
        if not 0 <= position < len(tokens) or tokens[position] != "X":
            raise LinrnnError(f"{where}: SubTreeInds {position} is not the position of a `]` in Source")
        targets[position] = value
    ids = np.fromiter((TOKEN_ID.get(t, UNK) for t in tokens), dtype=np.uint8, count=len(tokens))
    return ids, targets


def read_rows(path, problems: ds_.Problems) -> list[list[str]]:
    """The data rows of one file after its header; problems for an empty file or a wrong header."""
    text = path.read_bytes().decode("utf-8", errors="strict")
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter="\t"))
    if not rows:
        problems.add(f"{path.name}: empty file (expected the header and rows)")
        return []
    if rows[0] != HEADER:
        problems.add(f"{path.name}: line 1: expected the header {' '.join(HEADER)!r}, found {' '.join(rows[0])[:80]!r}")
        return []
    if len(rows) == 1:
        problems.add(f"{path.name}: no examples after the header")
    return rows[1:]


class ListOpsSubTrees(ds_.Dataset):
    task = "listops-subtrees"
    format_version = 1
    labels = None  # the targets are per token
    num_classes = CLASSES

    def __init__(self, folder, options: Options, cache=None):
        super().__init__(folder, options, "listops-subtrees", cache)
        self.sequences = (ds_.SequenceSpec("tokens", PAD, options.max_length),
                          ds_.SequenceSpec("targets", IGNORE_INDEX, options.max_length, role="target"))

    def sources(self, split):
        return cachemod.Sources(self.folder, files=(FILES[split],))

    def parse(self, split, writer, problems):
        path = self.folder / FILES[split]
        if not path.is_file():
            raise LinrnnError(f"missing split {split}: {path} does not exist")
        tokens, targets = writer.ragged("tokens", np.uint8), writer.ragged("targets", np.int8)
        n = unknown = scored = 0
        for line, row in enumerate(read_rows(path, problems), start=2):
            try:
                ids, labels = parse_row(row, f"{path.name}: line {line}", self.options.max_length)
            except LinrnnError as err:
                problems.add(str(err))
                continue
            tokens.append(ids)
            targets.append(labels)
            n += 1
            unknown += int((ids == UNK).sum())
            scored += int((labels != IGNORE_INDEX).sum())
        return {"n": n, "vocabulary": list(VOCABULARY), "unknown_tokens": unknown, "scored_positions": scored}


def _options(options) -> Options:
    made = ds_.make_options(Options, "listops-subtrees", options)
    if made.max_length < 2:
        raise LinrnnError(f"listops-subtrees: max_length must be at least 2, got {made.max_length}")
    return made


def dataset(root, cache=None, **options) -> ListOpsSubTrees:
    folder = layout.find(root, ("listops_subtrees", "listops-subtrees"), layout.has_any(*FILES.values()),
                         "ListOpsSubTrees", "subtrees_{train,val,test}.tsv")
    return ListOpsSubTrees(folder, _options(options), cache)


load, check, info = ds_.entry_points(dataset)   # the loader interface (linrnn.tasks.data)
