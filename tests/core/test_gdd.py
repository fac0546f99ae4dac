"""Tests of growing degree days against values worked out by hand."""
from dataclasses import dataclass

import numpy as np
import pytest

from thermocrop.core.errors import GDDGapError
from thermocrop.core.thermal.gdd import (
    SeasonStart,
    day_of_season,
    gdd_at_dates,
    gdd_at_points,
    growing_degree_days,
    season_bounds,
)


@dataclass
class _Weather:
    dates: np.ndarray
    tmin: np.ndarray
    tmax: np.ndarray
    source: str = "test"


def test_paper_and_average_methods_around_base_and_cap():
    tmin = np.array([-4.0, 2.0, 28.0])
    tmax = np.array([2.0, 12.0, 36.0])
    # paper: (0+2)/2=1, (2+12)/2=7, (28+30)/2=29
    assert np.allclose(growing_degree_days(tmin, tmax), [1, 8, 37])
    # average with t_base 5: max((-4+2)/2-5,0)=0, (2+12)/2-5=2, (28+30)/2-5=24
    assert np.allclose(growing_degree_days(tmin, tmax, t_base=5, method="average"), [0, 2, 26])


def test_paper_rule_exactly_around_base_and_cap():
    # max((min(Tmax, Tcap) + max(Tmin, Tbase)) / 2 - Tbase, 0) with Tbase 5, Tcap 30
    tmin = np.array([[-3.0, 4.0, 6.0, 31.0, -2.0]])
    tmax = np.array([[3.0, 9.0, 20.0, 38.0, 4.9]])
    daily = [max((3 + 5) / 2 - 5, 0), (9 + 5) / 2 - 5, (20 + 6) / 2 - 5, (30 + 31) / 2 - 5, 0]
    assert daily == [0, 2.0, 8.0, 25.5, 0]
    got = growing_degree_days(tmin, tmax, t_base=5.0, t_cap=30.0)
    assert got.shape == (1, 5) and np.allclose(got, np.cumsum(daily))
    # "average": mean of capped values, then clipped at the base: night -3 pulls day 1 down.
    avg = [max((3 - 3) / 2 - 5, 0), (9 + 4) / 2 - 5, (20 + 6) / 2 - 5, (30 + 30) / 2 - 5, 0]
    assert np.allclose(growing_degree_days(tmin, tmax, t_base=5.0, method="average"), [np.cumsum(avg)])


def test_any_leading_shape():
    rng = np.random.default_rng(0)
    tmin = rng.normal(5, 6, (2, 3, 40))
    tmax = tmin + rng.uniform(2, 12, (2, 3, 40))
    got = growing_degree_days(tmin, tmax)
    assert got.shape == (2, 3, 40)
    one = growing_degree_days(tmin[1, 2], tmax[1, 2])
    by_hand = np.cumsum([max((min(b, 30) + max(a, 0)) / 2, 0) for a, b in zip(tmin[1, 2], tmax[1, 2])])
    assert np.allclose(got[1, 2], one) and np.allclose(one, by_hand)


def test_season_start_crossing_new_year_and_leap_year():
    s = SeasonStart.parse("09-01/-1")
    assert s.start_for(2020) == np.datetime64("2019-09-01")
    assert np.allclose(day_of_season(["2020-03-01"]), [60])  # 2020 is a leap year
    dates = np.arange("2019-09-01", "2020-03-02", dtype="datetime64[D]")
    w = _Weather(dates, np.full((1, dates.size), 10.0), np.full((1, dates.size), 10.0))
    g = gdd_at_dates(w, ["2019-12-31", "2020-01-01"], season_start=s)
    assert np.allclose(g, [[1220, 1230]])  # 122 and 123 days of 10 degrees


def test_gap_of_two_filled_and_five_raises():
    dates = np.arange("2021-01-01", "2021-01-11", dtype="datetime64[D]")
    t = np.arange(10, dtype=float)[None, :]
    t2 = t.copy()
    t2[0, 3:5] = np.nan
    g = gdd_at_dates(_Weather(dates, t2, t2), ["2021-01-10"])
    assert np.isclose(g[0, 0], t.sum())
    t5 = t.copy()
    t5[0, 2:7] = np.nan
    with pytest.raises(GDDGapError, match="2021-01-03 to 2021-01-07"):
        gdd_at_dates(_Weather(dates, t5, t5), ["2021-01-10"])


def test_gaps_per_parcel_filled_or_masked():
    dates = np.arange("2021-01-01", "2021-01-11", dtype="datetime64[D]")
    t = np.tile(np.arange(10, dtype=float) * 2.0, (4, 1))  # 0, 2, ..., 18 degrees
    t[0, 1:4] = np.nan  # 3 days: filled (2, 4, 6 by the straight line)
    t[1, 5:10] = np.nan  # runs to the end of the record: cannot be filled
    t[2, 0] = np.nan  # at the start: cannot be filled
    w = _Weather(dates, t, t)
    with pytest.raises(GDDGapError, match=r"2021-01-06 to 2021-01-10 for parcel b \(and 1 more"):
        gdd_at_dates(w, ["2021-01-05", "2021-01-10"], parcel_ids=["a", "b", "c", "d"])
    g = gdd_at_dates(w, ["2021-01-05", "2021-01-10"], missing="mask")
    full = np.cumsum(np.arange(10) * 2.0)
    assert np.allclose(g[0], full[[4, 9]]) and np.allclose(g[3], full[[4, 9]])
    assert np.isnan(g[1]).all() and np.isnan(g[2]).all()


def test_season_bounds_and_weather_not_covering_the_season():
    start, end = season_bounds(["2021-10-20", "2022-06-30"], SeasonStart.parse("09-01/-1"))
    assert (start, end) == (np.datetime64("2021-09-01"), np.datetime64("2022-06-30"))
    dates = np.arange("2021-01-05", "2021-02-01", dtype="datetime64[D]")
    w = _Weather(dates, np.zeros((1, dates.size)), np.ones((1, dates.size)))
    with pytest.raises(GDDGapError, match="2021-01-01 to 2021-01-04"):
        gdd_at_dates(w, ["2021-01-20"])


def test_gdd_at_points_from_a_station_csv(tmp_path):
    csv = tmp_path / "station.csv"
    days = np.arange("2020-01-01", "2020-01-11", dtype="datetime64[D]")
    csv.write_text("date,tmin,tmax\n" + "".join(f"{d},{-2 + i},{6 + i}\n" for i, d in enumerate(days)))
    g = gdd_at_points(csv, [0, 1], [0, 1], "EPSG:4326", ["2020-01-03", "2020-01-10"])
    daily = [(6 + i + max(-2 + i, 0)) / 2 for i in range(10)]
    assert np.allclose(g, [np.cumsum(daily)[[2, 9]]] * 2)
