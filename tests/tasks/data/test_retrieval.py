"""Retrieval (AAN) loader: headerless 5-column TSV, literal quotes, two documents per example."""

from __future__ import annotations

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import retrieval


def decode(split, name, i):
    vocabulary = split.manifest["extra"]["vocabulary"]
    return "".join(vocabulary[t] for t in split.row(name, i))


def test_pairs_load_with_quotes_as_characters_and_eos_per_document(tmp_path, cache_env, writers):
    writers.aan(tmp_path / "tsv_data")
    split = retrieval.load(tmp_path, "train")
    assert len(split) == 8 and split.source == tmp_path / "tsv_data"
    assert decode(split, "tokens1", 1) == 'paper "1" on parsing<eos>'
    assert decode(split, "tokens2", 1) == "cites 3 works<eos>"
    np.testing.assert_array_equal(split.arrays["labels"], [0, 1] * 4)
    assert len(retrieval.load(tmp_path, "val")) == 4  # val = new_aan_pairs.eval.tsv


def test_label_read_as_a_number_like_lra(tmp_path, cache_env):
    (tmp_path / "new_aan_pairs.train.tsv").write_text("1.0\ta\tb\tx\ty\n0\ta\tb\tx\tz\n", encoding="utf-8")
    np.testing.assert_array_equal(retrieval.load(tmp_path, "train").arrays["labels"], [1, 0])


@pytest.mark.parametrize("content, message", [
    ("label\tid1\tid2\ttext1\ttext2\n1\ta\tb\tx\ty\n", "line 1 looks like a header .* AAN files have no header"),
    ("1\ta\tb\tx\n", r"line 1: expected 5 tab-separated columns \(label, id1, id2, text1, text2\), found 4"),
    ("2\ta\tb\tx\ty\n", r"line 1: label '2' out of range \(expected 0 or 1\)"),
    ("", "new_aan_pairs.train.tsv: empty file"),
])
def test_bad_files_are_one_line_errors(tmp_path, cache_env, content, message):
    (tmp_path / "new_aan_pairs.train.tsv").write_text(content, encoding="utf-8")
    with pytest.raises(LinrnnError, match=message):
        retrieval.load(tmp_path, "train")


def test_documents_are_cut_to_L_each(tmp_path, cache_env):
    (tmp_path / "new_aan_pairs.train.tsv").write_text("1\ta\tb\t" + "x" * 50 + "\tshort\n", encoding="utf-8")
    split = retrieval.load(tmp_path, "train", max_length=8)
    assert split.lengths("tokens1")[0] == 8 and split.lengths("tokens2")[0] == 6
    assert split.manifest["extra"]["truncated"] == 1
