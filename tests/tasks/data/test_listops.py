"""ListOps loader on files written as LRA's generator writes them (csv.writer, CRLF, header)."""

from __future__ import annotations

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import listops


def test_tokeniser_vocabulary_and_eos_match_lra_and_s4(tmp_path, cache_env, writers):
    (tmp_path / "basic_train.tsv").write_bytes(b"Source\tTarget\r\n( ( ( [MAX 2 ) 9 ) ] )\t9\r\n"
                                               b"( ( [SM ( ( [MIN 3 ) 4 ) ] ) ) 7 ) ]\t0\r\n")
    split = listops.load(tmp_path, "train")
    assert len(listops.VOCABULARY) == 18
    ids = {t: i for i, t in enumerate(listops.VOCABULARY)}
    expected = [ids[t] for t in ("[MAX", "2", "9", "X")] + [listops.EOS]
    np.testing.assert_array_equal(split.row("tokens", 0), expected)
    assert [listops.VOCABULARY[i] for i in split.row("tokens", 1)] == ["[SM", "[MIN", "3", "4", "X", "7", "X", "<eos>"]
    np.testing.assert_array_equal(split.arrays["labels"], [9, 0])
    official = listops.load(tmp_path, "train", max_length=2000, append_eos=False)
    np.testing.assert_array_equal(official.row("tokens", 0), expected[:-1])


def lra_expression(op: str, digits) -> str:
    """One flat operation as LRA's generator writes it: `( ( ( [MAX 2 ) 9 ) ] )`-style parentheses."""
    return "( " * (len(digits) + 1) + f"{op} " + " ".join(f"{d} )" for d in digits) + " ] )"


@pytest.mark.parametrize("append_eos", [True, False])
def test_a_long_expression_keeps_exactly_its_first_tokens(tmp_path, cache_env, append_eos):
    """At max_length 8, an expression of 12 tokens keeps its first 8 tokens, or its first 7 and <eos>; one of
    exactly the room left (8, or 7 with <eos>) is kept whole and not counted as truncated. The tokens are all
    different, so a cut one token early or late is seen."""
    keep = 7 if append_eos else 8
    long, fits = lra_expression("[MAX", range(10)), lra_expression("[MIN", range(keep - 2))
    (tmp_path / "basic_train.tsv").write_bytes(f"Source\tTarget\r\n{long}\t9\r\n{fits}\t0\r\n".encode())
    assert listops.tokenize(long) == ["[MAX", *map(str, range(10)), "X"]
    assert len(listops.tokenize(fits)) == keep
    split = listops.load(tmp_path, "train", max_length=8, append_eos=append_eos)
    eos = ["<eos>"] if append_eos else []
    assert [listops.VOCABULARY[i] for i in split.row("tokens", 0)] == listops.tokenize(long)[:keep] + eos
    assert [listops.VOCABULARY[i] for i in split.row("tokens", 1)] == listops.tokenize(fits) + eos
    assert split.manifest["extra"]["truncated"] == 1


def test_generated_style_files_load_in_every_split(tmp_path, cache_env, writers):
    writers.listops(tmp_path)
    sizes = {s: len(listops.load(tmp_path, s)) for s in ("train", "val", "test")}
    assert sizes == {"train": 40, "val": 10, "test": 10}
    assert listops.check(tmp_path) == []


@pytest.mark.parametrize("content, message", [
    (b"( [MAX 2 ) ]\t2\r\n", r"basic_train.tsv: line 1: expected the header 'Source<TAB>Target'"),
    (b"Source\tTarget\r\n( [MAX 2 ) ]\t2\textra\r\n", r"line 2: expected 2 tab-separated columns \(Source, Target\), found 3"),
    (b"Source\tTarget\r\n( [MAX 2 ) ]\t12\r\n", r"line 2: Target 12 out of range 0-9"),
    (b"", r"basic_train.tsv: empty file"),
])
def test_bad_files_are_one_line_errors_and_write_no_cache(tmp_path, cache_env, content, message):
    (tmp_path / "basic_train.tsv").write_bytes(content)
    with pytest.raises(LinrnnError, match=message) as err:
        listops.load(tmp_path, "train")
    assert "\n" not in str(err.value)
    assert not (tmp_path / ".linrnn-cache" / "listops" / "train").exists()


def test_check_lists_every_problem_and_skips_nothing_silently(tmp_path, cache_env, writers):
    writers.listops(tmp_path)
    (tmp_path / "basic_val.tsv").write_bytes(b"Source\tTarget\r\n[MAX 1 ]\t11\r\n[FIRST 1 ]\t1\r\nonly-one-column\r\n")
    (tmp_path / "basic_test.tsv").unlink()
    problems = listops.check(tmp_path)
    assert problems == ["val: basic_val.tsv: line 2: Target 11 out of range 0-9",
                        "val: basic_val.tsv: line 4: expected 2 tab-separated columns (Source, Target), found 1",
                        f"test: missing split test: {tmp_path / 'basic_test.tsv'} does not exist"]


def test_unknown_tokens_become_unk_and_check_reports_them(tmp_path, cache_env):
    (tmp_path / "basic_train.tsv").write_bytes(b"Source\tTarget\r\n( ( [FIRST 1 ) 2 ) ]\t1\r\n")
    split = listops.load(tmp_path, "train")
    assert listops.UNK in np.asarray(split.row("tokens", 0)) and split.manifest["extra"]["unknown_tokens"] == 1
    assert any("1 tokens outside the ListOps vocabulary" in p for p in listops.check(tmp_path))


def test_unknown_option_and_bad_value_are_one_line_errors(tmp_path, writers):
    writers.listops(tmp_path)
    with pytest.raises(LinrnnError, match="listops: unknown option.*colour.*expected max_length, append_eos"):
        listops.load(tmp_path, "train", colour=True)
    with pytest.raises(LinrnnError, match="option max_length expects a value of type int, got 'long'"):
        listops.load(tmp_path, "train", max_length="long")
