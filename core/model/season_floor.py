"""The GDD floor of a bundle: acquisitions early in the season that a model is better without.

A bundle may carry ``gdd.floor`` (growing degree days since the season start). A parcel's
acquisitions with fewer GDD are left out of its classification, as long as the parcel has a
valid acquisition at or above the floor; a parcel seen only below it (a run as of a date early in
the season) keeps them all, so that a floor never takes a label away. As of each date
(``ModelBundle.predict_prefixes``), the same rule holds for the dates up to it: before the first
valid acquisition at or above the floor, the parcel is classified on what it has.

Why a model has one, and how the shipped models' floors were chosen: ``docs/in-season.md``
(*Winter acquisitions*).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional

import numpy as np

if TYPE_CHECKING:  # the plugin reads FLOOR_LIMITS at start-up: nothing more is imported then
    from pathlib import Path

    from ..pixel_sets import PixelSets
    from ..progress import Progress

log = logging.getLogger(__name__)

__all__ = ["FLOOR_LIMITS", "gdd_floor", "floor_range_problem", "at_or_above_floor", "floor_date_mask",
           "floored_pixel_sets", "floored_prefixes", "say_floor"]

FLOOR_LIMITS = (0.0, 3000.0)
"""The floors a bundle may carry (GDD): none up to about the whole of a temperate season."""


def gdd_floor(gdd_settings: Mapping[str, Any]) -> float:
    """The floor of a bundle's ``gdd`` settings; 0 (nothing left out) where it has none."""
    return float(gdd_settings.get("floor") or 0.0)


def floor_range_problem(floor: float) -> Optional[str]:
    """What is wrong with ``floor`` for a bundle (``"{floor} is outside 0-3000 GDD"``), or None."""
    if FLOOR_LIMITS[0] <= floor <= FLOOR_LIMITS[1]:
        return None
    return f"{floor:g} is outside {FLOOR_LIMITS[0]:g}-{FLOOR_LIMITS[1]:g} GDD"


def at_or_above_floor(date_mask: np.ndarray, gdd: np.ndarray, floor: float) -> np.ndarray:
    """``(P, T)`` bool: the valid acquisitions at or above ``floor`` GDD."""
    return np.asarray(date_mask, dtype=bool) & (np.asarray(gdd, dtype=np.float64) >= floor)


def floor_date_mask(date_mask: np.ndarray, gdd: np.ndarray, floor: float) -> np.ndarray:
    """``date_mask`` without the acquisitions below ``floor`` GDD, for the parcels that have a
    valid one at or above it.

    Args:
        date_mask: ``(P, T)`` bool, True where the date is usable.
        gdd: ``(P, T)`` GDD of each parcel on each date.
        floor: GDD; 0 or less leaves the mask as it is.

    Returns:
        ``(P, T)`` bool, a new array.
    """
    mask = np.array(date_mask, dtype=bool)
    if floor <= 0:
        return mask
    above = at_or_above_floor(mask, gdd, floor)
    has_above = above.any(axis=1)
    mask[has_above] = above[has_above]
    return mask


_LOGGED: set[tuple[str, float]] = set()


def say_floor(path: Optional[Path], floor: float, leaves_out: bool) -> None:
    """The first time a model (its file ``path``, None for one not loaded from a file) leaves
    acquisitions out (``leaves_out``) in a process, say so in the log, once (a run predicts batch
    by batch, and by more than one path)."""
    name = path.name if path else "the model"
    if leaves_out and (name, floor) not in _LOGGED:
        _LOGGED.add((name, floor))
        log.info("%s leaves out each parcel's acquisitions before %s GDD where the parcel has one from then on "
                 "(its GDD floor; docs/in-season.md)", name, f"{floor:,.0f}")


def floored_pixel_sets(ps: PixelSets, floor: float, path: Optional[Path] = None) -> PixelSets:
    """``ps`` with :func:`floor_date_mask` as its date mask (the arrays shared, not copied), said
    in the log (:func:`say_floor`)."""
    if floor <= 0:
        return ps
    mask = floor_date_mask(ps.date_mask, ps.gdd, floor)
    say_floor(path, floor, bool((np.asarray(ps.date_mask, dtype=bool) & ~mask).any()))
    return replace(ps, date_mask=mask)


def floored_prefixes(prefixes: Callable[[PixelSets, Progress], np.ndarray], ps: PixelSets, floor: float,
                     progress: Progress) -> np.ndarray:
    """Probabilities as of each date with the floor, from two passes of ``prefixes`` that split
    the dates between them (so the per-date work is done once per date, as in one pass).

    Args:
        prefixes: ``(ps, progress) -> (P, T, K)`` probabilities as of each date (NaN before a
            parcel's first valid date), as ``ModelBundle.predict_prefixes`` without a floor.
        ps: the pixel sets.
        floor: GDD.
        progress: progress and cancellation, shared by the passes as their dates.

    Returns:
        ``(P, T, K)``: as of a date from which the parcel has a valid acquisition at or above the
        floor, the prefix of those acquisitions alone; before it, the prefix of the ones below.
    """
    above = at_or_above_floor(ps.date_mask, ps.gdd, floor)
    below = np.asarray(ps.date_mask, dtype=bool) & ~above
    late_part, early_part = progress.parts([float(above.sum()), float(below.sum())])
    late = prefixes(replace(ps, date_mask=above), late_part)
    if not below.any():
        return late
    early = prefixes(replace(ps, date_mask=below), early_part)
    use_late = np.cumsum(above, axis=1) > 0
    return np.where(use_late[:, :, None], late, early)
