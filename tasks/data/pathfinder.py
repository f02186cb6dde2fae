"""LRA Pathfinder (32 x 32, L = 1024) and Path-X (128 x 128, L = 16384), also 64 and 256.

Layout (LRA archive, and what `linrnn data generate pathfinder` writes):
`pathfinder<R>/<difficulty>/metadata/<k>.npy` and `pathfinder<R>/<difficulty>/imgs/<k>/sample_<i>.png`,
difficulty `curv_baseline`, `curv_contour_length_9` or `curv_contour_length_14` (the default, and the
only one S4, S5 and minimal-LRU use). Despite the suffix, a metadata file is **text**: one line per
image, whitespace-separated; column 0 the image's folder (`imgs/<k>`), 1 its file name
(`sample_<i>.png`), 2 the index i, 3 the label (1: the two markers lie on one contour, 0: not), then
generator parameters that are not used. The image is `<difficulty>/<col 0>/<col 1>`. Metadata files
are read in the order of their integer stems, lines in file order (S4).

Pixels: each PNG decoded with Pillow, `convert("L")`, checked to be R x R, flattened row-major and
stored as uint8 0-255 (LRA feeds tokens; S4 divides by 255, S5 maps to [-1, 1]: a model-side choice).
An empty (0-byte) PNG is skipped and counted (Pathfinder-32 has one, `curv_baseline/imgs/0/sample_172.png`,
which S4 blacklists); any other unreadable PNG is an error naming the file.

Splits: all non-empty images, split 80/10/10 (160k/20k/20k of the 200k per difficulty).
`split_rule="random"` (default, like S4/S5's `random_split` with seed 42; not bit-identical to torch):
n_val = n_test = floor(n / 10), n_train = the rest, taken in that order from
`np.random.default_rng(seed).permutation(n)`, each part then in metadata order. `split_rule="ordered"`: the
official LRA rule, by metadata order `[:80%]`, `[80%:90%]`, `[90%:]`. Building a split decodes only its
own PNGs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cache as cachemod
from linrnn.tasks.data import dataset as ds_
from linrnn.tasks.data import layout

RESOLUTIONS = (32, 64, 128, 256)
DIFFICULTIES = ("curv_baseline", "curv_contour_length_9", "curv_contour_length_14")


@dataclasses.dataclass(frozen=True)
class Options:
    resolution: int = 32  # image side R: 32 (Pathfinder), 64, 128 (Path-X), 256
    difficulty: str = "curv_contour_length_14"  # contour-length folder (S4/S5/minimal-LRU use 14)
    split_rule: str = "random"  # "random" (seeded 80/10/10, like S4) or "ordered" (official LRA, by order)
    seed: int = 42  # seed of the random split (S4's torch seed is 42)


@dataclasses.dataclass(frozen=True)
class Example:
    """One metadata line."""

    image: str  # path relative to the difficulty folder, "imgs/<k>/sample_<i>.png"
    label: int  # 0 or 1


def metadata_files(folder: Path) -> list[Path]:
    """`metadata/*.npy` by integer stem (non-integer stems after, by name)."""
    def order(path):
        return (0, int(path.stem), "") if path.stem.isdigit() else (1, 0, path.stem)
    return sorted((folder / "metadata").glob("*.npy"), key=order)


def read_metadata(folder: Path, problems: ds_.Problems) -> list[Example]:
    """Every metadata line of one difficulty folder, as text (see the module docstring)."""
    files = metadata_files(folder)
    if not files:
        problems.add(f"{folder.name}: no metadata/*.npy files")
    examples = []
    for path in files:
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            problems.add(f"metadata/{path.name}: not a text file (Pathfinder metadata is whitespace-separated text)")
            continue
        if not text.strip():
            problems.add(f"metadata/{path.name}: empty file")
            continue
        for line_number, line in enumerate(text.splitlines(), start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 4:
                problems.add(f"metadata/{path.name}: line {line_number}: expected at least 4 columns "
                             f"(folder, file, index, label), found {len(fields)}")
                continue
            if fields[3] not in ("0", "1"):
                problems.add(f"metadata/{path.name}: line {line_number}: label {fields[3]!r} out of range (expected 0 or 1)")
                continue
            examples.append(Example(f"{fields[0]}/{fields[1]}", int(fields[3])))
    return examples


def read_png(path: Path, resolution: int) -> np.ndarray:
    """(R R) uint8 grey pixels of one PNG; a LinrnnError if it cannot be decoded or has the wrong size."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image.load()
            grey = image.convert("L")
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as err:
        raise LinrnnError(f"{path}: not a readable PNG ({str(err).splitlines()[0] if str(err) else type(err).__name__})") from None
    if grey.size != (resolution, resolution):
        raise LinrnnError(f"{path}: expected {resolution} x {resolution} pixels, found {grey.size[0]} x {grey.size[1]}")
    return np.asarray(grey, dtype=np.uint8)


class Pathfinder(ds_.Dataset):
    task = "pathfinder"
    format_version = 1
    num_classes = 2

    def __init__(self, folder, options: Options, cache=None):
        super().__init__(folder, options, f"pathfinder{options.resolution}-{options.difficulty}", cache)
        self.sequences = (ds_.SequenceSpec("pixels", 0, options.resolution ** 2),)
        self.difficulty_folder = folder / options.difficulty if (folder / options.difficulty).is_dir() else folder

    def sources(self, split):
        base = self.difficulty_folder
        if not (base / "metadata").is_dir() or not (base / "imgs").is_dir():
            raise LinrnnError(f"missing split {split}: {base} has no metadata/ and imgs/ folders")
        relative = base.relative_to(self.folder)
        prefix = "" if str(relative) == "." else f"{relative}/"
        files = tuple(f"{prefix}metadata/{p.name}" for p in metadata_files(base))
        return cachemod.Sources(self.folder, files=files, trees=(f"{prefix}imgs",))

    def _present(self, examples, problems) -> tuple[list[Example], int]:
        """The examples whose PNG is not empty, and how many empty ones were skipped."""
        kept, empty = [], 0
        for example in examples:
            path = self.difficulty_folder / example.image
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                problems.add(f"{example.image}: listed in the metadata but missing")
                continue
            if size == 0:
                empty += 1
            else:
                kept.append(example)
        return kept, empty

    def _split_examples(self, split, examples):
        n = len(examples)
        n_val = n_test = n // 10
        n_train = n - n_val - n_test
        order = np.random.default_rng(self.options.seed).permutation(n) if self.options.split_rule == "random" else np.arange(n)
        bounds = {"train": (0, n_train), "val": (n_train, n_train + n_val), "test": (n_train + n_val, n)}[split]
        chosen = np.sort(order[bounds[0]:bounds[1]])
        return [examples[i] for i in chosen]

    def parse(self, split, writer, problems):
        examples, empty = self._present(read_metadata(self.difficulty_folder, problems), problems)
        chosen = self._split_examples(split, examples)
        R = self.options.resolution
        pixels = writer.dense("pixels", (len(chosen), R * R), np.uint8)
        labels = np.zeros(len(chosen), dtype=np.int32)
        for row, example in enumerate(chosen):
            try:
                pixels[row] = read_png(self.difficulty_folder / example.image, R).reshape(-1)
            except LinrnnError as err:
                problems.add(str(err))
                continue
            labels[row] = example.label
        writer.put("labels", labels)
        return {"n": len(chosen), "skipped_empty": empty, "total_images": len(examples) + empty}


def _options(options) -> Options:
    made = ds_.make_options(Options, "pathfinder", options)
    if made.resolution not in RESOLUTIONS:
        raise LinrnnError(f"pathfinder: resolution must be one of {', '.join(map(str, RESOLUTIONS))}, got {made.resolution}")
    if made.difficulty not in DIFFICULTIES:
        raise LinrnnError(f"pathfinder: difficulty must be one of {', '.join(DIFFICULTIES)}, got {made.difficulty!r}")
    if made.split_rule not in ("random", "ordered"):
        raise LinrnnError(f"pathfinder: split_rule must be 'random' or 'ordered', got {made.split_rule!r}")
    return made


def dataset(root, cache=None, **options) -> Pathfinder:
    opts = _options(options)
    R, difficulty = opts.resolution, opts.difficulty

    def accepts(folder):  # the resolution folder, or the difficulty folder itself
        return (folder / difficulty / "metadata").is_dir() or (folder.name == difficulty and (folder / "metadata").is_dir())

    folder = layout.find(root, (f"pathfinder{R}", f"pathfinder/pathfinder{R}"), accepts,
                         f"Pathfinder-{R}", f"{difficulty}/metadata/ (pathfinder{R}/)")
    return Pathfinder(folder, opts, cache)


load, check, info = ds_.entry_points(dataset)   # the loader interface (linrnn.tasks.data)
