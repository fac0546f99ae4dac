"""The dock's Train tab: a labelled layer, its label and block fields and crop-code table, trained
in a background task with a tiny budget into a bundle beside the project, chosen for the next run."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.qgis


@pytest.fixture(autouse=True)
def fresh_settings(qgis_app):
    from qgis.core import QgsSettings

    for group in ("thermocrop/dock", "thermocrop/train"):
        QgsSettings().remove(group)
    yield
    for group in ("thermocrop/dock", "thermocrop/train"):
        QgsSettings().remove(group)


@pytest.fixture
def rpg_layer(qgis_app, tiny_region, tmp_path):
    """The tiny region's parcels labelled with French RPG codes (and their blocks), in the project."""
    import geopandas as gpd
    from qgis.core import QgsProject, QgsVectorLayer

    from thermocrop.core.classmap import ClassMap

    table = ClassMap.load("france")
    codes = {}
    for entry in table.entries:
        codes.setdefault(entry.cls, entry.code)
    frame = gpd.read_file(tiny_region / "parcels.gpkg")
    frame["CODE_CULTU"] = [codes[c] for c in frame["crop"]]
    path = tmp_path / "rpg.gpkg"
    frame.drop(columns=["crop"]).to_file(path)
    layer = QgsVectorLayer(str(path), "rpg parcels", "ogr")
    QgsProject.instance().addMapLayer(layer)
    yield layer, frame
    QgsProject.instance().removeAllMapLayers()


@pytest.fixture
def train_dock(rpg_layer, tiny_region, region_weather):
    """A dock with the tiny region's scenes and weather, its Train tab on the labelled layer."""
    from thermocrop.plugin.dock import ThermoCropDock

    dock = ThermoCropDock(restore=False)
    dock.add_scene_paths([str(tiny_region / "scenes")])
    dock.weather.setFilePath(str(region_weather))
    dock.train_panel.set_layer(rpg_layer[0])
    yield dock
    dock.shutdown()
    dock.deleteLater()


def _wait(owner, timeout=900):
    from qgis.core import QgsApplication

    end = time.monotonic() + timeout
    while owner.task is not None:
        QgsApplication.processEvents()
        time.sleep(0.02)
        assert time.monotonic() < end, "the task did not finish"


def test_the_form_guesses_label_block_and_code_table(rpg_layer):
    from thermocrop.plugin.dock import ThermoCropDock

    layer, _ = rpg_layer
    dock = ThermoCropDock(restore=False)
    try:
        panel = dock.train_panel
        panel.set_layer(layer)
        assert panel.label_combo.currentField() == "CODE_CULTU"  # never fid
        assert panel.block_combo.currentField() == "block"
        assert panel.class_map.currentData() == "france"
        assert panel.variant.currentData() == "tpe_sinusoidal"
        # Minutes on a CPU by default: the shipped model's budget, far below the paper's 50,000 steps.
        assert panel.epochs.value() * panel.steps.value() <= 1000
        # Without scenes the form says what is missing and starts nothing.
        assert panel.train() is None and "scenes" in panel.status.text()
    finally:
        dock.shutdown()
        dock.deleteLater()


def test_the_form_starts_from_scratch_or_from_the_model_chosen(train_dock, tmp_path):
    from qgis.core import QgsProject

    from thermocrop.core.model.bundle import ensemble_bundle_path

    QgsProject.instance().setFileName(str(tmp_path / "farm.qgz"))
    dock = train_dock
    panel = dock.train_panel
    try:
        # Empty by default: from scratch, with the variant chosen here.
        assert panel.init_model.filePath() == "" and panel.variant.isEnabled()
        request = panel.request()
        assert request.init == "" and request.training_config().init is None
        assert request.training_config().variant == "tpe_sinusoidal"
        # One click starts from the shipped model, whose variant then holds.
        panel.shipped_button.click()
        assert panel.init_model.filePath() == str(ensemble_bundle_path())
        assert not panel.variant.isEnabled()
        request = panel.request()
        assert request.init == str(ensemble_bundle_path()) and Path(request.out).stem.endswith("_tuned")
        config = request.training_config()
        assert config.init == request.init and config.members == 5
        # The budget line promised the steps of one model at the time of one: each member trains them.
        assert "for each member of the model started from" in panel.budget_note.text()
        # A model file that is not there is refused before anything starts.
        panel.init_model.setFilePath(str(tmp_path / "missing.tcm"))
        assert panel.request() is None and "missing.tcm" in panel.status.text()
    finally:
        QgsProject.instance().setFileName("")


@pytest.mark.slow
def test_training_writes_a_bundle_beside_the_project_and_selects_it(rpg_layer, train_dock, tmp_path):
    from qgis.core import QgsProject

    from thermocrop.core.model.bundle import load_bundle
    from thermocrop.core.pixel_sets import open_dataset

    _, frame = rpg_layer
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    QgsProject.instance().setFileName(str(project_dir / "farm.qgz"))
    dock = train_dock
    panel = dock.train_panel
    try:
        panel.epochs.setValue(1)
        panel.steps.setValue(2)
        panel.batch_size.setValue(8)
        estimates = []
        task = panel.train()
        assert task is not None
        task.estimated.connect(estimates.append)
        _wait(panel)
        assert task.bundle_path is not None, panel.status.text()
        bundle_path = task.bundle_path
        assert bundle_path.parent == project_dir and bundle_path.suffix == ".tcm"
        assert dock.model.filePath() == str(bundle_path)
        bundle = load_bundle(bundle_path)
        assert bundle.config.variant == "tpe_sinusoidal"
        # The crop codes went through the France table back to the crop names.
        assert set(bundle.classes) == set(frame["crop"])
        data = open_dataset(project_dir / f"{bundle_path.stem}_dataset")
        assert list(data.blocks) == list(frame["block"])
        assert estimates and "2 steps" in estimates[0] and "ms" in estimates[0]
        assert "chosen for the next classification" in panel.status.text()
        # The tiny region's validation blocks hold too few parcels for a calibration: said.
        assert (bundle.calibration is None) == ("carries no calibration" in panel.status.text())
        assert task.calibrated == (bundle.calibration is not None)
        # The measured step time gives the next estimate before anything starts.
        assert "measured here last time" in panel.budget_note.text()
        # A second training does not overwrite the first.
        assert panel.request().out != str(bundle_path)
    finally:
        QgsProject.instance().setFileName("")


@pytest.mark.slow
def test_a_cancelled_training_leaves_nothing(train_dock, tmp_path):
    from qgis.core import QgsApplication

    dock = train_dock
    panel = dock.train_panel
    before = sorted(p.name for p in tmp_path.iterdir())
    task = panel.train()
    end = time.monotonic() + 120
    while task.progress() < 3 and panel.task is not None and time.monotonic() < end:
        QgsApplication.processEvents()
        time.sleep(0.02)
    panel.cancel()
    _wait(panel)
    assert task.cancelled and task.bundle_path is None
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert "cancelled" in panel.status.text()
    assert dock.model.filePath() == ""


def test_files_of_the_model_files_name_are_neither_replaced_nor_removed(train_dock, tmp_path):
    """A model file of which only the metrics and figures exist (another run's, or the user's):
    the form refuses it, naming the file, and a cancelled run removes only what it wrote."""
    from thermocrop.plugin.train_panel import TrainingTask, model_path_beside

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "model.metrics.json").write_text('{"mine": 1}')
    (mine / "model.curve.png").write_bytes(b"png")
    assert model_path_beside(mine, "model") == mine / "model_2.tcm"
    dock = train_dock
    panel = dock.train_panel
    panel.output.setFilePath(str(mine / "model.tcm"))
    assert panel.request() is None
    assert "model.metrics.json" in panel.status.text() or "model.curve.png" in panel.status.text()
    panel.output.setFilePath(str(mine / "fresh.tcm"))
    request = panel.request()
    assert request is not None and request.out == str(mine / "fresh.tcm")
    # What appears under the run's names once it started is the run's, removed on a cancel; what
    # was there before it started is kept (a request made before the files appeared).
    task = TrainingTask(request, None)
    (mine / "fresh.metrics.json").write_text("theirs")
    task._remove_outputs()
    assert not (mine / "fresh.metrics.json").exists()  # not there at the start: the run's own
    request.out = str(mine / "model.tcm")
    task = TrainingTask(request, None)
    task._remove_outputs()
    assert (mine / "model.metrics.json").read_text() == '{"mine": 1}'
    assert (mine / "model.curve.png").read_bytes() == b"png"


def test_the_label_field_guess_is_never_an_id():
    from thermocrop.plugin.layers import guess_label_field

    assert guess_label_field(["fid", "parcel_id", "CODE_CULTU", "block"]) == "CODE_CULTU"
    assert guess_label_field(["fid", "id", "name"], {"fid": False, "id": True, "name": True}) == "name"
    assert guess_label_field(["fid", "area"], {"fid": False, "area": False}) is None
    assert np.all([guess_label_field([n]) is None for n in ("fid", "id", "ogc_fid")])


def test_training_on_a_selection_uses_the_selected_parcels_and_says_so(rpg_layer, train_dock, tmp_path):
    """The Train tab read every feature of a layer with a selection (the reference tabs use it)."""
    from qgis.core import QgsProject

    from thermocrop.core.pixel_sets import open_dataset

    layer, frame = rpg_layer
    project_dir = tmp_path / "project"
    project_dir.mkdir()
    QgsProject.instance().setFileName(str(project_dir / "farm.qgz"))
    panel = train_dock.train_panel
    chosen = sorted(f.id() for f in layer.getFeatures())[:80]
    layer.selectByIds(chosen)
    try:
        panel.epochs.setValue(1)
        panel.steps.setValue(2)
        panel.batch_size.setValue(8)
        task = panel.train()
        assert task is not None
        _wait(panel)
        assert task.bundle_path is not None, panel.status.text()
        data = open_dataset(project_dir / f"{task.bundle_path.stem}_dataset")
        assert len(data) == 80 and sorted(int(i) for i in data.parcel_ids) == chosen
        assert "Only the 80 selected features were used" in panel.status.text()
    finally:
        layer.removeSelection()
        QgsProject.instance().setFileName("")
