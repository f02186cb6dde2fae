"""Generators for the datasets whose origin is an algorithm: they write the real on-disk formats.

    listops                   LRA ListOps              DIR/listops-1000/basic_{train,val,test}.tsv
    pathfinder                LRA Pathfinder / Path-X  DIR/pathfinder{R}/{difficulty}/imgs/<batch>/sample_<i>.png
                                                       + DIR/pathfinder{R}/{difficulty}/metadata/<batch>.npy
    listops-subtrees          DLR ListOpsSubTrees      DIR/listops_subtrees/subtrees_{train,val,test}.tsv
    pathfinder-segmentation   DLR PathfinderSegm.      DIR/pathfinder{R}_segmentation/{imgs,paths,metadata}/...
    speech                    espeak-ng words          the Speech Commands layout (generate/speech.py)
    speech                    Speech Commands (espeak) DIR/speech_commands_v0.02/<word>/<speaker>_nohash_<n>.wav + lists

Every generator has the signature

    generate(out, n_train, n_val, n_test, seed, resolution=None, difficulty=None, workers=None,
             progress=None) -> dict

and returns a summary (folder, counts per split, seconds, statistics). Why these properties:

- Same seed, same bytes, whatever the number of worker processes: every random stream is derived
  from (seed, chunk or image index) alone, and results are merged in index order.
- Nothing half-written: the task folder is written under a temporary name next to its final place
  and renamed into place at the end; a run that fails or is killed leaves only a `.partial-*`
  folder, which no loader looks at. An existing task folder is never overwritten.

`GENERATORS` maps the task names of `linrnn data generate` to these functions; each module is
imported when first called, so one generator's import cost is not paid by the others.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from linrnn.base.errors import LinrnnError

# task name -> module under linrnn.tasks.data.generate that defines `generate`
MODULES = {
    "listops": "listops",
    "pathfinder": "pathfinder",
    "listops-subtrees": "listops_subtrees",
    "pathfinder-segmentation": "pathfinder_segmentation",
    "speech": "speech",
}

Progress = Callable[[int, int], None]  # progress(done, total), called as items are finished


def _lazy(module: str) -> Callable[..., dict]:
    def generate(out, **options) -> dict:  # the module's own defaults apply to what is not given
        return importlib.import_module(f"{__name__}.{module}").generate(out, **options)

    generate.__name__ = f"generate_{module}"
    generate.__doc__ = f"Lazily imports linrnn.tasks.data.generate.{module} and calls its `generate`."
    return generate


GENERATORS: dict[str, Callable[..., dict]] = {task: _lazy(module) for task, module in MODULES.items()}


def check_counts(n_train, n_val, n_test) -> tuple[int, int, int]:
    """The three split sizes as ints >= 0 with at least one example, else a one-line LinrnnError."""
    counts = []
    for name, value in (("n_train", n_train), ("n_val", n_val), ("n_test", n_test)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LinrnnError(f"{name}: expected an integer >= 0, found {value!r}")
        counts.append(value)
    if sum(counts) == 0:
        raise LinrnnError("n_train + n_val + n_test: expected at least one example, found 0")
    return tuple(counts)


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise LinrnnError(f"seed: expected an integer >= 0, found {seed!r}")
    return seed


def worker_count(workers) -> int:
    """`workers` processes, or (None) one per CPU core; 1 means no worker processes at all."""
    if workers is None:
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise LinrnnError(f"workers: expected a positive integer, found {workers!r}")
    return workers


@contextlib.contextmanager
def staged(final: Path) -> Iterator[Path]:
    """Yield a fresh temporary folder next to `final`; rename it to `final` if the block succeeds.

    The temporary folder is `.partial-<name>-*` in the same parent (so the rename is atomic on one
    file system). If the block raises (or the process dies), `final` does not appear.
    """
    final = Path(final)
    if final.exists():
        raise LinrnnError(f"{final} already exists: remove it or choose another --out")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".partial-{final.name}-", dir=final.parent))
    try:
        yield tmp
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def stream_seed(seed: int, index: int) -> int:
    """A 128-bit integer seed for stream `index` of run `seed` (chunk or image), from NumPy's
    SeedSequence: streams of different indices are independent, and none depends on the others."""
    import numpy as np

    words = np.random.SeedSequence(seed, spawn_key=(index,)).generate_state(4, np.uint32)
    return int(sum(int(w) << (32 * i) for i, w in enumerate(words)))
