"""Classification scores from a confusion matrix: overall accuracy, Cohen's kappa and
per-class / macro precision, recall and F1."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def confusion_matrix(truth: np.ndarray, predicted: np.ndarray, num_classes: int) -> np.ndarray:
    """``(K, K)`` int64 counts, rows = reference class, columns = predicted class.

    Args:
        truth: ``(N,)`` reference class indices in ``[0, K)``.
        predicted: ``(N,)`` predicted class indices in ``[0, K)``.
        num_classes: K.
    """
    truth = np.asarray(truth, dtype=np.int64)
    predicted = np.asarray(predicted, dtype=np.int64)
    if truth.shape != predicted.shape:
        raise ValueError("truth and predictions differ in length")
    if len(truth) and (min(truth.min(), predicted.min()) < 0
                       or max(truth.max(), predicted.max()) >= num_classes):
        raise ValueError(f"class indices must lie in [0, {num_classes})")
    flat = np.bincount(truth * num_classes + predicted, minlength=num_classes * num_classes)
    return flat.reshape(num_classes, num_classes)


def scores(cm: np.ndarray, classes: Sequence[str] = ()) -> dict[str, Any]:
    """Scores of a confusion matrix.

    Macro averages run over the classes present in the reference or the predictions (a
    class absent from both says nothing about the classifier).

    Args:
        cm: ``(K, K)`` counts, rows = reference.
        classes: K class names for the per-class table (defaults to indices).

    Returns:
        ``overall_accuracy``, ``macro_f1``, ``macro_precision``, ``macro_recall``, ``kappa``,
        ``n`` and ``per_class`` (name -> precision, recall, f1, support); fractions in 0..1.
    """
    cm = np.asarray(cm, dtype=np.float64)
    k = cm.shape[0]
    names = list(classes) if classes else [str(i) for i in range(k)]
    n = cm.sum()
    tp = np.diag(cm)
    ref, pred = cm.sum(axis=1), cm.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(pred > 0, tp / pred, 0.0)
        recall = np.where(ref > 0, tp / ref, 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    present = (ref > 0) | (pred > 0)
    oa = float(tp.sum() / n) if n else 0.0
    expected = float((ref * pred).sum() / n ** 2) if n else 0.0
    kappa = (oa - expected) / (1.0 - expected) if expected < 1.0 else 0.0
    return {
        "n": int(n),
        "overall_accuracy": oa,
        "macro_f1": float(f1[present].mean()) if present.any() else 0.0,
        "macro_precision": float(precision[present].mean()) if present.any() else 0.0,
        "macro_recall": float(recall[present].mean()) if present.any() else 0.0,
        "kappa": float(kappa),
        "per_class": {
            names[i]: {"precision": float(precision[i]), "recall": float(recall[i]),
                       "f1": float(f1[i]), "support": int(ref[i])}
            for i in range(k)
        },
    }
