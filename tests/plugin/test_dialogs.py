"""What the Processing dialogs show before a run: help by label, required scenes, the help page,
the torch check, the dataset folder picker; and what the Toolbox log and output say after one."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.qgis


def test_help_lists_parameters_by_label_not_by_id(provider):
    for algorithm in provider.algorithms():
        text = algorithm.shortHelpString()
        for parameter in algorithm.parameterDefinitions():
            assert f"<b>{parameter.description()}</b>" in text, (algorithm.id(), parameter.name())
            if parameter.description() != parameter.name():
                assert f"<b>{parameter.name()}</b>" not in text, (algorithm.id(), parameter.name())


def test_scene_parameters_say_one_is_required_and_the_check_enforces_it(provider, tiny_region, region_weather,
                                                                        tmp_path):
    from qgis.core import QgsProcessingContext

    for name in ("classifyparcels", "exporttrainingdata"):
        algorithm = provider.algorithm(name)
        scenes, folder = algorithm.parameterDefinition("SCENES"), algorithm.parameterDefinition("SCENE_FOLDER")
        assert "folder" in scenes.description() and "scenes above" in folder.description()
        assert "required" in scenes.help() and "required" in folder.help()
    algorithm = provider.algorithm("classifyparcels")
    params = {"INPUT": str(tiny_region / "parcels.gpkg"), "WEATHER": str(region_weather),
              "OUTPUT": str(tmp_path / "o.gpkg")}
    ok, message = algorithm.checkParameterValues(params, QgsProcessingContext())
    assert not ok and "one of them is required" in message
    assert algorithm.parameterDefinition("SCENES").description() in message
    ok, message = algorithm.checkParameterValues(dict(params, SCENE_FOLDER=str(tiny_region / "scenes")),
                                                 QgsProcessingContext())
    assert ok, message
    # Growing degree days may take DATES instead, so its labels claim nothing.
    gdd = provider.algorithm("parcelgdd")
    assert "required" not in gdd.parameterDefinition("SCENES").description()


def test_help_button_opens_the_plugin_documentation(provider):
    from pathlib import Path

    from qgis.PyQt.QtCore import QUrl

    for algorithm in provider.algorithms():
        url = QUrl(algorithm.helpUrl())
        assert url.isLocalFile() and Path(url.toLocalFile()).is_file()
        page = Path(url.toLocalFile()).read_text()
        # The fragment is the anchor Markdown renderers give the "Processing algorithms" heading.
        heading = next(line for line in page.splitlines() if line.startswith("## ")
                       and re.sub(r"[^a-z0-9 -]", "", line[3:].lower()).replace(" ", "-") == url.fragment())
        assert algorithm.name() in page and heading


def test_without_torch_the_model_algorithms_refuse_before_the_dialog_opens():
    code = """
import sys
sys.modules['torch'] = None
from qgis.core import QgsApplication, QgsProcessingContext
app = QgsApplication([], False); app.initQgis()
from thermocrop.plugin.provider import ThermoCropProvider
provider = ThermoCropProvider()
QgsApplication.processingRegistry().addProvider(provider)
for name in ('classifyparcels', 'trainmodel', 'parcelgdd', 'exporttrainingdata'):
    alg = provider.algorithm(name)
    ok, message = alg.canExecute()
    checked, _ = alg.checkParameterValues({}, QgsProcessingContext())
    print(name, ok, repr(message.splitlines()[0] if message else ''))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line.split(" ")[0] in (
        "classifyparcels", "trainmodel", "parcelgdd", "exporttrainingdata"))
    assert lines["classifyparcels"].startswith("False") and "needs torch" in lines["classifyparcels"]
    assert lines["trainmodel"].startswith("False") and "needs torch" in lines["trainmodel"]
    assert lines["parcelgdd"].startswith("True") and lines["exporttrainingdata"].startswith("True")


def test_train_model_picks_dataset_folders_with_a_folder_dialog(provider, tmp_path):
    from processing.gui.wrappers import WidgetWrapperFactory
    from qgis.PyQt.QtWidgets import QWidget

    from thermocrop.plugin.widgets import DatasetFoldersWrapper

    parameter = provider.algorithm("trainmodel").parameterDefinition("DATASETS")
    host = QWidget()
    wrapper = WidgetWrapperFactory.create_wrapper_from_metadata(parameter, host)
    assert isinstance(wrapper, DatasetFoldersWrapper)
    assert wrapper.add_button.toolTip()
    changed = []
    wrapper.widgetValueHasChanged.connect(lambda w: changed.append(w.value()))
    a, b = tmp_path / "region A", tmp_path / "b"
    wrapper.add_folder(str(a))
    wrapper.add_folder(str(b))
    wrapper.add_folder(str(a))  # already listed
    assert wrapper.value() == f"{a};{b}" and changed[-1] == wrapper.value()


@pytest.mark.slow
def test_toolbox_log_counts_dates_and_products_and_probability_fields(provider, tiny_region, region_weather,
                                                                      small_bundle, tmp_path):
    import geopandas as gpd
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback

    class Log(QgsProcessingFeedback):
        def __init__(self):
            super().__init__()
            self.lines = []

        def pushInfo(self, info):  # noqa: N802
            self.lines.append(info)
            super().pushInfo(info)

    feedback = Log()
    out = tmp_path / "classified.gpkg"
    processing.run("thermocrop:classifyparcels", {
        "INPUT": str(tiny_region / "parcels.gpkg"), "SCENE_FOLDER": str(tiny_region / "scenes"),
        "WEATHER": str(region_weather), "MODEL": str(small_bundle), "PROBABILITIES": True, "OUTPUT": str(out)},
        context=QgsProcessingContext(), feedback=feedback)
    # Counted from the file names: one product per multi-band file, dates from the names.
    products = [p for p in (tiny_region / "scenes").glob("*.tif") if not p.stem.endswith("_SCL")]
    dates = {re.search(r"_(\d{8})T", p.name).group(1) for p in products}
    parcels = len(gpd.read_file(tiny_region / "parcels.gpkg"))
    assert f"{parcels} parcels, {len(dates)} dates from {len(products)} products" in feedback.lines

    back = gpd.read_file(out)
    from thermocrop.core.crops import CROP_CLASSES

    probs = back[[f"p_{c}" for c in CROP_CLASSES]].to_numpy(dtype=float)
    ok = (back["crop_status"] == "ok").to_numpy()
    np.testing.assert_allclose(probs[ok].sum(axis=1), 1.0, atol=1e-4)
    top = np.sort(probs[ok], axis=1)
    np.testing.assert_allclose(back["crop_margin"].to_numpy(dtype=float)[ok], top[:, -1] - top[:, -2], atol=1e-5)
    np.testing.assert_allclose(back["crop_conf"].to_numpy(dtype=float)[ok], top[:, -1], atol=1e-5)
    assert back.loc[~ok, "crop_entropy"].isna().all()


def _layer_with(tmp_path, fields: dict, name="p"):
    """A one-polygon GeoPackage layer with ``fields`` (name -> value) after its fid."""
    import geopandas as gpd
    from qgis.core import QgsVectorLayer
    from shapely.geometry import box

    path = tmp_path / f"{name}.gpkg"
    gpd.GeoDataFrame({k: [v] for k, v in fields.items()}, geometry=[box(0, 0, 10, 10)], crs="EPSG:32631").to_file(path)
    layer = QgsVectorLayer(str(path), name, "ogr")
    assert layer.isValid() and layer.fields().names()[0] == "fid"
    return layer


def test_label_and_reference_fields_start_at_a_likely_field_never_fid(provider, tmp_path):
    from processing.gui.wrappers import WidgetWrapperFactory
    from qgis.core import QgsProject
    from qgis.PyQt.QtWidgets import QWidget

    from thermocrop.plugin.widgets import GuessedFieldWrapper

    rpg = _layer_with(tmp_path, {"ID_PARCEL": "12", "SURF_PARC": 1.5, "CODE_CULTU": "BTH", "block": 3}, "rpg")
    checked = _layer_with(tmp_path, {"parcel_id": "a", "crop_pred": "corn", "truth": "corn"}, "checked")
    bare = _layer_with(tmp_path, {"number": 4}, "bare")
    host = QWidget()
    label = WidgetWrapperFactory.create_wrapper_from_metadata(
        provider.algorithm("exporttrainingdata").parameterDefinition("LABEL_FIELD"), host)
    reference = WidgetWrapperFactory.create_wrapper_from_metadata(
        provider.algorithm("accuracyassessment").parameterDefinition("REFERENCE_FIELD"), host)
    assert isinstance(label, GuessedFieldWrapper) and isinstance(reference, GuessedFieldWrapper)
    label.set_layer(rpg)
    assert label.value() == "CODE_CULTU"
    reference.set_layer(checked)
    assert reference.value() == "truth"
    reference.set_layer(rpg)  # crop codes are the reference there
    assert reference.value() == "CODE_CULTU"
    label.set_layer(bare)  # nothing label-like: empty, and the check asks for it
    assert label.value() == ""

    # The list follows the parent layer parameter as the dialog changes it (a layer of the project).
    QgsProject.instance().addMapLayer(rpg, False)
    try:
        class Parent:
            def __init__(self, value):
                self.value_ = value

            def parameterValue(self):  # noqa: N802
                return self.value_

        label.parent_changed(Parent(rpg.id()))
        assert label.value() == "CODE_CULTU"
        label.parent_changed(Parent(str(tmp_path / "checked.gpkg")))  # a file path, loaded for its fields
        assert label.value() == "truth"  # a known label name before any other text field
    finally:
        QgsProject.instance().removeMapLayer(rpg.id())


def test_export_takes_the_block_field_and_train_defaults_finish_in_minutes(provider):
    from thermocrop.training.train import TrainingConfig

    export = provider.algorithm("exporttrainingdata")
    block = export.parameterDefinition("BLOCK_FIELD")
    assert block is not None and block.defaultValue() == "block" and block.flags() & block.FlagOptional
    train = provider.algorithm("trainmodel")
    variants = train.parameterDefinition("VARIANT").options()
    assert variants[train.parameterDefinition("VARIANT").defaultValue()] == "tpe_sinusoidal"
    steps = train.parameterDefinition("EPOCHS").defaultValue() * train.parameterDefinition("STEPS").defaultValue()
    paper = TrainingConfig()
    # The shipped model's budget, a sixtieth of the paper's steps at half its batch.
    assert steps <= paper.epochs * paper.steps_per_epoch // 50
    assert train.parameterDefinition("BATCH_SIZE").defaultValue() <= paper.batch_size // 2
