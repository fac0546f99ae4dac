"""What every importer needs besides reading its own format: where the parcels are, their
thermal time, spatial blocks and class labels."""

from __future__ import annotations

import logging
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ...core.errors import InputError
from ...core.settings import ThermalTime

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]


@dataclass(frozen=True)
class ImportWeather:
    """The temperatures an import computes thermal time from.

    Attributes:
        path: daily temperatures (E-OBS / CF NetCDF or station CSV).
        thermal: how growing degree days are counted.
        options: keyword arguments of ``core.thermal.weather.WeatherVariables`` (``tmin_var``,
            ``tmax_var``, ``date_var``, ``max_distance_m``, ...); None values are left out.
    """

    path: Any
    thermal: ThermalTime = field(default_factory=ThermalTime)
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, weather: Union["ImportWeather", PathLike]) -> "ImportWeather":
        """``weather`` as it is, or a file with the default thermal time."""
        return weather if isinstance(weather, ImportWeather) else cls(weather)


@dataclass(frozen=True)
class ParcelLayer:
    """A vector layer that gives an import its parcels' locations, labels and blocks.

    Attributes:
        path: the layer's file (any OGR format); None: no layer.
        layer: the layer name inside ``path``.
        join_field: the layer field holding the imported parcel ids; or
        join_by_row: the imported parcel ids are 0-based feature numbers of the layer.
        label_field, block_field: the layer's label and spatial block fields.
        point: ``(lon, lat)`` in WGS 84 for every parcel (a tile's centre) where there is no layer.
    """

    path: Optional[PathLike] = None
    layer: Optional[str] = None
    join_field: Optional[str] = None
    join_by_row: bool = False
    label_field: Optional[str] = None
    block_field: Optional[str] = None
    point: Optional[tuple[float, float]] = None


@dataclass(frozen=True)
class ClassesAndBlocks:
    """How an import turns labels into classes and parcels into spatial blocks.

    Attributes:
        class_map: codes -> classes (CSV ``code,class[,name]``, YAML, a mapping or a preset name
            such as ``france``); codes it lacks become ``unknown``.
        classes: the class list (default: the sorted classes that occur); labels of other
            classes are left unlabelled.
        block_size_m: blocks from a square grid of this size over the parcel locations, where
            no block field or column gives them.
    """

    class_map: Union[PathLike, Mapping, None] = None
    classes: Optional[Sequence[str]] = None
    block_size_m: Optional[float] = None


MAX_ID_LENGTH = 256
"""The longest parcel id read (ids are stored as fixed-width text: one long id widens every row)."""


def check_parcel_ids(ids: Sequence[str], source: str) -> None:
    """Refuse parcel ids longer than ``MAX_ID_LENGTH`` characters, naming the first."""
    long_id = next((str(i) for i in ids if len(str(i)) > MAX_ID_LENGTH), None)
    if long_id is not None:
        raise InputError(f"{source}: parcel id {long_id[:40]!r}... is {len(long_id):,} characters long; ids of "
                         f"up to {MAX_ID_LENGTH} are read")


# --------------------------------------------------------------------------------------------
# Labels


def code_key(value: Any) -> Optional[str]:
    """An id or code as text, the way class maps compare codes (``451.0`` -> ``"451"``)."""
    from ...core.classmap import normalise_code

    return normalise_code(value)


def class_map_spec(spec: Union[PathLike, Mapping, None]):
    """A class map argument: a mapping, a file, a preset of ``core.classmap``, or the name of any
    CSV in ``resources/classmaps/`` (such as ``bavaria``)."""
    from ...core.classmap import PRESETS, ClassMap, preset_path

    if spec is None or isinstance(spec, ClassMap):
        return spec
    if isinstance(spec, Mapping):
        return ClassMap.from_mapping(spec, source="the given class map")
    text = str(spec)
    if text.lower() not in PRESETS and not Path(text).is_file() and re.fullmatch(r"[A-Za-z0-9_-]+", text):
        if preset_path(text.lower()).is_file():
            return ClassMap.from_csv(preset_path(text.lower()), source=f"preset {text.lower()}")
    return spec


def assign_labels(values: Sequence[Any], *, class_map: Union[PathLike, Mapping, None] = None,
                  classes: Optional[Sequence[str]] = None, missing: Optional[str] = None,
                  source: str = "the labels") -> tuple[np.ndarray, tuple[str, ...], dict[str, Any]]:
    """Class indices of the parcels' label values (``core.classmap.assign_classes``).

    Args:
        values: ``(P,)`` crop codes (with ``class_map``) or class names.
        class_map: codes -> classes (a file, a preset name, or a mapping); codes it lacks
            become ``unknown``, counted per code in the log.
        classes: a fixed class list; labels of other classes are left unlabelled.
        missing: the class of missing values (None, NaN, empty); default unlabelled.
        source: where the values come from, for messages.

    Returns:
        ``labels (P,)`` int16 (-1 unlabelled), the class list, and what was folded or left
        out (for the dataset's provenance).
    """
    from ...core.classmap import assign_classes

    result = assign_classes(values, class_map_spec(class_map), classes=classes, missing=missing, source=source)
    return result.labels, tuple(result.classes), result.summary()


# --------------------------------------------------------------------------------------------
# Locations and blocks


@dataclass
class Locations:
    """One point per parcel in a metric CRS.

    Attributes:
        x, y: ``(P,)`` float64 coordinates, NaN where the parcel has no location.
        crs: the CRS of ``x``/``y`` (a pyproj CRS in metres).
    """

    x: np.ndarray
    y: np.ndarray
    crs: Any

    @property
    def found(self) -> np.ndarray:
        """``(P,)`` bool, True where the parcel has a location."""
        return np.isfinite(self.x) & np.isfinite(self.y)


def utm_crs(lon: float, lat: float):
    """The WGS 84 / UTM CRS of the zone holding ``(lon, lat)``."""
    from pyproj import CRS

    zone = int(math.floor((lon + 180.0) / 6.0)) % 60 + 1
    return CRS.from_epsg((32600 if lat >= 0 else 32700) + zone)


def locations_from_lonlat(lon: np.ndarray, lat: np.ndarray) -> Locations:
    """Points given in WGS 84 degrees, projected to the UTM zone of their centre."""
    from pyproj import Transformer

    lon = np.asarray(lon, dtype=np.float64)
    lat = np.asarray(lat, dtype=np.float64)
    ok = np.isfinite(lon) & np.isfinite(lat)
    if not ok.any():
        raise InputError("none of the parcels has a longitude and latitude")
    if (np.abs(lat[ok]) > 90).any() or (np.abs(lon[ok]) > 360).any():
        raise InputError("longitudes/latitudes out of range: give WGS 84 degrees (EPSG:4326)")
    crs = utm_crs(float(np.median(lon[ok])), float(np.median(lat[ok])))
    x = np.full(lon.shape, np.nan)
    y = np.full(lon.shape, np.nan)
    x[ok], y[ok] = Transformer.from_crs("EPSG:4326", crs, always_xy=True).transform(lon[ok], lat[ok])
    return Locations(x, y, crs)


def locations_from_geometries(geometry) -> Locations:
    """Centroids of polygons (a GeoSeries, None for missing), computed in a metric CRS."""
    if geometry.crs is None:
        raise InputError("the parcel layer has no CRS; assign one (e.g. in QGIS) and try again")
    present = np.array([g is not None and not g.is_empty for g in geometry], dtype=bool)
    if not present.any():
        raise InputError("none of the parcels has a geometry")
    crs = geometry.crs
    if not crs.is_projected:
        bounds = geometry[present].total_bounds
        crs = utm_crs((bounds[0] + bounds[2]) / 2.0, (bounds[1] + bounds[3]) / 2.0)
    projected = geometry[present].to_crs(crs)
    x = np.full(len(geometry), np.nan)
    y = np.full(len(geometry), np.nan)
    centroids = projected.centroid
    x[present], y[present] = centroids.x.to_numpy(), centroids.y.to_numpy()
    return Locations(x, y, crs)


def grid_blocks(locations: Locations, size_m: float) -> np.ndarray:
    """Spatial blocks from a square grid of ``size_m`` cells aligned on multiples of it.

    Returns:
        ``(P,)`` int32: occupied cells numbered 0, 1, ... row by row from the south-west;
        -1 where a parcel has no location.
    """
    if not size_m > 0:
        raise InputError(f"the block size must be positive, not {size_m}")
    found = locations.found
    blocks = np.full(len(found), -1, dtype=np.int32)
    if found.any():
        col = np.floor(locations.x[found] / size_m).astype(np.int64)
        row = np.floor(locations.y[found] / size_m).astype(np.int64)
        _, blocks[found] = np.unique(np.stack([row, col], axis=1), axis=0, return_inverse=True)
    return blocks


def read_layer(path: PathLike, layer: Optional[str] = None):
    """A vector layer as a GeoDataFrame; clear errors for missing or unreadable files."""
    import geopandas as gpd

    path = Path(path)
    if not path.exists():
        raise InputError(f"parcel layer {path} does not exist")
    try:
        return gpd.read_file(path, layer=layer) if layer else gpd.read_file(path)
    except Exception as exc:  # fiona/GDAL raise many kinds
        raise InputError(f"cannot read parcel layer {path}: {exc}") from None


def join_layer(gdf, parcel_ids: Sequence[str], *, join_field: Optional[str] = None,
               by_row: bool = False, source: str = "the parcel layer"):
    """The layer's features in the order of ``parcel_ids``.

    Args:
        gdf: the layer.
        parcel_ids: ``(P,)`` parcel identifiers of the imported data.
        join_field: a field of the layer holding the same identifiers, or
        by_row: the identifiers are 0-based feature numbers of the layer.

    Returns:
        ``(rows (P,) int64, found (P,) bool)``: the feature row of each parcel (-1 if none).
    """
    n = len(parcel_ids)
    rows = np.full(n, -1, dtype=np.int64)
    if by_row:
        for i, pid in enumerate(parcel_ids):
            try:
                r = int(float(pid))
            except (TypeError, ValueError):
                raise InputError(f"joining by row needs parcel ids that are feature numbers; "
                                 f"{pid!r} is not a number (join by a field instead)") from None
            if 0 <= r < len(gdf) and float(pid) == r:
                rows[i] = r
    else:
        if join_field not in gdf.columns:
            raise InputError(f"{source} has no field {join_field!r} (fields: "
                             f"{', '.join(c for c in gdf.columns if c != 'geometry')})")
        keys = [code_key(v) for v in gdf[join_field].to_numpy()]
        counts = Counter(k for k in keys if k is not None)
        twice = [k for k, c in counts.items() if c > 1]
        if twice:
            raise InputError(f"{source}: {join_field} is not unique ({len(twice)} values occur "
                             f"more than once, e.g. {', '.join(twice[:5])}); join by a unique field")
        position = {k: r for r, k in enumerate(keys) if k is not None}
        for i, pid in enumerate(parcel_ids):
            rows[i] = position.get(code_key(pid), -1)
    found = rows >= 0
    if not found.all():
        missing = [str(parcel_ids[i]) for i in np.flatnonzero(~found)[:10]]
        how = "feature numbers" if by_row else f"values of {join_field}"
        log.warning("%d of %d parcels are not among the %s of %s: %s", int((~found).sum()), n,
                    how, source, ", ".join(missing))
    return rows, found


# --------------------------------------------------------------------------------------------
# Thermal time


def is_station_file(path: PathLike) -> bool:
    """True for a station CSV (one series for every parcel), False for a NetCDF grid."""
    return Path(path).suffix.lower() in (".csv", ".txt")


def thermal_time(weather: PathLike, locations: Optional[Locations], dates: np.ndarray,
                 parcel_ids: Sequence[str], *, season_start, t_base: float = 0.0,
                 t_cap: float = 30.0, method: str = "paper",
                 weather_options: Optional[Mapping[str, Any]] = None) -> np.ndarray:
    """GDD ``(P, T)`` float32 of every parcel at ``dates``; NaN rows where unusable.

    A station CSV gives every parcel the same series and needs no locations; a gridded file
    takes each parcel's nearest cell with data.
    """
    from ...core.thermal.gdd import gdd_at_points

    n = len(parcel_ids)
    options = {k: v for k, v in dict(weather_options or {}).items() if v is not None}
    if is_station_file(weather):
        x, y, crs = np.zeros(n), np.zeros(n), "EPSG:4326"
    else:
        if locations is None or not locations.found.any():
            raise InputError(f"{weather} is a gridded weather file: it needs the parcels' locations "
                             "(a parcel layer, or longitude/latitude columns)")
        x, y, crs = locations.x, locations.y, locations.crs
    gdd = np.full((n, len(dates)), np.nan, dtype=np.float32)
    where = np.arange(n) if is_station_file(weather) else np.flatnonzero(locations.found)
    if len(where):
        gdd[where] = gdd_at_points(weather, x[where], y[where], crs, dates, season_start=season_start,
                                   t_base=t_base, t_cap=t_cap, method=method,
                                   parcel_ids=[str(parcel_ids[i]) for i in where], **options)
    return gdd
