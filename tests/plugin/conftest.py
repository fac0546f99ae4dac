"""A small trained model and the tiny region's files as the plugin tests take them (the QGIS
application and the provider are in tests/conftest.py)."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session")
def small_bundle(tiny_region, region_weather, tmp_path_factory):
    """A model bundle briefly trained on the tiny region (a few hundred steps, CPU)."""
    pytest.importorskip("torch")
    import torch

    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.core.extract import extract_pixel_sets
    from thermocrop.core.model.bundle import BundleConfig, InputScaling, save_bundle
    from thermocrop.core.model.networks import build_model

    ps = extract_pixel_sets(tiny_region / "parcels.gpkg", tiny_region / "scenes", region_weather,
                            settings=ExtractionSettings(sampling=PixelSampling(max_pixels=16)),
                            fields=ParcelFields(label_field="crop", classes=CROP_CLASSES))
    keep = np.flatnonzero((ps.status == "ok") & (ps.labels >= 0))
    train = ps.subset(keep)
    scaling = InputScaling.from_pixel_sets(train)
    torch.manual_seed(0)
    model = build_model("tpe_sinusoidal", len(CROP_CLASSES))
    x = torch.from_numpy(scaling.apply(np.asarray(train.pixels), np.asarray(train.pixel_mask)))
    pmask = torch.from_numpy(np.asarray(train.pixel_mask))
    dmask = torch.from_numpy(np.asarray(train.date_mask))
    dos = torch.from_numpy(np.broadcast_to(train.day_of_season, train.gdd.shape).copy())
    gdd = torch.from_numpy(np.asarray(train.gdd, dtype=np.float32))
    y = torch.from_numpy(train.labels.astype(np.int64))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    gen = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(120):
        b = torch.randint(0, len(y), (32,), generator=gen)
        loss = torch.nn.functional.cross_entropy(model(x[b], pmask[b], dmask[b], dos[b], gdd[b]), y[b])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    path = tmp_path_factory.mktemp("model") / "small.tcm"
    save_bundle(path, model, BundleConfig(variant="tpe_sinusoidal", classes=CROP_CLASSES, scaling=scaling,
                                          provenance={"regions": "FR2 synthetic seed 0", "metrics": {}}))
    return path


@pytest.fixture(scope="session")
def region_weather(tiny_region):
    """The tiny region's E-OBS-style daily temperature grid."""
    return tiny_region / "weather.nc"


@pytest.fixture(scope="session")
def scene_files(tiny_region):
    """The tiny region's scene files, as a Processing multiple-layer value."""
    return sorted(str(p) for p in (tiny_region / "scenes").glob("*.tif"))


# The plugin installed from its zip into a fresh profile, packages and all (tests/plugin/installed_qgis.py).
from installed_qgis import installed_profile  # noqa: E402,F401

from thermocrop.core.parcels import ParcelFields
from thermocrop.core.settings import ExtractionSettings, PixelSampling


@pytest.fixture(scope="session")
def calibrated_small_bundle(tiny_region, region_weather, small_bundle, tmp_path_factory):
    """``small_bundle`` calibrated on the tiny region's labelled parcels (``app.run_calibration``)."""
    from thermocrop import app

    out = tmp_path_factory.mktemp("calibrated") / "small_calibrated.tcm"
    request = app.CalibrateRequest(reference=app.ParcelsSpec(str(tiny_region / "parcels.gpkg")), label_field="crop",
                                   scenes=app.ScenesSpec(files=(str(tiny_region / "scenes"),)),
                                   weather=app.WeatherSpec(path=str(region_weather)), out=str(out),
                                   model=str(small_bundle))
    return app.run_calibration(request).path


@pytest.fixture(scope="session")
def set_bundle(small_bundle, tmp_path_factory):
    """``small_bundle`` with a calibration set by hand: temperature 1 (its probabilities as they
    are) and 99 scores, 79 of 0 and 20 of 0.9, so that the 80 % sets (the 80th smallest score,
    0.9) hold every class of probability 0.1 or more."""
    from thermocrop.core.model.bundle import calibrated_bundle, load_bundle
    from thermocrop.core.model.calibration import Calibration

    path = tmp_path_factory.mktemp("sets") / "small_sets.tcm"
    calibration = Calibration(temperature=1.0, scores=(0.0,) * 79 + (0.9,) * 20, parcels=99, source="by hand")
    calibrated_bundle(load_bundle(small_bundle), calibration, path)
    return path


@pytest.fixture(scope="session")
def partition_region(tmp_path_factory, write_scenes, write_station_weather) -> dict:
    """Files of partitioned runs: 4 L1C scenes of 60 x 60 px, 40 parcels (one outside the scenes,
    one smaller than a pixel) with a ``crop`` label, a station CSV of a year's temperatures."""
    import geopandas as gpd
    from shapely.geometry import box

    x0, y0 = 500000.0, 4800000.0
    root = tmp_path_factory.mktemp("partitioned")
    write_scenes(root / "scenes", size=60, seed=5)
    # 36 parcels on a 6 x 6 grid listed column by column (layer order is not strip order), one
    # outside the scenes, one smaller than a pixel, two long ones across the grid.
    geoms = [box(x0 + 100 * c + 12, y0 - 100 * r - 88, x0 + 100 * c + 88, y0 - 100 * r - 12)
             for c in range(6) for r in range(6)]
    geoms += [box(x0 - 900, y0 + 100, x0 - 800, y0 + 200), box(x0 + 301, y0 - 309, x0 + 304, y0 - 301),
              box(x0 + 20, y0 - 590, x0 + 580, y0 - 560), box(x0 + 560, y0 - 580, x0 + 590, y0 - 20)]
    crops = ["wheat", "maize", "barley"]
    gpd.GeoDataFrame({"parcel_id": [f"p{k:02d}" for k in range(len(geoms))],
                      "crop": [crops[k % 3] for k in range(len(geoms))]},
                     geometry=geoms, crs="EPSG:32631").to_file(root / "parcels.gpkg", driver="GPKG")
    write_station_weather(root / "weather.csv")
    return {"scenes": str(root / "scenes"), "parcels": str(root / "parcels.gpkg"), "weather": str(root / "weather.csv")}


@pytest.fixture
def log_feedback(qgis_app):
    """Makes a Processing feedback that keeps what an algorithm logged (``pushInfo``) in ``lines``."""
    from qgis.core import QgsProcessingFeedback

    class Recording(QgsProcessingFeedback):
        def __init__(self):
            super().__init__()
            self.lines = []

        def pushInfo(self, info):  # noqa: N802 (QGIS API)
            self.lines.append(info)
            super().pushInfo(info)

    return Recording
