"""Tests of the weather readers on small files written by the tests."""
import numpy as np
import pytest

from thermocrop.core.errors import WeatherError
from thermocrop.core.weather import read_daily_temperature


def test_station_csv_same_series_for_every_parcel(tmp_path):
    path = tmp_path / "station.csv"
    path.write_text("date,tmin,tmax\n2021-01-03,2,7\n2021-01-01,-1,3\n2021-01-02,0.5,6\n")
    w = read_daily_temperature(path, [0, 1, 2], [0, 1, 2], "EPSG:4326", "2021-01-01", "2021-01-02")
    assert w.tmin.shape == (3, 2)
    assert np.allclose(w.tmin, [[-1, 0.5]] * 3) and np.allclose(w.tmax, [[3, 6]] * 3)
    assert list(w.dates.astype(str)) == ["2021-01-01", "2021-01-02"]


def test_station_csv_missing_dates_named(tmp_path):
    path = tmp_path / "station.csv"
    path.write_text("date,tmin,tmax\n2021-01-01,-1,3\n")
    with pytest.raises(WeatherError, match="2021-01-02 to 2021-01-03"):
        read_daily_temperature(path, [0], [0], "EPSG:4326", "2021-01-01", "2021-01-03")
