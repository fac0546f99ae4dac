"""Station CSVs with other column names and ISO date-times (e.g. a weather service's export)."""
import numpy as np
import pytest

from thermocrop.core.errors import WeatherError
from thermocrop.core.thermal.weather import WeatherVariables, read_daily_temperature, record_period


def test_named_columns_and_datetimes(tmp_path):
    path = tmp_path / "klima.csv"
    path.write_text("Termin,T_Mit_2m,T_Min_2m,T_Max_2m\n"
                    "2018-01-02T00:00:00,1.0,-2.5,4.0\n"
                    "2018-01-01T00:00:00,0.5,-3.0,3.5\n"
                    "2018-01-03T00:00:00,2.0,,6.5\n")
    w = read_daily_temperature(path, [0.0, 1.0], [0.0, 1.0], "EPSG:4326", "2018-01-01", "2018-01-03",
                               variables=WeatherVariables(date_var="Termin", tmin_var="T_Min_2m", tmax_var="T_Max_2m"))
    assert w.dates.tolist() == np.arange("2018-01-01", "2018-01-04", dtype="datetime64[D]").tolist()
    np.testing.assert_array_equal(w.tmin[1], [-3.0, -2.5, np.nan])
    np.testing.assert_array_equal(w.tmax[0], [3.5, 4.0, 6.5])
    assert record_period(path, date_var="Termin") == (np.datetime64("2018-01-01"), np.datetime64("2018-01-03"))
    with pytest.raises(WeatherError, match="needs the columns date, tmax, tmin"):
        read_daily_temperature(path, [0.0], [0.0], "EPSG:4326", "2018-01-01", "2018-01-03")
    with pytest.raises(WeatherError, match="needs a date column"):
        record_period(path)
    path.write_text("Termin,T_Min_2m,T_Max_2m\n01.01.2018,1,2\n")
    with pytest.raises(WeatherError, match="Termin column must hold dates"):
        read_daily_temperature(path, [0.0], [0.0], "EPSG:4326", "2018-01-01", "2018-01-01",
                               variables=WeatherVariables(date_var="Termin", tmin_var="T_Min_2m", tmax_var="T_Max_2m"))


def test_a_station_csv_in_another_encoding_is_refused_by_name(tmp_path):
    """A German spreadsheet's CSV saved as Latin-1 ("Stationshöhe" column): a named error, not a
    decoding traceback; the same table in UTF-8 reads."""
    text = "date,tmin,tmax,Stationshöhe\n2018-01-01,-3.0,3.5,520\n"
    path = tmp_path / "station.csv"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(WeatherError, match=r"station\.csv: a station CSV must be UTF-8"):
        read_daily_temperature(path, [0.0], [0.0], "EPSG:4326", "2018-01-01", "2018-01-01")
    with pytest.raises(WeatherError, match=r"station\.csv: a station CSV must be UTF-8"):
        record_period(path)
    path.write_bytes(text.encode("utf-8"))
    w = read_daily_temperature(path, [0.0], [0.0], "EPSG:4326", "2018-01-01", "2018-01-01")
    np.testing.assert_array_equal(w.tmax[0], [3.5])
