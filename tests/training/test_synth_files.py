"""Synthetic regions: the written files are what real readers expect, and reproducible."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

S2_ORDER = ["B02", "B03", "B04", "B05", "B06", "B07", "B08", "B8A", "B11", "B12"]
NINE = {"corn", "horsebeans", "meadow", "spring_barley", "unknown", "winter_barley",
        "winter_rapeseed", "winter_triticale", "winter_wheat"}
NAME_RE = re.compile(r"^S2[AB]_MSIL2A_(2017\d{4})T\d{6}_N0205_R\d{3}_T31TCJ_\1T\d{6}\.tif$")


def _scene_files(folder: Path) -> list[Path]:
    return sorted(p for p in (folder / "scenes").glob("*.tif") if not p.stem.endswith("_SCL"))


def test_parcels_layer(tiny_region):
    import geopandas as gpd

    gdf = gpd.read_file(tiny_region / "parcels.gpkg", layer="parcels")
    assert gdf.crs.to_epsg() == 32631  # UTM 31N, the zone of tile 31TCJ
    assert {"parcel_id", "crop", "block"} <= set(gdf.columns)
    assert 95 <= len(gdf) <= 100
    assert gdf["parcel_id"].is_unique
    assert set(gdf["crop"]) == NINE
    assert gdf.geometry.is_valid.all()
    # Irregular fields: not axis-aligned rectangles, sizes varying several-fold, no overlaps.
    areas = gdf.geometry.area.to_numpy()
    assert areas.max() / areas.min() > 5
    assert areas.std() / areas.mean() > 0.35  # a uniform honeycomb of cells gives ~0.2
    rect = gdf.geometry.envelope.area.to_numpy()
    assert np.median(areas / rect) < 0.95
    # Some fields are non-convex (merged plots) and some are long strips.
    hull = gdf.geometry.convex_hull.area.to_numpy()
    assert (areas / hull < 0.95).sum() >= 3

    def elongation(poly) -> float:
        xy = np.asarray(poly.minimum_rotated_rectangle.exterior.coords)
        sides = np.hypot(*np.diff(xy[:3], axis=0).T)
        return sides.max() / sides.min()

    assert sum(elongation(g) > 2.5 for g in gdf.geometry) >= 3
    union = gdf.geometry.unary_union.area
    assert union == pytest.approx(areas.sum(), rel=1e-6)
    # Roads between parcels: neighbours do not touch.
    assert not gdf.geometry.iloc[0].touches(gdf.geometry.unary_union.difference(gdf.geometry.iloc[0]))
    assert gdf["block"].nunique() >= 8
    # Mostly meadow, horsebeans rare (French LPIS proportions), yet every class present.
    counts = gdf["crop"].value_counts()
    assert counts.idxmax() == "meadow"
    assert counts["horsebeans"] < counts["meadow"] / 5


def test_scene_files(tiny_region):
    import rasterio

    files = _scene_files(tiny_region)
    # FR2 acquisitions per month in 2017, fact sheet section 5 table: 39 in all.
    per_month = [1, 2, 2, 1, 3, 3, 2, 5, 4, 6, 5, 5]
    months = [int(NAME_RE.match(p.name).group(1)[4:6]) for p in files]
    assert np.bincount(months, minlength=13)[1:].tolist() == per_month
    for path in files[:5] + files[-3:]:
        with rasterio.open(path) as ds:
            assert ds.count == 10
            assert list(ds.descriptions) == S2_ORDER
            assert set(ds.dtypes) == {"uint16"}
            assert ds.nodata == 0
            assert ds.profile["tiled"] and ds.block_shapes[0] == (256, 256)
            assert ds.compression.name.lower() == "deflate"
            assert ds.crs.to_epsg() == 32631
            assert ds.res == (10.0, 10.0)
            shape, transform = ds.shape, ds.transform
        scl = path.with_name(path.stem + "_SCL.tif")
        with rasterio.open(scl) as s:
            assert s.count == 1 and s.shape == shape and s.transform == transform
            values = np.unique(s.read(1))
            assert set(values.tolist()) <= set(range(12))


def test_weather_file_layout(tiny_region):
    import netCDF4
    import rasterio
    import xarray as xr
    from pyproj import Transformer

    with netCDF4.Dataset(tiny_region / "weather.nc") as nc:
        for name in ("tn", "tx"):
            v = nc[name]
            assert v.dimensions == ("time", "latitude", "longitude")
            assert v.dtype == np.int16
            assert float(v.scale_factor) == pytest.approx(0.01)
            assert int(v._FillValue) == -9999
        assert nc["time"].units.startswith("days since 1950-01-01")
    with xr.open_dataset(tiny_region / "weather.nc") as ds:
        times = ds["time"].values.astype("datetime64[D]")
        lat, lon = ds["latitude"].values, ds["longitude"].values
        tn, tx = ds["tn"].values, ds["tx"].values
    # The whole year plus the autumn before (winter crops are sown then), daily without gaps.
    assert times[0] <= np.datetime64("2016-09-01") and times[-1] == np.datetime64("2017-12-31")
    assert np.all(np.diff(times) == np.timedelta64(1, "D"))
    assert np.allclose(np.diff(lat), 0.1) and np.allclose(np.diff(lon), 0.1)
    assert np.all(np.nan_to_num(tx) >= np.nan_to_num(tn))
    # The grid covers the scene.
    with rasterio.open(_scene_files(tiny_region)[0]) as s:
        b = s.bounds
    lo, la = Transformer.from_crs(32631, 4326, always_xy=True).transform([b.left, b.right], [b.bottom, b.top])
    assert lon.min() < min(lo) and lon.max() > max(lo) and lat.min() < min(la) and lat.max() > max(la)
    # Annual mean of Tmax near Montauban's normals (fact sheet section 2): 224.3 / 12 = 18.7 C.
    year = times >= np.datetime64("2017-01-01")
    assert float(np.nanmean(tx[year])) == pytest.approx(224.3 / 12, abs=1.5)


def test_coastal_region_has_sea_cells(make_region):
    import xarray as xr

    folder = make_region("DK1", "L2A", seed=0, parcels=100)
    with xr.open_dataset(folder / "weather.nc") as ds:
        tn = ds["tn"].values
    sea = np.isnan(tn).all(axis=0)
    assert sea.any() and not sea.all()


def test_truth_manifest(tiny_region):
    import geopandas as gpd

    truth = json.loads((tiny_region / "truth.json").read_text())
    gdf = gpd.read_file(tiny_region / "parcels.gpkg")
    assert truth["region"] == "FR2" and truth["seed"] == 0 and truth["level"] == "L2A"
    assert {pid: v["crop"] for pid, v in truth["parcels"].items()} == dict(zip(gdf["parcel_id"], gdf["crop"]))
    assert len(truth["dates"]) == len(_scene_files(tiny_region))
    unknown = [v["cover"] for v in truth["parcels"].values() if v["crop"] == "unknown"]
    assert len(set(unknown)) >= 2  # 'unknown' is a mix of several crops


def test_same_seed_same_bytes(tmp_path):
    from thermocrop.synth import generate_region

    a = generate_region("AT1", tmp_path / "a", parcels=15, seed=3, level="L2A")
    b = generate_region("AT1", tmp_path / "b", parcels=15, seed=3, level="L2A")
    c = generate_region("AT1", tmp_path / "c", parcels=15, seed=4, level="L2A")
    assert a == b
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 3 + 2 * 58  # parcels, weather, truth; AT1 has 58 acquisitions in 2017
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    assert (tmp_path / "a" / "weather.nc").read_bytes() != (tmp_path / "c" / "weather.nc").read_bytes()
    assert a["parcels"] != c["parcels"]


def test_baseline_offset_and_toa(tmp_path):
    import rasterio

    from thermocrop.synth import generate_region

    old = generate_region("FR1", tmp_path / "old", parcels=12, seed=1, level="L2A")
    new = generate_region("FR1", tmp_path / "new", parcels=12, seed=1, level="L2A", baseline="N0400")
    toa = generate_region("FR1", tmp_path / "toa", parcels=12, seed=1, level="L1C")
    assert all("_N0400_" in s["file"] for s in new["scenes"])
    assert all("_MSIL1C_" in s["file"] for s in toa["scenes"])
    for t in (0, 20, 40):
        with rasterio.open(tmp_path / "old" / old["scenes"][t]["file"]) as a, \
                rasterio.open(tmp_path / "new" / new["scenes"][t]["file"]) as b, \
                rasterio.open(tmp_path / "toa" / toa["scenes"][t]["file"]) as c:
            x, y, z = a.read().astype(int), b.read().astype(int), c.read().astype(int)
        valid = x[0] > 0
        assert np.array_equal(valid, y[0] > 0)
        # Baseline 04.00 adds 1000 to every valid DN (fact sheet, data formats).
        assert np.all(y[:, valid] - x[:, valid] == 1000)
        # Top of atmosphere: the darkest land is lifted by the path reflectance (the real
        # Bavarian L1C parcels' darkest 1 % in blue: 0.085, against under 0.03 for dense
        # vegetation at the surface); haze varies from scene to scene.
        clear = valid & (x[0] < 2000)
        lift = (np.percentile(z[0][clear], 1) - np.percentile(x[0][clear], 1)) / 10000
        assert 0.03 < lift < 0.15
        assert np.percentile(z[0][clear], 1) / 10000 > 0.06
        # NDVI over green fields is lower at the top of the atmosphere.
        green = clear & ((x[6] - x[2]) / np.maximum(x[6] + x[2], 1) > 0.7)
        if green.sum() > 100:
            ndvi_surface = ((x[6] - x[2]) / (x[6] + x[2]))[green].mean()
            ndvi_toa = ((z[6] - z[2]) / np.maximum(z[6] + z[2], 1))[green].mean()
            assert 0.04 < ndvi_surface - ndvi_toa < 0.3


def test_rejects_bad_arguments(tmp_path):
    from thermocrop.core.errors import InputError
    from thermocrop.synth import generate_region

    with pytest.raises(InputError, match="AT1, DK1, FR1, FR2"):
        generate_region("XX9", tmp_path / "x")
    with pytest.raises(InputError, match="L1C or L2A"):
        generate_region("FR2", tmp_path / "x", level="L3")
    with pytest.raises(InputError, match="--size"):
        generate_region("FR2", tmp_path / "x", parcels=500, size=64)


def test_command_line_with_plot(tmp_path):
    from thermocrop.cli.main import main

    rc = main(["synth", "--region", "DK1", "--out", str(tmp_path / "dk"), "--parcels", "12",
               "--seed", "2", "--level", "L2A", "--plot"])
    assert rc == 0
    assert (tmp_path / "dk" / "parcels.gpkg").exists() and (tmp_path / "dk" / "weather.nc").exists()
    png = tmp_path / "dk" / "phenology.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_strip_height_does_not_change_the_scenes(tmp_path, monkeypatch):
    from thermocrop.synth import generate as gen

    gen.generate_region("FR2", tmp_path / "a", parcels=15, size=300, seed=5, level="L2A")
    monkeypatch.setattr(gen, "STRIP_ROWS", 96)
    gen.generate_region("FR2", tmp_path / "b", parcels=15, size=300, seed=5, level="L2A")
    files = sorted((tmp_path / "a" / "scenes").glob("*.tif"))
    assert len(files) == 2 * 39
    for f in files:
        assert f.read_bytes() == (tmp_path / "b" / "scenes" / f.name).read_bytes(), f.name


def test_cancel_leaves_target_as_it_was(tmp_path):
    from thermocrop.core.errors import CancelledError, InputError
    from thermocrop.core.progress import Progress
    from thermocrop.synth import generate_region

    out = tmp_path / "region"
    generate_region("FR2", out, parcels=12, seed=1)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    calls = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 8  # stop in the middle of the scenes

    with pytest.raises(CancelledError):
        generate_region("FR2", out, parcels=12, seed=2, progress=Progress(cancelled=cancelled))
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["region"]  # no partial folder left

    # A folder with other data is never overwritten.
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    with pytest.raises(InputError, match="not empty"):
        generate_region("FR2", other, parcels=12)
    assert (other / "notes.txt").read_text() == "keep"


def test_scene_reader_pairs_scl_sidecars(tiny_region, tmp_path):
    from thermocrop.core.scenes.local import find_scenes
    from thermocrop.synth import generate_region

    scenes = find_scenes(tiny_region / "scenes")
    assert len(scenes) == 39
    for scene in scenes:
        (product,) = scene.products
        assert product.scl is not None and product.scl.path.endswith("_SCL.tif")
        assert product.level == "L2A" and product.offset == 0
    generate_region("FR2", tmp_path / "n4", parcels=12, seed=1, level="L1C", baseline="N0400")
    l1c = find_scenes(tmp_path / "n4" / "scenes")
    assert all(s.products[0].offset == -1000 and s.products[0].scl is None for s in l1c)


@pytest.mark.qgis
def test_qgis_opens_the_region(tiny_region):
    from qgis.core import QgsApplication, QgsRasterLayer, QgsVectorLayer

    if QgsApplication.instance() is None:
        app = QgsApplication([], False)
        app.initQgis()
    parcels = QgsVectorLayer(f"{tiny_region / 'parcels.gpkg'}|layername=parcels", "parcels", "ogr")
    assert parcels.isValid() and parcels.featureCount() == len(json.loads(
        (tiny_region / "truth.json").read_text())["parcels"])
    assert {"parcel_id", "crop", "block"} <= set(parcels.fields().names())
    scene = QgsRasterLayer(str(_scene_files(tiny_region)[0]), "scene")
    assert scene.isValid() and scene.bandCount() == 10
    assert scene.crs().authid() == "EPSG:32631"
