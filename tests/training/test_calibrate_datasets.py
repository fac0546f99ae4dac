"""thermocrop calibrate --dataset: the calibration fitted on extracted or imported parcels."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_train import make_pixel_sets

from thermocrop.core.model.bundle import default_bundle_path, load_bundle, save_bundle
from thermocrop.core.model.calibration import fit_temperature
from thermocrop.core.pixel_sets import save_dataset


def test_calibrate_on_a_dataset_from_the_command_line(tmp_path, capsys):
    from thermocrop.cli.main import main

    shipped = load_bundle(default_bundle_path())
    raw_path = tmp_path / "raw.tcm"
    save_bundle(raw_path, shipped.model, replace(shipped.config, calibration={}))
    ps = make_pixel_sets(n=80, seed=7)
    ps.labels[:5] = -1  # unlabelled parcels are left out
    save_dataset(ps, tmp_path / "data")
    out = tmp_path / "cal.tcm"
    assert main(["calibrate", str(raw_path), "--dataset", str(tmp_path / "data"), "--out", str(out)]) == 0
    calibrated = load_bundle(out)
    usable = np.flatnonzero((ps.status == "ok") & (ps.labels >= 0))
    raw = load_bundle(raw_path).predict(ps.subset(usable))
    assert calibrated.calibration.parcels == len(usable) == 74
    assert calibrated.calibration.temperature == pytest.approx(fit_temperature(raw, ps.labels[usable]), rel=1e-4)
    assert "calibrated on 74 parcels" in capsys.readouterr().out
    # The season stages: each stage's temperature is the one that fits the parcels cut at the dates
    # whose GDD fall in it; a stage of fewer than 50 such cuts is left out.
    from thermocrop.core.model.season_stages import prefix_gdd

    stages = calibrated.calibration.stages
    part = ps.subset(usable)
    prefixes = load_bundle(raw_path).predict_prefixes(part)
    gdd = prefix_gdd(part.gdd, part.date_mask)
    bounds = [-np.inf, 400.0, 800.0, 1200.0, 1600.0, 2000.0]
    seen = ~np.isnan(prefixes).any(axis=2)
    kept = [high for low, high in zip(bounds, bounds[1:]) if ((gdd >= low) & (gdd < high) & seen).sum() >= 50]
    assert [s.below_gdd for s in stages] == kept and len(kept) >= 3
    for stage in stages:
        low = bounds[bounds.index(stage.below_gdd) - 1]
        cut = (gdd >= low) & (gdd < stage.below_gdd) & seen
        parcel, date = np.nonzero(cut)
        assert stage.temperature == pytest.approx(fit_temperature(prefixes[parcel, date], ps.labels[usable][parcel]),
                                                  rel=1e-4)
        assert len(stage.scores) == cut.sum() and stage.parcels == len(np.unique(parcel))
    # A second run into the same file is refused without --overwrite (exit code 5).
    assert main(["calibrate", str(raw_path), "--dataset", str(tmp_path / "data"), "--out", str(out)]) == 5


def test_vector_scaling_on_a_dataset_from_the_command_line(tmp_path, capsys):
    from scipy.optimize import minimize

    from thermocrop.cli.main import main
    from thermocrop.core.model.calibration import VECTOR_PENALTIES

    shipped = load_bundle(default_bundle_path())
    raw_path = tmp_path / "raw.tcm"
    save_bundle(raw_path, shipped.model, replace(shipped.config, calibration={}))
    ps = make_pixel_sets(n=80, seed=8)
    save_dataset(ps, tmp_path / "data")
    out = tmp_path / "vector.tcm"
    assert main(["calibrate", str(raw_path), "--dataset", str(tmp_path / "data"), "--method", "vector",
                 "--out", str(out)]) == 0
    calibration = load_bundle(out).calibration
    assert calibration.method == "vector" and len(calibration.bias) == len(shipped.classes)
    assert "by vector scaling" in capsys.readouterr().out
    usable = np.flatnonzero((ps.status == "ok") & (ps.labels >= 0))
    labels = np.asarray(ps.labels)[usable]
    log_p = np.log(np.clip(load_bundle(raw_path).predict(ps.subset(usable)).astype(np.float64), 1e-12, 1.0))

    # The stored temperature and biases are the minimum of the penalised likelihood for one of the
    # penalties offered, found here by another optimiser from another start.
    def objective(w, penalty):
        z = w[0] * log_p + w[1:]
        z = z - z.max(axis=1, keepdims=True)
        return np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(labels)), labels]) + penalty * w[1:] @ w[1:]

    stored = np.concatenate([[1.0 / calibration.temperature], calibration.bias])
    start = np.concatenate([[0.5], np.full(len(calibration.bias), 0.1)])
    found = {penalty: minimize(objective, start, args=(penalty,), method="BFGS", options={"gtol": 1e-9}).x
             for penalty in VECTOR_PENALTIES}
    closest = min(found.values(), key=lambda w: np.abs(w - stored).max())
    np.testing.assert_allclose(stored, closest, atol=2e-3)


def test_a_dataset_of_one_class_is_refused_naming_it(tmp_path, capsys):
    from thermocrop.cli.main import main

    ps = make_pixel_sets(n=80, seed=7)
    ps.labels[:] = ps.labels[0]
    save_dataset(ps, tmp_path / "data")
    out = tmp_path / "cal.tcm"
    assert main(["calibrate", str(default_bundle_path()), "--dataset", str(tmp_path / "data"), "--out", str(out)]) != 0
    said = capsys.readouterr().err
    assert f"labelled {ps.classes[ps.labels[0]]}; a calibration needs parcels of at least two classes" in said, said
    assert not out.exists()


def test_a_dataset_calibration_with_another_gdd_floor(tmp_path):
    from thermocrop.cli.main import main
    from thermocrop.core.model.bundle import with_gdd_floor

    shipped = load_bundle(default_bundle_path())
    raw_path = tmp_path / "raw.tcm"
    save_bundle(raw_path, shipped.model, replace(shipped.config, calibration={}))
    ps = make_pixel_sets(n=80, seed=9)
    floor = float(np.median(ps.gdd[ps.date_mask]))  # about half of each parcel's dates below it
    save_dataset(ps, tmp_path / "data")
    out = tmp_path / "floor.tcm"
    assert main(["calibrate", str(raw_path), "--dataset", str(tmp_path / "data"), "--gdd-floor", str(floor),
                 "--out", str(out)]) == 0
    calibrated = load_bundle(out)
    assert calibrated.config.gdd["floor"] == pytest.approx(floor)
    usable = np.flatnonzero((ps.status == "ok") & (ps.labels >= 0))
    raw = with_gdd_floor(load_bundle(raw_path), floor).predict(ps.subset(usable))
    assert not np.allclose(raw, load_bundle(raw_path).predict(ps.subset(usable)))
    assert calibrated.calibration.temperature == pytest.approx(fit_temperature(raw, ps.labels[usable]), rel=1e-4)
    assert main(["calibrate", str(raw_path), "--dataset", str(tmp_path / "data"), "--gdd-floor", "-1",
                 "--out", str(tmp_path / "bad.tcm")]) != 0
    assert not (tmp_path / "bad.tcm").exists()
