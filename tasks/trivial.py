"""The best trivial predictor of a task: what a predictor that sees the input, but no long-range context, scores.

"Learned" means better than this, not only better than chance (a constant answer). A model at 0.5 macro F1 on
PathfinderSegmentation has learnt nothing about paths if a table of each pixel's intensity already scores 0.55.
Each family below is fit on the task's training data, the best member is chosen on validation data, and that
member is scored on the split the models are scored on, with the task's own metric (`Tally` for the data tasks,
`tasks.metrics.r2` for the synthetic ones), so its score reads on the models' scale.

    data task objective   the family (each fit on train, chosen on val, scored on test)
    classification        bag of tokens: a least-squares linear classifier on the counts of each token per
                          example (tokens), or on a histogram of the example's values in 16 quantile bins per
                          channel plus their mean and SD (pixels, audio features); and the same on a bag of
                          bigrams (token pairs, hashed into 1,024 buckets), a local window of two
    retrieval             the two documents' bags, their absolute difference and product (AAN's two-tower
                          features without any order), least-squares linear classifier
    tokens                a lookup of the most frequent label per token, per (previous token, token) and per
                          the last three tokens, each backed off to the shorter key when unseen; on
                          ListOpsSubTrees also per operator of the subtree a closing bracket closes (found by
                          matching brackets: a parse that reads no operand) and per (that operator, previous
                          token)
    segmentation          a lookup per pixel intensity (its exact value), per (intensity, position), and per
                          3 x 3 neighbourhood of quantised intensities (backed off to the intensity), each read
                          by its most frequent class or by the class most over-represented against its
                          frequency (macro F1 rewards the rare classes)

    synthetic task (regression; fit on the training stream, chosen on a held-out stream, scored with R^2 on the
    validation batches the training loop evaluates): least-squares linear maps, one per output feature, from
                          the input at the position (per token), the last w inputs (a local window, w = 8, at most
                          L / 4), and the input with the causal running sum of the inputs (a bag of tokens)

    data_task_baseline(config, folder) -> {"metric", "split", "best": {"name", "score"}, "predictors": [...]}
    synthetic_baseline(task, length, seed, eval_batches, batch_size) -> the same, on R^2

The bar is high where a task is nearly local: the bag of tokens scores R^2 0.90 on CumSum and the local window
0.43 on CumMax at L = 64, where Shift, Reverse and ContextShift stay at 0.02-0.24.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from linrnn.impls.errors import LinrnnError

# The family's version: a record's baseline measured by another version is measured again (2: exact intensities for
# the segmentation lookups, ListOpsSubTrees' operator lookups)
FAMILY_VERSION = 2
BINS = 16                 # quantile bins per channel of a bag of values (pixels, audio features)
BIGRAM_BUCKETS = 1024     # hashed token pairs of the bag of bigrams
LEVELS = 256              # the segmentation lookups read a pixel's exact intensity (16 levels lose what the
                          # generator's intensities carry: PathfinderSegmentation-32's per-pixel lookup scores
                          # 0.548 macro F1 on exact values, 0.426 on 16 levels)
NEIGHBOUR_LEVELS = 4      # quantised intensities of a 3 x 3 neighbourhood (4^9 keys)
WINDOW = 8                # the synthetic tasks' local window (at most L / 4)
TRAIN_BATCHES = 64        # synthetic: training-stream batches the linear maps are fit on
RIDGE = 1e-6              # relative ridge of the least-squares fits (keeps a rank-deficient bag solvable)


def _result(metric: str, split: str, scored: list[dict], choose: str) -> dict:
    """The family's record: every member's scores, the best on `choose` (ties: the first) scored on `split`, and when
    and by which code it was measured (a record's runs and its baselines may be measured at different times)."""
    from linrnn.impls.results import code_version, now

    best = max(scored, key=lambda r: r[choose])
    return {"metric": metric, "split": split, "chosen_on": choose,
            "best": {"name": best["name"], "score": best[split]}, "predictors": scored,
            "family_version": FAMILY_VERSION, "measured": {"date": now(), "code_version": code_version()}}


# -- least squares ---------------------------------------------------------------------------------

def _standardise(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    mean, sd = train.mean(axis=0), train.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return [np.hstack([(x - mean) / sd, np.ones((len(x), 1))]) for x in (train, *others)]


def _least_squares(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The ridge-stabilised least-squares map W of X W ~ Y (X with its constant column)."""
    gram = X.T @ X
    gram[np.diag_indices_from(gram)] += RIDGE * max(float(np.trace(gram)) / len(gram), 1e-12)
    return np.linalg.solve(gram, X.T @ Y)


def _linear_classifier(train: np.ndarray, y: np.ndarray, classes: int,
                       *others: np.ndarray) -> list[np.ndarray]:
    """Least-squares fit of one-hot labels on standardised features; the scores of the other feature sets."""
    Xtr, *rest = _standardise(train, *others)
    W = _least_squares(Xtr, np.eye(classes)[y])
    return [X @ W for X in rest]


# -- data tasks --------------------------------------------------------------------------------------

def _score(objective: str, classes: int, metric: str, logits: np.ndarray, labels: np.ndarray) -> float:
    from linrnn.tasks.datatasks import Tally

    tally = Tally(objective, classes)
    tally.add(logits, labels)
    return float(tally.summary()[metric])


def _rows(split, name: str) -> list[np.ndarray]:
    return [np.asarray(split.row(name, i)) for i in range(len(split))]


def _input_name(split, which: int = 0) -> str:
    return [s.name for s in split.sequences if s.role == "input"][which]


def _bag_tokens(rows: list[np.ndarray], vocab: int) -> np.ndarray:
    out = np.zeros((len(rows), vocab + 1))
    for i, r in enumerate(rows):
        out[i, :vocab] = np.bincount(np.asarray(r, dtype=np.int64).ravel(), minlength=vocab)[:vocab] / max(len(r), 1)
        out[i, vocab] = len(r)
    return out


def _bag_bigrams(rows: list[np.ndarray], vocab: int) -> np.ndarray:
    out = np.zeros((len(rows), BIGRAM_BUCKETS))
    for i, r in enumerate(rows):
        r = np.asarray(r, dtype=np.int64).ravel()
        if len(r) > 1:
            keys = (r[:-1] * (vocab + 1) + r[1:]) % BIGRAM_BUCKETS
            out[i] = np.bincount(keys, minlength=BIGRAM_BUCKETS) / (len(r) - 1)
    return out


def _edges(rows: list[np.ndarray]) -> np.ndarray:
    """(channels, BINS - 1) quantile edges of the training values, per channel."""
    values = np.concatenate([np.asarray(r, dtype=np.float64).reshape(len(r), -1) for r in rows])
    return np.quantile(values, np.linspace(0, 1, BINS + 1)[1:-1], axis=0).T


def _bag_values(rows: list[np.ndarray], edges: np.ndarray) -> np.ndarray:
    out = []
    for r in rows:
        r = np.asarray(r, dtype=np.float64).reshape(len(r), -1)
        hist = [np.bincount(np.searchsorted(edges[c], r[:, c]), minlength=BINS) / len(r) for c in range(r.shape[1])]
        out.append(np.concatenate(hist + [r.mean(axis=0), r.std(axis=0)]))
    return np.asarray(out)


def _vocabulary(splits: dict) -> int:
    from linrnn.tasks.datatasks import vocabulary_size

    try:
        return vocabulary_size(splits["train"])
    except LinrnnError:
        return int(max(np.max(np.concatenate([np.asarray(r).ravel() for r in _rows(s, _input_name(s))]))
                       for s in splits.values())) + 1


def _classification(task, splits: dict) -> list[dict]:
    labels = {k: np.asarray(s.arrays[s.labels], dtype=np.int64) for k, s in splits.items()}
    names = ("train", "val", "test")
    if task.objective == "retrieval":
        vocab = _vocabulary(splits)
        features = {}
        for k, s in splits.items():
            a, b = (_bag_tokens(_rows(s, _input_name(s, i)), vocab) for i in (0, 1))
            features[k] = np.hstack([a, b, np.abs(a - b), a * b])
        families = {"bag of tokens of both documents (their difference and product)": features}
    elif task.inputs == "tokens":
        vocab = _vocabulary(splits)
        rows = {k: _rows(s, _input_name(s)) for k, s in splits.items()}
        families = {"bag of tokens": {k: _bag_tokens(r, vocab) for k, r in rows.items()},
                    "bag of bigrams (a local window of 2)": {k: np.hstack([_bag_tokens(r, vocab), _bag_bigrams(r, vocab)])
                                                             for k, r in rows.items()}}
    else:
        rows = {k: _rows(s, _input_name(s)) for k, s in splits.items()}
        edges = _edges(rows["train"])
        families = {f"bag of values ({BINS} quantile bins per channel, mean and SD)":
                    {k: _bag_values(r, edges) for k, r in rows.items()}}
    scored = []
    for name, X in families.items():
        outs = _linear_classifier(X["train"], labels["train"], task.classes, *(X[k] for k in names))
        scored.append({"name": name, **{k: _score(task.objective, task.classes, task.monitor, z, labels[k])
                                        for k, z in zip(names, outs)}})
    return scored


def _token_targets(split) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat (tokens, labels, position in its example) of a tokens/segmentation split, one row per position."""
    src = _input_name(split)
    tgt = next(s.name for s in split.sequences if s.role == "target")
    xs, ys, ps = [], [], []
    for i in range(len(split)):
        x = np.asarray(split.row(src, i)).reshape(-1)
        y = np.asarray(split.row(tgt, i)).reshape(-1)
        xs.append(x), ys.append(y), ps.append(np.arange(len(x)))
    return xs, ys, ps


class _Lookup:
    """Counts of each class per key, read by the most frequent class (or the most over-represented one against
    the class frequencies, `balanced`); an unseen key falls back to the `fallback` lookup's answer."""

    def __init__(self, keys: np.ndarray, labels: np.ndarray, classes: int):
        from linrnn.tasks.datatasks import IGNORE_INDEX

        keep = labels != IGNORE_INDEX
        self.table: dict = {}
        uniq, inverse = np.unique(keys[keep], return_inverse=True)
        counts = np.zeros((len(uniq), classes))
        np.add.at(counts, (inverse, labels[keep]), 1)
        self.uniq, self.counts = uniq, counts
        self.prior = counts.sum(axis=0) / max(counts.sum(), 1)

    def logits(self, keys: np.ndarray, balanced: bool, fallback: np.ndarray) -> np.ndarray:
        at = np.searchsorted(self.uniq, keys)
        at = np.minimum(at, len(self.uniq) - 1)
        seen = self.uniq[at] == keys
        rows = self.counts[at] / np.maximum(self.counts[at].sum(axis=1, keepdims=True), 1)
        if balanced:
            rows = rows / np.where(self.prior > 0, self.prior, 1.0)
        return np.where(seen[:, None], rows, fallback)


def _chain(keys: list[Callable], train, others: dict, classes: int, balanced: bool) -> dict:
    """Lookups on growing keys, each backed off to the shorter one's answer: {split: logits}."""
    (xs, ys, ps) = train
    y = np.concatenate(ys)
    out = {k: np.tile(np.full(classes, 1.0 / classes), (sum(len(x) for x in v[0]), 1)) for k, v in others.items()}
    for key in keys:
        table = _Lookup(np.concatenate([key(x, p) for x, p in zip(xs, ps)]), y, classes)
        out = {k: table.logits(np.concatenate([key(x, p) for x, p in zip(v[0], v[2])]), balanced, out[k])
               for k, v in others.items()}
    return out


def _shifted(x: np.ndarray, lag: int, fill: int) -> np.ndarray:
    out = np.full_like(x, fill)
    out[lag:] = x[:len(x) - lag]
    return out


def _closing_operator(x: np.ndarray, operators: set[int], closing: int) -> np.ndarray:
    """At each closing bracket, the operator token it closes (matching brackets with a stack); elsewhere the token
    itself. Reads the tree's shape and its operators, never an operand's value."""
    out = np.asarray(x, dtype=np.int64).copy()
    stack: list[int] = []
    for i, token in enumerate(out.tolist()):
        if token in operators:
            stack.append(token)
        elif token == closing and stack:
            out[i] = stack.pop()
    return out


def _tokens(task, splits: dict) -> list[dict]:
    data = {k: _token_targets(s) for k, s in splits.items()}
    V = int(max(max(int(np.max(x)) for x in v[0] if len(x)) for v in data.values())) + 2
    pad = V - 1
    one = lambda x, p: x.astype(np.int64)
    two = lambda x, p: _shifted(x, 1, pad).astype(np.int64) * V + x
    three = lambda x, p: (_shifted(x, 2, pad).astype(np.int64) * V + _shifted(x, 1, pad)) * V + x
    families = [("lookup per token", [one]), ("lookup per (previous token, token)", [one, two]),
                ("lookup per last three tokens", [one, two, three])]
    if task.name == "listops-subtrees":
        from linrnn.tasks.data.listops_subtrees import TOKEN_ID

        operators = {TOKEN_ID[t] for t in ("[MIN", "[MAX", "[MED", "[SM")}
        op = lambda x, p: _closing_operator(x, operators, TOKEN_ID["X"]) * V + V - 1
        op_prev = lambda x, p: op(x, p) * V + _shifted(x, 1, pad)
        families += [("lookup per operator of the subtree a closing bracket closes (a parse, no operand)", [one, op]),
                     ("lookup per (that operator, previous token)", [one, op, op_prev])]
    scored = []
    for name, keys in families:
        logits = _chain(keys, data["train"], data, task.classes, balanced=False)
        scored.append({"name": name, **{k: _score(task.objective, task.classes, task.monitor, logits[k],
                                                  np.concatenate(data[k][1])) for k in data}})
    return scored


def _segmentation(task, splits: dict) -> list[dict]:
    data = {k: _token_targets(s) for k, s in splits.items()}
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
    scored = []
    for name, keys in (("lookup per pixel intensity", [intensity]),
                       ("lookup per (pixel intensity, position)", [intensity, position]),
                       ("lookup per 3 x 3 neighbourhood of intensities", [intensity, neighbourhood])):
        for balanced in (False, True):
            logits = _chain(keys, data["train"], data, task.classes, balanced)
            rule = "the class most over-represented against its frequency" if balanced else "the most frequent class"
            scored.append({"name": f"{name}, read by {rule}",
                           **{k: _score(task.objective, task.classes, task.monitor, logits[k],
                                        np.concatenate(data[k][1])) for k in data}})
    return scored


def data_task_baseline(config, folder: Path) -> dict:
    """The best trivial predictor of a data task run (`config`: its TrainConfig) on the data in `folder`."""
    from linrnn.tasks import data as datalayer

    task = config.data_task
    options = config.loader_options()
    splits = {s: datalayer.load(task.loader, folder, s, **options) for s in ("train", "val", "test")}
    family = {"classification": _classification, "retrieval": _classification, "tokens": _tokens,
              "segmentation": _segmentation}[task.objective]
    return _result(task.monitor, "test", family(task, splits), "val")


# -- synthetic tasks ---------------------------------------------------------------------------------

def _windowed(x: np.ndarray, w: int) -> np.ndarray:
    """(B L d) -> (B L w d): the last w inputs at every position, zeros before the start."""
    B, L, d = x.shape
    padded = np.concatenate([np.zeros((B, w - 1, d)), x], axis=1)
    return np.stack([padded[:, k:k + L] for k in range(w)], axis=2)


def _synthetic_features(x: np.ndarray, L_out: int, w: int) -> dict[str, np.ndarray]:
    """Features at the last L_out positions, one row per (example, position): (B L_out F) each."""
    x = np.asarray(x, dtype=np.float64)
    L = x.shape[1]
    at = slice(L - L_out, L)
    running = np.cumsum(x, axis=1) / L
    return {"linear in the input at the position (per token)": x[:, at],
            f"linear in the last {w} inputs (a local window)": _windowed(x, w)[:, at].reshape(len(x), L_out, -1),
            "linear in the input and the causal running sum of the inputs (a bag of tokens)":
                np.concatenate([x, running], axis=-1)[:, at]}


def _stream(task: str, length: int, seed: int, batches: int, batch_size: int, start: int = 0):
    from linrnn.tasks.synthetic import make_task

    stream = make_task(task, length, seed=seed, batch_size=batch_size, dtype="float64")
    drawn = [stream.batch(start + k) for k in range(batches)]
    return (np.concatenate([b.inputs for b in drawn]), np.concatenate([b.targets for b in drawn]),
            np.concatenate([b.mask for b in drawn]))


def synthetic_baseline(task: str, length: int, seed: int = 0, eval_batches: int = 4, batch_size: int = 16) -> dict:
    """The best trivial predictor of a synthetic task at `length`: fit on the training stream of `seed`, chosen on
    later batches of it, scored with R^2 on the validation batches `linrnn train` evaluates (the stream of
    seed + 2^31, its first `eval_batches` batches)."""
    from linrnn.tasks.metrics import r2

    # at most about 2^20 fitted positions (L = 4,096: 16 batches of 16)
    batches = max(4, min(TRAIN_BATCHES, 2**20 // (batch_size * length)))
    fit = _stream(task, length, seed, batches, batch_size)
    held = _stream(task, length, seed, max(1, batches // 4), batch_size, start=batches)
    scored_on = _stream(task, length, seed + 2**31, eval_batches, batch_size)
    L_out = fit[1].shape[1]
    w = max(2, min(WINDOW, fit[0].shape[1] // 4))
    feats = {k: _synthetic_features(s[0], L_out, w) for k, s in (("fit", fit), ("held", held), ("val", scored_on))}
    scored = []
    for name in feats["fit"]:
        X = {k: f[name].reshape(-1, f[name].shape[-1]) for k, f in feats.items()}
        Xfit, Xheld, Xval = _standardise(X["fit"], X["held"], X["val"])
        d_out = fit[1].shape[-1]
        W = _least_squares(Xfit, fit[1].reshape(-1, d_out))
        score = {k: float(r2((Xk @ W).reshape(s[1].shape), s[1], s[2]))
                 for k, Xk, s in (("held", Xheld, held), ("val", Xval, scored_on))}
        scored.append({"name": name, **score})
    return _result("r2", "val", scored, "held")
