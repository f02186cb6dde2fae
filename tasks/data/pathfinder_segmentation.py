"""DLR PathfinderSegmentation-R (R = 128, 256, 512; L = R^2): images, per-pixel 3-class targets.

Layout (DLR's generator, and `linrnn data generate pathfinder-segmentation`):
`pathfinder{R}_segmentation/metadata/<k>.npy`, `imgs/<k>/sample_<i>.png`, `paths/<k>/sample_<i>.pkl`.
The metadata files are NumPy arrays of strings (`np.save`; read here with `allow_pickle=False`), one
row per image: column 0 the image folder `imgs/<k>`, 1 the file, 3 the image label (1: the markers lie
on one target contour). The pickle beside each image holds plain data (the two target contours'
pixels, their tips, the marker indices, the image size); it is read only through the restricted
unpickler of `image.py` (dicts, lists, tuples, numbers, str, bytes and NumPy arrays; anything else is
refused). Per-pixel classes (DLR's `prepare_target`): 0 off both targets, 1 on a target that does not
connect the markers, 2 on the one that does.

Arrays per split: `pixels` uint8 (n R^2) row-major (DLR feeds (x/255 - 0.5) / 0.5), `targets` int8
(n R^2) classes, `labels` int32 (n) the image label. Split: DLR's `random_split` 80/10/10 with seed 42
(val and test floor(n / 10) each); here the order comes from `np.random.default_rng(seed)`, so the
split has DLR's sizes but not torch's exact membership.
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cache as cachemod
from linrnn.tasks.data import dataset as ds_
from linrnn.tasks.data import layout
from linrnn.tasks.data.image import RestrictedUnpickler, _check_plain
from linrnn.tasks.data.pathfinder import metadata_files, read_png

RESOLUTIONS = (32, 64, 128, 256, 512)  # 128/256/512: DLR; 32/64: small sets of ours
CLASSES = 3
IGNORE_INDEX = -100


@dataclasses.dataclass(frozen=True)
class Options:
    resolution: int = 128  # image side R (L = R^2)
    seed: int = 42  # seed of the 80/10/10 split (DLR's is torch's random_split with seed 42)


def read_record(path: Path) -> dict:
    """A `paths/<k>/sample_<i>.pkl` through the restricted unpickler; LinrnnError if refused or malformed."""
    try:
        with open(path, "rb") as handle:
            value = RestrictedUnpickler(handle).load()
        _check_plain(value, path.name)
    except FileNotFoundError:
        raise LinrnnError(f"{path}: missing (every image needs its paths/ record)") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise LinrnnError(f"{path}: not a plain-data record: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    if not isinstance(value, dict) or not {"segs", "marker_indices", "image_size"} <= set(value):
        raise LinrnnError(f"{path}: expected a dict with segs, marker_indices and image_size")
    return value


def pixel_classes(record: dict, resolution: int, where: str) -> np.ndarray:
    """DLR's `prepare_target`: int8 (R R) classes from a record (checked against the resolution)."""
    if list(record["image_size"]) != [resolution, resolution] or len(record["segs"]) != 2:
        raise LinrnnError(f"{where}: expected two segs of a {resolution} x {resolution} image, found "
                          f"{len(record['segs'])} of {record['image_size']}")
    origin, terminal = (int(i) for i in record["marker_indices"])
    classes = np.zeros((resolution, resolution), dtype=np.int8)
    for i, seg in enumerate(record["segs"]):
        rows, cols = (np.asarray(ix, dtype=np.intp) for ix in seg)
        if rows.shape != cols.shape or (rows.size and (rows.max() >= resolution or cols.max() >= resolution)):
            raise LinrnnError(f"{where}: seg {i} has indices outside the image")
        value = 1 + int(origin == terminal == i)
        classes[rows, cols] = np.maximum(classes[rows, cols], value)
    return classes


def read_metadata(folder: Path, problems: ds_.Problems) -> list[tuple[str, int]]:
    """(image path, label) of every row of every metadata file, in file order."""
    files = metadata_files(folder)
    if not files:
        problems.add(f"{folder.name}: no metadata/*.npy files")
    rows = []
    for path in files:
        try:
            table = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as err:
            problems.add(f"metadata/{path.name}: not a NumPy array of strings ({str(err).splitlines()[0]})")
            continue
        if table.ndim != 2 or table.shape[1] < 4 or table.dtype.kind != "U":
            problems.add(f"metadata/{path.name}: expected a 2-D array of strings with >= 4 columns, found "
                         f"{table.dtype} {table.shape}")
            continue
        for number, row in enumerate(table.tolist(), start=1):
            if row[3] not in ("0", "1"):
                problems.add(f"metadata/{path.name}: row {number}: label {row[3]!r} out of range (expected 0 or 1)")
                continue
            rows.append((f"{row[0]}/{row[1]}", int(row[3])))
    return rows


class PathfinderSegmentation(ds_.Dataset):
    task = "pathfinder-segmentation"
    format_version = 1
    num_classes = 2  # of the image label; the per-pixel targets have CLASSES = 3

    def __init__(self, folder, options: Options, cache=None):
        super().__init__(folder, options, f"pathfinder{options.resolution}-segmentation", cache)
        length = options.resolution ** 2
        self.sequences = (ds_.SequenceSpec("pixels", 0, length),
                          ds_.SequenceSpec("targets", IGNORE_INDEX, length, role="target"))

    def sources(self, split):
        for sub in ("metadata", "imgs", "paths"):
            if not (self.folder / sub).is_dir():
                raise LinrnnError(f"missing split {split}: {self.folder} has no {sub}/ folder")
        files = tuple(f"metadata/{p.name}" for p in metadata_files(self.folder))
        return cachemod.Sources(self.folder, files=files, trees=("imgs", "paths"))

    def parse(self, split, writer, problems):
        rows = read_metadata(self.folder, problems)
        n = len(rows)
        n_val = n_test = n // 10
        order = np.random.default_rng(self.options.seed).permutation(n)
        bounds = {"train": (0, n - n_val - n_test), "val": (n - n_val - n_test, n - n_test), "test": (n - n_test, n)}
        chosen = [rows[i] for i in np.sort(order[slice(*bounds[split])])]
        R = self.options.resolution
        pixels = writer.dense("pixels", (len(chosen), R * R), np.uint8)
        targets = writer.dense("targets", (len(chosen), R * R), np.int8)
        labels = np.zeros(len(chosen), dtype=np.int32)
        counts = np.zeros(CLASSES, dtype=np.int64)
        for row, (image, label) in enumerate(chosen):
            record_path = self.folder / image.replace("imgs/", "paths/", 1).replace(".png", ".pkl")
            try:
                pixels[row] = read_png(self.folder / image, R).reshape(-1)
                record = read_record(record_path)
                classes = pixel_classes(record, R, str(record_path))
                if label != int(record["marker_indices"][0] == record["marker_indices"][1]):
                    raise LinrnnError(f"{record_path}: marker_indices {record['marker_indices']} disagree with label {label}")
            except LinrnnError as err:
                problems.add(str(err))
                continue
            targets[row] = classes.reshape(-1)
            counts += np.bincount(classes.reshape(-1), minlength=CLASSES)
            labels[row] = label
        writer.put("labels", labels)
        return {"n": len(chosen), "pixel_class_counts": counts.tolist()}


def _options(options) -> Options:
    made = ds_.make_options(Options, "pathfinder-segmentation", options)
    if made.resolution not in RESOLUTIONS:
        raise LinrnnError(f"pathfinder-segmentation: resolution must be one of {', '.join(map(str, RESOLUTIONS))}, "
                          f"got {made.resolution}")
    return made


def dataset(root, cache=None, **options) -> PathfinderSegmentation:
    opts = _options(options)
    name = f"pathfinder{opts.resolution}_segmentation"
    folder = layout.find(root, (name, f"pathfinder_segmentation/{name}"), layout.has_any("metadata"),
                         f"PathfinderSegmentation-{opts.resolution}", f"metadata/ ({name}/)")
    return PathfinderSegmentation(folder, opts, cache)


load, check, info = ds_.entry_points(dataset)   # the loader interface (linrnn.tasks.data)
