"""The ListOpsSubTrees loader on files in DLR's format: bad rows are one-line errors naming the line."""

from __future__ import annotations

import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import listops_subtrees as loader

HEADER = "\t".join(loader.HEADER)
GOOD = "[MAX 2 [MIN 7 4 ] ]\t4\t4 4\t4 7\t1 2\t[MIN [MAX\t5 6\t0"


def write(folder, train_rows, header=HEADER):
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val", "test"):
        (folder / f"subtrees_{split}.tsv").write_text("\r\n".join([header, *train_rows]) + "\r\n")


def test_a_good_row_in_the_nested_archive_path(tmp_path):
    write(tmp_path / "lra_release" / "listops_subtrees", [GOOD])
    split = loader.load(tmp_path, "train", cache=tmp_path / "c", max_length=16)
    assert split.row("targets", 0).tolist() == [-100, -100, -100, -100, -100, 4, 4]
    assert loader.check(tmp_path, cache=tmp_path / "c2", max_length=16) == []


@pytest.mark.parametrize("row, message", [
    ("[MAX 2 [MIN 7 4 ] ]\t4\t4 4\t4 7\t1 2\t[MIN [MAX\t5 4\t0", "not the position of a `]`"),
    ("[MAX 2 [MIN 7 4 ] ]\t5\t4 4\t4 7\t1 2\t[MIN [MAX\t5 6\t0", "differs from Target 5"),
    ("[MAX 2 [MIN 7 4 ] ]\t4\t4 4\t4 7\t1 2\t[MIN [MAX\t5 6", "expected 8 tab-separated columns"),
    ("[MAX 2 [MIN 7 4 ] ]\t4\t4\t4 7\t1 2\t[MIN [MAX\t5 6\t0", "1 SubTreeEvals but 2 SubTreeInds"),
])
def test_malformed_rows_are_one_line_errors(tmp_path, row, message):
    write(tmp_path / "listops_subtrees", [row])
    with pytest.raises(LinrnnError, match=message) as raised:
        loader.load(tmp_path, "train", cache=tmp_path / "c", max_length=16)
    assert "\n" not in str(raised.value) and "line 2" in str(raised.value)


def test_too_long_and_wrong_header(tmp_path):
    write(tmp_path / "a" / "listops_subtrees", [GOOD])
    with pytest.raises(LinrnnError, match="more than max_length 4"):
        loader.load(tmp_path / "a", "train", cache=tmp_path / "c", max_length=4)
    write(tmp_path / "b" / "listops_subtrees", [GOOD], header="Source\tTarget")
    with pytest.raises(LinrnnError, match="expected the header"):
        loader.load(tmp_path / "b", "train", cache=tmp_path / "c")
