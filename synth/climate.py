"""Daily minimum and maximum temperature on an E-OBS-like 0.1 degree grid around a tile.

Climatology from the region's monthly normals, day-to-day weather as an AR(1) anomaly with the
measured monthly spread and lag-1 correlation, and a small spatial gradient across the grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .regions import Region

GRID_STEP = 0.1
"""E-OBS grid spacing in degrees; cell centres sit at odd multiples of 0.05."""


@dataclass
class WeatherGrid:
    """Daily temperatures on a regular latitude/longitude grid.

    Attributes:
        dates: (D,) datetime64[D] days.
        latitude: (Ny,) cell-centre latitudes, ascending.
        longitude: (Nx,) cell-centre longitudes, ascending.
        tmin: (D, Ny, Nx) float32 degrees C, already rounded to the 0.01 packing step; NaN
            on sea cells.
        tmax: (D, Ny, Nx) float32, same layout.
    """

    dates: np.ndarray
    latitude: np.ndarray
    longitude: np.ndarray
    tmin: np.ndarray
    tmax: np.ndarray

    def nearest_cell(self, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row and column of the nearest land cell of each point ((P,) arrays of degrees)."""
        land = ~np.isnan(self.tmin[0])
        rows, cols = np.nonzero(land)
        # Degrees of longitude shrink with latitude; compare distances in the local metric.
        kx = np.cos(np.deg2rad(np.mean(self.latitude)))
        dx = (self.longitude[cols][None, :] - np.asarray(lon)[:, None]) * kx
        dy = self.latitude[rows][None, :] - np.asarray(lat)[:, None]
        best = np.argmin(dx * dx + dy * dy, axis=1)
        return rows[best], cols[best]


def daily_normals(region: Region, dates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smooth daily climatology from the monthly normals.

    Linear interpolation between mid-month values, periodic over the year, plus the region's
    constant offset (recent warming and the year's anomaly).

    Args:
        region: the region.
        dates: (D,) datetime64[D].

    Returns:
        tmin, tmax: (D,) float64 degrees C.
    """
    doy = _day_of_year(dates)
    mid = np.array([15.5, 45.0, 74.5, 105.0, 135.5, 166.0, 196.5, 227.5, 258.0, 288.5, 319.0, 349.5])
    xp = np.concatenate([mid - 365.0, mid, mid + 365.0])

    def interp(values: tuple[float, ...]) -> np.ndarray:
        v = np.asarray(values, float)
        return np.interp(doy, xp, np.concatenate([v, v, v])) + region.offset

    return interp(region.tmin), interp(region.tmax)


def monthly_anomaly_sd(region: Region, dates: np.ndarray) -> np.ndarray:
    """(D,) standard deviation of daily anomalies for each day, smoothly varying by month."""
    doy = _day_of_year(dates)
    mid = np.array([15.5, 45.0, 74.5, 105.0, 135.5, 166.0, 196.5, 227.5, 258.0, 288.5, 319.0, 349.5])
    v = np.asarray(region.anomaly_sd, float)
    return np.interp(doy, np.concatenate([mid - 365, mid, mid + 365]), np.concatenate([v, v, v]))


def simulate_weather(
    region: Region,
    lon_range: tuple[float, float],
    lat_range: tuple[float, float],
    start: np.datetime64,
    end: np.datetime64,
    rng: np.random.Generator,
) -> WeatherGrid:
    """Simulate daily Tmin/Tmax on the 0.1 degree cells covering a lon/lat box.

    Args:
        region: the region (normals, anomaly statistics, coast side).
        lon_range: (west, east) of the area the grid must cover, degrees.
        lat_range: (south, north), degrees.
        start: first day.
        end: last day (inclusive).
        rng: random generator; the only source of randomness.

    Returns:
        The grid, sea cells NaN on the region's coast side.
    """
    lon = _cell_centres(*lon_range)
    lat = _cell_centres(*lat_range)
    dates = np.arange(start, end + np.timedelta64(1, "D"), dtype="datetime64[D]")
    n = len(dates)
    clim_min, clim_max = daily_normals(region, dates)
    sd = monthly_anomaly_sd(region, dates)

    # One synoptic anomaly for the whole (small) grid: weather systems are far larger than a
    # tile. AR(1) with the measured lag-1 correlation, scaled to the month's measured spread.
    anomaly = _ar1(rng, n, region.r1) * sd
    # The diurnal range wanders too (clear spells are wide, overcast ones narrow).
    dtr = _ar1(rng, n, 0.6) * 1.2

    # Spatial gradient: ~0.5 C cooler per degree northward plus fixed local terrain effects.
    lat_c = lat - lat.mean()
    local = rng.normal(0.0, 0.15, size=(len(lat), len(lon)))
    spatial = -0.5 * lat_c[:, None] + local

    tmin = clim_min[:, None, None] + (anomaly - dtr / 2)[:, None, None] + spatial[None]
    tmax = clim_max[:, None, None] + (anomaly + dtr / 2)[:, None, None] + spatial[None]
    tmax = np.maximum(tmax, tmin + 0.5)
    tmin = np.round(tmin, 2).astype(np.float32)
    tmax = np.round(tmax, 2).astype(np.float32)

    if region.sea_side is not None:
        sea = np.zeros((len(lat), len(lon)), bool)
        # The outermost column on the coast side is sea, as E-OBS leaves it empty.
        if region.sea_side == "east":
            sea[:, -1] = True
        elif region.sea_side == "west":
            sea[:, 0] = True
        tmin[:, sea] = np.nan
        tmax[:, sea] = np.nan
    return WeatherGrid(dates, lat, lon, tmin, tmax)


def paper_gdd(tmin: np.ndarray, tmax: np.ndarray) -> np.ndarray:
    """Daily degree days with the TPE formula, max((min(Tmax,30)+max(Tmin,0))/2, 0) (facts s.0)."""
    return np.maximum((np.minimum(tmax, 30.0) + np.maximum(tmin, 0.0)) / 2.0, 0.0)


def _ar1(rng: np.random.Generator, n: int, r: float) -> np.ndarray:
    """Unit-variance AR(1) series of length ``n`` with lag-1 correlation ``r``."""
    e = rng.standard_normal(n)
    out = np.empty(n)
    out[0] = e[0]
    k = np.sqrt(1.0 - r * r)
    for i in range(1, n):
        out[i] = r * out[i - 1] + k * e[i]
    return out


def _cell_centres(lo: float, hi: float) -> np.ndarray:
    first = np.floor((lo - 0.05) / GRID_STEP) * GRID_STEP + 0.05
    last = np.ceil((hi - 0.05) / GRID_STEP) * GRID_STEP + 0.05
    n = int(round((last - first) / GRID_STEP)) + 1
    return np.round(first + GRID_STEP * np.arange(n), 4)


def _day_of_year(dates: np.ndarray) -> np.ndarray:
    d = np.asarray(dates, dtype="datetime64[D]")
    return (d - d.astype("datetime64[Y]").astype("datetime64[D]")).astype(np.int64) + 1
