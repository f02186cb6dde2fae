"""The best trivial predictor of a task: what a cheap predictor that sees the input, but no long-range context,
scores.

"Learned" means better than this, not only better than chance (a constant answer). A model at 0.5 macro F1 on
PathfinderSegmentation has learnt nothing about paths if a table of each pixel's intensity already scores 0.55.
The bar is the strongest cheap predictor a careful reviewer would try, not the first: a small family of them per
task, simplest first, each fit on the task's training data (a learned model's regularisation chosen on validation
data), the best member chosen on validation data and scored on the split the models are scored on, with the task's
own metric (`Tally` for the data tasks, `tasks.metrics.r2` for the synthetic ones), so its score reads on the models'
scale. Every member's scores stay in the record ("predictors"); the best is "best" ({"name", "score"}).

    data task objective   the family, simplest first (tasks/trivial_data.py; the fits in tasks/trivial_models.py)
    classification        tokens: least squares on the bag of tokens (each token's frequency) and on the bag of
                          bigrams (hashed into 1,024 buckets; a local window of two); a logistic regression on the
                          bag of tokens and bigrams; ListOps: a logistic regression on the root operator x its own
                          (depth-1) digit operands: their counts, presence and value under the operator, and its
                          number of subtrees
                          pixels, audio features: least squares on a histogram of each channel's values in 16
                          quantile bins with their mean and SD; a logistic regression on per-channel summary
                          statistics (mean, SD, min, max; the deltas' mean, SD and mean absolute value); pixels
                          (Pathfinder, Path-X, Image): a logistic regression on every pixel at its position
                          (average-pooled to at most 32 x 32) and on the frequencies of the 512 3 x 3 patterns
                          of bright pixels (a neighbourhood model)
    retrieval             the two documents' bags, their absolute difference and product (AAN's two-tower
                          features without any order): least squares and a logistic regression
    tokens                a lookup of the most frequent label per token, per (previous token, token) and per
                          the last three tokens, each backed off to the shorter key when unseen; ListOpsSubTrees:
                          also per operator of the subtree a closing bracket closes (found by matching brackets: a
                          parse that reads no operand) and per (that operator, previous token); each subtree
                          evaluated on its own digit operands, every nested subtree's value unknown (no learning);
                          and a lookup per (operator, that value, its number of subtrees) backed off to it
    segmentation          a lookup per pixel intensity (its exact value), per (intensity, position), and per
                          3 x 3 neighbourhood of quantised intensities (backed off to the intensity), each read
                          by its most frequent class or by the class most over-represented against its
                          frequency (macro F1 rewards the rare classes); gradient-boosted trees on each pixel's
                          5 x 5 neighbourhood and position, classes weighted 1 / frequency

    learned models: a logistic regression's inverse L2 strength C from 0.01, 0.1, 1 and the boosted trees' rounds from
    25, 50, 100, chosen on val; at most 20,000 training examples per logistic fit and 100,000 training pixels for the
    trees (seeded samples); everything seeded, the same data give the same bar

    synthetic task (regression; fit on the training stream, chosen on a held-out stream, scored with R^2 on the
    validation batches the training loop evaluates): least-squares linear maps, one per output feature, from
                          the input at the position (per token), the last w inputs up to and including the current
                          one (a local window, w = 8, at most L / 4), and the input with the causal running sum of
                          the inputs (a bag of tokens)

    data_task_baseline(config, folder) -> {"metric", "split", "chosen_on", "best": {"name", "score"}, "predictors":
                                           [...], "family_version", "measured"}
    synthetic_baseline(task, length, seed, eval_batches, batch_size) -> the same, on R^2

The bar is high where a task is nearly local: the bag of tokens scores R^2 0.90 on CumSum and the local window
0.43 on CumMax at L = 64, where Shift, Reverse and ContextShift stay at 0.02-0.24; on the reduced-scale data sets
(docs/experiments.md, "The trivial bars") SC10's summary statistics score about 0.77 where the bag of values scored
0.47, and ListOpsSubTrees' local evaluation about 0.72 where the best lookup scored 0.33.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from linrnn.tasks import trivial_models as fit

# The family's version: a record's baseline measured by another version is measured again (2: exact intensities for
# the segmentation lookups, ListOpsSubTrees' operator lookups; 3: the learned predictors, logistic regressions and
# boosted trees with their regularisation chosen on val, ListOps' root operator x digits, ListOpsSubTrees' local
# evaluation)
FAMILY_VERSION = 3
WINDOW = 8                # the synthetic tasks' local window (at most L / 4)
TRAIN_BATCHES = 64        # synthetic: training-stream batches the linear maps are fit on


def _result(metric: str, split: str, scored: list[dict], choose: str) -> dict:
    """The family's record: every member's scores, the best on `choose` (ties: the first, the simplest) scored on
    `split`, and when and by which code it was measured (a record's runs and its baselines may be measured at
    different times)."""
    from linrnn.base.results import code_version, now

    best = max(scored, key=lambda r: r[choose])
    return {"metric": metric, "split": split, "chosen_on": choose,
            "best": {"name": best["name"], "score": best[split]}, "predictors": scored,
            "family_version": FAMILY_VERSION, "measured": {"date": now(), "code_version": code_version()}}


def data_task_baseline(config, folder: Path) -> dict:
    """The best trivial predictor of a data task run (`config`: its TrainConfig) on the data in `folder`: chosen on
    val, scored on test."""
    from linrnn.tasks import data as datalayer
    from linrnn.tasks import trivial_data

    task = config.data_task
    options = config.loader_options()
    splits = {s: datalayer.load(task.loader, folder, s, **options) for s in trivial_data.SPLITS}
    family = {"classification": trivial_data.classification, "retrieval": trivial_data.classification,
              "tokens": trivial_data.tokens, "segmentation": trivial_data.segmentation}[task.objective]
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


def synthetic_predictors(task: str, length: int, seed: int = 0, batch_size: int = 16) -> list[dict]:
    """Each member of a synthetic task's family fit on the training stream of `seed`: {"name", "features": x (B L d)
    -> (B L_out F), "W": its least-squares map, "held": R^2 on later batches of that stream}, the window
    w = 8 at most L / 4."""
    from linrnn.tasks.metrics import r2

    # at most about 2^20 fitted positions (L = 4,096: 16 batches of 16)
    batches = max(4, min(TRAIN_BATCHES, 2**20 // (batch_size * length)))
    train = _stream(task, length, seed, batches, batch_size)
    held = _stream(task, length, seed, max(1, batches // 4), batch_size, start=batches)
    L_out = train[1].shape[1]
    w = max(2, min(WINDOW, train[0].shape[1] // 4))
    out = []
    for name in _synthetic_features(train[0][:1], L_out, w):
        features = lambda x, name=name: _synthetic_features(x, L_out, w)[name]
        F = features(train[0])
        X = F.reshape(-1, F.shape[-1])
        member = {"name": name, "features": features, "mean": X.mean(axis=0),
                  "sd": np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)}
        member["W"] = fit.solve(_standardised(member, X), train[1].reshape(-1, train[1].shape[-1]))
        member["held"] = float(r2(predict(member, held[0]), held[1], held[2]))
        out.append(member)
    return out


def _standardised(member: dict, X: np.ndarray) -> np.ndarray:
    Z = (X - member["mean"]) / member["sd"]
    return np.hstack([Z, np.ones((len(Z), 1))])


def predict(member: dict, x: np.ndarray) -> np.ndarray:
    """(B L d) inputs -> (B L_out d_out) a fitted synthetic member's predictions."""
    F = member["features"](x)
    return (_standardised(member, F.reshape(-1, F.shape[-1])) @ member["W"]).reshape(*F.shape[:2], -1)


def synthetic_baseline(task: str, length: int, seed: int = 0, eval_batches: int = 4, batch_size: int = 16) -> dict:
    """The best trivial predictor of a synthetic task at `length`: fit on the training stream of `seed`, chosen on
    later batches of it, scored with R^2 on the validation batches `linrnn train` evaluates (the stream of
    seed + 2^31, its first `eval_batches` batches)."""
    from linrnn.tasks.metrics import r2

    inputs, targets, mask = _stream(task, length, seed + 2**31, eval_batches, batch_size)
    scored = [{"name": m["name"], "held": m["held"], "val": float(r2(predict(m, inputs), targets, mask))}
              for m in synthetic_predictors(task, length, seed, batch_size)]
    return _result("r2", "val", scored, "held")
