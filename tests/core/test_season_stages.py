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


def _biased_draws(rng, n, k, temperature, bias):
    """Raw probabilities ``softmax(z)`` and labels drawn from ``softmax(z / temperature + bias)``."""
    z = rng.normal(0, 2.5, size=(n, k))
    truth = _softmax(z / temperature + np.asarray(bias))
    labels = np.array([rng.choice(k, p=row) for row in truth])
    return _softmax(z), labels


def test_vector_stages_learn_each_stage_its_own_class_biases_and_undo_inverts_them():
    rng = np.random.default_rng(11)
    # Early, the network names class 0 too rarely (bias +1.5 for it); late, it is calibrated.
    early_p, early_y = _biased_draws(rng, 8000, 4, 1.5, [1.5, 0.0, 0.0, 0.0])
    late_p, late_y = _biased_draws(rng, 4000, 4, 1.0, [0.0, 0.0, 0.0, 0.0])
    p, y = np.concatenate([early_p, late_p]), np.concatenate([early_y, late_y])
    gdd = np.concatenate([np.full(8000, 300.0), np.full(4000, 700.0)])
    parcels = np.arange(len(y)) % 400  # each parcel gives rows at both stages, as cut dates do
    stages = fit_season_stages(p, y, gdd, parcels, bounds=(400.0, 800.0), method="vector")
    early, late = stages
    assert early.temperature == pytest.approx(1.5, rel=0.1)
    # Biases are fixed up to a common shift: class 0's lead over the others is what was drawn.
    assert early.bias[0] - np.mean(early.bias[1:]) == pytest.approx(1.5, abs=0.2)
    assert abs(late.bias[0] - np.mean(late.bias[1:])) < 0.2
    # A temperature-only fit of the same rows has no biases and names class 0 less often.
    plain = fit_season_stages(p, y, gdd, parcels, bounds=(400.0, 800.0))
    assert plain[0].bias == ()
    calibration = Calibration(temperature=1.0, scores=(0.1,), parcels=400, source="t", bias=(0.0,) * 4,
                              stages=stages)
    rows = np.arange(0, 8000, 7)
    out = calibration.apply(p[rows], gdd[rows])
    expected = _softmax(np.log(p[rows]) / early.temperature + np.asarray(early.bias))
    np.testing.assert_allclose(out, expected, atol=1e-5)
    assert (out.argmax(1) == 0).mean() > (p[rows].argmax(1) == 0).mean()
    np.testing.assert_allclose(calibration.undo(out, gdd[rows]), p[rows], atol=1e-4)
    # The scores are those of each stage's rows under its temperature and biases, sorted.
    scaled = _softmax(np.log(early_p) / early.temperature + np.asarray(early.bias))
    np.testing.assert_allclose(early.scores, np.sort(1 - scaled[np.arange(8000), early_y]), atol=2e-6)
    # Stored and read back; a stage's biases must be one per class.
    data = calibration.to_dict()
    check_calibration_data(data, classes=4)
    read = Calibration.from_dict(data)
    assert read.to_dict() == data and [s.bias for s in read.stages] == [s.bias for s in stages]
    with pytest.raises(ValueError, match=r"stages\[0\].bias .*one per class"):
        check_calibration_data(dict(data, bias=[0.0] * 5), classes=5)
    for bias in ([], ["x"] * 4, [float("inf")] * 4, [100.0] * 4, "abcd"):
        hostile = dict(data, stages=[dict(data["stages"][0], bias=bias)])
        with pytest.raises(ValueError, match="bias"):
            check_calibration_data(hostile, classes=4)


def test_vector_folds_keep_a_parcel_s_rows_together():
    # Rows of one parcel are near copies; folds that split them reward a penalty too small.
    rng = np.random.default_rng(1)
    z = rng.normal(0, 1.0, size=(60, 4))
    p = _softmax(z)
    y = np.array([rng.choice(4, p=row) for row in p])  # calibrated already: no bias to find
    copies = 20
    P, Y = np.repeat(p, copies, axis=0), np.repeat(y, copies)
    groups = np.repeat(np.arange(60), copies)
    from thermocrop.core.model.calibration import VECTOR_PENALTIES, fit_vector_scaling
    _, _, split_rows = fit_vector_scaling(P, Y)
    _, _, whole_parcels = fit_vector_scaling(P, Y, groups=groups)
    assert split_rows <= 0.01
    assert whole_parcels >= 10 * split_rows
    # With fewer parcels than folds, the strongest penalty is taken without folds.
    _, _, few = fit_vector_scaling(P[:40], Y[:40], groups=groups[:40])
    assert few == VECTOR_PENALTIES[-1]


def test_a_stage_bias_must_be_a_list_and_only_with_vector_scaling():
    stage = {"below_gdd": 400.0, "temperature": 1.5, "scores": [0.2], "parcels": 60}
    vector = {"method": "vector", "temperature": 0.6, "scores": [0.1], "parcels": 60, "source": "s",
              "bias": [0.0, 0.0]}
    check_calibration_data(dict(vector, stages=[dict(stage, bias=[0.5, -0.5])]), classes=2)
    check_calibration_data(dict(vector, stages=[stage]), classes=2)  # vector stages of earlier bundles: none
    with pytest.raises(ValueError, match=r"stages\[0\].bias"):
        check_calibration_data(dict(vector, stages=[dict(stage, bias=None)]), classes=2)
    temperature = {"method": "temperature", "temperature": 0.6, "scores": [0.1], "parcels": 60, "source": "s"}
    check_calibration_data(dict(temperature, stages=[stage]), classes=2)
    with pytest.raises(ValueError, match="method 'vector' only"):
        check_calibration_data(dict(temperature, stages=[dict(stage, bias=[0.5, -0.5])]), classes=2)


def test_the_log_names_the_gdd_a_stage_was_fitted_on_when_earlier_stages_were_left_out():
    from thermocrop.core.model.season_stages import describe_stage

    # Only the stage below 2,000 GDD was fitted: on predictions as of 1,600-2,000 GDD.
    stages = (SeasonStage(below_gdd=2000.0, temperature=0.7, scores=(0.1,), parcels=120),)
    early = describe_stage(stages, 300.0)
    assert "as of 1,600-2,000 GDD" in early and "earlier (300 GDD) than any" in early
    late = describe_stage(stages, 1700.0)
    assert "as of 1,600-2,000 GDD" in late and "earlier" not in late
    full = tuple(SeasonStage(below_gdd=b, temperature=1.0, scores=(0.1,), parcels=60) for b in (400.0, 800.0))
    assert "as of 400-800 GDD" in describe_stage(full, 500.0) and "earlier" not in describe_stage(full, 500.0)


def test_stages_left_out_and_a_season_that_ends_early_are_said():
    from thermocrop.training.calibrate import missing_stages_note, season_reach_note

    found = tuple(SeasonStage(below_gdd=b, temperature=1.0, scores=(0.1,), parcels=60) for b in (1200.0, 2000.0))
    note = missing_stages_note(found)
    assert "below 400, 800, 1,600 GDD were left out" in note
    assert "below 400 GDD the stage below 1,200" in note and "below 1,600 GDD the stage below 2,000" in note
    assert missing_stages_note(tuple(SeasonStage(b, 1.0, (0.1,), 60) for b in (400.0, 800.0, 1200.0, 1600.0,
                                                                                2000.0))) is None
    assert "whole-season calibration" in missing_stages_note(found[:1])
    gdd = np.tile(np.arange(1, 11, dtype=np.float64) * 200.0, (5, 1))  # 200 ... 2,000 GDD
    mask = np.ones_like(gdd, dtype=bool)
    assert season_reach_note(gdd, mask, "ref") is None
    mask[:, 6:] = False  # the scenes end at 1,200 GDD
    note = season_reach_note(gdd, mask, "ref")
    assert "reaches only 1,200 GDD" in note and "ref" in note


def test_a_calibration_at_the_lowest_temperature_is_warned_about(caplog):
    from thermocrop.core.model.calibration import TEMPERATURE_RANGE, fit_calibration

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 200)
    p = np.full((200, 9), 0.02)
    p[np.arange(200), labels] = 0.84  # the ranking separates the two labelled classes perfectly
    with caplog.at_level("WARNING"):
        calibration = fit_calibration(p, labels, "two crops")
    assert calibration.temperature <= 1.001 * TEMPERATURE_RANGE[0]
    assert "lowest temperature" in caplog.text and "2 of the model's 9 classes" in caplog.text
