"""Parcels + scenes + weather -> per-parcel pixel sets ``(T, C, S)``, one pass over each scene.

All parcels are rasterised once per grid, window by window; S pixel positions per parcel are
drawn once (seeded) and read from every date, so a scene is decoded at most once per chunk.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from .scenes.bands import S2_BANDS
from .pixel_sets import STATUS_OK, DatasetWriter, PixelSets
from .errors import ExtractionError, InputError, NoUsableParcelsError, SceneError, WeatherError
from .progress import Progress
from .scenes.remote_product import prefetch_chunk
from .scenes.local import find_scenes
from .scenes.product import NOT_DIGITAL_NUMBERS, Grid, Scene, decode_threads, decoding_threads, usable_cpus
from .scenes.radiometry import SCL_INVALID, bright_cloud_mask, check_missing_scl, to_reflectance
from .scenes.seasons import select_season
from .io.vector import default_layer_name, parcel_layer_problem

log = logging.getLogger(__name__)

STATUS_OUTSIDE = "outside_scenes"
STATUS_TOO_SMALL = "too_small"
STATUS_NO_CLEAR_DATE = "no_clear_date"
STATUS_NO_WEATHER = "no_weather"
STATUS_INVALID_GEOMETRY = "invalid_geometry"
STATUS_INVALID_VALUES = "invalid_values"
STATUSES = (STATUS_OK, STATUS_OUTSIDE, STATUS_TOO_SMALL, STATUS_NO_CLEAR_DATE, STATUS_NO_WEATHER,
            STATUS_INVALID_GEOMETRY, STATUS_INVALID_VALUES)

SATURATED_DN = 65535
"""The digital number Sentinel-2 gives saturated pixels: no reflectance, read as no data."""

INVALID_VALUES_SHARE = 0.5
"""A parcel more than this share of whose pixel-dates held values that are no reflectance (NaN,
infinite, negative or too large in the file, saturated) gets status ``invalid_values``."""

NEGATIVE_REFLECTANCE = "negative reflectance"

STATUS_ADVICE = {
    STATUS_OUTSIDE: "the parcels do not overlap the scenes: check the parcels' CRS and that the "
                    "scenes cover them",
    STATUS_TOO_SMALL: "the parcels cover fewer pixels than the minimum asked for (min_pixels)",
    STATUS_NO_CLEAR_DATE: "no date has enough clear pixels over them: check the cloud masks and "
                          "the scenes' nodata",
    STATUS_NO_WEATHER: "no usable temperatures: the weather file has no cell with data within "
                       "reach (check the parcels' CRS, the file's extent, the maximum distance) or "
                       "gaps of more than 3 days",
    STATUS_INVALID_GEOMETRY: "the geometries are empty or not polygons",
    STATUS_INVALID_VALUES: "most of their pixel values are no reflectance (NaN, infinite, negative or "
                           "above 65535 in the scene files, or saturated): check how the scenes were exported",
}
"""What each failure status points to, for summaries of runs."""


def status_summary(status: Sequence[str]) -> str:
    """Parcels counted by status, most frequent first, each failure with what it points to,
    e.g. ``150 parcels: 150 no_weather (no usable temperatures: ...)``."""
    names, counts = np.unique(np.asarray(status, dtype=str), return_counts=True)
    parts = []
    for name, count in sorted(zip(names, counts), key=lambda nc: (-nc[1], nc[0])):
        advice = STATUS_ADVICE.get(str(name))
        parts.append(f"{count} {name}" + (f" ({advice})" if advice else ""))
    return f"{len(status)} parcels: {'; '.join(parts)}"


def _some(names: Sequence[Any], limit: int = 10) -> str:
    """The first ``limit`` names and how many more, e.g. ``a, b, c and 4 more``."""
    shown = ", ".join(str(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def require_usable(status: Sequence[str], what: str, source: str) -> None:
    """Raise ``NoUsableParcelsError`` when no parcel has the status ``ok``.

    Args:
        status: ``(P,)`` statuses of the run.
        what: what the run did, e.g. ``"classified"``.
        source: the parcel layer, for the message.
    """
    status = np.asarray(status, dtype=str)
    if not (status == STATUS_OK).any():
        raise NoUsableParcelsError(f"No parcel of {source} could be {what}: {status_summary(status)}.")


BLOCK_SIZE = 1024
"""Window edge in pixels: a multiple of the usual GeoTIFF/COG tile sizes (256, 512)."""

ParcelSource = Union[str, os.PathLike, "geopandas.GeoDataFrame"]  # noqa: F821
SceneSource = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]], Sequence[Scene]]


@dataclass
class ParcelTable:
    """Parcels ready for extraction: repaired geometries and their attributes.

    Attributes:
        geometry: ``(P,)`` GeoSeries in the layer's CRS, repaired; None where unusable.
        parcel_ids: ``(P,)`` str identifiers.
        labels: ``(P,)`` int16 class index or -1.
        blocks: ``(P,)`` int32 spatial block or -1.
        status: ``(P,)`` object, ``""`` while undecided or a failure reason.
        source: where the parcels came from (for messages and provenance).
        rows: ``(P,)`` int64 position of each parcel in the source layer.
        classes: the class names ``labels`` index (empty without labels).
        class_summary: what the class assignment did (``ClassAssignment.summary()``), for provenance.
    """

    geometry: Any
    parcel_ids: np.ndarray
    labels: np.ndarray
    blocks: np.ndarray
    status: np.ndarray
    source: str
    rows: Optional[np.ndarray] = None
    classes: tuple[str, ...] = ()
    class_summary: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.rows is None:
            self.rows = np.arange(len(self.parcel_ids), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.parcel_ids)


@dataclass
class ExtractionSettings:
    """How pixels are sampled and masked and how GDD is computed."""

    max_pixels: int = 64
    seed: int = 0
    min_valid_fraction: float = 0.5
    min_pixels: int = 1
    scl_invalid: tuple[int, ...] = SCL_INVALID
    season_start: Any = None
    t_base: float = 0.0
    t_cap: float = 30.0
    gdd_method: str = "paper"
    block_size: int = BLOCK_SIZE
    weather_options: dict[str, Any] = field(default_factory=dict)
    missing_scl: str = "warn"


class _NullGeometryNoise(logging.Filter):
    """Drops GDAL's complaint about features without geometry (``Pointer 'hGeom' is NULL``),
    which fiona relays as an ERROR per feature: such parcels are handled (status
    ``invalid_geometry``) and counted in one warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Pointer 'hGeom' is NULL" not in record.getMessage()


logging.getLogger("fiona._env").addFilter(_NullGeometryNoise())


def _read_layer(parcels: ParcelSource, layer: Optional[str] = None):
    import geopandas as gpd

    if isinstance(parcels, gpd.GeoDataFrame):
        return parcels, "GeoDataFrame"
    path = Path(parcels)
    problem = parcel_layer_problem(path, layer)
    if problem:
        raise InputError(problem)
    try:
        gdf = gpd.read_file(path, layer=layer) if layer else gpd.read_file(path)
    except Exception as exc:  # fiona raises its own hierarchy
        raise InputError(f"Cannot read parcel layer {path}: {exc}") from exc
    if len(gdf) == 0:
        name = default_layer_name(path, layer) or path.stem
        raise InputError(f"Parcel layer {name!r} of {path} has no features; choose the layer that holds the "
                         "parcels, or check that the export wrote them.")
    return gdf, str(path)


def crs_problem(crs: Any) -> Optional[str]:
    """Why ``crs`` cannot place parcels on Earth, or None when it can.

    Refused: no CRS; a GeoPackage's undefined systems (srs_id 0 "Undefined geographic SRS",
    -1 "Undefined Cartesian SRS"); engineering (local) systems; a datum or ellipsoid that is
    unknown. Each would put the parcels somewhere arbitrary relative to scenes and weather.

    Args:
        crs: a pyproj CRS, WKT, ``"EPSG:..."`` text, or None.
    """
    if crs is None or (isinstance(crs, str) and not crs.strip()):
        return "has no coordinate reference system"
    from pyproj import CRS
    from pyproj.exceptions import CRSError

    try:
        crs = CRS.from_user_input(crs)
    except CRSError as exc:
        return f"has a coordinate reference system ThermoCrop cannot read ({exc})"
    name = crs.name or ""
    if name.lower().startswith("undefined") or name.lower() in ("unknown", "unnamed"):
        return f"has an undefined coordinate reference system ({name!r})"
    if crs.type_name.startswith("Engineering") or not (crs.is_geographic or crs.is_projected):
        return f"has a local coordinate reference system ({name!r}, {crs.type_name}) not tied to the Earth"
    datum = crs.datum.name if crs.datum is not None else ""
    ellipsoid = crs.ellipsoid.name if crs.ellipsoid is not None else ""
    if datum.lower() in ("", "unknown", "undefined") and ellipsoid.lower() in ("", "unknown", "undefined"):
        return f"has a coordinate reference system ({name!r}) whose datum and ellipsoid are unknown"
    return None


def check_crs(crs: Any, source: str) -> None:
    """Raise ``InputError`` when ``crs`` cannot place the parcels of ``source`` (see ``crs_problem``)."""
    problem = crs_problem(crs)
    if problem:
        raise InputError(f"Parcel layer {source} {problem}; assign the right one first (in QGIS: "
                         "Layer Properties > Source, or Assign projection; a shapefile needs its .prj).")


def repair_geometries(geoms) -> tuple[Any, np.ndarray]:
    """Repair invalid polygons and keep only their polygonal parts.

    Args:
        geoms: ``(P,)`` GeoSeries.

    Returns:
        The repaired GeoSeries (None where unusable) and ``(P,)`` bool, True where usable.
    """
    from shapely.geometry import MultiPolygon, Polygon
    from shapely.validation import make_valid

    def polygonal(g):
        if g is None or g.is_empty:
            return None
        if isinstance(g, (Polygon, MultiPolygon)):
            return g
        parts = [p for p in getattr(g, "geoms", []) if isinstance(p, (Polygon, MultiPolygon))]
        polys = [q for p in parts for q in (p.geoms if isinstance(p, MultiPolygon) else [p])]
        return MultiPolygon(polys) if polys else None

    out = []
    for g in geoms:
        if g is not None and not g.is_empty and not g.is_valid:
            fixed = polygonal(make_valid(g))
            # make_valid can keep slivers that GEOS still dislikes; buffer(0) settles them.
            if fixed is not None and not fixed.is_valid:
                fixed = fixed.buffer(0)
            g = fixed
        g = polygonal(g)
        out.append(g if g is not None and g.area > 0 else None)
    ok = np.array([g is not None for g in out], dtype=bool)
    return geoms.__class__(out, index=geoms.index, crs=geoms.crs), ok


def load_parcels(
    parcels: ParcelSource,
    *,
    id_field: Optional[str] = None,
    label_field: Optional[str] = None,
    classes: Optional[Sequence[str]] = None,
    block_field: Optional[str] = "block",
    layer: Optional[str] = None,
    selected_ids: Optional[Sequence[Any]] = None,
    class_map: Any = None,
    min_parcels: int = 0,
) -> ParcelTable:
    """Read a parcel layer and repair its geometries.

    Args:
        parcels: a vector file (any OGR format) or a GeoDataFrame, in any CRS.
        id_field: field holding parcel ids; default ``parcel_id`` when present, else the row number.
        label_field: field holding crop labels (any values: class names or crop codes); None for
            unlabelled parcels. Empty values leave a parcel unlabelled.
        classes: a fixed class list; labels outside it are unlabelled (-1). None: the classes are
            the labels found (after ``class_map`` and ``min_parcels``), sorted.
        block_field: field holding spatial block numbers, if present.
        layer: layer name inside a multi-layer file.
        selected_ids: keep only the parcels with these ids.
        class_map: a ``core.classmap.ClassMap``, a preset name (``france``, ``denmark``,
            ``austria``) or a CSV / YAML class map file; codes outside it become ``unknown``.
        min_parcels: classes with fewer labelled parcels (among the selected ones) become ``unknown``.

    Raises:
        InputError: unreadable file, no CRS, a named field that does not exist, or a bad class map.
    """
    gdf, source = _read_layer(parcels, layer)
    check_crs(gdf.crs, source)
    fields = [c for c in gdf.columns if c != gdf.geometry.name]

    def need(name: str, what: str) -> None:
        if name not in gdf.columns:
            raise InputError(f"Parcel layer {source} has no {what} field {name!r}; its fields are {fields}.")

    if id_field is not None:
        need(id_field, "id")
        ids = gdf[id_field].astype(str).to_numpy()
    elif "parcel_id" in gdf.columns:
        ids = gdf["parcel_id"].astype(str).to_numpy()
    else:
        ids = np.array([str(i) for i in range(len(gdf))])
    if label_field is not None:
        need(label_field, "label")
    elif class_map is not None or min_parcels > 1:
        raise InputError(f"A class map or a minimum of parcels per class needs a label field; name the field "
                         f"of {source} that holds the crop codes or names.")
    blocks = np.full(len(gdf), -1, dtype=np.int32)
    if block_field and block_field in gdf.columns:
        blocks = gdf[block_field].fillna(-1).astype(np.int32).to_numpy()
    rows = np.arange(len(gdf), dtype=np.int64)
    if selected_ids is not None:
        keep = np.isin(ids, np.asarray([str(s) for s in selected_ids]))
        gdf, ids, blocks, rows = gdf[keep], ids[keep], blocks[keep], rows[keep]
    labels = np.full(len(gdf), -1, dtype=np.int16)
    class_list: tuple[str, ...] = tuple(classes) if classes is not None else ()
    summary: dict[str, Any] = {}
    if label_field is not None:
        from .classmap import assign_classes

        assigned = assign_classes(gdf[label_field].to_numpy(), class_map, min_parcels=min_parcels,
                                  classes=classes, source=f"{source} field {label_field!r}")
        labels, class_list = assigned.labels, assigned.classes
        summary = assigned.summary()
        summary["class_map"] = None if class_map is None else getattr(class_map, "source", str(class_map))
        summary["min_parcels"] = int(min_parcels)
        log.info("%s: %d classes from field %r: %s", source, len(class_list), label_field,
                 ", ".join(f"{c} ({n})" for c, n in assigned.counts.items()))
    geometry, ok = repair_geometries(gdf.geometry.reset_index(drop=True))
    status = np.where(ok, "", STATUS_INVALID_GEOMETRY).astype(object)
    if (~ok).any():
        log.warning("%s: %d parcels have unusable geometries (empty, not polygons or unrepairable): %s",
                    source, int((~ok).sum()), list(ids[~ok][:10]))
    return ParcelTable(geometry, ids, labels, blocks, status, source, rows, class_list, summary)


def _scene_list(scenes: SceneSource) -> list[Scene]:
    if isinstance(scenes, (list, tuple)) and scenes and all(isinstance(s, Scene) for s in scenes):
        return list(scenes)
    return find_scenes(scenes)


def _hash64(values: np.ndarray, seed: int) -> np.ndarray:
    """A seeded, order-independent pseudo-random key per pixel index (splitmix64)."""
    z = values.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % 2**64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _lattice_index(flat: np.ndarray, grid: Grid) -> np.ndarray:
    """Pixel indices of a grid -> one index per pixel of the CRS-wide lattice of that pixel size.

    A pixel keeps its index (and so its sampling key) whichever raster it is read from: a
    local clip of a scene or the whole remote tile, whose grids differ only in extent.
    """
    t = grid.transform
    row0, col0 = int(round(t.f / t.e)), int(round(t.c / t.a))
    rows = flat // grid.width + (row0 + 2**31)
    cols = flat % grid.width + (col0 + 2**31)
    return (rows.astype(np.uint64) << np.uint64(32)) | cols.astype(np.uint64)


def _keep_smallest(parcel: np.ndarray, key: np.ndarray, flat: np.ndarray, s: int):
    """Per parcel, the ``s`` entries with the smallest keys, and their rank (0..s-1)."""
    order = np.lexsort((key, parcel))
    parcel, key, flat = parcel[order], key[order], flat[order]
    if len(parcel) == 0:
        return parcel, key, flat, parcel.astype(np.int64)
    starts = np.r_[0, np.flatnonzero(np.diff(parcel)) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(parcel)]))
    rank = np.arange(len(parcel)) - group_start
    keep = rank < s
    return parcel[keep], key[keep], flat[keep], rank[keep]


LAYER_BITS = 8
"""Low bits of ``_sample_pixels``' uint32 burn values that count the parcels covering a pixel;
the other 24 hold the parcel, so a chunk holds fewer than 2**24 parcels. A sum that overflows
(many large parcel numbers on one pixel) still reads as a shared pixel: it wraps or saturates,
and neither leaves a count of one."""
LAYER_MASK = np.uint32((1 << LAYER_BITS) - 1)
MAX_CHUNK_PARCELS = (1 << (32 - LAYER_BITS)) - 1


@dataclass
class _Selection:
    """The pixel slots chosen for the parcels on one grid."""

    parcel: np.ndarray  # (M,) local parcel index
    flat: np.ndarray  # (M,) row * width + col on the grid
    slot: np.ndarray  # (M,) pixel slot 0..S-1
    counts: np.ndarray  # (n,) pixels covered by each parcel on the grid
    shared: np.ndarray  # (n,) bool: rasterised on its own, near pixels that parcels share


def _parcel_pixels(geom, grid: Grid, bounds: np.ndarray, block: int) -> np.ndarray:
    """Flat indices of the pixel centres ``geom`` covers on ``grid`` (rasterised on its own)."""
    from rasterio.features import rasterize
    from rasterio.windows import Window
    from rasterio.windows import transform as window_transform

    c_lo, c_hi, r_lo, r_hi = (int(v) for v in bounds)
    c_lo, r_lo = max(c_lo, 0), max(r_lo, 0)
    c_hi, r_hi = min(c_hi, grid.width), min(r_hi, grid.height)
    found = []
    for r0 in range(r_lo, r_hi, block):
        h = min(block, r_hi - r0)
        for c0 in range(c_lo, c_hi, block):
            w = min(block, c_hi - c0)
            burnt = rasterize([(geom, 1)], out_shape=(h, w), fill=0, all_touched=False, dtype="uint8",
                              transform=window_transform(Window(c0, r0, w, h), grid.transform))
            nz = np.flatnonzero(burnt)
            found.append((r0 + nz // w).astype(np.int64) * grid.width + (c0 + nz % w))
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _sample_pixels(geoms, active: np.ndarray, grid: Grid, s: int, seed: int, block: int) -> _Selection:
    """Rasterise the parcels window by window and draw up to ``s`` pixels per parcel.

    Pixels are drawn by the smallest seeded hash of their lattice index, which gives the same
    sample whatever the window size, however the parcels are chunked and whichever raster
    extent (a clip or the whole tile) the same pixels are read from.

    In one label image a pixel holds one parcel only, so parcels that overlap (an LPIS layer's
    slivers, a field inside another, the same field twice) would lose the pixels they share.
    Each window also counts how many parcels cover each pixel; the parcels whose extent holds a
    pixel covered twice are rasterised one by one instead (``_Selection.shared``).
    """
    from rasterio.enums import MergeAlg
    from rasterio.features import rasterize
    from rasterio.windows import Window
    from rasterio.windows import transform as window_transform

    t = grid.transform
    if t.b != 0 or t.d != 0:
        raise SceneError("Rotated scene grids are not supported; warp the scenes to a north-up grid first.")
    n = len(geoms)
    if n > MAX_CHUNK_PARCELS:
        raise ExtractionError(f"A chunk holds at most {MAX_CHUNK_PARCELS:,} parcels; give a smaller chunk size.")
    bounds = np.full((n, 4), np.nan)
    idx_active = np.flatnonzero(active)
    if len(idx_active):
        bounds[idx_active] = geoms.iloc[idx_active].bounds.to_numpy()
    c_lo = np.floor((bounds[:, 0] - t.c) / t.a)
    c_hi = np.ceil((bounds[:, 2] - t.c) / t.a)
    r_lo = np.floor((bounds[:, 3] - t.f) / t.e)
    r_hi = np.ceil((bounds[:, 1] - t.f) / t.e)
    with np.errstate(invalid="ignore"):
        on_grid = active & (c_hi > 0) & (c_lo < grid.width) & (r_hi > 0) & (r_lo < grid.height)
    counts = np.zeros(n, dtype=np.int64)
    shared = np.zeros(n, dtype=bool)
    geom_list = list(geoms)  # pandas .iloc per shape costs more than rasterising small parcels
    kept = []
    for r0 in range(0, grid.height, block):
        h = min(block, grid.height - r0)
        in_rows = on_grid & (r_hi > r0) & (r_lo < r0 + h)
        if not in_rows.any():
            continue
        for c0 in range(0, grid.width, block):
            w = min(block, grid.width - c0)
            sel = np.flatnonzero(in_rows & (c_hi > c0) & (c_lo < c0 + w))
            if len(sel) == 0:
                continue
            # One pass gives both the parcel and how many parcels cover each pixel: the burnt
            # values, (parcel + 1) << LAYER_BITS | 1 each, add up.
            shapes = ((geom_list[i], (int(i) + 1) << LAYER_BITS | 1) for i in sel)
            burnt = rasterize(shapes, out_shape=(h, w), transform=window_transform(Window(c0, r0, w, h), t), fill=0,
                              all_touched=False, dtype="uint32", merge_alg=MergeAlg.add).ravel()
            layers = burnt & LAYER_MASK
            if (layers > 1).any():
                twice = (layers > 1).reshape(h, w)
                shared[sel[_extent_holds(twice, c_lo[sel] - c0, c_hi[sel] - c0, r_lo[sel] - r0, r_hi[sel] - r0)]] = True
            nz = np.flatnonzero(layers == 1)
            if len(nz) == 0:
                continue
            parcel = (burnt[nz] >> LAYER_BITS).astype(np.int32) - 1
            flat = (r0 + nz // w).astype(np.int64) * grid.width + (c0 + nz % w)
            counts += np.bincount(parcel, minlength=n)
            p, k, f, _ = _keep_smallest(parcel, _hash64(_lattice_index(flat, grid), seed), flat, s)
            kept.append((p, k, f))
    if shared.any():
        kept = [(p[~shared[p]], k[~shared[p]], f[~shared[p]]) for p, k, f in kept]
        for i in np.flatnonzero(shared):
            flat = _parcel_pixels(geom_list[i], grid, np.array([c_lo[i], c_hi[i], r_lo[i], r_hi[i]]), block)
            counts[i] = len(flat)
            parcel = np.full(len(flat), i, dtype=np.int64)
            kept.append(_keep_smallest(parcel, _hash64(_lattice_index(flat, grid), seed), flat, s)[:3])
    if kept:
        p, k, f = (np.concatenate(a) for a in zip(*kept))
        parcel, _, flat, slot = _keep_smallest(p, k, f, s)
    else:
        parcel = flat = slot = np.zeros(0, dtype=np.int64)

    # Parcels that cover no pixel centre (smaller than a pixel, or thin) get the pixel under
    # a point inside them, so that small fields are still classified.
    tiny = np.flatnonzero(on_grid & (counts == 0))
    if len(tiny):
        pts = geoms.iloc[tiny].representative_point()
        col = np.floor((pts.x.to_numpy() - t.c) / t.a).astype(np.int64)
        row = np.floor((pts.y.to_numpy() - t.f) / t.e).astype(np.int64)
        inside = (col >= 0) & (col < grid.width) & (row >= 0) & (row < grid.height)
        tiny, col, row = tiny[inside], col[inside], row[inside]
        counts[tiny] = 1
        parcel = np.r_[parcel, tiny]
        flat = np.r_[flat, row * grid.width + col]
        slot = np.r_[slot, np.zeros(len(tiny), dtype=np.int64)]
    return _Selection(parcel.astype(np.int64), flat.astype(np.int64), slot.astype(np.int64), counts, shared)


def _extent_holds(mask: np.ndarray, c_lo: np.ndarray, c_hi: np.ndarray, r_lo: np.ndarray,
                  r_hi: np.ndarray) -> np.ndarray:
    """``(m,)`` bool: which of m pixel extents (columns ``c_lo:c_hi``, rows ``r_lo:r_hi``, clipped
    to the window) hold a True of the window's ``mask (h, w)``, by a summed-area table."""
    h, w = mask.shape
    table = np.zeros((h + 1, w + 1), dtype=np.int64)
    table[1:, 1:] = mask.cumsum(axis=0).cumsum(axis=1)
    c0, c1 = np.clip(c_lo, 0, w).astype(np.int64), np.clip(c_hi, 0, w).astype(np.int64)
    r0, r1 = np.clip(r_lo, 0, h).astype(np.int64), np.clip(r_hi, 0, h).astype(np.int64)
    return (table[r1, c1] - table[r0, c1] - table[r1, c0] + table[r0, c0]) > 0


def _windows_of(flat: np.ndarray, grid: Grid, block: int):
    """Group pixel indices by reading window: ``[(window, positions, rows, cols)]``.

    Each window is the block cut down to the bounding box of its pixels, so that a chunk
    covering a strip of the scene decodes only the file tiles under that strip.
    """
    from rasterio.windows import Window

    if len(flat) == 0:
        return []
    rows, cols = flat // grid.width, flat % grid.width
    nbc = math.ceil(grid.width / block)
    wid = (rows // block) * nbc + cols // block
    order = np.argsort(wid, kind="stable")
    wid_sorted = wid[order]
    starts = np.r_[0, np.flatnonzero(np.diff(wid_sorted)) + 1]
    ends = np.r_[starts[1:], len(order)]
    out = []
    for a, b in zip(starts, ends):
        pos = order[a:b]
        r, c = rows[pos], cols[pos]
        r0, c0 = int(r.min()), int(c.min())
        window = Window(c0, r0, int(c.max()) - c0 + 1, int(r.max()) - r0 + 1)
        out.append((window, pos, r - r0, c - c0))
    return out


def _gdd_for_parcels(table: ParcelTable, idx: np.ndarray, weather: Any, dates: np.ndarray,
                     settings: ExtractionSettings) -> tuple[np.ndarray, np.ndarray]:
    """GDD ``(n, T)`` at the acquisition dates and ``(n,)`` bool where the weather was usable.

    A weather problem of some parcels only (a coastal parcel far from any land cell, a long gap
    in one cell's record) marks those parcels; one of the file as a whole (days not covered,
    variables missing) raises ``WeatherError``.
    """
    from .thermal.gdd import gdd_at_points
    from .thermal.weather import DailyTemperature

    n = len(idx)
    if n == 0:
        return np.zeros((0, len(dates)), dtype=np.float32), np.zeros(0, dtype=bool)
    xs = ys = None
    if isinstance(weather, DailyTemperature):
        if weather.tmin.shape[0] != len(table):
            raise WeatherError(
                f"The daily temperatures hold {weather.tmin.shape[0]} series but the layer has "
                f"{len(table)} parcels; read them for the same parcels."
            )
        weather = DailyTemperature(weather.dates, weather.tmin[idx], weather.tmax[idx], weather.source)
    else:
        pts = table.geometry.iloc[idx].representative_point()
        xs, ys = pts.x.to_numpy(), pts.y.to_numpy()
    gdd = gdd_at_points(weather, xs, ys, table.geometry.crs, dates, season_start=settings.season_start,
                        t_base=settings.t_base, t_cap=settings.t_cap, method=settings.gdd_method,
                        parcel_ids=table.parcel_ids[idx], **settings.weather_options)
    ok = np.isfinite(gdd).all(axis=1)
    return np.where(ok[:, None], gdd, 0.0).astype(np.float32), ok


DENSE_BYTES = 64 * 1024 * 1024
"""Largest ``(n, T, C, S)`` pixel array built at a time from a chunk's compact buffers."""


@dataclass
class _ChunkPixels:
    """The pixels of a chunk's parcels, stored compactly: parcel ``i`` owns the rows
    ``offsets[i]:offsets[i + 1]`` of ``values`` and ``valid``, one per pixel slot it has, so
    memory follows the pixels parcels really cover (two for a tiny field, up to S for a large
    one) rather than S per parcel."""

    values: np.ndarray  # (N, T, C) uint16
    valid: np.ndarray  # (N, T) bool
    offsets: np.ndarray  # (n + 1,) int64
    date_mask: np.ndarray  # (n, T) bool
    gdd: np.ndarray  # (n, T) float32
    status: np.ndarray  # (n,) str
    idx: np.ndarray  # (n,) rows of the table

    @property
    def slots(self) -> np.ndarray:
        return np.diff(self.offsets)

    def dense(self, rows: np.ndarray, slots: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
        """``pixels (m, T, C, S)`` and ``pixel_mask (m, T, S)`` of the chunk's parcels ``rows``,
        S the largest slot count among them (or ``slots``)."""
        count = self.slots[rows]
        s = int(slots if slots is not None else max(1, int(count.max()) if len(rows) else 1))
        t, c = self.values.shape[1], self.values.shape[2]
        pixels = np.zeros((len(rows), t, c, s), dtype=np.uint16)
        mask = np.zeros((len(rows), t, s), dtype=bool)
        if count.sum():
            local = np.repeat(np.arange(len(rows)), count)
            slot = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
            source = np.repeat(self.offsets[rows], count) + slot
            pixels[local, :, :, slot] = self.values[source]
            mask[local, :, slot] = self.valid[source]
        return pixels, mask


def _pixel_sets(chunk: _ChunkPixels, rows: np.ndarray, table: ParcelTable, dates: np.ndarray,
                settings: ExtractionSettings, classes: Sequence[str], meta: dict[str, Any],
                slots: Optional[int] = None) -> PixelSets:
    """The ``PixelSets`` of the chunk's parcels ``rows``."""
    from .thermal.gdd import day_of_season

    pixels, pixel_mask = chunk.dense(rows, slots)
    idx = chunk.idx[rows]
    return PixelSets(
        pixels=pixels,
        pixel_mask=pixel_mask,
        date_mask=chunk.date_mask[rows] & (chunk.status[rows] == STATUS_OK)[:, None],
        gdd=chunk.gdd[rows],
        dates=dates,
        day_of_season=np.asarray(day_of_season(dates, settings.season_start), dtype=np.float32),
        parcel_ids=table.parcel_ids[idx],
        status=chunk.status[rows].astype(str),
        labels=table.labels[idx],
        blocks=table.blocks[idx],
        classes=tuple(classes),
        bands=S2_BANDS,
        meta=meta,
    )


def _slot_groups(slots: np.ndarray, t_count: int, fixed: Optional[int]) -> list[np.ndarray]:
    """Chunk rows in groups whose dense pixel arrays stay within ``DENSE_BYTES``; rows are
    grouped by slot count, so a group of tiny parcels is built with few slots."""
    order = np.argsort(slots, kind="stable")
    per_slot = t_count * len(S2_BANDS) * 2
    groups, start = [], 0
    while start < len(order):
        stop = start + 1
        while stop < len(order):
            s = fixed or max(1, int(slots[order[stop]]))
            if (stop - start + 1) * s * per_slot > DENSE_BYTES:
                break
            stop += 1
        groups.append(np.sort(order[start:stop]))
        start = stop
    return groups


def _extract_chunk(table: ParcelTable, idx: np.ndarray, scenes: list[Scene], weather: Any,
                   settings: ExtractionSettings, classes: Sequence[str], meta: dict[str, Any],
                   progress: Optional[Progress]) -> PixelSets:
    """Pixel sets of the parcels ``idx`` of ``table`` (in that order), ``max_pixels`` slots each."""
    chunk = _read_chunk(table, idx, scenes, weather, settings, progress)
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    return _pixel_sets(chunk, np.arange(len(idx)), table, dates, settings, classes, meta, settings.max_pixels)


def _read_chunk(table: ParcelTable, idx: np.ndarray, scenes: list[Scene], weather: Any,
                settings: ExtractionSettings, progress: Optional[Progress],
                stats: Optional[dict[str, float]] = None) -> _ChunkPixels:
    """Read the pixels, masks and GDD of the parcels ``idx`` of ``table`` into compact buffers.

    ``stats``, when given, receives what the chunk cost: ``windows`` read, ``window_pixels``
    decoded (per band), ``read_cpu_s`` spent decoding and converting them and ``cpu_s`` in all.
    """
    progress = progress or Progress()
    cpu_start = time.process_time()
    read_cpu = 0.0
    n_windows = window_pixels = 0
    n, t_count, c_count, s = len(idx), len(scenes), len(S2_BANDS), settings.max_pixels
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    status = table.status[idx].copy()
    active = status == ""
    geoms = table.geometry.iloc[idx].reset_index(drop=True)

    grids: list[Grid] = []
    for sc in scenes:
        for g in sc.grids:
            if g not in grids:
                grids.append(g)
    projected: dict[str, Any] = {}
    selections: list[_Selection] = []
    for k, grid in enumerate(grids):
        crs_key = grid.crs.to_wkt()
        if crs_key not in projected:
            projected[crs_key] = geoms.to_crs(crs_key)
        selections.append(_sample_pixels(projected[crs_key], active, grid, s, settings.seed, settings.block_size))
        progress(0.1 * (k + 1) / len(grids))

    # Each parcel is read first from the grid that covers most of it (tiles overlap at their
    # edges); where that grid has no product on a date, or no data over the parcel (outside
    # the swath, a tile not downloaded), the other grids that cover it fill the empty slots.
    shared = np.logical_or.reduce([sel.shared for sel in selections]) if selections else np.zeros(n, dtype=bool)
    if shared.any():
        log.info("%d parcels of %s overlap others or lie next to overlaps; each is given every pixel it covers, "
                 "shared ones included: %s", int(shared.sum()), table.source, _some(table.parcel_ids[idx[shared]]))
    counts = np.stack([sel.counts for sel in selections]) if selections else np.zeros((1, n), dtype=np.int64)
    preference = np.argsort(-counts, axis=0, kind="stable")  # (G, n) grids, most covering first
    rank = np.empty_like(preference)
    rank[preference, np.arange(n)[None, :]] = np.arange(len(counts))[:, None]
    covered = counts.max(axis=0)
    status[active & (covered == 0)] = STATUS_OUTSIDE
    status[active & (covered > 0) & (covered < settings.min_pixels)] = STATUS_TOO_SMALL
    readable = status == ""
    n_slots = np.where(readable, np.minimum(covered, s), 0)
    offsets = np.r_[0, np.cumsum(n_slots)].astype(np.int64)

    passes = []  # per preference rank: per grid (buffer rows, windows)
    for r in range(len(selections)):
        per_grid = []
        for k, sel in enumerate(selections):
            keep = readable[sel.parcel] & (rank[k, sel.parcel] == r)
            position = offsets[sel.parcel[keep]] + sel.slot[keep]  # row in the compact buffers
            per_grid.append((position, _windows_of(sel.flat[keep], grids[k], settings.block_size)))
        passes.append(per_grid)

    total = int(offsets[-1])
    pixels = np.zeros((total, t_count, c_count), dtype=np.uint16)
    pixel_mask = np.zeros((total, t_count), dtype=bool)
    read_progress = progress.sub(0.1, 0.9)
    unreadable = set()  # products (STAC items) that could not be fetched whole: never half-used
    if passes and any(p.fetch_first for sc in scenes for p in sc.products):
        windows_by_grid = [[w for per_grid in passes for w, *_ in per_grid[k][1]] for k in range(len(grids))]
        unreadable = prefetch_chunk(scenes, grids, windows_by_grid, progress.sub(0.1, 0.6))
        read_progress = progress.sub(0.6, 0.9)
    # Scenes are read on as many threads as decoding may use (one per Dask worker); each
    # thread fills its own date's column of the buffers. One scene alone: GDAL's threads.
    threads = min(scene_threads(scenes), t_count)
    # Several scenes at once: each decodes on its own thread, timed by that thread's clock.
    gdal_threads, clock = (1, time.thread_time) if threads > 1 else (None, time.process_time)

    odd = np.zeros((total, t_count), dtype=bool)  # values that are no reflectance, by slot and date
    seen: list[dict[str, dict[str, int]]] = [{} for _ in range(t_count)]  # one per date: no thread shares one

    def read(t: int) -> tuple[int, int, float]:
        with decoding_threads(gdal_threads):
            return _read_scene(t, scenes[t], passes, grids, unreadable, pixels, pixel_mask, settings, clock,
                               odd, seen[t], progress.check)

    with contextlib.closing(_in_threads(read, t_count, threads)) as results:
        for t, (windows, decoded, cpu) in enumerate(results):
            n_windows, window_pixels, read_cpu = n_windows + windows, window_pixels + decoded, read_cpu + cpu
            read_progress((t + 1) / max(t_count, 1))
    odd &= ~pixel_mask  # a slot another product filled holds a clear value

    valid_count = np.zeros((n, t_count), dtype=np.int64)
    has = np.flatnonzero(n_slots > 0)
    if len(has):
        valid_count[has] = np.add.reduceat(pixel_mask, offsets[has], axis=0, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = valid_count / np.maximum(n_slots, 1)[:, None]
    date_mask = readable[:, None] & (valid_count > 0) & (fraction >= settings.min_valid_fraction)
    owner_dates = date_mask[np.repeat(np.arange(n), n_slots)]
    pixel_mask &= owner_dates
    pixels[~owner_dates] = 0
    del owner_dates
    status[readable & ~date_mask.any(axis=1)] = STATUS_NO_CLEAR_DATE
    _say_values(table, idx, odd, offsets, n_slots, seen, status)

    progress.check()
    gdd = np.zeros((n, t_count), dtype=np.float32)
    need = np.flatnonzero(status == "")
    if len(need) and weather is not None:
        g, ok = _gdd_for_parcels(table, idx[need], weather, dates, settings)
        gdd[need] = g
        status[need[~ok]] = STATUS_NO_WEATHER
    elif len(need):
        status[need] = STATUS_NO_WEATHER
    progress(1.0)
    status[status == ""] = STATUS_OK
    if stats is not None:
        stats.update(windows=n_windows, window_pixels=window_pixels, read_cpu_s=read_cpu,
                     cpu_s=time.process_time() - cpu_start, parcel_dates=n * t_count)
    return _ChunkPixels(pixels, pixel_mask, offsets, date_mask, gdd, status.astype(str), np.asarray(idx))


def scene_threads(scenes: Sequence[Scene]) -> int:
    """Scenes a chunk reads at once: :func:`~thermocrop.core.scenes.product.decode_threads` as a
    number (``ALL_CPUS``: every CPU), one where a product is read over the network (its
    reader keeps fetched blocks in one cache)."""
    if any(p.fetch_first for sc in scenes for p in sc.products):
        return 1
    value = decode_threads()
    if value.upper() == "ALL_CPUS":
        return usable_cpus()
    try:
        return max(1, int(value))
    except ValueError:  # GDAL reads a value it does not understand as one thread
        return 1


def _in_threads(function, count: int, threads: int):
    """``function(0) .. function(count - 1)``, their results yielded in that order, computed on
    up to ``threads`` threads; where the caller stops early (an error, cancellation), the calls
    not yet started are dropped and the running ones finish before this returns."""
    if threads <= 1 or count <= 1:
        for i in range(count):
            yield function(i)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(threads, count), thread_name_prefix="thermocrop-read") as pool:
        futures = [pool.submit(function, i) for i in range(count)]
        try:
            for future in futures:
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


def _not_reflectance(dn: np.ndarray, reader: Any, rr: np.ndarray, cc: np.ndarray, offset: int,
                     seen: dict[str, int]) -> np.ndarray:
    """``(N,)`` bool: sampled pixels whose values are no reflectance: saturated (65535, as
    Sentinel-2 marks it) or, in the file, NaN, infinite, negative or above 65535 (see
    ``ProductReader.not_reflectance``). Counts them into ``seen`` by kind, and the pixels below
    the baseline offset, whose negative reflectance is read as 0."""
    bad = (dn == SATURATED_DN).any(axis=0)
    if bad.any():
        seen["saturated (65535)"] = seen.get("saturated (65535)", 0) + int(bad.sum())
    in_file = getattr(reader, "not_reflectance", None)  # remote readers fetch uint16 only
    if in_file is not None:
        code = np.where(bad, 0, in_file[rr, cc])
        for k, count in enumerate(np.bincount(code, minlength=len(NOT_DIGITAL_NUMBERS) + 1)[1:]):
            if count:
                seen[NOT_DIGITAL_NUMBERS[k]] = seen.get(NOT_DIGITAL_NUMBERS[k], 0) + int(count)
        bad |= code > 0
    if offset < 0:
        low = ((dn > 0) & (dn < -offset)).any(axis=0) & ~bad
        if low.any():
            seen[NEGATIVE_REFLECTANCE] = seen.get(NEGATIVE_REFLECTANCE, 0) + int(low.sum())
    return bad


def _named(product: Any) -> str:
    """A product and its file (or folder) for messages."""
    files = list(product.files)
    if len(files) == 1:
        return f"{product.name} ({files[0]})"
    return f"{product.name} ({len(files)} files in {Path(files[0]).parent})" if files else product.name


def _say_values(table: ParcelTable, idx: np.ndarray, odd: np.ndarray, offsets: np.ndarray, n_slots: np.ndarray,
                seen: Sequence[dict[str, dict[str, int]]], status: np.ndarray) -> None:
    """Log the values that are no reflectance, by product, and give the parcels most of whose
    pixel-dates held them the status ``invalid_values``.

    Args:
        odd: ``(N, T)`` bool, slots and dates whose value was no reflectance and that no other
            product filled.
        seen: per date, product name -> kind -> count (see :func:`_not_reflectance`).
        status: ``(n,)`` statuses of the chunk's parcels, changed in place.
    """
    by_product: dict[str, dict[str, int]] = {}
    for per_date in seen:
        for name, kinds in per_date.items():
            mine = by_product.setdefault(name, {})
            for kind, count in kinds.items():
                mine[kind] = mine.get(kind, 0) + count
    for name, kinds in sorted(by_product.items()):
        said = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()) if kind != NEGATIVE_REFLECTANCE)
        if said:
            log.warning("Product %s: pixels under the parcels hold values that are no reflectance (%s); they "
                        "are read as no data", name, said)
        if kinds.get(NEGATIVE_REFLECTANCE):
            log.info("Product %s: %d pixels under the parcels lie below the baseline offset (%s); read as "
                     "reflectance 0", name, kinds[NEGATIVE_REFLECTANCE], NEGATIVE_REFLECTANCE)
    has = np.flatnonzero(n_slots > 0)
    if not odd.any() or len(has) == 0:
        return
    count = np.zeros(len(n_slots), dtype=np.int64)
    count[has] = np.add.reduceat(odd.sum(axis=1), offsets[has])
    share = count / np.maximum(n_slots * odd.shape[1], 1)
    hit = np.flatnonzero((share > INVALID_VALUES_SHARE) & np.isin(status, ("", STATUS_NO_CLEAR_DATE)))
    status[hit] = STATUS_INVALID_VALUES
    affected = np.flatnonzero(count > 0)
    log.warning("%d parcels of %s have pixel values that are no reflectance on some dates (read as no data); %d of "
                "them on more than %d%% of their pixel-dates get status %s: %s", len(affected), table.source,
                len(hit), round(INVALID_VALUES_SHARE * 100), STATUS_INVALID_VALUES,
                _some([f"{table.parcel_ids[idx[i]]} ({count[i]} of {n_slots[i] * odd.shape[1]})" for i in affected]))


def _read_scene(t: int, scene: Scene, passes: list, grids: list[Grid], unreadable: set, pixels: np.ndarray,
                pixel_mask: np.ndarray, settings: ExtractionSettings,
                clock=time.process_time, odd: Optional[np.ndarray] = None,
                seen: Optional[dict[str, dict[str, int]]] = None, check=lambda: None) -> tuple[int, int, float]:
    """Fill date ``t`` of a chunk's buffers from ``scene``; returns the windows read, the pixels
    decoded and the CPU seconds (by ``clock``) spent decoding and converting them.

    ``odd`` (like ``pixel_mask``) receives the slots whose value was no reflectance, ``seen``
    their counts by product (see :func:`_not_reflectance`). ``check`` raises ``CancelledError``
    once the user asked to stop: it is asked before every window, so that a cancel waits for one
    window per thread, not for whole scenes."""
    n_windows = window_pixels = 0
    read_cpu = 0.0
    for per_grid in passes:
        for k, grid in enumerate(grids):
            position, windows = per_grid[k]
            products = [p for p in scene.products if p.grid == grid and id(p) not in unreadable]
            if len(position) == 0 or not products:
                continue
            for product in products:
                with product.open() as reader:
                    for window, pos, rr, cc in windows:
                        if pixel_mask[position[pos], t].all():
                            continue
                        check()
                        read_start = clock()
                        dn, scl = reader.read(window)
                        values, valid = to_reflectance(dn[:, rr, cc], product.offset,
                                                       None if scl is None else scl[rr, cc], settings.scl_invalid)
                        read_cpu += clock() - read_start
                        n_windows += 1
                        window_pixels += int(window.width) * int(window.height)
                        if scl is None and product.level == "L2A" and settings.missing_scl == "bands":
                            valid &= ~bright_cloud_mask(values)
                        if seen is not None:
                            bad = _not_reflectance(dn[:, rr, cc], reader, rr, cc, product.offset,
                                                   seen.setdefault(_named(product), {}))
                            if bad.any():
                                valid &= ~bad
                                odd[position[pos][bad], t] = True
                        # Earlier products and preferred grids win: fill only empty slots.
                        fill = valid & ~pixel_mask[position[pos], t]
                        p_f = position[pos][fill]
                        pixels[p_f, t, :] = values[:, fill].T
                        pixel_mask[p_f, t] = True
    return n_windows, window_pixels, read_cpu


def _settings(max_pixels: int, seed: int, min_valid_fraction: float, min_pixels: int, season_start: Any,
              t_base: float, t_cap: float, gdd_method: str, scl_invalid: Sequence[int],
              weather_options: Optional[dict[str, Any]], missing_scl: str = "warn") -> ExtractionSettings:
    from .thermal.gdd import SeasonStart

    if max_pixels < 1:
        raise InputError(f"max_pixels must be at least 1, got {max_pixels}.")
    if not 0.0 <= min_valid_fraction <= 1.0:
        raise InputError(f"min_valid_fraction must lie in 0..1, got {min_valid_fraction}.")
    if season_start is None:
        season_start = SeasonStart()
    elif isinstance(season_start, str):
        season_start = SeasonStart.parse(season_start)
    return ExtractionSettings(max_pixels=max_pixels, seed=seed, min_valid_fraction=min_valid_fraction,
                              min_pixels=min_pixels, scl_invalid=tuple(scl_invalid), season_start=season_start,
                              t_base=t_base, t_cap=t_cap, gdd_method=gdd_method,
                              weather_options=dict(weather_options or {}), missing_scl=missing_scl)


def _meta(table: ParcelTable, scenes: list[Scene], weather: Any, settings: ExtractionSettings,
          label_field: Optional[str]) -> dict[str, Any]:
    # Absolute paths: a dataset is opened from other working directories than it was made in.
    return {
        "parcels": os.path.abspath(table.source) if os.path.exists(table.source) else table.source,
        "scenes": [os.path.abspath(f) for sc in scenes for f in sc.files],
        "levels": sorted({sc.level for sc in scenes if sc.level}),
        "weather": (os.path.abspath(weather) if isinstance(weather, (str, os.PathLike))
                    else getattr(weather, "source", None)),
        "label_field": label_field,
        **({"labels": table.class_summary} if table.class_summary else {}),
        "max_pixels": settings.max_pixels,
        "seed": settings.seed,
        "min_valid_fraction": settings.min_valid_fraction,
        "season_start": str(settings.season_start),
        "t_base": settings.t_base,
        "t_cap": settings.t_cap,
        "gdd_method": settings.gdd_method,
        "scl_invalid": list(settings.scl_invalid),
        "missing_scl": settings.missing_scl,
    }


def _tiles_of(table: ParcelTable, usable: np.ndarray, grids: Sequence[Grid]) -> np.ndarray:
    """``(len(usable),)`` index of the first grid whose footprint holds each parcel's bounding-box
    centre; ``len(grids)`` for parcels on none."""
    from rasterio.warp import transform_bounds

    bounds = table.geometry.iloc[usable].bounds
    cx = ((bounds["minx"] + bounds["maxx"]) / 2).to_numpy()
    cy = ((bounds["miny"] + bounds["maxy"]) / 2).to_numpy()
    tile = np.full(len(usable), len(grids), dtype=np.int64)
    for k in reversed(range(len(grids))):  # the first grid wins where footprints overlap
        t, g = grids[k].transform, grids[k]
        left, right = sorted((t.c, t.c + t.a * g.width))
        bottom, top = sorted((t.f, t.f + t.e * g.height))
        x0, y0, x1, y1 = transform_bounds(g.crs, table.geometry.crs, left, bottom, right, top)
        tile[(cx >= x0) & (cx <= x1) & (cy >= y0) & (cy <= y1)] = k
    return tile


def spatial_chunks(table: ParcelTable, chunk_size: int, grids: Sequence[Grid] = ()) -> list[np.ndarray]:
    """Split the parcels into chunks of nearby parcels: by tile, then north-to-south strips.

    Nearby parcels share reading windows, so chunking in strips keeps the total decoding
    close to one pass over each scene; with several scene grids (tiles), a chunk holds the
    parcels of one tile only, so that it reads the windows of that tile alone. Each chunk's
    indices are sorted (layer order). The chunks depend only on the parcels, the grids and
    ``chunk_size``, so every run (one process or partitioned) makes the same ones.
    """
    n = len(table)
    if n <= chunk_size:
        return [np.arange(n)]
    y = np.zeros(n)
    tile = np.zeros(n, dtype=np.int64)
    usable = np.flatnonzero(table.status == "")
    if len(usable):
        y[usable] = table.geometry.iloc[usable].bounds["maxy"].to_numpy()
        if len(grids) > 1:
            tile[usable] = _tiles_of(table, usable, grids)
    chunks = []
    for k in np.unique(tile):
        members = np.flatnonzero(tile == k)
        order = members[np.argsort(-y[members], kind="stable")]
        chunks += [np.sort(order[i:i + chunk_size]) for i in range(0, len(order), chunk_size)]
    return chunks


def scene_grids(scenes: Sequence[Scene]) -> list[Grid]:
    """The distinct grids (tiles) of ``scenes``, in the order they first appear."""
    grids: list[Grid] = []
    for sc in scenes:
        for g in sc.grids:
            if g not in grids:
                grids.append(g)
    return grids


def extract_pixel_sets(
    parcels: Union[ParcelSource, ParcelTable],
    scenes: SceneSource,
    weather: Any,
    *,
    max_pixels: int = 64,
    seed: int = 0,
    id_field: Optional[str] = None,
    label_field: Optional[str] = None,
    classes: Optional[Sequence[str]] = None,
    class_map: Any = None,
    min_parcels: int = 0,
    block_field: Optional[str] = "block",
    season_start: Any = None,
    t_base: float = 0.0,
    t_cap: float = 30.0,
    gdd_method: str = "paper",
    min_valid_fraction: float = 0.5,
    min_pixels: int = 1,
    scl_invalid: Sequence[int] = SCL_INVALID,
    weather_options: Optional[dict[str, Any]] = None,
    missing_scl: str = "warn",
    progress: Optional[Progress] = None,
) -> PixelSets:
    """Extract per-parcel pixel sets in memory (for a whole layer at once).

    Args:
        parcels: vector file, GeoDataFrame (any CRS) or a prepared :class:`ParcelTable`.
        scenes: a scene folder / glob / list of files, or scenes from :func:`find_scenes`.
        weather: a temperature file for :func:`core.weather.read_daily_temperature` or a
            ``DailyTemperature`` with one series per parcel of the layer.
        max_pixels: S, pixel slots per parcel (all pixels when the parcel has fewer).
        seed: seed of the pixel sampling.
        id_field, label_field, block_field, classes, class_map, min_parcels: see
            :func:`load_parcels` (ignored when ``parcels`` is a ``ParcelTable``).
        season_start: ``SeasonStart`` or its text form (``"01-01"``, ``"09-01/-1"``).
        t_base, t_cap, gdd_method: growing degree day settings.
        min_valid_fraction: a date is kept for a parcel when at least this fraction of its
            sampled pixels is cloud-free and has data.
        min_pixels: parcels covering fewer pixels get status ``too_small``.
        scl_invalid: SCL classes treated as invalid.
        weather_options: extra keyword arguments of ``read_daily_temperature``.
        missing_scl: L2A products without SCL: ``"warn"`` (use them unmasked, say so),
            ``"bands"`` (mask clouds by :func:`core.scenes.bright_cloud_mask`) or ``"refuse"``.
        progress: progress and cancellation.

    Returns:
        :class:`PixelSets` with P = the layer's parcels in layer order, T = all scene dates.
    """
    settings = _settings(max_pixels, seed, min_valid_fraction, min_pixels, season_start, t_base, t_cap,
                         gdd_method, scl_invalid, weather_options, missing_scl)
    table = parcels if isinstance(parcels, ParcelTable) else load_parcels(
        parcels, id_field=id_field, label_field=label_field, classes=classes, block_field=block_field,
        class_map=class_map, min_parcels=min_parcels)
    scene_list = _scene_list(scenes)
    if not scene_list:
        raise SceneError("No scenes were given.")
    select_season(scene_list, settings.season_start)  # refuses scenes of several seasons
    _say_missing_scl(scene_list, settings)
    meta = _meta(table, scene_list, weather, settings, label_field)
    return _extract_chunk(table, np.arange(len(table)), scene_list, weather, settings, table.classes, meta,
                          progress)


def _say_missing_scl(scenes: list[Scene], settings: ExtractionSettings) -> Optional[str]:
    """Log what :func:`core.scenes.check_missing_scl` says (it raises when asked to refuse)."""
    note = check_missing_scl(scenes, settings.missing_scl)
    if note:
        log.warning("%s", note)
    return note


def iter_chunks(table: ParcelTable, scenes: list[Scene], weather: Any, settings: ExtractionSettings,
                classes: Sequence[str], meta: dict[str, Any], chunk_size: int,
                progress: Optional[Progress] = None, full_slots: bool = False):
    """Yield ``(indices, PixelSets)`` for the parcels of spatial chunks of at most
    ``chunk_size`` parcels.

    A chunk is read into compact buffers sized by the pixels its parcels cover, then handed
    out in groups of parcels with similar pixel counts, each group's arrays within
    ``DENSE_BYTES``: S is the largest slot count of the group, or ``max_pixels`` with
    ``full_slots`` (as a dataset on disk stores them).
    """
    progress = progress or Progress()
    select_season(scenes, settings.season_start)  # refuses scenes of several seasons
    chunks = spatial_chunks(table, chunk_size, scene_grids(scenes))
    for i, idx in enumerate(chunks):
        yield from chunk_groups(table, idx, scenes, weather, settings, classes, meta,
                                progress.sub(i / len(chunks), (i + 1) / len(chunks)), full_slots)


def chunk_groups(table: ParcelTable, idx: np.ndarray, scenes: list[Scene], weather: Any,
                 settings: ExtractionSettings, classes: Sequence[str], meta: dict[str, Any],
                 progress: Optional[Progress] = None, full_slots: bool = False,
                 stats: Optional[dict[str, float]] = None):
    """Yield ``(indices, PixelSets)`` for the groups of one chunk ``idx`` (see :func:`iter_chunks`).

    A partitioned run (``core.distributed``) calls it for one chunk per task, so that its
    groups, and so every model batch, are those of a one-process run.
    """
    dates = np.array([sc.date for sc in scenes], dtype="datetime64[D]")
    fixed = settings.max_pixels if full_slots else None
    chunk = _read_chunk(table, idx, scenes, weather, settings, progress, stats)
    for rows in _slot_groups(chunk.slots, len(dates), fixed):
        yield idx[rows], _pixel_sets(chunk, rows, table, dates, settings, classes, meta, fixed)
    del chunk


def extract_to_dataset(
    parcels: Union[ParcelSource, ParcelTable],
    scenes: SceneSource,
    weather: Any,
    out: Union[str, os.PathLike],
    *,
    chunk_size: int = 20000,
    overwrite: bool = False,
    max_pixels: int = 64,
    seed: int = 0,
    id_field: Optional[str] = None,
    label_field: Optional[str] = None,
    classes: Optional[Sequence[str]] = None,
    class_map: Any = None,
    min_parcels: int = 0,
    block_field: Optional[str] = "block",
    season_start: Any = None,
    t_base: float = 0.0,
    t_cap: float = 30.0,
    gdd_method: str = "paper",
    min_valid_fraction: float = 0.5,
    min_pixels: int = 1,
    scl_invalid: Sequence[int] = SCL_INVALID,
    weather_options: Optional[dict[str, Any]] = None,
    missing_scl: str = "warn",
    progress: Optional[Progress] = None,
) -> Path:
    """Extract pixel sets chunk by chunk straight into a dataset folder (bounded memory).

    Arguments as :func:`extract_pixel_sets`, plus ``out`` (the dataset folder), ``chunk_size``
    (parcels held in memory at once: 20,000 x 60 dates x 64 pixels is about 1.5 GB) and
    ``overwrite``. Parcels keep their layer order. A failed or cancelled run writes nothing.

    Returns:
        The dataset folder.
    """
    settings = _settings(max_pixels, seed, min_valid_fraction, min_pixels, season_start, t_base, t_cap,
                         gdd_method, scl_invalid, weather_options, missing_scl)
    table = parcels if isinstance(parcels, ParcelTable) else load_parcels(
        parcels, id_field=id_field, label_field=label_field, classes=classes, block_field=block_field,
        class_map=class_map, min_parcels=min_parcels)
    scene_list = _scene_list(scenes)
    if not scene_list:
        raise SceneError("No scenes were given.")
    _say_missing_scl(scene_list, settings)
    if len(table) == 0:
        raise ExtractionError(f"Parcel layer {table.source} holds no parcels.")
    meta = _meta(table, scene_list, weather, settings, label_field)
    dates = np.array([sc.date for sc in scene_list], dtype="datetime64[D]")
    from .thermal.gdd import day_of_season

    writer = DatasetWriter(
        out,
        n_parcels=len(table),
        dates=dates,
        day_of_season=np.asarray(day_of_season(dates, settings.season_start), dtype=np.float32),
        max_pixels=settings.max_pixels,
        classes=table.classes,
        meta=meta,
        overwrite=overwrite,
        parcel_id_width=max(8, max(len(x) for x in table.parcel_ids)),
    )
    status = np.empty(len(table), dtype=object)
    with writer:
        for idx, chunk in iter_chunks(table, scene_list, weather, settings, table.classes, meta, chunk_size,
                                      progress, full_slots=True):
            writer.write_rows(idx, chunk)
            status[idx] = chunk.status
        require_usable(status, "extracted", table.source)  # raising here leaves no dataset
    counts = {s: int(n) for s, n in zip(*np.unique(open_status(out), return_counts=True))}
    log.info("Extracted %d parcels into %s: %s", len(table), out, counts)
    return Path(out)


def open_status(path: Union[str, os.PathLike]) -> np.ndarray:
    """The ``(P,)`` status array of a dataset folder."""
    return np.load(Path(path) / "status.npy", mmap_mode="r")
