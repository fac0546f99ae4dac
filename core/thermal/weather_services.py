"""Daily minimum and maximum temperatures from weather services, kept as CF NetCDF files that
``core.thermal.weather.read_daily_temperature`` reads.

- ``open-meteo``: the Open-Meteo historical weather API (no key). The parcels' points are
  gathered into 0.1-degree cells; one request asks for a group of cells; the answers go into
  a regular 0.1-degree grid (cells not asked for are empty).
- ``cds:e-obs`` / ``cds:era5-land``: the Copernicus Climate Data Store through ``cdsapi``
  (the user's key from ``CDSAPI_URL`` / ``CDSAPI_KEY`` or cdsapi's own ``~/.cdsapirc``),
  E-OBS ensemble means or ERA5-Land daily statistics, cut to the parcels' area and season.

A fetched file is kept under the cache folder and used again by any later run whose cells
and days it covers; its path is what extraction records as the weather source. Only a complete,
valid answer is reused: an Open-Meteo answer with null days (its archive lags a few days behind)
is used for the run that fetched it and asked for again by the next one. ``refresh=True``
(``--refresh-weather``, or ``THERMOCROP_WEATHER_CACHE=off``) fetches again whatever is cached.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import re
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import WeatherError
from ..io.http_session import Deadline, deadline_in
from ..io.safe_read import extract_members
from ..progress import Progress
from ..redact import install_redaction, redact

log = logging.getLogger(__name__)

OPEN_METEO_URL = "https://archive-api.open-meteo.com/v1/archive"
"""Open-Meteo's historical weather API (``THERMOCROP_OPEN_METEO_URL`` names a mirror instead)."""
CELL_DEGREES = 0.1
CELLS_PER_REQUEST = 50
"""Cells asked of Open-Meteo in one request (its URLs stay short and its answers small)."""

MAX_ANSWER_OFFSET_DEG = 0.5
"""The farthest (degrees of latitude or longitude) an Open-Meteo answer's grid point may lie from
the cell centre asked; its grids are 0.1 to 0.25 degrees."""

SERVICES = ("open-meteo", "cds:e-obs", "cds:era5-land")
EOBS_DATASET = "insitu-gridded-observations-europe"
EOBS_VERSION = "31_0e"
ERA5_LAND_DATASET = "derived-era5-land-daily-statistics"

PLAUSIBLE_C = (-90.0, 60.0)
"""Daily temperatures (degrees C) a service may answer; anything else means wrong units or a
broken answer, which is refused and never cached."""


def cache_disabled() -> bool:
    """True when ``THERMOCROP_WEATHER_CACHE`` is ``off`` (or ``0``, ``no``): every run asks the
    service again."""
    return os.environ.get("THERMOCROP_WEATHER_CACHE", "").strip().lower() in ("off", "0", "no", "false")


def is_weather_service(spec: Any) -> bool:
    """True when ``spec`` names a service (``open-meteo``, ``cds:e-obs``, ``cds:era5-land``)
    rather than a file."""
    return isinstance(spec, str) and (spec in SERVICES or spec.startswith(("open-meteo:", "cds:")))


def weather_cache_dir(cache_dir=None) -> Path:
    from ..scenes.remote import default_cache_dir

    return (Path(cache_dir) if cache_dir else default_cache_dir()) / "weather"


def cells_of(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """The distinct 0.1-degree cells ``(N, 2)`` int (row = floor(lat / 0.1), col = floor(lon / 0.1))
    that hold the finite points."""
    lon, lat = np.asarray(lon, dtype=np.float64), np.asarray(lat, dtype=np.float64)
    ok = np.isfinite(lon) & np.isfinite(lat)
    rows = np.floor(lat[ok] / CELL_DEGREES + 1e-9).astype(np.int64)
    cols = np.floor(lon[ok] / CELL_DEGREES + 1e-9).astype(np.int64)
    if rows.size == 0:
        raise WeatherError("No parcel has a usable position to fetch temperatures for.")
    return np.unique(np.stack([rows, cols], axis=1), axis=0)


def _centre(index: np.ndarray) -> np.ndarray:
    return np.round((index + 0.5) * CELL_DEGREES, 4)


def _write_grid(path: Path, days: np.ndarray, cells: np.ndarray, tmin: np.ndarray, tmax: np.ndarray,
                attrs: dict[str, Any], units: str = "degC") -> Path:
    """Write ``tmin``/``tmax`` ``(D, N)`` of the cells as a CF NetCDF on a regular 0.1-degree
    grid spanning them (other cells empty), atomically."""
    import xarray as xr

    r0, c0 = cells.min(axis=0)
    r1, c1 = cells.max(axis=0)
    lat = _centre(np.arange(r0, r1 + 1))
    lon = _centre(np.arange(c0, c1 + 1))
    grids = []
    for values in (tmin, tmax):
        grid = np.full((days.size, lat.size, lon.size), np.nan, dtype=np.float32)
        grid[:, cells[:, 0] - r0, cells[:, 1] - c0] = values
        grids.append(grid)
    time = days.astype("datetime64[ns]")
    ds = xr.Dataset(
        {
            "tmin": (("time", "lat", "lon"), grids[0], {"standard_name": "air_temperature", "units": units,
                                                        "cell_methods": "time: minimum",
                                                        "long_name": "daily minimum air temperature at 2 m"}),
            "tmax": (("time", "lat", "lon"), grids[1], {"standard_name": "air_temperature", "units": units,
                                                        "cell_methods": "time: maximum",
                                                        "long_name": "daily maximum air temperature at 2 m"}),
        },
        coords={
            "time": ("time", time, {"standard_name": "time", "axis": "T"}),
            "lat": ("lat", lat, {"standard_name": "latitude", "units": "degrees_north", "axis": "Y"}),
            "lon": ("lon", lon, {"standard_name": "longitude", "units": "degrees_east", "axis": "X"}),
        },
        attrs={"Conventions": "CF-1.8", **attrs,
               "thermocrop_cells": json.dumps(cells.tolist()),
               "thermocrop_period": f"{days[0]}/{days[-1]}"},
    )
    encoding = {v: {"zlib": True, "complevel": 4, "_FillValue": np.float32(np.nan)} for v in ("tmin", "tmax")}
    encoding["time"] = {"units": "days since 1970-01-01", "calendar": "standard", "dtype": "int32"}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-", suffix=".nc")
    os.close(fd)
    try:
        ds.to_netcdf(tmp, encoding=encoding)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _covering_file(folder: Path, prefix: str, source: str, cells: np.ndarray, start: np.datetime64,
                   end: np.datetime64, complete_only: bool = False) -> Optional[Path]:
    """A cached file of the same source holding every cell and day asked for, if any;
    ``complete_only``: only a file marked complete (every value present) when written."""
    import netCDF4

    wanted = {tuple(c) for c in cells.tolist()}
    for path in sorted(folder.glob(f"{prefix}_*.nc")):
        try:
            with netCDF4.Dataset(path) as nc:
                if getattr(nc, "thermocrop_source", "") != source:
                    continue
                if complete_only and getattr(nc, "thermocrop_complete", "") != "yes":
                    continue
                first, last = (np.datetime64(v, "D") for v in nc.thermocrop_period.split("/"))
                have = {tuple(c) for c in json.loads(nc.thermocrop_cells)}
        except (OSError, AttributeError, ValueError):
            continue
        if first <= start and last >= end and wanted <= have:
            return path
    return None


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:12]


def fetch_open_meteo(
    lon: Sequence[float],
    lat: Sequence[float],
    start,
    end,
    *,
    cache_dir=None,
    url: Optional[str] = None,
    model: Optional[str] = None,
    cells_per_request: int = CELLS_PER_REQUEST,
    timeout: float = 60.0,
    deadline: Optional[float] = None,
    refresh: bool = False,
    progress: Optional[Progress] = None,
) -> Path:
    """Daily Tmin/Tmax of the points' 0.1-degree cells from Open-Meteo, as a cached NetCDF.

    Args:
        lon, lat: the points (e.g. parcels' inner points) in degrees.
        start, end: first and last day (inclusive).
        cache_dir: cache root (``weather/`` under it holds the files).
        url: the historical weather API (default ``$THERMOCROP_OPEN_METEO_URL`` or Open-Meteo's).
        model: Open-Meteo ``models`` parameter (e.g. ``era5_land``); its default otherwise.
        cells_per_request: cells asked for in one request.
        timeout: seconds per request; 429 and 5xx answers and dropped connections are retried
            with backoff.
        deadline: seconds the whole fetch may take (default ``THERMOCROP_NETWORK_DEADLINE`` or 600).
        refresh: ask the service even when a cached file covers the cells and days.
        progress: progress and cancellation (checked between requests).

    Returns:
        The NetCDF file (reused when a complete cached one covers the cells and days). An
        answer with null days is written and returned for this run, but not reused later.

    Raises:
        WeatherError: the service refuses the request or answers something else than asked
            (other units, other days, temperatures out of -90..60 C).
    """
    from ..io.http_session import session_with_retries

    install_redaction()
    progress = progress or Progress()
    url = url or os.environ.get("THERMOCROP_OPEN_METEO_URL") or OPEN_METEO_URL
    start, end = np.datetime64(start, "D"), np.datetime64(end, "D")
    if end < start:
        raise WeatherError(f"The weather period ends ({end}) before it starts ({start}).")
    cells = cells_of(np.asarray(lon), np.asarray(lat))
    source = f"open-meteo {url} {model or 'default model'}"
    folder = weather_cache_dir(cache_dir)
    refresh = refresh or cache_disabled()
    cached = None if refresh else _covering_file(folder, "open-meteo", source, cells, start, end, complete_only=True)
    if cached is not None:
        log.info("Temperatures of %d cells from %s to %s taken from the cache %s (a complete Open-Meteo answer; "
                 "--refresh-weather or THERMOCROP_WEATHER_CACHE=off asks again)", len(cells), start, end, cached)
        progress(1.0)
        return cached
    days = np.arange(start, end + 1)
    tmin = np.full((days.size, len(cells)), np.nan, dtype=np.float32)
    tmax = np.full((days.size, len(cells)), np.nan, dtype=np.float32)
    session = session_with_retries(deadline=Deadline(deadline, f"fetching temperatures from {url}"))
    groups = [np.arange(i, min(i + cells_per_request, len(cells))) for i in range(0, len(cells), cells_per_request)]
    for g, group in enumerate(groups):
        centres = _centre(cells[group].astype(np.float64))
        params = {
            "latitude": ",".join(f"{v:.4f}" for v in centres[:, 0]),
            "longitude": ",".join(f"{v:.4f}" for v in centres[:, 1]),
            "start_date": str(start), "end_date": str(end),
            "daily": "temperature_2m_min,temperature_2m_max", "timezone": "GMT",
        }
        if model:
            params["models"] = model
        try:
            response = session.get(url, params=params, timeout=timeout)
        except Exception as exc:  # requests' connection errors after the retries
            late = deadline_in(exc)
            if late is not None:
                raise WeatherError(str(late)) from None
            raise WeatherError(f"Open-Meteo at {url} cannot be reached: {redact(str(exc))}") from None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code != 200 or answer is None:
            reason = answer.get("reason") if isinstance(answer, dict) else response.text[:200]
            raise WeatherError(f"Open-Meteo at {url} refused the request (HTTP {response.status_code}): {reason}")
        answers = answer if isinstance(answer, list) else [answer]
        if len(answers) != len(group):
            raise WeatherError(f"Open-Meteo answered {len(answers)} locations for the {len(group)} asked.")
        for j, (k, one) in enumerate(zip(group, answers)):
            if not isinstance(one, dict):
                raise WeatherError(f"Open-Meteo at {url} answered {str(one)[:100]!r} for a location; nothing "
                                   "was cached.")
            _check_answer_place(one, centres[j], url)
            daily = one.get("daily") or {}
            try:
                got = np.array(daily["time"], dtype="datetime64[D]")
                low = np.array([np.nan if v is None else v for v in daily["temperature_2m_min"]], dtype=np.float32)
                high = np.array([np.nan if v is None else v for v in daily["temperature_2m_max"]], dtype=np.float32)
            except (KeyError, TypeError, ValueError) as exc:
                raise WeatherError(f"Open-Meteo's answer lacks daily temperatures ({exc}).") from None
            for name in ("temperature_2m_min", "temperature_2m_max"):
                units = (one.get("daily_units") or {}).get(name, "°C")
                if units not in ("°C", "degC", "C"):
                    raise WeatherError(f"Open-Meteo at {url} answered {name} in {units!r}, not degrees Celsius; "
                                       "nothing was cached.")
            if not np.array_equal(got, days):
                raise WeatherError(f"Open-Meteo answered days {got[:1]}..{got[-1:]} instead of {start}..{end}.")
            if low.shape != got.shape or high.shape != got.shape:
                raise WeatherError(f"Open-Meteo at {url} answered {low.size} / {high.size} temperatures for "
                                   f"{got.size} days; nothing was cached.")
            values = np.concatenate([low, high])
            bad = values[np.isfinite(values) & ((values < PLAUSIBLE_C[0]) | (values > PLAUSIBLE_C[1]))]
            if bad.size:
                raise WeatherError(f"Open-Meteo at {url} answered temperatures such as {bad[0]:g}, outside "
                                   f"{PLAUSIBLE_C[0]:g}..{PLAUSIBLE_C[1]:g} degrees C (other units or a broken "
                                   "answer); nothing was cached.")
            tmin[:, k], tmax[:, k] = low, high
        progress((g + 1) / len(groups))
    missing = ~(np.isfinite(tmin) & np.isfinite(tmax)).all(axis=1)
    complete = not missing.any()
    name = f"open-meteo_{start}_{end}_{_key(source, cells.tolist())}.nc"
    path = _write_grid(folder / name, days, cells, tmin, tmax, {
        "title": "Daily minimum and maximum temperature from the Open-Meteo historical weather API",
        "source": f"Open-Meteo historical weather API ({url}), model {model or 'default'}",
        "history": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%dT%H:%M:%SZ} fetched by ThermoCrop, "
                   f"{len(groups)} requests of up to {cells_per_request} cells",
        "thermocrop_source": source,
        "thermocrop_complete": "yes" if complete else "no",
    })
    if complete:
        log.info("Temperatures of %d cells from %s to %s fetched from Open-Meteo and cached in %s (every day "
                 "present; later runs of these cells and days reuse it)", len(cells), start, end, path)
    else:
        log.warning("Open-Meteo answered no temperature for %d of %d days (%s ... %s; its archive lags a few "
                    "days behind): %s is used for this run, gaps filled as for any weather file, and will not "
                    "be reused: the next run asks Open-Meteo again.", int(missing.sum()), days.size,
                    days[missing][0], days[missing][-1], path)
    return path


# --------------------------------------------------------------------------------------------
# Copernicus Climate Data Store


def _check_answer_place(one: dict, centre: np.ndarray, url: str) -> None:
    """Refuse an answer given for a place farther than :data:`MAX_ANSWER_OFFSET_DEG` from the
    cell centre asked (Open-Meteo answers for its nearest grid point, a few km away)."""
    lat, lon = one.get("latitude"), one.get("longitude")
    if lat is None and lon is None:
        return
    try:
        off = max(abs(float(lat) - centre[0]), abs((float(lon) - centre[1] + 180.0) % 360.0 - 180.0))
    except (TypeError, ValueError):
        off = float("nan")
    if not off <= MAX_ANSWER_OFFSET_DEG:
        raise WeatherError(f"Open-Meteo at {url} answered for latitude {lat!r}, longitude {lon!r} when asked for "
                           f"{centre[0]:.4f}, {centre[1]:.4f}: another place; nothing was cached.")


def cds_client() -> Any:
    """A ``cdsapi.Client`` with the user's key (``CDSAPI_URL`` / ``CDSAPI_KEY``, else cdsapi's
    ``~/.cdsapirc``); never a key from the project's files."""
    import cdsapi

    try:
        return cdsapi.Client(quiet=True, progress=False)
    except Exception as exc:  # cdsapi raises a bare Exception when no key is configured
        raise WeatherError(
            f"The Copernicus Climate Data Store needs your API key ({exc}): set CDSAPI_URL="
            "https://cds.climate.copernicus.eu/api and CDSAPI_KEY=<your key> in the environment "
            "(see https://cds.climate.copernicus.eu/how-to-api).") from None


def _unpack(download: Path, into: Path) -> list[Path]:
    """The NetCDF files of a CDS download (a NetCDF, or a zip of them)."""
    if zipfile.is_zipfile(download):
        return extract_members(download, into, suffix=".nc", what="CDS download", error=WeatherError)
    return [download]


def _point_values(paths: list[Path], var_names: Sequence[str], cells: np.ndarray, days: np.ndarray
                  ) -> tuple[np.ndarray, str]:
    """Values ``(D, N)`` of the first variable found, at the cells' centres (nearest grid cell)."""
    import xarray as xr

    for path in paths:
        with xr.open_dataset(path) as ds:
            name = next((n for n in var_names if n in ds.data_vars), None)
            if name is None:
                continue
            var = ds[name]
            lat_name = next(n for n in ("latitude", "lat") if n in var.coords)
            lon_name = next(n for n in ("longitude", "lon") if n in var.coords)
            time_name = next(n for n in ("time", "valid_time") if n in var.coords)
            centres = _centre(cells.astype(np.float64))
            picked = var.sel({lat_name: xr.DataArray(centres[:, 0], dims="cell"),
                              lon_name: xr.DataArray(centres[:, 1], dims="cell")}, method="nearest")
            times = picked[time_name].values.astype("datetime64[D]")
            out = np.full((days.size, len(cells)), np.nan, dtype=np.float32)
            pos = {d: i for i, d in enumerate(times)}
            for i, d in enumerate(days):
                if d in pos:
                    out[i] = picked.isel({time_name: pos[d]}).values
            return out, str(var.attrs.get("units", ""))
    raise WeatherError(f"The CDS download holds none of the variables {', '.join(var_names)}.")


def fetch_cds(
    dataset: str,
    lon: Sequence[float],
    lat: Sequence[float],
    start,
    end,
    *,
    cache_dir=None,
    client: Any = None,
    version: str = EOBS_VERSION,
    refresh: bool = False,
    progress: Optional[Progress] = None,
) -> Path:
    """Daily Tmin/Tmax of the points' 0.1-degree cells from the Copernicus CDS, as a cached NetCDF.

    Args:
        dataset: ``"e-obs"`` (E-OBS ensemble mean, 0.1 degree; the CDS delivers whole-period,
            Europe-wide files, several GB, which are cut here and not kept) or ``"era5-land"``
            (ERA5-Land daily minimum / maximum of 2 m temperature, asked for the parcels' area
            only, one request per year and statistic).
        lon, lat, start, end, cache_dir, progress: as :func:`fetch_open_meteo`.
        client: a ``cdsapi.Client`` (default :func:`cds_client`).
        version: E-OBS version (``31_0e``).
        refresh: ask the service even when a cached file covers the cells and days.

    Returns:
        The NetCDF file (reused when a cached one covers the cells and days).
    """
    progress = progress or Progress()
    if dataset not in ("e-obs", "era5-land"):
        raise WeatherError(f"Unknown CDS dataset {dataset!r}: use cds:e-obs or cds:era5-land.")
    start, end = np.datetime64(start, "D"), np.datetime64(end, "D")
    cells = cells_of(np.asarray(lon), np.asarray(lat))
    source = f"cds {dataset} {version if dataset == 'e-obs' else ''}".strip()
    folder = weather_cache_dir(cache_dir)
    install_redaction()
    refresh = refresh or cache_disabled()
    cached = None if refresh else _covering_file(folder, f"cds-{dataset}", source, cells, start, end)
    if cached is not None:
        log.info("Temperatures of %d cells from %s to %s taken from the cache %s (Copernicus CDS %s; "
                 "--refresh-weather or THERMOCROP_WEATHER_CACHE=off asks again)", len(cells), start, end, cached,
                 dataset)
        progress(1.0)
        return cached
    client = client or cds_client()
    days = np.arange(start, end + 1)
    centres = _centre(cells.astype(np.float64))
    north, south = float(centres[:, 0].max() + 0.2), float(centres[:, 0].min() - 0.2)
    west, east = float(centres[:, 1].min() - 0.2), float(centres[:, 1].max() + 0.2)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".cds-") as work:
        work = Path(work)
        if dataset == "e-obs":
            request = {"product_type": "ensemble_mean", "variable": ["minimum_temperature", "maximum_temperature"],
                       "grid_resolution": "0_1deg", "period": "full_period", "version": [version]}
            target = work / "e-obs.zip"
            _retrieve(client, EOBS_DATASET, request, target)
            files = _unpack(target, work)
            progress(0.8)
            tmin, units = _point_values(files, ("tn",), cells, days)
            tmax, _ = _point_values(files, ("tx",), cells, days)
            requests = [request]
        else:
            parts: dict[str, list[tuple[np.ndarray, str]]] = {"daily_minimum": [], "daily_maximum": []}
            requests = []
            years = range(int(str(start)[:4]), int(str(end)[:4]) + 1)
            steps = len(years) * 2
            for y, year in enumerate(years):
                first = max(start, np.datetime64(f"{year}-01-01"))
                last = min(end, np.datetime64(f"{year}-12-31"))
                span = np.arange(first, last + 1)
                months = sorted({str(d)[5:7] for d in span})
                for s, statistic in enumerate(parts):
                    request = {"variable": ["2m_temperature"], "year": str(year), "month": months,
                               "day": [f"{d:02d}" for d in range(1, 32)], "daily_statistic": statistic,
                               "time_zone": "utc+00:00", "frequency": "1_hourly",
                               "area": [round(north, 2), round(west, 2), round(south, 2), round(east, 2)]}
                    target = work / f"era5-land_{year}_{statistic}.download"
                    _retrieve(client, ERA5_LAND_DATASET, request, target)
                    parts[statistic].append(_point_values(_unpack(target, work / f"{year}{statistic}"),
                                                          ("t2m", "2m_temperature"), cells, days))
                    requests.append(request)
                    progress((y * 2 + s + 1) / steps * 0.9)
            tmin = np.fmax.reduce([v for v, _ in parts["daily_minimum"]])
            tmax = np.fmax.reduce([v for v, _ in parts["daily_maximum"]])
            units = parts["daily_minimum"][0][1]
    name = f"cds-{dataset}_{start}_{end}_{_key(source, cells.tolist())}.nc"
    path = _write_grid(folder / name, days, cells, tmin, tmax, {
        "title": f"Daily minimum and maximum temperature from the Copernicus Climate Data Store ({dataset})",
        "source": f"Copernicus Climate Data Store, {EOBS_DATASET if dataset == 'e-obs' else ERA5_LAND_DATASET}",
        "history": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%dT%H:%M:%SZ} fetched by ThermoCrop: "
                   + json.dumps(requests),
        "thermocrop_source": source,
    }, units=units or "degC")
    progress(1.0)
    log.info("Temperatures of %d cells from %s to %s fetched from the Copernicus CDS (%s) and cached in %s",
             len(cells), start, end, dataset, path)
    return path


def _service_reason(exc: BaseException) -> str:
    """What the Climate Data Store itself said about a failure: the ``title`` / ``detail`` /
    ``traceback`` of its JSON answer, else the exception's text without the HTTP status line."""
    response = getattr(exc, "response", None)
    if response is not None:
        try:
            data = response.json()
        except Exception:  # not JSON: the text below
            data = None
        if isinstance(data, dict):
            parts = [str(data[k]).strip() for k in ("title", "detail", "traceback") if data.get(k)]
            if parts:
                return " ".join(parts)
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    kept = [line for line in lines if not re.match(r"^\d{3} (Client|Server) Error", line)]
    return " ".join(kept or lines) or type(exc).__name__


def _retrieve(client: Any, name: str, request: dict, target: Path) -> None:
    try:
        client.retrieve(name, request, str(target))
    except Exception as exc:  # cdsapi / requests / the service's own errors
        raise WeatherError(f"The Copernicus Climate Data Store could not deliver {name}; it says: "
                           f"{redact(_service_reason(exc))[:1000]}") from None


def fetch_weather(spec: str, lon: Sequence[float], lat: Sequence[float], start, end, *, cache_dir=None,
                  progress: Optional[Progress] = None, **options: Any) -> Path:
    """Fetch daily temperatures from the service named by ``spec`` (see :data:`SERVICES`).

    ``open-meteo:<model>`` asks Open-Meteo for a given model (e.g. ``open-meteo:era5_land``).
    """
    if spec == "open-meteo" or spec.startswith("open-meteo:"):
        model = spec.partition(":")[2] or None
        return fetch_open_meteo(lon, lat, start, end, cache_dir=cache_dir, model=model, progress=progress, **options)
    if spec.startswith("cds:"):
        return fetch_cds(spec[4:], lon, lat, start, end, cache_dir=cache_dir, progress=progress, **options)
    raise WeatherError(f"Unknown weather service {spec!r}: use {', '.join(SERVICES)} or a weather file.")


def fetch_for_parcels(spec: str, geometry: Any, dates: Sequence, season_start: Any = None, *, cache_dir=None,
                      progress: Optional[Progress] = None, **options: Any) -> Path:
    """Fetch the temperatures GDD at ``dates`` need for parcels (their inner points), from the
    season start to the last date."""
    from .gdd import SeasonStart, season_bounds

    if season_start is None:
        season_start = SeasonStart()
    elif isinstance(season_start, str):
        season_start = SeasonStart.parse(season_start)
    start, end = season_bounds(np.asarray(dates, dtype="datetime64[D]"), season_start)
    usable = geometry[geometry.notna()]
    points = usable.representative_point().to_crs("EPSG:4326")
    return fetch_weather(spec, points.x.to_numpy(), points.y.to_numpy(), start, end, cache_dir=cache_dir,
                         progress=progress, **options)
