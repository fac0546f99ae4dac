"""Parcels as extraction reads them: the parcel layer read, its CRS checked and its geometries
repaired (``load_parcels`` -> ``ParcelTable``), and the statuses a parcel ends a run with."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from .classmap import LabelTally, assign_tallied
from .crops import UNKNOWN_CLASS
from .errors import InputError, NoUsableParcelsError
from .io.geoparquet import GeoParquetLayer, is_parquet
from .io.source_layer import default_layer_name, parcel_layer_problem
from .pixel_sets import STATUS_OK
from .quiet_log import QUIET

log = logging.getLogger(__name__)
log.addFilter(QUIET)  # a read a run repeats logs once (core.quiet_log)

STATUS_OUTSIDE = "outside_scenes"
STATUS_TOO_SMALL = "too_small"
STATUS_NO_CLEAR_DATE = "no_clear_date"
STATUS_NO_WEATHER = "no_weather"
STATUS_INVALID_GEOMETRY = "invalid_geometry"
STATUS_INVALID_VALUES = "invalid_values"
STATUSES = (STATUS_OK, STATUS_OUTSIDE, STATUS_TOO_SMALL, STATUS_NO_CLEAR_DATE, STATUS_NO_WEATHER,
            STATUS_INVALID_GEOMETRY, STATUS_INVALID_VALUES)

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


def status_summary(status: Union[Sequence[str], Mapping[str, int]]) -> str:
    """Parcels counted by status (or those counts), most frequent first, each failure with what it
    points to, e.g. ``150 parcels: 150 no_weather (no usable temperatures: ...)``."""
    if isinstance(status, Mapping):
        names, counts = list(status), list(status.values())
    else:
        names, counts = np.unique(np.asarray(status, dtype=str), return_counts=True)
    parts = []
    for name, count in sorted(zip(names, counts), key=lambda nc: (-nc[1], nc[0])):
        advice = STATUS_ADVICE.get(str(name))
        parts.append(f"{count} {name}" + (f" ({advice})" if advice else ""))
    return f"{int(sum(counts))} parcels: {'; '.join(parts)}"


def some_names(names: Sequence[Any], limit: int = 10) -> str:
    """The first ``limit`` names and how many more, e.g. ``a, b, c and 4 more``."""
    shown = ", ".join(str(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def require_usable(status: Union[Sequence[str], Mapping[str, int]], what: str, source: str) -> None:
    """Raise ``NoUsableParcelsError`` when no parcel has the status ``ok``.

    Args:
        status: ``(P,)`` statuses of the run, or the parcels counted by status.
        what: what the run did, e.g. ``"classified"``.
        source: the parcel layer, for the message.
    """
    if isinstance(status, Mapping):
        if not status.get(STATUS_OK, 0):
            raise NoUsableParcelsError(f"No parcel of {source} could be {what}: {status_summary(status)}.")
        return
    status = np.asarray(status, dtype=str)
    if not (status == STATUS_OK).any():
        raise NoUsableParcelsError(f"No parcel of {source} could be {what}: {status_summary(status)}.")



ParcelSource = Union[str, os.PathLike, "geopandas.GeoDataFrame"]  # noqa: F821


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


def labelled_names(classes: Sequence[str], labels: np.ndarray) -> np.ndarray:
    """The class name of every labelled parcel (``labels`` >= 0, indices into ``classes``), in
    order, as text: what a ``ParcelTable``'s or a ``PixelSets``' labels say, to be set against a
    model's classes."""
    codes = np.asarray(labels)
    return np.asarray(classes, dtype=object)[codes[codes >= 0]].astype(str) if len(classes) else np.array([], str)


@dataclass(frozen=True)
class ParcelFields:
    """Which fields of a parcel layer say what (see :func:`load_parcels` for each).

    Attributes:
        id_field: field holding parcel ids; None: ``parcel_id`` when present, else the row number.
        label_field: field holding crop labels; None for unlabelled parcels.
        classes: a fixed class list, or None for the classes found.
        class_map: a ``ClassMap``, a preset name or a class map file, or None.
        min_parcels: classes with fewer labelled parcels become ``unknown``.
        block_field: field holding spatial block numbers, if present.
        unmapped_as: the class of codes ``class_map`` does not map (None: no label).
    """

    id_field: Optional[str] = None
    label_field: Optional[str] = None
    classes: Optional[Sequence[str]] = None
    class_map: Any = None
    min_parcels: int = 0
    block_field: Optional[str] = "block"
    unmapped_as: Optional[str] = UNKNOWN_CLASS


def parcel_blocks(frame: Any, block_field: Optional[str]) -> np.ndarray:
    """``(n,)`` int32 spatial blocks of the parcels of ``frame`` from its ``block_field``; -1 where
    it is empty, everywhere without that field."""
    if block_field and block_field in frame.columns:
        return frame[block_field].fillna(-1).astype(np.int32).to_numpy()
    return np.full(len(frame), -1, dtype=np.int32)


def tallied_classes(tally: LabelTally, fields: ParcelFields,
                    source: str) -> tuple[np.ndarray, tuple[str, ...], dict[str, Any]]:
    """The classes of a layer's labels counted in ``tally`` from ``fields.label_field``, assigned
    with ``fields``' class map, minimum of parcels and class list (``classmap.assign_tallied``).

    Returns:
        ``(K,)`` int16 class index of each code of ``tally.codes`` (-1: unlabelled), the class
        names and what the assignment did (``ParcelTable.class_summary``).
    """
    if tally.codes and all(code is None for code in tally.codes):
        raise InputError(f"{source}: no parcel has a value in the label field {fields.label_field!r} "
                         f"({sum(tally.counts)} parcels, all empty); choose the field that holds the crop labels.")
    assigned = assign_tallied(tally, fields.class_map, min_parcels=fields.min_parcels, classes=fields.classes,
                              source=f"{source} field {fields.label_field!r}", unmapped_as=fields.unmapped_as)
    summary = assigned.summary()
    summary["class_map"] = (None if fields.class_map is None
                            else getattr(fields.class_map, "source", str(fields.class_map)))
    summary["min_parcels"] = int(fields.min_parcels)
    log.info("%s: %d classes from field %r: %s", source, len(assigned.classes), fields.label_field,
             ", ".join(f"{c} ({n})" for c, n in assigned.counts.items()))
    return assigned.labels, assigned.classes, summary


def parcel_table(parcels: Union[ParcelSource, ParcelTable], fields: Optional[ParcelFields] = None) -> ParcelTable:
    """``parcels`` as a ``ParcelTable``: a table as it is, a layer read by :func:`load_parcels`
    with ``fields``."""
    if isinstance(parcels, ParcelTable):
        return parcels
    fields = fields or ParcelFields()
    return load_parcels(parcels, id_field=fields.id_field, label_field=fields.label_field, classes=fields.classes,
                        block_field=fields.block_field, class_map=fields.class_map, min_parcels=fields.min_parcels,
                        unmapped_as=fields.unmapped_as)


class _NullGeometryNoise(logging.Filter):
    """Drops GDAL's complaint about features without geometry (``Pointer 'hGeom' is NULL``),
    which fiona relays as an ERROR per feature: such parcels are handled (status
    ``invalid_geometry``) and counted in one warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Pointer 'hGeom' is NULL" not in record.getMessage()


logging.getLogger("fiona._env").addFilter(_NullGeometryNoise())


def _read_layer(parcels: ParcelSource, layer: Optional[str] = None):
    import geopandas as gpd

    if isinstance(parcels, gpd.GeoDataFrame):  # a layer read elsewhere (QGIS) may carry its name
        return parcels, str(parcels.attrs.get("name") or "GeoDataFrame")
    path = Path(parcels)
    problem = parcel_layer_problem(path, layer)
    if problem:
        raise InputError(problem)
    try:
        if is_parquet(path):
            gdf = GeoParquetLayer(path).read()
            gdf.index = np.arange(len(gdf))
        else:
            gdf = gpd.read_file(path, layer=layer) if layer else gpd.read_file(path)
    except InputError:
        raise
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
    unmapped_as: Optional[str] = UNKNOWN_CLASS,
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
            ``austria``) or a CSV / YAML class map file; codes outside it become ``unmapped_as``.
        min_parcels: classes with fewer labelled parcels (among the selected ones) become ``unknown``.
        unmapped_as: the class of codes the class map does not map; None: they stay unlabelled
            (a reference layer, where ``unknown`` is a class the model predicts).

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
    blocks = parcel_blocks(gdf, block_field)
    rows = np.arange(len(gdf), dtype=np.int64)
    if selected_ids is not None:
        keep = np.isin(ids, np.asarray([str(s) for s in selected_ids]))
        gdf, ids, blocks, rows = gdf[keep], ids[keep], blocks[keep], rows[keep]
    labels = np.full(len(gdf), -1, dtype=np.int16)
    class_list: tuple[str, ...] = tuple(classes) if classes is not None else ()
    summary: dict[str, Any] = {}
    if label_field is not None:
        tally = LabelTally()
        positions = tally.add(gdf[label_field].to_numpy())
        per_code, class_list, summary = tallied_classes(
            tally, ParcelFields(label_field=label_field, classes=classes, class_map=class_map,
                                min_parcels=min_parcels, unmapped_as=unmapped_as), source)
        labels = per_code[positions]
    geometry, ok = repair_geometries(gdf.geometry.reset_index(drop=True))
    status = np.where(ok, "", STATUS_INVALID_GEOMETRY).astype(object)
    if (~ok).any():
        log.warning("%s: %d parcels have unusable geometries (empty, not polygons or unrepairable): %s",
                    source, int((~ok).sum()), list(ids[~ok][:10]))
    return ParcelTable(geometry, ids, labels, blocks, status, source, rows, class_list, summary)
