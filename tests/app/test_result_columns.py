"""One mapping from a classification result to attribute columns, checked against values worked
out by hand, and the same values from the file writer and the in-place layer writer."""

from __future__ import annotations

import math

import geopandas as gpd
import numpy as np
import pytest
from shapely.geometry import box

from thermocrop.app import NOT_SELECTED, result_columns
from thermocrop.core.classify import ClassificationResult, write_classification

NAN = float("nan")


def _result() -> ClassificationResult:
    """Three parcels classified of a five-feature layer (rows 0, 2, 4): two ok, one too small."""
    return ClassificationResult(
        parcel_ids=np.array(["a", "c", "e"]), labels=np.array(["wheat", "", "maize"]),
        confidence=np.array([0.7, NAN, 0.6], dtype=np.float32),
        probabilities=np.array([[0.7, 0.2, 0.1], [NAN, NAN, NAN], [0.1, 0.3, 0.6]], dtype=np.float32),
        status=np.array(["ok", "too_small", "ok"], dtype=object), classes=("wheat", "barley", "maize"),
        rows=np.array([0, 2, 4]))


def _entropy(p) -> float:
    return -sum(x * math.log(x) for x in p) / math.log(3)


def test_columns_by_hand():
    columns = result_columns(_result(), 5, probabilities=True)
    assert list(columns) == ["crop_pred", "crop_conf", "crop_status", "p_wheat", "p_barley", "p_maize",
                             "crop_margin", "crop_entropy"]
    assert columns["crop_pred"].tolist() == ["wheat", None, None, None, "maize"]
    assert columns["crop_status"].tolist() == ["ok", "not_selected", "too_small", "not_selected", "ok"]
    assert NOT_SELECTED == "not_selected"
    np.testing.assert_allclose(columns["crop_conf"], [0.7, NAN, NAN, NAN, 0.6], rtol=1e-6)
    np.testing.assert_allclose(columns["p_barley"], [0.2, NAN, NAN, NAN, 0.3], rtol=1e-6)
    np.testing.assert_allclose(columns["crop_margin"], [0.5, NAN, NAN, NAN, 0.3], rtol=1e-5)
    np.testing.assert_allclose(columns["crop_entropy"], [_entropy([0.7, 0.2, 0.1]), NAN, NAN, NAN,
                                                         _entropy([0.1, 0.3, 0.6])], rtol=1e-5)


def test_named_columns_and_no_status():
    columns = result_columns(_result(), 3 + 2, label_field="k", conf_field="c", status_field=None)
    assert list(columns) == ["k", "c"]


def test_the_file_writer_writes_the_columns(tmp_path):
    parcels = tmp_path / "parcels.gpkg"
    gpd.GeoDataFrame({"parcel_id": list("abcde")}, geometry=[box(i, 0, i + 1, 1) for i in range(5)],
                     crs="EPSG:32631").to_file(parcels)
    out = write_classification(parcels, _result(), tmp_path / "out.gpkg", probabilities=True)
    back = gpd.read_file(out)
    assert back["crop_status"].tolist() == ["ok", "not_selected", "too_small", "not_selected", "ok"]
    assert back["crop_pred"].fillna("").tolist() == ["wheat", "", "", "", "maize"]  # NULL where not ok
    np.testing.assert_allclose(back["crop_margin"].to_numpy(dtype=float), [0.5, NAN, NAN, NAN, 0.3], rtol=1e-5)


@pytest.mark.qgis
def test_the_layer_writer_takes_the_rows_with_a_result(qgis_app):
    from qgis.PyQt.QtCore import QVariant

    from thermocrop.plugin.layer_writer import result_values

    fids = [10, 11, 12, 13, 14]
    values = result_values(_result(), fids, "crop_pred", "crop_conf", "crop_status", probabilities=True)
    assert values["crop_pred"] == (QVariant.String, {10: "wheat", 12: None, 14: "maize"})
    assert values["crop_status"] == (QVariant.String, {10: "ok", 12: "too_small", 14: "ok"})
    kind, confidence = values["crop_conf"]
    assert kind == QVariant.Double and confidence[12] is None
    assert confidence[10] == pytest.approx(0.7) and confidence[14] == pytest.approx(0.6)
    assert values["crop_margin"][1][14] == pytest.approx(0.3, rel=1e-5)


def test_set_columns_by_hand(tmp_path):
    result = _result()
    result.sets = np.array([[True, True, False], [False, False, False], [False, True, True]])
    result.coverage = 0.9
    columns = result_columns(result, 5)
    assert list(columns) == ["crop_pred", "crop_conf", "crop_status", "crop_set", "crop_set_size"]
    # most probable first: row 0 wheat 0.7 > barley 0.2; row 4 maize 0.6 > barley 0.3
    assert columns["crop_set"].tolist() == ["wheat|barley", None, None, None, "maize|barley"]
    assert columns["crop_set_size"].tolist() == [2, None, None, None, 2]
    parcels = tmp_path / "parcels.gpkg"
    gpd.GeoDataFrame({"parcel_id": list("abcde")}, geometry=[box(i, 0, i + 1, 1) for i in range(5)],
                     crs="EPSG:32631").to_file(parcels)
    out = write_classification(parcels, result, tmp_path / "out.gpkg")
    from osgeo import ogr

    source = ogr.Open(str(out))  # held while its layer is used
    defn = source.GetLayer(0).GetLayerDefn()
    kind = defn.GetFieldDefn(defn.GetFieldIndex("crop_set_size")).GetType()
    source = None
    assert kind in (ogr.OFTInteger, ogr.OFTInteger64)
    back = gpd.read_file(out)
    assert back["crop_set"].tolist()[0] == "wheat|barley" and back["crop_set"].isna().tolist() == [
        False, True, True, True, False]


def test_decided_columns_by_hand():
    result = _result()
    result.decided = np.array(["2021-06-02", "NaT", "NaT"], dtype="datetime64[D]")
    result.decided_gdd = np.array([1234.56, NAN, NAN], dtype=np.float32)
    columns = result_columns(result, 5)
    assert list(columns) == ["crop_pred", "crop_conf", "crop_status", "crop_decided", "crop_decided_gdd"]
    assert columns["crop_decided"].tolist() == ["2021-06-02", None, None, None, None]
    np.testing.assert_allclose(columns["crop_decided_gdd"], [1234.6, NAN, NAN, NAN, NAN])


@pytest.mark.qgis
def test_the_layer_writer_keeps_the_decision_date_as_text(qgis_app):
    from qgis.PyQt.QtCore import QVariant

    from thermocrop.plugin.layer_writer import result_values

    result = _result()
    result.decided = np.array(["2021-06-02", "NaT", "NaT"], dtype="datetime64[D]")
    result.decided_gdd = np.array([1234.5, NAN, NAN], dtype=np.float32)
    values = result_values(result, [10, 11, 12, 13, 14], "crop_pred", "crop_conf", "crop_status")
    assert values["crop_decided"] == (QVariant.String, {10: "2021-06-02", 12: None, 14: None})
    assert values["crop_decided_gdd"] == (QVariant.Double, {10: 1234.5, 12: None, 14: None})


@pytest.mark.parametrize("fields", [
    dict(label="crop_conf"),                       # the class written over the confidence
    dict(status="CROP_PRED"),                      # the same name but for case (GeoPackage, shapefile)
    dict(label="crop_set"),                        # the prediction set's field, sets on by default
    dict(confidence="crop_decided_gdd", decided=0.8),
    dict(label="crop_margin", probabilities=True),
    dict(confidence="crop_entropy", probabilities=True),
])
def test_two_result_columns_of_one_name_are_refused(fields):
    from thermocrop.app import ResultFields
    from thermocrop.core.errors import InputError

    with pytest.raises(InputError, match="give each its own name"):
        ResultFields(**fields)


def test_result_fields_that_do_not_meet_are_accepted():
    from thermocrop.app import ResultFields

    assert ResultFields(label="crop_set", coverage=None).kinds()["crop_set"] == "string"
    assert ResultFields(confidence="crop_decided_gdd").kinds()["crop_decided_gdd"] == "real"


def test_a_result_field_named_like_a_class_probability_is_refused_with_probabilities():
    from thermocrop.app import ResultFields
    from thermocrop.core.errors import InputError

    with pytest.raises(InputError, match="'p_corn' for the class begins like the class probabilities"):
        ResultFields(label="p_corn", probabilities=True)
    assert "p_corn" in ResultFields(label="p_corn").kinds()  # no probabilities written: no clash


def test_two_fixed_result_fields_that_meet_in_a_shapefile_are_refused_with_advice_that_can_be_taken():
    from thermocrop.core.errors import OutputError
    from thermocrop.core.io.vector import output_field_names

    with pytest.raises(OutputError, match=r"write another format \(.gpkg, .fgb\), or leave out"):
        output_field_names("ESRI Shapefile", ["crop_pred", "crop_decided", "crop_decided_gdd"])
    with pytest.raises(OutputError, match="choose names that differ in their first 10 characters"):
        output_field_names("ESRI Shapefile", ["crop_status_a", "crop_status_b"])


@pytest.mark.parametrize("fields, words", [
    (dict(coverage=1.0), "coverage must be a number above 0 and at most 0.999, not 1"),
    (dict(coverage=0.0), "coverage must be a number above 0"),
    (dict(decided=1.5), "decided label keeps must be a number from 0 to 1, not 1.5"),
])
def test_a_coverage_or_decision_confidence_out_of_range_is_refused_in_every_door(fields, words):
    """A coverage of 1 ended a dock run after all its work in "ZeroDivisionError: float division by zero"."""
    from thermocrop.app import ResultFields
    from thermocrop.core.errors import InputError

    with pytest.raises(InputError, match=words):
        ResultFields(**fields)
    assert ResultFields(coverage=0.999, decided=1.0).coverage == 0.999
