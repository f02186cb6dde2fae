"""The ListOpsSubTrees generator: every subtree value at its `]`, DLR's file format read back by the
loader, unique templates, and same seed -> same bytes."""

from __future__ import annotations

import csv
import hashlib

import numpy as np
import pytest

from linrnn.tasks.data import listops_subtrees as loader
from linrnn.tasks.data.generate import GENERATORS
from linrnn.tasks.data.generate import listops_subtrees as gen
from linrnn.tasks.data.generate.listops import TreeConfig

SMALL = TreeConfig(max_depth=15, max_args=9, min_length=40, max_length=200)


def subtree_values(source: str) -> list[tuple[int, int]]:
    """(position of `]`, value) of every operator node, by a stack over the tokens (hand-written)."""
    found, stack = [], []
    for position, token in enumerate(loader.tokenize(source)):
        if token.startswith("["):
            stack.append((token, []))
        elif token == "X":
            op, args = stack.pop()
            ordered = sorted(args)
            middle = len(ordered) // 2
            median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) // 2
            value = {"[MIN": min(args), "[MAX": max(args), "[SM": sum(args) % 10, "[MED": median}[op]
            found.append((position, value))
            if stack:
                stack[-1][1].append(value)
        else:
            stack[-1][1].append(int(token))
    return found


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("subtrees")
    GENERATORS["listops-subtrees"](out, n_train=30, n_val=5, n_test=5, seed=2, workers=1, config=SMALL)
    return out


def rows(out, split):
    return list(csv.reader(open(out / "listops_subtrees" / f"subtrees_{split}.tsv", newline=""), delimiter="\t"))


def test_every_subtree_value_and_position_is_right(small):
    ids = []
    for split in ("train", "val", "test"):
        table = rows(small, split)
        assert table[0] == list(gen.HEADER)
        for row in table[1:]:
            source, target, evals, lengths, heights, ops, inds, row_id = row
            expected = subtree_values(source)
            assert [(int(i), int(v)) for i, v in zip(inds.split(), evals.split())] == expected
            assert int(target) == expected[-1][1] and int(inds.split()[-1]) == len(loader.tokenize(source)) - 1
            assert int(lengths.split()[-1]) == len(loader.tokenize(source))
            assert len(ops.split()) == len(expected) and int(heights.split()[-1]) >= 1
            assert "(" not in source and 40 < len(loader.tokenize(source)) < 200
            ids.append(int(row_id))
    assert ids == list(range(40))


def test_templates_are_unique(small):
    sources = [r[0] for split in ("train", "val", "test") for r in rows(small, split)[1:]]
    assert len({gen.template(s) for s in sources}) == len(sources) == 40


def test_the_loader_puts_each_value_at_its_bracket_and_ignores_the_rest(small, tmp_path):
    split = loader.load(small, "val", cache=tmp_path, max_length=256)
    table = rows(small, "val")[1:]
    assert len(split) == len(table) == 5
    for i, row in enumerate(table):
        targets = np.asarray(split.row("targets", i))
        expected = np.full(len(loader.tokenize(row[0])), loader.IGNORE_INDEX)
        for position, value in subtree_values(row[0]):
            expected[position] = value
        assert targets.tolist() == expected.tolist()
        assert np.asarray(split.row("tokens", i)).tolist() == [loader.TOKEN_ID[t] for t in loader.tokenize(row[0])]


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    def run(name, seed, workers):
        GENERATORS["listops-subtrees"](tmp_path / name, n_train=4, n_val=1, n_test=1, seed=seed, workers=workers,
                                       config=SMALL)
        return [hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((tmp_path / name / "listops_subtrees").iterdir())]
    first = run("a", 1, 1)
    assert first == run("b", 1, 2)
    assert first[1] != run("c", 2, 1)[1]
