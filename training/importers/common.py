"""What every importer needs besides reading its own format: where the parcels are, their
thermal time, spatial blocks and class labels."""

from __future__ import annotations

import logging
import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ...core.errors import InputError

log = logging.getLogger(__name__)

UNKNOWN = "unknown"
PathLike = Union[str, os.PathLike]


# --------------------------------------------------------------------------------------------
# Labels


def code_key(value: Any) -> Optional[str]:
    """A crop code or class name as class maps compare it: None for a missing value, whole
    numbers without a decimal part (``451``, ``451.0`` and ``"451"`` all give ``"451"``)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return None
        return str(int(value)) if float(value).is_integer() else str(float(value))
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value).strip() or None


def _read_class_map_csv(path: Path) -> dict[str, str]:
    import csv

    mapping: dict[str, str] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh) if r and not r[0].lstrip().startswith("#")]
    if rows and [c.strip().lower() for c in rows[0][:2]] == ["code", "class"]:
        rows = rows[1:]
    for line, row in enumerate(rows, start=1):
        if len(row) < 2 or not row[0].strip() or not row[1].strip():
            raise InputError(f"class map {path}: row {line} ({','.join(row)!r}) is not 'code,class'")
        code, name = code_key(row[0]), row[1].strip()
        if code in mapping and mapping[code] != name:
            raise InputError(f"class map {path}: code {code} maps to both {mapping[code]} and {name}")
        mapping[code] = name
    if not mapping:
        raise InputError(f"class map {path} holds no 'code,class' rows")
    return mapping


def class_map_presets() -> dict[str, Path]:
    """Class maps shipped with ThermoCrop (``resources/classmaps/<name>.csv``) by name."""
    folder = Path(__file__).resolve().parents[2] / "resources" / "classmaps"
    return {p.stem: p for p in sorted(folder.glob("*.csv"))}


def load_class_map(spec: Union[PathLike, Mapping[Any, str]]) -> dict[str, str]:
    """``code -> class name`` from a CSV file ``code,class``, a preset name or a mapping."""
    if isinstance(spec, Mapping):
        return {code_key(k): str(v) for k, v in spec.items()}
    presets = class_map_presets()
    path = presets.get(str(spec), Path(spec))
    if not path.is_file():
        raise InputError(f"class map {spec} is neither a file nor one of the presets "
                         f"({', '.join(presets) or 'none'}); give a CSV file of 'code,class' rows")
    return _read_class_map_csv(path)


def assign_labels(values: Sequence[Any], *, class_map: Union[PathLike, Mapping, None] = None,
                  classes: Optional[Sequence[str]] = None, source: str = "the labels"
                  ) -> tuple[np.ndarray, tuple[str, ...]]:
    """Class indices of the parcels' label values.

    Args:
        values: ``(P,)`` crop codes (with ``class_map``) or class names; missing values
            (None, NaN, empty) leave the parcel unlabelled.
        class_map: codes -> class names; codes it lacks become ``unknown`` (counted per code).
        classes: the class list; by default the sorted names that occur.
        source: where the values come from, for messages.

    Returns:
        ``labels (P,)`` int16 (-1 unlabelled) and the class list. A name outside an explicit
        ``classes`` list becomes ``unknown`` when that is a class, else unlabelled.
    """
    keys = [code_key(v) for v in values]
    if class_map is not None:
        mapping = load_class_map(class_map)
        names: list[Optional[str]] = []
        unmapped: Counter = Counter()
        for k in keys:
            if k is None:
                names.append(None)
            elif k in mapping:
                names.append(mapping[k])
            else:
                unmapped[k] += 1
                names.append(UNKNOWN)
        if unmapped:
            listed = ", ".join(f"{c} ({n})" for c, n in unmapped.most_common(20))
            log.warning("%s: %d parcels have codes the class map lacks and count as %s: %s",
                        source, sum(unmapped.values()), UNKNOWN, listed)
    else:
        names = keys
    if classes is None:
        classes = sorted({n for n in names if n is not None})
    classes = tuple(classes)
    lookup = {c: i for i, c in enumerate(classes)}
    labels = np.full(len(names), -1, dtype=np.int16)
    outside: Counter = Counter()
    for i, name in enumerate(names):
        if name is None:
            continue
        if name in lookup:
            labels[i] = lookup[name]
        else:
            outside[name] += 1
            if UNKNOWN in lookup:
                labels[i] = lookup[UNKNOWN]
    if outside:
        fate = UNKNOWN if UNKNOWN in lookup else "unlabelled"
        log.warning("%s: %d parcels have classes outside %s and count as %s: %s", source,
                    sum(outside.values()), list(classes), fate,
                    ", ".join(f"{c} ({n})" for c, n in outside.most_common(20)))
    return labels, classes


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
    from ...core.gdd import gdd_at_points

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
