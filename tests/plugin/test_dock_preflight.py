"""The dock's preflight: inputs and output checked before any scene is read, the layer and the
files left as they were; a run that classifies nothing ends as a failure and writes nothing."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.qgis


@pytest.fixture(autouse=True)
def fresh_settings(qgis_app):
    from qgis.core import QgsSettings

    QgsSettings().remove("thermocrop/dock")
    yield
    QgsSettings().remove("thermocrop/dock")


@pytest.fixture
def parcels_layer(qgis_app, tiny_region, tmp_path):
    """A copy of the tiny region's parcels in a folder of its own, added to the project."""
    from qgis.core import QgsProject, QgsVectorLayer

    folder = tmp_path / "work"
    folder.mkdir()
    shutil.copy(tiny_region / "parcels.gpkg", folder / "parcels.gpkg")
    layer = QgsVectorLayer(str(folder / "parcels.gpkg"), "parcels", "ogr")
    assert layer.isValid()
    QgsProject.instance().addMapLayer(layer)
    yield layer
    QgsProject.instance().removeAllMapLayers()


@pytest.fixture
def dock(qgis_app, tiny_region, region_weather, small_bundle):
    from qgis.gui import QgsMessageBar

    from thermocrop.plugin.dock import ThermoCropDock

    widget = ThermoCropDock()
    widget.add_scene_paths([str(tiny_region / "scenes")])
    widget.weather.setFilePath(str(region_weather))
    widget.model.setFilePath(str(small_bundle))
    widget.confirm_overwrite = lambda names: True
    bar = QgsMessageBar()
    widget.iface = SimpleNamespace(messageBar=lambda: bar)
    widget.bar = bar
    yield widget
    widget.shutdown()
    widget.deleteLater()


@pytest.fixture
def never_read(monkeypatch):
    """Reading scene pixels fails the test: refusals must come before any."""
    from thermocrop.core import extract
    from thermocrop.core.scenes import product as scenes

    def never(*args, **kwargs):
        raise AssertionError("a scene was read before the inputs and output were checked")

    monkeypatch.setattr(extract, "_read_chunk", never)
    monkeypatch.setattr(scenes.ProductReader, "read", never)


def _files(folder: Path) -> dict:
    """Every file under ``folder`` with its bytes' digest (staging leftovers would show too)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _layer_state(layer) -> tuple:
    rows = sorted((f.id(), tuple(str(v) for v in f.attributes())) for f in layer.getFeatures())
    return layer.fields().names(), rows, layer.isModified(), layer.isEditable(), layer.undoStack().count()


def _refused(dock, layer, folders) -> str:
    """Start the dock; check nothing ran and nothing changed; return the status panel's text."""
    from qgis.core import Qgis, QgsApplication

    files = {f: _files(f) for f in folders}
    state = _layer_state(layer)
    tasks = QgsApplication.taskManager().count()
    dock.progress.setValue(100)  # as after an earlier run
    bar_items = len(dock.bar.items())
    assert dock.start() is None and dock.task is None
    # No task was started, so no scene pixel was read (extraction only ever runs in the task).
    assert QgsApplication.taskManager().count() == tasks
    assert {f: _files(f) for f in folders} == files
    assert _layer_state(layer) == state
    text = dock.message.text()
    # Said as a run that did not start, with no progress left from an earlier run.
    assert text.startswith("Not started: ") and dock.progress.value() == 0
    # The same text reaches the message bar, as a failure.
    assert len(dock.bar.items()) == bar_items + 1
    item = dock.bar.items()[-1]
    assert item.level() == Qgis.Critical and item.text() == text.splitlines()[0]
    return text


def test_a_missing_weather_file_is_refused_before_any_scene_is_read(dock, never_read, parcels_layer, tmp_path):
    folder = Path(parcels_layer.source().split("|")[0]).parent
    dock.layer_combo.setLayer(parcels_layer)
    dock.weather.setFilePath(str(tmp_path / "gone" / "weather.nc"))
    text = _refused(dock, parcels_layer, [folder])
    assert f"Weather file {tmp_path / 'gone' / 'weather.nc'} does not exist" in text
    # No new layer file beside the parcels (QGIS keeps its own -wal / -shm files of the open GeoPackage).
    assert [n for n in _files(folder) if not n.startswith("parcels.gpkg")] == []


def _read_only_folder(tmp_path: Path):
    """A folder this process cannot create files in: permissions for a user, a read-only
    tmpfs for root (who may write anywhere else)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return folder, lambda: folder.chmod(0o755)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"root cannot mount a read-only tmpfs here: {done.stderr.strip()}")
    return folder, lambda: subprocess.run(["umount", str(folder)], check=False)


def test_an_output_folder_that_cannot_be_written_is_refused_first(dock, never_read, parcels_layer, tmp_path):
    folder = Path(parcels_layer.source().split("|")[0]).parent
    locked, release = _read_only_folder(tmp_path)
    try:
        with pytest.raises(OSError):  # the folder really is read-only to this process
            (locked / "probe").write_text("x")
        dock.layer_combo.setLayer(parcels_layer)
        dock.output_file.setFilePath(str(locked / "classified.gpkg"))
        # A missing weather file too: the answer is about the output, so the output was
        # checked before any input was read.
        dock.weather.setFilePath(str(tmp_path / "gone.nc"))
        text = _refused(dock, parcels_layer, [folder, locked])
        assert f"Cannot write in the folder {locked}" in text and "choose a folder you can write to" in text
        assert not any(locked.iterdir())
    finally:
        release()


@pytest.mark.parametrize("how", ["same path", "another path", "symlink", "hard link"])
def test_an_output_equal_to_the_input_layer_file_is_refused(dock, never_read, parcels_layer, tmp_path, how):
    source = Path(parcels_layer.source().split("|")[0])
    folder = source.parent
    output = {"same path": source, "another path": folder / ".." / folder.name / source.name,
              "symlink": tmp_path / "link.gpkg", "hard link": tmp_path / "hard.gpkg"}[how]
    if how == "symlink":
        output.symlink_to(source)
    elif how == "hard link":
        os.link(source, output)
    dock.layer_combo.setLayer(parcels_layer)
    dock.output_file.setFilePath(str(output))
    asked = []
    dock.confirm_overwrite = lambda names: asked.append(names) or True
    dock.weather.setFilePath(str(tmp_path / "gone.nc"))
    text = _refused(dock, parcels_layer, [folder])
    assert f"is the input {source}" in text and "would destroy the input" in text
    assert asked == []  # refused, not offered for replacing


@pytest.mark.parametrize("mode", ["new_file", "in_place"])
def test_an_existing_crop_pred_field_of_another_type_is_refused(dock, never_read, parcels_layer, tmp_path, mode):
    from qgis.core import QgsField
    from qgis.PyQt.QtCore import QVariant

    folder = Path(parcels_layer.source().split("|")[0]).parent
    assert parcels_layer.dataProvider().addAttributes([QgsField("crop_pred", QVariant.Int)])
    parcels_layer.updateFields()
    dock.layer_combo.setLayer(parcels_layer)
    (dock.to_new_file if mode == "new_file" else dock.in_place).setChecked(True)
    asked = []
    dock.confirm_overwrite = lambda names: asked.append(names) or True
    dock.weather.setFilePath(str(tmp_path / "gone.nc"))
    text = _refused(dock, parcels_layer, [folder])
    assert "parcels already has a field 'crop_pred' of type integer" in text
    assert "where the string field 'crop_pred' would be written" in text
    assert "choose another output field name" in text  # the class field's name is an option
    # Nothing new beside the parcels (QGIS keeps its own -wal / -shm files of the open GeoPackage).
    assert asked == [] and [n for n in _files(folder) if not n.startswith("parcels.gpkg")] == []


def test_probability_fields_are_checked_against_the_model_classes(dock, never_read, parcels_layer, small_bundle):
    """``p_<class>`` names come from the model the preflight loaded; a text ``p_<class>`` is refused."""
    from qgis.core import QgsField
    from qgis.PyQt.QtCore import QVariant

    from thermocrop.core.model.bundle import load_bundle

    first = load_bundle(small_bundle).classes[0]
    assert parcels_layer.dataProvider().addAttributes([QgsField(f"p_{first}", QVariant.String)])
    parcels_layer.updateFields()
    dock.layer_combo.setLayer(parcels_layer)
    dock.probabilities.setChecked(True)
    text = _refused(dock, parcels_layer, [Path(parcels_layer.source().split("|")[0]).parent])
    assert f"already has a field 'p_{first}' of type string" in text
    # No option names p_<class>: the way out is the layer's field or leaving the probabilities out.
    assert "choose another output field name" not in text and "leave out what writes it" in text


@pytest.mark.slow
def test_a_run_that_classifies_no_parcel_fails_and_writes_nothing(dock, tiny_region, tmp_path):
    """Five of the region's parcels moved 5 km east: inside the weather grid, outside every scene,
    so each is ``outside_scenes``; the preflight cannot know that without reading pixels."""
    import geopandas as gpd
    from qgis.core import Qgis, QgsApplication, QgsProject, QgsVectorLayer

    region = gpd.read_file(tiny_region / "parcels.gpkg").iloc[:5]
    folder = tmp_path / "moved"
    folder.mkdir()
    gpd.GeoDataFrame({"parcel_id": region["parcel_id"].tolist()}, geometry=region.geometry.translate(xoff=5000.0),
                     crs=region.crs).to_file(folder / "dots.gpkg")
    layer = QgsVectorLayer(str(folder / "dots.gpkg"), "dots", "ogr")
    QgsProject.instance().addMapLayer(layer)
    try:
        for mode in (dock.to_new_file, dock.in_place):
            mode.setChecked(True)
            before = _files(folder), _layer_state(layer)
            dock.layer_combo.setLayer(layer)
            assert dock.start() is not None
            end = time.monotonic() + 300
            while dock.task is not None:
                QgsApplication.processEvents()
                time.sleep(0.02)
                assert time.monotonic() < end
            text = dock.message.text()
            assert "No parcel of dots could be classified: 5 parcels: 5 outside_scenes" in text, text
            assert dock.bar.items()[-1].level() == Qgis.Critical
            assert (_files(folder), _layer_state(layer)) == before
            assert dock.last_result is None and not dock.results_box.isVisible()
    finally:
        QgsProject.instance().removeMapLayer(layer.id())
