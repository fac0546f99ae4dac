"""The leave-one-region-out experiment as of cuts through the season: a cut's row equals one
whole classification of the held-out region with the dates after the cut left out."""

from __future__ import annotations

import csv
from dataclasses import replace

import numpy as np
import pytest
from test_train import make_pixel_sets

from thermocrop.cli.main import main
from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.pixel_sets import open_dataset, save_dataset
from thermocrop.training.metrics import confusion_matrix, scores


@pytest.mark.slow
def test_as_of_rows_equal_one_classification_per_cut(tmp_path, capsys):
    regions = []
    for i, name in enumerate(("R1", "R2")):
        save_dataset(make_pixel_sets(n=40, seed=20 + i, blocks=6), tmp_path / name)
        regions.append(str(tmp_path / name))
    out = tmp_path / "exp"
    assert main(["experiment", "--regions", *regions, "--variants", "calendar", "tpe_recurrent", "--out", str(out),
                 "--epochs", "1", "--steps-per-epoch", "2", "--batch-size", "8", "--sample-pixels", "4",
                 "--sample-dates", "5", "--device", "cpu", "--as-of-steps", "3"]) == 0
    rows = list(csv.DictReader((out / "as_of.csv").open(encoding="utf-8")))
    assert [(r["variant"], r["held_out"], r["cut"]) for r in rows] == [
        (v, g, str(c)) for v in ("calendar", "tpe_recurrent") for g in ("R1", "R2") for c in (1, 2, 3)]

    # Cut 2 of 3 of tpe_recurrent held out R1, recomputed with one classification.
    ps = open_dataset(regions[0])
    bundle = load_bundle(out / "tpe_recurrent" / "R1" / "model.tcm")
    usable = np.flatnonzero((np.asarray(ps.status) == "ok") & (np.asarray(ps.labels) >= 0))
    sub = ps.subset(usable)
    median = np.median(np.asarray(sub.gdd, dtype=np.float64), axis=0)
    threshold = 2 / 3 * median[-1]
    kept = int((median <= threshold).sum())
    mask = np.asarray(sub.date_mask).copy()
    mask[:, kept:] = False
    predicted = bundle.predict(replace(sub, date_mask=mask)).argmax(axis=1)
    names = np.asarray(ps.classes)[np.asarray(sub.labels)]
    truth = np.array([list(bundle.classes).index(n) for n in names])
    expected = scores(confusion_matrix(truth, predicted, len(bundle.classes)), tuple(bundle.classes))
    row = next(r for r in rows if (r["variant"], r["held_out"], r["cut"]) == ("tpe_recurrent", "R1", "2"))
    assert float(row["season_fraction"]) == pytest.approx(2 / 3, abs=1e-4)
    assert float(row["gdd"]) == pytest.approx(threshold, abs=0.05)
    assert int(row["acquisitions"]) == kept and row["date"] == str(ps.dates[kept - 1])
    assert float(row["overall_accuracy"]) == pytest.approx((predicted == truth).mean(), abs=5e-5)
    assert float(row["macro_f1"]) == pytest.approx(expected["macro_f1"], abs=5e-5)

    # The last cut is the whole season; the 90 % point is the first acquisition that reaches it.
    whole = bundle.predict(sub).argmax(axis=1)
    season_f1 = scores(confusion_matrix(truth, whole, len(bundle.classes)), tuple(bundle.classes))["macro_f1"]
    last = next(r for r in rows if (r["variant"], r["held_out"], r["cut"]) == ("tpe_recurrent", "R1", "3"))
    assert float(last["macro_f1"]) == pytest.approx(season_f1, abs=5e-5)
    first = None
    for t in range(ps.n_dates):
        cut = np.asarray(sub.date_mask).copy()
        cut[:, t + 1:] = False
        f1 = scores(confusion_matrix(truth, bundle.predict(replace(sub, date_mask=cut)).argmax(axis=1),
                                     len(bundle.classes)), tuple(bundle.classes))["macro_f1"]
        if f1 >= 0.9 * season_f1 - 1e-12:
            first = t
            break
    reached = next(r for r in csv.DictReader((out / "as_of_reached.csv").open(encoding="utf-8"))
                   if (r["variant"], r["held_out"]) == ("tpe_recurrent", "R1"))
    assert reached["date_at_90pct"] == str(ps.dates[first])
    assert float(reached["gdd_at_90pct"]) == pytest.approx(median[first], abs=0.5)

    summary = (out / "as_of.md").read_text(encoding="utf-8")
    assert "| TPE-Recurrent |" in summary and "| Calendar PE |" in summary and "Calendar PE at" in summary
    assert (out / "as_of.png").stat().st_size > 1000
    assert "33 % GDD" in capsys.readouterr().out
