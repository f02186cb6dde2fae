"""The trivial predictors of the data tasks (`linrnn.tasks.trivial`): per objective, what each reads of an example.

Each family function takes the task and its loaded splits and returns one entry per predictor, simplest first:
{"name", "train", "val", "test"} (scores with the task's metric) and, for a learned model, the regularisation it
chose on val (`linrnn.tasks.trivial_models`). Features are computed once per split; no feature reads the label.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from linrnn.base.errors import LinrnnError
from linrnn.tasks import trivial_models as fit
from linrnn.tasks import trivial_trees as trees

SPLITS = ("train", "val", "test")
BINS = 16                 # quantile bins per channel of a bag of values (pixels, audio features)
BIGRAM_BUCKETS = 1024     # hashed token pairs of the bag of bigrams
LEVELS = 256              # the segmentation lookups read a pixel's exact intensity (16 levels lose what the
                          # generator's intensities carry: PathfinderSegmentation-32's per-pixel lookup scores
                          # 0.548 macro F1 on exact values, 0.426 on 16 levels)
NEIGHBOUR_LEVELS = 4      # quantised intensities of a 3 x 3 neighbourhood lookup (4^9 keys)
RADIUS = 2                # the boosted trees read a pixel's (2 RADIUS + 1)^2 neighbourhood
PIXEL_SIDE = 32           # the per-pixel logistic regression reads images average-pooled to at most this side
CHUNK = 1024              # examples read at a time from a pixel or signal split
EDGE_VALUES = 2**24       # at most this many training values set the quantile bins (Pathfinder-32's 16,000 images:
                          # all of them)


def _score(objective: str, classes: int, metric: str, logits: np.ndarray, labels: np.ndarray) -> float:
    from linrnn.tasks.datatasks import Tally

    tally = Tally(objective, classes)
    tally.add(logits, labels)
    return float(tally.summary()[metric])


def _scorer(task, labels: dict[str, np.ndarray]) -> fit.Score:
    return lambda k, logits: _score(task.objective, task.classes, task.monitor, logits, labels[k])


def _rows(split, name: str) -> list[np.ndarray]:
    return [np.asarray(split.row(name, i)) for i in range(len(split))]


def _input_name(split, which: int = 0) -> str:
    return [s.name for s in split.sequences if s.role == "input"][which]


def _vocabulary_ids(split) -> dict[str, int]:
    vocabulary = split.manifest.get("extra", {}).get("vocabulary")
    if not vocabulary:
        raise LinrnnError(f"{split.task}: the cache entry of {split.split} records no vocabulary")
    return {token: i for i, token in enumerate(vocabulary)}


def _vocabulary(splits: dict) -> int:
    from linrnn.tasks.datatasks import vocabulary_size

    try:
        return vocabulary_size(splits["train"])
    except LinrnnError:
        return int(max(np.max(np.concatenate([np.asarray(r).ravel() for r in _rows(s, _input_name(s))]))
                       for s in splits.values())) + 1


# -- features of one example -------------------------------------------------------------------------

def bag_tokens(rows: list[np.ndarray], vocab: int) -> np.ndarray:
    """(n, vocab + 1) each token's frequency in the example, and its length."""
    out = np.zeros((len(rows), vocab + 1))
    for i, r in enumerate(rows):
        out[i, :vocab] = np.bincount(np.asarray(r, dtype=np.int64).ravel(), minlength=vocab)[:vocab] / max(len(r), 1)
        out[i, vocab] = len(r)
    return out


def bag_bigrams(rows: list[np.ndarray], vocab: int) -> np.ndarray:
    """(n, BIGRAM_BUCKETS) each hashed token pair's frequency."""
    out = np.zeros((len(rows), BIGRAM_BUCKETS))
    for i, r in enumerate(rows):
        r = np.asarray(r, dtype=np.int64).ravel()
        if len(r) > 1:
            keys = (r[:-1] * (vocab + 1) + r[1:]) % BIGRAM_BUCKETS
            out[i] = np.bincount(keys, minlength=BIGRAM_BUCKETS) / (len(r) - 1)
    return out


def _chunks(split):
    """(n', L, C) float64 of a fixed-length pixel or signal split, CHUNK examples at a time (Path-X's 160,000 images
    of 16,384 pixels are 21 GB as float64)."""
    array = split.arrays[_input_name(split)]
    for i in range(0, len(split), CHUNK):
        x = np.asarray(array[i:i + CHUNK], dtype=np.float64)
        yield x[..., None] if x.ndim == 2 else x


def _per_example(split, features: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """(n, F) `features` of every example, computed chunk by chunk."""
    return np.concatenate([features(x) for x in _chunks(split)])


def _edges(split) -> np.ndarray:
    """(C, BINS - 1) quantile edges of the training values per channel: of every training example while they hold at
    most EDGE_VALUES values, else of a seeded sample of examples."""
    array = split.arrays[_input_name(split)]
    per_example = int(np.prod(array.shape[1:]))
    rows = fit.sample(len(split), max(1, EDGE_VALUES // per_example))
    x = np.asarray(array[rows], dtype=np.float64)
    x = x[..., None] if x.ndim == 2 else x
    return np.quantile(x.reshape(-1, x.shape[-1]), np.linspace(0, 1, BINS + 1)[1:-1], axis=0).T


def _mean(split) -> float:
    """The mean of every training value (a threshold of bright pixels)."""
    total = count = 0.0
    for x in _chunks(split):
        total, count = total + float(x.sum()), count + x.size
    return total / max(count, 1.0)


def bag_values(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(n, C (BINS + 2)) each channel's histogram over the quantile bins, its mean and SD."""
    hist = [np.stack([np.bincount(np.searchsorted(edges[c], e), minlength=BINS) for e in x[:, :, c]]) / x.shape[1]
            for c in range(x.shape[-1])]
    return np.concatenate(hist + [x.mean(axis=1), x.std(axis=1)], axis=1)


def summary_statistics(x: np.ndarray) -> np.ndarray:
    """(n, 7 C) per channel over the sequence: mean, SD, min, max, and the mean, SD and mean absolute value of the
    deltas (differences of consecutive steps)."""
    d = np.diff(x, axis=1) if x.shape[1] > 1 else np.zeros_like(x)
    return np.concatenate([x.mean(axis=1), x.std(axis=1), x.min(axis=1), x.max(axis=1),
                           d.mean(axis=1), d.std(axis=1), np.abs(d).mean(axis=1)], axis=1)


def _images(x: np.ndarray) -> np.ndarray:
    """(n, L, C) pixels -> (n, C, side, side); an error when L is not a square."""
    side = int(round(np.sqrt(x.shape[1])))
    if side * side != x.shape[1]:
        raise LinrnnError(f"trivial predictors: expected square images, found {x.shape[1]} pixels")
    return np.moveaxis(x, 2, 1).reshape(len(x), x.shape[2], side, side)


def pooled_pixels(x: np.ndarray) -> np.ndarray:
    """(n, C side'^2) every pixel's intensity at its position, average-pooled to side' <= PIXEL_SIDE."""
    img = _images(x)
    side = img.shape[-1]
    f = max(1, -(-side // PIXEL_SIDE))
    while side % f:
        f += 1
    n, C = img.shape[:2]
    return img.reshape(n, C, side // f, f, side // f, f).mean(axis=(3, 5)).reshape(n, -1)


def patterns(x: np.ndarray, threshold: float) -> np.ndarray:
    """(n, 512) the frequency of each 3 x 3 pattern of pixels above `threshold` (the channels' mean), zeros outside."""
    grey = _images(x).mean(axis=1) > threshold
    n, side, _ = grey.shape
    padded = np.pad(grey, ((0, 0), (1, 1), (1, 1))).astype(np.int64)
    code = np.zeros((n, side, side), dtype=np.int64)
    for dy in range(3):
        for dx in range(3):
            code = code * 2 + padded[:, dy:dy + side, dx:dx + side]
    return np.stack([np.bincount(c.ravel(), minlength=512) for c in code]) / (side * side)


# -- classification and retrieval: one label per example --------------------------------------------

def _fitted(families: list[tuple[str, str, dict]], y: dict, task) -> list[dict]:
    """Each (name, model, features) fit and scored."""
    score = _scorer(task, y)
    model = {"least squares": lambda X: fit.least_squares(X, y["train"], task.classes, score),
             "logistic": lambda X: fit.logistic(X, y["train"], task.classes, score)}
    return [{"name": name, **model[kind](X)} for name, kind, X in families]


def classification(task, splits: dict) -> list[dict]:
    y = {k: np.asarray(s.arrays[s.labels], dtype=np.int64) for k, s in splits.items()}
    if task.objective == "retrieval":
        return _fitted(_retrieval_features(splits), y, task)
    if task.inputs == "tokens":
        return _fitted(_token_features(task, splits), y, task)
    return _fitted(_value_features(task, splits), y, task)


def _retrieval_features(splits: dict) -> list[tuple[str, str, dict]]:
    vocab = _vocabulary(splits)
    X = {}
    for k, s in splits.items():
        a, b = (bag_tokens(_rows(s, _input_name(s, i)), vocab) for i in (0, 1))
        X[k] = np.hstack([a, b, np.abs(a - b), a * b])
    name = "bag of tokens of both documents (their difference and product)"
    return [(name, "least squares", X), (f"logistic regression on the {name}", "logistic", X)]


def _token_features(task, splits: dict) -> list[tuple[str, str, dict]]:
    vocab = _vocabulary(splits)
    rows = {k: _rows(s, _input_name(s)) for k, s in splits.items()}
    tokens = {k: bag_tokens(r, vocab) for k, r in rows.items()}
    bigrams = {k: np.hstack([tokens[k], bag_bigrams(r, vocab)]) for k, r in rows.items()}
    out = [("bag of tokens", "least squares", tokens),
           ("bag of bigrams (a local window of 2)", "least squares", bigrams),
           ("logistic regression on the bag of tokens and bigrams", "logistic", bigrams)]
    if task.name == "listops":
        ids = _vocabulary_ids(splits["train"])
        root = {k: np.stack([trees.root_features(t, ids) for t in r]) for k, r in rows.items()}
        out.append(("logistic regression on the root operator x its own digit operands (their counts, presence "
                    "and value) and its number of subtrees", "logistic", root))
    return out


def _value_features(task, splits: dict) -> list[tuple[str, str, dict]]:
    edges = _edges(splits["train"])
    features = {"values": lambda x: bag_values(x, edges), "statistics": summary_statistics}
    if task.inputs == "pixels":
        threshold = _mean(splits["train"])
        features.update(pixels=pooled_pixels, patterns=lambda x: patterns(x, threshold))
    X = {name: {k: _per_example(s, f) for k, s in splits.items()} for name, f in features.items()}
    out = [(f"bag of values ({BINS} quantile bins per channel, mean and SD)", "least squares", X["values"]),
           ("logistic regression on per-channel summary statistics (mean, SD, min, max; the deltas' mean, SD and "
            "mean absolute value)", "logistic", X["statistics"])]
    if task.inputs == "pixels":
        out += [("logistic regression on every pixel at its position (per-pixel)", "logistic", X["pixels"]),
                ("logistic regression on the frequencies of 3 x 3 patterns of bright pixels (a neighbourhood model)",
                 "logistic", X["patterns"])]
    return out


# -- tokens and segmentation: one class per position -------------------------------------------------

def _token_targets(split) -> tuple[list, list, list]:
    """Per example (tokens, labels, positions) of a tokens/segmentation split."""
    src = _input_name(split)
    tgt = next(s.name for s in split.sequences if s.role == "target")
    xs, ys, ps = [], [], []
    for i in range(len(split)):
        x = np.asarray(split.row(src, i)).reshape(-1)
        xs.append(x), ys.append(np.asarray(split.row(tgt, i)).reshape(-1)), ps.append(np.arange(len(x)))
    return xs, ys, ps


Key = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _keys(data: dict, keys: list[Key]) -> dict[str, list[np.ndarray]]:
    """{split: [every position's key j, ...]} of each key function (tokens, positions) -> keys."""
    return {k: [np.concatenate([key(x, p) for x, p in zip(v[0], v[2])]) for key in keys] for k, v in data.items()}


def _shifted(x: np.ndarray, lag: int, fill: int) -> np.ndarray:
    out = np.full_like(x, fill)
    out[lag:] = x[:len(x) - lag]
    return out


def _token_keys(xs: list[np.ndarray], V: int, ids: dict[str, int] | None) -> dict[str, np.ndarray]:
    """Every position's keys, computed once: the token, (previous, token), the last three, and with a ListOps
    vocabulary `ids` the operator a closing bracket closes and (that operator, previous token)."""
    x = [np.asarray(t, dtype=np.int64) for t in xs]
    one = np.concatenate(x)
    prev = np.concatenate([_shifted(t, 1, V - 1) for t in x])
    prev2 = np.concatenate([_shifted(t, 2, V - 1) for t in x])
    keys = {"token": one, "previous": prev * V + one, "three": (prev2 * V + prev) * V + one}
    if ids is not None:
        op = np.concatenate([trees.closing_operators(t, ids) for t in x]) * V + V - 1
        keys.update(operator=op, operator_previous=op * V + prev)
    return keys


def tokens(task, splits: dict) -> list[dict]:
    data = {k: _token_targets(s) for k, s in splits.items()}
    y = {k: np.concatenate(v[1]).astype(np.int64) for k, v in data.items()}
    score = _scorer(task, y)
    V = int(max(max(int(np.max(x)) for x in v[0] if len(x)) for v in data.values())) + 2
    subtrees = task.name == "listops-subtrees"
    ids = _vocabulary_ids(splits["train"]) if subtrees else None
    keys = {k: _token_keys(v[0], V, ids) for k, v in data.items()}
    chains = [("lookup per token", ["token"]), ("lookup per (previous token, token)", ["token", "previous"]),
              ("lookup per last three tokens", ["token", "previous", "three"])]
    if subtrees:
        chains += [("lookup per operator of the subtree a closing bracket closes (a parse, no operand)",
                    ["token", "operator"]),
                   ("lookup per (that operator, previous token)", ["token", "operator", "operator_previous"])]
    out = []
    for name, names in chains:
        logits = fit.chain({k: [keys[k][n] for n in names] for k in data}, y["train"], task.classes, balanced=False)
        out.append({"name": name, **{k: score(k, logits[k]) for k in data}})
    if subtrees:
        out += _local_evaluation(data, y, task, score, ids, logits)   # backed off to the last lookup
    return out


def _local_evaluation(data: dict, y: dict, task, score: fit.Score, ids: dict[str, int], fallback: dict) -> list[dict]:
    """ListOpsSubTrees: each subtree evaluated on its own digit operands (no learning; a subtree with none keeps
    the `fallback` lookup's answer), and a lookup per (operator, that value, its number of subtree operands) backed
    off to it."""
    local = {k: np.concatenate([trees.local_values(x, ids) for x in v[0]]) for k, v in data.items()}
    evaluated = {k: np.where((a[:, 1] >= 0)[:, None], np.eye(task.classes)[np.maximum(a[:, 1], 0)], fallback[k])
                 for k, a in local.items()}
    width = trees.DIGITS + 2
    keys = {k: [(a[:, 0] * width + a[:, 1] + 1) * width + np.minimum(a[:, 3], width - 1)] for k, a in local.items()}
    learned = fit.chain(keys, y["train"], task.classes, balanced=False, start=evaluated)
    return [{"name": "each subtree evaluated on its own digit operands (no learning)",
             **{k: score(k, evaluated[k]) for k in data}},
            {"name": "lookup per (operator, its value on its own digit operands, its number of subtrees)",
             **{k: score(k, learned[k]) for k in data}}]


def segmentation(task, splits: dict) -> list[dict]:
    data = {k: _token_targets(s) for k, s in splits.items()}
    y = {k: np.concatenate(v[1]).astype(np.int64) for k, v in data.items()}
    score = _scorer(task, y)
    levels = lambda x, n: np.minimum(np.asarray(x, dtype=np.int64) * n // 256, n - 1)
    side = int(round(np.sqrt(len(data["train"][0][0]))))

    def neighbourhood(x, p):
        q = levels(x, NEIGHBOUR_LEVELS).reshape(side, side)
        padded = np.pad(q, 1)
        key = np.zeros_like(q)
        for dy in range(3):
            for dx in range(3):
                key = key * NEIGHBOUR_LEVELS + padded[dy:dy + side, dx:dx + side]
        return key.reshape(-1)

    intensity = lambda x, p: levels(x, LEVELS)
    position = lambda x, p: levels(x, LEVELS) * (side * side) + p
    out = []
    for name, keys in (("lookup per pixel intensity", [intensity]),
                       ("lookup per (pixel intensity, position)", [intensity, position]),
                       ("lookup per 3 x 3 neighbourhood of intensities", [intensity, neighbourhood])):
        for balanced in (False, True):
            logits = fit.chain(_keys(data, keys), y["train"], task.classes, balanced)
            rule = "the class most over-represented against its frequency" if balanced else "the most frequent class"
            out.append({"name": f"{name}, read by {rule}", **{k: score(k, logits[k]) for k in data}})
    out.append({"name": f"gradient-boosted trees on each pixel's {2 * RADIUS + 1} x {2 * RADIUS + 1} neighbourhood "
                        "and position, classes weighted 1 / frequency (a neighbourhood model)",
                **_boosted_windows(data, y, task, score, side)})
    return out


def _boosted_windows(data: dict, y: dict, task, score: fit.Score, side: int) -> dict:
    """The boosted trees on the windows of a seeded sample of training pixels, read on each split CHUNK images at a
    time."""
    from linrnn.tasks.datatasks import IGNORE_INDEX

    images = {k: np.stack(v[0]) for k, v in data.items()}                         # (n, side^2)
    scored = np.flatnonzero(y["train"] != IGNORE_INDEX)
    rows = scored[fit.sample(len(scored), fit.MAX_POSITIONS)]
    X = windows(images["train"], side, rows)

    def predict(model, k: str) -> np.ndarray:
        return np.concatenate([model.predict_proba(windows(images[k][i:i + CHUNK], side))
                               for i in range(0, len(images[k]), CHUNK)])
    return fit.boosted_trees(X, y["train"][rows], predict, task.classes, score, balanced=True)


def windows(images: np.ndarray, side: int, rows: np.ndarray | None = None) -> np.ndarray:
    """(n, side^2) intensities -> (n side^2, (2 RADIUS + 1)^2 + 2) float32: each pixel's neighbourhood (zeros outside
    the image) and its row and column; `rows`: only these pixels (indices into the n side^2)."""
    n = len(images)
    width = 2 * RADIUS + 1
    padded = np.pad(images.reshape(n, side, side).astype(np.float32), ((0, 0), (RADIUS, RADIUS), (RADIUS, RADIUS)))
    at = np.arange(n * side * side) if rows is None else np.asarray(rows)
    image, pixel = np.divmod(at, side * side)
    row, col = np.divmod(pixel, side)
    cols = [padded[image, row + dy, col + dx] for dy in range(width) for dx in range(width)]
    return np.column_stack(cols + [row, col]).astype(np.float32)
