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


@pytest.fixture(autouse=True)
def fresh_settings(qgis_app):
    """Each test starts without what an earlier dock remembered."""
    from qgis.core import QgsSettings

    QgsSettings().remove("thermocrop/dock")
    yield
    QgsSettings().remove("thermocrop/dock")


@pytest.fixture
def dock(qgis_app, tiny_region, region_weather, small_bundle):
    from thermocrop.plugin.dock import ThermoCropDock

    widget = ThermoCropDock()
    widget.add_scene_paths([str(tiny_region / "scenes")])
    widget.weather.setFilePath(str(region_weather))
    widget.model.setFilePath(str(small_bundle))
    widget.confirm_overwrite = lambda names: True
    yield widget
    widget.shutdown()
    widget.deleteLater()


def _wait(dock, timeout=300, attr="task"):
    from qgis.core import QgsApplication

    end = time.monotonic() + timeout
    while getattr(dock, attr) is not None:
        QgsApplication.processEvents()
        time.sleep(0.02)
        assert time.monotonic() < end, "the task did not finish"


def _values(layer, field):
    return {f["parcel_id"]: f[field] for f in layer.getFeatures()}


def _core_result(tiny_region, region_weather, small_bundle):
    from thermocrop.core.classify import classify_parcels

    return classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes", region_weather,
                            str(small_bundle), id_field="parcel_id")


def _text(value):
    return value if value not in ("", None) and str(value) != "NULL" else None


@pytest.mark.slow
def test_run_writes_a_new_styled_layer_file_by_default(dock, parcels_layer, tiny_region, region_weather,
                                                       small_bundle, tmp_path):
    from qgis.core import QgsProject, QgsVectorLayer

    dock.layer_combo.setLayer(parcels_layer)
    fields_before = parcels_layer.fields().names()
    assert dock.to_new_file.isChecked() and not dock.in_place.isChecked()
    dock.progress.setValue(100)  # as a previous run leaves it
    assert dock.start() is not None
    assert dock.progress.value() == 0
    _wait(dock)
    out_path = tmp_path / "parcels_classified.gpkg"
    assert out_path.is_file() and (tmp_path / "parcels_classified.qml").is_file()
    # The parcel layer is untouched and was never put in edit mode.
    assert parcels_layer.fields().names() == fields_before
    assert not parcels_layer.isEditable() and not parcels_layer.isModified()
    out = dock.output_layer
    assert out.id() in QgsProject.instance().mapLayers() and out.source().startswith(str(out_path))
    assert not out.isEditable() and out.renderer().type() == "categorizedSymbol"
    core = _core_result(tiny_region, region_weather, small_bundle)
    reopened = QgsVectorLayer(str(out_path), "check", "ogr")
    assert reopened.featureCount() == parcels_layer.featureCount()
    got = {str(f["parcel_id"]): (_text(f["crop_pred"]), f["crop_status"]) for f in reopened.getFeatures()}
    assert got == {pid: (label or None, status) for pid, label, status in zip(core.parcel_ids, core.labels,
                                                                               core.status)}
    # Every attribute of the input is kept; the GeoPackage's key stays the new file's key, as in
    # the command line's file, not a plain column beside a key of its own (fid_1).
    assert set(fields_before) <= set(reopened.fields().names())
    import sqlite3

    with sqlite3.connect(out_path) as db:
        (table,), = db.execute("SELECT table_name FROM gpkg_contents WHERE data_type = 'features'").fetchall()
        columns = {row[1]: row[5] for row in db.execute(f'PRAGMA table_info("{table}")')}  # name -> primary key
    assert [name for name, key in columns.items() if key] == ["fid"] and "fid_1" not in columns, columns
    counts = core.counts()
    assert all(f"{k}: {v}" in dock.counts_text().splitlines() for k, v in counts.items())
    assert "Classified" in dock.message.text() and out_path.name in dock.message.text()
    assert dock.message.toolTip() == str(out_path)
    # Right above the parcel layer in the layer tree, so that it shows on the map.
    names = [n.name() for n in QgsProject.instance().layerTreeRoot().children()]
    assert names.index(out.name()) == names.index(parcels_layer.name()) - 1

    # Low-confidence filter: the layer shows exactly the parcels below the threshold.
    conf = {str(f["parcel_id"]): f["crop_conf"] for f in reopened.getFeatures()}
    dock.threshold.setValue(0.7)
    dock.low_confidence.setChecked(True)
    below = sum(1 for c in core.confidence[core.status == "ok"] if c < 0.7)
    assert out.featureCount() == below > 0
    assert all(f["crop_conf"] < 0.7 for f in out.getFeatures())
    dock.low_confidence.setChecked(False)
    assert out.featureCount() == len(conf) and out.subsetString() == ""
    # The second style colours by confidence with one rule per range; back to classes after.
    dock.colour_by.setCurrentIndex(1)
    assert out.renderer().type() == "RuleRenderer"
    rules = out.renderer().rootRule().children()
    assert [r.filterExpression().startswith('"crop_conf" >=') for r in rules[:4]] == [True] * 4
    assert rules[-1].isElse()
    dock.colour_by.setCurrentIndex(0)
    assert out.renderer().type() == "categorizedSymbol"

    # The next dock starts with what this run used.
    from thermocrop.plugin.dock import ThermoCropDock

    again = ThermoCropDock()
    try:
        assert again.weather.filePath() == dock.weather.filePath()
        assert again.model.filePath() == dock.model.filePath()
        assert again.scene_paths() == dock.scene_paths() and again.to_new_file.isChecked()
    finally:
        again.shutdown()


@pytest.mark.slow
def test_in_place_is_saved_and_never_left_in_edit_mode(dock, parcels_layer, tiny_region, region_weather,
                                                       small_bundle):
    from qgis.core import QgsApplication, QgsVectorLayer
    from qgis.gui import QgsMessageBar

    bar = QgsMessageBar()
    dock.iface = SimpleNamespace(messageBar=lambda: bar)
    logged = []
    QgsApplication.messageLog().messageReceived.connect(lambda message, tag, level: logged.append((tag, message)))
    dock.layer_combo.setLayer(parcels_layer)
    dock.in_place.setChecked(True)
    dock.probabilities.setChecked(True)
    assert dock.start() is not None
    _wait(dock)
    # The completion reaches the message bar and the ThermoCrop log, not only the dock.
    assert bar.currentItem() is not None and bar.currentItem().text().startswith("Classified")
    assert any(tag == "ThermoCrop" and message.startswith("Classified") for tag, message in logged)
    assert not parcels_layer.isEditable() and not parcels_layer.isModified()
    core = _core_result(tiny_region, region_weather, small_bundle)
    reopened = QgsVectorLayer(parcels_layer.source(), "check", "ogr")
    names = reopened.fields().names()
    assert {"crop_pred", "crop_conf", "crop_status", "crop_margin", "crop_entropy"} <= set(names)
    assert {f"p_{c}" for c in core.classes} <= set(names)
    by_id = {str(f["parcel_id"]): f for f in reopened.getFeatures()}
    ok = np.flatnonzero(core.status == "ok")
    for i in ok[:10]:
        f = by_id[core.parcel_ids[i]]
        assert f["crop_pred"] == core.labels[i] and f["crop_status"] == "ok"
        probs = np.sort(core.probabilities[i])[::-1]
        assert f["crop_margin"] == pytest.approx(probs[0] - probs[1], abs=1e-5)
        assert f[f"p_{core.classes[0]}"] == pytest.approx(core.probabilities[i, 0], abs=1e-5)
    bad = [i for i in range(len(core)) if core.status[i] != "ok"]
    assert all(by_id[core.parcel_ids[i]]["crop_status"] == core.status[i] for i in bad)


@pytest.mark.slow
def test_in_a_running_edit_session_the_result_is_one_undoable_edit(dock, parcels_layer):
    dock.layer_combo.setLayer(parcels_layer)
    dock.in_place.setChecked(True)
    parcels_layer.startEditing()
    fields_before = parcels_layer.fields().names()
    assert dock.start() is not None
    _wait(dock)
    assert parcels_layer.isEditable() and "crop_status" in parcels_layer.fields().names()
    assert parcels_layer.undoStack().count() == 1
    parcels_layer.undoStack().undo()
    assert parcels_layer.fields().names() == fields_before
    parcels_layer.rollBack()


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


def test_the_question_before_an_in_place_run_names_the_earlier_runs_fields_it_empties(dock, parcels_layer):
    """The question named the class, confidence and status fields; an earlier run's decision dates
    and prediction sets were then emptied without a word."""
    from qgis.core import QgsField
    from qgis.PyQt.QtCore import QVariant

    parcels_layer.dataProvider().addAttributes([QgsField("crop_decided", QVariant.String),
                                                QgsField("crop_set", QVariant.String)])
    parcels_layer.updateFields()
    dock.layer_combo.setLayer(parcels_layer)
    dock.in_place.setChecked(True)
    dock.prediction_sets.setChecked(False)
    asked = []
    dock.confirm_overwrite = lambda names: asked.append(names) or False
    assert dock.start() is None and dock.task is None
    assert asked and {"crop_decided", "crop_set"} <= set(asked[0])
    assert "not to be overwritten" in dock.message.text()


def test_read_only_layer_in_place_is_refused_before_the_run(dock, parcels_layer):
    parcels_layer.setReadOnly(True)
    dock.layer_combo.setLayer(parcels_layer)
    dock.in_place.setChecked(True)
    assert dock.start() is None and dock.task is None
    assert "read-only" in dock.message.text() and "New layer file" in dock.message.text()


def test_names_a_shapefile_would_cut_are_refused_before_the_run(dock, tmp_path):
    import geopandas as gpd
    from qgis.core import QgsProject, QgsVectorLayer
    from shapely.geometry import box

    gpd.GeoDataFrame({"name": ["a"]}, geometry=[box(0, 0, 50, 50)], crs="EPSG:32631").to_file(tmp_path / "p.shp")
    layer = QgsVectorLayer(str(tmp_path / "p.shp"), "shp", "ogr")
    QgsProject.instance().addMapLayer(layer)
    try:
        dock.layer_combo.setLayer(layer)
        dock.in_place.setChecked(True)
        assert dock.start() is None
        assert "crop_status is longer than a shapefile field name" in dock.message.text()
        dock.status_field.setText("crop_stat")
        dock.probabilities.setChecked(True)
        assert dock.start() is None and "probability fields" in dock.message.text()
        assert layer.fields().names() == ["name"]
    finally:
        QgsProject.instance().removeMapLayer(layer.id())


def test_an_existing_field_of_another_type_is_refused_before_the_run(dock, parcels_layer):
    from qgis.core import QgsField
    from qgis.PyQt.QtCore import QVariant

    parcels_layer.dataProvider().addAttributes([QgsField("crop_conf", QVariant.String)])
    parcels_layer.updateFields()
    dock.layer_combo.setLayer(parcels_layer)
    dock.in_place.setChecked(True)
    assert dock.start() is None and dock.task is None
    assert "parcels already has a field 'crop_conf' of type string" in dock.message.text()


def test_existing_fields_are_kept_unless_the_user_agrees(qgis_app):
    from qgis.core import QgsFeature, QgsField, QgsGeometry, QgsVectorLayer
    from qgis.PyQt.QtCore import QVariant

    from thermocrop.plugin.layer_writer import write_result_to_layer

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
                             labels=np.array(["corn", ""]), confidence=np.array([0.75, np.nan]), classes=("corn",))
    asked = []
    assert write_result_to_layer(layer, fids, result, "crop_pred", "crop_conf",
                                 lambda names: asked.append(names) or False, "crop_status") is None
    assert asked == [["crop_pred"]] and [f["crop_pred"] for f in layer.getFeatures()] == ["old", "old"]
    assert not layer.isEditable()
    # In the user's edit session: one undoable edit, the session left running.
    layer.startEditing()
    assert write_result_to_layer(layer, fids, result, "crop_pred", "crop_conf", lambda names: True,
                                 "crop_status") is layer
    assert [f["crop_pred"] for f in layer.getFeatures()] == ["corn", None]
    assert [f["crop_status"] for f in layer.getFeatures()] == ["ok", "too_small"]
    assert [f["crop_conf"] for f in layer.getFeatures()][0] == pytest.approx(0.75)
    layer.undoStack().undo()
    assert [f["crop_pred"] for f in layer.getFeatures()] == ["old", "old"]
    layer.rollBack()
    # Outside an edit session: saved at once, not left editable.
    assert write_result_to_layer(layer, fids, result, "crop_pred", "crop_conf", lambda names: True) is layer
    assert not layer.isEditable() and [f["crop_pred"] for f in layer.getFeatures()] == ["corn", None]


def test_an_earlier_runs_decision_dates_are_emptied_in_place(qgis_app):
    """Classified again without decision dates, a layer's earlier ``crop_decided`` values would
    sit beside the new classes: they are written empty (and the user is asked about them too)."""
    from qgis.core import QgsFeature, QgsField, QgsGeometry, QgsVectorLayer
    from qgis.PyQt.QtCore import QVariant

    from thermocrop.plugin.layer_writer import write_result_to_layer

    layer = QgsVectorLayer("Polygon?crs=EPSG:32631", "p", "memory")
    layer.dataProvider().addAttributes([QgsField("crop_decided", QVariant.String),
                                        QgsField("crop_decided_gdd", QVariant.Double),
                                        QgsField("note", QVariant.String)])
    layer.updateFields()
    f = QgsFeature(layer.fields())
    f.setGeometry(QgsGeometry.fromWkt("POLYGON((0 0, 1 0, 1 1, 0 0))"))
    f.setAttributes(["2017-05-26", 900.0, "mine"])
    layer.dataProvider().addFeatures([f])
    fids = [f.id() for f in layer.getFeatures()]
    result = SimpleNamespace(rows=np.array([0]), status=np.array(["ok"]), labels=np.array(["corn"]),
                             confidence=np.array([0.75]), classes=("corn", "meadow"))
    asked = []
    assert write_result_to_layer(layer, fids, result, "crop_pred", "crop_conf",
                                 lambda names: asked.append(names) or True, "crop_status") is layer
    assert asked == [["crop_decided", "crop_decided_gdd"]]
    feature = next(layer.getFeatures())
    assert feature["crop_pred"] == "corn" and feature["note"] == "mine"
    assert feature.attribute("crop_decided") is None or str(feature["crop_decided"]) == "NULL"
    assert feature.attribute("crop_decided_gdd") is None or str(feature["crop_decided_gdd"]) == "NULL"


def test_ndvi_series_by_hand():
    from thermocrop.core.scenes.bands import S2_BANDS
    from thermocrop.plugin.task import ndvi_series

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
def test_explain_runs_in_a_task_and_draws_ndvi_and_probabilities(dock, parcels_layer):
    from qgis.core import QgsTask

    dock.layer_combo.setLayer(parcels_layer)
    fid = next(f.id() for f in parcels_layer.getFeatures() if f.geometry().area() > 20000)
    task = dock.explain(fid)
    assert isinstance(task, QgsTask) and dock.explain_task is task
    assert not dock.explain_button.isEnabled()  # the UI thread is free, the button waits
    _wait(dock, attr="explain_task")
    ex = dock.last_explanation
    assert ex is not None and ex.fid == fid
    assert np.isfinite(ex.ndvi).sum() > 5 and np.nanmax(ex.ndvi) <= 1
    assert ex.probabilities.sum() == pytest.approx(1.0, abs=1e-4)
    assert dock.figure_canvas is not None and len(dock.figure_canvas.figure.axes) == 3
    assert dock.explain_button.isEnabled()


@pytest.mark.slow
def test_explain_survives_the_layer_being_removed_and_can_be_cancelled(dock, parcels_layer):
    from qgis.core import QgsProject, QgsVectorLayer

    source = parcels_layer.source()
    dock.layer_combo.setLayer(parcels_layer)
    dock.explain(next(iter(parcels_layer.allFeatureIds())))
    QgsProject.instance().removeMapLayer(parcels_layer.id())
    _wait(dock, attr="explain_task")
    # The task reads through its own snapshot; the message no longer names the removed layer.
    assert dock.last_explanation is not None and " of parcels" not in dock.explain_message.text()

    again = QgsVectorLayer(source, "parcels again", "ogr")
    QgsProject.instance().addMapLayer(again)
    dock.layer_combo.setLayer(again)
    task = dock.explain(next(iter(again.allFeatureIds())))
    task.cancel()
    _wait(dock, attr="explain_task")
    assert "cancelled" in dock.explain_message.text() and dock.explain_button.isEnabled()


def test_month_labels_do_not_run_together(qgis_app):
    from types import SimpleNamespace as NS

    from thermocrop.plugin.dock import ThermoCropDock

    widget = ThermoCropDock(restore=False)
    try:
        dates = np.arange(np.datetime64("2017-01-05"), np.datetime64("2017-12-20"), 9)
        bundle = NS(classes=("corn", "meadow"), config=NS(colours={"corn": "#f28e2b"}))
        ex = NS(dates=dates, gdd=np.linspace(0, 3000, len(dates)), ndvi=np.linspace(0.2, 0.8, len(dates)),
                probabilities=np.array([0.3, 0.7]), status="ok", name="7", bundle=bundle,
                share_factors=None)
        figure = widget.draw_explanation(ex)
        figure.set_size_inches(3.2, 6)  # a narrow dock
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        boxes = [t.get_window_extent(renderer) for t in figure.axes[0].get_xticklabels() if t.get_text()]
        assert len(boxes) >= 3
        assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:])), "month labels overlap"
    finally:
        widget.shutdown()


@pytest.mark.slow
def test_selected_features_only(dock, parcels_layer, tmp_path):
    from qgis.core import QgsVectorLayer

    chosen = [f.id() for f in parcels_layer.getFeatures()][:5]
    parcels_layer.selectByIds(chosen)
    dock.layer_combo.setLayer(parcels_layer)
    dock.selected_only.setChecked(True)
    task = dock.start()
    assert sorted(task.params.parcels.selected) == sorted(chosen)
    _wait(dock)
    assert "of 5 parcels" in dock.message.text()
    # The new file holds every parcel; those not selected say so.
    out = QgsVectorLayer(str(tmp_path / "parcels_classified.gpkg"), "out", "ogr")
    assert out.featureCount() == parcels_layer.featureCount()
    statuses = {f.id(): f["crop_status"] for f in out.getFeatures()}
    assert all(statuses[fid] != "not_selected" for fid in chosen)
    assert sum(s == "not_selected" for s in statuses.values()) == parcels_layer.featureCount() - 5

    # In place, only the selected features get values.
    dock.in_place.setChecked(True)
    dock.start()
    _wait(dock)
    written = {f.id() for f in parcels_layer.getFeatures()
               if f["crop_status"] is not None and str(f["crop_status"]) != "NULL"}
    assert written == set(chosen)


def test_project_rasters_are_listed_and_files_in_a_checked_folder_are_not_doubled(qgis_app, tiny_region):
    from qgis.core import QgsProject, QgsRasterLayer

    from thermocrop.plugin.dock import ThermoCropDock

    tif = sorted(p for p in (tiny_region / "scenes").glob("*.tif") if "_SCL" not in p.name)[0]
    QgsProject.instance().addMapLayer(QgsRasterLayer(str(tif), "one scene"))
    widget = ThermoCropDock(restore=False)
    try:
        assert widget.scene_paths() == [str(tif)]
        widget.add_scene_paths([str(tiny_region / "scenes")])
        assert widget.scene_paths() == [str(tiny_region / "scenes")]
    finally:
        widget.shutdown()
        QgsProject.instance().removeAllMapLayers()


def test_only_rasters_that_can_be_sentinel2_are_offered(qgis_app, tiny_region, tmp_path):
    import rasterio
    from qgis.core import QgsProject, QgsRasterLayer
    from qgis.PyQt.QtCore import Qt

    from thermocrop.plugin.dock import ThermoCropDock

    scene = sorted(p for p in (tiny_region / "scenes").glob("*.tif") if "_SCL" not in p.name)[0]
    with rasterio.open(scene) as src:
        crs, transform = src.crs, src.transform
    profile = dict(driver="GTiff", width=8, height=8, crs=crs, transform=transform)
    dem = tmp_path / "dem.tif"
    with rasterio.open(dem, "w", count=1, dtype="float32", **profile) as dst:
        dst.write(np.full((1, 8, 8), 312.5, dtype=np.float32))
    band = tmp_path / "T31TCJ_20170301_B04.tif"
    with rasterio.open(band, "w", count=1, dtype="uint16", **profile) as dst:
        dst.write(np.full((1, 8, 8), 1200, dtype=np.uint16))
    xyz = QgsRasterLayer("type=xyz&url=http://127.0.0.1:9/{z}/{x}/{y}.png&zmax=19&zmin=0", "Basemap", "wms")
    layers = [QgsRasterLayer(str(scene), "scene"), QgsRasterLayer(str(dem), "DEM"),
              QgsRasterLayer(str(band), "red band"), xyz]
    QgsProject.instance().addMapLayers(layers, False)
    widget = ThermoCropDock(restore=False)
    try:
        items = {widget.scene_list.item(i).data(Qt.UserRole): widget.scene_list.item(i)
                 for i in range(widget.scene_list.count())}
        assert set(items) == {str(scene), str(band)}
        assert widget.scene_paths() == [str(scene)]  # the band file is offered, not ticked
        assert "2017" in items[str(scene)].text()
        assert set(widget.left_out) == {"DEM", "Basemap"}
        assert "wms" in widget.left_out["Basemap"] and "none of them a Sentinel-2 band" in widget.left_out["DEM"]
        note = widget.left_out_note.text()
        assert "DEM" in note and "Basemap" in note and not widget.left_out_note.isHidden()
    finally:
        widget.shutdown()
        QgsProject.instance().removeAllMapLayers()


def test_model_card_shows_variant_classes_regions_and_scores(dock, small_bundle, tmp_path):
    from thermocrop.core.model.bundle import load_bundle, save_bundle

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
def test_parcel_layer_removed_while_classifying(dock, parcels_layer, tmp_path):
    from qgis.core import QgsProject

    dock.layer_combo.setLayer(parcels_layer)
    assert dock.start() is not None
    QgsProject.instance().removeMapLayer(parcels_layer.id())
    _wait(dock)
    assert "removed while classifying" in dock.message.text()
    assert dock.output_layer is None and QgsProject.instance().mapLayers() == {}
    assert not (tmp_path / "parcels_classified.gpkg").exists()


def test_counts_list_classes_in_their_colours_and_statuses_last(qgis_app):
    from thermocrop.plugin.dock import ThermoCropDock
    from thermocrop.plugin.styles import UNCLASSIFIED_COLOUR

    widget = ThermoCropDock(restore=False)
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

    widget = ThermoCropDock(restore=False)
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


@pytest.mark.slow
def test_a_parcel_clicked_on_the_map_is_explained_with_its_reference_class(dock, parcels_layer):
    from qgis.gui import QgsMapCanvas

    from thermocrop.plugin.styles import class_label

    canvas = QgsMapCanvas()
    dock.iface = SimpleNamespace(mapCanvas=lambda: canvas)
    dock.pick_button.setEnabled(True)
    dock.layer_combo.setLayer(parcels_layer)
    dock.tabs.setCurrentIndex(1)
    assert dock.reference_field.currentField() == "crop"  # the region's reference classes
    dock.pick_button.setChecked(True)
    assert canvas.mapTool() is dock.map_tool
    feature = next(f for f in parcels_layer.getFeatures() if f.geometry().area() > 20000)
    dock.map_tool.featureIdentified.emit(feature)  # what a click on the parcel gives
    assert dock.explain_task is not None and parcels_layer.selectedFeatureIds() == [feature.id()]
    _wait(dock, attr="explain_task")
    assert dock.last_explanation.fid == feature.id()
    assert f"Reference: {class_label(feature['crop'])}" in dock.explain_message.text()
    dock.pick_button.setChecked(False)
    assert canvas.mapTool() is None
    dock.iface = None


@pytest.mark.slow
def test_sets_are_written_filtered_and_listed_for_field_visits(dock, parcels_layer, tiny_region, region_weather,
                                                              set_bundle, tmp_path):
    import csv

    from qgis.core import QgsProject, QgsVectorLayer
    from qgis.PyQt.QtCore import QVariant

    from thermocrop.core.classify import classify_parcels
    from thermocrop.plugin.dock import ThermoCropDock

    dock.model.setFilePath(str(set_bundle))
    dock.layer_combo.setLayer(parcels_layer)
    dock.coverage.setValue(0.8)
    assert dock.start() is not None
    _wait(dock)
    out = dock.output_layer
    assert out.fields().field("crop_set").type() == QVariant.String
    assert out.fields().field("crop_set_size").type() in (QVariant.Int, QVariant.LongLong)
    # By hand (the bundle's scores, see set_bundle): every class of probability 0.1 or more.
    core = classify_parcels(tiny_region / "parcels.gpkg", tiny_region / "scenes", region_weather, str(set_bundle),
                            id_field="parcel_id")
    expected = {}
    for pid, status, probs in zip(core.parcel_ids, core.status, core.probabilities):
        if status == "ok":
            expected[pid] = int(((probs >= 0.1 - 1e-9) | (probs == probs.max())).sum())
    got = {str(f["parcel_id"]): f["crop_set_size"] for f in out.getFeatures() if f["crop_status"] == "ok"}
    assert got == expected
    doubtful = {pid for pid, size in expected.items() if size > 1}
    assert doubtful and len(doubtful) < len(expected)

    # The filter shows exactly the parcels whose set holds several classes.
    assert dock.several_classes.isEnabled()
    dock.several_classes.setChecked(True)
    assert {str(f["parcel_id"]) for f in out.getFeatures()} == doubtful
    dock.several_classes.setChecked(False)
    assert out.featureCount() == parcels_layer.featureCount() and out.subsetString() == ""

    # The field-visit list: those parcels, largest sets first, then the least confident.
    visits = dock.write_field_visits(str(tmp_path / "visits.csv"))
    assert isinstance(visits, QgsVectorLayer) and visits.id() in QgsProject.instance().mapLayers()
    assert visits.featureCount() == len(doubtful)
    with open(tmp_path / "visits.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["parcel_id"] for r in rows} == doubtful
    ranks = [(-int(r["crop_set_size"]), float(r["confidence"])) for r in rows]
    assert ranks == sorted(ranks)
    conf = dict(zip(core.parcel_ids, core.confidence))
    assert all(float(r["confidence"]) == pytest.approx(conf[r["parcel_id"]], abs=1e-4) for r in rows)
    assert str(len(rows)) in dock.message.text()

    # The form's confidence field changed for the next run: the filter and the list keep to the
    # fields this result has. With both filters on, the layer shows parcels of several classes
    # *and* low confidence; the list still takes those of several classes *or* low confidence.
    dock.conf_field.setText("my_conf")
    threshold = sorted(conf[p] for p in expected)[len(expected) // 2]
    dock.threshold.setValue(threshold)
    dock.low_confidence.setChecked(True)
    dock.several_classes.setChecked(True)
    both = {p for p in doubtful if conf[p] < round(threshold, 2)}
    assert {str(f["parcel_id"]) for f in out.getFeatures()} == both
    either = doubtful | {p for p in expected if conf[p] < dock.threshold.value()}
    assert len(either) > len(both)
    folder = tmp_path / "récolte été"
    folder.mkdir()
    visits = dock.write_field_visits(str(folder / "visites ç.csv"))
    assert isinstance(visits, QgsVectorLayer) and visits.isValid(), dock.message.text()
    assert {str(f["parcel_id"]) for f in visits.getFeatures()} == either
    assert {str(f["parcel_id"]) for f in out.getFeatures()} == both  # the filter is back
    dock.low_confidence.setChecked(False)
    dock.several_classes.setChecked(False)

    # The next dock starts with this coverage.
    again = ThermoCropDock()
    try:
        assert again.coverage.value() == pytest.approx(0.8) and again.prediction_sets.isChecked()
    finally:
        again.shutdown()


def test_the_next_dock_starts_as_of_the_date_and_with_the_decisions_asked_for_last(dock):
    """The as-of date and "When each label was decided" were forgotten between sessions, though
    the dock kept every other choice of the form."""
    from thermocrop.plugin.dock import ThermoCropDock

    dock.inputs.as_of_on.setChecked(True)
    last_scene = dock.inputs.as_of.date()
    chosen = last_scene.addDays(-40)
    dock.inputs.as_of.setDate(chosen)
    dock.inputs.decided.setChecked(True)
    again = ThermoCropDock()
    try:
        assert again.inputs.as_of_on.isChecked() and again.inputs.as_of.isEnabled()
        assert again.inputs.as_of.date() == chosen and again.inputs.decided.isChecked()
    finally:
        again.shutdown()
    # Unticked, the next dock classifies the whole season again.
    dock.inputs.as_of_on.setChecked(False)
    dock.inputs.decided.setChecked(False)
    again = ThermoCropDock()
    try:
        assert not again.inputs.as_of_on.isChecked() and not again.inputs.as_of.isEnabled()
        assert not again.inputs.decided.isChecked()
    finally:
        again.shutdown()


@pytest.mark.slow
def test_a_run_as_of_a_date_starts_at_the_last_scene_and_says_how_far_the_season_had_come(
        dock, parcels_layer, tiny_region):
    """The date started at today (years from the scenes) and the season's status reached only the
    Python log: the dock's message gave no sign that the run was cut at all."""
    import re

    from qgis.PyQt.QtCore import QDate

    dates = sorted({re.search(r"_(\d{8})T", p.name).group(1) for p in (tiny_region / "scenes").iterdir()})
    dock.layer_combo.setLayer(parcels_layer)
    dock.inputs.as_of_on.setChecked(True)
    assert dock.inputs.as_of.date().toString("yyyyMMdd") == dates[-1]
    middle = dates[len(dates) // 2]
    dock.inputs.as_of.setDate(QDate.fromString(middle, "yyyyMMdd"))
    assert dock.start() is not None
    _wait(dock)
    day = f"{middle[:4]}-{middle[4:6]}-{middle[6:]}"
    text = dock.message.text()
    assert f"As of {day}: {len(dates) // 2 + 1} of {len(dates)} acquisitions, GDD" in text, text
    assert "The model: " in text
    # Explained afterwards, a parcel is the map's: the scenes up to the date, the run's model.
    out = dock.output_layer
    feature = next(f for f in out.getFeatures() if f["crop_status"] == "ok")
    dock.explain(feature.id())
    _wait(dock, attr="explain_task")
    ex = dock.last_explanation
    assert str(max(ex.dates)) <= day and len(ex.dates) == len(dates) // 2 + 1
    assert float(np.max(ex.probabilities)) == pytest.approx(feature["crop_conf"], abs=1e-4)
    dock.inputs.as_of_on.setChecked(False)


@pytest.mark.slow
def test_a_run_with_class_shares_is_explained_as_the_map_has_it(dock, parcels_layer, tmp_path):
    """With class shares, the map's confidences are the shares' adjusted probabilities; Explain
    gave the model's own, so the explained parcel disagreed with its crop_conf."""
    shares = tmp_path / "shares.csv"
    shares.write_text("class,share\nmeadow,10\ncorn,40\nwinter_wheat,30\nunknown,20\n", encoding="utf-8")
    dock.layer_combo.setLayer(parcels_layer)
    dock.inputs.class_shares.setFilePath(str(shares))
    assert dock.start() is not None, dock.message.text()
    _wait(dock)
    factors = dock.last_result.share_factors
    assert factors is not None and factors.max() == pytest.approx(1.0) and factors.min() < 0.9
    out = dock.output_layer
    feature = next(f for f in out.getFeatures() if f["crop_status"] == "ok")
    dock.explain(feature.id())
    _wait(dock, attr="explain_task")
    ex = dock.last_explanation
    assert ex.share_factors is factors
    assert float(np.max(ex.probabilities)) == pytest.approx(feature["crop_conf"], abs=1e-4)
    assert dock.last_bundle.classes[int(np.argmax(ex.probabilities))] == feature["crop_pred"]
    np.testing.assert_allclose(np.sum(ex.probabilities), 1.0, rtol=1e-5)
    dock.inputs.class_shares.setFilePath("")


@pytest.mark.slow
def test_a_run_as_of_june_needs_no_weather_for_the_later_scenes(dock, parcels_layer, tiny_region, region_weather,
                                                                tmp_path):
    """The dock's own input check asked for temperatures to the last scene listed, so a run as of
    June with the weather of the year so far was refused, as the command line's no longer was."""
    import xarray as xr
    from qgis.PyQt.QtCore import QDate

    with xr.open_dataset(region_weather) as ds:
        ds.sel(time=slice(None, "2017-06-30")).load().to_netcdf(tmp_path / "to_june.nc")
    dock.weather.setFilePath(str(tmp_path / "to_june.nc"))
    dock.layer_combo.setLayer(parcels_layer)
    dock.inputs.as_of_on.setChecked(True)
    dock.inputs.as_of.setDate(QDate(2017, 6, 20))
    assert dock.start() is not None, dock.message.text()
    _wait(dock)
    assert "As of 2017-06-20:" in dock.message.text() and dock.output_layer is not None
    # The whole season with that weather is still refused, naming the days missing.
    dock.inputs.as_of_on.setChecked(False)
    assert dock.start() is None and "does not cover 2017-07-01" in dock.message.text()


@pytest.mark.slow
def test_calibrate_on_the_accuracy_tab_chooses_the_new_model(dock, parcels_layer, small_bundle,
                                                             calibrated_small_bundle, tmp_path):
    from thermocrop.core.model.bundle import load_bundle

    dock.accuracy_widget.set_layer(parcels_layer, reference_field="crop")
    panel = dock.calibrate_panel
    assert panel.floor_box.text() == "GDD floor: the model's own" and panel.request(str(tmp_path / "x.tcm")).gdd_floor is None
    task = panel.calibrate()
    assert task is not None and not panel.calibrate_button.isEnabled() and panel.cancel_button.isEnabled()
    _wait(panel)
    # The project is not saved: beside the parcel file, named after the model.
    out = tmp_path / "small_calibrated.tcm"
    assert out.is_file() and dock.model.filePath() == str(out)
    # The same calibration as the command line's route on the parcel file.
    mine, theirs = load_bundle(out).calibration, load_bundle(calibrated_small_bundle).calibration
    assert mine.parcels == theirs.parcels and mine.temperature == pytest.approx(theirs.temperature, rel=1e-4)
    assert "temperature" in panel.status.text() and "->" in panel.status.text()
    assert "filter" not in panel.status.text()

    # On a filtered layer (the Classify tab's "only below" filters the result layer so): the
    # calibration is fitted on the features shown, and says so.
    total = parcels_layer.featureCount()
    assert parcels_layer.setSubsetString('"parcel_id" <> \'\'')
    try:
        task = panel.calibrate()
        assert task is not None
        _wait(panel)
        text = panel.status.text()
        assert f"Only the {total} features the layer's filter shows were used" in text, text
        assert "\"parcel_id\" <> ''" in text
    finally:
        parcels_layer.setSubsetString("")


def test_calibrate_on_a_selection_uses_it_and_shows_what_the_run_said(dock, parcels_layer, tmp_path):
    """The dock read every feature of a layer with a selection, and its message left out what the
    run said (the season stages, parcels left out): those went to Python's log only."""
    from thermocrop.core.model.bundle import load_bundle

    dock.accuracy_widget.set_layer(parcels_layer, reference_field="crop")
    panel = dock.calibrate_panel
    chosen = sorted(f.id() for f in parcels_layer.getFeatures())[:70]
    parcels_layer.selectByIds(chosen)
    try:
        assert panel.calibrate() is not None
        _wait(panel)
    finally:
        parcels_layer.removeSelection()
    text = panel.status.text()
    assert "Only the 70 selected features were used" in text, text
    calibration = load_bundle(dock.model.filePath()).calibration
    assert calibration.parcels <= 70 and f"Calibrated on {calibration.parcels} reference parcels" in text
    assert "Season stages fitted on the reference parcels as of each date" in text, text
    assert panel.progress.value() == 100
    # Another layer chosen: the text of the run on this one goes.
    dock.accuracy_widget.set_layer(None)
    assert panel.status.text() == "" and dock.season_panel.status.text() == ""


def test_a_cancel_pressed_as_a_task_ended_reports_what_it_did():
    """A Cancel pressed after the work ended (the model written) made the dock say that nothing
    was written."""
    from thermocrop.plugin.task import ThermoCropTask

    class Done(ThermoCropTask):
        def work(self, progress):
            progress(1.0)

    task = Done("test", None)
    assert task.run() is True
    task.cancel()
    task.finished(True)
    assert not task.cancelled and task.error is None
    stopped = Done("test", None)
    stopped.cancel()
    assert stopped.run() is False
    stopped.finished(False)
    assert stopped.cancelled


@pytest.mark.slow
def test_accuracy_through_the_season_on_the_accuracy_tab(dock, parcels_layer, tiny_region, region_weather,
                                                        small_bundle, tmp_path):
    import csv

    from test_inseason_algorithm import whole_season_accuracy

    from thermocrop.core.scenes.local import find_scenes

    dock.accuracy_widget.set_layer(parcels_layer, reference_field="crop")
    panel = dock.season_panel
    task = panel.start()
    assert task is not None and not panel.run_button.isEnabled() and panel.cancel_button.isEnabled()
    _wait(panel)
    assert panel.run_button.isEnabled() and not panel.cancel_button.isEnabled()
    # The project is not saved: beside the parcel file, named after the layer.
    out = tmp_path / "parcels_inseason"
    rows = list(csv.DictReader((out / "inseason.csv").open(encoding="utf-8")))
    assert len(rows) == len(find_scenes(str(tiny_region / "scenes")))
    oa, parcels = whole_season_accuracy(tiny_region, region_weather, small_bundle)
    assert float(rows[-1]["overall_accuracy"]) == pytest.approx(oa, abs=5e-5)
    text = panel.status.text()
    assert f"{parcels} reference parcels" in text and f"{oa:.1%}" in text and str(out) in text
    assert text.startswith(f"{small_bundle.name} on ")  # which model was scored
    # The date at which OA first reaches 90 % of the whole season's, read back from the table.
    first = next(r for r in rows if float(r["overall_accuracy"]) >= 0.9 * float(rows[-1]["overall_accuracy"]))
    assert first["date"] in text
    assert not panel.figure.isHidden() and panel.figure.pixmap().width() > 100
    # Scaled to the dock, the figure is small: a link opens the file itself.
    from qgis.PyQt.QtCore import QUrl

    assert not panel.figure_link.isHidden() and panel.figure_link.openExternalLinks()
    assert f'href="{QUrl.fromLocalFile(str(out / "inseason.png")).toString()}"' in panel.figure_link.text()
    # A second run goes to a new folder; a cancelled one writes nothing.
    task = panel.start()
    task.cancel()
    _wait(panel)
    assert "cancelled" in panel.status.text() and not (tmp_path / "parcels_inseason_2" / "inseason.csv").exists()


def test_accuracy_through_the_season_says_what_is_missing(dock, parcels_layer):
    panel = dock.season_panel
    dock.accuracy_widget.set_layer(None)
    assert panel.start() is None and "reference parcels" in panel.status.text()
    dock.accuracy_widget.set_layer(parcels_layer, reference_field="crop")
    dock.weather.setFilePath("")
    assert panel.start() is None and "temperature" in panel.status.text()


def test_calibrate_says_what_is_missing(dock, parcels_layer):
    panel = dock.calibrate_panel
    dock.accuracy_widget.set_layer(None)
    assert panel.calibrate() is None and "reference parcels" in panel.status.text()
    dock.accuracy_widget.set_layer(parcels_layer, reference_field="crop")
    dock.weather.setFilePath("")
    assert panel.calibrate() is None and "temperature" in panel.status.text()


def test_calibrate_with_the_file_dialog_cancelled_says_so(dock, tiny_region):
    """A memory layer in a project never saved: the dock asks where the model goes. Cancelled, the
    status kept the last calibration's 'Saved to ...' as if this one had run."""
    import geopandas as gpd
    from qgis.core import QgsFeature, QgsField, QgsGeometry, QgsProject, QgsVectorLayer
    from qgis.PyQt.QtCore import QVariant

    frame = gpd.read_file(tiny_region / "parcels.gpkg")
    layer = QgsVectorLayer(f"Polygon?crs={frame.crs.to_string()}", "drawn", "memory")
    layer.dataProvider().addAttributes([QgsField("crop", QVariant.String)])
    layer.updateFields()
    features = []
    for crop, geometry in zip(frame["crop"], frame.geometry):
        feature = QgsFeature(layer.fields())
        feature.setGeometry(QgsGeometry.fromWkt(geometry.wkt))
        feature.setAttributes([crop])
        features.append(feature)
    layer.dataProvider().addFeatures(features)
    QgsProject.instance().addMapLayer(layer)
    try:
        dock.accuracy_widget.set_layer(layer, reference_field="crop")
        panel = dock.calibrate_panel
        panel.status.setText("Calibrated on 120 reference parcels ... Saved to /tmp/x.tcm")
        asked = []
        panel.ask_path = lambda default: asked.append(default) or ""
        assert panel.calibrate() is None and panel.task is None
        assert asked and asked[0].endswith("_calibrated.tcm")
        assert "no file was chosen" in panel.status.text()
    finally:
        QgsProject.instance().removeMapLayer(layer.id())


def test_a_calibration_s_result_is_logged_once(dock, parcels_layer, monkeypatch):
    """The panel logged its result and the dock's status panel logged it again."""
    from types import SimpleNamespace

    from qgis.core import QgsApplication

    from thermocrop.core.model.calibration import Calibration

    logged = []
    QgsApplication.messageLog().messageReceived.connect(lambda message, tag, level: logged.append(message))
    panel = dock.calibrate_panel
    run = SimpleNamespace(calibration=Calibration(temperature=0.7, scores=(0.1,), parcels=60, source="s",
                                                  ece_before=0.2, ece_after=0.05),
                          path="/tmp/x_calibrated.tcm", counts={"corn": 60}, skipped={}, current=None)
    monkeypatch.setattr(panel, "use_model", lambda path: None)
    panel._finished(SimpleNamespace(cancelled=False, run_result=run, error=None, reports=[]))
    QgsApplication.processEvents()
    assert sum("Calibrated on 60 reference parcels" in m for m in logged) == 1, logged


def test_a_free_default_calibration_path_is_not_replaced_if_taken_during_the_run(dock, parcels_layer, tmp_path):
    """The default name is free when asked for; a file that takes it while the run writes is not
    replaced (the run refuses), while a path confirmed in the save dialog is."""
    dock.accuracy_widget.set_layer(parcels_layer, reference_field="crop")
    panel = dock.calibrate_panel
    request = panel.request()
    assert request is not None and not request.overwrite and not (tmp_path / request.out).exists()
    chosen = panel.request(str(tmp_path / "mine.tcm"))
    assert chosen.out == str(tmp_path / "mine.tcm") and chosen.overwrite


@pytest.mark.parametrize("typed, expected", [("2017-05-01", "2017-05-01"), ("20170501", "2017-05-01"),
                                             ("2016-2-3", "2016-02-03"), ("2019-12-31", "2019-12-31")])
def test_a_whole_date_typed_over_the_as_of_date_is_taken(dock, typed, expected):
    """Qt's date field took a date typed over it section by section: "2017-05-01" typed over the
    whole of "2018-08-30" gave 2018-05-01."""
    from qgis.PyQt.QtCore import QDate, Qt
    from qgis.PyQt.QtTest import QTest

    field = dock.inputs.as_of
    dock.inputs.as_of_on.setChecked(True)
    field.setDate(QDate(2018, 8, 30))
    field.setFocus()
    field.lineEdit().selectAll()
    QTest.keyClicks(field, typed)
    QTest.keyClick(field, Qt.Key_Return)
    assert field.date().toString("yyyy-MM-dd") == expected
    # One section typed over alone still works as in any Qt date field.
    field.setSelectedSection(field.MonthSection)
    QTest.keyClicks(field, "07")
    assert field.date().toString("yyyy-MM-dd") == expected[:5] + "07" + expected[7:]


@pytest.mark.parametrize("pasted, expected", [("2017-05-01", "2017-05-01"), (" 2017/5/1 ", "2017-05-01"),
                                              ("20170501", "2017-05-01"), ("2014-05-01", "2018-08-30"),
                                              ("01-05-2017", "2018-08-30"), ("2017-02-30", "2018-08-30")])
def test_a_date_pasted_over_the_as_of_date_is_taken_whole_or_not_at_all(dock, pasted, expected):
    """Qt pasted into the section under the cursor: "2017-05-01" pasted over the whole of the
    field gave 2017-05-30, four weeks more of scenes, without a word."""
    from qgis.PyQt.QtCore import QDate, Qt
    from qgis.PyQt.QtTest import QTest
    from qgis.PyQt.QtWidgets import QApplication

    field = dock.inputs.as_of
    dock.inputs.as_of_on.setChecked(True)
    field.setDate(QDate(2018, 8, 30))
    field.setFocus()
    field.lineEdit().selectAll()
    QApplication.clipboard().setText(pasted)
    QTest.keyClick(field, Qt.Key_V, Qt.ControlModifier)
    assert field.date().toString("yyyy-MM-dd") == expected
