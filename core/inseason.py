"""The season as of a date: the scenes up to it, how far the season has come in thermal time,
what the model met in training, and when each parcel's label was decided.

Growing degree days are counted from the season start, so leaving out the scenes after a date
leaves every kept acquisition's GDD as it was: the GDD of a cut season are those to its date.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from .model.season_curve import SeasonCurve, bundle_season_curve

__all__ = [
    "DEFAULT_DECIDED_THRESHOLD",
    "EARLY_SHARE",
    "SeasonStatus",
    "scenes_as_of",
    "acquisition_dates",
    "trained_season",
    "early_warning",
    "curve_warning",
    "decided_index",
    "decisions",
    "decision_dates",
]

DEFAULT_DECIDED_THRESHOLD = 0.8
"""The confidence a label must keep, from its decision to the last acquisition, to count as decided."""

EARLY_SHARE = 1.0 / 3.0
"""A run with a model that records no accuracy through the season (``core.model.season_curve``)
is warned when its date gives fewer than this share of the season's GDD: with a third of the
season's warmth most crops have not yet shown what sets them apart (see docs/in-season.md)."""


def as_day(value: Any) -> np.datetime64:
    """A date (``datetime.date``, ``numpy.datetime64`` or ``YYYY-MM-DD`` text) as ``datetime64[D]``."""
    if isinstance(value, datetime.datetime):
        value = value.date()
    return np.datetime64(value, "D")


def acquisition_dates(scenes: Sequence[Any]) -> np.ndarray:
    """The distinct acquisition dates of ``scenes`` (several tiles of one day are one date), sorted."""
    return np.unique(np.array([as_day(s.date) for s in scenes], dtype="datetime64[D]"))


def scenes_as_of(scenes: Sequence[Any], as_of: Any) -> list:
    """The scenes acquired on or before ``as_of``, in their order."""
    day = as_day(as_of)
    return [s for s in scenes if as_day(s.date) <= day]


def weather_dates_as_of(scenes: Sequence[Any], as_of: Any) -> Optional[list]:
    """The dates a run as of ``as_of`` (None: the whole season) needs temperatures at, for the
    inputs' check (``core.preflight.check_inputs``'s ``dates``): those of the scenes up to it, as
    the later ones are not read. None: those of every scene (the whole season, or no scene up to
    the date, which the run refuses by itself)."""
    kept = [s.date for s in scenes_as_of(scenes, as_of)] if as_of is not None else []
    return kept or None


@dataclass(frozen=True)
class SeasonStatus:
    """How far the season had come on a date.

    Attributes:
        as_of: the date.
        used, total: acquisition dates up to it, and given in all.
        gdd: the parcels' median GDD on ``as_of`` (NaN where the temperatures do not reach it).
        season_gdd: the parcels' median GDD on the last acquisition given (the season as the
            scenes show it).
        gdd_date: the day ``gdd`` is counted to (``as_of``, or the last acquisition kept where
            the temperatures end before ``as_of``).
        seen_gdd: the parcels' median GDD on the last acquisition kept: how far the season had
            come in what the model sees (it chooses the calibration's season stage).
    """

    as_of: np.datetime64
    used: int
    total: int
    gdd: float
    season_gdd: float
    gdd_date: np.datetime64
    seen_gdd: float = float("nan")

    @property
    def share(self) -> float:
        """``gdd`` as a share of ``season_gdd`` (NaN where either is unknown)."""
        if not np.isfinite(self.gdd) or not np.isfinite(self.season_gdd) or self.season_gdd <= 0:
            return float("nan")
        return float(self.gdd / self.season_gdd)

    def describe(self) -> str:
        """E.g. ``as of 2018-06-30: 9 of 14 acquisitions, GDD 1,697 at the parcels' median``."""
        text = f"as of {self.as_of}: {self.used} of {self.total} acquisitions"
        if np.isfinite(self.gdd):
            text += f", GDD {self.gdd:,.0f} at the parcels' median"
            if self.gdd_date != self.as_of:
                text += f" on {self.gdd_date} (the temperatures end before {self.as_of})"
            if np.isfinite(self.share) and self.total > self.used:
                text += f" ({100 * self.share:.0f} % of the {self.season_gdd:,.0f} at the last acquisition given)"
        return text


def trained_season(bundle: Any) -> str:
    """What part of the season the model of ``bundle`` met in training: from its recorded season
    curve where that says, else from its provenance."""
    curve = bundle_season_curve(bundle.config)
    if curve is not None and curve.trained_on:
        return curve.describe_training()
    share = cut_share(bundle)
    if share is None:
        return "its provenance does not say which part of the season it was trained on"
    if not share:
        return "it was trained on whole seasons only"
    return (f"{100 * share:.0f} % of its training samples were cut to a part of the season ending in the "
            "second half of its dates, the rest whole seasons")


def cut_share(bundle: Any) -> Optional[float]:
    """The share of ``bundle``'s training samples cut to a part of the season (its provenance's
    ``season_window_share``), or None where it does not say."""
    training = ((getattr(bundle.config, "provenance", None) or {}).get("training") or {})
    share = training.get("season_window_share")
    return float(share) if isinstance(share, (int, float)) and not isinstance(share, bool) else None


def early_warning(status: SeasonStatus, bundle: Any) -> Optional[str]:
    """A warning when ``status`` falls before the part of the season where the model's recorded
    accuracy reaches its level (:func:`curve_warning`); for a model without a record, when its
    GDD are fewer than :data:`EARLY_SHARE` of the season's. None otherwise."""
    share = status.share
    if not np.isfinite(share):
        return None
    curve = bundle_season_curve(bundle.config)
    if curve is not None:
        return curve_warning(status, curve)
    if share >= EARLY_SHARE:
        return None
    return (f"Classified as of {status.as_of} with {status.gdd:,.0f} GDD, {100 * share:.0f} % of the season's "
            f"{status.season_gdd:,.0f} at the last acquisition given: below a third of the season most crops look "
            f"alike, so expect many wrong labels ({trained_season(bundle)}). Decide later in the season, or check "
            "crop_conf and crop_decided.")


def curve_warning(status: SeasonStatus, curve: SeasonCurve) -> Optional[str]:
    """A warning, with the recorded figures, when ``status``'s share of the season's GDD is below
    the first cut of ``curve`` whose OA reaches its level; None from that cut on."""
    share = status.share
    first = curve.reached()
    if first is not None and share >= curve.fractions[first] - 1e-9:
        return None
    at = curve.cut_at(share)
    scored = (f"this model's validation OA was {curve.overall_accuracy[at]:.2f} (macro F1 "
              f"{curve.macro_f1[at]:.2f}) as of {100 * curve.fractions[at]:.0f} % of the season's GDD"
              if at is not None else
              f"this model's accuracy is recorded from {100 * curve.fractions[0]:.0f} % of the season's GDD on")
    reach = (f"its level {curve.level:.2f} is reached from {100 * curve.fractions[first]:.0f} % of the season's GDD"
             if first is not None else f"its level {curve.level:.2f} is not reached even on the whole season")
    return (f"As of {status.as_of} ({status.gdd:,.0f} GDD, {100 * share:.0f} % of the season's "
            f"{status.season_gdd:,.0f} at the last acquisition given) {scored} ({reach}; level: {curve.level_rule}; "
            f"measured on {curve.parcels} parcels of {curve.source}; {curve.describe_training()}). Expect more wrong "
            "labels than that recorded level: decide later in the season, or check crop_conf and crop_decided.")


def decided_index(probabilities: np.ndarray, threshold: float = DEFAULT_DECIDED_THRESHOLD) -> np.ndarray:
    """The earliest date from which each parcel's label no longer changes and its confidence stays
    at or above ``threshold`` up to the last date.

    Args:
        probabilities: ``(P, T, K)`` class probabilities as of each date (NaN before a parcel's
            first valid date); the last date's label is the parcel's label.
        threshold: the confidence to keep.

    Returns:
        ``(P,)`` int64 date index, -1 where never decided (or no label).
    """
    p = np.asarray(probabilities, dtype=np.float64)
    finite = np.isfinite(p).all(axis=2)
    filled = np.where(finite[:, :, None], p, -1.0)
    labels = filled.argmax(axis=2)
    confidence = filled.max(axis=2)
    good = finite & (labels == labels[:, -1:]) & (confidence >= threshold)
    # True at t where every date from t to the last is good.
    holds = np.flip(np.logical_and.accumulate(np.flip(good, axis=1), axis=1), axis=1)
    first = holds.argmax(axis=1)
    return np.where(holds.any(axis=1), first, -1).astype(np.int64)


def decisions(probabilities: np.ndarray, dates: np.ndarray, gdd: np.ndarray,
              threshold: float = DEFAULT_DECIDED_THRESHOLD) -> tuple[np.ndarray, np.ndarray]:
    """When each parcel's label was decided (:func:`decided_index`): its date and its GDD.

    Args:
        probabilities: ``(P, T, K)`` as of each date.
        dates: ``(T,)`` the acquisition dates.
        gdd: ``(P, T)`` each parcel's GDD on them.
        threshold: the confidence to keep.

    Returns:
        As :func:`decision_dates`.
    """
    return decision_dates(decided_index(probabilities, threshold), dates, gdd)


def decision_dates(index: np.ndarray, dates: np.ndarray, gdd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The date and the GDD of each parcel's decision.

    Args:
        index: ``(P,)`` the date index of each decision, -1 where never decided.
        dates: ``(T,)`` the acquisition dates.
        gdd: ``(P, T)`` each parcel's GDD on them.

    Returns:
        ``(P,)`` datetime64[D] (NaT: never decided) and ``(P,)`` float32 (NaN: never).
    """
    index = np.asarray(index, dtype=np.int64)
    decided = index >= 0
    at = np.maximum(index, 0)
    days = np.where(decided, np.asarray(dates, dtype="datetime64[D]")[at], np.datetime64("NaT", "D"))
    values = np.asarray(gdd, dtype=np.float32)[np.arange(len(index)), at] if len(index) else np.zeros(0, np.float32)
    return days.astype("datetime64[D]"), np.where(decided, values, np.nan).astype(np.float32)
