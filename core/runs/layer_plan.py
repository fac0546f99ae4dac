"""Partitions planned from a parcel layer file without holding its geometries, and each
partition's parcels read back from the file by the worker that computes it.

:func:`plan_layer` reads the layer in batches (OGR's Arrow stream, or GeoParquet row groups),
its geometries as WKB, and keeps only what planning needs: each parcel's position and feature
id, its repaired bounding box and whether it is usable, and a digest of the parcel ids (about 50
bytes a parcel); for an extraction also its label, block and a hash of its id (18 bytes more),
the labels counted batch by batch (``classmap.LabelTally``) and assigned to classes once the
layer is read. A geometry that is already a valid polygon (most of them) is one that
:func:`~thermocrop.core.parcels.repair_geometries` leaves as it is, so its box is taken from the
WKB through OGR without making a shapely geometry; the others (invalid, empty or not polygonal)
are read and repaired as :func:`~thermocrop.core.parcels.load_parcels` reads and repairs them.
The partitions are then the chunks a one-process run makes (``pixel_sampling.chunks_of_bounds``
gives the same as ``spatial_chunks``); a :class:`LayerSlice` names one partition's parcels by
position and feature id, and its :meth:`LayerSlice.table` reads them from the file, so each
worker builds the same ``ParcelTable`` rows a one-process run holds for them.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import numpy as np
import pandas as pd

from ..classmap import LabelTally
from ..errors import InputError
from ..io.gdal_messages import gdal_messages, said
from ..io.geoparquet import GeoParquetLayer, is_parquet
from ..io.source_layer import default_layer_name, parcel_layer_problem
from ..parcels import (
    STATUS_INVALID_GEOMETRY,
    ParcelFields,
    ParcelTable,
    check_crs,
    parcel_blocks,
    repair_geometries,
    tallied_classes,
)
from ..pixel_sampling import chunks_of_bounds

log = logging.getLogger(__name__)

PLAN_BATCH = 4000
"""Features read at a time while planning (GeoParquet: a row group read whole, then taken this
many rows at a time). A batch's WKB and ids are held as Python objects, so a batch is kept well
under the smallest layers the client is measured on: its memory is then the same for every
layer."""

_POLYGONAL = (3, 6)
"""OGR's (flat) geometry types Polygon and MultiPolygon."""


@dataclass
class LayerSlice:
    """One partition's parcels, named for a worker to read them from the layer file itself.

    Attributes:
        source: the layer file; ``layer``: its layer (None: the first).
        rows: ``(M,)`` positions of the parcels in the run's table (as a partition reports them).
        layer_rows: ``(M,)`` positions of the parcels in the layer, sorted.
        fids: ``(M,)`` OGR feature ids of the parcels, or a number: each parcel's position in the
            layer plus that number (a GeoPackage's usual ids, kept as one number); None for
            GeoParquet.
        id_column: the field holding the parcel ids, or None for row numbers.
        id_dtype: the type the id field has over the whole layer, for the same id text.
    """

    source: str
    layer: Optional[str]
    rows: np.ndarray
    layer_rows: np.ndarray
    fids: Union[np.ndarray, int, None]
    id_column: Optional[str]
    id_dtype: Optional[str]
    labels: Optional[np.ndarray] = None
    blocks: Optional[np.ndarray] = None

    def table(self, classes: Sequence[str] = ()) -> ParcelTable:
        """These parcels as a ``ParcelTable``, as ``load_parcels`` would give their rows."""
        frame = _read_rows(self.source, self.layer, self.layer_rows, self.fids,
                           [self.id_column] if self.id_column else [])
        ids = _ids(frame, self.id_column, self.layer_rows, self.id_dtype)
        geometry, ok = repair_geometries(frame.geometry.reset_index(drop=True))
        status = np.where(ok, "", STATUS_INVALID_GEOMETRY).astype(object)
        n = len(ids)
        labels = self.labels if self.labels is not None else np.full(n, -1, dtype=np.int16)
        blocks = self.blocks if self.blocks is not None else np.full(n, -1, dtype=np.int32)
        return ParcelTable(geometry, ids, labels, blocks, status, self.source,
                           np.asarray(self.layer_rows, dtype=np.int64), tuple(classes))


@dataclass
class LayerPlan:
    """What planning kept of a parcel layer (see the module's note).

    Attributes:
        source, layer: the layer file and layer.
        crs: the layer's CRS (a pyproj CRS).
        rows: ``(P,)`` positions in the layer of the parcels of the run (selected ones only).
        fids: ``(P,)`` their OGR feature ids, a number where every id is the parcel's position in
            the layer plus that number, or None for GeoParquet.
        bounds: ``(P, 4)`` float64 bounding boxes of the repaired geometries (NaN where unusable).
        usable: ``(P,)`` bool, False where the geometry is unusable (``invalid_geometry``).
        ids_digest: SHA-256 of the parcel ids joined by newlines, for the run folder.
        id_column, id_dtype: as :class:`LayerSlice`.
        id_width: the length of the longest parcel id.
        attributes: with ``fields`` given to :func:`plan_layer`, each parcel's label and block
            and what the layer's labels gave; None without.
    """

    source: str
    layer: Optional[str]
    crs: Any
    rows: np.ndarray
    fids: Union[np.ndarray, int, None]
    bounds: np.ndarray
    usable: np.ndarray
    ids_digest: str
    id_column: Optional[str]
    id_dtype: Optional[str]
    id_width: int = 0
    attributes: Optional["ParcelAttributes"] = None

    @property
    def classes(self) -> tuple[str, ...]:
        return self.attributes.classes if self.attributes is not None else ()

    @property
    def class_summary(self) -> dict[str, Any]:
        return self.attributes.class_summary if self.attributes is not None else {}

    def __len__(self) -> int:
        return len(self.rows)

    def chunks(self, chunk_size: int, grids: Sequence[Any] = ()) -> list[np.ndarray]:
        """The chunks a one-process run makes of these parcels (positions in the plan)."""
        return chunks_of_bounds(self.bounds, self.usable, self.crs, chunk_size, grids)

    def slice(self, idx: np.ndarray) -> LayerSlice:
        """The parcels at plan positions ``idx`` (sorted) for a worker to read."""
        part = LayerSlice(self.source, self.layer, np.asarray(idx, dtype=np.int64), self.rows[idx],
                          self.fids if not isinstance(self.fids, np.ndarray) else self.fids[idx], self.id_column,
                          self.id_dtype)
        if self.attributes is not None:
            part.labels, part.blocks = self.attributes.labels[idx], self.attributes.blocks[idx]
        return part


@dataclass
class ParcelAttributes:
    """What an extraction keeps of each parcel of a :class:`LayerPlan` besides its place: what
    ``load_parcels`` gives it from the label and block fields, and a hash of its id.

    Attributes:
        labels: ``(P,)`` int16 class index or -1; ``classes``, ``class_summary``: as ``ParcelTable``.
        blocks: ``(P,)`` int32 spatial block or -1.
        id_hashes: ``(P,)`` uint64 :func:`id_hashes` of the parcel ids, to check what a partition wrote.
    """

    labels: np.ndarray
    blocks: np.ndarray
    id_hashes: np.ndarray
    classes: tuple[str, ...] = ()
    class_summary: dict[str, Any] = field(default_factory=dict)


def id_hashes(ids: Sequence[str]) -> np.ndarray:
    """``(n,)`` uint64 hashes of parcel ids (pandas' fixed-key hash: the same in every process)."""
    return pd.util.hash_array(np.asarray(ids, dtype=object))


class _AttributeReader:
    """Fills a plan's :class:`ParcelAttributes` batch by batch: label values counted (a
    ``LabelTally``, one code position per parcel), blocks and id hashes."""

    def __init__(self, total: int, fields: ParcelFields, layer_fields: Sequence[str]) -> None:
        self.fields = fields
        self.block_field = fields.block_field if fields.block_field in layer_fields else None
        self.tally = LabelTally()
        self.codes = np.zeros(total, dtype=np.int32) if fields.label_field else None
        self.blocks = np.empty(total, dtype=np.int32)
        self.hashes = np.empty(total, dtype=np.uint64)

    @property
    def columns(self) -> list[str]:
        return [c for c in (self.fields.label_field, self.block_field) if c]

    def add(self, at: slice, frame: Any, ids: np.ndarray) -> None:
        if self.codes is not None:
            self.codes[at] = self.tally.add(frame[self.fields.label_field].to_numpy())
        self.blocks[at] = parcel_blocks(frame, self.block_field)
        self.hashes[at] = id_hashes(ids)

    def finish(self, kept: int, source: str) -> ParcelAttributes:
        blocks, hashes = self.blocks[:kept].copy(), self.hashes[:kept].copy()
        if self.codes is None:
            return ParcelAttributes(np.full(kept, -1, dtype=np.int16), blocks, hashes,
                                    tuple(self.fields.classes) if self.fields.classes is not None else ())
        per_code, classes, summary = tallied_classes(self.tally, self.fields, source)
        return ParcelAttributes(per_code[self.codes[:kept]], blocks, hashes, classes, summary)


def plan_layer(path: Any, *, id_field: Optional[str] = None, selected_ids: Optional[Sequence[Any]] = None,
               layer: Optional[str] = None, fields: Optional[ParcelFields] = None) -> LayerPlan:
    """Read the layer ``path`` batch by batch and keep what partitions are planned from.

    ``fields`` (an extraction's): each parcel's label and block are kept too, as ``load_parcels``
    gives them with these fields (the labels assigned to classes over the whole layer), in
    ``LayerPlan.attributes``; its ``id_field`` stands where ``id_field`` is None.

    Raises:
        InputError: as ``load_parcels``: an unreadable file, no usable CRS, a missing id or label
            field, a class map without a label field, a layer without features or no parcel
            among ``selected_ids``.
    """
    source = str(Path(os.fspath(path)))
    problem = parcel_layer_problem(Path(source), layer)
    if problem:
        raise InputError(problem)
    layer_fields, crs = _fields_and_crs(source, layer)
    check_crs(crs, source)
    if id_field is None and fields is not None:
        id_field = fields.id_field
    _check_fields(source, layer_fields, id_field, fields)
    id_column = id_field if id_field is not None else ("parcel_id" if "parcel_id" in layer_fields else None)
    wanted = None if selected_ids is None else np.asarray([str(s) for s in selected_ids])
    reading = _Reading(source, layer, crs, id_column, fields, layer_fields)
    plan, dtypes = _plan_pass(reading, wanted, None)
    if len(set(dtypes)) > 1:
        # The id field has another type in some batches (integers with NULLs in a few): the
        # whole layer reads with their common type, and so must every batch.
        plan, _ = _plan_pass(reading, wanted, _common_dtype(dtypes))
    if plan is None:
        if wanted is None:
            name = default_layer_name(source, layer) or Path(source).stem
            raise InputError(f"Parcel layer {name!r} of {source} has no features; choose the layer that holds the "
                             "parcels, or check that the export wrote them.")
        raise InputError(f"No parcels to classify in {source} among the selected ids.")
    return plan


def _check_fields(source: str, layer_fields: list[str], id_field: Optional[str],
                  fields: Optional[ParcelFields]) -> None:
    """Refuse the fields ``load_parcels`` refuses: a named id or label field the layer lacks, a
    class map or minimum of parcels without a label field."""
    if id_field is not None and id_field not in layer_fields:
        raise InputError(f"Parcel layer {source} has no id field {id_field!r}; its fields are {layer_fields}.")
    if fields is None:
        return
    if fields.label_field is not None and fields.label_field not in layer_fields:
        raise InputError(f"Parcel layer {source} has no label field {fields.label_field!r}; its fields are "
                         f"{layer_fields}.")
    if fields.label_field is None and (fields.class_map is not None or fields.min_parcels > 1):
        raise InputError(f"A class map or a minimum of parcels per class needs a label field; name the field "
                         f"of {source} that holds the crop codes or names.")


@dataclass
class _Reading:
    """What a planning pass reads: the layer, its CRS, the id field and an extraction's fields."""

    source: str
    layer: Optional[str]
    crs: Any
    id_column: Optional[str]
    fields: Optional[ParcelFields]
    layer_fields: list[str]


def _plan_pass(reading: _Reading, wanted: Optional[np.ndarray],
               id_dtype: Optional[str]) -> tuple[Optional[LayerPlan], list[str]]:
    """One pass over the layer: its plan (None without parcels) and the id field's type per batch.

    The plan's arrays are made at the layer's size and filled batch by batch (not joined at the
    end, which would hold them twice)."""
    source, layer, id_column = reading.source, reading.layer, reading.id_column
    total = _feature_count(source, layer)
    rows, fids = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    bounds, usable = np.full((total, 4), np.nan), np.zeros(total, dtype=bool)
    attributes = None if reading.fields is None else _AttributeReader(total, reading.fields, reading.layer_fields)
    columns = list(dict.fromkeys([*([id_column] if id_column else []), *(attributes.columns if attributes else [])]))
    dtypes: list[str] = []
    kept, has_fids, id_width, unusable = 0, False, 0, []
    digest = hashlib.sha256()
    for batch in _batches(source, layer, columns):
        if id_column:
            dtypes.append(str(batch.fields[id_column].dtype))
        batch_rows = np.arange(batch.start, batch.start + len(batch.wkb), dtype=np.int64)
        ids = _ids(batch.fields, id_column, batch_rows, id_dtype)
        keep = np.ones(len(ids), dtype=bool) if wanted is None else np.isin(ids, wanted)
        batch_bounds, ok = _repaired_bounds(batch)  # unselected too: a geometry unreadable anywhere is refused
        if not keep.any():
            continue
        if batch.start + len(ids) > total:
            raise InputError(f"Parcel layer {source} holds more features than it says it has ({total}); save it "
                             "again (e.g. as a GeoPackage).")
        at = slice(kept, kept + int(keep.sum()))
        ids, ok = ids[keep], ok[keep]
        bounds[at], usable[at] = batch_bounds[keep], ok
        digest.update((("\n" if kept else "") + "\n".join(ids)).encode())
        rows[at] = batch_rows[keep]
        if batch.fids is not None:
            fids[at], has_fids = batch.fids[keep], True
        if attributes is not None:
            attributes.add(at, batch.fields[keep].reset_index(drop=True), ids)
        id_width = max(id_width, max(len(i) for i in ids))
        if len(unusable) < 10:  # named in the warning, as load_parcels names them
            unusable += list(ids[~ok][:10 - len(unusable)])
        kept = at.stop
    if not kept:
        return None, dtypes
    if (~usable[:kept]).any():
        log.warning("%s: %d parcels have unusable geometries (empty, not polygons or unrepairable): %s",
                    source, int((~usable[:kept]).sum()), unusable)
    if kept < total:  # a selection: only its parcels are kept
        rows, fids, bounds, usable = rows[:kept].copy(), fids[:kept].copy(), bounds[:kept].copy(), usable[:kept].copy()
    plan = LayerPlan(source, layer, reading.crs, rows, _compact_fids(fids, rows) if has_fids else None, bounds,
                     usable, digest.hexdigest(), id_column, id_dtype or (dtypes[0] if dtypes else None), id_width,
                     None if attributes is None else attributes.finish(kept, source))
    return plan, dtypes


def _compact_fids(fids: np.ndarray, rows: np.ndarray) -> Union[np.ndarray, int]:
    """``fids``, or one number where every feature id is the position plus that number."""
    offset = int(fids[0] - rows[0])
    return offset if np.array_equal(fids, rows + offset) else fids


def _feature_count(source: str, layer: Optional[str]) -> int:
    """The number of features the layer says it has (without reading them where the format keeps it)."""
    if is_parquet(source):
        return len(GeoParquetLayer(source))
    import fiona

    try:
        with fiona.open(source, layer=layer) as src:
            return len(src)
    except Exception as exc:  # fiona raises its own hierarchy
        raise InputError(f"Cannot read parcel layer {source}: {exc}") from exc


def _fields_and_crs(source: str, layer: Optional[str]) -> tuple[list[str], Any]:
    from pyproj import CRS

    if is_parquet(source):
        parquet = GeoParquetLayer(source)
        return parquet.fields, parquet.crs
    import fiona

    try:
        with fiona.open(source, layer=layer) as src:
            return list(src.schema["properties"]), (CRS.from_wkt(src.crs_wkt) if src.crs_wkt else None)
    except Exception as exc:  # fiona raises its own hierarchy
        raise InputError(f"Cannot read parcel layer {source}: {exc}") from exc


@dataclass
class _Batch:
    """Features ``start, start + 1, ...`` of a layer as planning reads them.

    Attributes:
        start: the position in the layer of the first.
        fields: a DataFrame of the fields planning reads (the id field, an extraction's label
            and block fields), typed as the layer's reader types them (None without any).
        wkb: ``(B,)`` each geometry as WKB, or None.
        fids: ``(B,)`` OGR feature ids, or None for GeoParquet.
        read_geometries: ``positions -> GeoSeries``: the geometries at those positions in the
            batch as ``load_parcels`` reads them (for those that need repair).
    """

    start: int
    fields: Any
    wkb: list
    fids: Optional[np.ndarray]
    read_geometries: Callable[[np.ndarray], Any]


def _repaired_bounds(batch: _Batch) -> tuple[np.ndarray, np.ndarray]:
    """``(B, 4)`` bounding boxes of the batch's repaired geometries (NaN where unusable) and
    ``(B,)`` bool, True where usable: as ``repair_geometries`` gives them.

    ``repair_geometries`` keeps a non-empty valid polygon or multipolygon of positive area as it
    is, so such a geometry's box is its own: it is taken through OGR (the same GEOS validity
    test, the same coordinates). A missing or empty geometry is unusable either way; the rest
    are read as ``load_parcels`` reads them and repaired by ``repair_geometries`` itself."""
    from osgeo import ogr

    n = len(batch.wkb)
    bounds, usable = np.full((n, 4), np.nan), np.zeros(n, dtype=bool)
    repair = []
    with gdal_messages():  # WKB that OGR does not read is left to the layer's own reader
        for i, value in enumerate(batch.wkb):
            if value is None:
                continue
            geometry = ogr.CreateGeometryFromWkb(value)
            if geometry is not None and geometry.IsEmpty():
                continue
            if geometry is None or ogr.GT_Flatten(geometry.GetGeometryType()) not in _POLYGONAL \
                    or not geometry.IsValid() or not geometry.GetArea() > 0:
                repair.append(i)
                continue
            x0, x1, y0, y1 = geometry.GetEnvelope()
            bounds[i] = (x0, y0, x1, y1)
            usable[i] = True
    if repair:
        at = np.asarray(repair, dtype=np.int64)
        repaired, ok = repair_geometries(batch.read_geometries(at).reset_index(drop=True))
        usable[at] = ok
        if ok.any():
            bounds[at[ok]] = repaired[ok].bounds.to_numpy()
    return bounds, usable


def _batches(source: str, layer: Optional[str], columns: list[str]) -> Iterator[_Batch]:
    """The layer's features batch by batch, in order, with the fields ``columns``."""
    if is_parquet(source):
        yield from _parquet_batches(GeoParquetLayer(source), columns)
    else:
        yield from _ogr_batches(source, layer, columns)


def _parquet_batches(parquet: GeoParquetLayer, columns: list[str]) -> Iterator[_Batch]:
    """GeoParquet row groups ``PLAN_BATCH`` rows at a time; the fields as ``GeoParquetLayer.read``
    types them, geometries that need repair decoded as it decodes them."""
    for start, table in parquet.tables(columns, rows=PLAN_BATCH):
        wkb = table.column(parquet.geometry_column).to_pylist()

        def read_geometries(at: np.ndarray, wkb=wkb, start=start):
            return parquet.geometries([wkb[i] for i in at], start, len(wkb))

        values = table.select(columns).to_pandas() if columns else None
        yield _Batch(start, values, wkb, None, read_geometries)


def _ogr_batches(source: str, layer: Optional[str], columns: list[str]) -> Iterator[_Batch]:
    """An OGR layer through GDAL's Arrow stream (feature id, the fields ``columns`` and the first
    geometry field, ``PLAN_BATCH`` features at a time); the fields as fiona gives them to
    ``load_parcels``, geometries that need repair read by feature id through fiona."""
    import pyarrow as pa
    from osgeo import gdal

    with gdal_messages() as messages:
        ds = gdal.OpenEx(source, gdal.OF_VECTOR | gdal.OF_READONLY)
        lyr = None if ds is None else (ds.GetLayerByName(layer) if layer else ds.GetLayer(0))
        if lyr is None:
            raise InputError(f"Cannot read parcel layer {source}: {said(messages)}")
        defn = lyr.GetLayerDefn()
        fields = [defn.GetFieldDefn(i).GetName() for i in range(defn.GetFieldCount())]
        geometry_fields = [defn.GetGeomFieldDefn(i).GetName() for i in range(defn.GetGeomFieldCount())]
        if lyr.SetIgnoredFields([f for f in fields if f not in columns] + geometry_fields[1:] + ["OGR_STYLE"]):
            raise InputError(f"Cannot read parcel layer {source}: {said(messages)}")
        stream = lyr.GetArrowStreamAsPyArrow(["INCLUDE_FID=YES", f"MAX_FEATURES_IN_BATCH={PLAN_BATCH}"])
        if stream is None:
            raise InputError(f"Cannot read parcel layer {source}: {said(messages)}")
    start = 0
    through_fiona: dict[str, Iterator[Any]] = {}  # fields whose Arrow values are not the ones fiona gives
    try:
        for struct in stream:
            batch = pa.RecordBatch.from_struct_array(struct)
            fids = batch.column(0).to_numpy().astype(np.int64)
            wkb = batch.column(batch.num_columns - 1).to_pylist() if geometry_fields else [None] * len(fids)
            values = None
            if columns:
                per_column = []
                for name in columns:
                    column = batch.column(name)
                    if name not in through_fiona and not _plain_type(column.type):
                        through_fiona[name] = _fiona_values(source, layer, name)
                    per_column.append(column.to_pylist() if name not in through_fiona
                                      else [next(through_fiona[name]) for _ in range(len(fids))])
                # fiona leaves a NULL field out of a feature's properties, and a DataFrame of the
                # features then types it as a missing value: so are they typed here
                values = pd.DataFrame([{c: v for c, v in zip(columns, feature) if v is not None}
                                       for feature in zip(*per_column)], columns=columns)

            def read_geometries(at: np.ndarray, fids=fids):
                return _read_rows(source, layer, at, fids[at], []).geometry

            yield _Batch(start, values, wkb, fids, read_geometries)
            start += len(fids)
    except InputError:
        raise
    except Exception as exc:  # GDAL's and fiona's own errors
        raise InputError(f"Cannot read parcel layer {source}: {exc}") from exc
    finally:
        stream = lyr = ds = None


def _plain_type(kind: Any) -> bool:
    """Whether Arrow values of type ``kind`` are the Python values fiona gives (numbers, text,
    booleans; fiona gives dates and times as text)."""
    import pyarrow as pa

    return (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_string(kind)
            or pa.types.is_large_string(kind) or pa.types.is_boolean(kind))


def _fiona_values(source: str, layer: Optional[str], column: str) -> Iterator[Any]:
    """The field ``column`` of every feature in layer order, as fiona gives it."""
    import fiona

    with fiona.open(source, layer=layer, ignore_geometry=True) as src:
        for feature in src:
            yield feature["properties"][column]


def _read_rows(source: str, layer: Optional[str], rows: np.ndarray, fids: Union[np.ndarray, int, None],
               columns: list[str]) -> Any:
    """The features at layer positions ``rows`` (GeoParquet) or with feature ids ``fids`` (OGR; a
    number: the positions plus that number)."""
    if isinstance(fids, (int, np.integer)):
        fids = np.asarray(rows, dtype=np.int64) + int(fids)
    if fids is None:
        parquet = GeoParquetLayer(source)
        if len(rows) and int(np.max(rows)) >= len(parquet):
            raise InputError(f"Cannot read the parcels of a partition from {source}: it holds {len(parquet)} rows, the "
                             f"partition's reach row {int(np.max(rows))}; check that the layer has not changed since the "
                             "run began.")
        return parquet.read(columns, rows=rows)
    import fiona
    import geopandas as gpd

    try:
        with fiona.open(source, layer=layer) as src:
            features = [src.get(int(f)) for f in fids]
            return gpd.GeoDataFrame.from_features(features, crs=src.crs_wkt, columns=[*columns, "geometry"])
    except Exception as exc:  # fiona raises its own hierarchy
        raise InputError(f"Cannot read the parcels of a partition from {source} ({exc}); check that the layer has "
                         "not changed since the run began.") from exc


def _common_dtype(dtypes: list[str]) -> Optional[str]:
    if not dtypes:
        return None
    if len(set(dtypes)) == 1:
        return dtypes[0]
    try:
        return str(np.result_type(*[np.dtype(d) for d in dtypes]))
    except TypeError:
        return "object"


def _ids(frame: Any, column: Optional[str], rows: np.ndarray, dtype: Optional[str]) -> np.ndarray:
    """Parcel ids as ``load_parcels`` makes them: the id field as text, or the row number."""
    if column is None:
        return np.array([str(i) for i in rows])
    values = frame[column]
    if dtype is not None and str(values.dtype) != dtype:
        values = values.astype(dtype)
    return values.astype(str).to_numpy()
