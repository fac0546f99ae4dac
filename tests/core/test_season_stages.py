"""Calibration by season stage (core.model.season_stages): fitted on held-out predictions cut at
every date, applied by the GDD of each prediction's last date, stored in a bundle and checked
when one is read. Expectations are computed here from the definitions."""

from __future__ import annotations

import numpy as np
import pytest

from thermocrop.core.model.calibration import Calibration, check_calibration_data, conformal_threshold
from thermocrop.core.model.season_stages import SeasonStage, last_date_gdd, prefix_gdd, stage_of
from thermocrop.training.calibrate import fit_season_stages


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _draws(rng, n, k, sharpness, temperature):
    """Raw probabilities ``softmax(z)`` and labels drawn from ``softmax(z / temperature)``: the
    temperature that calibrates them is ``temperature``."""
    z = rng.normal(0, sharpness, size=(n, k))
    truth = _softmax(z / temperature)
    labels = np.array([rng.choice(k, p=row) for row in truth])
    return _softmax(z), labels


def test_each_stage_recovers_its_temperature_and_late_predictions_keep_the_whole_season_one():
    rng = np.random.default_rng(3)
    early_p, early_y = _draws(rng, 6000, 5, 3.0, 2.5)   # over-confident early: T = 2.5
    mid_p, mid_y = _draws(rng, 6000, 5, 3.0, 1.2)
    late_p, late_y = _draws(rng, 6000, 5, 3.0, 0.7)
    p = np.concatenate([early_p, mid_p, late_p])
    y = np.concatenate([early_y, mid_y, late_y])
    gdd = np.concatenate([np.full(6000, 150.0), np.full(6000, 900.0), np.full(6000, 2500.0)])
    parcels = np.arange(len(y)) % 300
    stages = fit_season_stages(p, y, gdd, parcels, bounds=(400.0, 1200.0))
    assert [s.below_gdd for s in stages] == [400.0, 1200.0]
    assert stages[0].temperature == pytest.approx(2.5, rel=0.08)
    assert stages[1].temperature == pytest.approx(1.2, rel=0.08)
    assert all(s.parcels == 300 for s in stages)
    # The scores are those of each stage's rows under its temperature, sorted.
    calibrated = _softmax(np.log(early_p) / stages[0].temperature)
    np.testing.assert_allclose(stages[0].scores, np.sort(1 - calibrated[np.arange(6000), early_y]), atol=2e-6)

    calibration = Calibration(temperature=0.7, scores=(0.1, 0.2, 0.3), parcels=300, source="test", stages=stages)
    rows = np.array([0, 6000, 12000])
    out = calibration.apply(p[rows], gdd[rows])
    np.testing.assert_allclose(out[0], _softmax(np.log(p[[0]]) / stages[0].temperature)[0], atol=1e-6)
    np.testing.assert_allclose(out[1], _softmax(np.log(p[[6000]]) / stages[1].temperature)[0], atol=1e-6)
    np.testing.assert_allclose(out[2], _softmax(np.log(p[[12000]]) / 0.7)[0], atol=1e-6)
    # Without the GDD (or NaN), or beyond the last stage: the whole-season calibration.
    np.testing.assert_allclose(calibration.apply(p[rows]), _softmax(np.log(p[rows]) / 0.7), atol=1e-6)
    np.testing.assert_allclose(calibration.apply(p[rows], np.full(3, np.nan)), _softmax(np.log(p[rows]) / 0.7),
                               atol=1e-6)
    # undo inverts apply row by row, each by its own stage.
    np.testing.assert_allclose(calibration.undo(out, gdd[rows]), p[rows], atol=1e-5)
    # The set threshold of a stage is its own scores' conformal quantile.
    assert calibration.threshold(0.9, 150.0) == conformal_threshold(np.asarray(stages[0].scores), 0.9)
    assert calibration.threshold(0.9, 2500.0) == calibration.threshold(0.9) == conformal_threshold(
        np.array([0.1, 0.2, 0.3]), 0.9)


def test_a_stage_with_too_few_predictions_is_left_to_the_next():
    rng = np.random.default_rng(5)
    p, y = _draws(rng, 400, 3, 2.0, 1.0)
    gdd = np.where(np.arange(400) < 20, 100.0, 700.0)  # 20 predictions below 400 GDD: too few
    stages = fit_season_stages(p, y, gdd, np.arange(400), bounds=(400.0, 800.0))
    assert [s.below_gdd for s in stages] == [800.0]
    assert list(stage_of(stages, np.array([100.0, 700.0, 800.0, np.nan]))) == [0, 0, -1, -1]


def test_the_gdd_of_the_last_date_seen_by_hand():
    gdd = np.array([[10.0, 20.0, 30.0, 40.0], [10.0, 20.0, 30.0, 40.0], [5.0, 6.0, 7.0, 8.0]])
    mask = np.array([[True, True, False, False], [False, False, False, False], [False, True, False, True]])
    np.testing.assert_array_equal(last_date_gdd(gdd, mask), [20.0, np.nan, 8.0])
    np.testing.assert_array_equal(prefix_gdd(gdd, mask), [[10, 20, 20, 20], [np.nan] * 4, [np.nan, 6, 6, 8]])


def test_stages_go_through_a_bundle_record_and_hostile_ones_are_refused():
    stage = SeasonStage(below_gdd=400.0, temperature=1.5, scores=(0.2, 0.5), parcels=60)
    calibration = Calibration(temperature=0.6, scores=(0.1,), parcels=60, source="s", stages=(stage,))
    data = calibration.to_dict()
    check_calibration_data(data)
    assert Calibration.from_dict(data) == calibration
    assert "stages" not in Calibration(temperature=0.6, scores=(0.1,), parcels=60, source="s").to_dict()
    bad = {"below_gdd": 400.0, "temperature": 1.5, "scores": [0.2], "parcels": 1}
    for stages, words in (
            ("all", "must be a list"),
            ([dict(bad, below_gdd=float("nan"))], "below_gdd"),
            ([bad, dict(bad, below_gdd=300.0)], "above the stage before"),
            ([dict(bad, temperature=1e9)], "temperature"),
            ([dict(bad, scores=[1.5])], "scores"),
            ([dict(bad, scores=[])], "scores"),
            ([dict(bad, parcels=True)], "parcels"),
            ([dict(bad, code="import os")], "nothing else"),
            ([bad] * 40, "at most")):
        with pytest.raises(ValueError, match=words):
            check_calibration_data(dict(data, stages=stages))
