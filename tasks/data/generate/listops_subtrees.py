"""DLR's ListOpsSubTrees generator (`src/dataloaders/prepare/listops/listops.py`, task `subtrees`).

The trees are LRA ListOps trees (generate/listops.py: same draws, same operators, VALUE_P = 0.25);
what is new is the supervision: the value of every operator node, recorded at the position of its
closing bracket `]` in the token sequence (the tokeniser drops parentheses and maps `]` to `X`), so a
causal model can be asked for each subtree's value the moment the subtree is complete.

For a tree, DLR walks the tokens in order and keeps, per token, (value, length, height, op): a digit
has (d, 1, 0, NONE), an operator's own token has NONE everywhere, and its `]` has (value of the node,
its token count, 1 + the largest child height, the operator). The file keeps these at the `]`
positions only (`SubTreeInds`), the root included, space-separated:

    Source  Target  SubTreeEvals  SubTreeLengths  SubTreeHeights  SubTreeOps  SubTreeInds  Id

with a header row, tab-separated by `csv.writer` (CRLF), in `subtrees_{train,val,test}.tsv`. Id is
the row's index in generation order across the three splits.

The paper's setting (DLR README) is the default here: 96,000 / 2,000 / 2,000 trees of length
7000 < L < 8180 (strict) with max_args 9, max_depth 15, written without parentheses, and with
"unique templates": a tree is dropped when its template (the expression with the digits deleted)
was seen before, so no two trees share a shape. DLR seeds each worker with seed + worker_id, so its
data depend on its worker count; here chunks are seeded from (seed, chunk index), as for ListOps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from random import Random

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data.generate import check_counts, check_seed, staged, stream_seed, worker_count
from linrnn.tasks.data.generate.listops import (
    CHUNK,
    END,
    TreeConfig,
    apply,
    collect_unique,
    sample_trees,
    split_rows,
    to_string,
    write_tsv,
)

FOLDER = "listops_subtrees"  # DLR's default data folder name
FILES = {"train": "subtrees_train.tsv", "val": "subtrees_val.tsv", "test": "subtrees_test.tsv"}
HEADER = ("Source", "Target", "SubTreeEvals", "SubTreeLengths", "SubTreeHeights", "SubTreeOps", "SubTreeInds", "Id")
NO_OP = "NONE"

PAPER = TreeConfig(max_depth=15, max_args=9, min_length=7000, max_length=8180)  # DLR README command


@dataclass(frozen=True)
class SubTrees:
    """The operator nodes of one tree, in the order of their closing brackets (post-order)."""

    values: tuple[int, ...]  # the node's value 0-9
    lengths: tuple[int, ...]  # its token count
    heights: tuple[int, ...]  # 1 + the largest child height (a digit has height 0)
    ops: tuple[str, ...]  # its operator
    positions: tuple[int, ...]  # index of its `]` among the tree's tokens


def subtrees(tree) -> SubTrees:
    """Every operator node's value, length, height, op and `]` position (see the module docstring)."""
    values, lengths, heights, ops, positions = [], [], [], [], []

    def walk(node, start: int) -> tuple[int, int, int]:  # -> (value, length, height)
        if isinstance(node, int):
            return node, 1, 0
        op, children = node
        position, args, height = start + 1, [], 0  # start: the operator's own token
        for child in children:
            child_value, child_length, child_height = walk(child, position)
            args.append(child_value)
            position += child_length
            height = max(height, child_height)
        node_value = apply(op, args)
        values.append(node_value)
        lengths.append(position - start + 1)
        heights.append(height + 1)
        ops.append(op)
        positions.append(position)  # the `]` follows the last child
        return node_value, position - start + 1, height + 1

    walk(tree, 0)
    return SubTrees(tuple(values), tuple(lengths), tuple(heights), tuple(ops), tuple(positions))


def template(expression: str) -> str:
    """DLR's template: the expression with digits and spaces deleted (its shape and operators)."""
    return expression.translate({ord(d): None for d in "0123456789 "})


def row(tree, parens: bool) -> tuple:
    """One TSV row without its Id: Source, Target and the five SubTree columns."""
    nodes = subtrees(tree)
    joined = [" ".join(map(str, column)) for column in
              (nodes.values, nodes.lengths, nodes.heights, nodes.ops, nodes.positions)]
    return (to_string(tree, parens), nodes.values[-1], *joined)


def _subtrees_chunk(task: tuple[int, int, int, tuple[TreeConfig, bool]]) -> list[tuple]:
    seed, index, size, (config, parens) = task
    rnd = Random(stream_seed(seed, index))
    return [row(tree, parens) for tree, _ in sample_trees(rnd, config, size)]


def statistics(rows: list[tuple]) -> dict:
    if not rows:
        return {"n": 0}
    lengths = np.array([int(r[3].rsplit(" ", 1)[-1]) for r in rows])  # the root's length
    evals = np.array([int(v) for r in rows for v in r[2].split()])
    heights = np.array([int(r[4].rsplit(" ", 1)[-1]) for r in rows])
    return {"n": len(rows), "root_labels": np.bincount([r[1] for r in rows], minlength=10).tolist(),
            "subtree_labels": np.bincount(evals, minlength=10).tolist(),
            "subtrees_per_tree": round(len(evals) / len(rows), 1),
            "length_min": int(lengths.min()), "length_mean": round(float(lengths.mean()), 1),
            "length_max": int(lengths.max()), "root_height_max": int(heights.max())}


def generate(out, n_train: int = 96_000, n_val: int = 2_000, n_test: int = 2_000, seed: int = 0,
             resolution=None, difficulty=None, workers=None, progress=None, config: TreeConfig = PAPER,
             parens: bool = False, unique_templates: bool = True) -> dict:
    """Write `out/listops_subtrees/subtrees_{train,val,test}.tsv` (see the module docstring).

    config            tree parameters and length bounds (default: the paper's, DLR README)
    parens            write LRA's parenthesised form (DLR: --no_paranthesis, i.e. False)
    unique_templates  keep one tree per template (DLR: True), else one per expression
    """
    if resolution is not None or difficulty is not None:
        raise LinrnnError("listops-subtrees: --resolution and --difficulty do not apply")
    counts = check_counts(n_train, n_val, n_test)
    seed, config, workers = check_seed(seed), config.check(), worker_count(workers)
    start = time.perf_counter()
    total = sum(counts)
    key = (lambda r: template(r[0])) if unique_templates else (lambda r: r[0])
    rows = collect_unique(_subtrees_chunk, seed, total, min(CHUNK, total), (config, bool(parens)), key=key,
                          workers=workers, progress=progress)
    rows = [(*r, i) for i, r in enumerate(rows)]
    splits = split_rows(rows, *counts)
    final = Path(out) / FOLDER
    with staged(final) as tmp:
        for split, split_rows_ in splits.items():
            write_tsv(tmp / FILES[split], HEADER, split_rows_)
    return {"task": "listops-subtrees", "folder": str(final), "counts": dict(zip(FILES, counts)), "seed": seed,
            "workers": workers, "seconds": round(time.perf_counter() - start, 3),
            "config": {"max_depth": config.max_depth, "max_args": config.max_args, "min_length": config.min_length,
                       "max_length": config.max_length, "parens": bool(parens),
                       "unique_templates": bool(unique_templates)},
            "statistics": {split: statistics(r) for split, r in splits.items()}}


__all__ = ["END", "FILES", "HEADER", "PAPER", "SubTrees", "generate", "row", "subtrees", "template"]
