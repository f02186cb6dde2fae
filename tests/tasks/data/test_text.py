"""Text (IMDB) loader on the aclImdb layout: characters, train vocabulary with min_freq, val = test."""

from __future__ import annotations

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import chars, text


def decode(split, i):
    vocabulary = split.manifest["extra"]["vocabulary"]
    return "".join(vocabulary[t] for t in split.row("tokens", i))


def test_reviews_are_characters_with_eos_and_labels_neg_0_pos_1(tmp_path, cache_env, writers):
    writers.imdb(tmp_path / "aclImdb")
    split = text.load(tmp_path, "train", min_freq=1)
    assert split.source == tmp_path / "aclImdb" and len(split) == 6  # train/unsup is not read
    np.testing.assert_array_equal(split.arrays["labels"], [0, 0, 0, 1, 1, 1])
    first = (tmp_path / "aclImdb" / "train" / "neg" / "0_2.txt").read_text(encoding="utf-8")
    assert decode(split, 0) == first + "<eos>"  # case, quotes, <br /> and é kept
    assert split.manifest["extra"]["vocabulary"][:3] == list(chars.SPECIALS)


def test_vocabulary_keeps_characters_seen_min_freq_times_in_train_most_frequent_first(tmp_path, cache_env, writers):
    writers.imdb(tmp_path, extra_chars="zz")
    counts = {}
    for path in sorted((tmp_path / "train").glob("*/*.txt")):
        if path.parent.name in ("pos", "neg"):
            for c in path.read_text(encoding="utf-8"):
                counts[c] = counts.get(c, 0) + 1
    split = text.load(tmp_path, "train", min_freq=12)
    expected = sorted((c for c in counts if counts[c] >= 12), key=lambda c: (-counts[c], c))
    assert split.manifest["extra"]["vocabulary"] == list(chars.SPECIALS) + expected
    rare = min(counts, key=counts.get)
    assert counts[rare] < 12 and chars.UNK in np.asarray(split.row("tokens", 0))


def test_val_is_the_test_set_and_shares_its_cache_entry(tmp_path, cache_env, writers):
    writers.imdb(tmp_path)
    val, test = text.load(tmp_path, "val"), text.load(tmp_path, "test")
    assert val.split == "val" and val.cache == test.cache
    np.testing.assert_array_equal(val.arrays["tokens"], test.arrays["tokens"])


def test_truncation_to_L_minus_1_characters_plus_eos(tmp_path, cache_env, writers):
    writers.imdb(tmp_path)
    split = text.load(tmp_path, "test", max_length=10, min_freq=1)
    assert (np.asarray(split.lengths("tokens")) == 10).all() and split.manifest["extra"]["truncated"] == 6
    assert decode(split, 0).endswith("<eos>") and len(decode(split, 0)) == 9 + len("<eos>")


def test_a_new_train_review_changes_the_vocabulary_and_rebuilds_test(tmp_path, cache_env, writers):
    writers.imdb(tmp_path)
    before = text.load(tmp_path, "test", min_freq=1)
    (tmp_path / "train" / "pos" / "99_10.txt").write_text("\u2603 snowman", encoding="utf-8")
    after = text.load(tmp_path, "test", min_freq=1)
    assert after.built and "\u2603" in after.manifest["extra"]["vocabulary"]
    assert "\u2603" not in before.manifest["extra"]["vocabulary"]


def test_an_empty_or_non_utf8_review_is_a_problem(tmp_path, cache_env, writers):
    writers.imdb(tmp_path)
    (tmp_path / "test" / "neg" / "5_1.txt").write_bytes(b"")
    (tmp_path / "test" / "pos" / "6_8.txt").write_bytes(b"caf\xe9")
    with pytest.raises(LinrnnError, match="test/neg/5_1.txt: empty file"):
        text.load(tmp_path, "test")
    problems = text.check(tmp_path)
    assert "test: test/pos/6_8.txt: not UTF-8 (unexpected end of data at byte 3)" in problems
    assert sum("5_1.txt" in p for p in problems) == 2  # val and test both read test/
    assert not any(p.startswith("train") for p in problems)


def test_missing_split_folder_is_one_line(tmp_path, cache_env, writers):
    writers.imdb(tmp_path)
    import shutil

    shutil.rmtree(tmp_path / "test" / "neg")
    with pytest.raises(LinrnnError, match=r"missing split test: no folder .*test/neg"):
        text.load(tmp_path, "test")
