"""Per-parcel tables as datasets: small CSV / Parquet / GeoPackage / NetCDF files written here,
and the real Bavarian parcels checked against the data's own loader."""

import importlib.util
from pathlib import Path

import geopandas as gpd
import netCDF4
import numpy as np
import pandas as pd
import pytest
from pyproj import Transformer
from shapely.geometry import box

from thermocrop.cli.main import main
from thermocrop.core.errors import InputError
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.core.scenes.bands import S2_BANDS
from thermocrop.training.importers.common import ClassesAndBlocks, ImportWeather
from thermocrop.training.importers.table import TableColumns, import_table, table_pixel_sets

BANDS = list(S2_BANDS)
SEASON = np.arange("2021-01-01", "2021-07-01", dtype="datetime64[D]")


def station_csv(path, days=SEASON):
    """Station temperatures of a known formula, with another service's column names."""
    i = np.arange(days.size)
    tmin, tmax = -4.0 + 0.1 * i, 3.0 + 0.15 * i
    rows = ["Termin,T_Min_2m,T_Max_2m"] + [f"{d}T00:00:00,{a:.2f},{b:.2f}" for d, a, b in zip(days, tmin, tmax)]
    path.write_text("\n".join(rows) + "\n")
    return path, np.round(tmin, 2), np.round(tmax, 2)


def gdd_by_hand(tmin, tmax, days, dates, start="2021-01-01"):
    """Paper rule summed day by day from the season start to each date, that day included."""
    out = []
    for date in np.asarray(dates, dtype="datetime64[D]"):
        total = 0.0
        for d, lo, hi in zip(days, tmin, tmax):
            if np.datetime64(start) <= d <= date:
                total += max((min(hi, 30.0) + max(lo, 0.0)) / 2.0, 0.0)
        out.append(total)
    return np.array(out)


STATION = {"date_var": "Termin", "tmin_var": "T_Min_2m", "tmax_var": "T_Max_2m"}


def band_value(p, t, b):
    return 500.0 + 100.0 * p + 10.0 * t + b + 0.4


def test_long_csv_values_dates_duplicates_and_missing_bands(tmp_path):
    weather, tmin, tmax = station_csv(tmp_path / "station.csv")
    dates = ["2021-03-05", "2021-04-01", "2021-05-20"]
    rows = []
    for p, pid in enumerate(["a7", "b3", "c1"]):
        for t, d in enumerate(dates):
            row = {"field": pid, "when": d, "crop": ["wheat", "maize", "wheat"][p]}
            row.update({f"{b}_mean": band_value(p, t, k) for k, b in enumerate(BANDS)})
            rows.append(row)
    df = pd.DataFrame(rows)
    df.loc[(df.field == "b3") & (df.when == "2021-04-01"), "B8A_mean"] = np.nan  # one band missing
    extra = df[(df.field == "a7") & (df.when == "2021-05-20")].copy()  # same parcel-date twice
    extra[[f"{b}_mean" for b in BANDS]] += 2.0
    df = pd.concat([df, extra]).sample(frac=1.0, random_state=3)  # rows in any order
    df.to_csv(tmp_path / "t.csv", index=False)

    ps = table_pixel_sets(tmp_path / "t.csv", weather=ImportWeather(weather, options=STATION),
                          columns=TableColumns(id_column="field", date_column="when", label_column="crop"))
    assert ps.pixels.shape == (3, 3, 10, 1)
    assert list(ps.dates) == list(np.array(dates, dtype="datetime64[D]"))
    assert ps.classes == ("maize", "wheat")
    by_id = {pid: i for i, pid in enumerate(ps.parcel_ids)}
    for p, pid in enumerate(["a7", "b3", "c1"]):
        i = by_id[pid]
        assert ps.classes[ps.labels[i]] == ["wheat", "maize", "wheat"][p]
        for t in range(3):
            expect = [band_value(p, t, k) for k in range(10)]
            if pid == "a7" and t == 2:
                expect = [v + 1.0 for v in expect]  # mean of the two rows
            if pid == "b3" and t == 1:
                assert not ps.date_mask[i, t] and not ps.pixel_mask[i, t, 0]
                assert (ps.pixels[i, t] == 0).all()
                continue
            assert ps.date_mask[i, t] and ps.pixel_mask[i, t, 0]
            assert ps.pixels[i, t, :, 0].tolist() == [int(np.floor(v + 0.5)) for v in expect]
    np.testing.assert_allclose(ps.gdd, np.tile(gdd_by_hand(tmin, tmax, SEASON, dates), (3, 1)), rtol=1e-6)
    assert ps.day_of_season.tolist() == [63.0, 90.0, 139.0]
    assert set(ps.status) == {"ok"}


def write_eobs(path, lat, lon, days, tn, tx):
    with netCDF4.Dataset(path, "w") as nc:
        for name, values in (("time", days), ("latitude", lat), ("longitude", lon)):
            nc.createDimension(name, len(values))
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "days since 1950-01-01 00:00", "standard"
        t[:] = (days - np.datetime64("1950-01-01")).astype(float)
        for name, values, units in (("latitude", lat, "degrees_north"), ("longitude", lon, "degrees_east")):
            v = nc.createVariable(name, "f8", (name,))
            v.units = units
            v[:] = values
        for name, values in (("tn", tn), ("tx", tx)):
            v = nc.createVariable(name, "f4", ("time", "latitude", "longitude"))
            v.units = "Celsius"
            v[:] = values
    return path


def test_wide_parquet_reflectance_lonlat_grid_weather_and_grid_blocks(tmp_path):
    lat, lon = np.array([50.0, 50.5]), np.array([8.0, 8.5])
    d = np.arange(SEASON.size)[:, None, None]
    tn = (-3.0 + 0.1 * d + 2.0 * np.arange(2)[None, :, None] + np.zeros((1, 1, 2))).astype(np.float32)
    tx = (tn + 9.0 + 1.0 * np.arange(2)[None, None, :]).astype(np.float32)
    weather = write_eobs(tmp_path / "w.nc", lat, lon, SEASON, tn, tx)
    dates = ["20210402", "20210610"]
    parcels = [  # id, lon, lat: nearest cells (0,0), (1,1), (0,1); two parcels 300 m apart
        ("p1", 8.001, 50.001), ("p2", 8.49, 50.49), ("p3", 8.48, 50.02), ("p4", 8.4803, 50.0203)]
    rows = []
    for p, (pid, x, y) in enumerate(parcels):
        row = {"parcel_id": pid, "lon": x, "lat": y}
        for t, date in enumerate(dates):
            for k, b in enumerate(BANDS):
                row[f"{date}_{b.replace('B0', 'B')}"] = band_value(p, t, k) / 10000.0
        rows.append(row)
    pd.DataFrame(rows).to_parquet(tmp_path / "wide.parquet")

    ps = table_pixel_sets(tmp_path / "wide.parquet", weather=weather,
                          columns=TableColumns(lon_column="lon", lat_column="lat"),
                          grouping=ClassesAndBlocks(block_size_m=1000.0))
    assert ps.meta["layout"] == "wide" and ps.meta["value_scale"] == 1.0
    for p in range(4):
        for t in range(2):
            assert ps.pixels[p, t, :, 0].tolist() == [int(np.floor(band_value(p, t, k) + 0.5)) for k in range(10)]
    cells = [(0, 0), (1, 1), (0, 1), (0, 1)]
    for p, (r, c) in enumerate(cells):
        expect = gdd_by_hand(tn[:, r, c].astype(float), tx[:, r, c].astype(float), SEASON,
                             np.array(["2021-04-02", "2021-06-10"], dtype="datetime64[D]"))
        np.testing.assert_allclose(ps.gdd[p], expect, rtol=1e-5)
    # Blocks: the 1 km cells of UTM zone 32 (pyproj here, by hand), same block iff same cell.
    x, y = Transformer.from_crs("EPSG:4326", "EPSG:32632", always_xy=True).transform(
        [q[1] for q in parcels], [q[2] for q in parcels])
    cell = [(int(a // 1000), int(b // 1000)) for a, b in zip(x, y)]
    for i in range(4):
        for j in range(4):
            assert (ps.blocks[i] == ps.blocks[j]) == (cell[i] == cell[j])
    assert len(set(cell)) >= 3
    assert ps.labels.tolist() == [-1] * 4 and ps.classes == ()


def test_layer_join_by_field_class_map_and_cli(tmp_path, capsys):
    weather, tmin, tmax = station_csv(tmp_path / "station.csv")
    codes = ["115", "411", "999", None]
    layer = gpd.GeoDataFrame(
        {"FID_1": ["x2", "x9", "x4", "x5"], "NC": codes, "blk": [3, 3, 8, 8]},
        geometry=[box(0, 0, 100, 100), box(200, 0, 300, 80), box(0, 500, 50, 600), box(900, 900, 950, 950)],
        crs="EPSG:32632")
    layer.to_file(tmp_path / "fields.gpkg", driver="GPKG")
    (tmp_path / "map.csv").write_text("code,class\n115,winter_wheat\n411,corn\n")
    rows = []
    for pid in ["x9", "x4", "x2", "x5", "x7"]:  # x7 has no feature
        row = {"id": pid, "date": 20210415}
        row.update({b: 1000 + k for k, b in enumerate(BANDS)})
        rows.append(row)
    pd.DataFrame(rows).to_csv(tmp_path / "t.csv", index=False, sep=";")
    out = tmp_path / "ds"
    rc = main(["import", "table", str(tmp_path / "t.csv"), "--parcels", str(tmp_path / "fields.gpkg"),
               "--join-field", "FID_1", "--label-field", "NC", "--block-field", "blk",
               "--class-map", str(tmp_path / "map.csv"), "--weather", str(weather), "--date-var", "Termin",
               "--tmin-var", "T_Min_2m", "--tmax-var", "T_Max_2m", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "5 parcels x 1 dates x 1 pixel slots" in text and "class unknown: 1" in text
    ps = open_dataset(out)
    assert ps.parcel_ids.tolist() == ["x9", "x4", "x2", "x5", "x7"]
    assert ps.classes == ("corn", "unknown", "winter_wheat")
    names = [ps.classes[i] if i >= 0 else None for i in ps.labels]
    assert names == ["corn", "unknown", "winter_wheat", None, None]
    assert ps.blocks.tolist() == [3, 8, 3, 8, -1]
    assert ps.pixels[:, 0, :, 0].tolist() == [[1000 + k for k in range(10)]] * 5
    np.testing.assert_allclose(ps.gdd[:, 0], gdd_by_hand(tmin, tmax, SEASON, ["2021-04-15"])[0], rtol=1e-6)
    # An existing folder is left alone.
    with pytest.raises(InputError, match="already exists"):
        import_table(tmp_path / "t.csv", out, weather=ImportWeather(weather, options=STATION))


def test_bad_tables_are_named(tmp_path):
    weather, _, _ = station_csv(tmp_path / "station.csv")
    row = {"id": 1, "date": "2021-04-01", "label": "a"}
    row.update({b: 1000 for b in BANDS[:-1]})
    pd.DataFrame([row]).to_csv(tmp_path / "short.csv", index=False)
    with pytest.raises(InputError, match="B12: no column"):
        table_pixel_sets(tmp_path / "short.csv", weather=ImportWeather(weather, options=STATION))
    rows = [dict(row, B12=1000, date=d, label=lab) for d, lab in (("2021-04-01", "a"), ("2021-05-01", "b"))]
    pd.DataFrame(rows).to_csv(tmp_path / "two.csv", index=False)
    with pytest.raises(InputError, match="parcel 1 has two values of label"):
        table_pixel_sets(tmp_path / "two.csv", weather=ImportWeather(weather, options=STATION),
                         columns=TableColumns(label_column="label"))
    pd.DataFrame([dict(rows[0], date="1.4.2021")]).to_csv(tmp_path / "date.csv", index=False)
    with pytest.raises(InputError, match="--date-format"):
        table_pixel_sets(tmp_path / "date.csv", weather=ImportWeather(weather, options=STATION))
    ps = table_pixel_sets(tmp_path / "date.csv", weather=ImportWeather(weather, options=STATION),
                          columns=TableColumns(date_format="%d.%m.%Y"))
    assert str(ps.dates[0]) == "2021-04-01"


def find_realdata():
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "shared" / "realdata"
        if (candidate / "bavaria2018" / "load.py").is_file():
            return candidate
    pytest.skip("the shared real data (shared/realdata) is not next to this checkout")


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_bavarian_parcels_equal_an_independent_reading(tmp_path):
    realdata = find_realdata()
    loader = load_module(realdata / "bavaria2018" / "load.py", "bavaria_load")
    bavaria = loader.load()
    station = load_module(realdata / "duernast-weather" / "load.py", "duernast_load").load_weather()
    wc = realdata / "bavaria2018" / "worldcrops"
    out = tmp_path / "bavaria"
    rc = main(["import", "table", str(wc / "Test_bavaria.xlsx"), "--parcels", str(wc / "Test_area.shp"),
               "--join-by-row", "--label-field", "NC_ant", "--class-map", "bavaria", "--level", "L1C",
               "--block-size-km", "1", "--weather", str(realdata / "duernast-weather" /
                                                        "lte_duernast.V1_0_KLIMADATEN.csv"),
               "--date-var", "Termin", "--tmin-var", "T_Min_2m", "--tmax-var", "T_Max_2m", "--out", str(out)])
    assert rc == 0
    ps = open_dataset(out)
    assert ps.parcel_ids.tolist() == [str(i) for i in range(301)]
    assert (ps.dates == bavaria["dates"]).all()
    assert ps.bands == tuple(bavaria["bands10"])
    # The loader's arrays are float32; its xlsx reader gives the cells as Python floats.
    rows = loader.read_xlsx(str(wc / "Test_bavaria.xlsx"))
    col = {h: i for i, h in enumerate(rows[0]) if h}
    values = np.zeros((301, 14, 10))
    for r in rows[1:]:
        t = int(np.searchsorted(bavaria["dates"], np.datetime64("1899-12-30") + int(r[col["Date"]])))
        values[int(r[col["id"]]), t] = [r[col[f"{b.replace('B0', 'B')}_mean"]] for b in BANDS]
    assert np.abs(values - bavaria["X10"][..., 0]).max() < 1e-3
    assert (ps.pixels[..., 0] == np.floor(values + 0.5)).all()
    assert ps.date_mask.all() and ps.pixel_mask.all() and set(ps.status) == {"ok"}
    assert [ps.classes[i] for i in ps.labels] == bavaria["cls"].tolist()
    assert ps.meta["levels"] == ["L1C"]
    # GDD: the paper's rule on the station's days from 1 January, read at each date.
    tmin, tmax, days = station["tmin"], station["tmax"], station["date"]
    daily = np.maximum((np.minimum(tmax, 30.0) + np.maximum(tmin, 0.0)) / 2.0, 0.0)
    start = int(np.flatnonzero(days == np.datetime64("2018-01-01"))[0])
    expect_gdd = [daily[start:int(np.flatnonzero(days == d)[0]) + 1].sum() for d in bavaria["dates"]]
    np.testing.assert_allclose(ps.gdd, np.tile(expect_gdd, (301, 1)), rtol=1e-6)
    assert ps.day_of_season.tolist() == (bavaria["dates"] - np.datetime64("2018-01-01")).astype(float).tolist()
    # 1 km grid blocks: parcels sharing a block lie within a cell's diagonal of each other.
    lon, lat = bavaria["lonlat"][:, 0], bavaria["lonlat"][:, 1]
    x, y = (lon - 11.64) * 111_320 * np.cos(np.radians(48.38)), (lat - 48.38) * 110_540
    assert len(np.unique(ps.blocks)) >= 10 and (ps.blocks >= 0).all()
    for b in np.unique(ps.blocks):
        sel = ps.blocks == b
        spread = np.hypot(x[sel][:, None] - x[sel][None, :], y[sel][:, None] - y[sel][None, :])
        assert spread.max() < 1500.0
