"""Scores against a confusion matrix and scores worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from thermocrop.training.metrics import confusion_matrix, scores


def test_confusion_matrix_counts_reference_rows_predicted_columns():
    truth = [0, 0, 0, 1, 1, 2, 2, 2, 2, 0]
    pred = [0, 1, 0, 1, 1, 2, 0, 2, 1, 0]
    cm = confusion_matrix(truth, pred, 4)
    expected = np.array([[3, 1, 0, 0],
                         [0, 2, 0, 0],
                         [1, 1, 2, 0],
                         [0, 0, 0, 0]])
    assert (cm == expected).all()


def test_scores_match_hand_computation():
    cm = np.array([[3, 1, 0, 0],
                   [0, 2, 0, 0],
                   [1, 1, 2, 0],
                   [0, 0, 0, 0]])
    s = scores(cm, ["a", "b", "c", "d"])
    # OA = 7 / 10. Precision a 3/4, b 2/4, c 2/2; recall a 3/4, b 2/2, c 2/4.
    assert s["overall_accuracy"] == pytest.approx(0.7)
    f1_a, f1_b, f1_c = 0.75, 2 * 0.5 * 1 / 1.5, 2 * 1 * 0.5 / 1.5
    assert s["per_class"]["a"]["f1"] == pytest.approx(f1_a)
    assert s["per_class"]["b"]["precision"] == pytest.approx(0.5)
    assert s["per_class"]["c"]["recall"] == pytest.approx(0.5)
    # Class d is absent from reference and predictions: left out of the macro mean.
    assert s["macro_f1"] == pytest.approx((f1_a + f1_b + f1_c) / 3)
    # Kappa: expected agreement = sum(row_i * col_i) / n^2 = (4*4 + 2*4 + 4*2) / 100 = 0.32.
    assert s["kappa"] == pytest.approx((0.7 - 0.32) / (1 - 0.32))
    assert s["per_class"]["c"]["support"] == 4 and s["n"] == 10


def test_confusion_matrix_rejects_out_of_range_classes():
    with pytest.raises(ValueError):
        confusion_matrix([0, 3], [0, 1], 3)
