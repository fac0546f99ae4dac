"""Without a model, every door classifies with the model shipped for the scenes' processing
level, and says which and why: the preflight, the command line, the Toolbox (an empty MODEL) and
the dock's task, on the tiny synthetic L2A region. A model given is never replaced."""

from __future__ import annotations

from pathlib import Path

import geopandas as gpd
import numpy as np
import pytest

import thermocrop
from thermocrop.cli.main import main
from thermocrop.core.model.bundle import default_bundle_path

MODELS = Path(thermocrop.__file__).parent / "resources" / "models"
SHIPPED_L2A, SHIPPED_L1C = default_bundle_path("L2A"), default_bundle_path("L1C")
L2A_CHOICE = f"L2A scenes: using the shipped L2A model {SHIPPED_L2A.name}"


def _checksum(path: Path) -> str:
    from thermocrop.core.model.bundle import load_bundle

    return load_bundle(path).config.checksum


def test_the_preflight_loads_the_model_shipped_for_the_scenes_level(tiny_region):
    from thermocrop.core.preflight import check_inputs

    scenes = tiny_region / "scenes"
    chosen = check_inputs(scenes=scenes, need_bundle=True)
    assert chosen.bundle.config.checksum == _checksum(SHIPPED_L2A) != _checksum(SHIPPED_L1C)
    assert chosen.bundle.config.scene_level == "L2A" and chosen.model_choice == L2A_CHOICE
    assert len(chosen.scenes) == len([p for p in scenes.glob("*.tif") if not p.stem.endswith("_SCL")])
    # A model given is kept, whatever the scenes; without scenes there is no level to choose by.
    for given in (MODELS / "default.tcm", str(MODELS / "default.tcm")):
        kept = check_inputs(scenes=scenes, need_bundle=True, bundle=given)
        assert kept.bundle.config.scene_level == "L1C" and kept.model_choice is None
    alone = check_inputs(need_bundle=True)
    assert alone.bundle.config.scene_level == "L1C" and alone.model_choice is None


def _cli(region: Path, out: Path, *extra: str) -> int:
    return main(["classify", "--parcels", str(region / "parcels.gpkg"), "--scenes", str(region / "scenes"),
                 "--weather", str(region / "weather.nc"), "--out", str(out), *extra])


@pytest.fixture(scope="module")
def given_l2a(tiny_region, tmp_path_factory) -> gpd.GeoDataFrame:
    """The tiny region classified with the L2A model given by its path."""
    out = tmp_path_factory.mktemp("given") / "given.gpkg"
    assert _cli(tiny_region, out, "--model", str(SHIPPED_L2A)) == 0
    return gpd.read_file(out)


def test_the_command_line_without_a_model_classifies_l2a_scenes_with_the_l2a_model(tiny_region, given_l2a,
                                                                                     tmp_path, caplog, capsys):
    out = tmp_path / "classified.gpkg"
    with caplog.at_level("INFO", logger="thermocrop"):  # the command line shows these log lines
        assert _cli(tiny_region, out) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed.count(L2A_CHOICE) == 1  # said once, by the run
    assert L2A_CHOICE not in caplog.messages
    assert "reflectance differ" not in caplog.text  # no level warning
    result = gpd.read_file(out)
    assert (result["crop_status"] == "ok").sum() > 90
    np.testing.assert_array_equal(result["crop_conf"], given_l2a["crop_conf"])
    assert result["crop_pred"].tolist() == given_l2a["crop_pred"].tolist()


@pytest.mark.qgis
def test_the_toolbox_with_an_empty_model_uses_the_l2a_model_and_says_so(provider, tiny_region, given_l2a, tmp_path):
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback

    class Lines(QgsProcessingFeedback):
        def __init__(self):
            super().__init__()
            self.info, self.warnings = [], []

        def pushInfo(self, text):  # noqa: N802
            self.info.append(text)

        def pushWarning(self, text):  # noqa: N802
            self.warnings.append(text)

    feedback = Lines()
    out = tmp_path / "toolbox.gpkg"
    processing.run("thermocrop:classifyparcels",
                   {"INPUT": str(tiny_region / "parcels.gpkg"), "SCENE_FOLDER": str(tiny_region / "scenes"),
                    "WEATHER": str(tiny_region / "weather.nc"), "MODEL": "", "OUTPUT": str(out)},
                   context=QgsProcessingContext(), feedback=feedback)
    assert L2A_CHOICE in feedback.info
    assert not any("reflectance differ" in w for w in feedback.warnings)
    result = gpd.read_file(out)
    assert result["parcel_id"].tolist() == given_l2a["parcel_id"].tolist()
    np.testing.assert_allclose(result["crop_conf"], given_l2a["crop_conf"], rtol=1e-6)
    assert result["crop_pred"].tolist() == given_l2a["crop_pred"].tolist()


@pytest.mark.qgis
def test_the_dock_task_without_a_model_uses_the_l2a_model_and_a_model_given_stays(qgis_app, tiny_region):
    from qgis.core import QgsVectorLayer, QgsVectorLayerFeatureSource

    from thermocrop.plugin.task import ClassificationParameters, ClassificationTask, LayerSnapshot

    layer = QgsVectorLayer(str(tiny_region / "parcels.gpkg"), "parcels", "ogr")
    chosen = {}
    for model in (None, str(MODELS / "default.tcm")):
        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(), layer.fields().names())
        task = ClassificationTask(ClassificationParameters(parcels=snapshot, fids=[],
                                                           scenes=[str(tiny_region / "scenes")],
                                                           weather=str(tiny_region / "weather.nc"), model=model),
                                  on_done=None)
        assert task.run() is True, task.error
        chosen[model] = task
    shipped, given = chosen[None], chosen[str(MODELS / "default.tcm")]
    assert shipped.bundle.config.scene_level == "L2A" and shipped.model_choice == L2A_CHOICE
    assert not any("reflectance differ" in w for w in shipped.result.warnings)
    assert given.bundle.config.scene_level == "L1C" and given.model_choice is None
    assert any("trained on L1C scenes but these are L2A" in w for w in given.result.warnings)
