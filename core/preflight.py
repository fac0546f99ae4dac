"""Quick checks of a run's inputs, made before any scene pixel is read.

The command line, the Toolbox algorithms and the dock call ``check_inputs`` first, so that a
missing weather file, a parcel layer without a CRS, a damaged model or scenes of two seasons
are reported at once instead of after minutes of extraction. What it loaded (the model, the
scenes) is handed back for the run to use.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from .errors import InputError, WeatherError
from .io.geoparquet import GeoParquetLayer, is_parquet
from .io.source_layer import default_layer_name, parcel_layer_problem

log = logging.getLogger(__name__)

SAMPLE_POINTS = 9
"""Points of the parcels' extent at which the weather file is read in the preflight."""


@dataclass
class Preflight:
    """What the preflight found.

    Attributes:
        bundle: the loaded model bundle (None when none was asked for).
        scenes: the scenes found, of one season (None when none were given).
        season_start: the season start used (the bundle's for classification).
        parcel_count: features in the parcel layer (None for layers not read from a file).
        seconds: how long the checks took.
        notes: things worth telling the user (e.g. the weather sample's range).
        model_choice: which shipped model the scenes' level chose and why, in a sentence (None
            where a model was given or no scenes were).
    """

    bundle: Any = None
    scenes: Optional[list] = None
    season_start: Any = None
    parcel_count: Optional[int] = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    model_choice: Optional[str] = None


@dataclass(frozen=True)
class LayerFootprint:
    """A parcel layer held elsewhere (a QGIS layer) as the preflight needs it: its CRS (WKT or
    pyproj input; ``""`` or None when it has none) and its extent ``(xmin, ymin, xmax, ymax)``
    (None when empty)."""

    crs: Any
    bounds: Optional[Sequence[float]] = None


def parcel_layer_info(path: Any, layer: Optional[str] = None) -> dict[str, Any]:
    """CRS, field names, feature count, extent and the names of the file's layers (``layers``) of a
    vector file, without reading its features.

    Raises:
        InputError: the file does not exist or cannot be opened as a vector layer.
    """
    import fiona

    path = Path(path)
    problem = parcel_layer_problem(path, layer)
    if problem:
        raise InputError(problem)
    if is_parquet(path):
        parquet = GeoParquetLayer(path)
        return {"crs": parquet.crs.to_wkt() if parquet.crs is not None else None, "fields": parquet.fields,
                "count": len(parquet), "bounds": parquet.bounds() if len(parquet) else None, "layers": [path.stem]}
    try:
        layers = fiona.listlayers(path)
        with fiona.open(path, layer=layer) as src:
            return {"crs": src.crs_wkt or None, "fields": list(src.schema["properties"]),
                    "count": len(src), "bounds": tuple(src.bounds) if len(src) else None, "layers": layers}
    except Exception as exc:  # fiona raises its own hierarchy
        raise InputError(f"Cannot read parcel layer {path}: {exc}") from None


def _sample_points(bounds: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    xmin, ymin, xmax, ymax = bounds
    xs, ys = np.meshgrid(np.linspace(xmin, xmax, 3), np.linspace(ymin, ymax, 3))
    return xs.ravel(), ys.ravel()


def check_weather_file(weather: Any) -> Optional[Path]:
    """The weather file exists and can be read (a stat; checked first, before slower checks).

    Returns:
        The path, or None when ``weather`` is not a path (temperatures already read).

    Raises:
        WeatherError: the file is missing, a folder, or not readable.
    """
    if weather is None or not isinstance(weather, (str, os.PathLike)):
        return None
    path = Path(weather)
    if not path.is_file():
        raise WeatherError(f"Weather file {path} does not exist"
                           + (" (it is a folder)" if path.is_dir() else "") + "; give a NetCDF or station CSV file.")
    if not os.access(path, os.R_OK):
        raise WeatherError(f"Weather file {path} cannot be read (permission denied).")
    return path


def check_weather(weather: Any, *, crs: Any, bounds: Optional[Sequence[float]], dates: Optional[np.ndarray],
                  season_start: Any, weather_options: Optional[dict] = None) -> Optional[str]:
    """Read the weather file at a few points of the parcels' extent for the season's days.

    This finds a missing or unreadable file, missing variables, days not covered, units that
    are not a temperature, implausible values and swapped minimum/maximum, all before the run.

    Returns:
        A note on what was read, or None.

    Raises:
        WeatherError: any of the problems above.
    """
    from .thermal.gdd import SeasonStart, season_bounds
    from .thermal.weather import WeatherVariables, read_daily_temperature, record_period

    if weather is None:
        return None
    if not isinstance(weather, (str, os.PathLike)):
        return None  # temperatures already read
    path = check_weather_file(weather)
    options = dict(weather_options or {})
    if dates is None or len(dates) == 0:
        first, last = record_period(path, tmin_var=options.get("tmin_var"), date_var=options.get("date_var"))
        dates = np.array([last])
    start, end = season_bounds(dates, season_start or SeasonStart())
    if bounds is None or crs is None or not np.all(np.isfinite(bounds)):
        record_period(path, tmin_var=options.get("tmin_var"), date_var=options.get("date_var"))
        return None
    xs, ys = _sample_points(bounds)
    sample = read_daily_temperature(path, xs, ys, crs, start, end, variables=WeatherVariables.from_dict(options),
                                    missing="mask")
    return f"weather {sample.source}: {start} to {end} readable"


def run_bundle(bundle: Any, scenes: Sequence[Any]) -> Any:
    """The model of a run: ``bundle`` (a ``ModelBundle``, or a path loaded and validated), or for
    None the model shipped for the processing level of ``scenes``
    (``core.model.bundle.default_bundle_for_levels``)."""
    from .model.bundle import default_bundle_for_levels, load_bundle

    if bundle is None:
        return load_bundle(default_bundle_for_levels(sc.level for sc in scenes))
    if isinstance(bundle, (str, os.PathLike)):
        return load_bundle(bundle)
    return bundle


def _season_start(value: Any) -> Any:
    """A season start given as text (``"MM-DD"``) parsed; None: the default one."""
    from .thermal.gdd import SeasonStart

    if isinstance(value, str):
        try:
            value = SeasonStart.parse(value)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    return value or SeasonStart()


def check_inputs(
    *,
    parcels: Any = None,
    layer: Optional[str] = None,
    fields: Optional[dict[str, Optional[str]]] = None,
    scenes: Any = None,
    scene_options: Optional[dict] = None,
    season: Optional[int] = None,
    season_start: Any = None,
    dates: Optional[Sequence] = None,
    weather: Any = None,
    weather_options: Optional[dict] = None,
    bundle: Any = None,
    need_bundle: bool = False,
) -> Preflight:
    """Check a run's inputs quickly, before any pixel is read.

    Args:
        parcels: parcel file (its CRS, fields and extent are read, not its features); or a
            :class:`LayerFootprint` when the layer is held elsewhere (QGIS); None: no parcels
            are checked.
        layer: layer name inside ``parcels``.
        fields: the fields the run reads from the parcels, by role (``{"id": ..., "label": ...}``;
            None values are skipped).
        scenes: scene source for ``find_scenes`` (or scenes already found).
        scene_options: keyword arguments of ``find_scenes``.
        season: keep only the scenes of this season (harvest year).
        season_start: the season start of the run (ignored when a bundle gives it).
        dates: dates asked for without scenes (GDD at given dates).
        weather: weather file (or temperatures already read).
        weather_options: keyword arguments of ``read_daily_temperature``.
        bundle: model bundle path or ``ModelBundle``; with ``need_bundle`` None is the model
            shipped for the scenes' processing level (loaded once the scenes are found).
        need_bundle: the run classifies, so a model is loaded and validated.

    Returns:
        A :class:`Preflight` holding the loaded model and scenes.

    Raises:
        InputError (or a subclass): the first problem found, naming the file, layer or field.
    """
    from .parcels import check_crs
    from .thermal.daily_values import new_run

    t0 = time.perf_counter()
    new_run()  # each weather warning once in this run, though the weather is read again for the work
    result = Preflight()
    # A missing weather file is found by a stat; no need to load the model or list scenes first.
    check_weather_file(weather)

    # A model given is checked first; the shipped one waits for the scenes, whose level chooses it.
    bundle = bundle or None  # an empty path: none given
    shipped = bundle is None and need_bundle and scenes is not None
    if (need_bundle or bundle is not None) and not shipped:
        result.bundle = bundle = run_bundle(bundle, ())
        season_start = bundle.config.gdd.get("season_start", "01-01")
    if not shipped:
        result.season_start = season_start = _season_start(season_start)

    crs, bounds, source = None, None, "the parcel layer"
    if isinstance(parcels, LayerFootprint):
        crs, bounds = parcels.crs, parcels.bounds
    elif isinstance(parcels, (str, os.PathLike)):
        info = parcel_layer_info(parcels, layer)
        crs, bounds, source = info["crs"], info["bounds"], str(parcels)
        result.parcel_count = info["count"]
        if not layer and len(info["layers"]) > 1:
            log.warning("Parcel file %s holds %d layers (%s); the first, %r, is read. To use another, save it "
                        "to a file of its own (or open the file in QGIS and choose the layer there).", parcels,
                        len(info["layers"]), ", ".join(info["layers"]), info["layers"][0])
        for role, name in (fields or {}).items():
            if name and name not in info["fields"]:
                raise InputError(f"Parcel layer {parcels} has no {role} field {name!r}; its fields are "
                                 f"{info['fields']}.")
        if info["count"] == 0:
            raise InputError(f"Parcel layer {default_layer_name(parcels, layer)!r} of {parcels} has no features.")
    if parcels is not None:
        check_crs(crs, source)

    scene_dates = None
    if scenes is not None:
        from .scenes.local import find_scenes
        from .scenes.product import Scene
        from .scenes.seasons import select_season

        if isinstance(scenes, (list, tuple)) and scenes and all(isinstance(s, Scene) for s in scenes):
            found = list(scenes)
        else:
            options = dict(scene_options or {})
            if result.bundle is not None and not options.get("level"):
                options.setdefault("prefer_level", result.bundle.config.scene_level)
            found = find_scenes(scenes, **options)
        if shipped:
            from .model.bundle import load_bundle, shipped_model_choice

            # The choice is not logged here: the run says it once, where it knows which model runs
            # (as of an early date the in-season model may replace this one).
            path, result.model_choice = shipped_model_choice(sc.level for sc in found)
            result.bundle = load_bundle(path)
            result.season_start = season_start = _season_start(result.bundle.config.gdd.get("season_start", "01-01"))
        result.scenes = select_season(found, season_start, season)
        scene_dates = np.array([s.date for s in result.scenes], dtype="datetime64[D]")
    if dates is not None:
        scene_dates = np.asarray(dates, dtype="datetime64[D]")

    note = check_weather(weather, crs=crs, bounds=bounds, dates=scene_dates, season_start=season_start,
                         weather_options=weather_options)
    if note:
        result.notes.append(note)
    result.seconds = time.perf_counter() - t0
    log.info("Inputs checked in %.2f s", result.seconds)
    return result
