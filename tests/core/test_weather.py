"""Tests of the weather readers on small files written by the tests.

The NetCDF files hold temperatures given by a formula of (day, row, column), so the value a
point must get is worked out by hand from the cell it falls in.
"""
import netCDF4
import numpy as np
import pytest
from pyproj import Transformer

from thermocrop.core.errors import WeatherError
from thermocrop.core.thermal.gdd import gdd_at_points
from thermocrop.core.thermal.weather import WeatherVariables, describe_days, read_daily_temperature

LAT = np.array([48.0, 48.1, 48.2, 48.3])  # 0.1 degree E-OBS-like grid
LON = np.array([11.0, 11.1, 11.2, 11.3, 11.4])
DAYS = np.arange("2020-01-01", "2020-03-01", dtype="datetime64[D]")  # 2020 is a leap year
TO_UTM = Transformer.from_crs("EPSG:4326", "EPSG:32632", always_xy=True)


def tn_value(day, row, col):
    return -5.0 + 0.25 * day + 1.5 * row + 0.5 * col


def tx_value(day, row, col):
    return tn_value(day, row, col) + 8.0 + 0.1 * col


def _grid(func, sea_col=None, gaps=()):
    d, r, c = np.meshgrid(np.arange(DAYS.size), np.arange(LAT.size), np.arange(LON.size), indexing="ij")
    values = np.round(func(d, r, c), 2)
    if sea_col is not None:
        values[:, :, sea_col] = np.nan
    for day, row, col in gaps:
        values[day, row, col] = np.nan
    return values


def write_eobs(path, variables, *, lat=LAT, lon=LON, days=DAYS):
    """E-OBS layout: int16 packed with scale_factor 0.01, _FillValue -9999, days since 1950-01-01."""
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", days.size)
        nc.createDimension("latitude", lat.size)
        nc.createDimension("longitude", lon.size)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar, t.standard_name = "days since 1950-01-01 00:00", "standard", "time"
        t[:] = (days - np.datetime64("1950-01-01")).astype(float)
        la = nc.createVariable("latitude", "f8", ("latitude",))
        la.units, la.standard_name = "degrees_north", "latitude"
        la[:] = lat
        lo = nc.createVariable("longitude", "f8", ("longitude",))
        lo.units, lo.standard_name = "degrees_east", "longitude"
        lo[:] = lon
        for name, values in variables.items():
            v = nc.createVariable(name, "i2", ("time", "latitude", "longitude"), fill_value=-9999)
            v.units, v.scale_factor, v.add_offset = "Celsius", np.float32(0.01), np.float32(0.0)
            v.set_auto_maskandscale(False)
            v[:] = np.where(np.isnan(values), -9999, np.round(np.nan_to_num(values) * 100)).astype(np.int16)
    return path


def utm(lon, lat):
    x, y = TO_UTM.transform(np.asarray(lon, float), np.asarray(lat, float))
    return np.asarray(x), np.asarray(y)


@pytest.fixture()
def eobs(tmp_path):
    # Column 4 (11.4 E) is sea; cell (row 1, col 1) misses 2020-01-10 and 2020-01-11.
    return write_eobs(tmp_path / "eobs.nc", {"tn": _grid(tn_value, sea_col=4, gaps=[(9, 1, 1), (10, 1, 1)]),
                                              "tx": _grid(tx_value, sea_col=4)})


def test_eobs_packed_int16_read_at_utm_points(eobs):
    # Points a little off three cell centres, one in the sea cell's column (11.39 E): its nearest
    # valid cell is column 3 (11.3 E, about 7 km away).
    lon = [11.02, 11.19, 11.39]
    lat = [48.01, 48.29, 48.12]
    x, y = utm(lon, lat)
    w = read_daily_temperature(eobs, x, y, "EPSG:32632", "2020-01-05", "2020-01-20",
                               parcel_ids=["a", "b", "c"])
    assert w.tmin.shape == (3, 16) and w.tmin.dtype == np.float32
    assert w.dates[0] == np.datetime64("2020-01-05") and w.dates[-1] == np.datetime64("2020-01-20")
    day = np.arange(4, 20)
    for p, (row, col) in enumerate([(0, 0), (3, 2), (1, 3)]):
        assert np.allclose(w.tmin[p], np.round(tn_value(day, row, col), 2), atol=1e-4)
        assert np.allclose(w.tmax[p], np.round(tx_value(day, row, col), 2), atol=1e-4)
    assert w.found is None
    # Distance to the cell used: about 1.7 km for point a, about 6.7 km for point c.
    assert 1_000 < w.distance_m[0] < 2_500 and 6_000 < w.distance_m[2] < 8_000


def test_fill_values_inside_a_land_cell_come_back_as_gaps(eobs):
    x, y = utm([11.1], [48.1])  # cell (1, 1), which misses two days
    w = read_daily_temperature(eobs, x, y, "EPSG:32632", "2020-01-08", "2020-01-12")
    assert np.isnan(w.tmin[0, 2:4]).all() and np.isfinite(w.tmin[0, [0, 1, 4]]).all()
    assert np.isfinite(w.tmax[0]).all()


def test_point_beyond_reach_is_named_or_masked(eobs):
    # 11.75 E is 26 km east of the last land column (11.3 E) and 19 km from the grid's sea edge.
    x, y = utm([11.0, 11.75], [48.0, 48.1])
    with pytest.raises(WeatherError, match=r"1 of 2 parcels .*within 25 km.*parcels far"):
        read_daily_temperature(eobs, x, y, "EPSG:32632", "2020-01-01", "2020-01-02",
                               parcel_ids=["near", "far"])
    w = read_daily_temperature(eobs, x, y, "EPSG:32632", "2020-01-01", "2020-01-02", missing="mask")
    assert list(w.found) == [True, False]
    assert np.isnan(w.tmin[1]).all() and np.isfinite(w.tmin[0]).all()
    # A larger reach takes the nearest land cell (row 1, column 3).
    w = read_daily_temperature(eobs, x, y, "EPSG:32632", "2020-01-01", "2020-01-02",
                               variables=WeatherVariables(max_distance_m=40_000))
    assert np.allclose(w.tmin[1], np.round(tn_value(np.arange(2), 1, 3), 2), atol=1e-4)


def test_dates_not_covered_are_named(eobs):
    with pytest.raises(WeatherError, match=r"2020-03-01 to 2020-03-03 \(3 days\)"):
        read_daily_temperature(eobs, [11.0], [48.0], "EPSG:4326", "2020-02-20", "2020-03-03")


def test_tn_and_tx_in_two_files_found_by_name(tmp_path):
    tn = write_eobs(tmp_path / "tn_ens_mean_0.1deg_reg_v29.0e.nc", {"tn": _grid(tn_value)})
    tx = write_eobs(tmp_path / "tx_ens_mean_0.1deg_reg_v29.0e.nc", {"tx": _grid(tx_value)})
    for given in (tn, tx):  # either file finds its companion
        w = read_daily_temperature(given, [11.2], [48.2], "EPSG:4326", "2020-02-27", "2020-02-29")
        assert np.allclose(w.tmin[0], np.round(tn_value(np.array([57, 58, 59]), 2, 2), 2), atol=1e-4)
        assert np.allclose(w.tmax[0], np.round(tx_value(np.array([57, 58, 59]), 2, 2), 2), atol=1e-4)
    # Or named explicitly.
    other = tmp_path / "maxima.nc"
    tx.rename(other)
    w = read_daily_temperature(tn, [11.2], [48.2], "EPSG:4326", "2020-02-29", "2020-02-29",
                               variables=WeatherVariables(tmax_path=other))
    assert np.isclose(w.tmax[0, 0], round(tx_value(59, 2, 2), 2), atol=1e-4)
    with pytest.raises(WeatherError, match=r"has no daily maximum temperature variable \(variables: tn\)"):
        read_daily_temperature(tn, [11.2], [48.2], "EPSG:4326", "2020-02-29", "2020-02-29")


def _write_cf_kelvin(path, names=("tasmin", "tasmax"), standard=True):
    """A CF file in Kelvin, latitude descending, longitude 0..360, float32, hours since 2019."""
    lat, lon = LAT[::-1], np.array([359.8, 359.9, 0.0, 0.1])
    hours = (DAYS[:10] - np.datetime64("2019-01-01")).astype(float) * 24 + 12
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", hours.size)
        nc.createDimension("lat", lat.size)
        nc.createDimension("lon", lon.size)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "hours since 2019-01-01 00:00:00", "gregorian"
        t[:] = hours
        nc.createVariable("lat", "f4", ("lat",))[:] = lat
        nc["lat"].units = "degrees_north"
        nc.createVariable("lon", "f4", ("lon",))[:] = lon
        nc["lon"].units = "degrees_east"
        d, r, c = np.meshgrid(np.arange(hours.size), np.arange(lat.size), np.arange(lon.size), indexing="ij")
        for name, method, offset in ((names[0], "minimum", 0.0), (names[1], "maximum", 9.0)):
            v = nc.createVariable(name, "f4", ("time", "lat", "lon"))
            v.units = "K"
            if standard:
                v.standard_name, v.cell_methods = "air_temperature", f"time: {method}"
            v[:] = 273.15 + d + r * 2.0 + c * 0.25 + offset


def test_cf_kelvin_descending_latitude_and_0_360_longitude(tmp_path):
    path = tmp_path / "cf.nc"
    _write_cf_kelvin(path, names=("minimum_2m", "maximum_2m"))  # found by standard_name + cell_methods
    # 0.08 E, 48.29 N: nearest cell is longitude 0.1 (column 3), latitude 48.3 (first row).
    w = read_daily_temperature(path, [0.08], [48.29], "EPSG:4326", "2020-01-02", "2020-01-04")
    assert np.allclose(w.tmin[0], np.array([1, 2, 3]) + 0 * 2.0 + 3 * 0.25, atol=1e-4)
    assert np.allclose(w.tmax[0], np.array([1, 2, 3]) + 0.75 + 9.0, atol=1e-4)
    # -0.15 E is 359.85 E: column 0 or 1 of the grid; 359.9 (column 1) is nearer to -0.12.
    w = read_daily_temperature(path, [-0.12], [48.0], "EPSG:4326", "2020-01-01", "2020-01-01")
    assert np.isclose(w.tmin[0, 0], 0 + 3 * 2.0 + 1 * 0.25, atol=1e-4)


def test_cf_variable_names_given_explicitly(tmp_path):
    path = tmp_path / "names.nc"
    _write_cf_kelvin(path, names=("lowest", "highest"), standard=False)
    with pytest.raises(WeatherError, match=r"variables: .*lowest.*--tmin-var"):
        read_daily_temperature(path, [0.0], [48.0], "EPSG:4326", "2020-01-01", "2020-01-01")
    w = read_daily_temperature(path, [0.0], [48.0], "EPSG:4326", "2020-01-01", "2020-01-01",
                               variables=WeatherVariables(tmin_var="lowest", tmax_var="highest"))
    assert np.isclose(w.tmin[0, 0], 3 * 2.0 + 2 * 0.25, atol=1e-4)
    assert np.isclose(w.tmax[0, 0], 3 * 2.0 + 2 * 0.25 + 9.0, atol=1e-4)


def test_only_the_needed_days_and_cells_are_read(tmp_path, monkeypatch):
    from thermocrop.core.thermal import weather

    lat = np.round(np.arange(40.0, 55.0, 0.1), 2)
    lon = np.round(np.arange(0.0, 20.0, 0.1), 2)
    shape = (DAYS.size, lat.size, lon.size)
    values = np.broadcast_to(np.arange(DAYS.size, dtype=float)[:, None, None], shape)
    path = write_eobs(tmp_path / "wide.nc", {"tn": values, "tx": values + 5}, lat=lat, lon=lon)
    shapes = []
    real_read = weather._Grid.read

    def spy(self, days, rows, cols):
        out = real_read(self, days, rows, cols)
        shapes.append(out.shape)
        return out

    monkeypatch.setattr(weather._Grid, "read", spy)
    w = read_daily_temperature(path, [11.0, 11.3], [48.0, 48.2], "EPSG:4326", "2020-02-01", "2020-02-10")
    assert np.allclose(w.tmin, np.arange(31, 41)[None, :].repeat(2, 0))
    assert len(shapes) == 2
    for days, rows, cols in shapes:
        # 10 days of 150 x 200 cells: a window of a few cells around the points only.
        assert days == 10 and rows <= 10 and cols <= 14


def test_units_fahrenheit_converted_and_unknown_refused(tmp_path):
    path = tmp_path / "f.nc"
    write_eobs(path, {"tn": _grid(tn_value), "tx": _grid(tx_value)})
    with netCDF4.Dataset(path, "a") as nc:
        nc["tn"].units = "degF"
        nc["tx"].units = "metres"
    with pytest.raises(WeatherError, match=r"'tx'.*units 'metres'"):
        read_daily_temperature(path, [11.0], [48.0], "EPSG:4326", "2020-01-01", "2020-01-01")
    with netCDF4.Dataset(path, "a") as nc:
        nc["tx"].units = "degrees_Celsius"
    w = read_daily_temperature(path, [11.0], [48.0], "EPSG:4326", "2020-01-01", "2020-01-01")
    assert np.isclose(w.tmin[0, 0], (-5.0 - 32.0) * 5.0 / 9.0, atol=1e-4)
    assert np.isclose(w.tmax[0, 0], 3.0, atol=1e-4)


def test_not_netcdf_or_missing_file(tmp_path):
    bad = tmp_path / "weather.nc"
    bad.write_text("this is not NetCDF")
    with pytest.raises(WeatherError, match=r"cannot open .*weather.nc as NetCDF \(it is not a NetCDF file\)") as caught:
        read_daily_temperature(bad, [0], [0], "EPSG:4326", "2020-01-01", "2020-01-01")
    assert "backends" not in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(WeatherError, match="does not exist"):
        read_daily_temperature(tmp_path / "none.csv", [0], [0], "EPSG:4326", "2020-01-01", "2020-01-01")


def test_station_csv_same_series_for_every_parcel(tmp_path):
    path = tmp_path / "station.csv"
    path.write_text("date,tmin,tmax\n2021-01-03,2,7\n2021-01-01,-1,3\n2021-01-02,,6\n")
    w = read_daily_temperature(path, [0, 1, 2], [0, 1, 2], "EPSG:4326", "2021-01-01", "2021-01-02")
    assert w.tmin.shape == (3, 2)
    assert np.allclose(w.tmin[:, 0], -1) and np.isnan(w.tmin[:, 1]).all()  # empty value: a gap
    assert np.allclose(w.tmax, [[3, 6]] * 3)
    assert list(w.dates.astype(str)) == ["2021-01-01", "2021-01-02"]


def test_station_csv_missing_dates_and_bad_values_named(tmp_path):
    path = tmp_path / "station.csv"
    path.write_text("date,tmin,tmax\n2021-01-01,-1,3\n")
    with pytest.raises(WeatherError, match="2021-01-02 to 2021-01-03"):
        read_daily_temperature(path, [0], [0], "EPSG:4326", "2021-01-01", "2021-01-03")
    path.write_text("date,tmin,tmax\n2021-01-01,-1,warm\n")
    with pytest.raises(WeatherError, match="line 2: tmax 'warm' is not a number"):
        read_daily_temperature(path, [0], [0], "EPSG:4326", "2021-01-01", "2021-01-01")
    path.write_text("day,low,high\n2021-01-01,-1,3\n")
    with pytest.raises(WeatherError, match="needs the columns date, tmax, tmin"):
        read_daily_temperature(path, [0], [0], "EPSG:4326", "2021-01-01", "2021-01-01")


def test_describe_days_groups_runs():
    days = np.array(["2021-01-01", "2021-01-02", "2021-01-03", "2021-02-01"], dtype="datetime64[D]")
    assert describe_days(days) == "2021-01-01 to 2021-01-03, 2021-02-01 (4 days)"


def test_gdd_at_points_from_an_eobs_file(eobs):
    # Point a in cell (2, 1); point b 80 km east of the grid has no weather and comes out NaN.
    x, y = utm([11.1, 12.5], [48.2, 48.0])
    g = gdd_at_points(eobs, x, y, "EPSG:32632", ["2020-01-31", "2020-02-29"], t_base=0.0, t_cap=30.0)
    day = np.arange(60)
    tn, tx = np.round(tn_value(day, 2, 1), 2), np.round(tx_value(day, 2, 1), 2)
    daily = np.maximum((np.minimum(tx, 30) + np.maximum(tn, 0)) / 2, 0)
    assert np.allclose(g[0], [daily[:31].sum(), daily.sum()], rtol=1e-5)
    assert np.isnan(g[1]).all()
    with pytest.raises(WeatherError, match="2020-03-01"):
        gdd_at_points(eobs, x, y, "EPSG:32632", ["2020-03-01"])
