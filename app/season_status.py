"""A classification as of a date: the scenes after it left out, how far the season had come
(acquisitions and the parcels' growing degree days) said in the run's log, and the shipped model
for early in the season chosen where the run names no model."""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from ..core.classify import bundle_thermal_time
from ..core.errors import SceneError, WeatherError
from ..core.inseason import SeasonStatus, acquisition_dates, as_day, cut_share, scenes_as_of
from ..core.model.bundle import default_bundle_path, load_bundle, shipped_model_choice
from ..core.model.season_stages import describe_stage
from ..core.parcels import load_parcels
from ..core.thermal.gdd import gdd_at_points
from .requests import ParcelsSpec

log = logging.getLogger(__name__)

INSEASON_BUNDLE = "inseason.tcm"
"""The file name of the L1C ensemble shipped for runs early in the season (``resources/models``,
``MODEL_CARD_INSEASON.md``): trained on three synthetic seasons with three quarters of its samples
cut to windows of the season that end from a quarter of the dates on."""

INSEASON_GDD = 2000.0
"""A run as of a date that names no model uses :data:`INSEASON_BUNDLE` rather than the shipped L1C
model while the parcels' median GDD at the last acquisition kept are fewer than this (so the same
scenes give the same map whatever day after them the run is as of). On the real Bavarian parcels
of 2018 (GDD base 0 from 1 January) the in-season ensemble is ahead of the shipped model on every
acquisition of the west half up to 15 August, and ahead or level on the east half up to 15 July
(1,959 GDD; OA of all 301 parcels 0.55 against 0.44 as of 30 May), behind there from 30 July on
(docs/in-season.md). GDD rather than a share of the season: a run given the scenes up to today
has no later acquisition to take a share of, and thermal time is what places a crop in its
development wherever it grows."""


def median_gdd(parcels: ParcelsSpec, weather: Any, dates: Sequence[Any], bundle: Any,
               weather_options: Optional[dict] = None) -> np.ndarray:
    """The parcels' median GDD on each of ``dates`` with the model's thermal time, ``(len(dates),)``
    (NaN where no parcel has temperatures; ``weather_options``: how the file is read).

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
                        method=thermal.method, parcel_ids=list(table.parcel_ids), **(weather_options or {}))
    known = np.isfinite(gdd).any(axis=0)
    out = np.full(gdd.shape[1], np.nan)
    out[known] = np.nanmedian(gdd[:, known], axis=0)
    return out


def season_as_of(as_of: Any, parcels: ParcelsSpec, scenes: list, weather: Any, bundle: Any,
                 weather_options: Optional[dict] = None) -> tuple[list, SeasonStatus]:
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
    last, seen, gdd_date = given[-1], kept[-1], day
    try:
        values = median_gdd(parcels, weather, [day, seen, last], bundle, weather_options)
    except WeatherError as exc:
        # The temperatures may end before the date, or only before the scenes left out: those
        # need none (the season's GDD at the last acquisition given are then unknown).
        try:
            values = np.append(median_gdd(parcels, weather, [day, seen], bundle, weather_options), np.nan)
        except WeatherError:
            log.info("The temperatures do not reach %s (%s): GDD counted to the last acquisition kept", day, exc)
            gdd_date = seen
            values = np.append(np.repeat(median_gdd(parcels, weather, [seen], bundle, weather_options), 2), np.nan)
    status = SeasonStatus(as_of=day, used=len(kept), total=len(given), gdd=float(values[0]),
                          season_gdd=float(values[2]), gdd_date=gdd_date, seen_gdd=float(values[1]))
    return used, status


def installed_inseason_bundle() -> Optional[Path]:
    """:data:`INSEASON_BUNDLE` beside the shipped L1C model, or None where it is not installed."""
    path = default_bundle_path("L1C").parent / INSEASON_BUNDLE
    return path if path.is_file() else None


def seen_gdd(status: SeasonStatus) -> float:
    """The parcels' median GDD at the last acquisition kept (on the date where that is unknown):
    how far the season had come in what the model sees."""
    return status.seen_gdd if np.isfinite(status.seen_gdd) else status.gdd


def _fewer(status: SeasonStatus) -> str:
    return (f"As of {status.as_of} the parcels' median GDD at the last acquisition kept ({seen_gdd(status):,.0f}) "
            f"are fewer than {INSEASON_GDD:,.0f}")


def inseason_model_choice(status: SeasonStatus, levels: Iterable[Optional[str]]) -> Optional[tuple[Path, str]]:
    """The in-season model for a run as of ``status`` that names no model, and why, in a sentence
    for the run's log: :data:`INSEASON_BUNDLE` where the scenes' processing ``levels`` choose the
    shipped L1C model (``core.model.bundle.shipped_model_choice``), the parcels' median GDD at the
    last acquisition kept (:func:`seen_gdd`) are known and fewer than :data:`INSEASON_GDD`, and the
    file is installed. None otherwise: the shipped model of the scenes' level stays."""
    gdd = seen_gdd(status)
    if not np.isfinite(gdd) or gdd >= INSEASON_GDD:
        return None
    shipped = shipped_model_choice(levels)[0]
    path = installed_inseason_bundle()
    if shipped != default_bundle_path("L1C") or path is None:
        return None
    return path, (f"{_fewer(status)}: using the shipped in-season model {path.name} (trained for partial "
                  f"seasons) rather than {shipped.name}")


@functools.lru_cache(maxsize=4)
def shipped_cut_share(path: Path) -> Optional[float]:
    """:func:`~thermocrop.core.inseason.cut_share` of the shipped bundle at ``path``, read once."""
    return cut_share(load_bundle(path))


def inseason_hint(status: SeasonStatus, levels: Iterable[Optional[str]], bundle: Any, name: str) -> Optional[str]:
    """For a run as of ``status`` that names its model (``bundle``, file ``name``): where a run
    naming none would use the shipped in-season model (:func:`inseason_model_choice`) and the
    given model was trained on a smaller share of cut seasons than it (or does not say), a
    sentence saying so; None otherwise. A model calibrated on the user's parcels keeps its
    training's provenance, so a calibrated shipped whole-season model gets the hint too."""
    choice = inseason_model_choice(status, levels)
    if choice is None:
        return None
    theirs, mine = shipped_cut_share(choice[0]), cut_share(bundle)
    if theirs is None or (mine is not None and mine >= theirs):
        return None
    trained = "does not say how many" if mine is None else f"{100 * mine:.0f} %"
    return (f"{_fewer(status)}: a run that names no model uses the shipped in-season model {choice[0].name}, "
            f"of whose training samples {100 * theirs:.0f} % were cut to part of the season ({name}: {trained}). "
            "On the real Bavarian parcels it was the more accurate up to mid-July; choose it (or calibrate it on your parcels) "
            "for early maps.")


def calibration_stage_note(bundle: Any, gdd: float) -> Optional[str]:
    """For a run's log: how its confidence and prediction sets are calibrated where the parcels'
    median GDD on the last acquisition kept are ``gdd`` (``core.model.season_stages``); None where
    the model's whole-season calibration holds (or it has none)."""
    calibration = getattr(bundle, "calibration", None)
    if calibration is None or not calibration.stages or not np.isfinite(gdd):
        return None
    said = describe_stage(calibration.stages, gdd)
    return None if said is None else f"At the last acquisition kept ({gdd:,.0f} GDD), {said}."
