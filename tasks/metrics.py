"""The papers' losses and metrics, in NumPy on a batch's predictions (framework-neutral).

Regression (the atomic synthetic tasks): MSE and R^2 = 1 - MSE / Var(y), both over the scored
entries of the whole batch (DLR's `src/tasks/metrics.py`). Classification (tokens, segmentation):
accuracy over the positions that are not ignored, and macro F1 over the classes that are labelled or
predicted somewhere (scikit-learn's `f1_score(average="macro")`: a class predicted but never labelled
counts, with F1 0).

Chance differs by metric: for accuracy, no answer that ignores the input beats the most frequent class;
for macro F1 a constant answer is not the best such answer (random answers in the right proportions
score higher on imbalanced classes), so `no_information_macro_f1` gives the best one.
"""

from __future__ import annotations

import math

import numpy as np


def _scored(pred: np.ndarray, target: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B L d) predictions and targets, (B L) mask -> the scored entries, flattened."""
    keep = np.broadcast_to(mask[..., None], target.shape)
    return pred[keep], target[keep]


def mse(pred, target, mask) -> float:
    p, t = _scored(pred, target, mask)
    return float(np.mean((p - t) ** 2)) if t.size else float("nan")


def r2(pred, target, mask) -> float:
    p, t = _scored(pred, target, mask)
    var = float(np.var(t)) if t.size else 0.0
    return 1.0 - float(np.mean((p - t) ** 2)) / var if var > 0 else float("nan")


def confusion(logits: np.ndarray, labels: np.ndarray, ignore_index: int = -100, classes: int | None = None) -> np.ndarray:
    """(C C) counts: row = true class, column = predicted class (argmax), over positions not ignored."""
    keep = labels != ignore_index
    true, pred = labels[keep], np.argmax(logits, -1)[keep]
    C = classes or logits.shape[-1]
    out = np.zeros((C, C), dtype=np.int64)
    np.add.at(out, (true, pred), 1)
    return out


def confusion_accuracy(c: np.ndarray) -> float:
    return float(np.trace(c) / c.sum()) if c.sum() else float("nan")


def confusion_macro_f1(c: np.ndarray) -> float:
    """Mean F1 over the classes that are true or predicted somewhere."""
    tp, true, pred = np.diag(c), c.sum(axis=1), c.sum(axis=0)
    present = (true + pred) > 0
    return float(np.mean(2 * tp[present] / (true + pred)[present])) if present.any() else float("nan")


def confusion_balanced_accuracy(c: np.ndarray) -> float:
    """Mean per-class recall over the classes present in the labels (sklearn's balanced_accuracy_score)."""
    true = c.sum(axis=1)
    present = true > 0
    return float(np.mean(np.diag(c)[present] / true[present])) if present.any() else float("nan")


def accuracy(logits: np.ndarray, labels: np.ndarray, ignore_index: int = -100) -> float:
    """logits (... C), labels (...) with `ignore_index` at unscored positions."""
    return confusion_accuracy(confusion(logits, labels, ignore_index))


def macro_f1(logits: np.ndarray, labels: np.ndarray, ignore_index: int = -100) -> float:
    return confusion_macro_f1(confusion(logits, labels, ignore_index))


def balanced_accuracy(logits: np.ndarray, labels: np.ndarray, ignore_index: int = -100) -> float:
    """Mean per-class recall over the classes present in `labels` (sklearn's balanced_accuracy_score,
    DLR's `accuracy_balanced`); logits (... C), labels (...)."""
    return confusion_balanced_accuracy(confusion(logits, labels, ignore_index))


def no_information_macro_f1(counts) -> dict:
    """The best expected macro F1 of answers that ignore the input, for a split with these class counts.

    Answering class k with probability q_k, independently of the input, gives in expectation (for many scored
    positions) precision p_k and recall q_k on class k, so F1_k = 2 p_k q_k / (p_k + q_k), with p_k the class's
    frequency; the macro average runs over the K labelled classes (a predicted class that is never labelled only
    adds a 0). Each term is concave in q_k with derivative 2 p_k^2 / (p_k + q_k)^2, equal for all k (the Lagrange
    condition on sum q = 1) exactly when q = p: the best such answer draws classes in their own proportions and
    scores sum_k p_k / K = 1/K, whatever the imbalance. A constant answer scores 2 p_k / (1 + p_k) / K, never more.
    Returned: {"value": 1/K, "frequencies": p, "constant": the best single class's macro F1, "classes": K}.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 1 or counts.sum() <= 0 or np.any(counts < 0):
        raise ValueError(f"counts: expected non-negative class counts with a positive total, found {counts.tolist()}")
    p = counts / counts.sum()
    K = int(np.count_nonzero(counts))
    return {"value": 1.0 / K, "frequencies": p.tolist(), "constant": float(np.max(2 * p / (1 + p)) / K),
            "classes": K}


def regression_metrics(pred, target, mask) -> dict[str, float]:
    return {"mse": mse(pred, target, mask), "r2": r2(pred, target, mask)}


LOSS_POINTS = 100           # the train-loss curve of a row is thinned to about this many window means


def thin(losses: list[float], points: int = LOSS_POINTS) -> dict[str, list]:
    """Window means of a per-step loss curve: {"step": last step of each window, "loss": its mean}."""
    window = max(1, math.ceil(len(losses) / points))
    steps, means = [], []
    for start in range(0, len(losses), window):
        chunk = losses[start:start + window]
        steps.append(start + len(chunk))
        means.append(sum(chunk) / len(chunk))
    return {"step": steps, "loss": means}
