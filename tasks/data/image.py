"""LRA Image: CIFAR-10 in grayscale, 1024 pixels per image (45,000 / 5,000 / 10,000).

Sources, in this order of preference:
- `cifar-10-batches-bin/` (from `cifar-10-binary.tar.gz`), read directly: `data_batch_1.bin` ...
  `data_batch_5.bin` and `test_batch.bin`, each 10,000 records of 3073 bytes: 1 label byte (0-9),
  then 1024 red, 1024 green, 1024 blue pixel bytes, each plane row-major 32 x 32.
- `cifar-10-batches-py/` (from `cifar-10-python.tar.gz`): the same batches as Python pickles of a
  dict {b"batch_label", b"labels", b"data" (10000 x 3072 uint8), b"filenames"}. A pickle can run
  any code when loaded, so these are read only through `RestrictedUnpickler`, which builds dicts,
  lists, bytes, strings and numbers and admits exactly the globals that rebuild a NumPy uint8/int
  array (`numpy.core.multiarray._reconstruct`, `numpy.ndarray`, `numpy.dtype`, `numpy._frombuffer`,
  and `_codecs.encode` restricted to latin-1, which Python-3 pickles of bytes use). Anything else,
  an `os.system` reduce or a class instance, is refused with a one-line error before it runs.

Grayscale (`grayscale=True`): L = (19595 R + 38470 G + 7471 B + 32768) >> 16, PIL's `convert("L")`
(ITU-R 601-2 luma, 0.299 R + 0.587 G + 0.114 B rounded), which is what S4's torchvision `Grayscale`
computes on CIFAR's PIL images (the official LRA code uses `tf.image.rgb_to_grayscale`, weights
0.2989, 0.5870, 0.1140: it can differ by one grey level). Stored as uint8 tokens 0-255 (LRA feeds
them as tokens with vocabulary 256; S4 divides by 255 and normalises with mean 122.6/255, std
61.0/255: a model-side choice, docs/tasks.md). `grayscale=False` keeps colour as (1024 3), the
LRU paper's colour sCIFAR.

Splits: test = the test batch. Validation = `val_size` (5,000) of the 50,000 train images, the
rest train. `val_split="random"` (default): the last `val_size` of
`np.random.default_rng(seed).permutation(50000)`, seed 42, each part then in file order (S4 splits
randomly with torch seed 42, not bit-identical to this); `val_split="last"`: the last 5,000 in file
order (the official LRA `train[90%:]`).
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import cache as cachemod
from linrnn.tasks.data import dataset as ds_
from linrnn.tasks.data import layout

BIN = "cifar-10-batches-bin"
PY = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{k}" for k in range(1, 6))
TEST_BATCH = "test_batch"
RECORD = 1 + 3072  # label byte + R, G, B planes of 32 x 32
CLASSES = 10
PIXELS = 1024


@dataclasses.dataclass(frozen=True)
class Options:
    grayscale: bool = True  # PIL luma (LRA Image); False: colour (n 1024 3)
    val_size: int = 5000  # validation images taken from the train batches (LRA: 10 % of 50,000)
    val_split: str = "random"  # "random" (seeded permutation, like S4) or "last" (official LRA: by order)
    seed: int = 42  # seed of the random validation split (S4's torch seed is 42)


# ------------------------------------------------------------------------- restricted unpickling


def _latin1_encode(text, encoding="latin1", *rest):
    """`_codecs.encode` as Python-3 pickles of bytes use it; any other codec is refused."""
    if encoding.replace("-", "").lower() not in ("latin1", "latin_1", "iso88591") or rest or not isinstance(text, str):
        raise pickle.UnpicklingError(f"_codecs.encode with codec {encoding!r} is not allowed")
    return text.encode("latin1")


def _allowed_globals() -> dict[tuple[str, str], object]:
    try:
        from numpy._core import multiarray, numeric
    except ImportError:  # NumPy 1.x
        from numpy.core import multiarray, numeric
    allowed = {}
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        allowed[(module, "_reconstruct")] = multiarray._reconstruct
    for module in ("numpy.core.numeric", "numpy._core.numeric"):
        allowed[(module, "_frombuffer")] = numeric._frombuffer
    allowed[("numpy", "ndarray")] = np.ndarray
    allowed[("numpy", "dtype")] = np.dtype
    allowed[("_codecs", "encode")] = _latin1_encode
    return allowed


class RestrictedUnpickler(pickle.Unpickler):
    """Loads plain data only: dicts, lists, tuples, bytes, str, numbers and NumPy arrays."""

    def find_class(self, module, name):
        found = _allowed_globals().get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}: only plain data and NumPy arrays are allowed")
        return found


def _check_plain(value, where: str) -> None:
    """Plain data all the way down (the reconstruct functions could still build an object ndarray)."""
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise pickle.UnpicklingError(f"{where}: an object array is not plain data")
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_plain(k, where)
            _check_plain(v, where)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_plain(v, where)
    elif not isinstance(value, (bytes, str, int, float, bool, type(None))):
        raise pickle.UnpicklingError(f"{where}: a {type(value).__name__} is not plain data")


def load_pickle(path) -> object:
    """The content of a CIFAR pickle batch, through `RestrictedUnpickler` (LinrnnError if refused)."""
    try:
        with open(path, "rb") as handle:
            value = RestrictedUnpickler(handle, encoding="bytes").load()
        _check_plain(value, path.name)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise LinrnnError(f"{path.name}: not a plain-data CIFAR pickle: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    return value


# ------------------------------------------------------------------------------------- reading


def read_bin(path, problems: ds_.Problems) -> tuple[np.ndarray, np.ndarray]:
    """(labels (n,), pixels (n 3072)) of one binary batch."""
    data = np.fromfile(path, dtype=np.uint8)
    if data.size == 0:
        problems.add(f"{path.name}: empty file (expected records of {RECORD} bytes)")
        return np.zeros(0, np.uint8), np.zeros((0, 3072), np.uint8)
    if data.size % RECORD:
        problems.add(f"{path.name}: {data.size} bytes is not a whole number of {RECORD}-byte records (truncated?)")
        data = data[: data.size - data.size % RECORD]
    records = data.reshape(-1, RECORD)
    return records[:, 0].copy(), records[:, 1:]


def read_py(path, problems: ds_.Problems) -> tuple[np.ndarray, np.ndarray]:
    """(labels (n,), pixels (n 3072)) of one pickle batch."""
    if path.stat().st_size == 0:
        problems.add(f"{path.name}: empty file (expected a CIFAR pickle batch)")
        return np.zeros(0, np.uint8), np.zeros((0, 3072), np.uint8)
    batch = load_pickle(path)
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        problems.add(f"{path.name}: expected a dict with keys b'data' and b'labels'")
        return np.zeros(0, np.uint8), np.zeros((0, 3072), np.uint8)
    pixels = np.asarray(batch[b"data"])
    labels = np.asarray(batch[b"labels"])
    if pixels.dtype != np.uint8 or pixels.ndim != 2 or pixels.shape[1] != 3072 or labels.shape != (len(pixels),):
        problems.add(f"{path.name}: expected data uint8 (n 3072) and n labels, got data {pixels.dtype} {pixels.shape}, "
                     f"labels {labels.shape}")
        return np.zeros(0, np.uint8), np.zeros((0, 3072), np.uint8)
    return labels, pixels


def to_pixels(rgb: np.ndarray, grayscale: bool) -> np.ndarray:
    """(n 3072) CIFAR planes -> (n 1024) uint8 grey (PIL luma) or (n 1024 3) uint8 colour."""
    planes = rgb.reshape(len(rgb), 3, PIXELS).astype(np.uint32)
    if not grayscale:
        return planes.transpose(0, 2, 1).astype(np.uint8)
    r, g, b = planes[:, 0], planes[:, 1], planes[:, 2]
    return ((19595 * r + 38470 * g + 7471 * b + 32768) >> 16).astype(np.uint8)


class Image(ds_.Dataset):
    task = "image"
    format_version = 1
    num_classes = CLASSES

    def __init__(self, folder, options: Options, cache=None):
        self.binary = folder.name == BIN or (folder / f"{TEST_BATCH}.bin").exists() \
            or (folder / f"{TRAIN_BATCHES[0]}.bin").exists()
        name = "image-gray" if options.grayscale else "image-colour"
        super().__init__(folder, options, name, cache)
        self.sequences = (ds_.SequenceSpec("pixels", 0, PIXELS),)

    def _file(self, batch: str) -> str:
        return f"{batch}.bin" if self.binary else batch

    def sources(self, split):
        names = (TEST_BATCH,) if split == "test" else TRAIN_BATCHES
        files = tuple(self._file(b) for b in names)
        missing = [f for f in files if not (self.folder / f).is_file()]
        if missing:
            raise LinrnnError(f"missing split {split}: {', '.join(str(self.folder / f) for f in missing)} not found")
        return cachemod.Sources(self.folder, files=files)

    def _read(self, split, problems):
        labels, pixels = [], []
        for name in self.sources(split).files:
            path = self.folder / name
            lab, pix = (read_bin if self.binary else read_py)(path, problems)
            bad = np.flatnonzero(np.asarray(lab).astype(np.int64) >= CLASSES) if len(lab) else []
            if len(bad) or (len(lab) and np.asarray(lab).min() < 0):
                i = int(bad[0]) if len(bad) else int(np.argmin(lab))
                problems.add(f"{name}: record {i}: label {int(lab[i])} out of range 0-9")
                keep = (np.asarray(lab) >= 0) & (np.asarray(lab) < CLASSES)
                lab, pix = np.asarray(lab)[keep], pix[keep]
            labels.append(np.asarray(lab, dtype=np.int32))
            pixels.append(pix)
        return np.concatenate(labels), np.concatenate(pixels)

    def parse(self, split, writer, problems):
        labels, rgb = self._read(split, problems)
        if split != "test":
            n = len(labels)
            if not 0 < self.options.val_size < n:
                problems.add(f"image: val_size {self.options.val_size} must lie strictly between 0 and the {n} train images")
                return {"n": 0}
            if self.options.val_split == "random":
                order = np.random.default_rng(self.options.seed).permutation(n)
            else:
                order = np.arange(n)
            chosen = order[n - self.options.val_size:] if split == "val" else order[: n - self.options.val_size]
            chosen = np.sort(chosen)
            labels, rgb = labels[chosen], rgb[chosen]
        writer.put("pixels", to_pixels(rgb, self.options.grayscale))
        writer.put("labels", labels)
        return {"n": len(labels), "source_format": "binary" if self.binary else "pickle"}


def _options(options) -> Options:
    made = ds_.make_options(Options, "image", options)
    if made.val_split not in ("random", "last"):
        raise LinrnnError(f"image: val_split must be 'random' or 'last', got {made.val_split!r}")
    return made


def _is_cifar(folder) -> bool:
    return any((folder / f).is_file() for f in (f"{TEST_BATCH}.bin", f"{TRAIN_BATCHES[0]}.bin", TEST_BATCH, TRAIN_BATCHES[0]))


def dataset(root, cache=None, **options) -> Image:
    opts = _options(options)  # bad options first: they need no folder
    folder = layout.find(root, (BIN, PY, "cifar10", "cifar"), _is_cifar, "Image (CIFAR-10)",
                         f"{BIN}/ or {PY}/ (data_batch_1[.bin], test_batch[.bin])")
    return Image(folder, opts, cache)


load, check, info = ds_.entry_points(dataset)   # the loader interface (linrnn.tasks.data)
