"""Daily minimum/maximum temperature per parcel, read from weather files.

Three sources are understood:

- E-OBS NetCDF (``tn`` / ``tx`` on a regular latitude/longitude grid, packed int16 with a
  scale factor and ``_FillValue`` -9999), both variables in one file or one file each;
- any CF NetCDF with daily minimum/maximum temperature, found by name or by
  ``standard_name = air_temperature`` with ``cell_methods`` ``time: minimum`` / ``maximum``,
  converted to degrees C from its ``units`` (Kelvin, Celsius, Fahrenheit);
- a UTF-8 station CSV ``date,tmin,tmax`` (degrees C), one series for every parcel; other column
  names (``Termin,T_Min_2m,T_Max_2m``) are given with ``date_var``, ``tmin_var``, ``tmax_var``.

A point takes the grid cell whose centre is nearest (great-circle distance), or where that
holds no data (sea, outside the grid) the nearest cell with data within ``max_distance_m``.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..errors import WeatherError
from .daily_values import DailyTemperature, check_coverage, check_min_max, describe_days, to_celsius, warn_once
from .station_csv import read_station_csv, station_days, station_rows

logger = logging.getLogger(__name__)

EARTH_RADIUS_M = 6_371_000.0

# Names tried in order when no variable name is given: E-OBS, CMIP/CORDEX, ERA5, plain.
TMIN_NAMES = ("tn", "tasmin", "mn2t", "tmin", "t2m_min", "tmn", "mint")
TMAX_NAMES = ("tx", "tasmax", "mx2t", "tmax", "t2m_max", "tmx", "maxt")

GREGORIAN_DAYS_CALENDARS = ("standard", "gregorian", "proleptic_gregorian", "julian", "noleap", "365_day",
                            "all_leap", "366_day")
"""CF calendars whose days are real days (``julian`` ones under other dates, 29 February aside,
see ``_days``)."""
NOLEAP_CALENDARS = ("noleap", "365_day")

_LATITUDE_UNITS = {"degrees_north", "degree_north", "degrees_n", "degree_n", "degreesn", "degreen"}
_LONGITUDE_UNITS = {"degrees_east", "degree_east", "degrees_e", "degree_e", "degreese", "degreee"}


# NetCDF


def _companion(path: Path, token_from: str, token_to: str) -> Optional[Path]:
    """The file named like ``path`` with the variable token swapped (E-OBS ``tn_`` -> ``tx_``)."""
    pattern = re.compile(rf"(?<![A-Za-z0-9]){re.escape(token_from)}(?![A-Za-z0-9])")
    if not pattern.search(path.name):
        return None
    other = path.with_name(pattern.sub(token_to, path.name, count=1))
    return other if other.exists() and other != path else None


def _find_variable(ds, explicit: Optional[str], names: Sequence[str], cell_method: str) -> Optional[str]:
    if explicit:
        return explicit if explicit in ds.data_vars else None
    for name in names:
        if name in ds.data_vars:
            return name
    for name, var in ds.data_vars.items():
        if (var.attrs.get("standard_name") == "air_temperature"
                and f"time: {cell_method}" in str(var.attrs.get("cell_methods", ""))):
            return str(name)
    return None


def _coordinate(ds, var, kind: str) -> Any:
    """The latitude or longitude coordinate of ``var`` (1-D or 2-D)."""
    names = {"latitude": ("latitude", "lat", "nav_lat"), "longitude": ("longitude", "lon", "nav_lon")}[kind]
    units = {"latitude": _LATITUDE_UNITS, "longitude": _LONGITUDE_UNITS}[kind]
    candidates = list(var.coords.values()) + [ds[n] for n in ds.variables if n not in var.coords]
    for c in candidates:
        if c.attrs.get("standard_name") == kind or str(c.attrs.get("units", "")).lower() in units:
            if set(c.dims) <= set(var.dims):
                return c
    for c in candidates:
        if str(c.name).lower() in names and set(c.dims) <= set(var.dims):
            return c
    raise WeatherError(
        f"variable {var.name!r} has no {kind} coordinate; ThermoCrop reads NetCDF grids with "
        "latitude/longitude coordinates (as E-OBS and CF files have)"
    )


def _time_coordinate(ds, var, source: str) -> Any:
    for dim in var.dims:
        c = ds[dim] if dim in ds.variables else None
        if c is not None and (str(dim).lower() in ("time", "t") or c.attrs.get("standard_name") == "time"
                              or c.attrs.get("axis") == "T" or np.issubdtype(c.dtype, np.datetime64)):
            return c
    raise WeatherError(f"{source}: variable {var.name!r} has no time dimension; daily records need one (a "
                       "file of daily temperatures whose time axis is named time, or has axis T)")


def _calendar(values: np.ndarray) -> str:
    """The CF calendar of decoded time values (``standard`` for numpy dates)."""
    if np.issubdtype(values.dtype, np.datetime64) or values.size == 0:
        return "standard"
    return str(getattr(values.flat[0], "calendar", "") or "standard").lower()


def _days(values: np.ndarray, source: str) -> np.ndarray:
    """Decoded time values -> datetime64[D], NaT for a day the real calendar lacks.

    Each day of a ``noleap`` (``365_day``) or ``all_leap`` (``366_day``) calendar is the day
    of the same date, bar 29 February: a ``noleap`` record lacks it in leap years (a one-day
    gap, filled like any other, see ``gdd``), an ``all_leap`` record holds it in other years
    too (NaT: that value is not used). A ``julian`` day is the Gregorian day it falls on
    (13 days later in this century). A ``360_day`` day is no real day: such files are refused.

    Raises:
        WeatherError: a calendar without that correspondence, or values that are not dates.
    """
    if np.issubdtype(values.dtype, np.datetime64):
        return values.astype("datetime64[D]")
    calendar = _calendar(values)
    if calendar not in GREGORIAN_DAYS_CALENDARS:
        raise WeatherError(
            f"{source} uses the {calendar!r} calendar, whose days are not those of the same dates in the "
            f"real (Gregorian) calendar. ThermoCrop reads the {', '.join(GREGORIAN_DAYS_CALENDARS)} calendars; "
            "give observed daily weather (E-OBS, a reanalysis) or convert the file to the standard "
            "calendar first (e.g. xarray's convert_calendar)"
        )
    out = np.empty(values.size, dtype="datetime64[D]")
    try:
        for i, v in enumerate(values.ravel()):
            if calendar == "julian":
                v = v.change_calendar("proleptic_gregorian")  # the same day, under its Gregorian date
            try:
                out[i] = np.datetime64(f"{v.year:04d}-{v.month:02d}-{v.day:02d}", "D")
            except ValueError:
                if (v.month, v.day) != (2, 29):
                    raise
                out[i] = np.datetime64("NaT")  # 29 February of an all_leap calendar's common year
    except (AttributeError, ValueError) as exc:
        raise WeatherError(
            f"{source}: cannot read its time axis as dates ({exc}); it needs CF units such as "
            "'days since 1950-01-01'"
        ) from None
    dropped = int(np.isnat(out).sum())
    if dropped:
        logger.info("%s (calendar %r): %d values of 29 February in common years are not used", source,
                    calendar, dropped)
    return out


def _absent_leap_days(dates: np.ndarray, calendar: str) -> np.ndarray:
    """The 29 Februaries a ``noleap`` record cannot hold, within the span of its days."""
    if calendar not in NOLEAP_CALENDARS:
        return np.zeros(0, dtype="datetime64[D]")
    days = dates[~np.isnat(dates)]
    if days.size == 0:
        return np.zeros(0, dtype="datetime64[D]")
    years = np.arange(int(str(days.min())[:4]), int(str(days.max())[:4]) + 1)
    leap = years[(years % 4 == 0) & ((years % 100 != 0) | (years % 400 == 0))]
    feb29 = np.array([f"{y:04d}-02-29" for y in leap], dtype="datetime64[D]")
    return feb29[(feb29 > days.min()) & (feb29 < days.max())]


def _span(inside: np.ndarray) -> slice:
    """The smallest slice holding every True of a 1-D mask (empty when there is none)."""
    idx = np.flatnonzero(inside)
    return slice(int(idx.min()), int(idx.max()) + 1) if idx.size else slice(0, 0)


def _unit_vectors(lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
    lat, lon = np.radians(lat_deg), np.radians(lon_deg)
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)


def _points_lonlat(points_x, points_y, crs) -> tuple[np.ndarray, np.ndarray]:
    from pyproj import CRS, Transformer

    x = np.asarray(points_x, dtype=np.float64)
    y = np.asarray(points_y, dtype=np.float64)
    source = CRS.from_user_input(crs.to_wkt() if hasattr(crs, "to_wkt") else crs)
    if source.is_geographic and source.equals(CRS.from_epsg(4326), ignore_axis_order=True):
        return x, y
    lon, lat = Transformer.from_crs(source, "EPSG:4326", always_xy=True).transform(x, y)
    return np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)


class _Grid:
    """One NetCDF variable on a latitude/longitude grid, opened lazily."""

    def __init__(self, ds, name: str, path: Path) -> None:
        self.var = ds[name]
        self.name, self.path = name, path
        self.what = f"variable {name!r} of {path}"
        self.lat = _coordinate(ds, self.var, "latitude")
        self.lon = _coordinate(ds, self.var, "longitude")
        self.time = _time_coordinate(ds, self.var, str(path))
        self.dates = _days(self.time.values, str(path))
        self.calendar = _calendar(self.time.values)
        self.absent = _absent_leap_days(self.dates, self.calendar)
        spatial = [d for d in self.var.dims if d != self.time.dims[0]]
        if len(spatial) != 2 or not set(self.lat.dims) | set(self.lon.dims) <= set(spatial):
            raise WeatherError(
                f"{self.what} has dimensions {self.var.dims}; expected time plus two grid dimensions"
            )
        # (time, row, col), rows and cols in the order of the latitude/longitude dims.
        if self.lat.ndim == 1 and self.lon.ndim == 1:
            self.dims = (self.time.dims[0], self.lat.dims[0], self.lon.dims[0])
        else:
            self.dims = (self.time.dims[0], *self.lat.dims)

    def cell_centres(self, rows: slice, cols: slice) -> tuple[np.ndarray, np.ndarray]:
        """Latitude and longitude of the cells of a window, each ``(rows, cols)``."""
        if self.lat.ndim == 1:
            lat = np.asarray(self.lat.values[rows], dtype=np.float64)
            lon = np.asarray(self.lon.values[cols], dtype=np.float64)
            return np.meshgrid(lat, lon, indexing="ij")
        return (np.asarray(self.lat.values[rows, cols], dtype=np.float64),
                np.asarray(self.lon.values[rows, cols], dtype=np.float64))

    def window(self, lon: np.ndarray, lat: np.ndarray, margin_m: float) -> tuple[slice, slice]:
        """Rows and columns of the cells within reach of the points' bounding box.

        Longitudes compare as angles, so grids on 0..360 degrees east and points on -180..180
        (or a box across the antimeridian) meet.
        """
        grid_lat = np.asarray(self.lat.values, dtype=np.float64)
        grid_lon = np.asarray(self.lon.values, dtype=np.float64)
        step = 0.0
        for c in (grid_lat, grid_lon):
            if c.ndim == 1 and c.size > 1:
                step = max(step, float(np.nanmax(np.abs(np.diff(c)))))
        pad_lat = margin_m / 111_000.0 + step
        cos = max(np.cos(np.radians(min(89.0, float(np.abs(lat).max()) + pad_lat))), 1e-3)
        pad_lon = margin_m / (111_000.0 * cos) + step
        # The points' longitudes relative to the first one, in -180..180.
        rel = np.mod(lon - lon[0] + 180.0, 360.0) - 180.0
        centre = lon[0] + (rel.min() + rel.max()) / 2.0
        half = (rel.max() - rel.min()) / 2.0 + pad_lon

        def near_lon(values: np.ndarray) -> np.ndarray:
            return np.abs(np.mod(values - centre + 180.0, 360.0) - 180.0) <= half

        def near_lat(values: np.ndarray) -> np.ndarray:
            return (values >= lat.min() - pad_lat) & (values <= lat.max() + pad_lat)

        if grid_lat.ndim == 1:
            return _span(near_lat(grid_lat)), _span(near_lon(grid_lon))
        near = near_lat(grid_lat) & near_lon(grid_lon)
        if not near.any():
            return slice(0, 0), slice(0, 0)
        return _span(near.any(axis=1)), _span(near.any(axis=0))

    def read(self, days: slice, rows: slice, cols: slice) -> np.ndarray:
        """Values ``(days, rows, cols)`` float32 in degrees C, NaN where missing."""
        part = self.var.transpose(*self.dims)[days, rows, cols]
        values = np.asarray(part.values, dtype=np.float32)
        return to_celsius(values, self.var.attrs.get("units"), self.what)


def _read_days(grid: "_Grid", want: np.ndarray, rows: slice, cols: slice) -> np.ndarray:
    """Values ``(days, rows, cols)`` of the days ``want`` (in that order), NaN on days the
    file's calendar lacks.

    Raises:
        WeatherError: the time axis repeats a day with other values (the days are named).
    """
    valid = np.flatnonzero(~np.isnat(grid.dates))
    order = valid[np.argsort(grid.dates[valid], kind="stable")]
    ordered = grid.dates[order]
    left, right = np.searchsorted(ordered, want, "left"), np.searchsorted(ordered, want, "right")
    present = right > left
    if not present.any():
        return np.full((want.size, rows.stop - rows.start, cols.stop - cols.start), np.nan, dtype=np.float32)
    first = order[np.minimum(left, order.size - 1)[present]]
    repeated = np.flatnonzero(right - left > 1)
    others = [order[left[i] + 1:right[i]] for i in repeated]
    simple = not repeated.size and present.all() and np.array_equal(first, np.arange(first[0], first[0] + first.size))
    if simple:
        return grid.read(slice(int(first[0]), int(first[0]) + first.size), rows, cols)
    # Unsorted, repeated or holed time axis: read the span and pick the days from it.
    every = np.concatenate([first, *others]) if others else first
    lo, hi = int(every.min()), int(every.max()) + 1
    block = grid.read(slice(lo, hi), rows, cols)
    if repeated.size:
        differ = [want[i] for i, again in zip(repeated, others)
                  if not all(np.array_equal(block[order[left[i]] - lo], block[j - lo], equal_nan=True) for j in again)]
        if differ:
            raise WeatherError(
                f"{grid.what} gives different values for the same day: {describe_days(np.array(differ))}. Keep "
                "one time step per day (e.g. remove the repeated ones with cdo or ncks)"
            )
        logger.info("%s repeats %s with the same values; each is used once", grid.what,
                    describe_days(want[repeated]))
    out = np.full((want.size, *block.shape[1:]), np.nan, dtype=np.float32)
    out[present] = block[first - lo]
    if not present.all():
        warn_once(logger, "%s: its %r calendar has no %s; filled from the days around it", grid.what, grid.calendar,
                  describe_days(want[~present]))
    return out


def _open(path: Path):
    import xarray as xr

    if not path.exists():
        raise WeatherError(f"weather file {path} does not exist")
    try:
        # Mask-and-scale decodes E-OBS's packed int16 (scale_factor, _FillValue -9999) to NaN.
        return xr.open_dataset(path, mask_and_scale=True, decode_times=True, use_cftime=None)
    except Exception as exc:  # netCDF4/h5py/scipy each raise their own errors
        said = str(exc)
        # xarray's words for a file no backend recognises name its backends and web pages.
        reason = ("it is not a NetCDF file" if "installed IO backends" in said
                  else said.splitlines()[0] if said else type(exc).__name__)
        raise WeatherError(f"cannot open {path} as NetCDF ({reason}); give an E-OBS or CF NetCDF "
                           "file, or a station CSV (date,tmin,tmax)") from None


def _temperature_grids(path: Path, tmax_path: Optional[Path], tmin_var: Optional[str],
                       tmax_var: Optional[str], opened: list) -> tuple["_Grid", "_Grid"]:
    """The daily minimum and maximum grids, from one file, two files, or an E-OBS ``tn_`` /
    ``tx_`` pair found from either; every dataset opened is appended to ``opened``."""
    ds_min = _open(path)
    opened.append(ds_min)
    name_min = _find_variable(ds_min, tmin_var, TMIN_NAMES, "minimum")
    ds_max, max_path = ds_min, path
    if tmax_path is not None:
        ds_max, max_path = _open(tmax_path), tmax_path
        opened.append(ds_max)
    name_max = _find_variable(ds_max, tmax_var, TMAX_NAMES, "maximum")
    if tmax_path is None and (name_min is None) != (name_max is None):
        # One E-OBS file of a pair given alone (tn_... or tx_...): open its companion.
        want_min = name_min is None
        swaps = zip(TMAX_NAMES, TMIN_NAMES) if want_min else zip(TMIN_NAMES, TMAX_NAMES)
        other = next((p for a, b in swaps if (p := _companion(path, a, b))), None)
        if other is not None:
            ds_other = _open(other)
            opened.append(ds_other)
            if want_min:
                ds_min, path = ds_other, other
                name_min = _find_variable(ds_min, tmin_var, TMIN_NAMES, "minimum")
            else:
                ds_max, max_path = ds_other, other
                name_max = _find_variable(ds_max, tmax_var, TMAX_NAMES, "maximum")
    for name, ds, explicit, kind, where in ((name_min, ds_min, tmin_var, "minimum", path),
                                            (name_max, ds_max, tmax_var, "maximum", max_path)):
        if name is None:
            wanted = f"variable {explicit!r}" if explicit else f"daily {kind} temperature variable"
            raise WeatherError(
                f"{where} has no {wanted} (variables: {', '.join(map(str, ds.data_vars)) or 'none'}); "
                "name it with --tmin-var / --tmax-var, or give the other E-OBS file (tn_/tx_) as well"
            )
    return _Grid(ds_min, name_min, path), _Grid(ds_max, name_max, max_path)


def _read_netcdf(path: Path, tmax_path: Optional[Path], points_x, points_y, crs, start, end,
                 tmin_var: Optional[str], tmax_var: Optional[str], max_distance_m: float,
                 parcel_ids: Optional[Sequence[str]], missing: str) -> DailyTemperature:
    lon, lat = _points_lonlat(points_x, points_y, crs)
    n = lon.size
    opened: list = []
    try:
        grids = _temperature_grids(path, tmax_path, tmin_var, tmax_var, opened)
        paths = [g.path for g in grids]
        source = str(paths[0]) if paths[0] == paths[1] else f"{paths[0]} + {paths[1]}"
        want = check_coverage(grids[0].dates, start, end, grids[0].what, grids[0].absent)
        check_coverage(grids[1].dates, start, end, grids[1].what, grids[1].absent)

        finite = np.isfinite(lon) & np.isfinite(lat)
        rows, cols = grids[0].window(lon[finite], lat[finite], max_distance_m) if finite.any() else (slice(0, 0),) * 2
        tmin, tmax = (_read_days(g, want, rows, cols) for g in grids)
        if tmin.shape != tmax.shape:
            raise WeatherError(f"{grids[0].what} and {grids[1].what} are on different grids; "
                               "give minimum and maximum temperatures on one grid")
        check_min_max(tmin, tmax, want, grids[0].what, grids[1].what,
                      f"Give {paths[1]} as the weather file and {paths[0]} as --tmax-file, or fix "
                      "the files." if paths[0] != paths[1] else
                      f"Name them the other way round (--tmin-var {grids[1].name} --tmax-var "
                      f"{grids[0].name}), or fix the file.")
        cell_lat, cell_lon = grids[0].cell_centres(rows, cols)
    finally:
        for ds in opened:
            ds.close()

    has_data = (np.isfinite(tmin).any(axis=0) & np.isfinite(tmax).any(axis=0)).ravel()
    found = np.zeros(n, dtype=bool)
    distance = np.full(n, np.nan)
    cell = np.zeros(n, dtype=np.int64)
    if has_data.any() and finite.any():
        from scipy.spatial import cKDTree

        centres = _unit_vectors(cell_lat.ravel()[has_data], cell_lon.ravel()[has_data])
        chord, k = cKDTree(centres).query(_unit_vectors(lat[finite], lon[finite]))
        metres = 2.0 * EARTH_RADIUS_M * np.arcsin(np.minimum(chord / 2.0, 1.0))
        distance[finite] = metres
        cell[finite] = np.flatnonzero(has_data)[k]
        found[finite] = metres <= max_distance_m

    if not found.all() and missing == "raise":
        lost = np.flatnonzero(~found)
        names = [str(parcel_ids[i]) if parcel_ids is not None else f"#{i}" for i in lost[:10]]
        more = f" and {lost.size - 10} more" if lost.size > 10 else ""
        nearest = np.nanmin(distance[lost]) if np.isfinite(distance[lost]).any() else np.nan
        detail = (f"the nearest is {nearest / 1000:.1f} km away" if np.isfinite(nearest)
                  else "none is near")
        raise WeatherError(
            f"{lost.size} of {n} parcels have no temperature cell with data within "
            f"{max_distance_m / 1000:g} km in {source} ({detail}): parcels {', '.join(names)}{more}. "
            "Check that the parcels' CRS is right and that the file covers them, or allow a "
            "larger distance"
        )
    flat = cell[found]
    r, c = np.unravel_index(flat, cell_lat.shape) if flat.size else (flat, flat)
    out_min = np.full((n, want.size), np.nan, dtype=np.float32)
    out_max = np.full((n, want.size), np.nan, dtype=np.float32)
    out_min[found] = tmin[:, r, c].T
    out_max[found] = tmax[:, r, c].T
    logger.debug("%s: %d points on %d cells, farthest %.0f m", source, int(found.sum()),
                 np.unique(flat).size, np.nanmax(distance[found]) if found.any() else np.nan)
    return DailyTemperature(want, out_min, out_max, source, None if found.all() else found, distance)


def record_period(path, *, tmin_var: Optional[str] = None, date_var: Optional[str] = None
                  ) -> tuple[np.datetime64, np.datetime64]:
    """First and last day of a weather file's record (read from its dates only).

    ``date_var`` names the date column of a station CSV (default ``date``).

    Raises:
        WeatherError: the file cannot be read or holds no dates.
    """
    path = Path(path)
    if not path.exists():
        raise WeatherError(f"weather file {path} does not exist")
    if path.suffix.lower() in (".csv", ".txt"):
        date_col = date_var or "date"
        rows = station_rows(path)[1]
        if rows and date_col not in rows[0]:
            raise WeatherError(f"{path}: a station CSV needs a {date_col} column written YYYY-MM-DD")
        days = station_days([r[date_col] or "" for r in rows], path, date_col)
    else:
        with _open(path) as ds:
            name = _find_variable(ds, tmin_var, TMIN_NAMES, "minimum") or _find_variable(
                ds, None, TMAX_NAMES, "maximum")
            if name is None:
                raise WeatherError(f"{path} has no daily temperature variable "
                                   f"(variables: {', '.join(map(str, ds.data_vars)) or 'none'})")
            days = _days(_time_coordinate(ds, ds[name], str(path)).values, str(path))
            days = days[~np.isnat(days)]
    if days.size == 0:
        raise WeatherError(f"{path} holds no dates")
    return days.min(), days.max()


@dataclass(frozen=True)
class WeatherVariables:
    """Where a weather file keeps its temperatures and how far a point may reach for them.

    Attributes:
        tmin_var, tmax_var: variable names (NetCDF) or column names (CSV) of the daily minimum
            and maximum; None: E-OBS ``tn``/``tx``, CF names or ``tmin``/``tmax``.
        tmax_path: a second NetCDF file holding the daily maximum.
        date_var: the date column of a station CSV (None: ``date``; dates or ISO date-times
            such as ``2018-01-01T00:00:00``); unused for NetCDF.
        max_distance_m: how far a point may be from the cell centre it takes its data from.
    """

    tmin_var: Optional[str] = None
    tmax_var: Optional[str] = None
    tmax_path: Any = None
    date_var: Optional[str] = None
    max_distance_m: float = 25_000

    @classmethod
    def from_dict(cls, options: Optional[Mapping[str, Any]]) -> "WeatherVariables":
        """From the flat weather options runs carry (``{"tmin_var": ..., "max_distance_m": ...}``).

        Raises:
            TypeError: a key that is none of the attributes.
        """
        return cls(**dict(options or {}))


def read_daily_temperature(
    path, points_x: Sequence[float], points_y: Sequence[float], crs, start, end, *,
    variables: Optional[WeatherVariables] = None, parcel_ids: Optional[Sequence[str]] = None,
    missing: str = "raise",
) -> DailyTemperature:
    """Read daily minimum and maximum temperature at points for ``start..end`` (inclusive).

    Only the asked days and the cells around the points are read from a NetCDF file.

    Args:
        path: E-OBS / CF NetCDF (``.nc``) or station CSV (``.csv``). An E-OBS ``tn_...nc`` file
            without ``tx`` finds its ``tx_...nc`` companion in the same folder by itself.
        points_x, points_y: point coordinates (e.g. parcel centroids), ``(P,)``, in ``crs``.
        crs: CRS of the points (anything pyproj understands: WKT, ``EPSG:32632``, a CRS object).
        start, end: first and last day needed.
        variables: variable names, a separate maximum file and the reach
            (:class:`WeatherVariables`; None for its defaults).
        parcel_ids: names of the points for error messages.
        missing: ``"raise"``: points without a cell within reach are an error naming them;
            ``"mask"``: their series are NaN and ``found`` marks them.

    Returns:
        DailyTemperature with ``tmin``/``tmax`` of shape ``(P, D)`` in degrees C,
        ``D = end - start + 1``.

    Raises:
        WeatherError: unreadable file, variables not found, days not covered, points out of reach.
    """
    v = variables or WeatherVariables()
    if missing not in ("raise", "mask"):
        raise ValueError(f"missing must be 'raise' or 'mask', not {missing!r}")
    path = Path(path)
    if path.suffix.lower() in (".csv", ".txt"):
        if not path.exists():
            raise WeatherError(f"weather file {path} does not exist")
        return read_station_csv(path, len(points_x), start, end, v.tmin_var or "tmin", v.tmax_var or "tmax",
                                 v.date_var or "date")
    return _read_netcdf(path, Path(v.tmax_path) if v.tmax_path else None, points_x, points_y, crs, start, end,
                        v.tmin_var, v.tmax_var, v.max_distance_m, parcel_ids, missing)
