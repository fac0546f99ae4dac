"""Calibrated probabilities and prediction sets (core.model.calibration), and how bundles carry
them."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

from thermocrop.core.errors import BundleError, InputError
from thermocrop.core.model.calibration import (
    VECTOR_PENALTIES,
    Calibration,
    apply_scaling,
    apply_temperature,
    conformal_threshold,
    expected_calibration_error,
    fit_calibration,
    fit_temperature,
    fit_vector_scaling,
    prediction_sets,
    reliability_table,
)


def _softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _draw(rng, n, k=5, sharpen=2.0):
    """Parcels whose true class follows softmax(z), with a model that reports softmax(sharpen * z):
    over-confident by a temperature of ``sharpen``."""
    z = rng.normal(0.0, 1.5, size=(n, k))
    truth = _softmax(z)
    labels = np.array([rng.choice(k, p=row) for row in truth])
    return _softmax(sharpen * z), labels


def test_fitted_temperature_undoes_a_known_over_confidence():
    rng = np.random.default_rng(0)
    p, y = _draw(rng, 20000, sharpen=2.0)
    assert fit_temperature(p, y) == pytest.approx(2.0, rel=0.06)
    p, y = _draw(rng, 20000, sharpen=0.5)
    assert fit_temperature(p, y) == pytest.approx(0.5, rel=0.06)


def test_temperature_keeps_the_ranking_and_nan_rows():
    p = np.array([[0.7, 0.2, 0.1], [np.nan, np.nan, np.nan], [0.1, 0.3, 0.6]], dtype=np.float32)
    q = apply_temperature(p, 3.0)
    assert np.isnan(q[1]).all()
    assert (q[[0, 2]].argmax(axis=1) == p[[0, 2]].argmax(axis=1)).all()
    np.testing.assert_allclose(q[[0, 2]].sum(axis=1), 1.0, rtol=1e-6)
    # softmax(log p / T) by hand for the first row
    w = np.array([0.7, 0.2, 0.1]) ** (1 / 3.0)
    np.testing.assert_allclose(q[0], w / w.sum(), rtol=1e-5)


def test_calibration_brings_the_error_down_on_new_parcels():
    rng = np.random.default_rng(1)
    p, y = _draw(rng, 4000, sharpen=2.5)
    cal = fit_calibration(p[:2000], y[:2000], "first half")
    before = expected_calibration_error(p[2000:], y[2000:])
    after = expected_calibration_error(cal.apply(p[2000:]), y[2000:])
    assert before > 0.08 and after < 0.03, (before, after)
    assert cal.parcels == 2000 and cal.ece_after < cal.ece_before


def test_expected_calibration_error_by_hand():
    # Two bins used: confidence 0.95 (4 parcels, 3 right) and 0.55 (2 parcels, 2 right).
    p = np.array([[0.95, 0.05]] * 4 + [[0.45, 0.55]] * 2)
    y = np.array([0, 0, 0, 1, 1, 1])
    table = reliability_table(p, y)
    assert [row["parcels"] for row in table] == [0, 0, 0, 0, 0, 2, 0, 0, 0, 4]
    expected = (4 * abs(0.75 - 0.95) + 2 * abs(1.0 - 0.55)) / 6
    assert expected_calibration_error(p, y) == pytest.approx(expected)


def test_conformal_threshold_is_the_right_order_statistic():
    scores = np.array([0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6])  # n = 9
    assert conformal_threshold(scores, 0.9) == pytest.approx(0.9)  # rank ceil(10 * 0.9) = 9
    assert conformal_threshold(scores, 0.5) == pytest.approx(0.5)  # rank 5
    assert conformal_threshold(scores[:8], 0.9) == 1.0  # rank 9 > 8: every class
    with pytest.raises(InputError, match="coverage"):
        conformal_threshold(scores, 1.0)


def test_prediction_sets_hold_the_true_class_as_often_as_promised():
    rng = np.random.default_rng(2)
    covered, sizes = [], []
    for _ in range(40):
        p, y = _draw(rng, 600, sharpen=1.5)
        cal = fit_calibration(p[:300], y[:300], "calibration")
        sets = prediction_sets(cal.apply(p[300:]), cal.threshold(0.9))
        covered.append(sets[np.arange(300), y[300:]].mean())
        sizes.append(sets.sum(axis=1).mean())
    # Split conformal: the coverage averaged over draws is at least 0.9 (and not far above).
    assert 0.89 <= np.mean(covered) <= 0.95, np.mean(covered)
    assert 1.0 < np.mean(sizes) < 5.0


def test_prediction_sets_always_hold_the_label_and_nothing_for_missing_rows():
    p = np.array([[0.4, 0.35, 0.25], [np.nan] * 3, [0.2, 0.2, 0.6]])
    sets = prediction_sets(p, 0.5)  # classes with p >= 0.5
    assert sets.tolist() == [[True, False, False], [False, False, False], [False, False, True]]
    assert prediction_sets(p, 0.7).tolist()[0] == [True, True, False]


def test_too_few_parcels_are_refused_with_the_counts():
    rng = np.random.default_rng(3)
    p, y = _draw(rng, 60)
    y[:15] = -1
    with pytest.raises(InputError, match=r"45 parcels can calibrate.*15 without a label.*at least 50"):
        fit_calibration(p, y, "the reference layer")


# ---------------------------------------------------------------------------------------------
# Vector scaling


PRIOR = np.array([3.0, 1.0, 1.0, 1.0])


def _shifted(rng, n, sharpen=2.0):
    """Parcels whose true class follows softmax(z + log PRIOR) (class 0 three times as common as the
    model thinks), with a model that reports softmax(sharpen * z)."""
    z = rng.normal(0.0, 1.5, size=(n, len(PRIOR)))
    truth = _softmax(z + np.log(PRIOR))
    labels = np.array([rng.choice(len(PRIOR), p=row) for row in truth])
    return _softmax(sharpen * z), labels


def test_vector_scaling_finds_a_known_temperature_and_class_shift():
    # softmax(2z) reported, softmax(z + log PRIOR) true: T = 2 and b = log PRIOR up to a constant,
    # which the penalty sets to the one of least norm (biases summing to zero).
    p, y = _shifted(np.random.default_rng(5), 20000)
    temperature, bias, penalty = fit_vector_scaling(p, y)
    assert penalty in VECTOR_PENALTIES
    assert temperature == pytest.approx(2.0, rel=0.05)
    expected = np.log(PRIOR) - np.log(PRIOR).mean()
    np.testing.assert_allclose(bias, expected, atol=0.06)


def test_vector_scaling_is_the_minimum_an_independent_optimiser_finds():
    from scipy.optimize import minimize

    p, y = _shifted(np.random.default_rng(6), 150)
    temperature, bias, penalty = fit_vector_scaling(p, y)
    log_p = np.log(p)

    def objective(w):
        z = w[0] * log_p + w[1:]
        log_norm = np.log(np.exp(z).sum(axis=1))
        return np.mean(log_norm - z[np.arange(len(y)), y]) + penalty * np.sum(w[1:] ** 2)

    best = minimize(objective, np.concatenate([[1.0], np.zeros(4)]), method="Nelder-Mead",
                    options={"xatol": 1e-8, "fatol": 1e-12, "maxiter": 20000, "maxfev": 20000})
    assert 1.0 / temperature == pytest.approx(best.x[0], abs=2e-3)
    np.testing.assert_allclose(bias, best.x[1:], atol=2e-3)


def test_vector_scaling_beats_temperature_where_the_class_frequencies_differ():
    p, y = _shifted(np.random.default_rng(7), 4000)
    fit, new = slice(0, 2000), slice(2000, None)
    by_temperature = fit_calibration(p[fit], y[fit], "first half")
    by_vector = fit_calibration(p[fit], y[fit], "first half", method="vector")
    assert by_temperature.method == "temperature" and by_vector.method == "vector" and len(by_vector.bias) == 4

    def nll(q):
        return -np.mean(np.log(q[np.arange(len(q)), y[new]]))

    assert nll(by_vector.apply(p[new])) < nll(by_temperature.apply(p[new])) - 0.02
    assert expected_calibration_error(by_vector.apply(p[new]), y[new]) < 0.03
    # the scores are those of the calibrated probabilities
    q = by_vector.apply(p[fit])
    np.testing.assert_allclose(by_vector.scores, np.sort(1.0 - q[np.arange(2000), y[fit]]), atol=1e-6)
    with pytest.raises(InputError, match="method 'platt' is not known"):
        fit_calibration(p[fit], y[fit], "first half", method="platt")


def test_vector_scaling_by_hand_and_undone():
    p = np.array([[0.7, 0.2, 0.1], [np.nan] * 3, [0.1, 0.3, 0.6]])
    cal = Calibration(temperature=2.0, bias=(1.0, 0.0, -0.5), scores=(0.1,), parcels=60, source="test")
    q = cal.apply(p)
    w = np.array([0.7, 0.2, 0.1]) ** 0.5 * np.exp([1.0, 0.0, -0.5])
    np.testing.assert_allclose(q[0], w / w.sum(), rtol=1e-5)
    assert np.isnan(q[1]).all()
    np.testing.assert_allclose(apply_scaling(p, 2.0, (1.0, 0.0, -0.5)), q)
    back = cal.undo(q)
    np.testing.assert_allclose(back[[0, 2]], p[[0, 2]], rtol=1e-5)
    assert np.isnan(back[1]).all()


# ---------------------------------------------------------------------------------------------
# Bundles


def _small_bundle(tmp_path, calibration=None):
    import torch

    from thermocrop.core.model.bundle import BundleConfig, save_bundle
    from thermocrop.core.model.networks import build_model

    torch.manual_seed(0)
    model = build_model("tpe_sinusoidal", 3, d_model=32, n_head=4, d_k=8, mlp2=32, mlp3=32, mlp4=[32, 16],
                        mlp1=[10, 16])
    config = BundleConfig(classes=("a", "b", "c"), colours={}, calibration=calibration.to_dict() if calibration else {})
    path = tmp_path / "m.tcm"
    save_bundle(path, model, config)
    return path


def _pixel_sets(n=20, t=6, s=4):
    from thermocrop.core.pixel_sets import PixelSets
    from thermocrop.core.scenes.bands import S2_BANDS

    rng = np.random.default_rng(4)
    return PixelSets(pixels=rng.integers(500, 4000, size=(n, t, 10, s), dtype=np.uint16),
                     pixel_mask=np.ones((n, t, s), bool), date_mask=np.ones((n, t), bool),
                     dates=np.datetime64("2020-03-01") + np.arange(t) * 20,
                     day_of_season=np.arange(t, dtype=np.float32) * 20, gdd=np.tile(np.arange(t) * 150.0, (n, 1)),
                     labels=np.zeros(n, np.int16), parcel_ids=np.array([f"p{i}" for i in range(n)]),
                     status=np.array(["ok"] * n), bands=S2_BANDS, classes=("a", "b", "c"))


def test_a_calibrated_bundle_predicts_calibrated_probabilities(tmp_path):
    from thermocrop.core.model.bundle import load_bundle

    cal = Calibration(temperature=0.4, scores=tuple(np.linspace(0.0, 0.9, 60)), parcels=60, source="test")
    bundle = load_bundle(_small_bundle(tmp_path, cal))
    assert bundle.calibration == Calibration.from_dict(cal.to_dict())
    ps = _pixel_sets()
    raw = bundle.predict(ps, calibrated=False)
    np.testing.assert_allclose(bundle.predict(ps), apply_temperature(raw, 0.4), rtol=1e-5, atol=1e-6)


def test_a_bundle_calibrated_by_vector_scaling_predicts_with_its_biases(tmp_path):
    from thermocrop.core.model.bundle import load_bundle

    cal = Calibration(temperature=0.5, bias=(0.8, -0.3, -0.5), scores=tuple(np.linspace(0.0, 0.9, 60)), parcels=60,
                      source="test")
    path = _small_bundle(tmp_path, cal)
    bundle = load_bundle(path)
    assert bundle.calibration == Calibration.from_dict(cal.to_dict()) and bundle.calibration.method == "vector"
    assert json.loads(json.dumps(cal.to_dict()))["bias"] == [0.8, -0.3, -0.5]
    ps = _pixel_sets()
    raw = bundle.predict(ps, calibrated=False).astype(np.float64)
    by_hand = _softmax(np.log(raw) / 0.5 + np.array([0.8, -0.3, -0.5]))
    np.testing.assert_allclose(bundle.predict(ps), by_hand, rtol=1e-4, atol=1e-6)


def _rewrite_config(path, change):
    """Edit a bundle's stored config and give it a valid checksum again (as another program could)."""
    import hashlib

    from safetensors.torch import load as st_load
    from safetensors.torch import save as st_save

    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    raw = json.loads(header["__metadata__"]["thermocrop_bundle"])
    change(raw)
    tensors = st_load(data)
    digest = hashlib.sha256(json.dumps({**raw, "checksum": ""}, sort_keys=True).encode("utf-8"))
    digest.update(st_save(tensors))
    raw["checksum"] = digest.hexdigest()
    path.write_bytes(st_save(tensors, metadata={"thermocrop_bundle": json.dumps(raw, sort_keys=True)}))


def test_a_bundle_of_an_earlier_release_loads_uncalibrated_with_one_warning(tmp_path, caplog):
    from thermocrop.core.model.bundle import load_bundle

    path = _small_bundle(tmp_path)
    _rewrite_config(path, lambda raw: raw.pop("calibration"))
    with caplog.at_level("WARNING"):
        first = load_bundle(path)
        load_bundle(path)
    assert first.calibration is None
    assert sum("carries no calibration" in r.getMessage() for r in caplog.records) == 1
    ps = _pixel_sets()
    np.testing.assert_array_equal(first.predict(ps), first.predict(ps, calibrated=False))


@pytest.mark.parametrize("value", [0, False, [], "", [1.5]])
def test_a_calibration_that_is_no_mapping_is_refused_even_when_it_is_falsy(tmp_path, value):
    """Only an absent or empty calibration means 'never calibrated'; 0, false, [] or '' in its
    place is an edited field, refused like any other (it used to load as uncalibrated)."""
    from thermocrop.core.model.bundle import load_bundle

    path = _small_bundle(tmp_path, Calibration(temperature=1.5, scores=(0.1, 0.2), parcels=60, source="test"))
    _rewrite_config(path, lambda raw: raw.update(calibration=value))
    with pytest.raises(BundleError, match=rf"field 'calibration' must be a mapping, not {type(value).__name__}"):
        load_bundle(path)
    _rewrite_config(path, lambda raw: raw.update(calibration={}))
    assert load_bundle(path).calibration is None


@pytest.mark.parametrize("change, message", [
    (lambda c: c.update(temperature=-1.0), "temperature"),
    (lambda c: c.update(temperature=math.inf), "temperature"),
    (lambda c: c.update(scores=[0.2, 1.5]), "scores"),
    (lambda c: c.update(method="platt"), "method"),
    (lambda c: c.update(command="rm -rf /"), "unknown entries command"),
    (lambda c: c.update(method="vector"), "bias must be given with method 'vector'"),
    (lambda c: c.update(bias=[0.1, 0.2, 0.3]), "bias must be given with method 'vector'"),
    (lambda c: c.update(method="vector", bias=[0.1, 0.2]), r"bias must hold one number per class \(3\)"),
    (lambda c: c.update(method="vector", bias=[0.1, 0.2, 99.0]), "bias must be a list of numbers"),
])
def test_a_damaged_calibration_is_refused_by_name(tmp_path, change, message):
    from thermocrop.core.model.bundle import load_bundle

    cal = Calibration(temperature=1.5, scores=(0.1, 0.2), parcels=60, source="test")
    path = _small_bundle(tmp_path, cal)
    _rewrite_config(path, lambda raw: change(raw["calibration"]))
    with pytest.raises(BundleError, match=rf"field 'calibration'.*{message}"):
        load_bundle(path)


def test_a_calibration_at_the_highest_temperature_is_warned_of(caplog):
    """Labels drawn apart from the probabilities: the best temperature runs to the limit and the
    calibrated confidences say nothing about a parcel; the user is told to look at the inputs."""
    import logging

    from thermocrop.core.model.calibration import TEMPERATURE_RANGE, fit_calibration

    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(4, 0.3), size=400).astype(np.float32)
    y = rng.integers(0, 4, size=400)
    with caplog.at_level(logging.WARNING):
        calibration = fit_calibration(p, y, "random.gpkg")
    assert calibration.temperature == pytest.approx(TEMPERATURE_RANGE[1], rel=1e-3)
    assert "random.gpkg reached the highest temperature" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        fit_calibration(p, p.argmax(axis=1), "sharp.gpkg")  # labels the probabilities explain
    assert "highest temperature" not in caplog.text


def test_too_few_calibration_parcels_for_a_coverage_are_said_to_be_why_sets_hold_every_class():
    from types import SimpleNamespace

    from thermocrop.core.classify import calibration_threshold
    from thermocrop.core.model.calibration import Calibration

    scores = tuple(float(s) for s in np.linspace(0.01, 0.9, 120))
    bundle = SimpleNamespace(calibration=Calibration(scores=scores, parcels=120, source="test"))
    result = SimpleNamespace(warnings=())
    assert calibration_threshold(result, bundle, 0.999) == 1.0
    assert len(result.warnings) == 1 and "120 calibration parcels are too few" in result.warnings[0]
    assert "at least 999 are needed" in result.warnings[0]
    result = SimpleNamespace(warnings=())
    assert calibration_threshold(result, bundle, 0.9) < 1.0 and result.warnings == ()
    # the edge: 119 / 120 = 0.9917 is the highest coverage 120 scores can give
    assert calibration_threshold(result, bundle, 119 / 120) < 1.0 and result.warnings == ()
