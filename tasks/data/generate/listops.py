"""The LRA ListOps generator (`lra_benchmarks/data/listops.py`), as published, seeded and parallel.

An expression is a tree. `generate_tree(depth)` draws r ~ U[0, 1) while depth < max_depth (r = 1 at
max_depth); r > VALUE_P = 0.25 gives a leaf, a digit drawn uniformly from 0-9; otherwise an operator
node with randint(2, max_args) children, each drawn at depth + 1, then the operator drawn uniformly
from MIN, MAX, MED, SM (FIRST and LAST exist in LRA's code but are switched off). The root is drawn at
depth 1 with max_depth = 10 and max_args = 10. The draws happen in exactly that order, so a
`random.Random` fed the same numbers as LRA's module-level `random` draws the same trees.

    MIN -> min, MAX -> max, MED -> int(median) (the mean of the two middle values, truncated),
    SM  -> sum mod 10

A tree's length counts digits, operators and closing brackets: the token count after the LRA
tokeniser (`]` -> `X`, parentheses dropped). A tree is kept only if 500 < length < 2000 (strict), and
kept once: LRA adds trees to a `set` until train + val + test are there, then splits in iteration
order (first 96,000 train, next 2,000 val, last 2,000 test).

The string form nests every binary tuple node of LRA's tree in parentheses: [MAX 2 9] is the tuple
(((MAX, 2), 9), ]) and is written `( ( ( [MAX 2 ) 9 ) ] )`.

Choices of ours (docs/data.md): LRA's set of tuples iterates in an order that depends on Python's
per-process string hashing, so its split is not reproducible; here duplicates are removed through an
insertion-ordered dict, so the order is the order of generation. Generation runs in chunks of
`CHUNK` kept trees; chunk c draws from `random.Random(stream_seed(seed, c))`, and chunks are merged
in index order, so the output depends on the seed and the split sizes, never on the worker count.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import time
from collections.abc import Callable, Iterable
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from random import Random

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data.generate import check_counts, check_seed, staged, stream_seed, worker_count

MIN, MAX, MED, SUM_MOD, END = "[MIN", "[MAX", "[MED", "[SM", "]"
OPERATORS = (MIN, MAX, MED, SUM_MOD)  # LRA: [MIN, MAX, MED, SUM_MOD]  # , FIRST, LAST]
VALUES = range(10)
VALUE_P = 0.25  # a node below max_depth is an operator with probability VALUE_P (r <= VALUE_P)

FOLDER = "listops-1000"  # the archive's folder name
FILES = {"train": "basic_train.tsv", "val": "basic_val.tsv", "test": "basic_test.tsv"}
HEADER = ("Source", "Target")
CHUNK = 2000  # kept trees per chunk (one task of a worker process)

# A tree: a digit (leaf) or (operator, (child, child, ...)).
Tree = "int | tuple[str, tuple]"


@dataclass(frozen=True)
class TreeConfig:
    """The generator's parameters; the defaults are LRA's flags."""

    max_depth: int = 10  # nodes at this depth are leaves (the root is at depth 1)
    max_args: int = 10  # an operator has randint(2, max_args) children
    min_length: int = 500  # keep a tree only if min_length < length ...
    max_length: int = 2000  # ... < max_length (both strict, as LRA)

    def check(self) -> "TreeConfig":
        for name, low in (("max_depth", 1), ("max_args", 2), ("min_length", 0), ("max_length", 2)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise LinrnnError(f"{name}: expected an integer >= {low}, found {value!r}")
        if self.max_length - self.min_length < 2:
            raise LinrnnError(f"min_length < length < max_length: expected room for a length, found "
                              f"{self.min_length} and {self.max_length}")
        return self


def generate_tree(rnd: Random, depth: int, max_depth: int, max_args: int) -> tuple[object, int]:
    """One random tree and its length, with LRA's draws in LRA's order (see the module docstring)."""
    r = rnd.random() if depth < max_depth else 1
    if r > VALUE_P:
        return rnd.choice(VALUES), 1
    length = 2  # the operator and its closing bracket
    children = []
    for _ in range(rnd.randint(2, max_args)):
        child, child_length = generate_tree(rnd, depth + 1, max_depth, max_args)
        children.append(child)
        length += child_length
    return (rnd.choice(OPERATORS), tuple(children)), length


def apply(op: str, args: list[int]) -> int:
    """LRA's semantics; MED is int(np.median(args)), i.e. the truncated mean of the middle values."""
    if op == MIN:
        return min(args)
    if op == MAX:
        return max(args)
    if op == MED:
        ordered = sorted(args)
        middle = len(ordered) // 2
        return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) // 2
    if op == SUM_MOD:
        return sum(args) % 10
    raise ValueError(f"unknown operator {op!r}")


def value(tree) -> int:
    """The expression's value, 0-9."""
    if isinstance(tree, int):
        return tree
    op, children = tree
    return apply(op, [value(c) for c in children])


def to_string(tree, parens: bool = True) -> str:
    """LRA's string form (`( ( ( [MAX 2 ) 9 ) ] )`), or with parens=False DLR's `[MAX 2 9 ]`."""
    if isinstance(tree, int):
        return str(tree)
    op, children = tree
    if not parens:
        return " ".join([op, *(to_string(c, False) for c in children), END])
    text = f"( {op} {to_string(children[0])} )"
    for child in children[1:]:
        text = f"( {text} {to_string(child)} )"
    return f"( {text} {END} )"


class _TooLong(Exception):
    """Raised inside `draw_tree` once a tree has reached max_length tokens: it would be rejected."""


def draw_tree(rnd: Random, config: TreeConfig) -> tuple[object, int] | None:
    """`generate_tree(rnd, 1, ...)`, except that drawing stops (None) once the tree is too long.

    Why: most of LRA's time goes into trees far over the length bound, which are then thrown away.
    A tree that is stopped would have been rejected, and every attempt starts afresh, so the kept
    trees have exactly LRA's distribution (and a tree that completes is the one `generate_tree`
    draws from the same state); only the random stream after a stopped tree differs.
    """
    limit, max_depth, max_args = config.max_length, config.max_depth, config.max_args
    uniform, choice, randint = rnd.random, rnd.choice, rnd.randint
    count = 0

    def node(depth: int):
        nonlocal count
        r = uniform() if depth < max_depth else 1
        if r > VALUE_P:
            count += 1
            if count >= limit:
                raise _TooLong
            return choice(VALUES)
        count += 2
        if count >= limit:
            raise _TooLong
        children = tuple([node(depth + 1) for _ in range(randint(2, max_args))])
        return choice(OPERATORS), children

    try:
        tree = node(1)
    except _TooLong:
        return None
    return tree, count


def sample_trees(rnd: Random, config: TreeConfig, count: int) -> list[tuple[object, int]]:
    """`count` trees (with their lengths) inside the strict length bounds, by rejection as LRA."""
    kept = []
    while len(kept) < count:
        drawn = draw_tree(rnd, config)
        if drawn is not None and config.min_length < drawn[1] < config.max_length:
            kept.append(drawn)
    return kept


def _listops_chunk(task: tuple[int, int, int, TreeConfig]) -> list[tuple[str, int, int]]:
    """Chunk `index` of run `seed`: `size` rows (source, target, length); a worker process's job."""
    seed, index, size, config = task
    rnd = Random(stream_seed(seed, index))
    return [(to_string(tree), value(tree), length) for tree, length in sample_trees(rnd, config, size)]


def collect_unique(chunk: Callable[[tuple], list[tuple]], seed: int, total: int, chunk_size: int, config,
                   key: Callable[[tuple], str], workers: int, progress=None) -> list[tuple]:
    """`total` rows, first-seen wins under `key`, from chunks 0, 1, 2, ... merged in index order.

    Chunks are computed in waves just large enough for the rows still missing (duplicates are rare),
    so the result depends on (seed, total, chunk_size, config) and not on `workers`.
    """
    rows: dict[str, tuple] = {}
    next_index = 0
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) if workers > 1 else None
    try:
        while len(rows) < total:
            wave = math.ceil((total - len(rows)) / chunk_size)
            tasks = [(seed, i, chunk_size, config) for i in range(next_index, next_index + wave)]
            next_index += wave
            results: Iterable[list[tuple]] = pool.map(chunk, tasks) if pool else map(chunk, tasks)
            for rows_of_chunk in results:
                for row in rows_of_chunk:
                    if len(rows) == total:
                        break
                    rows.setdefault(key(row), row)
                if progress is not None:
                    progress(len(rows), total)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return list(rows.values())


def write_tsv(path: Path, header: Iterable[str], rows: Iterable[Iterable]) -> None:
    """LRA's writer: `csv.writer(delimiter='\\t')`, hence CRLF line ends, header first."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(list(header))
        writer.writerows(rows)


def split_rows(rows: list, n_train: int, n_val: int, n_test: int) -> dict[str, list]:
    """LRA's split: in order, the first n_train, the next n_val, the last n_test."""
    return {"train": rows[:n_train], "val": rows[n_train:n_train + n_val],
            "test": rows[n_train + n_val:n_train + n_val + n_test]}


def statistics(rows: list[tuple[str, int, int]]) -> dict:
    """Label counts and the length histogram (bins of 100 tokens) of a list of (source, target, length)."""
    if not rows:
        return {"n": 0}
    targets = np.array([r[1] for r in rows])
    lengths = np.array([r[2] for r in rows])
    return {"n": len(rows), "labels": np.bincount(targets, minlength=10).tolist(),
            "length_min": int(lengths.min()), "length_mean": round(float(lengths.mean()), 1),
            "length_max": int(lengths.max()),
            "length_histogram_100": {int(k): int(v) for k, v in zip(*np.unique(lengths // 100 * 100,
                                                                               return_counts=True))}}


def generate(out, n_train: int = 96_000, n_val: int = 2_000, n_test: int = 2_000, seed: int = 0,
             resolution=None, difficulty=None, workers=None, progress=None,
             config: TreeConfig = TreeConfig(), **tree) -> dict:
    """Write `out/listops-1000/basic_{train,val,test}.tsv` as LRA does (see the module docstring).

    Full size (96k/2k/2k) is LRA's; docs/data.md gives the time on two cores. `tree` overrides fields of
    `config` by name (max_depth, max_args, min_length, max_length): shorter, shallower expressions for a
    positive control that a small model learns at this machine's scale.
    """
    if resolution is not None or difficulty is not None:
        raise LinrnnError("listops: --resolution and --difficulty do not apply (they are Pathfinder options)")
    fields = {f.name for f in dataclasses.fields(TreeConfig)}
    unknown = sorted(set(tree) - fields)
    if unknown:
        raise LinrnnError(f"listops: unknown option(s) {', '.join(unknown)}: expected {', '.join(sorted(fields))}")
    counts = check_counts(n_train, n_val, n_test)
    config = dataclasses.replace(config, **tree)
    seed, config, workers = check_seed(seed), config.check(), worker_count(workers)
    start = time.perf_counter()
    total = sum(counts)
    rows = collect_unique(_listops_chunk, seed, total, min(CHUNK, total), config, key=lambda r: r[0],
                          workers=workers, progress=progress)
    splits = split_rows(rows, *counts)
    final = Path(out) / FOLDER
    with staged(final) as tmp:
        for split, split_rows_ in splits.items():
            write_tsv(tmp / FILES[split], HEADER, [(source, target) for source, target, _ in split_rows_])
    return {"task": "listops", "folder": str(final), "counts": dict(zip(FILES, counts)), "seed": seed,
            "workers": workers, "seconds": round(time.perf_counter() - start, 3),
            "statistics": {split: statistics(r) for split, r in splits.items()}}
