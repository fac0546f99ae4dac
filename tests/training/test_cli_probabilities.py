"""``thermocrop classify --probabilities``: the per-class, margin and entropy fields on the command line."""

from __future__ import annotations

import math

import numpy as np
import pytest


@pytest.mark.slow
def test_classify_writes_probability_margin_and_entropy_fields(tiny_region, tmp_path):
    pytest.importorskip("torch")
    import geopandas as gpd
    import torch

    from thermocrop.cli.main import main
    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.core.model.bundle import BundleConfig, InputScaling, save_bundle
    from thermocrop.core.model.networks import build_model

    # Plumbing only: an untrained model gives spread-out probabilities, which is what is checked.
    torch.manual_seed(0)
    bundle = tmp_path / "model.tcm"
    save_bundle(bundle, build_model("tpe_sinusoidal", len(CROP_CLASSES)).eval(),
                BundleConfig(classes=CROP_CLASSES, scaling=InputScaling()))
    out = tmp_path / "classified.gpkg"
    assert main(["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--scenes", str(tiny_region / "scenes"),
                 "--weather", str(tiny_region / "weather.nc"), "--model", str(bundle), "--out", str(out),
                 "--probabilities"]) == 0
    back = gpd.read_file(out)
    ok = (back["crop_status"] == "ok").to_numpy()
    assert ok.any()
    p = back[[f"p_{c}" for c in CROP_CLASSES]].to_numpy(dtype=float)[ok]
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-4)
    top = np.sort(p, axis=1)
    np.testing.assert_allclose(back["crop_margin"].to_numpy(dtype=float)[ok], top[:, -1] - top[:, -2], atol=1e-5)
    entropy = -np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0).sum(axis=1) / math.log(len(CROP_CLASSES))
    np.testing.assert_allclose(back["crop_entropy"].to_numpy(dtype=float)[ok], entropy, atol=1e-5)
    # Without the flag the fields are not there.
    plain = tmp_path / "plain.gpkg"
    assert main(["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--scenes", str(tiny_region / "scenes"),
                 "--weather", str(tiny_region / "weather.nc"), "--model", str(bundle), "--out", str(plain)]) == 0
    assert "crop_margin" not in gpd.read_file(plain).columns
