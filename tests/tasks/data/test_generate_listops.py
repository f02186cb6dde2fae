"""The ListOps generator: LRA's algorithm, its file format (read back by the ListOps loader), its
published statistics, and same seed -> same bytes."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path
from random import Random

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import listops as loader
from linrnn.tasks.data.generate import GENERATORS
from linrnn.tasks.data.generate import listops as gen


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def evaluate(source: str) -> int:
    """A hand-written evaluator of the parenthesised string form (a stack over the tokens)."""
    stack: list = []
    for token in source.replace("(", " ").replace(")", " ").split():
        if token.startswith("["):
            stack.append([token])
        elif token == "]":
            op, *args = stack.pop()
            value = {"[MIN": min(args), "[MAX": max(args), "[SM": sum(args) % 10,
                     "[MED": int(np.median(args))}[op]
            if stack:
                stack[-1].append(value)
            else:
                return value
        else:
            stack[-1].append(int(token)) if stack else stack.append(int(token))
    return stack[0]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("listops")
    summary = GENERATORS["listops"](out, n_train=30, n_val=5, n_test=5, seed=3, workers=1)
    return out, summary


def test_files_are_lra_tsv_and_the_listops_loader_reads_them(small, tmp_path):
    out, summary = small
    folder = out / "listops-1000"
    assert sorted(p.name for p in folder.iterdir()) == ["basic_test.tsv", "basic_train.tsv", "basic_val.tsv"]
    raw = (folder / "basic_val.tsv").read_bytes()
    assert raw.startswith(b"Source\tTarget\r\n")  # csv.writer's CRLF, as LRA's files
    for split, n in (("train", 30), ("val", 5), ("test", 5)):
        rows = list(csv.reader(open(folder / f"basic_{split}.tsv", newline=""), delimiter="\t"))[1:]
        loaded = loader.load(out, split, cache=tmp_path / "cache")
        assert len(rows) == len(loaded) == n
        assert np.asarray(loaded.arrays["labels"]).tolist() == [int(t) for _, t in rows]
        assert loaded.row("tokens", 0)[-1] == loader.EOS
    assert summary["counts"] == {"train": 30, "val": 5, "test": 5}


def test_targets_are_the_values_lengths_strictly_inside_500_2000_and_no_duplicates(small):
    out, _ = small
    sources = []
    for split in ("train", "val", "test"):
        for source, target in list(csv.reader(open(out / "listops-1000" / f"basic_{split}.tsv", newline=""),
                                              delimiter="\t"))[1:]:
            assert evaluate(source) == int(target)
            assert 500 < len(loader.tokenize(source)) < 2000
            assert source.startswith("( ") and source.endswith(" ] )")
            sources.append(source)
    assert len(set(sources)) == len(sources) == 40


def test_string_form_nests_every_binary_tuple_node_as_lra():
    assert gen.to_string(("[MAX", (2, 9))) == "( ( ( [MAX 2 ) 9 ) ] )"
    assert gen.to_string(("[SM", (1, ("[MIN", (3, 4)), 5)), parens=False) == "[SM 1 [MIN 3 4 ] 5 ]"
    assert gen.apply("[MED", [1, 2, 3, 8]) == 2 and gen.apply("[MED", [4, 9]) == 6  # int(np.median): truncated


def test_early_stop_draws_the_same_trees_as_lras_recursion_when_they_complete():
    config = gen.TreeConfig()
    lra, ours = Random(11), Random(11)
    completed = 0
    for _ in range(300):
        ours.setstate(lra.getstate())
        tree, length = gen.generate_tree(lra, 1, config.max_depth, config.max_args)
        drawn = gen.draw_tree(ours, config)
        if length < config.max_length:
            assert drawn == (tree, length)
            completed += 1
        else:
            assert drawn is None
    assert completed > 250


def test_label_balance_and_length_histogram_of_kept_trees():
    """LRA calls ListOps a roughly balanced 10-way task: every class between 2% and 30% of 300 trees
    (MIN and MAX pull towards 0 and 9, so it is not uniform); lengths fill the 500-2000 window."""
    rows = gen._listops_chunk((7, 0, 300, gen.TreeConfig()))
    stats = gen.statistics(rows)
    freq = np.array(stats["labels"]) / 300
    assert freq.min() >= 0.02 and freq.max() <= 0.30, stats["labels"]
    assert 500 < stats["length_min"] and stats["length_max"] < 2000
    assert stats["length_histogram_100"].get(500, 0) > stats["length_histogram_100"].get(1900, 0)  # decreasing


def test_same_seed_same_bytes_any_worker_count_and_another_seed_differs(tmp_path):
    runs = {}
    for name, seed, workers in (("a", 5, 1), ("b", 5, 2), ("c", 6, 1)):
        GENERATORS["listops"](tmp_path / name, n_train=8, n_val=2, n_test=2, seed=seed, workers=workers)
        runs[name] = digest(tmp_path / name / "listops-1000")
    assert runs["a"] == runs["b"]
    assert runs["a"]["basic_train.tsv"] != runs["c"]["basic_train.tsv"]


def test_existing_output_is_never_overwritten_and_bad_arguments_are_one_line_errors(tmp_path):
    GENERATORS["listops"](tmp_path, n_train=2, n_val=1, n_test=1, seed=0, workers=1)
    before = digest(tmp_path / "listops-1000")
    with pytest.raises(LinrnnError, match="already exists"):
        GENERATORS["listops"](tmp_path, n_train=2, n_val=1, n_test=1, seed=1, workers=1)
    assert digest(tmp_path / "listops-1000") == before
    assert not list(tmp_path.glob(".partial-*"))
    for bad, message in ((dict(n_train=-1), "n_train"), (dict(seed=-2), "seed"), (dict(workers=0), "workers"),
                         (dict(resolution=32), "do not apply")):
        with pytest.raises(LinrnnError, match=message):
            GENERATORS["listops"](tmp_path / "x", **({"n_train": 1, "n_val": 0, "n_test": 0} | bad))


@pytest.mark.bench
def test_full_size_listops_generation_time(tmp_path, record_property):
    """LRA's size, 96,000 / 2,000 / 2,000, on every core (docs/data.md records the time)."""
    summary = GENERATORS["listops"](tmp_path, seed=0)
    record_property("benchmark", {"task": "listops", "seconds": summary["seconds"], "workers": summary["workers"]})
    print(summary["seconds"], summary["workers"], summary["statistics"]["train"])
    assert summary["statistics"]["train"]["n"] == 96_000


def test_tree_options_give_short_shallow_expressions_in_the_same_format(tmp_path):
    """A positive control's data set: depth <= 3, at most 5 arguments, under 100 tokens, read by the same loader."""
    summary = GENERATORS["listops"](tmp_path / "short", n_train=40, n_val=5, n_test=5, seed=1, workers=1,
                                    max_depth=3, max_args=5, min_length=0, max_length=100)
    train = loader.load(tmp_path / "short", "train", cache=tmp_path / "cache")
    assert len(train) == 40 and summary["statistics"]["train"]["length_max"] < 100
    for line in list(csv.reader(open(tmp_path / "short" / "listops-1000" / "basic_train.tsv"), delimiter="\t"))[1:]:
        source = line[0].split()
        depth = max(sum(1 for t in source[:i + 1] if t.startswith("[")) - sum(1 for t in source[:i + 1] if t == "]")
                    for i in range(len(source)))
        assert depth <= 2 and len(source) < 100        # operators nest at most 2 deep below a depth-3 leaf
    with pytest.raises(LinrnnError, match=r"listops: unknown option\(s\) depth: expected max_args, max_depth"):
        GENERATORS["listops"](tmp_path / "bad", n_train=4, n_val=1, n_test=1, depth=3)
    with pytest.raises(LinrnnError, match="max_depth: expected an integer >= 1"):
        GENERATORS["listops"](tmp_path / "bad", n_train=4, n_val=1, n_test=1, max_depth=0)
    assert not (tmp_path / "bad").exists()
