"""Accuracy assessment in QGIS on a real GeoPackage layer: the widget (background assessment, report,
saving, errors) and ``thermocrop:accuracyassessment`` through processing.run."""

from __future__ import annotations

import csv
import time

import numpy as np
import pytest

pytestmark = pytest.mark.qgis


def write_classified_layer(path, crs="EPSG:3035"):
    """Twelve square parcels with a map class and, on nine of them, a reference class.

    Returns the GeoDataFrame written (the expected figures are computed from it by geopandas,
    a route independent of QGIS's feature reading).
    """
    import geopandas as gpd
    from shapely.geometry import box

    sides = [100, 100, 200, 100, 150, 100, 100, 300, 100, 100, 200, 100]   # metres
    pred = ["winter_wheat"] * 5 + ["corn"] * 4 + ["meadow"] * 2 + [None]
    truth = ["winter_wheat", "winter_wheat", "corn", None, "winter_wheat",
             "corn", "corn", None, "meadow", "meadow", None, "corn"]
    geoms = [box(1000 * i, 0, 1000 * i + s, s) for i, s in enumerate(sides)]
    frame = gpd.GeoDataFrame({"crop_pred": pred, "crop": truth}, geometry=geoms, crs=crs)
    frame.to_file(path, driver="GPKG")
    return frame


@pytest.fixture
def classified(qgis_app, tmp_path):
    from qgis.core import QgsProject, QgsVectorLayer

    path = tmp_path / "classified.gpkg"
    frame = write_classified_layer(path)
    layer = QgsVectorLayer(str(path), "classified", "ogr")
    assert layer.isValid()
    QgsProject.instance().addMapLayer(layer)
    yield layer, frame
    QgsProject.instance().removeAllMapLayers()


@pytest.fixture
def widget(qgis_app):
    from thermocrop.plugin.accuracy_widget import AccuracyWidget

    w = AccuracyWidget()
    yield w
    w.shutdown()
    w.deleteLater()


def _wait(widget, timeout=60):
    from qgis.core import QgsApplication

    end = time.monotonic() + timeout
    while widget.task is not None:
        QgsApplication.processEvents()
        time.sleep(0.01)
        assert time.monotonic() < end, "the accuracy task did not finish"


def test_widget_assesses_in_the_background_and_saves(widget, classified, tmp_path):
    from thermocrop.core.accuracy import assess_layer

    layer, frame = classified
    reports, failures = [], []
    widget.reportReady.connect(reports.append)
    widget.failed.connect(failures.append)
    widget.set_layer(layer)
    # The fields are guessed from their names.
    assert widget.predicted_combo.currentField() == "crop_pred"
    assert widget.reference_combo.currentField() == "crop"
    assert widget.assess() is not None
    _wait(widget)
    assert failures == [] and len(reports) == 1
    report = reports[0]
    expected = assess_layer(frame, "crop_pred", "crop", weighting="area")
    assert report.classes == expected.classes
    assert report.matrix.tolist() == expected.matrix.tolist()
    np.testing.assert_allclose(report.map_area, expected.map_area, rtol=1e-9)
    np.testing.assert_allclose(report.estimates.area, expected.estimates.area, rtol=1e-9)
    # By hand: 8 units with both labels (parcel 12 is not classified), 6 correct.
    assert report.sample.n == 8 and report.n_unusable == 1
    assert report.sample.overall_accuracy == pytest.approx(6 / 8)
    # Map areas (ha) from the squares: wheat 1+1+4+1+2.25, corn 1+1+9+1, meadow 1+4.
    idx = {c: i for i, c in enumerate(report.classes)}
    assert report.map_area[idx["winter_wheat"]] == pytest.approx(9.25, rel=1e-3)
    assert report.map_area[idx["corn"]] == pytest.approx(12.0, rel=1e-3)
    assert "overall accuracy 0.750" in widget.status.text()
    assert "Confusion matrix" in widget.browser.toPlainText()

    written = widget.save_report(tmp_path / "accuracy")
    assert [p.name for p in written] == ["accuracy.html", "accuracy.csv", "accuracy_matrix.csv"]
    with open(written[1], newline="") as fh:
        rows = {r["class"]: r for r in csv.DictReader(fh)}
    assert float(rows["overall"]["overall_accuracy"]) == pytest.approx(0.75)
    assert float(rows["corn"]["map_area"]) == pytest.approx(12.0, rel=1e-3)


def test_widget_count_and_table_weighting(widget, classified, tmp_path):
    layer, _ = classified
    widget.set_layer(layer, "crop_pred", "crop")
    widget.set_weighting("count")
    widget.assess()
    _wait(widget)
    idx = {c: i for i, c in enumerate(widget.report.classes)}
    assert widget.report.area_unit == "parcels"
    assert widget.report.map_area[idx["winter_wheat"]] == 5
    table = tmp_path / "areas.csv"
    table.write_text("class,area\nwinter_wheat,500\ncorn,300\nmeadow,200\n")
    widget.set_weighting("table", table)
    widget.assess()
    _wait(widget)
    assert widget.report.estimates.total_area == 1000
    assert widget.report.map_area[idx["corn"]] == 300


def test_widget_says_what_is_wrong(widget, classified, tmp_path):
    layer, _ = classified
    failures = []
    widget.failed.connect(failures.append)
    widget.set_layer(layer, "crop_pred", "crop_pred")
    assert widget.assess() is None
    assert "same" in failures[-1] and "same" in widget.status.text()
    widget.set_layer(layer, "crop_pred", "crop")
    widget.set_weighting("table", tmp_path / "missing.csv")
    assert widget.assess() is None
    assert "table of map class areas" in failures[-1]
    bad = tmp_path / "areas.csv"
    bad.write_text("class,area\nwinter_wheat,5\n")            # corn and meadow missing
    widget.set_weighting("table", bad)
    widget.assess()
    _wait(widget)
    assert "lack the classes corn, meadow" in failures[-1]
    assert widget.report is None

def _run(params: dict):
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback

    return processing.run("thermocrop:accuracyassessment", params, context=QgsProcessingContext(),
                          feedback=QgsProcessingFeedback())


def test_accuracyassessment_writes_the_reports(provider, tmp_path):
    from thermocrop.core.accuracy import assess_layer

    frame = write_classified_layer(tmp_path / "classified.gpkg")
    expected = assess_layer(frame, "crop_pred", "crop", weighting="area")
    result = _run({"INPUT": str(tmp_path / "classified.gpkg"), "PREDICTED_FIELD": "crop_pred",
                   "REFERENCE_FIELD": "crop", "OUTPUT_HTML": str(tmp_path / "r.html"),
                   "OUTPUT_CSV": str(tmp_path / "r.csv"), "OUTPUT_MATRIX": str(tmp_path / "m.csv")})
    assert result["OVERALL_ACCURACY"] == pytest.approx(6 / 8)
    assert result["SAMPLE_SIZE"] == 8
    assert result["KAPPA"] == pytest.approx(expected.sample.kappa)
    assert result["ADJUSTED_OVERALL_ACCURACY"] == pytest.approx(expected.estimates.overall_accuracy)
    with open(tmp_path / "r.csv", newline="") as fh:
        rows = {r["class"]: r for r in csv.DictReader(fh)}
    for i, name in enumerate(expected.classes):
        assert float(rows[name]["estimated_area"]) == pytest.approx(expected.estimates.area[i], rel=1e-5)
    with open(tmp_path / "m.csv", newline="") as fh:
        matrix = [[int(v) for v in row[1:]] for row in list(csv.reader(fh))[1:]]
    assert matrix == expected.matrix.tolist()
    assert "<table>" in (tmp_path / "r.html").read_text()


def test_accuracyassessment_by_count_and_table(provider, tmp_path):
    write_classified_layer(tmp_path / "classified.gpkg")
    _run({"INPUT": str(tmp_path / "classified.gpkg"), "PREDICTED_FIELD": "crop_pred",
          "REFERENCE_FIELD": "crop", "WEIGHTING": 1, "OUTPUT_HTML": str(tmp_path / "r.html"),
          "OUTPUT_CSV": str(tmp_path / "r.csv")})
    with open(tmp_path / "r.csv", newline="") as fh:
        rows = {r["class"]: r for r in csv.DictReader(fh)}
    assert rows["corn"]["area_unit"] == "parcels" and float(rows["corn"]["map_area"]) == 4
    table = tmp_path / "areas.csv"
    table.write_text("class,km2\nwinter_wheat,50\ncorn,30\nmeadow,20\n")
    _run({"INPUT": str(tmp_path / "classified.gpkg"), "PREDICTED_FIELD": "crop_pred",
          "REFERENCE_FIELD": "crop", "CLASS_AREAS": str(table), "OUTPUT_HTML": str(tmp_path / "t.html"),
          "OUTPUT_CSV": str(tmp_path / "t.csv")})
    with open(tmp_path / "t.csv", newline="") as fh:
        rows = {r["class"]: r for r in csv.DictReader(fh)}
    # Stratum wheat (W 0.5): 3 of 4 reference units wheat, 1 corn; corn (W 0.3): 2 of 3 corn,
    # 1 meadow; meadow (W 0.2): its one unit meadow. Corn area = 100 * (0.5 / 4 + 0.3 * 2 / 3).
    assert float(rows["corn"]["estimated_area"]) == pytest.approx(32.5)
    assert float(rows["winter_wheat"]["estimated_area"]) == pytest.approx(37.5)
    assert float(rows["meadow"]["estimated_area"]) == pytest.approx(30.0)
    # A one-unit stratum (meadow) has no variance: its intervals are empty, not zero.
    assert rows["meadow"]["adj_users_accuracy_ci95"] == "" and rows["corn"]["estimated_area_ci95"] == ""


def test_accuracyassessment_refuses_bad_parameters(provider, tmp_path):
    from qgis.core import QgsProcessingException

    write_classified_layer(tmp_path / "classified.gpkg")
    base = {"INPUT": str(tmp_path / "classified.gpkg"), "PREDICTED_FIELD": "crop_pred",
            "OUTPUT_HTML": str(tmp_path / "r.html"), "OUTPUT_CSV": str(tmp_path / "r.csv")}
    with pytest.raises(QgsProcessingException, match="same field"):
        _run({**base, "REFERENCE_FIELD": "crop_pred"})
    with pytest.raises(QgsProcessingException, match="does not exist"):
        _run({**base, "REFERENCE_FIELD": "crop", "CLASS_AREAS": str(tmp_path / "none.csv")})
    with pytest.raises(QgsProcessingException, match="The layer classified has no field 'CROP' \\(REFERENCE_FIELD\\)"):
        _run({**base, "REFERENCE_FIELD": "CROP"})
    assert not (tmp_path / "r.html").exists()


def test_accuracyassessment_help_names_every_parameter(provider):
    alg = provider.algorithm("accuracyassessment")
    assert alg is not None and alg.displayName() == "Accuracy assessment"
    names = [p.name() for p in alg.parameterDefinitions()]
    assert names == ["INPUT", "PREDICTED_FIELD", "REFERENCE_FIELD", "CONFIDENCE_FIELD", "WEIGHTING", "CLASS_AREAS",
                     "OUTPUT_HTML", "OUTPUT_CSV", "OUTPUT_MATRIX"]
    assert all(alg.HELP.get(n) for n in names)


def test_reliability_in_the_toolbox_and_the_widget_by_hand(provider, widget, tmp_path):
    import geopandas as gpd
    from qgis.core import QgsProject, QgsVectorLayer
    from shapely.geometry import box

    # Right or wrong in the sample: 0.95 T, 0.92 T, 0.85 F, 0.55 T, 0.58 T, 0.31 F, 0.99 T, 1.0 T (the
    # ninth parcel has no reference, the tenth no confidence). Bins 0.9: 4 units, mean 0.965, all
    # right; 0.8: 0.85, wrong; 0.5: mean 0.565, right; 0.3: 0.31, wrong.
    # ECE = (4 * 0.035 + 0.85 + 2 * 0.435 + 0.31) / 8 = 0.27125.
    mapped = ["wheat", "wheat", "wheat", "wheat", "corn", "corn", "corn", "corn", "wheat", "corn"]
    reference = ["wheat", "wheat", "corn", "wheat", "corn", "wheat", "corn", "corn", None, "corn"]
    confidence = [0.95, 0.92, 0.85, 0.55, 0.58, 0.31, 0.99, 1.0, 0.7, None]
    path = tmp_path / "conf.gpkg"
    gpd.GeoDataFrame({"crop_pred": mapped, "crop": reference, "crop_conf": confidence},
                     geometry=[box(i * 100, 0, i * 100 + 50, 50) for i in range(10)], crs="EPSG:3035").to_file(path)
    result = _run({"INPUT": str(path), "PREDICTED_FIELD": "crop_pred", "REFERENCE_FIELD": "crop",
                   "CONFIDENCE_FIELD": "crop_conf", "WEIGHTING": 2, "OUTPUT_HTML": str(tmp_path / "r.html"),
                   "OUTPUT_CSV": str(tmp_path / "r.csv")})
    assert result["CALIBRATION_ERROR"] == pytest.approx(0.27125)
    page = (tmp_path / "r.html").read_text()
    assert "Expected calibration error (10 bins): <b>0.271</b>" in page and "data:image/png;base64," in page

    layer = QgsVectorLayer(str(path), "conf", "ogr")
    QgsProject.instance().addMapLayer(layer)
    try:
        widget.set_layer(layer, "crop_pred", "crop")
        assert widget.confidence_combo.currentField() == "crop_conf"  # guessed
        widget.set_weighting("none")
        widget.assess()
        _wait(widget)
        assert widget.report.reliability.ece == pytest.approx(0.27125)
        assert "calibration error 0.271" in widget.status.text()
        # The diagram is in the browser as an image it holds.
        assert widget.browser.document().toHtml().count("<img") == 1
    finally:
        QgsProject.instance().removeMapLayer(layer.id())
