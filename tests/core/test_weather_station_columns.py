"""Station CSVs with other column names and ISO date-times (e.g. a weather service's export)."""
import logging

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
    with pytest.raises(WeatherError, match=r"klima\.csv, line 2: Termin '01\.01\.2018' is not a date"):
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


def test_station_dates_keep_the_day_written_whatever_the_offset(tmp_path):
    """A station's daily record stamped at local midnight with its UTC offset (``+01:00``) is the
    day written, not the UTC day before it; a month, or a day no calendar has, is refused by line."""
    path = tmp_path / "station.csv"
    path.write_text("date,tmin,tmax\n"
                    "2018-01-01T00:00:00+01:00,-3.0,3.5\n"
                    "2018-01-02 00:00-05:00,-2.0,4.5\n"
                    "2018-01-03T00:00Z,-1.0,5.5\n"
                    "2018-01-04T00:00:00.000+0100,0.0,6.5\n")
    w = read_daily_temperature(path, [0.0], [0.0], "EPSG:4326", "2018-01-01", "2018-01-04")
    assert [str(d) for d in w.dates] == ["2018-01-01", "2018-01-02", "2018-01-03", "2018-01-04"]
    np.testing.assert_array_equal(w.tmin[0], [-3.0, -2.0, -1.0, 0.0])
    assert record_period(path) == (np.datetime64("2018-01-01"), np.datetime64("2018-01-04"))
    for line, text in ((3, "2018-01"), (4, "2018-02-30"), (2, "2018-01-05T")):
        rows = ["2018-01-01", "2018-01-02", "2018-01-03"]
        rows[line - 2] = text
        path.write_text("date,tmin,tmax\n" + "".join(f"{r},1,2\n" for r in rows))
        with pytest.raises(WeatherError, match=rf"station\.csv, line {line}: date '{text}' is not a date"):
            read_daily_temperature(path, [0.0], [0.0], "EPSG:4326", "2018-01-01", "2018-01-03")


def test_missing_rows_inside_the_record_are_named_as_such(tmp_path):
    """Rows left out in the middle of a record that spans the season: the message names the days it
    lacks and does not ask for a file covering the season (this one does)."""
    days = np.arange("2018-03-01", "2018-03-11", dtype="datetime64[D]")
    kept = [d for d in days if str(d) not in ("2018-03-04", "2018-03-05")]
    path = tmp_path / "station.csv"
    path.write_text("date,tmin,tmax\n" + "".join(f"{d},1,8\n" for d in kept))
    with pytest.raises(WeatherError) as caught:
        read_daily_temperature(path, [0.0], [0.0], "EPSG:4326", "2018-03-01", "2018-03-10")
    text = str(caught.value)
    assert "runs 2018-03-01 to 2018-03-10 but lacks 2018-03-04 to 2018-03-05 (2 days)" in text
    assert "covering the whole season" not in text
    with pytest.raises(WeatherError,
                       match=r"does not cover 2018-03-04 to 2018-03-05, 2018-03-11 \(3 days\).* whole season"):
        read_daily_temperature(path, [0.0], [0.0], "EPSG:4326", "2018-03-01", "2018-03-11")


def test_a_semicolon_csv_with_decimal_commas_reads(tmp_path):
    """A spreadsheet of a decimal-comma locale saves ``date;tmin;tmax`` with ``-2,5``: read as the
    same record as the comma file (a BOM too); a comma file keeps its decimal points."""
    rows = [("2018-01-01", -2.5, 3.25), ("2018-01-02", -1.0, 4.5), ("2018-01-03", 0.75, 6.0)]
    comma = tmp_path / "comma.csv"
    comma.write_text("date,tmin,tmax\n" + "".join(f"{d},{lo},{hi}\n" for d, lo, hi in rows))
    semi = tmp_path / "semi.csv"
    semi.write_bytes(("date;tmin;tmax\r\n" + "".join(f"{d};{lo};{hi}\r\n".replace(".", ",") for d, lo, hi in rows))
                     .encode("utf-8-sig"))
    a = read_daily_temperature(comma, [0.0], [0.0], "EPSG:4326", "2018-01-01", "2018-01-03")
    b = read_daily_temperature(semi, [0.0], [0.0], "EPSG:4326", "2018-01-01", "2018-01-03")
    np.testing.assert_array_equal(b.tmin, a.tmin)
    np.testing.assert_array_equal(b.tmax[0], [r[2] for r in rows])
    assert record_period(semi) == (np.datetime64("2018-01-01"), np.datetime64("2018-01-03"))


def test_a_weather_warning_is_said_once_per_run(tmp_path, caplog):
    """A run reads its weather in the input check and again for the work: a Kelvin station CSV
    is said to be Kelvin once; the next run (a new input check) says it again."""
    from thermocrop.core.preflight import check_inputs

    days = np.arange("2018-01-01", "2018-12-31", dtype="datetime64[D]")
    path = tmp_path / "kelvin.csv"
    path.write_text("date,tmin,tmax\n" + "".join(f"{d},271.15,281.15\n" for d in days))

    def said():
        return [r for r in caplog.records if "which are Kelvin" in r.getMessage()]

    for run in (1, 2):
        with caplog.at_level(logging.WARNING):
            check_inputs(weather=str(path))
            for _ in range(2):  # a sample, then all of it
                w = read_daily_temperature(path, [0.0], [0.0], "EPSG:4326", "2018-01-01", "2018-12-30")
        np.testing.assert_allclose(w.tmin[0], -2.0, atol=1e-4)
        assert len(said()) == run
