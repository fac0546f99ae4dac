"""The dock's inputs: typed paths, scenes added and removed by hand, the scene file filter, the
settings a new dock finds, and temperatures from a weather service (a loopback Open-Meteo)."""

from __future__ import annotations

import fnmatch
import importlib.util
import math
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.qgis


def _loopback():
    """``tests/remote/loopback.py``, loaded from its file (tests/plugin is not beside it)."""
    name = "thermocrop_tests_loopback"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "remote" / "loopback.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def fresh_settings(qgis_app):
    from qgis.core import QgsSettings

    QgsSettings().remove("thermocrop/dock")
    yield
    QgsSettings().remove("thermocrop/dock")


@pytest.fixture
def make_dock(qgis_app):
    from thermocrop.plugin.dock import ThermoCropDock

    docks = []

    def make(**kwargs):
        docks.append(ThermoCropDock(**kwargs))
        docks[-1].confirm_overwrite = lambda names: True
        return docks[-1]

    yield make
    for dock in docks:
        dock.shutdown()
        dock.deleteLater()


def _listed(dock):
    return [dock.scene_list.item(i).data(256) for i in range(dock.scene_list.count())]  # Qt.UserRole


def test_a_typed_weather_path_keeps_its_order(make_dock):
    from qgis.PyQt.QtTest import QTest

    dock = make_dock()
    QTest.keyClicks(dock.weather.lineEdit(), "/tmp/abc")
    assert dock.weather.filePath() == "/tmp/abc"
    assert dock.weather.lineEdit().cursorPosition() == len("/tmp/abc")
    # A path chosen (in the dialog or set) is shown from its left end.
    dock.weather.setFilePath("/data/weather/a_long_name.nc")
    assert dock.weather.lineEdit().cursorPosition() == 0


def test_scenes_added_by_hand_can_be_removed_and_cleared(make_dock, tmp_path, tiny_region):
    from qgis.core import QgsProject, QgsRasterLayer

    scene = sorted(p for p in (tiny_region / "scenes").glob("*.tif") if not p.stem.endswith("_SCL"))[0]
    layer = QgsRasterLayer(str(scene), "a scene layer", "gdal")
    QgsProject.instance().addMapLayer(layer)
    try:
        dock = make_dock(restore=False)
        paths = [str(tmp_path / name) for name in ("a", "b", "c")]
        for path in paths:
            Path(path).mkdir()
        dock.add_scene_paths(paths)
        assert _listed(dock) == [str(scene), *paths]
        dock.scene_list.item(2).setSelected(True)  # b
        dock.scene_list.item(0).setSelected(True)  # the project's layer: it stays
        assert dock.remove_selected_scenes() == 1
        assert _listed(dock) == [str(scene), paths[0], paths[2]]
        assert dock.clear_added_scenes() == 2
        assert _listed(dock) == [str(scene)]
        assert dock.scene_paths() == [str(scene)]
    finally:
        QgsProject.instance().removeAllMapLayers()


def test_the_scene_file_filter_offers_what_the_core_reads(make_dock, tmp_path):
    from thermocrop.core.scenes.local import RASTER_SUFFIXES, _is_safe
    from thermocrop.plugin.layers import SCENE_FILE_FILTER, scene_source

    first = SCENE_FILE_FILTER.split(";;")[0]
    patterns = first[first.index("(") + 1:first.index(")")].split()

    def offered(name):
        return any(fnmatch.fnmatchcase(name, p) for p in patterns)

    product = "S2A_MSIL1C_20210512T104021_N0300_R008_T31TCJ_20210512T125304.zip"
    assert _is_safe(Path(product)) and offered(product)
    assert offered("MTD_MSIL2A.xml") and not offered("notes.xml")
    for suffix in (".tif", ".tiff", ".jp2"):
        assert suffix in RASTER_SUFFIXES and offered("T31TCJ_20210512T104021_B04" + suffix)
    # The metadata file picked in the dialog stands for its .SAFE folder, which the core reads.
    safe = tmp_path / "S2A_MSIL2A_20210512T104021_N0300_R008_T31TCJ_20210512T125304.SAFE"
    safe.mkdir()
    (safe / "MTD_MSIL2A.xml").write_text("<x/>")
    assert scene_source(safe / "MTD_MSIL2A.xml") == str(safe)
    assert scene_source(tmp_path / "scene.tif") == str(tmp_path / "scene.tif")
    dock = make_dock(restore=False)
    dock.add_scene_paths([str(safe / "MTD_MSIL2A.xml"), str(safe)])
    assert _listed(dock) == [str(safe)]


def test_a_new_dock_finds_the_scenes_weather_and_service_of_the_last_one(make_dock, tmp_path, region_weather,
                                                                           tiny_region):
    first = make_dock()
    folder = tmp_path / "more scenes"
    folder.mkdir()
    first.add_scene_paths([str(tiny_region / "scenes"), str(folder)])
    first.scene_list.item(first.scene_list.count() - 1).setCheckState(0)  # Qt.Unchecked
    first.weather.setFilePath(str(region_weather))
    first.set_weather_service("open-meteo")
    # No run was started: the form is kept as it changes (as when QGIS is closed now).
    second = make_dock()
    assert _listed(second) == [str(tiny_region / "scenes"), str(folder)]
    assert second.scene_paths() == [str(tiny_region / "scenes")]
    assert second.weather.filePath() == str(region_weather)
    assert second.weather_service() == "open-meteo"
    # A dock that does not restore keeps nothing either.
    third = make_dock(restore=False)
    third.clear_added_scenes()
    assert _listed(make_dock()) == [str(tiny_region / "scenes"), str(folder)]


def test_no_temperature_file_names_both_ways(make_dock, tiny_region):
    from qgis.core import QgsProject, QgsVectorLayer

    layer = QgsVectorLayer(str(tiny_region / "parcels.gpkg"), "parcels", "ogr")
    QgsProject.instance().addMapLayer(layer)
    try:
        dock = make_dock(restore=False)
        dock.layer_combo.setLayer(layer)
        dock.add_scene_paths([str(tiny_region / "scenes")])
        assert dock.start() is None
        assert "temperature file" in dock.message.text() and "weather service" in dock.message.text()
    finally:
        QgsProject.instance().removeAllMapLayers()


@pytest.mark.slow
def test_open_meteo_gives_the_run_its_temperature_file(make_dock, tiny_region, small_bundle, tmp_path, monkeypatch):
    import geopandas as gpd
    from qgis.core import QgsApplication, QgsProject, QgsVectorLayer

    from thermocrop.core.scenes.local import find_scenes
    from thermocrop.core.thermal.weather import read_daily_temperature

    loopback = _loopback()
    shutil.copy(tiny_region / "parcels.gpkg", tmp_path / "parcels.gpkg")
    layer = QgsVectorLayer(str(tmp_path / "parcels.gpkg"), "parcels", "ogr")
    QgsProject.instance().addMapLayer(layer)
    monkeypatch.setenv("THERMOCROP_CACHE", str(tmp_path / "cache"))
    try:
        with loopback.LoopbackServer() as server:
            monkeypatch.setenv("THERMOCROP_OPEN_METEO_URL", server.url + "/v1/archive")
            dock = make_dock(restore=False)
            dock.layer_combo.setLayer(layer)
            dock.add_scene_paths([str(tiny_region / "scenes")])
            dock.model.setFilePath(str(small_bundle))
            dock.set_weather_service("open-meteo")
            assert dock.weather.filePath() == ""
            assert dock.start() is not None
            end = time.monotonic() + 600
            while dock.task is not None:
                QgsApplication.processEvents()
                time.sleep(0.02)
                assert time.monotonic() < end, "the run did not finish"
            assert server.open_meteo_requests, "Open-Meteo was not asked"
        fetched = Path(dock.weather.filePath())
        assert fetched.is_file() and (tmp_path / "cache") in fetched.parents
        assert "Classified" in dock.message.text(), dock.message.text()
        assert dock.output_layer is not None and dock.output_layer.featureCount() == layer.featureCount()
        # The file holds what the service answered for a parcel's 0.1-degree cell.
        parcels = gpd.read_file(tmp_path / "parcels.gpkg")
        point = parcels.geometry.representative_point().to_crs("EPSG:4326").iloc[0]
        day = np.datetime64(find_scenes(tiny_region / "scenes")[0].date, "D")
        weather = read_daily_temperature(fetched, [point.x], [point.y], "EPSG:4326", day, day)
        # Asked for with four decimals, Open-Meteo answers for its grid point nearest the cell centre.
        lat = round(round((math.floor(point.y / 0.1) + 0.5) * 0.1, 4) / 0.1) * 0.1
        lon = round(round((math.floor(point.x / 0.1) + 0.5) * 0.1, 4) / 0.1) * 0.1
        tmin, tmax = loopback.open_meteo_temperature(lat, lon, day.astype(object))
        assert weather.tmin[0, 0] == pytest.approx(tmin, abs=1e-3)
        assert weather.tmax[0, 0] == pytest.approx(tmax, abs=1e-3)
    finally:
        QgsProject.instance().removeAllMapLayers()


def test_every_page_fits_the_default_dock_width_and_long_messages_wrap(make_dock, tiny_region):
    from qgis.PyQt.QtWidgets import QScrollArea

    dock = make_dock(restore=False)
    # The dock opens 400 px wide; its pages get that less their margins and a vertical scroll bar.
    room = 400 - 40
    for i in range(dock.tabs.count()):
        page = dock.tabs.widget(i)
        page = page.widget() if isinstance(page, QScrollArea) else page
        assert page.minimumSizeHint().width() <= room, (dock.tabs.tabText(i), page.minimumSizeHint().width())
    dock.show_counts({"winter_wheat": 120, "spring_barley": 30, "(outside_scenes)": 3}, {})
    dock.results_box.setVisible(True)
    assert dock.classify_scroll.widget().minimumSizeHint().width() <= room
    before = dock.widget().minimumSizeHint().width()
    path = "/" + "/".join(["a_very_long_folder_name_without_spaces"] * 12) + "/weather.nc"
    dock.say(f"Not started: {path} cannot be read", 2)  # Qgis.Critical
    assert dock.widget().minimumSizeHint().width() == before
    assert dock.message.toolTip().endswith("cannot be read")
    # A report of many lines (an as-of run's) shows nine at most; the tooltip holds it whole.
    from thermocrop.plugin.dock.status_panel import MESSAGE_LINES

    report = "\n".join(f"line {i} of a long report of the run" for i in range(30))
    dock.say(report, 0)  # Qgis.Info
    line = dock.message.fontMetrics().lineSpacing()
    assert dock.message.sizeHint().height() > 20 * line  # it would take them all
    assert dock.message.maximumHeight() <= (MESSAGE_LINES + 1) * line and MESSAGE_LINES == 9
    assert dock.message.toolTip() == report
    # The counts name classes in words; their ids stay what counts_text reports.
    names = [dock.counts.topLevelItem(i).text(0) for i in range(dock.counts.topLevelItemCount())]
    assert names == ["Spring barley", "Winter wheat", "(outside_scenes)"]
    assert dock.counts_text().splitlines()[0] == "spring_barley: 30"


def test_a_rerun_layer_gets_its_own_name(qgis_app, tiny_region):
    from qgis.core import QgsProject, QgsVectorLayer

    from thermocrop.plugin.layer_writer import unique_layer_name

    try:
        assert unique_layer_name("parcels (classified)") == "parcels (classified)"
        QgsProject.instance().addMapLayer(QgsVectorLayer(str(tiny_region / "parcels.gpkg"), "parcels (classified)",
                                                         "ogr"))
        assert unique_layer_name("parcels (classified)") == "parcels (classified 2)"
        QgsProject.instance().addMapLayer(QgsVectorLayer(str(tiny_region / "parcels.gpkg"),
                                                         "parcels (classified 2)", "ogr"))
        assert unique_layer_name("parcels (classified)") == "parcels (classified 3)"
        assert unique_layer_name("result") == "result"
    finally:
        QgsProject.instance().removeAllMapLayers()


def test_without_a_model_the_card_shows_the_model_shipped_for_the_scenes_level(make_dock, tmp_path, tiny_region):
    from qgis.PyQt.QtCore import Qt

    import thermocrop
    from thermocrop.core.model.bundle import default_bundle_path, load_bundle
    from thermocrop.core.scenes.stac import ItemSummary

    l1c_model, l2a_model = (f"<b>{default_bundle_path(level).name}</b>" for level in ("L1C", "L2A"))
    dock = make_dock(restore=False)
    assert f"{l1c_model} (shipped, for L1C scenes)" in dock.model_card.text()  # no scenes yet
    floor = load_bundle(default_bundle_path("L1C")).config.gdd["floor"]
    assert f"acquisitions before {floor:,.0f} GDD (its GDD floor)" in dock.model_card.text()
    dock.add_scene_paths([str(tiny_region / "scenes")])  # a folder of L2A products (MSIL2A in their names)
    assert f"{l2a_model} (shipped, for L2A scenes)" in dock.model_card.text()
    dock.scene_list.item(0).setCheckState(Qt.Unchecked)
    assert l1c_model in dock.model_card.text()
    dock.scene_list.item(0).setCheckState(Qt.Checked)
    assert l2a_model in dock.model_card.text()
    # An L1C product beside them: a mix keeps the L1C model (the run warns about the levels).
    l1c = tmp_path / "S2B_MSIL1C_20170415T103019_N0204_R108_T31TCJ_20170415T103020.tif"
    l1c.write_bytes(b"")
    dock.add_scene_paths([str(l1c)])
    assert l1c_model in dock.model_card.text()
    # A model chosen is shown whatever the scenes.
    dock.clear_added_scenes()
    dock.add_scene_paths([str(tiny_region / "scenes")])
    given = Path(thermocrop.__file__).parent / "resources" / "models" / "default.tcm"
    dock.model.setFilePath(str(given))
    assert "<b>default.tcm</b>:" in dock.model_card.text() and "shipped" not in dock.model_card.text()
    assert "GDD floor" not in dock.model_card.text()  # the ensemble has none
    dock.model.setFilePath("")
    assert l2a_model in dock.model_card.text()
    # Catalogue items: their levels.
    dock.catalog.setChecked(True)
    items = tmp_path / "items.json"
    items.write_text("{}")
    dock.catalog.show_results([ItemSummary("S2A_31TCJ_20170501_0_L2A", np.datetime64("2017-05-01"), "31TCJ", 10.0,
                                           "sentinel-2a", "L2A")], str(items))
    assert l2a_model in dock.model_card.text()
    dock.catalog.show_results([ItemSummary("S2A_31TCJ_20170501_0_L1C", np.datetime64("2017-05-01"), "31TCJ", 10.0,
                                           "sentinel-2a", "L1C")], str(items))
    assert l1c_model in dock.model_card.text()
