"""Margin, entropy and the optional probability fields, checked against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest


def test_margin_and_entropy_by_hand():
    from thermocrop.core.model.uncertainty import normalised_entropy, probability_margin

    p = np.array([[0.7, 0.2, 0.1, 0.0],
                  [0.25, 0.25, 0.25, 0.25],
                  [1.0, 0.0, 0.0, 0.0],
                  [np.nan] * 4], dtype=np.float32)
    np.testing.assert_allclose(probability_margin(p)[:3], [0.5, 0.0, 1.0], atol=1e-6)
    h0 = -(0.7 * math.log(0.7) + 0.2 * math.log(0.2) + 0.1 * math.log(0.1)) / math.log(4)
    np.testing.assert_allclose(normalised_entropy(p)[:3], [h0, 1.0, 0.0], atol=1e-6)
    assert np.isnan(probability_margin(p)[3]) and np.isnan(normalised_entropy(p)[3])


def test_uncertainty_fields_order_and_shape_check():
    from thermocrop.core.model.uncertainty import uncertainty_fields

    p = np.array([[0.6, 0.4], [0.1, 0.9]], dtype=np.float32)
    fields = uncertainty_fields(p, ("corn", "meadow"))
    assert list(fields) == ["p_corn", "p_meadow", "crop_margin", "crop_entropy"]
    np.testing.assert_allclose(fields["p_meadow"], [0.4, 0.9])
    np.testing.assert_allclose(fields["crop_margin"], [0.2, 0.8], atol=1e-6)
    with pytest.raises(ValueError):
        uncertainty_fields(p, ("corn",))


def test_write_classification_adds_probability_fields_only_when_asked(tmp_path):
    gpd = pytest.importorskip("geopandas")
    from shapely.geometry import box

    from thermocrop.core.classify import ClassificationResult, write_classification

    parcels = gpd.GeoDataFrame({"parcel_id": ["a", "b", "c"]},
                               geometry=[box(i, 0, i + 1, 1) for i in range(3)], crs="EPSG:32631")
    # Parcel "b" was not selected; "c" could not be classified.
    result = ClassificationResult(
        parcel_ids=np.array(["a", "c"]), labels=np.array(["meadow", ""]),
        confidence=np.array([0.8, np.nan], dtype=np.float32),
        probabilities=np.array([[0.2, 0.8], [np.nan, np.nan]], dtype=np.float32),
        status=np.array(["ok", "too_small"]), classes=("corn", "meadow"), rows=np.array([0, 2]))
    plain = write_classification(parcels, result, tmp_path / "plain.gpkg")
    assert "crop_margin" not in gpd.read_file(plain).columns
    out = write_classification(parcels, result, tmp_path / "probs.gpkg", probabilities=True)
    back = gpd.read_file(out)
    assert back["p_corn"][0] == pytest.approx(0.2) and back["p_meadow"][0] == pytest.approx(0.8)
    assert back["crop_margin"][0] == pytest.approx(0.6)
    assert back["crop_entropy"][0] == pytest.approx(-(0.2 * math.log(0.2) + 0.8 * math.log(0.8)) / math.log(2))
    assert back[["p_corn", "crop_margin", "crop_entropy"]].iloc[1:].isna().all().all()
    assert back["crop_status"].tolist() == ["ok", "not_selected", "too_small"]


def test_an_earlier_runs_optional_fields_are_written_empty(tmp_path):
    """A layer classified before with sets, decision dates and probabilities, classified again
    without them: its old values would sit beside the new class (a set without the class, a
    decision date after the as-of date), so those fields are written empty; the user's own
    fields and the ones this run makes keep their values."""
    gpd = pytest.importorskip("geopandas")
    from shapely.geometry import box

    from thermocrop.core.classify import ClassificationResult, write_classification

    earlier = gpd.GeoDataFrame({"parcel_id": ["a", "b"], "crop_set": ["corn|meadow", "corn"],
                                "crop_set_size": [2, 1], "crop_decided": ["2017-05-26", "2017-06-01"],
                                "crop_decided_gdd": [900.0, 1000.0], "p_corn": [0.6, 0.9],
                                "crop_margin": [0.2, 0.8], "p_other": [0.5, 0.5]},
                               geometry=[box(i, 0, i + 1, 1) for i in range(2)], crs="EPSG:32631")
    path = tmp_path / "earlier.gpkg"
    earlier.to_file(path)
    result = ClassificationResult(
        parcel_ids=np.array(["a", "b"]), labels=np.array(["meadow", "corn"]),
        confidence=np.array([0.7, 0.9], dtype=np.float32),
        probabilities=np.array([[0.3, 0.7], [0.9, 0.1]], dtype=np.float32),
        status=np.array(["ok", "ok"]), classes=("corn", "meadow"), rows=np.array([0, 1]))
    back = gpd.read_file(write_classification(path, result, tmp_path / "again.gpkg"))
    assert back["crop_pred"].tolist() == ["meadow", "corn"]
    for name in ("crop_set", "crop_set_size", "crop_decided", "crop_decided_gdd", "p_corn", "crop_margin"):
        assert back[name].isna().all(), name
    assert back["p_other"].tolist() == [0.5, 0.5]  # not a class of this model: the user's own field
    back = gpd.read_file(write_classification(path, result, tmp_path / "probs.gpkg", probabilities=True))
    assert back["p_corn"].tolist() == pytest.approx([0.3, 0.9])
    assert back["crop_set"].isna().all() and back["crop_decided"].isna().all()
