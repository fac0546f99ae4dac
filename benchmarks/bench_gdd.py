"""Thermal time at scale: vectorised GDD and weather reading against per-parcel loops.

1. GDD at 40 acquisition dates for 100,000 parcels x 365 days (0.1 % of the days missing,
   filled), ``core.thermal.gdd.gdd_at_dates``, against a loop over parcels doing the same per parcel.
2. Daily temperatures of 100,000 parcels from an E-OBS-style NetCDF (365 days, 150 x 200 cells of
   0.1 degree, packed int16), ``core.thermal.weather.read_daily_temperature``, against one nearest-cell
   selection per parcel with xarray (``ds.sel(..., method="nearest")``).

The loops run on a subset and are scaled to the full count; both sides print parcels/s.

    python benchmarks/bench_gdd.py [--parcels 100000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np


def _best(fn, repeat: int = 3) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_gdd(n: int, loop_n: int) -> None:
    from thermocrop.core.thermal.gdd import gdd_at_dates, growing_degree_days
    from thermocrop.core.thermal.weather import DailyTemperature

    rng = np.random.default_rng(0)
    days = np.arange("2021-01-01", "2022-01-01", dtype="datetime64[D]")
    season = 8 + 10 * np.sin((np.arange(days.size) - 105) / 58.0)
    tmin = (season[None, :] - 5 + rng.normal(0, 3, (n, days.size))).astype(np.float32)
    tmax = tmin + rng.uniform(4, 12, (n, days.size)).astype(np.float32)
    dates = np.sort(rng.choice(days[30:-5], 40, replace=False))
    # Single missing days, away from the season's first and last day (those cannot be filled).
    holes = rng.random(tmin.shape) < 0.001
    holes[:, 0] = False
    holes[:, int((dates[-1] - days[0]).astype(int)):] = False
    tmin[holes] = np.nan
    weather = DailyTemperature(days, tmin, tmax, "synthetic")

    def vectorised():
        return gdd_at_dates(weather, dates)

    def per_parcel():
        idx = (dates - days[0]).astype(int)
        out = np.empty((loop_n, dates.size), np.float32)
        for p in range(loop_n):
            lo = tmin[p].astype(np.float64)
            bad = np.isnan(lo)
            if bad.any():
                lo[bad] = np.interp(np.flatnonzero(bad), np.flatnonzero(~bad), lo[~bad])
            out[p] = growing_degree_days(lo, tmax[p])[idx]
        return out

    assert np.allclose(vectorised()[:loop_n], per_parcel(), rtol=1e-5)
    t_vec, t_loop = _best(vectorised), _best(per_parcel, 1) * n / loop_n
    print(f"GDD, {n} parcels x {days.size} days -> {dates.size} dates ({int(holes.sum())} missing days filled)")
    print(f"  vectorised    {t_vec:8.3f} s  {n / t_vec:12,.0f} parcels/s")
    print(f"  per parcel    {t_loop:8.3f} s  {n / t_loop:12,.0f} parcels/s  (from {loop_n} parcels)")
    print(f"  ratio         {t_loop / t_vec:8.1f} x")


def write_grid(path: Path) -> None:
    import netCDF4

    lat = np.round(np.arange(45.0, 60.0, 0.1), 2)
    lon = np.round(np.arange(0.0, 20.0, 0.1), 2)
    days = np.arange("2021-01-01", "2022-01-01", dtype="datetime64[D]")
    rng = np.random.default_rng(1)
    with netCDF4.Dataset(path, "w") as nc:
        for name, size in (("time", days.size), ("latitude", lat.size), ("longitude", lon.size)):
            nc.createDimension(name, size)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "days since 1950-01-01 00:00", "standard"
        t[:] = (days - np.datetime64("1950-01-01")).astype(float)
        nc.createVariable("latitude", "f8", ("latitude",))[:] = lat
        nc["latitude"].units = "degrees_north"
        nc.createVariable("longitude", "f8", ("longitude",))[:] = lon
        nc["longitude"].units = "degrees_east"
        season = 8 + 10 * np.sin((np.arange(days.size) - 105) / 58.0)
        for name, offset in (("tn", -5.0), ("tx", 5.0)):
            v = nc.createVariable(name, "i2", ("time", "latitude", "longitude"), fill_value=-9999,
                                  zlib=True, complevel=4, chunksizes=(365, 30, 30))
            v.units, v.scale_factor, v.add_offset = "Celsius", np.float32(0.01), np.float32(0.0)
            v.set_auto_maskandscale(False)
            field = season[:, None, None] + offset - 0.5 * (lat[None, :, None] - 45) + rng.normal(
                0, 1, (days.size, lat.size, lon.size))
            packed = np.round(field * 100).astype(np.int16)
            packed[:, :, -3:] = -9999  # a strip of sea
            v[:] = packed


def bench_weather(n: int, loop_n: int) -> None:
    import xarray as xr
    from pyproj import Transformer

    from thermocrop.core.thermal.weather import read_daily_temperature

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tn_tx.nc"
        write_grid(path)
        rng = np.random.default_rng(2)
        # Parcels over a 100 x 100 km area in UTM 32N, as a large LPIS tile would be.
        x = rng.uniform(600_000, 700_000, n)
        y = rng.uniform(5_300_000, 5_400_000, n)
        lon, lat = Transformer.from_crs("EPSG:32632", "EPSG:4326", always_xy=True).transform(x, y)

        def vectorised():
            return read_daily_temperature(path, x, y, "EPSG:32632", "2021-01-01", "2021-12-31")

        def per_parcel():
            out = np.empty((loop_n, 365), np.float32)
            with xr.open_dataset(path) as ds:
                for p in range(loop_n):
                    out[p] = ds["tn"].sel(latitude=lat[p], longitude=lon[p], method="nearest").values
            return out

        assert np.allclose(vectorised().tmin[:loop_n], per_parcel(), atol=1e-4)
        t_vec, t_loop = _best(vectorised), _best(per_parcel, 1) * n / loop_n
    print(f"Weather, {n} parcels x 365 days from an E-OBS-style grid of 150 x 200 cells")
    print(f"  vectorised    {t_vec:8.3f} s  {n / t_vec:12,.0f} parcels/s")
    print(f"  per parcel    {t_loop:8.3f} s  {n / t_loop:12,.0f} parcels/s  (xarray sel, from {loop_n} parcels)")
    print(f"  ratio         {t_loop / t_vec:8.1f} x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parcels", type=int, default=100_000)
    args = parser.parse_args()
    bench_gdd(args.parcels, min(args.parcels, 2_000))
    bench_weather(args.parcels, min(args.parcels, 300))


if __name__ == "__main__":
    main()
