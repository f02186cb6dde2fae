"""Find a task's folder under the directory a user points at.

The user may point at the task's own folder (`listops-1000/`, `aclImdb/`, `tsv_data/`,
`cifar-10-batches-bin/`, `pathfinder32/`, ...), at a folder it was renamed to (S4's README moves
`listops-1000` to `listops`), or at any folder above it where the archive was extracted: the LRA
archive `lra_release.gz` extracts to a doubly nested `lra_release/lra_release/`, so both one and two
levels of `lra_release/` are searched. The first folder that passes the task's test wins, in the
order: DIR itself, DIR/<name>, DIR/lra_release/<name>, DIR/lra_release/lra_release/<name> for each
candidate name in turn. Nothing else is searched, so the answer never depends on unrelated folders.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from linrnn.base.errors import LinrnnError

# folders above a task folder that archives extract to
PARENTS = ("", "lra_release", "lra_release/lra_release")


def candidates(root: Path, names: Sequence[str]) -> list[Path]:
    """The folders searched, in order: `root`, then every parent x name combination."""
    found = [root]
    for name in names:
        for parent in PARENTS:
            path = root / parent / name if parent else root / name
            if path not in found:
                found.append(path)
    return found


def find(root, names: Sequence[str], accepts: Callable[[Path], bool], what: str, looking_for: str) -> Path:
    """The first candidate folder that `accepts`; a one-line `LinrnnError` naming every folder tried.

    Args:
        root         the directory the user gave
        names        the task folder's usual names, e.g. ("listops-1000", "listops")
        accepts      folder -> whether it is the task's folder (e.g. holds `basic_train.tsv`)
        what         the dataset's name for the message, e.g. "ListOps"
        looking_for  what `accepts` tests, for the message, e.g. "basic_{train,val,test}.tsv"
    """
    root = Path(root).expanduser()
    if not root.is_dir():
        raise LinrnnError(f"{what}: {root} is not a directory")
    tried = candidates(root, names)
    for folder in tried:
        if folder.is_dir() and accepts(folder):
            return folder
    shown = ", ".join(os.path.relpath(p, root) if p != root else str(root) for p in tried)
    raise LinrnnError(f"{what}: no folder with {looking_for} found; looked in {shown} (relative to {root})")


def has_any(*relative: str) -> Callable[[Path], bool]:
    """A test for `find`: the folder holds at least one of these files or folders."""
    return lambda folder: any((folder / r).exists() for r in relative)
