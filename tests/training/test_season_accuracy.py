"""Accuracy through the season equals scoring one classification per cut of the season."""

from __future__ import annotations

import csv
from dataclasses import replace

import numpy as np
import torch

from thermocrop.cli.main import main
from thermocrop.core.model.bundle import BundleConfig, InputScaling, ModelBundle, save_bundle
from thermocrop.core.model.networks import build_model
from thermocrop.core.pixel_sets import PixelSets, save_dataset
from thermocrop.training.metrics import confusion_matrix, scores
from thermocrop.training.season_accuracy import SeasonAccuracy, accuracy_through_season

CLASSES = ("corn", "meadow", "winter_wheat", "soy")


def _dataset(p=60, t=6, s=4, seed=2):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, p).astype(np.int16)  # "soy" is never in the reference
    pmask = rng.random((p, t, s)) > 0.2
    pmask[:, :, 0] = True
    base = rng.integers(500, 3000, (p, t, 10, s))
    base[:, :, 6] += (labels[:, None, None] * 900 * np.linspace(0, 1, t)[None, :, None]).astype(np.int64)
    pixels = (base * pmask[:, :, None, :]).astype(np.uint16)
    dmask = rng.random((p, t)) > 0.15
    dmask[:4, :2] = False  # parcels first seen later
    dates = np.datetime64("2021-04-01") + np.arange(t) * 20
    dos = (dates - np.datetime64("2021-01-01")).astype(np.float32)
    gdd = (np.tile(dos * 9.0, (p, 1)) + rng.random((p, t)) * 10).astype(np.float32)
    return PixelSets(pixels=pixels, pixel_mask=pmask, date_mask=dmask, gdd=gdd, dates=dates, day_of_season=dos,
                     parcel_ids=np.array([f"p{i}" for i in range(p)]), status=np.array(["ok"] * p),
                     labels=labels, classes=CLASSES[:3])


def _model(ps):
    torch.manual_seed(0)
    model = build_model("tpe_recurrent", len(CLASSES))
    model(torch.randn(8, 5, 10, 4), torch.ones(8, 5, 4, dtype=torch.bool), torch.ones(8, 5, dtype=torch.bool),
          torch.rand(8, 5) * 100, torch.rand(8, 5) * 1000)
    config = BundleConfig(variant="tpe_recurrent", classes=CLASSES, colours={c: "#000000" for c in CLASSES},
                          scaling=InputScaling.from_pixel_sets(ps))
    return model.eval(), config


def test_scores_as_of_each_acquisition_equal_one_run_per_cut(tmp_path, capsys):
    ps = _dataset()
    model, config = _model(ps)
    bundle = ModelBundle(model, config)
    accuracy = accuracy_through_season(bundle, ps)
    assert accuracy.parcels == len(ps) and len(accuracy.dates) == ps.n_dates
    truth = np.asarray(ps.labels).astype(np.int64)
    for t in range(ps.n_dates):
        mask = np.asarray(ps.date_mask).copy()
        mask[:, t + 1:] = False
        probabilities = bundle.predict(replace(ps, date_mask=mask))
        seen = np.isfinite(probabilities).all(axis=1)
        predicted = probabilities.argmax(axis=1)
        correct = (predicted == truth) & seen
        assert accuracy.overall_accuracy[t] == correct.mean()
        if seen.all():  # with every parcel predicted, the confusion matrix gives the same scores
            expected = scores(confusion_matrix(truth, predicted, len(CLASSES)), CLASSES)
            assert abs(accuracy.macro_f1[t] - expected["macro_f1"]) < 1e-12
            for k, name in enumerate(CLASSES[:3]):
                assert abs(accuracy.f1[t, k] - expected["per_class"][name]["f1"]) < 1e-12
        assert accuracy.gdd[t] == np.median(ps.gdd[:, t].astype(np.float64))
    assert np.isnan(accuracy.f1[:, 3]).all()
    reached = accuracy.reached()
    for k, name in enumerate(CLASSES[:3]):
        final = accuracy.f1[-1, k]
        first = next(t for t in range(ps.n_dates) if accuracy.f1[t, k] >= 0.9 * final) if final > 0 else None
        assert reached[name] == (None if first is None else accuracy.gdd[first])
    assert reached["soy"] is None

    # The command: the same numbers in its CSV table.
    save_bundle(tmp_path / "m.tcm", model, config)
    save_dataset(ps, tmp_path / "data")
    assert main(["inseason", "--data", str(tmp_path / "data"), "--model", str(tmp_path / "m.tcm"),
                 "--out", str(tmp_path / "out")]) == 0
    rows = list(csv.DictReader((tmp_path / "out" / "inseason.csv").open(encoding="utf-8")))
    assert [r["date"] for r in rows] == [str(d) for d in ps.dates]
    np.testing.assert_allclose([float(r["overall_accuracy"]) for r in rows], accuracy.overall_accuracy, atol=5e-5)
    assert (tmp_path / "out" / "inseason.png").stat().st_size > 1000
    assert "60 parcels, 6 acquisitions" in capsys.readouterr().out
    # An existing table is replaced only when asked.
    assert main(["inseason", "--data", str(tmp_path / "data"), "--model", str(tmp_path / "m.tcm"),
                 "--out", str(tmp_path / "out")]) != 0


def test_overall_reached_is_the_first_acquisition_at_90_percent_of_the_season():
    def season(oa):
        n = len(oa)
        return SeasonAccuracy(dates=np.datetime64("2020-04-01") + np.arange(n), gdd=100.0 * np.arange(n),
                              overall_accuracy=np.array(oa), macro_f1=np.array(oa), f1=np.zeros((n, 1)),
                              classes=("corn",), parcels=10)

    # 90 % of 0.9 is 0.81: 0.85 is the first at or above it, the dip after it does not matter.
    assert season([0.2, 0.5, 0.85, 0.7, 0.9]).overall_reached() == 2
    assert season([0.2, 0.5, 0.85, 0.7, 0.9]).overall_reached(share=1.0) == 4
    assert season([0.0, 0.0]).overall_reached() is None


def test_classes_never_right_are_named_not_left_out():
    """A class none of whose parcels was named right had no line in the per-class list of the
    command line and the Toolbox, as if it were absent."""
    f1 = np.array([[0.2, 0.0, np.nan], [0.6, 0.0, np.nan]])  # corn reaches, wheat never right, rye absent
    season = SeasonAccuracy(dates=np.datetime64("2020-04-01") + np.arange(2), gdd=np.array([500.0, 900.0]),
                            overall_accuracy=np.array([0.3, 0.5]), macro_f1=np.array([0.1, 0.3]), f1=f1,
                            classes=("corn", "wheat", "rye"), parcels=10)
    assert season.reached() == {"corn": 900.0, "wheat": None, "rye": None}
    assert season.never_right() == ["wheat"]


def test_without_a_model_the_datasets_level_picks_the_shipped_model(tmp_path, caplog):
    from thermocrop.core.model.bundle import default_bundle_path, load_bundle

    shipped = load_bundle(default_bundle_path("L2A"))
    ps = _dataset(p=20)
    ps = replace(ps, classes=tuple(shipped.config.classes[:3]), meta={"levels": ["L2A"]})
    save_dataset(ps, tmp_path / "data")
    caplog.set_level("INFO", logger="thermocrop")
    assert main(["inseason", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "out")]) == 0
    assert f"L2A scenes: using the shipped L2A model {default_bundle_path('L2A').name}" in caplog.text
