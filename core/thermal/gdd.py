"""Growing degree days: daily thermal time summed from a season start.

Used by extraction to give every acquisition date its thermal position (paper eq. 2).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from ..errors import GDDGapError
from .weather import describe_days

if TYPE_CHECKING:
    from .weather import DailyTemperature

logger = logging.getLogger(__name__)

MAX_FILLED_GAP_DAYS = 3
METHODS = ("paper", "average")


def daily_degree_days(
    tmin: np.ndarray,
    tmax: np.ndarray,
    *,
    t_base: float = 0.0,
    t_cap: float = 30.0,
    method: str = "paper",
) -> np.ndarray:
    """Degree days of each day, shape and float type of the inputs (see ``growing_degree_days``)."""
    if method not in METHODS:
        raise ValueError(f"unknown GDD method {method!r}; use one of {METHODS}")
    tmin, tmax = np.asarray(tmin), np.asarray(tmax)
    # In place on one fresh array: at 100k parcels x 365 days each temporary is 150-300 MB.
    daily = np.minimum(tmax, t_cap, dtype=np.result_type(tmin, tmax, np.float32))
    if method == "paper":
        daily += np.maximum(tmin, t_base)
    else:
        daily += np.minimum(tmin, t_cap)
    daily *= 0.5
    daily -= t_base
    return np.maximum(daily, 0.0, out=daily)


def growing_degree_days(
    tmin: np.ndarray,
    tmax: np.ndarray,
    *,
    t_base: float = 0.0,
    t_cap: float = 30.0,
    method: str = "paper",
) -> np.ndarray:
    """Cumulative growing degree days along the last axis (days).

    Args:
        tmin: Daily minimum temperature in degrees C, shape (..., D).
        tmax: Daily maximum temperature in degrees C, shape (..., D).
        t_base: Base temperature below which no growth accrues.
        t_cap: Upper cap on the temperatures.
        method: ``"paper"`` (paper eq. 2, a variant of McMaster & Wilhelm's method 2): the
            daily value is ``max((min(Tmax, Tcap) + max(Tmin, Tbase)) / 2 - Tbase, 0)``, so a
            cold night counts as Tbase and a hot afternoon as Tcap. ``"average"`` (McMaster &
            Wilhelm method 1): ``max((min(Tmax, Tcap) + min(Tmin, Tcap)) / 2 - Tbase, 0)``,
            the mean first, then clipped at the base: a night below Tbase pulls the mean down.

    Returns:
        Cumulative GDD in degree days (C d), shape (..., D), float64.
    """
    daily = daily_degree_days(np.asarray(tmin, dtype=np.float64), np.asarray(tmax, dtype=np.float64),
                              t_base=t_base, t_cap=t_cap, method=method)
    return np.cumsum(daily, axis=-1)


@dataclass(frozen=True)
class SeasonStart:
    """Day the thermal time starts; year_offset -1 means the previous year."""

    month: int = 1
    day: int = 1
    year_offset: int = 0

    @classmethod
    def parse(cls, text: str) -> "SeasonStart":
        """Parse "MM-DD" or "MM-DD/-1"."""
        try:
            date_part, _, offset = text.strip().partition("/")
            month, day = (int(v) for v in date_part.split("-"))
            start = cls(month, day, int(offset) if offset else 0)
            start.start_for(2001)
        except ValueError as exc:
            raise ValueError(
                f"season start {text!r} is not MM-DD or MM-DD/-1 (e.g. 09-01/-1)"
            ) from exc
        return start

    def __str__(self) -> str:
        """The text form ``parse`` reads: ``"01-01"`` or ``"09-01/-1"``."""
        return f"{self.month:02d}-{self.day:02d}" + (f"/{self.year_offset}" if self.year_offset else "")

    def start_for(self, year: int) -> np.datetime64:
        """Season start date for a season whose acquisitions fall in `year`."""
        return np.datetime64(f"{year + self.year_offset:04d}-{self.month:02d}-{self.day:02d}", "D")


def season_of(dates: Sequence, season_start: SeasonStart = SeasonStart()) -> np.ndarray:
    """The season each date belongs to, named by its harvest year, shape (T,) int.

    A season runs from ``season_start.start_for(Y)`` up to the day before
    ``season_start.start_for(Y + 1)``: with ``09-01/-1``, 2016-10-05 and 2017-07-01 both belong
    to season 2017 (1 September 2016 to 31 August 2017).
    """
    days = np.asarray(dates, dtype="datetime64[D]").ravel()
    out = np.empty(days.size, dtype=np.int64)
    for i, day in enumerate(days):
        year = int(str(day)[:4]) - season_start.year_offset
        while season_start.start_for(year) > day:
            year -= 1
        while season_start.start_for(year + 1) <= day:
            year += 1
        out[i] = year
    return out


def season_span(year: int, season_start: SeasonStart = SeasonStart()) -> tuple[np.datetime64, np.datetime64]:
    """First and last day of the season named ``year``."""
    return season_start.start_for(year), season_start.start_for(year + 1) - np.timedelta64(1, "D")


def _season_start_date(dates: np.ndarray, season_start: SeasonStart) -> np.datetime64:
    # The season is named after its last acquisition's year (the harvest year); step back
    # a year while the start would fall after the first acquisition (spanning New Year).
    year = int(str(dates.max())[:4])
    start = season_start.start_for(year)
    while start > dates.min():
        year -= 1
        start = season_start.start_for(year)
    return start


def day_of_season(acquisition_dates: Sequence, season_start: SeasonStart = SeasonStart()) -> np.ndarray:
    """Days since season start for each acquisition, shape (T,) float32."""
    dates = np.asarray(acquisition_dates, dtype="datetime64[D]")
    start = _season_start_date(dates, season_start)
    return (dates - start).astype(np.float32)


def season_bounds(acquisition_dates: Sequence, season_start: SeasonStart = SeasonStart()
                  ) -> tuple[np.datetime64, np.datetime64]:
    """First and last day of weather needed for GDD at these dates: (season start, last date)."""
    dates = np.asarray(acquisition_dates, dtype="datetime64[D]")
    return _season_start_date(dates, season_start), dates.max()


def _fill_gaps(values: np.ndarray, dates: np.ndarray, what: str, parcel_ids, missing: str,
               gaps: Optional[list] = None, filled: Optional[list] = None) -> np.ndarray:
    """Fill NaN runs of at most 3 days linearly along the last axis of ``(P, D)``.

    A longer run, or one touching the first or last day, raises ``GDDGapError`` naming the
    dates (``missing="raise"``) or makes the whole row NaN (``missing="mask"``); then, when
    ``gaps`` is a list, ``(what, first_day, last_day, rows)`` is appended to it for each
    distinct unfillable gap (the first of each row), so a warning can name the dates. When
    ``filled`` is a list, ``(what, days, rows, values)`` is appended to it: the days filled,
    how many series and how many values.
    """
    values = np.array(values, dtype=np.result_type(values, np.float32))
    holed = np.flatnonzero(np.isnan(values).any(axis=1))
    if holed.size == 0:
        return values
    part = values[holed].astype(np.float64)
    nan = np.isnan(part)
    n_days = part.shape[1]
    days = np.broadcast_to(np.arange(n_days, dtype=np.int32), part.shape)
    # Index of the last valid day at or before each day, and of the next at or after it.
    before = np.maximum.accumulate(np.where(nan, np.int32(-1), days), axis=1)
    after = np.minimum.accumulate(np.where(nan, np.int32(n_days), days)[:, ::-1], axis=1)[:, ::-1]
    bad = nan & ((before < 0) | (after >= n_days) | (after - before - 1 > MAX_FILLED_GAP_DAYS))
    unusable = bad.any(axis=1)
    if unusable.any() and missing == "mask":
        if gaps is not None:
            rows = np.flatnonzero(unusable)
            first_bad = bad[rows].argmax(axis=1)
            s = before[rows, first_bad] + 1
            e = np.minimum(after[rows, first_bad], n_days) - 1
            runs = np.stack([s, e], axis=1)
            for run in np.unique(runs, axis=0):
                members = holed[rows[(runs == run).all(axis=1)]]
                gaps.append((what, dates[run[0]], dates[run[1]], members))
        part[unusable] = np.nan
        nan[unusable] = False
    elif unusable.any():
        p, d = np.argwhere(bad)[0]
        s, e = before[p, d] + 1, min(after[p, d], n_days) - 1
        who = f" for parcel {parcel_ids[holed[p]]}" if parcel_ids is not None else ""
        others = int(unusable.sum()) - 1
        also = f" (and {others} more parcels have long gaps)" if others > 0 else ""
        raise GDDGapError(
            f"{what} is missing from {dates[s]} to {dates[e]}{who}{also}; gaps of more than "
            f"{MAX_FILLED_GAP_DAYS} days (or at the record's ends) cannot be filled: use a weather "
            "file covering these dates"
        )
    rows, cols = np.nonzero(nan)
    if filled is not None and rows.size:
        filled.append((what, dates[np.unique(cols)], np.unique(rows).size, rows.size))
    lo, hi = before[rows, cols], after[rows, cols]
    weight = (cols - lo) / (hi - lo)
    part[rows, cols] = part[rows, lo] * (1.0 - weight) + part[rows, hi] * weight
    values[holed] = part
    return values


def gdd_at_dates(
    weather: "DailyTemperature",
    acquisition_dates: Sequence,
    *,
    season_start: SeasonStart = SeasonStart(),
    t_base: float = 0.0,
    t_cap: float = 30.0,
    method: str = "paper",
    parcel_ids: Sequence[str] | None = None,
    missing: str = "raise",
    gaps: Optional[list] = None,
    filled: Optional[list] = None,
) -> np.ndarray:
    """GDD since season start at each acquisition date (that day included).

    The season starts on ``season_start`` of the year of the last acquisition, or of the year
    before when that start would fall after the first acquisition (a season across New Year).

    Args:
        weather: daily temperatures ``(P, D)`` covering the season start to the last date.
        acquisition_dates: ``(T,)`` dates (anything ``datetime64[D]`` accepts).
        season_start, t_base, t_cap, method: see ``SeasonStart`` and ``growing_degree_days``.
        parcel_ids: names of the P series for error messages.
        missing: what a series with a gap longer than 3 days does: ``"raise"`` a
            ``GDDGapError`` naming the dates, or ``"mask"``: its row comes out NaN.
        gaps: with ``missing="mask"``, a list that receives ``(variable, first_day, last_day,
            rows)`` for each distinct gap too long to fill.
        filled: a list that receives ``(variable, days, series, values)`` for the short gaps
            filled.

    Returns:
        Array (P, T) float32 in degree days.

    Raises:
        GDDGapError: the weather does not cover the season, or (``missing="raise"``) a gap.
    """
    dates = np.asarray(acquisition_dates, dtype="datetime64[D]")
    start, end = season_bounds(dates, season_start)
    wd = np.asarray(weather.dates, dtype="datetime64[D]")
    sel = (wd >= start) & (wd <= end)
    needed = np.arange(start, end + 1, dtype="datetime64[D]")
    days, count = np.unique(wd[sel], return_counts=True)
    if (count > 1).any():
        raise GDDGapError(f"weather from {weather.source} repeats {describe_days(days[count > 1])}; give one "
                          "value per day")
    lacking = np.setdiff1d(needed, days)
    if lacking.size:
        raise GDDGapError(
            f"weather from {weather.source} does not cover {describe_days(lacking)}; the season from {start} "
            f"to {end} is needed"
        )
    if missing not in ("raise", "mask"):
        raise ValueError(f"missing must be 'raise' or 'mask', not {missing!r}")
    first = int(np.argmax(sel))
    span = slice(first, first + needed.size)
    if not np.array_equal(wd[span], needed):  # an unsorted record: pick the days one by one
        order = np.argsort(wd, kind="stable")
        span = order[np.searchsorted(wd[order], needed)]
    tmin = _fill_gaps(np.asarray(weather.tmin)[:, span], needed, "tmin", parcel_ids, missing, gaps, filled)
    tmax = _fill_gaps(np.asarray(weather.tmax)[:, span], needed, "tmax", parcel_ids, missing, gaps, filled)
    daily = daily_degree_days(tmin, tmax, t_base=t_base, t_cap=t_cap, method=method)
    # Sum the days between consecutive acquisitions, then accumulate those sums (in float64):
    # the cumulative sum over every day read at the acquisitions, in a third of the time.
    offsets, where = np.unique((dates - start).astype(np.int64), return_inverse=True)
    starts = np.concatenate([[0], offsets[:-1] + 1])
    sums = np.add.reduceat(daily[:, : offsets[-1] + 1], starts, axis=1)
    return np.cumsum(sums, axis=1, dtype=np.float64)[:, where].astype(np.float32)


def gdd_at_points(
    weather,
    points_x: Sequence[float],
    points_y: Sequence[float],
    crs,
    acquisition_dates: Sequence,
    *,
    season_start: SeasonStart = SeasonStart(),
    t_base: float = 0.0,
    t_cap: float = 30.0,
    method: str = "paper",
    parcel_ids: Sequence[str] | None = None,
    **weather_options,
) -> np.ndarray:
    """GDD at each acquisition date for points (e.g. parcel centroids).

    Args:
        weather: a weather file, read for the season's days only with
            ``core.thermal.weather.read_daily_temperature`` (``weather_options`` go to it), or the
            points' ``DailyTemperature`` already read (points and options are then unused).

    Returns:
        Array (P, T) float32 in degree days; a row is NaN where the point has no cell with data
        within reach or its record has a gap longer than 3 days (a warning names them).

    Raises:
        WeatherError: the file cannot be read or does not cover the season.
    """
    from .weather import DailyTemperature, WeatherVariables, read_daily_temperature

    dates = np.asarray(acquisition_dates, dtype="datetime64[D]")
    if not isinstance(weather, DailyTemperature):
        start, end = season_bounds(dates, season_start)
        weather = read_daily_temperature(weather, points_x, points_y, crs, start, end,
                                         variables=WeatherVariables.from_dict(weather_options), parcel_ids=parcel_ids,
                                         missing="mask")
    gaps: list = []
    filled: list = []
    gdd = gdd_at_dates(weather, dates, season_start=season_start, t_base=t_base, t_cap=t_cap,
                       method=method, parcel_ids=parcel_ids, missing="mask", gaps=gaps, filled=filled)
    for what, days, series, values in filled:
        logger.warning("%s: %d missing %s values of %d of %d parcels filled linearly from the days around them "
                       "(gaps of at most %d days) on %s", weather.source, values, what, series, len(gdd),
                       MAX_FILLED_GAP_DAYS, describe_days(days))

    def names(rows) -> str:
        shown = [str(parcel_ids[i]) if parcel_ids is not None else f"#{i}" for i in rows[:10]]
        return ", ".join(shown) + (f" and {len(rows) - 10} more" if len(rows) > 10 else "")

    unfound = np.zeros(len(gdd), dtype=bool) if weather.found is None else ~np.asarray(weather.found)
    if unfound.any():
        logger.warning("%d of %d parcels have no temperature cell with data within reach in %s: %s",
                       int(unfound.sum()), len(gdd), weather.source, names(np.flatnonzero(unfound)))
    # The warning names each gap's dates (a parcel listed under tmin is not listed again).
    told = unfound.copy()
    for what, first, last, rows in gaps:
        rows = rows[~told[rows]]
        if rows.size:
            told[rows] = True
            days = (np.datetime64(last) - np.datetime64(first)).astype(int) + 1
            logger.warning("%d of %d parcels have %s missing from %s to %s (%d days) in %s; gaps of "
                           "more than %d days (or at the season's ends) are not filled, so they get no "
                           "GDD: %s", rows.size, len(gdd), what, first, last, days, weather.source,
                           MAX_FILLED_GAP_DAYS, names(rows))
    return gdd
