"""The dock driven programmatically: run, undo, cancel, read-only layers, overwrite, explain."""

from __future__ import annotations

import shutil
import time
from types import SimpleNamespace

import numpy as np
import pytest

pytestmark = pytest.mark.qgis


@pytest.fixture
def parcels_layer(qgis_app, tiny_region, tmp_path):
    """A writable copy of the tiny region's parcels, added to the project."""
    from qgis.core import QgsProject, QgsVectorLayer

    path = tmp_path / "parcels.gpkg"
    shutil.copy(tiny_region / "parcels.gpkg", path)
    layer = QgsVectorLayer(str(path), "parcels", "ogr")
    assert layer.isValid()
    QgsProject.instance().addMapLayer(layer)
    yield layer
    QgsProject.instance().removeAllMapLayers()


@pytest.fixture
def dock(qgis_app, tiny_region, region_weather, small_bundle):
    from thermocrop.plugin.dock import ThermoCropDock

    widget = ThermoCropDock()
    widget.add_scene_paths([str(tiny_region / "scenes")])
    widget.weather.setFilePath(str(region_weather))
    widget.model.setFilePath(str(small_bundle))
    yield widget
    widget.shutdown()
    widget.deleteLater()


def _wait(dock, timeout=300):
    from qgis.core import QgsApplication

    end = time.monotonic() + timeout
    while dock.task is not None:
        QgsApplication.processEvents()
        time.sleep(0.02)
        assert time.monotonic() < end, "the classification task did not finish"


def _values(layer, field):
    return {f["parcel_id"]: f[field] for f in layer.getFeatures()}


@pytest.mark.slow
def test_run_writes_one_undoable_edit(dock, parcels_layer, tiny_region, region_weather, small_bundle):
    from thermocrop.core.classify import classify_parcels

    dock.layer_combo.setLayer(parcels_layer)
    fields_before = parcels_layer.fields().names()
    assert dock.start() is not None
    _wait(dock)
    assert "crop_pred" in parcels_layer.fields().names()
    core = classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes", region_weather,
                            str(small_bundle), id_field="parcel_id")
    expected = {pid: (label or None) for pid, label in zip(core.parcel_ids, core.labels)}
    got = {str(k): (v if v not in ("", None) and str(v) != "NULL" else None)
           for k, v in _values(parcels_layer, "crop_pred").items()}
    assert got == expected
    conf = _values(parcels_layer, "crop_conf")
    ok = core.status == "ok"
    np.testing.assert_allclose([conf[p] for p in core.parcel_ids[ok]], core.confidence[ok], rtol=1e-4)
    assert parcels_layer.renderer().type() == "categorizedSymbol"
    counts = core.counts()
    assert all(f"{k}: {v}" in dock.counts_text().splitlines() for k, v in counts.items())

    assert parcels_layer.undoStack().count() == 1
    parcels_layer.undoStack().undo()
    assert parcels_layer.fields().names() == fields_before


@pytest.mark.slow
def test_cancel_mid_run_leaves_the_layer_unchanged(dock, parcels_layer):
    dock.layer_combo.setLayer(parcels_layer)
    fields_before = parcels_layer.fields().names()
    task = dock.start()
    seen = []

    def cancel_on_progress(p):
        if p > 0 and not seen:
            seen.append(p)
            dock.cancel()

    task.progressChanged.connect(cancel_on_progress)
    _wait(dock)
    assert seen and seen[0] < 100
    assert "Cancelled" in dock.message.text()
    assert parcels_layer.fields().names() == fields_before
    assert not parcels_layer.isModified() and parcels_layer.undoStack().count() == 0


@pytest.mark.slow
def test_read_only_layer_gets_a_new_layer(dock, parcels_layer):
    from qgis.core import QgsProject

    parcels_layer.setReadOnly(True)
    dock.layer_combo.setLayer(parcels_layer)
    fields_before = parcels_layer.fields().names()
    dock.start()
    _wait(dock)
    assert parcels_layer.fields().names() == fields_before
    out = dock.output_layer
    assert out is not parcels_layer and out.id() in QgsProject.instance().mapLayers()
    assert out.featureCount() == parcels_layer.featureCount()
    assert {f["parcel_id"] for f in out.getFeatures()} == {f["parcel_id"] for f in parcels_layer.getFeatures()}
    assert sum(1 for f in out.getFeatures() if f["crop_pred"]) > 0


def test_existing_fields_are_kept_unless_the_user_agrees(qgis_app):
    from qgis.core import QgsFeature, QgsField, QgsGeometry, QgsVectorLayer
    from qgis.PyQt.QtCore import QVariant

    from thermocrop.plugin.dock import write_result_to_layer

    layer = QgsVectorLayer("Polygon?crs=EPSG:32631", "p", "memory")
    layer.dataProvider().addAttributes([QgsField("crop_pred", QVariant.String)])
    layer.updateFields()
    features = []
    for i in range(2):
        f = QgsFeature(layer.fields())
        f.setGeometry(QgsGeometry.fromWkt(f"POLYGON(({i} 0, {i + 1} 0, {i + 1} 1, {i} 0))"))
        f.setAttributes(["old"])
        features.append(f)
    layer.dataProvider().addFeatures(features)
    fids = [f.id() for f in layer.getFeatures()]
    result = SimpleNamespace(rows=np.array([0, 1]), status=np.array(["ok", "too_small"]),
                             labels=np.array(["corn", ""]), confidence=np.array([0.75, np.nan]))
    asked = []
    assert write_result_to_layer(layer, fids, result, "crop_pred", "crop_conf",
                                 lambda names: asked.append(names) or False) is None
    assert asked == [["crop_pred"]] and [f["crop_pred"] for f in layer.getFeatures()] == ["old", "old"]
    assert write_result_to_layer(layer, fids, result, "crop_pred", "crop_conf", lambda names: True) is layer
    assert [f["crop_pred"] for f in layer.getFeatures()] == ["corn", None]
    assert [f["crop_conf"] for f in layer.getFeatures()][0] == pytest.approx(0.75)
    layer.undoStack().undo()
    assert [f["crop_pred"] for f in layer.getFeatures()] == ["old", "old"]


def test_ndvi_series_by_hand():
    from thermocrop.core.bands import S2_BANDS
    from thermocrop.plugin.dock import ndvi_series

    pixels = np.zeros((1, 3, len(S2_BANDS), 2), dtype=np.uint16)
    red, nir = S2_BANDS.index("B04"), S2_BANDS.index("B08")
    pixels[0, :, red] = [[1000, 2000], [1000, 1000], [500, 500]]
    pixels[0, :, nir] = [[3000, 2000], [3000, 9000], [500, 500]]
    pixel_mask = np.array([[[True, True], [True, False], [True, True]]])
    date_mask = np.array([[True, True, False]])
    ps = SimpleNamespace(bands=S2_BANDS, pixels=pixels, pixel_mask=pixel_mask, date_mask=date_mask)
    # Date 0: (0.5 + 0) / 2; date 1: only the first pixel, 0.5; date 2 unusable.
    np.testing.assert_allclose(ndvi_series(ps), [0.25, 0.5, np.nan])


@pytest.mark.slow
def test_explain_draws_ndvi_and_probabilities(dock, parcels_layer):
    dock.layer_combo.setLayer(parcels_layer)
    fid = next(f.id() for f in parcels_layer.getFeatures() if f.geometry().area() > 20000)
    figure, ndvi, probs = dock.explain(fid)
    assert len(figure.axes) == 3
    assert np.isfinite(ndvi).sum() > 5 and np.nanmax(ndvi) <= 1
    assert probs.sum() == pytest.approx(1.0, abs=1e-4)
    assert dock.figure_canvas is not None


@pytest.mark.slow
def test_selected_features_only(dock, parcels_layer):
    chosen = [f.id() for f in parcels_layer.getFeatures()][:5]
    parcels_layer.selectByIds(chosen)
    dock.layer_combo.setLayer(parcels_layer)
    dock.selected_only.setChecked(True)
    task = dock.start()
    assert len(task.params.fids) == 5
    _wait(dock)
    written = {f.id() for f in parcels_layer.getFeatures()
               if f["crop_conf"] is not None and str(f["crop_conf"]) != "NULL"}
    assert written and written <= set(chosen)


def test_project_rasters_are_listed_and_files_in_a_checked_folder_are_not_doubled(qgis_app, tiny_region):
    from qgis.core import QgsProject, QgsRasterLayer

    from thermocrop.plugin.dock import ThermoCropDock

    tif = sorted(p for p in (tiny_region / "scenes").glob("*.tif") if "_SCL" not in p.name)[0]
    QgsProject.instance().addMapLayer(QgsRasterLayer(str(tif), "one scene"))
    widget = ThermoCropDock()
    try:
        assert widget.scene_paths() == [str(tif)]
        widget.add_scene_paths([str(tiny_region / "scenes")])
        assert widget.scene_paths() == [str(tiny_region / "scenes")]
    finally:
        widget.shutdown()
        QgsProject.instance().removeAllMapLayers()


def test_model_card_shows_variant_classes_regions_and_scores(dock, small_bundle, tmp_path):
    from thermocrop.core.bundle import load_bundle, save_bundle

    bundle = load_bundle(small_bundle)
    config = bundle.config
    config.provenance = {"train_regions": ["AT1", "FR2"], "data": "synthetic", "test_macro_f1": 0.6125}
    path = tmp_path / "carded.tcm"
    save_bundle(path, bundle.model, config)
    dock.model.setFilePath(str(path))
    card = dock.model_card.text()
    assert "tpe_sinusoidal" in card and "winter_wheat" in card
    assert "AT1, FR2 (synthetic)" in card and "test macro f1 0.613" in card


def _wait_for_task_manager(timeout=300):
    from qgis.core import QgsApplication

    end = time.monotonic() + timeout
    while QgsApplication.taskManager().countActiveTasks() > 0:
        QgsApplication.processEvents()
        time.sleep(0.02)
        assert time.monotonic() < end, "the task did not end"
    for _ in range(20):  # let the finished() call reach the main thread
        QgsApplication.processEvents()
        time.sleep(0.01)


@pytest.mark.slow
def test_shutdown_while_classifying_leaves_the_layer_and_the_dock_alone(dock, parcels_layer):
    dock.layer_combo.setLayer(parcels_layer)
    fields_before = parcels_layer.fields().names()
    assert dock.start() is not None
    said = dock.message.text()
    dock.shutdown()
    _wait_for_task_manager()
    # A closed dock gets no report: neither "Cancelled" nor a result.
    assert dock.message.text() == said
    assert dock.output_layer is None
    assert parcels_layer.fields().names() == fields_before and not parcels_layer.isModified()


@pytest.mark.slow
def test_parcel_layer_removed_while_classifying(dock, parcels_layer):
    from qgis.core import QgsProject

    dock.layer_combo.setLayer(parcels_layer)
    assert dock.start() is not None
    QgsProject.instance().removeMapLayer(parcels_layer.id())
    _wait(dock)
    assert "removed while classifying" in dock.message.text()
    assert dock.output_layer is None and QgsProject.instance().mapLayers() == {}


def test_counts_list_classes_in_their_colours_and_statuses_last(qgis_app):
    from thermocrop.plugin.dock import ThermoCropDock
    from thermocrop.plugin.styles import UNCLASSIFIED_COLOUR

    widget = ThermoCropDock()
    try:
        widget.show_counts({"(too_small)": 1, "meadow": 6, "corn": 3}, {"corn": "#f28e2b", "meadow": "#59a14f"})
        assert widget.counts_text().splitlines() == ["corn: 3", "meadow: 6", "(too_small): 1"]
        rows = [widget.counts.topLevelItem(i) for i in range(3)]
        assert [r.text(2) for r in rows] == ["30 %", "60 %", "10 %"]
        swatches = [r.icon(0).pixmap(12, 12).toImage().pixelColor(6, 6).name() for r in rows]
        assert swatches == ["#f28e2b", "#59a14f", UNCLASSIFIED_COLOUR]
    finally:
        widget.shutdown()


def test_explain_asks_for_one_selected_parcel(qgis_app, parcels_layer):
    from thermocrop.plugin.dock import ThermoCropDock

    widget = ThermoCropDock()
    try:
        widget.layer_combo.setLayer(parcels_layer)
        widget.explain_selected()
        assert "Select exactly one parcel of parcels to explain (0 selected)" in widget.explain_message.text()
        parcels_layer.selectByIds([f.id() for f in parcels_layer.getFeatures()][:1])
        widget.explain_selected()  # no scenes or weather chosen yet
        assert "Classify tab" in widget.explain_message.text()
        assert widget.figure_canvas is None
    finally:
        widget.shutdown()
