"""Daily minimum/maximum temperature per parcel, read from weather files.

This version reads CSV station records (`date,tmin,tmax`, one series for every parcel).
"""
from __future__ import annotations

import csv
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .errors import WeatherError

logger = logging.getLogger(__name__)


@dataclass
class DailyTemperature:
    """Daily temperatures: dates (D,) datetime64[D]; tmin, tmax (P, D) float32 in deg C."""

    dates: np.ndarray
    tmin: np.ndarray
    tmax: np.ndarray
    source: str


def _read_station_csv(path: Path, n_points: int, start, end) -> DailyTemperature:
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or not {"date", "tmin", "tmax"} <= set(rows[0]):
        raise WeatherError(f"{path}: a station CSV needs the columns date,tmin,tmax")
    dates = np.array([r["date"] for r in rows], dtype="datetime64[D]")
    tmin = np.array([float(r["tmin"] or "nan") for r in rows], dtype=np.float32)
    tmax = np.array([float(r["tmax"] or "nan") for r in rows], dtype=np.float32)
    want = np.arange(np.datetime64(start, "D"), np.datetime64(end, "D") + 1)
    missing = np.setdiff1d(want, dates)
    if missing.size:
        raise WeatherError(
            f"{path} does not cover {missing.size} requested days ({missing[0]} to "
            f"{missing[-1]}); use a record covering {want[0]} to {want[-1]}"
        )
    keep = (dates >= want[0]) & (dates <= want[-1])
    order = np.argsort(dates[keep])
    return DailyTemperature(
        dates[keep][order],
        np.repeat(tmin[keep][order][None, :], n_points, axis=0),
        np.repeat(tmax[keep][order][None, :], n_points, axis=0),
        str(path),
    )


def read_daily_temperature(
    path, points_x: Sequence[float], points_y: Sequence[float], crs, start, end, *,
    tmin_var=None, tmax_var=None, tmax_path=None, max_distance_m: float = 25_000,
    parcel_ids=None,
) -> DailyTemperature:
    """Read daily temperatures at points for start..end (inclusive).

    Returns:
        DailyTemperature with tmin/tmax of shape (P, D), P = len(points_x).
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return _read_station_csv(path, len(points_x), start, end)
    raise WeatherError(
        f"{path}: only CSV station files (date,tmin,tmax) can be read in this version; "
        "convert the NetCDF to a station CSV"
    )
