"""``thermocrop:inseasonaccuracy`` through ``processing.run`` on the tiny region: its whole-season
row is the accuracy of one classification with all the scenes, scored against the labels."""

from __future__ import annotations

import csv

import geopandas as gpd
import numpy as np
import pytest

pytestmark = pytest.mark.qgis


def _run(params: dict, feedback=None):
    import processing
    from qgis.core import QgsProcessingContext, QgsProcessingFeedback

    return processing.run("thermocrop:inseasonaccuracy", params, context=QgsProcessingContext(),
                          feedback=feedback or QgsProcessingFeedback())


def whole_season_accuracy(region, weather, bundle_path) -> tuple[float, int]:
    """``(OA, parcels scored)`` of the parcels classified with every scene, against their ``crop``."""
    from thermocrop.core.classify import classify_parcels
    from thermocrop.core.model.bundle import load_bundle

    bundle = load_bundle(bundle_path)
    classes = list(bundle.classes)
    whole = classify_parcels(str(region / "parcels.gpkg"), str(region / "scenes"), str(weather), bundle)
    names = gpd.read_file(region / "parcels.gpkg")["crop"].to_numpy()
    truth = np.array([classes.index(c) if c in classes else -1 for c in names])[whole.rows]
    scored = (whole.status == "ok") & (truth >= 0)
    predicted = np.nan_to_num(whole.probabilities, nan=-1.0).argmax(axis=1)
    return float((predicted[scored] == truth[scored]).mean()), int(scored.sum())


@pytest.mark.slow
def test_inseasonaccuracy_ends_at_the_whole_season_accuracy(provider, tiny_region, scene_files, region_weather,
                                                           small_bundle, tmp_path):
    from thermocrop.core.scenes.local import find_scenes

    out = tmp_path / "inseason"
    result = _run({"INPUT": str(tiny_region / "parcels.gpkg"), "LABEL_FIELD": "crop", "SCENES": scene_files,
                   "WEATHER": str(region_weather), "MODEL": str(small_bundle), "OUTPUT": str(out)})
    assert result["TABLE"] == str(out / "inseason.csv") and result["CLASSES"] == str(out / "inseason_classes.csv")
    assert result["FIGURE"] == str(out / "inseason.png") and (out / "inseason.png").stat().st_size > 1000
    rows = list(csv.DictReader((out / "inseason.csv").open(encoding="utf-8")))
    assert len(rows) == len(find_scenes(str(tiny_region / "scenes")))

    oa, parcels = whole_season_accuracy(tiny_region, region_weather, small_bundle)
    assert float(rows[-1]["overall_accuracy"]) == pytest.approx(oa, abs=5e-5)
    assert result["OVERALL_ACCURACY"] == pytest.approx(oa, abs=1e-12) and result["PARCELS"] == parcels
    accuracies = [float(r["overall_accuracy"]) for r in rows]
    assert min(accuracies) < accuracies[-1]


def test_inseasonaccuracy_cancelled_writes_nothing(provider, tiny_region, scene_files, region_weather, small_bundle,
                                                   tmp_path):
    from qgis.core import QgsProcessingException, QgsProcessingFeedback

    feedback = QgsProcessingFeedback()
    feedback.cancel()
    with pytest.raises(QgsProcessingException, match="Cancelled"):
        _run({"INPUT": str(tiny_region / "parcels.gpkg"), "LABEL_FIELD": "crop", "SCENES": scene_files,
              "WEATHER": str(region_weather), "MODEL": str(small_bundle), "OUTPUT": str(tmp_path / "inseason")},
             feedback)
    assert not (tmp_path / "inseason" / "inseason.csv").exists()


def test_inseasonaccuracy_refuses_a_missing_model(provider, tiny_region, scene_files, region_weather, tmp_path):
    from qgis.core import QgsProcessingException

    with pytest.raises(QgsProcessingException, match="nothing.tcm"):
        _run({"INPUT": str(tiny_region / "parcels.gpkg"), "LABEL_FIELD": "crop", "SCENES": scene_files,
              "WEATHER": str(region_weather), "MODEL": str(tmp_path / "nothing.tcm"),
              "OUTPUT": str(tmp_path / "inseason")})
    assert not (tmp_path / "inseason").exists()
