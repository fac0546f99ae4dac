"""Tests of growing degree days against values worked out by hand."""
import numpy as np
import pytest

from thermocrop.core.errors import GDDGapError
from thermocrop.core.gdd import SeasonStart, day_of_season, gdd_at_dates, growing_degree_days
from dataclasses import dataclass


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
