"""Sentinel-2 from a STAC catalogue in QGIS, against the loopback STAC API and Open-Meteo server
of ``tests/remote``: the Toolbox's search writes what ``thermocrop scenes search`` writes,
Classify parcels from that collection labels as ``classify --stac`` does, the dock's search task
lists the dates with their cloud cover and a run reads them, and credentials come from QGIS's
authentication manager."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.qgis

CLOUDS = (5, 70, 20, 90, 10, 40)  # of the six published dates; 4 of them at most 60 %
URL_CHOICE = 3  # "Another STAC API"


class _Catalogue:
    """The loopback catalogue served by ``catalogue_server.py`` in a process of its own (an HTTP
    server in the test process could not answer GDAL calls that hold the interpreter lock)."""

    def __init__(self, region: Path, root: Path) -> None:
        import subprocess

        script = Path(__file__).with_name("catalogue_server.py")
        self.process = subprocess.Popen([sys.executable, str(script), str(region), str(root), *map(str, CLOUDS)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self.process.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), "the catalogue server did not start"

    def _ask(self, line: str) -> str:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def total_bytes(self, prefix: str) -> int:
        return int(self._ask(f"bytes {prefix}"))

    def total_requests(self, prefix: str) -> int:
        return int(self._ask(f"requests {prefix}"))

    def reset_counters(self) -> None:
        assert self._ask("reset") == "ok"

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def catalogue(tiny_region, tmp_path_factory):
    """The tiny region's first six scenes as Earth Search-style items and COGs on 127.0.0.1."""
    server = _Catalogue(tiny_region, tmp_path_factory.mktemp("qgis-catalogue"))
    yield server
    server.close()


@pytest.fixture
def loopback_services(catalogue, tmp_path, monkeypatch):
    monkeypatch.setenv("THERMOCROP_OPEN_METEO_URL", catalogue.url + "/v1/archive")
    monkeypatch.setenv("THERMOCROP_CACHE", str(tmp_path / "cache"))
    from osgeo import gdal

    gdal.VSICurlClearCache()
    catalogue.reset_counters()
    return catalogue


def _run(name, params, feedback=None):
    import processing
    from qgis.core import QgsProcessingContext

    context = QgsProcessingContext()
    return processing.run(name, params, context=context, feedback=feedback)


def _search_cli(parcels, server, out):
    from thermocrop.cli.main import main

    assert main(["scenes", "search", "--parcels", str(parcels), "--season", "2017", "--catalog",
                 server.url + "/stac", "--max-cloud", "60", "--out", str(out)]) == 0
    return json.loads(Path(out).read_text())


@pytest.mark.slow
def test_search_writes_the_clis_collection_and_classify_from_it_labels_as_the_cli(
        provider, loopback_services, tiny_region, small_bundle, tmp_path, log_feedback):
    import geopandas as gpd

    from thermocrop.cli.main import main

    server = loopback_services
    parcels = tiny_region / "parcels.gpkg"
    out = tmp_path / "qgis-items.json"
    log = log_feedback()
    result = _run("thermocrop:searchcatalog", {
        "INPUT": str(parcels), "CATALOG": URL_CHOICE, "URL": server.url + "/stac", "SEASON": 2017,
        "MAX_CLOUD": 60, "OUTPUT": str(out)}, log)
    assert result["ITEMS"] == 4 and result["DATES"] == 4
    cli = _search_cli(parcels, server, tmp_path / "cli-items.json")
    assert json.loads(out.read_text()) == cli
    # The log lists every date with its tile and cloud cover.
    kept = sorted((f["properties"]["datetime"][:10], f["properties"]["eo:cloud_cover"]) for f in cli["features"])
    assert sorted(c for _, c in kept) == [5.0, 10.0, 20.0, 40.0]
    for date, cloud in kept:
        assert any(line.startswith(f"  {date}  31TCJ  cloud {cloud:.1f} %") for line in log.lines), log.lines
    assert "4 items on 4 dates, tiles 31TCJ" in log.lines

    # Classify parcels from the saved collection, temperatures from Open-Meteo, against the CLI's --stac.
    classified = tmp_path / "qgis.gpkg"
    log = log_feedback()
    _run("thermocrop:classifyparcels", {
        "INPUT": str(parcels), "STAC_ITEMS": str(out), "WEATHER_SERVICE": 1, "MODEL": str(small_bundle),
        "OUTPUT": str(classified)}, log)
    assert any("4 dates from 4 products" in line for line in log.lines)
    assert any(line.startswith("Temperatures from open-meteo: ") for line in log.lines)
    assert server.total_bytes("/files/") > 0
    by_cli = tmp_path / "cli.gpkg"
    assert main(["classify", "--parcels", str(parcels), "--stac", str(tmp_path / "cli-items.json"), "--weather",
                 "open-meteo", "--model", str(small_bundle), "--out", str(by_cli)]) == 0
    ours, theirs = gpd.read_file(classified), gpd.read_file(by_cli)
    assert list(ours["parcel_id"]) == list(theirs["parcel_id"])
    assert (ours["crop_status"] == "ok").sum() > 90
    assert list(ours["crop_pred"].fillna("")) == list(theirs["crop_pred"].fillna(""))
    assert list(ours["crop_status"]) == list(theirs["crop_status"])

    # Growing degree days at the collection's dates, without reading an image.
    server.reset_counters()
    gdd = tmp_path / "gdd.gpkg"
    _run("thermocrop:parcelgdd", {"INPUT": str(parcels), "STAC_ITEMS": str(out), "WEATHER_SERVICE": 1,
                                  "OUTPUT": str(gdd)})
    dates = sorted(d.replace("-", "") for d, _ in kept)
    assert [c for c in gpd.read_file(gdd).columns if c.startswith("gdd_")] == [f"gdd_{d}" for d in dates]
    assert server.total_requests("/files/") == 0


def test_one_source_of_scenes_and_of_temperatures(provider, catalogue, tiny_region, region_weather, tmp_path):
    from qgis.core import QgsProcessingContext

    items = tmp_path / "items.json"
    _search_cli(tiny_region / "parcels.gpkg", catalogue, items)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"classes": ["wheat", "maize"]}))
    base = {"INPUT": str(tiny_region / "parcels.gpkg"), "OUTPUT": str(tmp_path / "o.gpkg")}
    for name in ("classifyparcels", "exporttrainingdata", "parcelgdd"):
        algorithm = provider.algorithm(name)
        extra = {"LABEL_FIELD": "crop", "OUTPUT": str(tmp_path / "d")} if name == "exporttrainingdata" else {}
        params = dict(base, **extra)
        ok, message = algorithm.checkParameterValues(dict(params, STAC_ITEMS=str(items),
                                                          SCENE_FOLDER=str(tiny_region / "scenes"),
                                                          WEATHER=str(region_weather)), QgsProcessingContext())
        assert not ok and "not both" in message and "STAC items" in message, (name, message)
        ok, message = algorithm.checkParameterValues(dict(params, STAC_ITEMS=str(items), WEATHER=str(region_weather),
                                                          WEATHER_SERVICE=1), QgsProcessingContext())
        assert not ok and "open-meteo" in message and "not both" in message, (name, message)
        ok, message = algorithm.checkParameterValues(dict(params, STAC_ITEMS=str(items)), QgsProcessingContext())
        assert not ok and "temperature file" in message, (name, message)
        ok, message = algorithm.checkParameterValues(dict(params, STAC_ITEMS=str(other),
                                                          WEATHER_SERVICE=1), QgsProcessingContext())
        assert not ok and "not a STAC item collection" in message, (name, message)
        ok, message = algorithm.checkParameterValues(dict(params, STAC_ITEMS=str(items), WEATHER_SERVICE=1),
                                                     QgsProcessingContext())
        assert ok, (name, message)
    search = provider.algorithm("searchcatalog")
    params = {"INPUT": str(tiny_region / "parcels.gpkg"), "CATALOG": URL_CHOICE, "SEASON": 2017,
              "OUTPUT": str(tmp_path / "s.json")}
    ok, message = search.checkParameterValues(params, QgsProcessingContext())
    assert not ok and "address of the STAC API" in message
    ok, message = search.checkParameterValues(dict(params, CATALOG=0, SEASON=None), QgsProcessingContext())
    assert not ok and "Give a season" in message
    ok, message = search.checkParameterValues(dict(params, CATALOG=0, START="2017-05-01", END="2017-04-01"),
                                              QgsProcessingContext())
    assert not ok and "ends (2017-04-01) before it starts" in message


def _wait_for(obj, attr, timeout=300):
    from qgis.core import QgsApplication

    end = time.monotonic() + timeout
    while getattr(obj, attr) is not None:
        QgsApplication.processEvents()
        time.sleep(0.02)
        assert time.monotonic() < end, "the task did not finish"


@pytest.mark.slow
def test_dock_search_lists_dates_with_cloud_cover_and_the_run_reads_them(
        qgis_app, loopback_services, tiny_region, region_weather, small_bundle, tmp_path):
    from qgis.core import QgsProject, QgsSettings, QgsVectorLayer

    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.model.bundle import default_bundle_path
    from thermocrop.core.scenes.stac import load_items
    from thermocrop.plugin.dock import ThermoCropDock

    server = loopback_services
    QgsSettings().remove("thermocrop/dock")
    path = tmp_path / "parcels.gpkg"
    shutil.copy(tiny_region / "parcels.gpkg", path)
    layer = QgsVectorLayer(str(path), "parcels", "ogr")
    QgsProject.instance().addMapLayer(layer)
    dock = ThermoCropDock()
    try:
        dock.layer_combo.setLayer(layer)
        dock.add_scene_paths([str(tiny_region / "scenes")])  # files, left aside while the catalogue is used
        dock.weather.setFilePath(str(region_weather))
        dock.model.setFilePath(str(small_bundle))
        dock.confirm_overwrite = lambda names: True
        catalog = dock.catalog
        catalog.setChecked(True)
        assert not dock.scene_list.isEnabled() and dock.scene_paths() == []
        assert dock.start() is None and "Search the catalogue first" in dock.message.text()
        catalog.catalog.setCurrentIndex(URL_CHOICE)
        catalog.url.setText(server.url + "/stac")
        catalog.season.setValue(2017)
        catalog.max_cloud.setValue(60)
        assert catalog.search() is not None
        _wait_for(catalog, "task")
        rows = [catalog.results.item(i).text() for i in range(catalog.results.count())]
        expected = sorted((i.datetime.date().isoformat(), i.properties["eo:cloud_cover"])
                          for i in load_items(catalog.items_path))
        assert len(expected) == 4 and all(c <= 60 for _, c in expected)
        assert rows == [f"{d}  31TCJ  cloud {c:.1f} %" for d, c in expected]
        assert catalog.summary.text() == "4 items on 4 dates, tiles 31TCJ"
        assert Path(catalog.items_path).parent == tmp_path / "cache" / "searches"
        assert dock.scene_paths() == [catalog.items_path]

        server.reset_counters()
        task = dock.start()
        assert task is not None
        _wait_for(dock, "task")
        assert task.error is None, task.error
        assert server.total_bytes("/files/") > 0  # the images came from the catalogue
        written = QgsVectorLayer(task.written, "out", "ogr")
        ours = {f["parcel_id"]: (f["crop_pred"] or None) for f in written.getFeatures()}
        core = classify_parcels(tiny_region / "parcels.gpkg", [catalog.items_path], region_weather,
                                str(small_bundle), id_field="parcel_id")
        assert len(core.labels) == len(ours)
        theirs = {pid: (str(lab) if st == "ok" else None)
                  for pid, lab, st in zip(core.parcel_ids, core.labels, core.status)}
        assert ours == theirs and sum(v is not None for v in ours.values()) > 90

        # Without a model the items' level (L2A) chooses the shipped L2A model, and the message says so.
        dock.model.setFilePath("")
        assert f"<b>{default_bundle_path('L2A').name}</b>" in dock.model_card.text()
        task = dock.start()
        assert task is not None
        _wait_for(dock, "task")
        assert task.error is None, task.error
        choice = f"L2A scenes: using the shipped L2A model {default_bundle_path('L2A').name}"
        assert task.bundle.config.scene_level == "L2A" and task.model_choice == choice
        assert choice in dock.message.text() and "reflectance differ" not in dock.message.text()

        # Remembered in the user's settings (not the project), found again by a new dock.
        dock.save_settings()
        again = ThermoCropDock()
        try:
            assert again.catalog.isChecked() and again.catalog.results.count() == 4
            assert again.scene_paths() == [catalog.items_path]
        finally:
            again.shutdown()
            again.deleteLater()
    finally:
        dock.shutdown()
        dock.deleteLater()
        QgsProject.instance().removeAllMapLayers()
        QgsSettings().remove("thermocrop/dock")


def test_credentials_come_from_the_authentication_manager(qgis_app):
    from qgis.core import QgsApplication, QgsAuthMethodConfig

    from thermocrop.plugin.catalog import auth_credentials

    manager = QgsApplication.authManager()
    if not manager.masterPasswordIsSet():
        manager.setPasswordHelperEnabled(False)
        assert manager.setMasterPassword("thermocrop-tests", True)
    config = QgsAuthMethodConfig("Basic")
    config.setName("cdse keys")
    config.setConfig("username", "ACCESSKEY")
    config.setConfig("password", "secret/key")
    assert manager.storeAuthenticationConfig(config)
    assert auth_credentials(config.id(), "cdse") == {"AWS_ACCESS_KEY_ID": "ACCESSKEY",
                                                     "AWS_SECRET_ACCESS_KEY": "secret/key"}
    assert auth_credentials(config.id(), "planetary-computer") == {"PC_SDK_SUBSCRIPTION_KEY": "secret/key"}
    assert auth_credentials("", "cdse") == {}
    with pytest.raises(ValueError, match="cannot be loaded"):
        auth_credentials("nosuch1", "cdse")
