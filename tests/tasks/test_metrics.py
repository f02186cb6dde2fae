"""The metrics the verdicts rest on, on their edge cases, against scikit-learn's definitions and hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, confusion_matrix, f1_score

from linrnn.tasks import metrics
from linrnn.tasks.datatasks import Tally


def logits_of(pred: np.ndarray, classes: int) -> np.ndarray:
    out = np.zeros(pred.shape + (classes,))
    np.put_along_axis(out, pred[..., None], 1.0, axis=-1)
    return out


@pytest.mark.parametrize("ignore", [-100, -1, 255])
def test_confusion_skips_exactly_the_positions_of_its_ignore_index(ignore):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=(6, 20))
    labels[rng.random(labels.shape) < 0.3] = ignore
    pred = rng.integers(0, 4, size=labels.shape)
    keep = labels != ignore
    c = metrics.confusion(logits_of(pred, 4), labels, ignore_index=ignore, classes=4)
    assert c.sum() == keep.sum()
    np.testing.assert_array_equal(c, confusion_matrix(labels[keep], pred[keep], labels=range(4)))
    assert metrics.accuracy(logits_of(pred, 4), labels, ignore_index=ignore) == \
        pytest.approx(accuracy_score(labels[keep], pred[keep]))


def test_a_label_that_is_not_the_ignore_index_is_scored_even_when_negative_elsewhere():
    """-100 is DLR's ignore index; a split that marks padding with 255 must score the -100-free positions and
    ignore 255 only (a metric that always drops -100 instead would count the 255s as a class)."""
    labels = np.array([0, 1, 255, 1])
    pred = np.array([0, 1, 1, 0])
    with pytest.raises(IndexError):            # 255 is not a class: scoring it must not pass silently
        metrics.confusion(logits_of(pred, 2), labels, ignore_index=-100)
    assert metrics.accuracy(logits_of(pred, 2), labels, ignore_index=255) == pytest.approx(2 / 3)


def test_macro_f1_counts_a_class_that_is_predicted_but_never_labelled():
    labels = np.array([0, 0, 1, 1, 1])
    pred = np.array([0, 2, 1, 1, 0])          # class 2 predicted once, never labelled: F1 0 for it
    ours = metrics.macro_f1(logits_of(pred, 3), labels)
    assert ours == pytest.approx(f1_score(labels, pred, average="macro"))
    # by hand: F1_0 = 2*1/(2+2) = 0.5, F1_1 = 2*2/(3+2) = 0.8, F1_2 = 0 -> 1.3 / 3
    assert ours == pytest.approx(1.3 / 3)


def test_macro_f1_leaves_out_a_class_that_is_neither_labelled_nor_predicted():
    labels = np.array([0, 1, 1, 0])
    pred = np.array([0, 1, 0, 0])
    four = metrics.macro_f1(logits_of(pred, 4), labels)       # classes 2 and 3 empty
    assert four == pytest.approx(f1_score(labels, pred, average="macro"))
    assert four == pytest.approx(metrics.macro_f1(logits_of(pred, 2), labels))


@pytest.mark.parametrize("pred", [[0, 0, 0, 0], [0, 1, 0, 2]])
def test_a_split_that_is_all_one_class(pred):
    labels = np.zeros(4, dtype=int)
    pred = np.array(pred)
    lg = logits_of(pred, 3)
    assert metrics.macro_f1(lg, labels) == pytest.approx(f1_score(labels, pred, average="macro", zero_division=0))
    assert metrics.accuracy(lg, labels) == pytest.approx(accuracy_score(labels, pred))
    assert metrics.balanced_accuracy(lg, labels) == pytest.approx(np.mean(pred == 0))   # recall of the one class


def test_balanced_accuracy_matches_scikit_learn_on_random_splits():
    rng = np.random.default_rng(1)
    for _ in range(20):
        labels = rng.integers(0, 5, 200)
        pred = np.where(rng.random(200) < 0.6, labels, rng.integers(0, 5, 200))
        lg = logits_of(pred, 5)
        assert metrics.balanced_accuracy(lg, labels) == pytest.approx(balanced_accuracy_score(labels, pred))
        assert metrics.macro_f1(lg, labels) == pytest.approx(f1_score(labels, pred, average="macro"))


def test_the_tally_summed_over_batches_gives_the_whole_splits_metrics():
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 3, size=(8, 30))
    labels[:, 25:] = -100
    pred = rng.integers(0, 3, size=labels.shape)
    tally = Tally("segmentation", 3)
    for part in np.array_split(np.arange(8), 3):
        tally.add(logits_of(pred[part], 3), labels[part])
    keep = labels != -100
    summary = tally.summary()
    assert summary["macro_f1"] == pytest.approx(f1_score(labels[keep], pred[keep], average="macro"))
    assert summary["accuracy"] == pytest.approx(accuracy_score(labels[keep], pred[keep]))
    assert summary["examples"] == keep.sum()


@pytest.mark.parametrize("counts", [[800, 100, 100], [500, 500], [900, 90, 9, 1], [10, 0, 30]])
def test_no_information_macro_f1_is_one_over_the_labelled_classes_and_nothing_blind_beats_it(counts):
    found = metrics.no_information_macro_f1(counts)
    K = sum(1 for c in counts if c)
    assert found["value"] == pytest.approx(1 / K) and found["constant"] <= found["value"] + 1e-12
    labels = np.repeat(np.arange(len(counts)), counts)
    rng = np.random.default_rng(3)
    # answers drawn in the classes' own proportions score 1/K (scikit-learn's macro F1, many samples)
    big = np.repeat(labels, 50)
    drawn = rng.choice(len(counts), size=len(big), p=found["frequencies"])
    assert f1_score(big, drawn, average="macro", labels=np.nonzero(counts)[0]) == pytest.approx(1 / K, abs=0.01)
    # no other blind answer does better in expectation: random answer frequencies, and every constant answer
    p = np.asarray(counts, dtype=float) / sum(counts)
    present = p > 0
    for q in rng.dirichlet(np.ones(len(counts)), size=200):
        expected = np.sum(2 * p[present] * q[present] / (p[present] + q[present])) / K
        assert expected <= found["value"] + 1e-12
    for k in np.nonzero(counts)[0]:
        constant = f1_score(labels, np.full_like(labels, k), average="macro", labels=np.nonzero(counts)[0],
                            zero_division=0)
        assert constant <= found["value"] + 1e-12 and constant <= found["constant"] + 1e-12


def test_r2_is_one_minus_the_mse_over_the_targets_variance_as_scikit_learn_computes_it():
    """R^2 decides D4 and D2: it divides by the target's variance (the predictions' would reward a model that shrinks
    its outputs), over the scored entries only."""
    from sklearn.metrics import r2_score

    rng = np.random.default_rng(3)
    target = rng.normal(0.0, 2.0, (4, 6, 2))
    pred = 0.3 * target + rng.normal(0.0, 0.5, target.shape)          # shrunk predictions: var(pred) << var(target)
    mask = rng.random((4, 6)) > 0.2
    keep = np.broadcast_to(mask[..., None], target.shape)
    assert metrics.r2(pred, target, mask) == pytest.approx(r2_score(target[keep], pred[keep]))
    assert metrics.r2(target, target, mask) == 1.0 and metrics.r2(np.zeros_like(target) + target[keep].mean(),
                                                                  target, mask) == pytest.approx(0.0, abs=1e-12)
