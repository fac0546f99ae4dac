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
