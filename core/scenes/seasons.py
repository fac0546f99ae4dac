"""The seasons a series of scenes spans, and the scenes of one season."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..errors import SceneError
from ..thermal.gdd import SeasonStart, season_of, season_span
from .product import Scene


def describe_seasons(dates: Sequence, season_start: Any = None) -> str:
    """The seasons of ``dates`` as text, e.g. ``2017 (31 dates, 2017-01-05 to 2017-12-20) and 2018
    (...)``."""
    season_start = season_start or SeasonStart()
    days = np.asarray(dates, dtype="datetime64[D]")
    years = season_of(days, season_start)
    parts = []
    for year in np.unique(years):
        mine = days[years == year]
        parts.append(f"{year} ({mine.size} dates, {mine.min()} to {mine.max()})")
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def select_season(scenes: Sequence[Scene], season_start: Any = None,
                  season: Optional[int] = None) -> list[Scene]:
    """The scenes of one season, refusing a mix of seasons unless one is named.

    A series of two seasons (2017 and 2018 scenes in one folder) would be read as one long
    season, its thermal time summed across both years; a model never saw such a series.

    Args:
        scenes: scenes from ``find_scenes``.
        season_start: ``SeasonStart`` (or its text) the season is counted from; default 01-01.
        season: keep only the scenes of this season (its harvest year, see ``gdd.season_of``).

    Raises:
        SceneError: the scenes span several seasons and none was named, or none is of ``season``.
    """
    if isinstance(season_start, str):
        season_start = SeasonStart.parse(season_start)
    season_start = season_start or SeasonStart()
    scenes = list(scenes)
    if not scenes:
        return scenes
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    years = season_of(dates, season_start)
    if season is not None:
        keep = [sc for sc, y in zip(scenes, years) if y == season]
        if not keep:
            first, last = season_span(season, season_start)
            raise SceneError(f"No scene falls in season {season} ({first} to {last}, season start "
                             f"{season_start}); the scenes are of {describe_seasons(dates, season_start)}.")
        return keep
    if np.unique(years).size > 1:
        autumn = ("" if season_start.year_offset else
                  " If the season begins the autumn before, count it from then (e.g. season start "
                  "09-01/-1).")
        raise SceneError(
            f"The scenes span {np.unique(years).size} seasons (season start {season_start}): "
            f"{describe_seasons(dates, season_start)}. Give the scenes of one season only (on the "
            f"command line --season {years.max()} picks one).{autumn}"
        )
    return scenes

