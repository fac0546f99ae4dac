"""A request's inputs made concrete: the scenes of files, saved STAC items or a catalogue search
(:func:`resolve_scenes`), their dates without opening any image (:func:`scene_dates`), and the
temperature file of a weather service (:func:`resolve_weather`)."""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..core.errors import InputError, ThermoCropError
from ..core.pixel_sets import STATUS_OK
from ..core.progress import Progress
from ..core.scenes.local import find_scenes
from ..core.scenes.stac import load_item_files, reader_for, resolve_catalog, scenes_from_items, search_items, summarize
from ..core.thermal.weather_services import fetch_for_parcels, is_weather_service
from .requests import ScenesSpec, WeatherSpec

log = logging.getLogger(__name__)

Report = Callable[[str], None]
"""Receives a line for the user (the command line prints it, QGIS logs it)."""


def weather_spec(text: Optional[str], **options: Any) -> WeatherSpec:
    """A ``WeatherSpec`` from what a user typed: a service name (``open-meteo``, ``cds:e-obs``...)
    or a file; ``options`` are the other fields."""
    if is_weather_service(text):
        return WeatherSpec(service=text, **options)
    return WeatherSpec(path=text or None, **options)


def _items(spec: ScenesSpec, parcels: Any, report: Report):
    """The items of saved collections or of a catalogue search, and the folders their local
    hrefs may name (those of the files; none for a search)."""
    if spec.items:
        return load_item_files(list(spec.items))
    if parcels is None:
        raise InputError("A catalogue search needs the parcels.")
    items = search_items(parcels, season=spec.season, start=spec.start, end=spec.end,
                         catalog=resolve_catalog(spec.catalog, spec.collection), max_cloud=spec.max_cloud)
    report(f"{len(items)} items found in {spec.catalog}")
    return items, []


def _one_source(spec: ScenesSpec) -> str:
    sources = spec.sources()
    if len(sources) != 1:
        raise InputError("Give exactly one source of scenes: files, saved STAC items or a catalogue search"
                         f"{'; got ' + ' and '.join(sources) if sources else ''}.")
    return sources[0]


def resolve_scenes(spec: ScenesSpec, parcels: Any = None, *, progress: Optional[Progress] = None,
                   on_stats: Optional[Callable] = None, report: Report = log.info, model: Any = None) -> list:
    """The scenes ``spec`` asks for, one per date.

    Args:
        spec: files, saved items, a catalogue search or scenes already found.
        parcels: the parcels a catalogue search covers (a file or a GeoDataFrame).
        progress: progress and cancellation of opening the items.
        on_stats: told the bytes and dates fetched so far (``core.scenes.remote.FetchStats``).
        report: told how many items a search found.
        model: the model given (a path or a loaded bundle; None: the shipped one), whose
            processing level is kept where scenes of both levels are found.

    Raises:
        InputError: no source or several, or a search without parcels.
    """
    source = _one_source(spec)
    if source == "found":
        return list(spec.found)
    prefer = model_level(model)
    if source == "files":
        return find_scenes(list(spec.files), **spec.find_options(), prefer_level=prefer)
    items, folders = _items(spec, parcels, report)
    reader = reader_for(items, cache_dir=spec.cache, credentials=dict(spec.credentials), catalog=spec.catalog,
                        max_requests=spec.max_requests, on_stats=on_stats)
    return scenes_from_items(items, reader=reader, level=spec.level, offset=spec.offset, progress=progress,
                             folders=folders, prefer_level=prefer)


def model_level(model: Any) -> Optional[str]:
    """The processing level of the scenes ``model`` was trained on (a bundle path or a loaded
    bundle), or None where it says none or cannot be loaded (the run's checks then say why)."""
    if model is None or model == "":
        return None
    if isinstance(model, (str, os.PathLike)):
        from ..core.model.bundle import load_bundle

        try:
            model = load_bundle(model)
        except ThermoCropError:
            return None
    return getattr(getattr(model, "config", None), "scene_level", None)


def scene_dates(spec: ScenesSpec, parcels: Any = None, report: Report = log.info) -> np.ndarray:
    """The sorted acquisition dates (``datetime64[D]``) of ``spec``: items are summarised, not
    opened."""
    source = _one_source(spec)
    if source == "found":
        dates = [s.date for s in spec.found]
    elif source == "files":
        dates = [s.date for s in find_scenes(list(spec.files), **spec.find_options())]
    else:
        dates = [s.date for s in summarize(_items(spec, parcels, report)[0])]
    return np.unique(np.array(dates, dtype="datetime64[D]"))


def resolve_weather(spec: WeatherSpec, geometry: Any, dates: Sequence, season_start: Any, *,
                    progress: Optional[Progress] = None) -> str:
    """The temperature file of ``spec``: its file, or the service's answer for the parcels'
    cells (``geometry``) from the season start to the last of ``dates``, fetched once and then
    taken from the cache."""
    if not spec.service:
        return spec.path
    path = fetch_for_parcels(spec.service, geometry, dates, season_start, cache_dir=spec.cache,
                             refresh=spec.refresh, progress=progress)
    log.info("Temperatures from %s: %s", spec.service, path)
    return str(path)


def without_result_note(status: Any, name: str) -> Optional[str]:
    """The sentence a run on reference parcels says of those it extracted without a result
    (``status`` of each parcel: outside the scenes, no clear date...), counted by status; None
    where every parcel has one."""
    status = np.asarray(status)
    missing = status != STATUS_OK
    if not missing.any():
        return None
    counts = {str(k): int(n) for k, n in zip(*np.unique(status[missing], return_counts=True))}
    return (f"{int(missing.sum())} reference parcels of {name} have no result and are left out ("
            + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) + ").")
