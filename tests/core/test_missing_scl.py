"""L2A products without SCL: refused, used with a warning, or masked by the brightness test."""

from __future__ import annotations

import numpy as np
import pytest
import rasterio
from rasterio.transform import from_origin
from shapely.geometry import box

from thermocrop.cli.main import EXIT_INPUT, main
from thermocrop.core.errors import SceneError
from thermocrop.core.extract import extract_pixel_sets
from thermocrop.core.scenes.bands import S2_BANDS
from thermocrop.core.scenes.local import find_scenes
from thermocrop.core.scenes.radiometry import BRIGHT_CLOUD, bright_cloud_mask, check_missing_scl
from thermocrop.core.settings import ExtractionSettings, PixelSampling

gpd = pytest.importorskip("geopandas")

CRS = "EPSG:32633"
X0, Y0 = 400000.0, 5500000.0
CLOUD_DN = 4500          # reflectance 0.35 after the -1000 offset of baseline 05.09


@pytest.fixture(scope="module")
def l2a_without_scl(tmp_path_factory):
    """Three L2A GeoTIFFs (no SCL) of 20 x 20 px; on the second date a bright cloud covers the
    western half of parcel p1 (columns 1-4 of its 8 x 8 pixels)."""
    root = tmp_path_factory.mktemp("noscl")
    rng = np.random.default_rng(3)
    for k, date in enumerate(("20230412", "20230602", "20230720")):
        path = root / "scenes" / f"S2A_MSIL2A_{date}T100031_N0509_R122_T33UVP_{date}T110000.tif"
        path.parent.mkdir(exist_ok=True)
        dn = rng.integers(1500, 2500, size=(10, 20, 20), dtype=np.uint16)
        if k == 1:
            dn[:, 1:9, 1:5] = CLOUD_DN
        with rasterio.open(path, "w", driver="GTiff", width=20, height=20, count=10, dtype="uint16", crs=CRS,
                           transform=from_origin(X0, Y0, 10, 10), nodata=0) as ds:
            ds.write(dn)
            for i, b in enumerate(S2_BANDS, start=1):
                ds.set_band_description(i, b)
    # p1 covers pixel columns/rows 1..8 (centres 15..85 m); p2 columns 11..18.
    parcels = gpd.GeoDataFrame({"parcel_id": ["p1", "p2"]},
                               geometry=[box(X0 + 10, Y0 - 90, X0 + 90, Y0 - 10),
                                         box(X0 + 110, Y0 - 90, X0 + 190, Y0 - 10)], crs=CRS)
    parcels.to_file(root / "parcels.gpkg", driver="GPKG")
    days = np.arange(np.datetime64("2023-01-01"), np.datetime64("2023-12-31"))
    (root / "weather.csv").write_text("date,tmin,tmax\n" + "".join(f"{d},2.0,12.0\n" for d in days))
    return root


def test_bright_cloud_mask_by_hand():
    values = np.zeros((10, 4), dtype=np.uint16)
    values[:3, 0] = [2500, 2400, 2300]      # bright everywhere: cloud
    values[:3, 1] = [2500, 1200, 1000]      # blue only (mean 1567): not
    values[:3, 2] = [1900, 3000, 3000]      # blue under the threshold: not
    values[:3, 3] = [BRIGHT_CLOUD] * 3      # at the threshold: cloud
    assert bright_cloud_mask(values).tolist() == [True, False, False, True]


def test_refused_unless_asked(l2a_without_scl):
    scenes = find_scenes(l2a_without_scl / "scenes")
    with pytest.raises(SceneError) as error:
        check_missing_scl(scenes, "refuse")
    text = str(error.value)
    assert "3 of 3 L2A products have no scene classification" in text
    assert "--missing-scl bands" in text and "S2A_MSIL2A_20230412" in text
    with pytest.raises(SceneError, match="Unknown missing_scl"):
        check_missing_scl(scenes, "ignore")


def test_warned_or_masked(l2a_without_scl, caplog):
    args = (l2a_without_scl / "parcels.gpkg", l2a_without_scl / "scenes", l2a_without_scl / "weather.csv")
    caplog.set_level("WARNING")
    warned = extract_pixel_sets(*args,
                                settings=ExtractionSettings(sampling=PixelSampling(max_pixels=64, missing_scl="warn")))
    assert "their clouds are not masked" in caplog.text
    masked = extract_pixel_sets(*args,
                                settings=ExtractionSettings(sampling=PixelSampling(max_pixels=64, missing_scl="bands")))
    assert masked.meta["missing_scl"] == "bands"
    # p1 has 64 pixels; 8 x 4 of them are cloud on the second date, which the test removes
    # (32 of 64 clear is the 0.5 minimum fraction, so the date stays).
    assert warned.pixel_mask[0].sum(axis=1).tolist() == [64, 64, 64]
    assert masked.pixel_mask[0].sum(axis=1).tolist() == [64, 32, 64]
    assert masked.pixel_mask[1].sum(axis=1).tolist() == [64, 64, 64]
    kept = masked.pixels[0, 1][:, masked.pixel_mask[0, 1]]
    assert (kept[0] < BRIGHT_CLOUD).all()


def test_commands_refuse_and_accept(l2a_without_scl, tmp_path, capsys):
    base = ["extract", "--parcels", str(l2a_without_scl / "parcels.gpkg"), "--scenes",
            str(l2a_without_scl / "scenes"), "--weather", str(l2a_without_scl / "weather.csv")]
    assert main(base + ["--out", str(tmp_path / "a")]) == EXIT_INPUT
    assert "--missing-scl" in capsys.readouterr().err and not (tmp_path / "a").exists()
    assert main(base + ["--missing-scl", "bands", "--out", str(tmp_path / "b")]) == 0
    out = tmp_path / "classified.gpkg"
    assert main(["classify", "--parcels", str(l2a_without_scl / "parcels.gpkg"), "--scenes",
                 str(l2a_without_scl / "scenes"), "--weather", str(l2a_without_scl / "weather.csv"),
                 "--out", str(out)]) == EXIT_INPUT
    assert "no scene classification" in capsys.readouterr().err and not out.exists()


def test_classification_result_carries_the_warning(l2a_without_scl):
    pytest.importorskip("torch")
    from thermocrop.core.classify import classify_parcels

    result = classify_parcels(l2a_without_scl / "parcels.gpkg", l2a_without_scl / "scenes",
                              l2a_without_scl / "weather.csv", sampling=PixelSampling(missing_scl="warn"))
    assert any("their clouds are not masked" in w for w in result.warnings)
