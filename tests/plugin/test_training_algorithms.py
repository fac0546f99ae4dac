"""Export training data keeps the parcels' spatial blocks; Train model logs its time estimate from a
measured step before training, with the recommended variant by default."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.qgis


class _Log:
    """A Processing feedback keeping what an algorithm logged."""

    def __new__(cls):
        from qgis.core import QgsProcessingFeedback

        class Feedback(QgsProcessingFeedback):
            def __init__(self):
                super().__init__()
                self.lines, self.warnings = [], []

            def pushInfo(self, info):  # noqa: N802
                self.lines.append(info)
                super().pushInfo(info)

            def pushWarning(self, warning):  # noqa: N802
                self.warnings.append(warning)
                super().pushWarning(warning)

        return Feedback()


def _run(alg: str, params: dict, feedback=None):
    import processing
    from qgis.core import QgsProcessingContext

    return processing.run(alg, params, context=QgsProcessingContext(), feedback=feedback or _Log())


@pytest.mark.slow
def test_export_keeps_blocks_and_train_logs_its_estimate(provider, tiny_region, scene_files, region_weather,
                                                          tmp_path):
    pytest.importorskip("thermocrop.training.train")
    import geopandas as gpd

    from thermocrop.core.model.bundle import load_bundle
    from thermocrop.core.pixel_sets import open_dataset

    source = gpd.read_file(tiny_region / "parcels.gpkg")
    assert source["block"].nunique() > 1
    data = tmp_path / "dataset"
    # BLOCK_FIELD left out: its default is the layer's 'block' field.
    _run("thermocrop:exporttrainingdata", {"INPUT": str(tiny_region / "parcels.gpkg"), "LABEL_FIELD": "crop",
                                           "SCENES": scene_files, "WEATHER": str(region_weather), "MAX_PIXELS": 4,
                                           "OUTPUT": str(data)})
    assert list(open_dataset(data).blocks) == list(source["block"])

    # A layer without the field: the default is skipped, and the split will be random.
    without = tmp_path / "noblock.gpkg"
    source.drop(columns=["block"]).to_file(without)
    log = _Log()
    _run("thermocrop:exporttrainingdata", {"INPUT": str(without), "LABEL_FIELD": "crop", "SCENES": scene_files,
                                           "WEATHER": str(region_weather), "MAX_PIXELS": 4,
                                           "OUTPUT": str(tmp_path / "d2")}, log)
    assert (open_dataset(tmp_path / "d2").blocks == -1).all()
    assert any("no 'block' field" in line for line in log.lines)

    log = _Log()
    out = tmp_path / "m.tcm"
    _run("thermocrop:trainmodel", {"DATASETS": str(data), "EPOCHS": 1, "STEPS": 3, "BATCH_SIZE": 8, "DEVICE": 1,
                                   "OUTPUT": str(out)}, log)
    estimate = [line for line in log.lines if line.startswith("Estimate: ")]
    assert len(estimate) == 1 and "3 steps at " in estimate[0] and "measured here on cpu" in estimate[0]
    # Logged before training: before the model's classes, which come when it is done.
    assert log.lines.index(estimate[0]) < next(i for i, line in enumerate(log.lines)
                                               if line.startswith("Model classes"))
    assert load_bundle(out).config.variant == "tpe_sinusoidal"
