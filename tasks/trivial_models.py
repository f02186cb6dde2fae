"""The fitted models of the trivial predictors (`linrnn.tasks.trivial`): each fit on train, its regularisation
chosen on val, and scored on every split by the caller's `score(split, logits) -> float`.

    least_squares   one-hot labels on standardised features, ridge-stabilised (no strength to choose)
    logistic        multinomial logistic regression (scikit-learn, L-BFGS) on standardised features, the inverse L2
                    strength C chosen on val from C_GRID
    boosted_trees   gradient-boosted trees (scikit-learn's HistGradientBoostingClassifier) on the caller's training
                    rows (a seeded sample of at most MAX_POSITIONS), the number of boosting rounds chosen on val from
                    ROUNDS (the other splits scored with the chosen count only)
    Lookup, chain   counts of each class per key, backed off to a shorter key's answer

The scikit-learn fits run on one thread (threadpoolctl, which comes with scikit-learn): the same numbers whatever
the machine, and no oversubscription beside the training runs (two threads on a loaded 2-core machine made a fit
5-15 times slower). A fit that stops at its iteration limit before converging is kept as it is (a weaker predictor, never a wrong
score: the bar is what this predictor reaches, scored on the splits as any model is). Everything is seeded
(`SEED`); the same data give the same scores.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

RIDGE = 1e-6                      # relative ridge of the least-squares fits (keeps a rank-deficient bag solvable)
C_GRID = (0.01, 0.1, 1.0)         # logistic regression: inverse L2 strengths tried, the best on val kept
MAX_ITER = 100                    # L-BFGS iterations per logistic fit
MAX_EXAMPLES = 20_000             # at most this many training rows per logistic fit (a seeded sample)
ROUNDS = (25, 50, 100)            # boosted trees: rounds tried (one fit grown and read on val after each)
MAX_POSITIONS = 100_000           # boosted trees: at most this many training rows (a seeded sample)
SEED = 0

Score = Callable[[str, np.ndarray], float]


def standardise(train: np.ndarray, *others: np.ndarray, constant: bool = True) -> list[np.ndarray]:
    """Each feature set standardised by the training set's mean and SD (a constant feature left at 0), with a
    constant column when `constant`."""
    mean, sd = train.mean(axis=0), train.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    scaled = [(x - mean) / sd for x in (train, *others)]
    return [np.hstack([z, np.ones((len(z), 1))]) for z in scaled] if constant else scaled


def solve(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The ridge-stabilised least-squares map W of X W ~ Y (X with its constant column)."""
    gram = X.T @ X
    gram[np.diag_indices_from(gram)] += RIDGE * max(float(np.trace(gram)) / len(gram), 1e-12)
    return np.linalg.solve(gram, X.T @ Y)


def sample(n: int, at_most: int) -> np.ndarray:
    """A seeded sample of at most `at_most` of n row indices, in order (all of them when n <= at_most)."""
    if n <= at_most:
        return np.arange(n)
    return np.sort(np.random.default_rng(SEED).choice(n, at_most, replace=False))


def least_squares(X: dict[str, np.ndarray], y: np.ndarray, classes: int, score: Score) -> dict:
    """{split: score} of the least-squares linear classifier fit on X["train"]."""
    Xtr, *rest = standardise(X["train"], *X.values())
    W = solve(Xtr, np.eye(classes)[y])
    return {k: score(k, Z @ W) for k, Z in zip(X, rest)}


def _full(proba: np.ndarray, seen: np.ndarray, classes: int) -> np.ndarray:
    """(n, classes) probabilities from a model's columns of the classes it saw in training."""
    out = np.zeros((len(proba), classes))
    out[:, seen] = proba
    return out


def logistic(X: dict[str, np.ndarray], y: np.ndarray, classes: int, score: Score, balanced: bool = False) -> dict:
    """{split: score, "regularisation": ...} of the logistic regression whose C scores best on val (ties: the
    strongest regularisation). `balanced`: class weights 1 / frequency (macro F1)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    from threadpoolctl import threadpool_limits

    rows = sample(len(y), MAX_EXAMPLES)
    standard = dict(zip(X, standardise(X["train"], *X.values(), constant=False)[1:]))
    best = None
    # one model refit from the last solution (C ascending: the weaker penalty starts where the stronger one stopped)
    model = LogisticRegression(max_iter=MAX_ITER, class_weight="balanced" if balanced else None, warm_start=True)
    for C in C_GRID:
        model.set_params(C=C)
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(standard["train"][rows], y[rows])
            proba = {k: _full(model.predict_proba(Z), model.classes_, classes) for k, Z in standard.items()}
        scores = {k: score(k, p) for k, p in proba.items()}
        if best is None or scores["val"] > best[1]["val"]:
            best = (C, scores)
    C, scores = best
    return {**scores, "regularisation": {"C": C, "tried": list(C_GRID), "chosen_on": "val",
                                         "fit_rows": int(len(rows))}}


def boosted_trees(X: np.ndarray, y: np.ndarray, predict: Callable, classes: int, score: Score,
                  balanced: bool = False) -> dict:
    """{split: score, "regularisation": ...} of gradient-boosted trees fit on the training rows X (n F) with labels y,
    after the number of ROUNDS that scores best on val (ties: the fewest): one fit grown round by round (warm start)
    and read on val after each count, then train and test scored with the chosen one. `predict(model, split)`: the
    model's class probabilities on every scored row of the split (the caller reads a large split chunk by chunk)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    def trees(rounds: int, warm: bool):
        return HistGradientBoostingClassifier(max_iter=rounds, early_stopping=False, random_state=SEED,
                                              warm_start=warm, class_weight="balanced" if balanced else None)

    def proba(model, k: str) -> np.ndarray:
        return _full(predict(model, k), model.classes_, classes)

    with threadpool_limits(1):
        model, val = trees(ROUNDS[0], True), []
        for rounds in ROUNDS:
            model.set_params(max_iter=rounds)
            model.fit(X, y)
            val.append(score("val", proba(model, "val")))
        j = max(range(len(ROUNDS)), key=lambda j: (val[j], -j))
        if j < len(ROUNDS) - 1:          # the same trees as the first ROUNDS[j] rounds of the grown fit
            model = trees(ROUNDS[j], False).fit(X, y)
        scores = {k: val[j] if k == "val" else score(k, proba(model, k)) for k in ("train", "val", "test")}
    return {**scores, "regularisation": {"rounds": ROUNDS[j], "tried": list(ROUNDS), "chosen_on": "val",
                                         "fit_rows": int(len(X))}}


class Lookup:
    """Counts of each class per key, read by the most frequent class (or the most over-represented one against
    the class frequencies, `balanced`); an unseen key falls back to the `fallback` lookup's answer."""

    def __init__(self, keys: np.ndarray, labels: np.ndarray, classes: int):
        from linrnn.tasks.datatasks import IGNORE_INDEX

        keep = labels != IGNORE_INDEX
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


def chain(keys: dict[str, list[np.ndarray]], y: np.ndarray, classes: int, balanced: bool,
          start: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Lookups on growing keys, each backed off to the shorter one's answer (the first to `start`, default uniform):
    keys[split][j] is the j-th key of every position of the split; -> {split: logits}."""
    out = dict(start) if start is not None else \
        {k: np.full((len(v[0]), classes), 1.0 / classes) for k, v in keys.items()}
    for j in range(len(keys["train"])):
        table = Lookup(keys["train"][j], y, classes)
        out = {k: table.logits(v[j], balanced, out[k]) for k, v in keys.items()}
    return out
