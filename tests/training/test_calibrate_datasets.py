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
    # A second run into the same file is refused without --overwrite (exit code 5).
    assert main(["calibrate", str(raw_path), "--dataset", str(tmp_path / "data"), "--out", str(out)]) == 5
