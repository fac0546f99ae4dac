"""Partitions planned from a parcel layer file without holding its geometries, and each
partition's parcels read back from the file by the worker that computes it.

:func:`plan_layer` reads the layer in batches (OGR features through fiona, or GeoParquet row
groups), repairs each batch's geometries as :func:`~thermocrop.core.parcels.load_parcels` does
and keeps only what planning needs: each parcel's position and feature id, its repaired
bounding box and whether it is usable, and a digest of the parcel ids (about 50 bytes a parcel).
The partitions are then the chunks a one-process run makes (``pixel_sampling.chunks_of_bounds``
gives the same as ``spatial_chunks``); a :class:`LayerSlice` names one partition's parcels by
position and feature id, and its :meth:`LayerSlice.table` reads them from the file, so each
worker builds the same ``ParcelTable`` rows a one-process run holds for them.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from ..errors import InputError
from ..io.geoparquet import GeoParquetLayer, is_parquet
from ..io.vector import default_layer_name, parcel_layer_problem
from ..parcels import STATUS_INVALID_GEOMETRY, ParcelTable, check_crs, repair_geometries
from ..pixel_sampling import chunks_of_bounds

PLAN_BATCH = 4000
"""Features read at a time while planning (GeoParquet: a row group read whole, then made into
features this many at a time). A batch's
features are held as Python objects (some 2 KB each), so a batch is kept well under the
smallest layers the client is measured on: its memory is then the same for every layer."""


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

    def table(self, classes: Sequence[str] = ()) -> ParcelTable:
        """These parcels as a ``ParcelTable``, as ``load_parcels`` would give their rows."""
        frame = _read_rows(self.source, self.layer, self.layer_rows, self.fids,
                           [self.id_column] if self.id_column else [])
        ids = _ids(frame, self.id_column, self.layer_rows, self.id_dtype)
        geometry, ok = repair_geometries(frame.geometry.reset_index(drop=True))
        status = np.where(ok, "", STATUS_INVALID_GEOMETRY).astype(object)
        n = len(ids)
        return ParcelTable(geometry, ids, np.full(n, -1, dtype=np.int16), np.full(n, -1, dtype=np.int32), status,
                           self.source, np.asarray(self.layer_rows, dtype=np.int64), tuple(classes))


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

    def __len__(self) -> int:
        return len(self.rows)

    def chunks(self, chunk_size: int, grids: Sequence[Any] = ()) -> list[np.ndarray]:
        """The chunks a one-process run makes of these parcels (positions in the plan)."""
        return chunks_of_bounds(self.bounds, self.usable, self.crs, chunk_size, grids)

    def slice(self, idx: np.ndarray) -> LayerSlice:
        """The parcels at plan positions ``idx`` (sorted) for a worker to read."""
        return LayerSlice(self.source, self.layer, np.asarray(idx, dtype=np.int64), self.rows[idx],
                          self.fids if not isinstance(self.fids, np.ndarray) else self.fids[idx], self.id_column,
                          self.id_dtype)


def plan_layer(path: Any, *, id_field: Optional[str] = None, selected_ids: Optional[Sequence[Any]] = None,
               layer: Optional[str] = None) -> LayerPlan:
    """Read the layer ``path`` batch by batch and keep what partitions are planned from.

    Raises:
        InputError: as ``load_parcels``: an unreadable file, no usable CRS, a missing id field,
            a layer without features or no parcel among ``selected_ids``.
    """
    source = str(Path(os.fspath(path)))
    problem = parcel_layer_problem(Path(source), layer)
    if problem:
        raise InputError(problem)
    fields, crs = _fields_and_crs(source, layer)
    check_crs(crs, source)
    if id_field is not None and id_field not in fields:
        raise InputError(f"Parcel layer {source} has no id field {id_field!r}; its fields are {fields}.")
    id_column = id_field if id_field is not None else ("parcel_id" if "parcel_id" in fields else None)
    wanted = None if selected_ids is None else np.asarray([str(s) for s in selected_ids])
    plan, dtypes = _plan_pass(source, layer, crs, id_column, wanted, None)
    if len(set(dtypes)) > 1:
        # The id field has another type in some batches (integers with NULLs in a few): the
        # whole layer reads with their common type, and so must every batch.
        plan, _ = _plan_pass(source, layer, crs, id_column, wanted, _common_dtype(dtypes))
    if plan is None:
        if wanted is None:
            name = default_layer_name(source, layer) or Path(source).stem
            raise InputError(f"Parcel layer {name!r} of {source} has no features; choose the layer that holds the "
                             "parcels, or check that the export wrote them.")
        raise InputError(f"No parcels to classify in {source} among the selected ids.")
    return plan


def _plan_pass(source: str, layer: Optional[str], crs: Any, id_column: Optional[str], wanted: Optional[np.ndarray],
               id_dtype: Optional[str]) -> tuple[Optional[LayerPlan], list[str]]:
    """One pass over the layer: its plan (None without parcels) and the id field's type per batch.

    The plan's arrays are made at the layer's size and filled batch by batch (not joined at the
    end, which would hold them twice)."""
    total = _feature_count(source, layer)
    rows, fids = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    bounds, usable = np.full((total, 4), np.nan), np.zeros(total, dtype=bool)
    dtypes: list[str] = []
    kept, has_fids = 0, False
    digest = hashlib.sha256()
    for start, frame, batch_fids in _batches(source, layer, [id_column] if id_column else []):
        if id_column:
            dtypes.append(str(frame[id_column].dtype))
        batch_rows = np.arange(start, start + len(frame), dtype=np.int64)
        ids = _ids(frame, id_column, batch_rows, id_dtype)
        keep = np.ones(len(ids), dtype=bool) if wanted is None else np.isin(ids, wanted)
        if not keep.any():
            continue
        if start + len(frame) > total:
            raise InputError(f"Parcel layer {source} holds more features than it says it has ({total}); save it "
                             "again (e.g. as a GeoPackage).")
        geometry, ok = repair_geometries(frame.geometry[keep].reset_index(drop=True))
        at = slice(kept, kept + len(ok))
        if ok.any():
            bounds[at][ok] = geometry[ok].bounds.to_numpy()
        digest.update((("\n" if kept else "") + "\n".join(ids[keep])).encode())
        rows[at] = batch_rows[keep]
        if batch_fids is not None:
            fids[at], has_fids = batch_fids[keep], True
        usable[at] = ok
        kept += len(ok)
    if not kept:
        return None, dtypes
    if kept < total:  # a selection: only its parcels are kept
        rows, fids, bounds, usable = rows[:kept].copy(), fids[:kept].copy(), bounds[:kept].copy(), usable[:kept].copy()
    plan = LayerPlan(source, layer, crs, rows, _compact_fids(fids, rows) if has_fids else None, bounds, usable,
                     digest.hexdigest(), id_column, id_dtype or (dtypes[0] if dtypes else None))
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


def _batches(source: str, layer: Optional[str], columns: list[str]) -> Iterator[tuple[int, Any, Optional[np.ndarray]]]:
    """``(first row, GeoDataFrame, feature ids or None)`` of the layer, batch by batch, in order."""
    if is_parquet(source):
        for frame in GeoParquetLayer(source).frames(columns, rows=PLAN_BATCH):
            yield (int(frame.index[0]) if len(frame) else 0), frame, None
        return
    import fiona
    import geopandas as gpd

    try:
        with fiona.open(source, layer=layer) as src:
            batch: list = []
            start = 0
            for feature in src:
                batch.append(feature)
                if len(batch) == PLAN_BATCH:
                    yield start, gpd.GeoDataFrame.from_features(batch, crs=src.crs_wkt, columns=[*columns, "geometry"]), \
                        np.array([int(f.id) for f in batch], dtype=np.int64)
                    start, batch = start + len(batch), []
            if batch:
                yield start, gpd.GeoDataFrame.from_features(batch, crs=src.crs_wkt, columns=[*columns, "geometry"]), \
                    np.array([int(f.id) for f in batch], dtype=np.int64)
    except InputError:
        raise
    except Exception as exc:  # fiona raises its own hierarchy
        raise InputError(f"Cannot read parcel layer {source}: {exc}") from exc


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
