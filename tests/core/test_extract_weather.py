"""Extraction with E-OBS NetCDF weather: GDD of every parcel from its own grid cell.

The expectation is computed by a second route: the packed int16 values read with netCDF4
without automatic scaling, the nearest cell found by brute force over haversine distances.
"""
import shutil

import geopandas as gpd
import netCDF4
import numpy as np
import pytest
from pyproj import Transformer

from thermocrop.core.extract import extract_pixel_sets
from thermocrop.core.settings import ExtractionSettings, PixelSampling

EARTH_RADIUS_M = 6_371_000.0


def _decoded(path):
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        days = np.datetime64("1950-01-01") + nc["time"][:].astype(np.int64)
        lat, lon = nc["latitude"][:], nc["longitude"][:]
        out = {}
        for name in ("tn", "tx"):
            raw = nc[name][:]
            out[name] = np.where(raw == -9999, np.nan, raw * float(nc[name].scale_factor))
    return days, lat, lon, out["tn"], out["tx"]


def _haversine(lat1, lon1, lat2, lon2):
    p1, p2 = np.radians(lat1), np.radians(lat2)
    a = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(np.radians(lon2 - lon1) / 2) ** 2
    return 2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(a))


def _parcel_lonlat(region):
    parcels = gpd.read_file(region / "parcels.gpkg")
    pts = parcels.geometry.representative_point()
    lon, lat = Transformer.from_crs(parcels.crs, "EPSG:4326", always_xy=True).transform(pts.x, pts.y)
    return parcels["parcel_id"].astype(str).to_numpy(), np.asarray(lon), np.asarray(lat)


def _expected_gdd(dates, days, tn, tx, cells):
    """GDD since Jan 1 of the season year at `dates` for each (row, col) of `cells`."""
    start = np.datetime64(f"{str(dates.max())[:4]}-01-01")
    keep = (days >= start) & (days <= dates.max())
    out = []
    for r, c in cells:
        daily = np.maximum((np.minimum(tx[keep, r, c], 30.0) + np.maximum(tn[keep, r, c], 0.0)) / 2.0, 0.0)
        cum = np.cumsum(daily)
        out.append(cum[(dates - start).astype(int)])
    return np.array(out)


@pytest.fixture(scope="module")
def region(make_region):
    return make_region("FR2", "L2A", seed=0, parcels=100)


def test_each_parcel_takes_the_gdd_of_its_nearest_cell(region):
    ps = extract_pixel_sets(region / "parcels.gpkg", region / "scenes", region / "weather.nc",
                            settings=ExtractionSettings(sampling=PixelSampling(max_pixels=8)))
    days, lat, lon, tn, tx = _decoded(region / "weather.nc")
    ids, plon, plat = _parcel_lonlat(region)
    glat, glon = np.meshgrid(lat, lon, indexing="ij")
    dist = _haversine(plat[:, None], plon[:, None], glat.ravel()[None, :], glon.ravel()[None, :])
    cells = [np.unravel_index(k, glat.shape) for k in dist.argmin(axis=1)]
    assert len({tuple(c) for c in cells}) >= 2, "the test region should span several weather cells"
    expected = _expected_gdd(ps.dates, days, tn, tx, cells)
    ok = ps.status == "ok"
    assert ok.sum() > 80 and list(ps.parcel_ids) == list(ids)
    assert np.allclose(ps.gdd[ok], expected[ok], rtol=1e-5, atol=0.05)


def test_parcels_out_of_reach_of_any_cell_with_data_get_no_weather(region, tmp_path):
    # Keep one cell with data, two cells east of the parcels; blank the rest as sea.
    path = tmp_path / "weather.nc"
    shutil.copy(region / "weather.nc", path)
    days, lat, lon, tn, tx = _decoded(path)
    ids, plon, plat = _parcel_lonlat(region)
    row = int(np.abs(lat - plat.mean()).argmin())
    col = int(np.abs(lon - plon.mean()).argmin()) + 2
    with netCDF4.Dataset(path, "a") as nc:
        for name in ("tn", "tx"):
            nc[name].set_auto_maskandscale(False)
            raw = nc[name][:]
            keep = raw[:, row, col].copy()
            raw[:] = -9999
            raw[:, row, col] = keep
            nc[name][:] = raw
    dist = _haversine(plat, plon, lat[row], lon[col])
    reach = float(np.median(dist))  # half the parcels within reach
    ps = extract_pixel_sets(region / "parcels.gpkg", region / "scenes", path,
                            settings=ExtractionSettings(sampling=PixelSampling(max_pixels=4),
                                                        weather_options={"max_distance_m": reach}))
    near = dist <= reach
    readable = ps.status != "no_weather"
    assert 0 < near.sum() < len(near)
    assert np.array_equal(readable, near)
    expected = _expected_gdd(ps.dates, days, tn, tx, [(row, col)])[0]
    ok = ps.status == "ok"
    assert ok.any() and np.allclose(ps.gdd[ok], expected[None, :], rtol=1e-5, atol=0.05)
    assert not ps.date_mask[~near].any()
