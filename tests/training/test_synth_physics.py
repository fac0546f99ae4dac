"""Synthetic regions: physical checks computed from the written files, independently of the generator."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

# Annual GDD from the monthly normals with the TPE formula, fact sheet section 2.
FACT_GDD = {"AT1": [3865], "DK1": [2948, 3200], "FR1": [4455], "FR2": [4985]}
SCL_MASKED = (0, 1, 3, 8, 9, 10, 11)


def _daily_gdd(tn: np.ndarray, tx: np.ndarray) -> np.ndarray:
    # The paper's formula: clip Tmax at 30 and Tmin at 0, average, floor at 0.
    return np.maximum((np.minimum(tx, 30.0) + np.maximum(tn, 0.0)) / 2.0, 0.0)


def _annual_gdd(folder: Path, year: int = 2017) -> float:
    import xarray as xr

    with xr.open_dataset(folder / "weather.nc") as ds:
        sel = ds.sel(time=slice(f"{year}-01-01", f"{year}-12-31"))
        assert sel.sizes["time"] == 365
        gdd = _daily_gdd(sel["tn"].values, sel["tx"].values).sum(axis=0)
        land = ~np.isnan(sel["tn"].values).any(axis=0)
    return float(gdd[land].mean())


def _parcel_indices(folder: Path):
    """Per parcel median NDVI and NDYI on clear pixels (SCL), dates, crops, centroids."""
    import geopandas as gpd
    import rasterio
    from rasterio.features import rasterize

    gdf = gpd.read_file(folder / "parcels.gpkg")
    files = sorted(p for p in (folder / "scenes").glob("*.tif") if not p.stem.endswith("_SCL"))
    dates = []
    for p in files:
        d = re.search(r"_(\d{4})(\d{2})(\d{2})T", p.name).groups()
        dates.append(np.datetime64("-".join(d)))
    order = np.argsort(np.array(dates))
    files = [files[i] for i in order]
    dates = np.array(dates)[order]
    ndvi = np.full((len(gdf), len(files)), np.nan)
    ndyi = np.full_like(ndvi, np.nan)
    for t, path in enumerate(files):
        with rasterio.open(path) as ds:
            if t == 0:
                lab = rasterize(((g, i + 1) for i, g in enumerate(gdf.geometry)), out_shape=ds.shape,
                                transform=ds.transform, fill=0)
            x = ds.read().astype(float)
        with rasterio.open(path.with_name(path.stem + "_SCL.tif")) as s:
            clear = ~np.isin(s.read(1), SCL_MASKED)
        b02, b03, b04, b08 = x[0], x[1], x[2], x[6]
        v = (b08 - b04) / np.maximum(b08 + b04, 1)
        y = (b03 - b02) / np.maximum(b03 + b02, 1)
        for i in range(len(gdf)):
            m = lab == i + 1
            ok = m & clear
            if ok.sum() >= 0.5 * m.sum() and ok.any():
                ndvi[i, t] = np.median(v[ok])
                ndyi[i, t] = np.median(y[ok])
    return gdf, dates, ndvi, ndyi


def _class_median(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmedian(values[rows], axis=0)


def _peak_date(dates: np.ndarray, curve: np.ndarray) -> np.datetime64:
    """Middle of the dates whose value is within 0.05 of the curve's maximum."""
    ok = ~np.isnan(curve)
    d, c = dates[ok], curve[ok]
    top = d[c >= c.max() - 0.05].astype("datetime64[D]").astype(np.int64)
    return np.datetime64(int(round(top.mean())), "D")


def _half_rise_date(dates: np.ndarray, curve: np.ndarray) -> np.datetime64:
    """Date (linearly interpolated) when the curve first crosses halfway from its spring low to its peak."""
    ok = ~np.isnan(curve)
    x = dates[ok].astype("datetime64[D]").astype(np.int64).astype(float)
    c = curve[ok]
    top = int(np.argmax(c))
    low = float(c[: top + 1].min())
    half = (low + c[top]) / 2
    k = int(np.argmax(c[: top + 1] >= half))
    day = x[k - 1] + (half - c[k - 1]) / (c[k] - c[k - 1]) * (x[k] - x[k - 1])
    return np.datetime64(int(round(day)), "D")


@pytest.fixture(scope="module")
def four_regions(make_region, tiny_region):
    return {
        "FR2": tiny_region,
        "DK1": make_region("DK1", "L2A", seed=0, parcels=100),
        "AT1": make_region("AT1", "L2A", seed=0, parcels=12),
        "FR1": make_region("FR1", "L2A", seed=0, parcels=100),
    }


def test_annual_gdd_order_and_level(four_regions):
    gdd = {r: _annual_gdd(f) for r, f in four_regions.items()}
    assert gdd["FR2"] > gdd["FR1"] > gdd["AT1"] > gdd["DK1"]
    for region, value in gdd.items():
        assert any(abs(value - ref) <= 0.1 * ref for ref in FACT_GDD[region]), (region, value)


def test_daily_anomalies_are_persistent(four_regions):
    import xarray as xr

    with xr.open_dataset(four_regions["AT1"] / "weather.nc") as ds:
        tg = ((ds["tn"] + ds["tx"]) / 2).isel(latitude=0, longitude=0).values
    # Remove a 31-day running mean (the fact sheet's method) and measure lag-1 correlation.
    smooth = np.convolve(tg, np.ones(31) / 31, mode="same")
    a = (tg - smooth)[20:-20]
    r1 = np.corrcoef(a[:-1], a[1:])[0, 1]
    assert 0.6 < r1 < 0.9  # Kremsmuenster: 0.81
    assert 2.0 < a.std() < 5.0


def test_winter_wheat_later_in_denmark_but_closer_in_gdd(four_regions):
    import xarray as xr

    events = {}
    for region in ("FR2", "DK1"):
        folder = four_regions[region]
        gdf, dates, ndvi, _ = _parcel_indices(folder)
        wheat = (gdf["crop"] == "winter_wheat").to_numpy()
        assert wheat.sum() >= 3
        curve = _class_median(ndvi, wheat)
        assert np.nanmax(curve) > 0.8  # dense canopy at heading (fact sheet: 0.85-0.90)
        with xr.open_dataset(folder / "weather.nc") as ds:
            sel = ds.sel(time=slice("2017-01-01", "2017-12-31"))
            cum = np.nancumsum(np.nanmean(_daily_gdd(sel["tn"].values, sel["tx"].values), axis=(1, 2)))
            days = sel["time"].values.astype("datetime64[D]")
        rise = _half_rise_date(dates, curve)
        i = int(np.searchsorted(days, rise))
        rate = (cum[i + 10] - cum[i - 10]) / 20.0  # degree days per day around the green-up
        events[region] = {"peak": _peak_date(dates, curve), "rise": rise, "gdd": cum[i], "rate": rate}
    fr, dk = events["FR2"], events["DK1"]
    assert (dk["peak"] - fr["peak"]).astype(int) >= 21
    # Spread between regions at canopy closure: in days of calendar time, and the GDD gap
    # expressed in days at the regions' mean thermal rate then.
    lag_days = int((dk["rise"] - fr["rise"]).astype(int))
    assert lag_days >= 21
    gdd_gap = abs(dk["gdd"] - fr["gdd"])
    assert gdd_gap / ((fr["rate"] + dk["rate"]) / 2) < 0.8 * lag_days
    # ... but thermal time is no perfect clock: a residual of some 100-400 degree days stays.
    assert 50 < gdd_gap < 500


def test_flowering_rapeseed_turns_yellow(four_regions):
    # FR1: six April scenes catch the 3-4 weeks of bloom (FR2 has a single April date).
    gdf, dates, ndvi, ndyi = _parcel_indices(four_regions["FR1"])
    rape = (gdf["crop"] == "winter_rapeseed").to_numpy()
    curve = _class_median(ndyi, rape)
    ok = ~np.isnan(curve)
    d, c = dates[ok], curve[ok]
    months = d.astype("datetime64[M]").astype(int) % 12 + 1
    best = int(np.argmax(c))
    # NDYI peaks in spring during flowering and reaches ~0.4 (fact sheet: 0.22 -> 0.46).
    assert 3 <= months[best] <= 5
    assert c[best] > 0.35
    winter = c[months <= 2]
    assert winter.size and winter.max() < c[best] - 0.1
    # Flowering is rapeseed's signature: wheat on the same date is far less yellow.
    wheat = _class_median(ndyi, (gdf["crop"] == "winter_wheat").to_numpy())[ok]
    assert wheat[best] < c[best] - 0.05


def test_clouds_shadows_and_nodata_are_marked(tiny_region):
    import json

    import rasterio

    truth = json.loads((tiny_region / "truth.json").read_text())
    cloudy = [s for s in truth["scenes"] if s["cloud_fraction"] > 0.05]
    edged = [s for s in truth["scenes"] if s["nodata_fraction"] > 0]
    assert cloudy and edged
    for s in cloudy[:3] + edged[:2]:
        with rasterio.open(tiny_region / s["file"]) as ds:
            x = ds.read().astype(float)
        with rasterio.open(tiny_region / s["scl"]) as f:
            scl = f.read(1)
        nodata = x[0] == 0
        assert np.array_equal(nodata, scl == 0)
        assert np.all(x[:, nodata] == 0)
        # Bright in every visible band: cloud, and flagged as such.
        bright = (x[0] > 2500) & (x[2] > 2500)
        if bright.any():
            assert np.isin(scl[bright], (8, 9, 10)).mean() > 0.99
        # Shadows are darker in the near infrared than clear land on the same scene.
        shadow = scl == 3
        clear = np.isin(scl, (4, 5))
        if shadow.sum() > 50 and clear.sum() > 50:
            assert np.median(x[6][shadow]) < 0.6 * np.median(x[6][clear])
    # Most scenes keep most of their pixels (the paper kept scenes under 80 % cloud).
    assert all(s["cloud_fraction"] <= 0.8 for s in truth["scenes"])
    assert all(s["nodata_fraction"] < 0.5 for s in truth["scenes"])


def test_plot_reads_what_an_independent_reader_sees(tiny_region, tmp_path):
    from thermocrop.synth import plot_phenology
    from thermocrop.synth.plot import read_parcel_series

    series = read_parcel_series(tiny_region)
    gdf, dates, ndvi, ndyi = _parcel_indices(tiny_region)
    assert np.array_equal(series.dates, dates)
    assert list(series.crops) == list(gdf["crop"])
    assert np.allclose(series.ndvi, ndvi, equal_nan=True)
    assert np.allclose(series.ndyi, ndyi, equal_nan=True)
    # GDD since 1 Jan grows along the year and ends near the region's annual total.
    assert np.all(np.diff(series.gdd, axis=1) >= 0)
    assert series.gdd[:, -1].mean() == pytest.approx(_annual_gdd(tiny_region), rel=0.03)
    png = plot_phenology([tiny_region], tmp_path / "fig.png", classes=["winter_wheat", "meadow"])
    assert png.stat().st_size > 10_000


# Sentinel-2 acquisitions per month in 2017, fact sheet section 5 table (MiniTimeMatch dates).
FACT_ACQUISITIONS = {
    "FR1": [2, 3, 3, 6, 4, 6, 6, 7, 5, 8, 7, 5],
    "FR2": [1, 2, 2, 1, 3, 3, 2, 5, 4, 6, 5, 5],
    "DK1": [1, 1, 4, 3, 3, 3, 6, 8, 6, 6, 6, 5],
    "AT1": [2, 4, 2, 4, 4, 5, 9, 9, 6, 5, 4, 4],
}
# SD of daily anomalies by month and lag-1 correlation, fact sheet section 2 (station proxies).
FACT_ANOMALY_SD = {
    "AT1": ([4.6, 4.7, 4.0, 3.8, 3.5, 3.5, 3.1, 3.1, 3.0, 3.4, 3.5, 4.2], 0.81),
    "FR2": ([3.6, 3.7, 3.0, 2.9, 2.9, 3.2, 2.9, 3.1, 3.0, 3.4, 3.5, 3.9], 0.76),
    "FR1": ([4.1, 3.9, 3.3, 3.2, 3.2, 3.3, 3.1, 3.2, 2.9, 3.5, 3.5, 4.0], 0.78),
    "DK1": ([4.4, 4.1, 3.5, 3.5, 3.4, 3.3, 3.3, 2.9, 2.6, 3.3, 3.4, 4.1], 0.80),
}


def test_acquisitions_per_month_in_every_region(four_regions):
    for region, folder in four_regions.items():
        names = [p.name for p in (folder / "scenes").glob("*.tif") if not p.stem.endswith("_SCL")]
        months = [int(re.search(r"_2017(\d{2})\d{2}T", n).group(1)) for n in names]
        assert np.bincount(months, minlength=13)[1:].tolist() == FACT_ACQUISITIONS[region], region
        assert 39 <= len(names) <= 62


def test_anomaly_spread_by_month_and_persistence():
    # The fact sheet's method on 30 simulated years: subtract the 31-day-smoothed daily
    # climatology of the series itself, then the SD by month and the lag-1 correlation.
    from thermocrop.synth import get_region
    from thermocrop.synth.climate import simulate_weather

    for name, (sd_facts, r1_facts) in FACT_ANOMALY_SD.items():
        grid = simulate_weather(get_region(name), (10.0, 10.2), (48.0, 48.2), np.datetime64("1991-01-01"),
                                np.datetime64("2020-12-31"), np.random.default_rng(5))
        tg = ((grid.tmin + grid.tmax) / 2.0)[:, 1, 1].astype(float)
        doy = np.minimum((grid.dates - grid.dates.astype("datetime64[Y]")).astype(int), 364)
        clim = np.array([tg[doy == k].mean() for k in range(365)])
        wrapped = np.concatenate([clim[-15:], clim, clim[:15]])
        smooth = np.convolve(wrapped, np.ones(31) / 31, mode="valid")
        anomaly = tg - smooth[doy]
        month = grid.dates.astype("datetime64[M]").astype(int) % 12
        sd = np.array([anomaly[month == m].std() for m in range(12)])
        assert np.all(np.abs(sd - sd_facts) < 0.7), (name, sd.round(1))
        # Winter weather varies more than summer weather, as measured.
        assert sd[[0, 1, 11]].mean() > sd[[5, 6, 7]].mean() + 0.5
        r1 = np.corrcoef(anomaly[:-1], anomaly[1:])[0, 1]
        assert abs(r1 - r1_facts) < 0.04, (name, r1)


def test_small_temperature_gradient_across_the_grid(four_regions):
    import xarray as xr

    for region, folder in four_regions.items():
        with xr.open_dataset(folder / "weather.nc") as ds:
            tg = ((ds["tn"] + ds["tx"]) / 2.0).mean("time").values
            lat = ds["latitude"].values
        land = ~np.isnan(tg)
        rows = np.nonzero(land)[0]
        slope = np.polyfit(lat[rows], tg[land], 1)[0]
        assert -1.5 < slope < -0.1, (region, slope)  # cooler northwards, a few tenths per degree
        spread = np.nanmax(tg) - np.nanmin(tg)
        assert 0.1 < spread < 2.0, (region, spread)


def test_meadow_mowing_regimes_show_in_the_scenes(four_regions):
    import json

    folder = four_regions["FR1"]  # 62 dates: the densest series
    truth = json.loads((folder / "truth.json").read_text())
    gdf, dates, ndvi, _ = _parcel_indices(folder)
    regime = np.array([truth["parcels"][pid].get("regime", "") for pid in gdf["parcel_id"]])
    assert {"intensive", "extensive"} <= set(regime[(gdf["crop"] == "meadow").to_numpy()])
    months = dates.astype("datetime64[M]").astype(int) % 12 + 1
    season = (months >= 4) & (months <= 10)
    drops = {}
    for kind in ("intensive", "extensive"):
        counts = []
        for i in np.flatnonzero(regime == kind):
            v = ndvi[i, season]
            v = v[~np.isnan(v)]
            # A cut: green cover falls by 0.2-0.4 between two clear looks.
            counts.append(int((np.diff(v) < -0.15).sum()))
        assert len(counts) >= 3, kind
        drops[kind] = np.mean(counts)
    assert drops["intensive"] >= 2.5
    assert drops["extensive"] <= 2.0
    assert drops["intensive"] > drops["extensive"] + 1.0


def test_snow_lies_in_continental_winters_and_rarely_in_france():
    # The snow pack of 30 simulated winters at one point per region.
    from thermocrop.synth import get_region
    from thermocrop.synth.climate import simulate_weather
    from thermocrop.synth.snow import snow_cover, wet_days

    days = {}
    for name in ("AT1", "DK1", "FR1", "FR2"):
        region = get_region(name)
        rng = np.random.default_rng(2)
        grid = simulate_weather(region, (10.0, 10.2), (48.0, 48.2), np.datetime64("1991-07-01"),
                                np.datetime64("2021-06-30"), rng)
        wet, rain = wet_days(len(grid.dates), region.wet_days, rng)
        assert abs(wet.mean() - region.wet_days) < 0.02
        # Wet days come in spells: a wet day follows a wet day more often than on average.
        assert wet[1:][wet[:-1]].mean() > wet.mean() + 0.1
        cover = snow_cover(grid.tmin[:, 1, 1][None], grid.tmax[:, 1, 1][None], rain)[0]
        month = grid.dates.astype("datetime64[M]").astype(int) % 12 + 1
        assert cover[(month >= 5) & (month <= 9)].max() == 0.0  # no snow from May to September
        days[name] = (cover > 0.5).sum() / 30.0
    # Linz and Karup see weeks of snow cover a year, Nantes and Montauban a day or two.
    assert days["AT1"] > 15 and days["DK1"] > 15
    assert days["FR1"] < 6 and days["FR2"] < 6


def test_snow_is_bright_dark_in_the_swir_and_flagged(four_regions):
    import json

    import rasterio

    folder = four_regions["DK1"]
    truth = json.loads((folder / "truth.json").read_text())
    snowy = [s for s in truth["scenes"] if s["snow_fraction"] > 0.3]
    assert snowy, "DK1 (seed 0) has snow on its January and February scenes"
    assert all(s["date"][5:7] in ("01", "02", "03", "11", "12") for s in snowy)
    for s in snowy[:2]:
        with rasterio.open(folder / s["file"]) as ds:
            x = ds.read().astype(float) / 10000
        with rasterio.open(folder / s["scl"]) as f:
            scl = f.read(1)
        flagged = scl == 11
        assert flagged.mean() > 0.2
        # Snow as on the real snow-covered date of the Bavarian parcels: bright from blue to NIR
        # (0.45-0.65 at the top of the atmosphere there), dark in the SWIR (under 0.1).
        assert np.median(x[0][flagged]) > 0.4 and np.median(x[1][flagged]) > 0.4
        assert np.median(x[8][flagged]) < 0.2
