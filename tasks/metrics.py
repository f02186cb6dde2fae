"""The papers' losses and metrics, in NumPy on a batch's predictions (framework-neutral).

Regression (the atomic synthetic tasks): MSE and R^2 = 1 - MSE / Var(y), both over the scored
entries of the whole batch (DLR's `src/tasks/metrics.py`). Classification (tokens, segmentation):
accuracy over the positions that are not ignored, and macro F1 over the classes present.
"""

from __future__ import annotations

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


def accuracy(logits: np.ndarray, labels: np.ndarray, ignore_index: int = -100) -> float:
    """logits (... C), labels (...) with `ignore_index` at unscored positions."""
    keep = labels != ignore_index
    return float(np.mean(np.argmax(logits, -1)[keep] == labels[keep])) if keep.any() else float("nan")


def macro_f1(logits: np.ndarray, labels: np.ndarray, ignore_index: int = -100) -> float:
    keep = labels != ignore_index
    pred, true = np.argmax(logits, -1)[keep], labels[keep]
    scores = []
    for c in np.union1d(np.unique(true), np.unique(pred)):
        tp = np.sum((pred == c) & (true == c))
        fp = np.sum((pred == c) & (true != c))
        fn = np.sum((pred != c) & (true == c))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return float(np.mean(scores)) if scores else float("nan")


def balanced_accuracy(logits: np.ndarray, labels: np.ndarray, ignore_index: int = -100) -> float:
    """Mean per-class recall over the classes present in `labels` (sklearn's balanced_accuracy_score,
    DLR's `accuracy_balanced`); logits (... C), labels (...)."""
    keep = labels != ignore_index
    pred, true = np.argmax(logits, -1)[keep], labels[keep]
    recalls = [float(np.mean(pred[true == c] == c)) for c in np.unique(true)]
    return float(np.mean(recalls)) if recalls else float("nan")


def regression_metrics(pred, target, mask) -> dict[str, float]:
    return {"mse": mse(pred, target, mask), "r2": r2(pred, target, mask)}
