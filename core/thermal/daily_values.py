"""Daily temperature records and the checks every weather source shares: units, plausible values,
minimum against maximum, the days a record covers."""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..errors import WeatherError

logger = logging.getLogger(__name__)

# Unit spellings after _unit_key (lower case, no spaces or underscores, "degree(s)" -> "deg").
_KELVIN = {"k", "kelvin", "kelvins", "degk"}
_CELSIUS = {"c", "degc", "celsius", "degcelsius", "°c"}
_FAHRENHEIT = {"f", "degf", "fahrenheit", "degfahrenheit", "°f"}
PLAUSIBLE_CELSIUS = (-90.0, 60.0)
"""Daily minimum/maximum temperatures any place on Earth has had (records: -89.2 and 56.7 C)."""

KELVIN_WITHOUT_UNITS = (183.0, 333.0)
"""Values a variable without units must all lie within to be read as Kelvin (-90 .. 60 C):
no value there is a plausible daily temperature in degrees C, so the reading is unambiguous."""


_SAID: set = set()
"""The weather warnings said since the current run's input check (see :func:`new_run`)."""


def new_run() -> None:
    """Start a run: each weather warning is said once from here on, though the run reads its
    weather file twice (a sample in the input check, then all of it)."""
    _SAID.clear()


def warn_once(log: logging.Logger, message: str, *args: Any) -> None:
    """``log.warning(message, *args)`` unless the same text was said since :func:`new_run`."""
    text = message % args if args else message
    if text in _SAID:
        log.debug("said before: %s", text)
        return
    _SAID.add(text)
    log.warning("%s", text)


@dataclass
class DailyTemperature:
    """Daily temperatures at P points over D consecutive days.

    Attributes:
        dates: ``(D,)`` datetime64[D].
        tmin: ``(P, D)`` float32 daily minimum in degrees C; NaN where the record has a gap.
        tmax: ``(P, D)`` float32 daily maximum in degrees C; NaN where the record has a gap.
        source: the file(s) read, for messages and provenance.
        found: ``(P,)`` bool, False for points without a cell with data within reach (their
            series are all NaN); None when every point has data.
        distance_m: ``(P,)`` float64 distance from each point to the centre of the cell used
            (NaN where not found); None for station records.
    """

    dates: np.ndarray
    tmin: np.ndarray
    tmax: np.ndarray
    source: str
    found: Optional[np.ndarray] = None
    distance_m: Optional[np.ndarray] = None


def describe_days(days: np.ndarray, limit: int = 4) -> str:
    """Runs of consecutive days as text, e.g. ``2021-01-02 to 2021-01-05, 2021-03-01``."""
    days = np.unique(np.asarray(days, dtype="datetime64[D]"))
    if days.size == 0:
        return "no days"
    breaks = np.flatnonzero(np.diff(days) != np.timedelta64(1, "D")) + 1
    runs = np.split(days, breaks)
    parts = [f"{r[0]} to {r[-1]}" if r.size > 1 else str(r[0]) for r in runs[:limit]]
    if len(runs) > limit:
        parts.append(f"and {len(runs) - limit} more periods")
    return f"{', '.join(parts)} ({days.size} days)"


def check_coverage(dates: np.ndarray, start, end, source: str, absent: np.ndarray = ()) -> np.ndarray:
    """The requested days ``start..end``; raises naming the days the record lacks (``absent``:
    days its calendar cannot hold, which are gaps rather than days not covered)."""
    want = np.arange(np.datetime64(start, "D"), np.datetime64(end, "D") + 1)
    dates = np.concatenate([dates[~np.isnat(dates)], np.asarray(absent, dtype="datetime64[D]")])
    if want.size == 0:
        raise WeatherError(f"empty date range {start} to {end} asked of {source}")
    missing = np.setdiff1d(want, dates)
    if missing.size == want.size and dates.size == 0:
        raise WeatherError(f"{source} holds no dates; use a weather file covering {want[0]} to {want[-1]}")
    if missing.size and dates.min() <= want[0] and want[-1] <= dates.max():
        raise WeatherError(
            f"{source} runs {dates.min()} to {dates.max()} but lacks {describe_days(missing)} of the "
            f"{want[0]} to {want[-1]} needed; add those days (empty temperatures of up to 3 days in a "
            "row are filled)"
        )
    if missing.size:
        raise WeatherError(
            f"{source} does not cover {describe_days(missing)} of the {want[0]} to {want[-1]} "
            f"needed (its record runs {dates.min()} to {dates.max()}); use a weather file "
            "covering the whole season"
        )
    return want


def _unit_key(units: str) -> str:
    key = re.sub(r"[\s_]+", "", units.strip().lower())
    return key.replace("degrees", "deg").replace("degree", "deg")


def to_celsius(values: np.ndarray, units: Optional[str], what: str) -> np.ndarray:
    """Convert ``values`` given in ``units`` to degrees C (in place where possible).

    Raises:
        WeatherError: units that are not a temperature.
    """
    seen = value_range(values)
    if not units:
        if seen is not None and KELVIN_WITHOUT_UNITS[0] <= seen[0] and seen[1] <= KELVIN_WITHOUT_UNITS[1]:
            warn_once(logger, "%s has no units attribute and its values run %s, which are Kelvin (no "
                      "place has such daily temperatures in degrees C); converted to degrees C. "
                      "Set its units attribute to 'K' to say so", what, describe_range(seen))
            values -= np.float32(273.15)
        else:
            warn_once(logger, "%s has no units attribute; reading it as degrees C", what)
            units = "none (read as degrees C)"
    else:
        key = _unit_key(units)
        if key in _KELVIN:
            values -= np.float32(273.15)
        elif key in _FAHRENHEIT:
            values -= np.float32(32.0)
            values *= np.float32(5.0 / 9.0)
        elif key not in _CELSIUS:
            raise WeatherError(
                f"{what} has units {units!r}, which is not a temperature ThermoCrop knows "
                "(Kelvin, Celsius or Fahrenheit); fix the file's units attribute"
            )
    check_plausible(values, what, units=units, raw=seen)
    return values


def value_range(values: np.ndarray) -> Optional[tuple[float, float]]:
    """Smallest and largest value that is not a gap (NaN), infinities included (so they are
    refused as implausible), or None when there is none."""
    given = values[~np.isnan(values)]
    return (float(given.min()), float(given.max())) if given.size else None


def describe_range(seen: tuple[float, float]) -> str:
    return f"{seen[0]:.1f} to {seen[1]:.1f}"


def check_plausible(values_c: np.ndarray, what: str, *, units: Optional[str] = None,
                    raw: Optional[tuple[float, float]] = None, where: Optional[str] = None) -> None:
    """Refuse daily temperatures (degrees C) outside what any place on Earth has had.

    Args:
        values_c: temperatures in degrees C (any shape; NaN are gaps).
        what: the variable or column, for the message.
        units: the units the values were read with, for the message.
        raw: the range of the values before conversion, for the message.
        where: a more precise place of the first implausible value (a CSV line), if known.

    Raises:
        WeatherError: naming the variable, the values seen and what to do.
    """
    seen = value_range(values_c)
    if seen is None or (PLAUSIBLE_CELSIUS[0] <= seen[0] and seen[1] <= PLAUSIBLE_CELSIUS[1]):
        return
    with np.errstate(invalid="ignore"):
        outside = int(((values_c < PLAUSIBLE_CELSIUS[0]) | (values_c > PLAUSIBLE_CELSIUS[1])).sum())
    finite = int(np.isfinite(values_c).sum())
    read = f" with units {units!r}" if units else ""
    before = f" (values in the file {describe_range(raw)})" if raw is not None and units else ""
    at = f" at {where}" if where else ""
    raise WeatherError(
        f"{what}{read} gives daily temperatures from {seen[0]:.1f} to {seen[1]:.1f} degrees C{before}{at}: "
        f"{outside} of its {finite} values lie outside the {PLAUSIBLE_CELSIUS[0]:g} .. {PLAUSIBLE_CELSIUS[1]:g} C "
        "any place has had. Fix the "
        "units attribute (K, degC or degF) or the values; a missing day must be left empty (or the "
        "file's fill value), not written as a number such as -999"
    )


def check_min_max(tmin: np.ndarray, tmax: np.ndarray, dates: np.ndarray, what_min: str, what_max: str,
                  swap_hint: str) -> None:
    """Check that the daily minimum is not above the maximum.

    Arrays share their shape with days on the first axis. Where the minimum is above the
    maximum on most days the two were swapped (refused); on a few days it is a flaw of the
    record (gridded products interpolate each variable apart), which is logged with the dates.

    Raises:
        WeatherError: the minimum is above the maximum on more than half of the days.
    """
    both = np.isfinite(tmin) & np.isfinite(tmax)
    if not both.any():
        return
    with np.errstate(invalid="ignore"):
        above = both & (tmin > tmax)
    share = above.sum() / both.sum()
    if share == 0:
        return
    days = np.asarray(dates)[above.reshape(above.shape[0], -1).any(axis=1)]
    i = np.unravel_index(np.argmax(above), above.shape)
    example = (f"e.g. on {dates[i[0]]} the minimum is {float(tmin[i]):.1f} and the maximum "
               f"{float(tmax[i]):.1f}")
    if share > 0.5:
        raise WeatherError(
            f"{what_min} is above {what_max} on {share:.0%} of the days ({example}): the minimum and "
            f"maximum look swapped. {swap_hint}"
        )
    warn_once(logger, "%s is above %s on %d days (%s; %s); these days are used as they are",
              what_min, what_max, days.size, describe_days(days), example)
