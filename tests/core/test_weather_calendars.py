"""Weather files whose calendar, time axis or encoding could be misread: other CF calendars,
repeated or missing days, a CSV with a byte-order mark, values out of range, filled gaps.

Each file is written here; the values a day must get are worked out from the day's index.
"""
import logging

import netCDF4
import numpy as np
import pytest

from thermocrop.core.errors import GDDGapError, WeatherError
from thermocrop.core.thermal.gdd import gdd_at_dates, gdd_at_points
from thermocrop.core.thermal.weather import DailyTemperature, read_daily_temperature, record_period

LAT, LON = np.array([48.0, 48.1]), np.array([11.0, 11.1])


def tmin_of(k):
    """The minimum temperature stored at time step ``k``: each step its own value."""
    return -2.0 + 0.1 * np.asarray(k, dtype=float)


def _write(path, steps, *, calendar="standard", since="2020-01-01", tmax_shift=None):
    """A CF file with ``tn``/``tx`` on a 2 x 2 grid at time ``steps`` (days since ``since`` in
    ``calendar``); step ``i`` holds ``tmin_of(i)`` and ``tmin_of(i) + 8`` in every cell."""
    steps = np.asarray(steps, dtype=float)
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("time", steps.size)
        nc.createDimension("lat", LAT.size)
        nc.createDimension("lon", LON.size)
        t = nc.createVariable("time", "f8", ("time",))
        t.units, t.calendar, t.standard_name = f"days since {since}", calendar, "time"
        t[:] = steps
        la = nc.createVariable("lat", "f8", ("lat",))
        la.units = "degrees_north"
        la[:] = LAT
        lo = nc.createVariable("lon", "f8", ("lon",))
        lo.units = "degrees_east"
        lo[:] = LON
        low = np.broadcast_to(tmin_of(np.arange(steps.size))[:, None, None], (steps.size, 2, 2))
        high = low + 8.0 if tmax_shift is None else low + tmax_shift
        for name, values in (("tn", low), ("tx", high)):
            v = nc.createVariable(name, "f4", ("time", "lat", "lon"))
            v.units = "degC"
            v[:] = values
    return path


def _read(path, start, end):
    return read_daily_temperature(path, [11.0], [48.0], "EPSG:4326", start, end)


def test_a_noleap_calendar_lacks_29_february_which_is_filled_from_its_neighbours(tmp_path, caplog):
    # noleap step k: 2020-01-01 + k for k <= 58 (28 February), then 1 March is step 59.
    path = _write(tmp_path / "noleap.nc", np.arange(120), calendar="noleap")
    with caplog.at_level(logging.WARNING):
        w = _read(path, "2020-02-27", "2020-03-02")
    assert w.tmin[0, :2].tolist() == pytest.approx(tmin_of([57, 58]).tolist())
    assert np.isnan(w.tmin[0, 2]) and "'noleap' calendar has no 2020-02-29" in caplog.text
    assert w.tmin[0, 3:].tolist() == pytest.approx(tmin_of([59, 60]).tolist())
    # GDD over the season: 29 February is the mean of the days around it.
    g = gdd_at_points(path, [11.0], [48.0], "EPSG:4326", ["2020-03-01"], t_base=0.0, t_cap=30.0)
    low = np.r_[tmin_of(np.arange(59)), (tmin_of(58) + tmin_of(59)) / 2, tmin_of(59)]
    daily = np.maximum(np.minimum(low + 8.0, 30.0) + np.maximum(low, 0.0), 0.0) / 2
    assert g[0, 0] == pytest.approx(daily.sum(), rel=1e-5)
    assert "1 missing tmin values of 1 of 1 parcels filled linearly" in caplog.text


def test_an_all_leap_calendar_keeps_real_days_and_drops_29_february_of_common_years(tmp_path):
    # all_leap 2021: step 59 is 29 February 2021, a day that does not exist; 1 March is step 60,
    # so the 120 steps end on 29 April.
    path = _write(tmp_path / "allleap.nc", np.arange(120), calendar="all_leap", since="2021-01-01")
    w = _read(path, "2021-02-27", "2021-03-02")
    assert w.tmin[0].tolist() == pytest.approx(tmin_of([57, 58, 60, 61]).tolist())
    assert record_period(path) == (np.datetime64("2021-01-01"), np.datetime64("2021-04-29"))


def test_a_julian_calendar_is_read_on_the_gregorian_days_it_means(tmp_path):
    # Julian 2020-01-01 is Gregorian 2020-01-14 (13 days apart from 1900 to 2100).
    path = _write(tmp_path / "julian.nc", np.arange(60), calendar="julian")
    w = _read(path, "2020-01-14", "2020-01-16")
    assert w.tmin[0].tolist() == pytest.approx(tmin_of([0, 1, 2]).tolist())
    with pytest.raises(WeatherError, match="does not cover 2020-01-01 to 2020-01-13"):
        _read(path, "2020-01-01", "2020-01-16")


def test_a_360_day_calendar_is_refused_naming_file_and_calendar(tmp_path):
    path = _write(tmp_path / "model_360.nc", np.arange(120), calendar="360_day")
    with pytest.raises(WeatherError) as caught:
        _read(path, "2020-01-10", "2020-01-20")
    said = str(caught.value)
    assert str(path) in said and "'360_day' calendar" in said
    assert "standard" in said and "noleap" in said and "convert" in said


def test_repeated_days_of_a_netcdf_file_are_used_once_or_refused_naming_them(tmp_path, caplog):
    # Steps 5 and 6 are both 2020-01-06 (and 2020-01-07 is step 7): the values differ.
    steps = np.r_[np.arange(6), 5, np.arange(6, 30)]
    path = _write(tmp_path / "repeated.nc", steps)
    with pytest.raises(WeatherError, match=r"different values for the same day: 2020-01-06 \(1 days\)"):
        _read(path, "2020-01-01", "2020-01-20")
    # Days outside the period asked for do not matter.
    w = _read(path, "2020-01-10", "2020-01-20")
    assert w.tmin[0].tolist() == pytest.approx(tmin_of(np.arange(10, 21)).tolist())
    # The same day twice with the same values is read once.
    same = tmp_path / "same.nc"
    with netCDF4.Dataset(_write(same, steps), "a") as nc:
        for name in ("tn", "tx"):
            nc[name][6] = nc[name][5]
    with caplog.at_level(logging.INFO):
        w = _read(same, "2020-01-01", "2020-01-20")
    assert w.tmin[0].tolist() == pytest.approx(tmin_of(np.r_[np.arange(6), np.arange(7, 21)]).tolist())
    assert "repeats 2020-01-06 (1 days) with the same values" in caplog.text


def test_missing_and_repeated_days_of_daily_temperatures_are_named():
    days = np.arange(np.datetime64("2021-01-01"), np.datetime64("2021-02-01"))
    ones = np.ones((1, days.size), dtype=np.float32)
    holed = np.r_[days[:4], days[9:20], days[25:]]
    with pytest.raises(GDDGapError) as caught:
        gdd_at_dates(DailyTemperature(holed, ones[:, :holed.size], ones[:, :holed.size], "service"), ["2021-01-31"])
    assert "2021-01-05 to 2021-01-09, 2021-01-21 to 2021-01-25 (10 days)" in str(caught.value)
    twice = np.r_[days, days[3], days[7]]
    with pytest.raises(GDDGapError, match=r"service repeats 2021-01-04, 2021-01-08 \(2 days\)"):
        gdd_at_dates(DailyTemperature(twice, ones[:, :1].repeat(twice.size, 1), ones[:, :1].repeat(twice.size, 1),
                                      "service"), ["2021-01-31"])


def test_a_station_csv_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "station.csv"
    path.write_text("\ufeffdate,tmin,tmax\n2021-01-01,-1,3\n2021-01-02,0.5,6\n", encoding="utf-8")
    assert path.read_bytes()[:3] == b"\xef\xbb\xbf"
    w = read_daily_temperature(path, [0, 1], [0, 1], "EPSG:4326", "2021-01-01", "2021-01-02")
    assert w.tmin.tolist() == [[-1.0, 0.5]] * 2 and w.tmax.tolist() == [[3.0, 6.0]] * 2
    assert record_period(path) == (np.datetime64("2021-01-01"), np.datetime64("2021-01-02"))


def test_temperatures_out_of_range_are_counted(tmp_path):
    # Every maximum is 500 C above the minimum: all 30 x 4 values of tx are out of range.
    path = _write(tmp_path / "hot.nc", np.arange(30), tmax_shift=500.0)
    with pytest.raises(WeatherError, match=r"variable 'tx' of .*hot.nc .*: 44 of its 44 values lie outside"):
        _read(path, "2020-01-10", "2020-01-20")


def test_a_file_without_a_time_axis_is_named(tmp_path):
    """A climatology-like file of one field per variable and no time axis: refused naming the file."""
    path = tmp_path / "notime.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("lat", LAT.size)
        nc.createDimension("lon", LON.size)
        for name, values in (("lat", LAT), ("lon", LON)):
            v = nc.createVariable(name, "f8", (name,))
            v.units = "degrees_north" if name == "lat" else "degrees_east"
            v[:] = values
        for name in ("tn", "tx"):
            v = nc.createVariable(name, "f4", ("lat", "lon"))
            v.units = "Celsius"
            v[:] = np.full((LAT.size, LON.size), 5.0)
    for read in (lambda: read_daily_temperature(path, [11.05], [48.05], "EPSG:4326", "2020-01-01", "2020-01-02"),
                 lambda: record_period(path)):
        with pytest.raises(WeatherError, match=rf"{path}: variable 'tn' has no time dimension"):
            read()
