"""Accuracy through the season on a labelled reference layer (app.run_season_accuracy,
thermocrop inseason --reference) equals one classification per cut of the scenes."""

from __future__ import annotations

import csv
from dataclasses import replace

import geopandas as gpd
import numpy as np
import pytest

from thermocrop import app
from thermocrop.app import ParcelsSpec, ScenesSpec, SeasonAccuracyRequest, WeatherSpec
from thermocrop.cli.main import main
from thermocrop.core.classify import classify_parcels
from thermocrop.core.errors import OutputError
from thermocrop.core.scenes.local import find_scenes
from thermocrop.training.metrics import confusion_matrix, scores


def _request(region, out, **kwargs):
    return SeasonAccuracyRequest(reference=ParcelsSpec(str(region / "parcels.gpkg")), label_field="crop",
                                 scenes=ScenesSpec(files=(str(region / "scenes"),)),
                                 weather=WeatherSpec(path=str(region / "weather.nc")), out=str(out), **kwargs)


@pytest.mark.slow
def test_reference_scores_equal_one_classification_per_cut(tiny_region, tmp_path, capsys):
    run = app.run_season_accuracy(_request(tiny_region, tmp_path / "out"))
    accuracy, bundle = run.accuracy, run.bundle
    assert run.model == "default_fast_l2a.tcm"  # no model given: the shipped one of the scenes' level (L2A)
    scenes = sorted(find_scenes(str(tiny_region / "scenes")), key=lambda s: s.date)
    assert [str(d) for d in accuracy.dates] == [str(np.datetime64(s.date, "D")) for s in scenes]

    classes = list(bundle.classes)
    truth_names = gpd.read_file(tiny_region / "parcels.gpkg")["crop"].to_numpy()
    whole = classify_parcels(str(tiny_region / "parcels.gpkg"), scenes, str(tiny_region / "weather.nc"), bundle)
    truth = np.array([classes.index(c) if c in classes else -1 for c in truth_names])[whole.rows]
    scored = (whole.status == "ok") & (truth >= 0)
    assert accuracy.parcels == scored.sum()
    assert sum(run.left_out.values()) == ((whole.status == "ok") & (truth < 0)).sum()

    for t in (len(scenes) // 3, len(scenes) - 1):
        cut = classify_parcels(str(tiny_region / "parcels.gpkg"), scenes[:t + 1], str(tiny_region / "weather.nc"),
                               bundle)
        assert np.array_equal(cut.rows, whole.rows)
        ok = cut.status == "ok"
        predicted = np.where(ok, np.nan_to_num(cut.probabilities, nan=-1.0).argmax(axis=1), -1)
        assert accuracy.overall_accuracy[t] == pytest.approx((predicted[scored] == truth[scored]).mean(), abs=1e-12)
    expected = scores(confusion_matrix(truth[scored], predicted[scored], len(classes)), tuple(classes))
    for k, name in enumerate(classes):
        if (truth[scored] == k).any():
            assert accuracy.f1[-1, k] == pytest.approx(expected["per_class"][name]["f1"], abs=1e-9)

    rows = list(csv.DictReader((tmp_path / "out" / "inseason.csv").open(encoding="utf-8")))
    np.testing.assert_allclose([float(r["macro_f1"]) for r in rows], accuracy.macro_f1, atol=5e-5)
    reached = {r["class"]: r for r in csv.DictReader((tmp_path / "out" / "inseason_classes.csv").open(encoding="utf-8"))}
    for name, gdd in accuracy.reached().items():
        if gdd is not None:
            assert float(reached[name]["gdd_at_90pct"]) == pytest.approx(gdd, abs=0.5)
    assert (tmp_path / "out" / "inseason.png").stat().st_size > 1000

    # An earlier run's files are kept unless asked, before any scene is read; the command says the same.
    with pytest.raises(OutputError):
        app.run_season_accuracy(_request(tiny_region, tmp_path / "out"))
    capsys.readouterr()
    assert main(["inseason", "--reference", str(tiny_region / "parcels.gpkg"), "--label-field", "crop",
                 "--scenes", str(tiny_region / "scenes"), "--weather", str(tiny_region / "weather.nc"),
                 "--out", str(tmp_path / "out"), "--overwrite"]) == 0
    assert f"{accuracy.parcels} parcels, {len(scenes)} acquisitions" in capsys.readouterr().out


def test_reference_without_label_field_or_with_data_is_refused(tiny_region, tmp_path, capsys):
    common = ["inseason", "--reference", str(tiny_region / "parcels.gpkg"), "--scenes", str(tiny_region / "scenes"),
              "--weather", str(tiny_region / "weather.nc"), "--out", str(tmp_path / "out")]
    assert main(common) != 0
    assert "--label-field" in capsys.readouterr().err
    assert main([*common, "--label-field", "crop", "--data", str(tmp_path)]) != 0
    assert "either --data" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_reference_without_a_class_of_the_model_is_refused_naming_the_layer(tiny_region, tmp_path):
    from thermocrop.core.errors import DatasetError

    layer = gpd.read_file(tiny_region / "parcels.gpkg").head(6)
    layer["crop"] = "no_such_crop"
    layer.to_file(tmp_path / "ref.gpkg")
    request = replace(_request(tiny_region, tmp_path / "out"), reference=ParcelsSpec(str(tmp_path / "ref.gpkg")))
    with pytest.raises(DatasetError, match="ref.gpkg"):
        app.run_season_accuracy(request)
    assert not (tmp_path / "out").exists()
    # The labels alone decide it, before any pixel is read: nothing is extracted.
    from unittest import mock

    with mock.patch("thermocrop.app.season_accuracy_run.run_extraction") as extraction:
        with pytest.raises(DatasetError, match="none of its 6 parcels has a label of the model's classes"):
            app.run_season_accuracy(request)
    assert not extraction.called


def test_a_model_of_another_level_than_the_scenes_is_said(tiny_region, tmp_path):
    from thermocrop.core.model.bundle import default_bundle_path

    reports = []
    run = app.run_season_accuracy(_request(tiny_region, tmp_path / "out", model=str(default_bundle_path("L1C"))),
                                  app.RunProgress(report=reports.append))
    assert run.model == "default_fast.tcm"
    assert any("The model was trained on L1C scenes but these are L2A" in r for r in reports), reports
    # The model scored is named; given by the user, it is scored without a word on the in-season model.
    assert "Scoring default_fast.tcm as of each acquisition" in reports, reports


def test_scoring_the_shipped_l1c_model_for_want_of_one_names_the_in_season_model():
    """The command line and Processing scored default_fast.tcm without saying that runs as of a date
    early in the season use inseason.tcm, nor where that is."""
    from thermocrop.app.season_accuracy_run import _inseason_note
    from thermocrop.core.model.bundle import default_bundle_path

    note = _inseason_note(None, "default_fast.tcm")
    assert "fewer than 2,000 GDD uses inseason.tcm" in note
    assert note.endswith(str(default_bundle_path("L1C").parent / "inseason.tcm"))
    assert _inseason_note("default_fast.tcm", "default_fast.tcm") == ""
    assert _inseason_note(None, "default_fast_l2a.tcm") == ""


def test_reference_parcels_without_a_result_are_said(tiny_region, tmp_path):
    """A calibration said which parcels had no result; the accuracy through the season dropped them
    without a word."""
    from shapely import affinity

    layer = gpd.read_file(tiny_region / "parcels.gpkg")
    layer.loc[:14, "geometry"] = [affinity.translate(g, 50_000, 0) for g in layer.geometry[:15]]
    path = tmp_path / "moved.gpkg"
    layer.to_file(path)
    reports = []
    request = replace(_request(tiny_region, tmp_path / "out"), reference=ParcelsSpec(str(path), name="moved"))
    run = app.run_season_accuracy(request, app.RunProgress(report=reports.append))
    assert "15 reference parcels of moved have no result and are left out (outside_scenes 15)." in reports, reports
    assert run.accuracy.parcels <= len(layer) - 15
