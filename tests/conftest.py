"""Shared test set-up: QGIS tests run where QGIS is installed, offscreen."""

from __future__ import annotations

import importlib.util
import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PROJ_DATA", "/usr/share/proj")
# The suite compares probabilities across runs and against reference computations in fp32. On a CPU
# with native bf16 (AVX512-BF16, AMX), ``auto`` times both per model and may take bf16, whose
# probabilities differ from fp32's by about 1e-3; the choice itself and bf16's agreement with fp32
# are tested in tests/core/test_precision.py, which sets the variable as each test needs.
os.environ.setdefault("THERMOCROP_PRECISION", "fp32")

HAVE_QGIS = importlib.util.find_spec("qgis") is not None


def pytest_collection_modifyitems(config, items):
    if HAVE_QGIS:
        return
    skip = pytest.mark.skip(reason="QGIS (python3-qgis) is not installed")
    for item in items:
        if "qgis" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _each_test_a_run():
    """Each test starts as a run does: weather warnings said in an earlier test are said again."""
    from thermocrop.core.thermal.daily_values import new_run

    new_run()


# Synthetic regions (synth/): generated once per test session and shared.
@pytest.fixture(scope="session")
def make_region(tmp_path_factory):
    """Factory ``make_region(region="FR2", level="L2A", seed=0, parcels=100, **kw) -> Path``.

    Each distinct set of arguments is generated once per session into its own folder; tests
    must not modify the files.
    """
    from thermocrop.synth import generate_region

    cache = {}

    def make(region="FR2", level="L2A", seed=0, parcels=100, **kwargs):
        key = (region, level, seed, parcels, tuple(sorted(kwargs.items())))
        if key not in cache:
            name = f"{region}_{level}_s{seed}_p{parcels}_{len(cache)}"
            out = tmp_path_factory.mktemp("synth") / name
            generate_region(region, out, parcels=parcels, seed=seed, level=level, **kwargs)
            cache[key] = out
        return cache[key]

    return make


# Small files of a test region at 500 km E, 4800 km N of UTM zone 31N (tile 31TCJ).
REGION_CRS = "EPSG:32631"
REGION_ORIGIN = (500000.0, 4800000.0)
REGION_SCENE_DATES = ("20230412", "20230524", "20230602", "20230720")


@pytest.fixture(scope="session")
def write_scenes():
    """Factory ``write_scenes(folder, *, size, seed) -> folder``: one 10-band uint16 L1C GeoTIFF
    of ``size`` x ``size`` pixels of 10 m per date of :data:`REGION_SCENE_DATES`, their upper
    left corner at :data:`REGION_ORIGIN`, digital numbers drawn from 1200 to 4999 by a generator
    seeded with ``seed``, 0 as nodata."""
    import numpy as np
    import rasterio
    from rasterio.transform import from_origin

    from thermocrop.core.scenes.bands import S2_BANDS

    def write(folder, *, size: int, seed: int):
        rng = np.random.default_rng(seed)
        folder.mkdir(parents=True, exist_ok=True)
        for date in REGION_SCENE_DATES:
            path = folder / f"S2A_MSIL1C_{date}T100031_N0509_R122_T31TCJ_{date}T110000.tif"
            with rasterio.open(path, "w", driver="GTiff", width=size, height=size, count=10, dtype="uint16",
                               crs=REGION_CRS, transform=from_origin(*REGION_ORIGIN, 10, 10), nodata=0) as ds:
                ds.write(rng.integers(1200, 5000, size=(10, size, size), dtype=np.uint16))
                for i, band in enumerate(S2_BANDS, start=1):
                    ds.set_band_description(i, band)
        return folder

    return write


@pytest.fixture(scope="session")
def write_station_weather():
    """Factory ``write_station_weather(path) -> path``: a station CSV (date, tmin, tmax) of 2023
    whose temperatures follow one sine wave over the year."""
    import numpy as np

    def write(path):
        days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2023-12-31"))
        temps = "".join(f"{d},{2 + 6 * np.sin(i / 58):.1f},{12 + 9 * np.sin(i / 58):.1f}\n"
                        for i, d in enumerate(days))
        path.write_text("date,tmin,tmax\n" + temps, encoding="utf-8")
        return path

    return write


@pytest.fixture(scope="session")
def tiny_region(make_region):
    """Folder of a tiny FR2 L2A region: ~100 parcels, 39 scenes of 240 px, weather.nc, truth.json."""
    return make_region("FR2", "L2A", seed=0, parcels=100)



def late_signal_pixel_sets(n: int = 300, t: int = 12, seed: int = 0):
    """Pixel sets of three classes that look alike until the middle of the season: every parcel
    has the same band levels on its first ``t // 2`` dates and a level of its class's from then
    on. GDD grow by 100 a date for every parcel, so date ``i`` is at ``(i + 1) / t`` of the season's GDD."""
    import numpy as np

    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.core.pixel_sets import PixelSets

    rng = np.random.default_rng(seed)
    s = 6
    labels = (np.arange(n) % 3).astype(np.int16)
    late = (np.arange(t) >= t // 2)[None, :, None, None]
    level = 2000.0 + late * 1500.0 * labels[:, None, None, None]
    pixels = (level + rng.normal(0, 100, (n, t, 10, s))).clip(1, 65535).astype(np.uint16)
    dates = np.datetime64("2017-03-01") + np.arange(t) * 15
    return PixelSets(pixels=pixels, pixel_mask=np.ones((n, t, s), bool), date_mask=np.ones((n, t), bool),
                     gdd=np.tile(100.0 * np.arange(1, t + 1), (n, 1)).astype(np.float32), dates=dates,
                     day_of_season=(dates - np.datetime64("2017-01-01")).astype(np.float32),
                     parcel_ids=np.array([f"p{i}" for i in range(n)]), status=np.array(["ok"] * n),
                     labels=labels, blocks=(np.arange(n) // 15).astype(np.int32), classes=CROP_CLASSES[:3])


@pytest.fixture(scope="session")
def late_signal_model(tmp_path_factory):
    """A tiny model trained here on :func:`late_signal_pixel_sets` (its bundle records its accuracy
    through the season on the validation blocks): ``{"bundle", "data", "config"}``. Half its
    samples cut to part seasons, it tells the classes apart from the middle of the season on."""
    from thermocrop.core.pixel_sets import open_dataset, save_dataset
    from thermocrop.training.train import TrainingConfig, train_model

    root = tmp_path_factory.mktemp("late_signal")
    save_dataset(late_signal_pixel_sets(), root / "data")
    config = TrainingConfig(variant="tpe_sinusoidal", epochs=4, steps_per_epoch=8, batch_size=16, sample_pixels=2,
                            sample_dates=12, lr=5e-3, season_window_share=0.5, season_cuts=10,
                            model_settings={"dropout": 0.0}, device="cpu")
    result = train_model([open_dataset(root / "data")], root / "model.tcm", config, show_progress=False)
    return {"bundle": result.bundle_path, "data": root / "data", "config": config}

@pytest.fixture
def random_batch():
    """Factory ``random_batch(b, t, s, generator)`` of model inputs drawn from ``generator``:
    pixels (70 % valid), dates (80 % valid, the first always), days of season and GDD."""
    import torch

    def make(b, t, s, g):
        pmask = torch.rand(b, t, s, generator=g) > 0.3
        pixels = torch.randn(b, t, 10, s, generator=g) * pmask.unsqueeze(2)
        dmask = torch.rand(b, t, generator=g) > 0.2
        dmask[:, 0] = True
        dos = torch.cumsum(torch.rand(b, t, generator=g) * 20 + 1, dim=1)
        gdd = torch.cumsum(torch.rand(b, t, generator=g) * 200 + 5, dim=1)
        return pixels, pmask, dmask, dos, gdd

    return make


# One QGIS application per test session (offscreen), with Processing and the ThermoCrop provider.
@pytest.fixture(scope="session")
def qgis_app(tmp_path_factory):
    """The QgsApplication with Processing initialised and a throw-away profile folder."""
    pytest.importorskip("qgis")
    from qgis.core import QgsApplication

    profile = tmp_path_factory.mktemp("qgis-profile")
    app = QgsApplication([], False, str(profile))
    app.initQgis()
    # QGIS's own Processing plugin lives in a plugin folder (pytest's pythonpath lists it).
    processing = pytest.importorskip("processing.core.Processing")
    Processing = processing.Processing

    Processing.initialize()
    yield app
    Processing.deinitialize()


# Python-side providers must stay referenced while registered, or their overrides vanish.
_PROVIDERS: list = []


@pytest.fixture
def provider(qgis_app):
    """The ThermoCrop provider, registered again if a test removed it."""
    from qgis.core import QgsApplication

    from thermocrop.plugin.provider import ThermoCropProvider

    registry = QgsApplication.processingRegistry()
    if registry.providerById("thermocrop") is None:
        _PROVIDERS.append(ThermoCropProvider())
        registry.addProvider(_PROVIDERS[-1])
    return registry.providerById("thermocrop")
