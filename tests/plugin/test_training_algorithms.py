"""Export training data keeps the parcels' spatial blocks; Train model logs its time estimate from a
measured step before training, with the recommended variant by default."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
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


def test_the_toolbox_the_dock_and_the_command_line_give_the_same_fine_tuning_config(provider, qgis_app, tmp_path,
                                                                                   monkeypatch):
    """Train model with an initial model, ``train --init`` and the dock's request with the same options
    all train with one ``TrainingConfig``: the initial model's variant and settings, the few-label
    recipe for the options not given."""
    pytest.importorskip("thermocrop.training.train")
    from qgis.core import QgsProcessingException

    import thermocrop.training.experiment as experiment
    import thermocrop.training.train as train
    from thermocrop.cli.main import main
    from thermocrop.core.errors import ThermoCropError
    from thermocrop.core.model.bundle import ensemble_bundle_path, load_bundle
    from thermocrop.core.pixel_sets import PixelSets, save_dataset
    from thermocrop.plugin.train_panel import TrainingRequest
    from thermocrop.training.finetune import FEW_LABEL_RECIPE

    class Recorded(ThermoCropError):
        pass

    configs = []

    def record(datasets, config, *args, **kwargs):
        configs.append(config)
        raise Recorded("recorded")

    monkeypatch.setattr(experiment, "estimate_training", record)
    monkeypatch.setattr(train, "train_model", lambda datasets, out, config, **kwargs: record(datasets, config))
    n, t, s = 12, 5, 2
    rng = np.random.default_rng(0)
    data = tmp_path / "data"
    save_dataset(PixelSets(pixels=rng.integers(1000, 4000, (n, t, 10, s)).astype(np.uint16),
                           pixel_mask=np.ones((n, t, s), bool), date_mask=np.ones((n, t), bool),
                           gdd=np.cumsum(np.full((n, t), 80.0, np.float32), axis=1),
                           dates=np.datetime64("2018-03-01") + np.arange(t) * 20,
                           day_of_season=np.arange(t, dtype=np.float32) * 20 + 59,
                           parcel_ids=np.array([f"p{i}" for i in range(n)]), status=np.array(["ok"] * n),
                           labels=(np.arange(n) % 3).astype(np.int16), blocks=(np.arange(n) % 4).astype(np.int32),
                           classes=("corn", "meadow", "winter_wheat")), data)
    init = str(ensemble_bundle_path())
    with pytest.raises(QgsProcessingException, match="recorded"):
        _run("thermocrop:trainmodel", {"DATASETS": str(data), "INIT_MODEL": init, "EPOCHS": 30, "STEPS": 25,
                                       "BATCH_SIZE": 64, "DEVICE": 1, "OUTPUT": str(tmp_path / "a.tcm")})
    main(["train", "--data", str(data), "--init", init, "--epochs", "30", "--steps-per-epoch", "25",
          "--batch-size", "64", "--device", "cpu", "--out", str(tmp_path / "b.tcm")])
    toolbox, cli = configs
    request = TrainingRequest(None, "crop", None, "", [], "", epochs=30, steps_per_epoch=25, batch_size=64,
                              max_pixels=64, init=init)
    dock = request.training_config()
    assert toolbox == cli == replace(dock, device="cpu")
    bundle = load_bundle(init)
    assert (cli.init, cli.variant, cli.members, cli.lr) == (init, bundle.config.variant,
                                                            bundle.config.hyperparameters["members"],
                                                            FEW_LABEL_RECIPE["lr"])
    # A variant that contradicts the initial model is refused by the Toolbox too, naming both.
    with pytest.raises(QgsProcessingException, match="tpe_recurrent.*default.tcm.*tpe_sinusoidal"):
        _run("thermocrop:trainmodel", {"DATASETS": str(data), "INIT_MODEL": init, "VARIANT": 0, "DEVICE": 1,
                                       "OUTPUT": str(tmp_path / "c.tcm")})
