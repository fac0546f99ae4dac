"""Station CSVs: one daily minimum/maximum series (degrees C) for every parcel, ``date,tmin,tmax``
or other column names given by the caller."""
from __future__ import annotations

import csv
import logging
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import WeatherError
from .daily_values import (
    KELVIN_WITHOUT_UNITS,
    PLAUSIBLE_CELSIUS,
    DailyTemperature,
    check_coverage,
    check_min_max,
    check_plausible,
    describe_range,
    value_range,
    warn_once,
)

logger = logging.getLogger(__name__)

_DAY_TEXT = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?")


def station_days(texts: Sequence[str], path: Path, date_col: str) -> np.ndarray:
    """Dates of a station CSV as datetime64[D] (NaT where empty): ``YYYY-MM-DD`` or an ISO date-time
    such as ``2018-01-01T00:00+01:00``, whose day is the one written (time and offset dropped)."""
    out = np.full(len(texts), np.datetime64("NaT"), dtype="datetime64[D]")
    for i, text in enumerate(t.strip() for t in texts):
        day = _DAY_TEXT.fullmatch(text)
        try:
            if text:
                out[i] = np.datetime64(day.group(1) if day else "not a date", "D")
        except ValueError:
            raise WeatherError(f"{path}, line {i + 2}: {date_col} {text!r} is not a date; write dates "
                               "YYYY-MM-DD or YYYY-MM-DDThh:mm:ss") from None
    return out


def station_rows(path: Path) -> tuple[list[str], list[dict]]:
    """A station CSV's column names (stripped) and rows; refused by name unless UTF-8 text.

    Columns are separated by commas, or by semicolons where the header has no comma (a spreadsheet
    of a decimal-comma locale, whose decimal commas are then read as points: ``-2,5`` is -2.5).
    """
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:  # a spreadsheet's BOM is dropped
            header = handle.readline()
            handle.seek(0)
            semicolons = ";" in header and "," not in header
            reader = csv.DictReader(handle, delimiter=";" if semicolons else ",")
            rows = list(reader)
            if semicolons:
                rows = [{k: v.replace(",", ".") if isinstance(v, str) else v for k, v in r.items()} for r in rows]
            return [c.strip() for c in (reader.fieldnames or [])], rows
    except UnicodeDecodeError as exc:
        raise WeatherError(f"{path}: a station CSV must be UTF-8 text; byte {exc.start} is not "
                           f"({exc.reason}). Save it again as 'CSV UTF-8' from the spreadsheet program.") from None


def read_station_csv(path: Path, n_points: int, start, end, tmin_col: str, tmax_col: str,
                     date_col: str = "date") -> DailyTemperature:
    columns, rows = station_rows(path)
    need = {date_col, tmin_col, tmax_col}
    if not need <= set(columns):
        raise WeatherError(
            f"{path}: a station CSV needs the columns {', '.join(sorted(need))}; it has "
            f"{', '.join(columns) or 'none'}"
        )
    rows = [{k.strip(): v for k, v in r.items() if k is not None} for r in rows]

    def number(row: dict, col: str, line: int) -> float:
        text = (row.get(col) or "").strip()
        try:
            return float(text) if text else np.nan
        except ValueError:
            raise WeatherError(f"{path}, line {line}: {col} {text!r} is not a number") from None

    dates = station_days([r[date_col] or "" for r in rows], path, date_col)
    tmin = np.array([number(r, tmin_col, i + 2) for i, r in enumerate(rows)], dtype=np.float32)
    tmax = np.array([number(r, tmax_col, i + 2) for i, r in enumerate(rows)], dtype=np.float32)
    _check_duplicate_days(path, dates, tmin, tmax)
    seen = value_range(np.concatenate([tmin, tmax]))
    if seen is not None and KELVIN_WITHOUT_UNITS[0] <= seen[0] and seen[1] <= KELVIN_WITHOUT_UNITS[1]:
        warn_once(logger, "%s: columns %s and %s run %s, which are Kelvin (no place has such daily "
                  "temperatures in degrees C); converted to degrees C. Station CSVs should "
                  "give degrees C", path, tmin_col, tmax_col, describe_range(seen))
        tmin -= np.float32(273.15)
        tmax -= np.float32(273.15)
    for values, col in ((tmin, tmin_col), (tmax, tmax_col)):
        with np.errstate(invalid="ignore"):
            wrong = np.flatnonzero(~np.isnan(values) & ((values < PLAUSIBLE_CELSIUS[0])
                                                          | (values > PLAUSIBLE_CELSIUS[1])))
        if wrong.size:
            check_plausible(values, f"column {col!r} of {path}", units="degrees C (station CSVs are)",
                            where=f"line {wrong[0] + 2} ({dates[wrong[0]]}: {values[wrong[0]]:g})")
    check_min_max(tmin, tmax, dates, f"column {tmin_col!r} of {path}", f"column {tmax_col!r}",
                  f"Swap the column names in the file's header, or give --tmin-var {tmax_col} "
                  f"--tmax-var {tmin_col}.")
    want = check_coverage(dates, start, end, str(path))
    first = {d: i for i, d in reversed(list(enumerate(dates)))}
    pick = np.array([first[d] for d in want])
    # One series for every parcel: a broadcast view, not P copies.
    return DailyTemperature(
        want,
        np.broadcast_to(tmin[pick][None, :], (n_points, want.size)),
        np.broadcast_to(tmax[pick][None, :], (n_points, want.size)),
        str(path),
    )


def _check_duplicate_days(path: Path, dates: np.ndarray, tmin: np.ndarray, tmax: np.ndarray) -> None:
    """A day may appear twice in a station CSV only with the same values."""
    if dates.size == np.unique(dates).size:
        return
    order = np.argsort(dates, kind="stable")
    d, lo, hi = dates[order], tmin[order], tmax[order]
    same_day = np.flatnonzero(d[1:] == d[:-1])

    def differ(a, b):
        return ~((a == b) | (np.isnan(a) & np.isnan(b)))

    clash = same_day[differ(lo[same_day], lo[same_day + 1]) | differ(hi[same_day], hi[same_day + 1])]
    if clash.size == 0:
        logger.info("%s repeats %d days with the same values; each is used once", path, same_day.size)
        return
    days = np.unique(d[clash])
    lines = []
    for day in days[:3]:
        rows = np.flatnonzero(dates == day)
        lines.append(f"{day} on lines " + ", ".join(f"{r + 2} ({tmin[r]:g}/{tmax[r]:g})" for r in rows))
    more = f" and {days.size - 3} more days" if days.size > 3 else ""
    raise WeatherError(
        f"{path} gives different temperatures for the same day: {'; '.join(lines)}{more}. Keep one "
        "row per day (tmin/tmax shown in brackets)."
    )
