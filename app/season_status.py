"""A classification as of a date: the scenes after it left out, and how far the season had come
(acquisitions and the parcels' growing degree days) said in the run's log."""

from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from ..core.classify import bundle_thermal_time
from ..core.errors import SceneError, WeatherError
from ..core.inseason import SeasonStatus, acquisition_dates, as_day, scenes_as_of
from ..core.parcels import load_parcels
from ..core.thermal.gdd import gdd_at_points
from .requests import ParcelsSpec

log = logging.getLogger(__name__)


def median_gdd(parcels: ParcelsSpec, weather: Any, dates: Sequence[Any], bundle: Any) -> np.ndarray:
    """The parcels' median GDD on each of ``dates`` with the model's thermal time, ``(len(dates),)``
    (NaN where no parcel has temperatures).

    Raises:
        WeatherError: the temperatures do not reach a date.
    """
    thermal = bundle_thermal_time(bundle)
    table = load_parcels(parcels.source, id_field=parcels.id_field, block_field=None)
    usable = np.array([g is not None and not g.is_empty for g in table.geometry])
    xs, ys = np.full(len(table), np.nan), np.full(len(table), np.nan)
    points = table.geometry[usable].representative_point()
    xs[usable], ys[usable] = points.x.to_numpy(), points.y.to_numpy()
    gdd = gdd_at_points(weather, xs, ys, table.geometry.crs, np.asarray(dates, dtype="datetime64[D]"),
                        season_start=thermal.season_start, t_base=thermal.t_base, t_cap=thermal.t_cap,
                        method=thermal.method, parcel_ids=list(table.parcel_ids))
    known = np.isfinite(gdd).any(axis=0)
    out = np.full(gdd.shape[1], np.nan)
    out[known] = np.nanmedian(gdd[:, known], axis=0)
    return out


def season_as_of(as_of: Any, parcels: ParcelsSpec, scenes: list, weather: Any, bundle: Any
                 ) -> tuple[list, SeasonStatus]:
    """The scenes acquired on or before ``as_of`` and the season's status on that date.

    The GDD are those to ``as_of`` itself; where the temperatures end before it, those to the
    last acquisition kept (the status says so).

    Raises:
        SceneError: no scene was acquired on or before ``as_of``.
    """
    day = as_day(as_of)
    given = acquisition_dates(scenes)
    used = scenes_as_of(scenes, day)
    if not used:
        raise SceneError(f"No scene was acquired on or before {day} (the first is {given[0]}); give a later "
                         "as-of date.")
    kept = acquisition_dates(used)
    last, gdd_date = given[-1], day
    try:
        values = median_gdd(parcels, weather, [day, last], bundle)
    except WeatherError as exc:
        log.info("The temperatures do not reach %s (%s): GDD counted to the last acquisition kept", day, exc)
        gdd_date = kept[-1]
        values = median_gdd(parcels, weather, [gdd_date, last], bundle)
    status = SeasonStatus(as_of=day, used=len(kept), total=len(given), gdd=float(values[0]),
                          season_gdd=float(values[1]), gdd_date=gdd_date)
    return used, status
