"""Growing degree days: daily thermal time summed from a season start.

Used by extraction to give every acquisition date its thermal position (paper eq. 2).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .errors import GDDGapError

if TYPE_CHECKING:
    from .weather import DailyTemperature

logger = logging.getLogger(__name__)

MAX_FILLED_GAP_DAYS = 3
METHODS = ("paper", "average")


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
        method: "paper" clips tmin/tmax to [t_base, t_cap] then averages and subtracts
            t_base; "average" averages first (tmax capped), then clips at t_base.

    Returns:
        Cumulative GDD, shape (..., D), float64.
    """
    tmin = np.asarray(tmin, dtype=np.float64)
    tmax = np.asarray(tmax, dtype=np.float64)
    if method == "paper":
        daily = (np.clip(tmin, t_base, t_cap) + np.clip(tmax, t_base, t_cap)) / 2.0 - t_base
    elif method == "average":
        mean = (np.minimum(tmin, t_cap) + np.minimum(tmax, t_cap)) / 2.0
        daily = np.maximum(mean - t_base, 0.0)
    else:
        raise ValueError(f"unknown GDD method {method!r}; use one of {METHODS}")
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

    def start_for(self, year: int) -> np.datetime64:
        """Season start date for a season whose acquisitions fall in `year`."""
        return np.datetime64(f"{year + self.year_offset:04d}-{self.month:02d}-{self.day:02d}", "D")


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


def _fill_gaps(values: np.ndarray, dates: np.ndarray, what: str, parcel_ids) -> np.ndarray:
    """Fill NaN runs of <= 3 days linearly along the last axis of (P, D)."""
    values = values.astype(np.float64, copy=True)
    nan = np.isnan(values)
    if not nan.any():
        return values
    days = np.arange(values.shape[1])
    for p in np.flatnonzero(nan.any(axis=1)):
        row_nan = nan[p]
        padded = np.concatenate([[False], row_nan, [False]])
        starts = np.flatnonzero(~padded[:-1] & padded[1:])
        ends = np.flatnonzero(padded[:-1] & ~padded[1:])
        valid = ~row_nan
        for s, e in zip(starts, ends):
            if e - s > MAX_FILLED_GAP_DAYS or s == 0 or e == values.shape[1]:
                who = f" for parcel {parcel_ids[p]}" if parcel_ids is not None else ""
                raise GDDGapError(
                    f"{what} is missing from {dates[s]} to {dates[e - 1]}{who}; gaps of more "
                    f"than {MAX_FILLED_GAP_DAYS} days (or at the record's ends) cannot be "
                    "filled: use a weather file covering these dates"
                )
        values[p, row_nan] = np.interp(days[row_nan], days[valid], values[p, valid])
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
) -> np.ndarray:
    """GDD since season start at each acquisition date (that day included).

    Returns:
        Array (P, T) float32.
    """
    dates = np.asarray(acquisition_dates, dtype="datetime64[D]")
    start = _season_start_date(dates, season_start)
    wd = np.asarray(weather.dates, dtype="datetime64[D]")
    end = dates.max()
    sel = (wd >= start) & (wd <= end)
    needed = np.arange(start, end + 1, dtype="datetime64[D]")
    if sel.sum() != needed.size:
        missing = np.setdiff1d(needed, wd[sel])
        raise GDDGapError(
            f"weather from {weather.source} does not cover {missing[0]} to {missing[-1]} "
            f"({missing.size} days); season from {start} to {end} is needed"
        )
    tmin = _fill_gaps(np.asarray(weather.tmin)[:, sel], needed, "tmin", parcel_ids)
    tmax = _fill_gaps(np.asarray(weather.tmax)[:, sel], needed, "tmax", parcel_ids)
    cum = growing_degree_days(tmin, tmax, t_base=t_base, t_cap=t_cap, method=method)
    return cum[:, (dates - start).astype(np.int64)].astype(np.float32)
