"""Finding a task's folder: its own folder, a renamed one, one or two levels of `lra_release/`."""

from __future__ import annotations

import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import layout, listops, retrieval


@pytest.mark.parametrize("relative", ["", "listops-1000", "listops", "lra_release/listops-1000",
                                      "lra_release/lra_release/listops-1000"])
def test_listops_is_found_wherever_the_archive_puts_it(tmp_path, cache_env, writers, relative):
    folder = writers.listops(tmp_path / relative if relative else tmp_path)
    split = listops.load(tmp_path, "val")
    assert split.source == folder and len(split) == 10
    assert any(line == f"data folder {folder}" for line in listops.info(tmp_path))


def test_the_doubly_nested_archive_path_serves_every_lra_text_task(tmp_path, cache_env, writers):
    root = tmp_path / "lra_release" / "lra_release"
    writers.listops(root / "listops-1000")
    writers.aan(root / "tsv_data")
    assert retrieval.load(tmp_path, "test").source == root / "tsv_data"
    assert listops.load(tmp_path / "lra_release", "test").source == root / "listops-1000"


def test_nothing_found_is_one_line_naming_every_folder_tried(tmp_path):
    with pytest.raises(LinrnnError) as err:
        listops.load(tmp_path, "train")
    message = str(err.value)
    assert "\n" not in message and "basic_{train,val,test}.tsv" in message
    assert "lra_release/lra_release/listops-1000" in message
    with pytest.raises(LinrnnError, match="is not a directory"):
        layout.find(tmp_path / "nope", ("x",), lambda f: True, "X", "x")
