"""GeoParquet for large layers. Output: the parcels streamed from OGR (or from a GeoParquet
input) in record batches, added fields appended, written with pyarrow row group by row group,
checked and published whole. Input: :class:`GeoParquetLayer` reads a parcel layer row group by
row group, only the columns asked for, geometries decoded from WKB.

GeoParquet (https://geoparquet.org, version 1.0.0 metadata, WKB geometries) is read by
geopandas, DuckDB, Spark and Dask; Debian's GDAL 3.6 (and so QGIS 3.22) has no Parquet
driver, so for opening a large layer in QGIS write FlatGeobuf (``.fgb``) instead.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from ..errors import InputError, OutputError
from .field_batches import FieldBatches
from .gdal_messages import gdal_messages, said
from .layer_columns import column_options, frame_to_geopackage
from .output import Staging, check_output, publish

log = logging.getLogger(__name__)

PARQUET_SUFFIX = ".parquet"
GEOPARQUET_VERSION = "1.0.0"
BATCH_FEATURES = 65536
"""Features per record batch (and Parquet row group): memory stays at one batch."""

PathLike = Union[str, os.PathLike]


def is_parquet(path: PathLike) -> bool:
    """Whether ``path`` names a (Geo)Parquet output by its extension."""
    return Path(os.fspath(path).split("|")[0]).suffix.lower() == PARQUET_SUFFIX


def _arrow_values(values: np.ndarray):
    """An Arrow array of one added field: float64, int64 or string, with NULL for None / NaN."""
    import pyarrow as pa

    values = np.asarray(values)
    if values.dtype.kind == "f":
        return pa.array(values.astype(np.float64), mask=np.isnan(values), type=pa.float64())
    if values.dtype.kind in "iub":
        return pa.array(values.astype(np.int64), type=pa.int64())
    as_list = [None if v is None or (isinstance(v, float) and v != v) else str(v) for v in values.tolist()]
    return pa.array(as_list, type=pa.string())


def _geo_metadata(column: str, srs) -> bytes:
    crs = None
    if srs is not None:
        text = srs.ExportToPROJJSON()
        crs = json.loads(text) if text else None
    meta = {"version": GEOPARQUET_VERSION, "primary_column": column,
            "columns": {column: {"encoding": "WKB", "geometry_types": [], "crs": crs}}}
    return json.dumps(meta).encode("utf-8")


def write_geoparquet(
    parcels: Any,
    fields: Union[Mapping[str, np.ndarray], FieldBatches],
    out: PathLike,
    *,
    overwrite: bool = False,
    layer: Optional[str] = None,
    inputs: Iterable[PathLike] = (),
) -> Path:
    """Write every feature and attribute of ``parcels`` plus ``fields`` as GeoParquet.

    The layer is read in record batches of :data:`BATCH_FEATURES` features through GDAL's
    Arrow interface and written one row group per batch, so memory holds one batch whatever
    the size of the layer. Fields of the same name as an added one are replaced. The file is
    written beside the target, its row count and columns are read back, and it is then moved
    into place (an existing file is replaced only with ``overwrite``).

    Args:
        parcels: a vector file (any OGR format) or a GeoDataFrame.
        fields: field name -> one value per feature, in layer order (None / NaN: NULL), or the
            same as :class:`~.field_batches.FieldBatches`, asked for one record batch at a time.
        out: the ``.parquet`` file.
        overwrite: allow replacing an existing file.
        layer: layer inside a multi-layer input (default: its first).
        inputs: files the run read, which ``out`` must not be.

    Raises:
        OutputError: the output is unusable or the write failed (nothing is left behind).
        InputError: an unreadable input, or fields that do not fit the layer.
    """
    import geopandas as gpd
    import pyarrow.parquet as pq

    fields = FieldBatches.of(fields)
    frame = parcels if isinstance(parcels, gpd.GeoDataFrame) else None
    source = None if frame is not None else Path(parcels)
    target = check_output(out, what="output", suffixes=(PARQUET_SUFFIX,), overwrite=overwrite,
                          inputs=[*([source] if source is not None else []), *inputs])
    with Staging(target) as staging:
        if frame is not None:
            source, layer = staging.folder / "parcels.gpkg", "parcels"
            frame_to_geopackage(frame, source, layer)
        if is_parquet(source):
            count, written, geometry = _copy_geoparquet(GeoParquetLayer(source), fields, staging.path, target)
        else:
            count, written, geometry = _copy_ogr(source, layer, fields, staging.path, target)
        if written != count:
            raise OutputError(f"Reading {source} gave {written} features instead of {count}; nothing was written.")
        try:
            back = pq.ParquetFile(str(staging.path))
            rows, names = back.metadata.num_rows, back.schema_arrow.names
        except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError
            raise OutputError(f"{target.name} does not read back after writing ({exc}); the disk may be full. "
                              "Nothing was written.") from None
        missing = [f for f in [*fields.names, geometry] if f not in names]
        if rows != count or missing:
            raise OutputError(f"{target.name} holds {rows} rows and lacks {missing} after writing; nothing was "
                              "written.")
        fields.complete()
        publish(staging.path, target, overwrite=overwrite, staging=staging)
    log.info("Wrote %d features to %s (GeoParquet)", count, target)
    return target


def _check_lengths(fields: FieldBatches, count: int) -> None:
    for name, length in fields.lengths().items():
        if length != count:
            raise InputError(f"Field {name} holds {length} values but the layer has {count} "
                             "features; compute it for this layer again.")


def _arrow_type(dtype_kind: str):
    """The Arrow type :func:`_arrow_values` gives values of numpy dtype kind ``dtype_kind``."""
    import pyarrow as pa

    return pa.float64() if dtype_kind == "f" else pa.int64() if dtype_kind in "iub" else pa.string()


def _added_columns(fields: FieldBatches, start: int, n: int) -> list:
    """The added fields' Arrow arrays for rows ``start:start + n``.

    The rows are asked of ``fields`` ``fields.batch_rows`` at a time and joined, so a row group
    larger than that (the input's, 65,536 rows) does not make its fields all at once: what
    making them holds (texts as Python objects, the run folder's rows read) stays at one batch."""
    if not n:
        return [_arrow_values(np.empty(0, dtype=object)) for _ in fields.names]
    step = max(1, fields.batch_rows)
    pieces = [fields.slice(first, min(first + step, start + n)) for first in range(start, start + n, step)]
    return [_arrow_values(pieces[0][name] if len(pieces) == 1 else np.concatenate([p[name] for p in pieces]))
            for name in fields.names]


def _copy_geoparquet(layer: "GeoParquetLayer", fields: FieldBatches, path: Path,
                     target: Path) -> tuple[int, int, str]:
    """A GeoParquet layer plus ``fields`` into ``path``, row group by row group, its 'geo'
    metadata kept; returns the layer's count, the rows written and the geometry column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    count = len(layer)
    _check_lengths(fields, count)
    types = {name: _arrow_type(kind) for name, kind in fields.dtype_kinds().items()}
    keep = [c for c in layer.schema.names if c not in types]
    schema = pa.schema([layer.schema.field(c) for c in keep] + list(types.items()),
                       metadata=layer.schema.metadata)
    written = 0
    try:
        with pq.ParquetWriter(str(path), schema) as writer:
            for g in range(layer.file.num_row_groups):
                table = layer._read_group(g, keep)  # a damaged input is named as such, not as a full disk
                n = table.num_rows
                columns = [table.column(c) for c in keep] + _added_columns(fields, written, n)
                writer.write_table(pa.Table.from_arrays(columns, schema=schema))
                written += n
    except OSError as exc:
        raise OutputError(f"Writing {target} failed ({exc.strerror or exc}); the disk may be full. "
                          "Nothing was written.") from exc
    return count, written, layer.geometry_column


def _copy_ogr(source: PathLike, layer: Optional[str], fields: FieldBatches, path: Path,
              target: Path) -> tuple[int, int, str]:
    """An OGR layer plus ``fields`` into ``path`` through GDAL's Arrow interface; returns the
    layer's count, the rows written and the geometry column."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from osgeo import gdal

    with gdal_messages() as messages:
        ds = gdal.OpenEx(os.fspath(source), gdal.OF_VECTOR | gdal.OF_READONLY)
        lyr = None if ds is None else (ds.GetLayerByName(layer) if layer else ds.GetLayer(0))
        if lyr is None:
            raise InputError(f"Cannot read parcel layer {source}: {said(messages)}")
        count = lyr.GetFeatureCount(force=1)
        _check_lengths(fields, count)
        srs = lyr.GetSpatialRef()
        stream = lyr.GetArrowStreamAsPyArrow(["INCLUDE_FID=NO", f"MAX_FEATURES_IN_BATCH={BATCH_FEATURES}"])
        # The stream names the geometry itself: a layer without a geometry column name (a
        # shapefile, GeoJSON) gets 'wkb_geometry', marked as WKB by its field's metadata.
        geometry = next((f.name for f in stream.schema
                         if (f.metadata or {}).get(b"ARROW:extension:name") == b"ogc.wkb"),
                        lyr.GetGeometryColumn() or "wkb_geometry")
        types = {name: _arrow_type(kind) for name, kind in fields.dtype_kinds().items()}
        writer = None
        written = 0
        try:
            for batch in stream:
                batch = pa.RecordBatch.from_struct_array(batch)
                n = batch.num_rows
                keep = [c for c in batch.schema.names if c not in types]
                columns = [batch.column(c) for c in keep] + _added_columns(fields, written, n)
                table = pa.Table.from_arrays(columns, names=keep + list(types))
                if writer is None:
                    schema = table.schema.with_metadata({b"geo": _geo_metadata(geometry, srs)})
                    writer = pq.ParquetWriter(str(path), schema)
                writer.write_table(table.cast(writer.schema))
                written += n
            if writer is None:  # an empty layer still gets its columns
                names = [lyr.GetLayerDefn().GetFieldDefn(i).GetName()
                         for i in range(lyr.GetLayerDefn().GetFieldCount())]
                schema = pa.schema([(c, pa.string()) for c in names if c not in types]
                                   + [(geometry, pa.binary())] + list(types.items()))
                writer = pq.ParquetWriter(str(path), schema.with_metadata({b"geo": _geo_metadata(geometry, srs)}))
        except OSError as exc:
            raise OutputError(f"Writing {target} failed ({exc.strerror or exc}); the disk may be full. "
                              "Nothing was written.") from exc
        finally:
            if writer is not None:
                writer.close()
            stream = lyr = ds = None
    return count, written, geometry


# -- input --------------------------------------------------------------------------------------

PROJ_FILE_KEYS = re.compile(r"\b(init|nadgrids|geoidgrids|grids|file)\s*=")
"""PROJ string keys that make PROJ open a file by name (an init file, a grid): in a CRS read
from a file (a PROJ string, or one inside WKT's PROJ4 extension) they could name any local file."""

class GeoParquetLayer:
    """A GeoParquet file opened as a parcel layer: its 'geo' metadata checked, nothing read yet.

    Only the file's footer is read on opening; :meth:`frames` and :meth:`read` then read row
    group by row group, and only the columns asked for, so memory holds one row group (plus
    what the caller keeps).

    Raises:
        InputError: the file is not Parquet, has no or an unreadable 'geo' metadata, its
            geometry column is missing or not binary WKB, or its CRS cannot be read.
    """

    def __init__(self, path: PathLike) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.path = Path(os.fspath(path))
        try:
            self.file = pq.ParquetFile(str(self.path))
        except Exception as exc:  # pyarrow's ArrowInvalid / OSError
            raise InputError(f"Parcel file {self.path} cannot be read as Parquet ({exc}); write it again as "
                             "GeoParquet, or give a GeoPackage.") from None
        schema = self.file.schema_arrow
        raw = (schema.metadata or {}).get(b"geo")
        if raw is None:
            raise InputError(f"Parcel file {self.path} is Parquet without GeoParquet's 'geo' metadata, so its "
                             "geometry column is unknown; write it as GeoParquet (geopandas' to_parquet, GDAL, "
                             "DuckDB) or give a GeoPackage.")
        try:
            geo = json.loads(raw)
            self.geometry_column = str(geo["primary_column"])
            column = geo["columns"][self.geometry_column]
        except (ValueError, KeyError, TypeError, RecursionError):  # nesting too deep for the parser
            column = None
        if not isinstance(column, Mapping):
            raise InputError(f"Parcel file {self.path} has GeoParquet 'geo' metadata that does not name its "
                             "geometry column (primary_column and its entry under columns); write the file "
                             "again.") from None
        if self.geometry_column not in schema.names:
            raise InputError(f"Parcel file {self.path} names {self.geometry_column!r} as its geometry column, "
                             f"but it has no such column; its columns are {schema.names}.")
        encoding = str(column.get("encoding", "")).upper()
        if encoding != "WKB":
            raise InputError(f"Parcel file {self.path} stores its geometries as {column.get('encoding')!r}; "
                             "ThermoCrop reads WKB GeoParquet: write the file again with WKB geometries.")
        kind = schema.field(self.geometry_column).type
        empty = pa.types.is_null(kind) and self.file.metadata.num_rows == 0  # no geometry to type the column
        if not (pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or empty):
            # WKB is bytes: text (WKT, hex), numbers or GeoArrow's structs under a 'WKB' label are not
            raise InputError(f"Parcel file {self.path} declares WKB geometries, but its column "
                             f"{self.geometry_column!r} holds {kind}, not binary WKB; write the file again with "
                             "WKB geometries (geopandas' to_parquet, GDAL and DuckDB write them).")
        self.crs = self._crs(column)
        self.fields = [c for c in schema.names if c != self.geometry_column]
        self.schema = schema

    def _crs(self, column: Mapping[str, Any]) -> Any:
        """The column's CRS as a pyproj CRS: PROJJSON or WKT; absent means OGC:CRS84 (the
        specification's default), null means none."""
        from pyproj import CRS
        from pyproj.exceptions import CRSError

        if "crs" not in column:
            return CRS.from_user_input("OGC:CRS84")
        value = column["crs"]
        if value is None:
            return None
        named = PROJ_FILE_KEYS.search(json.dumps(value))
        if named:
            raise InputError(f"Parcel file {self.path} has a CRS in its 'geo' metadata that names a file for PROJ to "
                             f"read ({named.group(0)}...); ThermoCrop reads no file a data file names. Write the "
                             "file again with its CRS as PROJJSON (geopandas and GDAL write it so).")
        try:
            return CRS.from_user_input(json.dumps(value) if isinstance(value, dict) else value)
        except CRSError as exc:
            raise InputError(f"Parcel file {self.path} has a CRS in its 'geo' metadata that cannot be read "
                             f"({exc}); write the file again with its CRS.") from None

    def __len__(self) -> int:
        return self.file.metadata.num_rows

    def row_group_starts(self) -> np.ndarray:
        """``(G + 1,)`` first row of each row group, then the number of rows."""
        sizes = [self.file.metadata.row_group(g).num_rows for g in range(self.file.num_row_groups)]
        return np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)

    def _columns(self, columns: Optional[Sequence[str]]) -> list[str]:
        if columns is None:
            return list(self.schema.names)
        missing = [c for c in columns if c not in self.schema.names]
        if missing:
            raise InputError(f"Parcel file {self.path} has no field {missing[0]!r}; its fields are {self.fields}.")
        return [c for c in self.schema.names if c in set(columns) | {self.geometry_column}]

    def _frame(self, table: Any, first_row: int, index: Optional[np.ndarray] = None) -> Any:
        """``table`` (rows ``first_row, ...`` of the file, or the rows ``index`` taken from the row
        group that starts at ``first_row``) as a GeoDataFrame indexed by row."""
        import geopandas as gpd

        frame = table.drop([self.geometry_column]).to_pandas()
        frame.index = np.arange(first_row, first_row + len(frame)) if index is None else index
        span = None if index is None or not len(index) else int(index[-1]) - first_row + 1
        frame[self.geometry_column] = self.geometries(table.column(self.geometry_column), first_row, span).values
        return gpd.GeoDataFrame(frame, geometry=self.geometry_column, crs=self.crs)

    def geometries(self, column: Any, first_row: int, rows: Optional[int] = None) -> Any:
        """The WKB ``column`` (Arrow, or a sequence of bytes and None) as a GeoSeries.

        Args:
            first_row: the row in the file of the first value, and ``rows`` how many rows the
                values come from (default: as many as there are values), for the error's text.

        Raises:
            InputError: a value that is not WKB.
        """
        import geopandas as gpd

        wkb = column.to_numpy(zero_copy_only=False) if hasattr(column, "to_numpy") else np.asarray(column, dtype=object)
        try:
            return gpd.GeoSeries.from_wkb(wkb, crs=self.crs)
        except Exception as exc:  # shapely's reading errors differ between its versions
            last = first_row + (len(wkb) if rows is None else rows) - 1
            raise InputError(f"Parcel file {self.path} holds a geometry that is not valid WKB between rows "
                             f"{first_row} and {last} ({exc}); write the file again.") from None

    def frames(self, columns: Optional[Sequence[str]] = None, rows: Optional[int] = None) -> Iterator[Any]:
        """GeoDataFrames of the layer in file order, indexed by row in the file: one per row group,
        or with ``rows`` at most that many rows each (a row group read in slices: its geometries
        are held as Python objects one slice at a time)."""
        for first_row, table in self.tables(columns, rows):
            yield self._frame(table, first_row)

    def tables(self, columns: Optional[Sequence[str]] = None, rows: Optional[int] = None) -> Iterator[tuple[int, Any]]:
        """``(first row, Arrow table)`` of the layer in file order, as :meth:`frames` slices it,
        geometries left as WKB (see :meth:`geometries`)."""
        names = self._columns(columns)
        starts = self.row_group_starts()
        for g in range(self.file.num_row_groups):
            table = self._read_group(g, names)
            step = rows or max(table.num_rows, 1)
            for first in range(0, table.num_rows, step):
                yield int(starts[g]) + first, table.slice(first, step)

    def _read_group(self, g: int, names: list[str]) -> Any:
        try:
            return self.file.read_row_group(g, columns=names)
        except Exception as exc:  # pyarrow's ArrowInvalid / OSError
            raise InputError(f"Parcel file {self.path} cannot be read (row group {g}: {exc}); write it "
                             "again.") from None

    def read(self, columns: Optional[Sequence[str]] = None, rows: Optional[np.ndarray] = None) -> Any:
        """The layer (or only the rows ``rows``, positions in the file, sorted) as a GeoDataFrame
        indexed by row; only the row groups holding those rows are read."""
        import geopandas as gpd
        import pandas as pd

        names = self._columns(columns)
        starts = self.row_group_starts()
        parts = []
        groups = range(self.file.num_row_groups) if rows is None else \
            np.unique(np.searchsorted(starts, np.asarray(rows, dtype=np.int64), side="right") - 1)
        for g in groups:
            table = self._read_group(int(g), names)
            if rows is None:
                parts.append(self._frame(table, int(starts[g])))
                continue
            # Only the rows asked for are made into Python objects, not the whole row group.
            wanted = np.asarray(rows)[(rows >= starts[g]) & (rows < starts[g + 1])]
            parts.append(self._frame(table.take(wanted - starts[g]), int(starts[g]), wanted))
        if not parts:
            empty = pd.DataFrame({c: pd.Series(dtype=object) for c in names})
            return gpd.GeoDataFrame(empty, geometry=self.geometry_column, crs=self.crs)
        return gpd.GeoDataFrame(pd.concat(parts), geometry=self.geometry_column, crs=self.crs)

    def field_kinds(self) -> dict[str, str]:
        """Field name -> ``real``, ``integer``, ``string`` or the Arrow type's name."""
        import pyarrow as pa

        out = {}
        for name in self.fields:
            kind = self.schema.field(name).type
            out[name] = ("real" if pa.types.is_floating(kind) else "integer" if pa.types.is_integer(kind)
                         else "string" if pa.types.is_string(kind) or pa.types.is_large_string(kind) else str(kind))
        return out

    def bounds(self) -> Optional[tuple[float, float, float, float]]:
        """The layer's extent (None when it has no geometry): each geometry's envelope taken
        through OGR from its WKB, one row group at a time, none made a Python geometry (a
        million parcels in seconds, not the minute that decoding them takes).

        Raises:
            InputError: a value that is not WKB, named by its row.
        """

        box = None
        starts = self.row_group_starts()
        for g in range(self.file.num_row_groups):
            values = self._read_group(g, [self.geometry_column]).column(self.geometry_column).to_pylist()
            envelopes = []
            with gdal_messages():
                for row, wkb in enumerate(values):
                    if wkb is None:
                        continue
                    geometry = ogr_geometry(wkb)
                    if geometry is None:
                        raise InputError(f"Parcel file {self.path} holds a geometry that is not valid WKB at row "
                                         f"{int(starts[g]) + row}; write the file again.")
                    if not geometry.IsEmpty():
                        envelopes.append(geometry.GetEnvelope())  # (xmin, xmax, ymin, ymax)
            if envelopes:
                e = np.asarray(envelopes, dtype=np.float64)
                b = np.array([e[:, 0].min(), e[:, 2].min(), e[:, 1].max(), e[:, 3].max()])
                box = b if box is None else np.concatenate([np.minimum(box[:2], b[:2]), np.maximum(box[2:], b[2:])])
        return None if box is None else tuple(float(v) for v in box)


INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
"""The integers an OGR Integer64 field holds (an unsigned 64-bit Parquet column may hold more)."""

_WKB_SINGLE = {4: 1, 5: 2, 6: 3}
"""WKB's multi types (MultiPoint, MultiLineString, MultiPolygon) and their single ones."""


def ogr_geometry(wkb: bytes) -> Any:
    """An OGR geometry of ``wkb`` (ISO WKB, or PostGIS's extended WKB with an SRID, which shapely
    reads and OGR does not: the layer's reader accepts both), None where neither reads it."""
    from osgeo import ogr

    geometry = ogr.CreateGeometryFromWkb(wkb)
    if geometry is None:
        from shapely import wkb as shapely_wkb
        from shapely.errors import ShapelyError

        try:
            shape = shapely_wkb.loads(bytes(wkb))
        except (ShapelyError, ValueError, TypeError):
            return None
        geometry = ogr.CreateGeometryFromWkb(shapely_wkb.dumps(shape))  # without the SRID
    return geometry


def _wkb_types(values: Sequence[Any]) -> set[tuple[int, bool, bool]]:
    """``(base type, Z, M)`` of each WKB (ISO, or with EWKB's flags) of ``values``, None and empty
    geometries aside (what follows the type is their count of parts or points, but for points)."""
    found = set()
    for wkb in values:
        if wkb is None or len(wkb) < 5:
            continue
        order = "little" if wkb[0] == 1 else "big"
        code = int.from_bytes(wkb[1:5], order)
        z, m = bool(code & 0x80000000), bool(code & 0x40000000)
        start = 9 if code & 0x20000000 else 5  # after an EWKB SRID
        code &= 0x0FFFFFFF
        if code % 1000 != 1 and int.from_bytes(wkb[start:start + 4], order) == 0:
            continue
        z, m = z or code // 1000 in (1, 3), m or code // 1000 in (2, 3)
        found.add((code % 1000, z, m))
    return found


def _layer_geometry_type(layer: GeoParquetLayer) -> tuple[int, bool]:
    """The OGR geometry type to declare for ``layer``'s geometries (read one row group at a time:
    their WKB headers alone) and whether single geometries are to be made multi (a layer of
    polygons and multipolygons is declared multi, as the OGR copy declares such a layer)."""
    from osgeo import ogr

    found: set = set()
    for g in range(layer.file.num_row_groups):
        column = layer._read_group(g, [layer.geometry_column]).column(layer.geometry_column)
        found |= _wkb_types(column.to_pylist())
    bases = {base for base, _, _ in found}
    singles = {_WKB_SINGLE.get(base, base) for base in bases}
    if len(singles) != 1:  # none, or of several kinds
        declared, promote = ogr.wkbUnknown, False
    elif len(bases) == 1:
        declared, promote = bases.pop(), False
    else:  # single and multi geometries of one kind
        single = singles.pop()
        declared, promote = next(multi for multi, one in _WKB_SINGLE.items() if one == single), True
    if any(z for _, z, _ in found):
        declared = ogr.GT_SetZ(declared)
    if any(m for _, _, m in found):
        declared = ogr.GT_SetM(declared)
    return declared, promote


def copy_to_geopackage(layer: GeoParquetLayer, path: Path, name: str) -> int:
    """Copy a GeoParquet layer into the new GeoPackage ``path`` (layer ``name``) row group by row
    group, for OGR to read (this GDAL has no Parquet driver); returns the features written.

    Columns keep their Arrow kinds (integers as 64-bit integers, NULLs as NULL; booleans, dates
    and times as such; any other type as its text), a column 'fid' or 'geom' too (the copy's
    feature id and geometry columns take other names); the CRS and the geometries are kept (an
    empty one as none), a layer of polygons and multipolygons declared and written as multipolygons.

    Raises:
        InputError: a row group cannot be read, holds a geometry that is not WKB, or an integer
            beyond 64-bit signed integers (an unsigned 64-bit column).
        OutputError: the GeoPackage cannot be written (a full disk).
    """
    import pyarrow as pa
    from osgeo import ogr, osr

    declared, promote = _layer_geometry_type(layer)
    srs = None
    if layer.crs is not None:
        srs = osr.SpatialReference()
        srs.ImportFromWkt(layer.crs.to_wkt())
        srs.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    kinds = []
    for column in layer.fields:
        kind = layer.schema.field(column).type
        ogr_type = (ogr.OFTReal if pa.types.is_floating(kind) else ogr.OFTInteger64 if pa.types.is_integer(kind)
                    else ogr.OFTInteger if pa.types.is_boolean(kind) else ogr.OFTDate if pa.types.is_date(kind)
                    else ogr.OFTDateTime if pa.types.is_timestamp(kind) else ogr.OFTString)
        kinds.append((column, ogr_type))
    written = 0
    with gdal_messages() as messages:
        ds = ogr.GetDriverByName("GPKG").CreateDataSource(str(path))
        out = None if ds is None else ds.CreateLayer(name, srs=srs, geom_type=declared,
                                                     options=column_options(layer.fields))
        if out is None:
            raise OutputError(f"Cannot write a copy of {layer.path} in {path.parent}: {said(messages)}")
        for column, ogr_type in kinds:
            definition = ogr.FieldDefn(column, ogr_type)
            if ogr_type == ogr.OFTInteger:
                definition.SetSubType(ogr.OFSTBoolean)
            if out.CreateField(definition) != 0:
                raise OutputError(f"Cannot copy field {column} of {layer.path} into {path}: {said(messages)}")
        defn = out.GetLayerDefn()
        ds.StartTransaction()
        starts = layer.row_group_starts()
        for g in range(layer.file.num_row_groups):
            table = layer._read_group(g, list(layer.schema.names))
            columns = [table.column(c).to_pylist() for c, _ in kinds]
            for row, wkb in enumerate(table.column(layer.geometry_column).to_pylist()):
                feature = ogr.Feature(defn)
                for index, (values, (column, ogr_type)) in enumerate(zip(columns, kinds)):
                    value = values[row]
                    if ogr_type == ogr.OFTInteger64 and value is not None and not INT64_MIN <= value <= INT64_MAX:
                        raise InputError(f"Field {column!r} of parcel file {layer.path} holds {value} at row "
                                         f"{int(starts[g]) + row}, beyond the 64-bit integers of OGR formats; "
                                         "write that field as text, or write a GeoParquet output (.parquet).")
                    _set_value(feature, index, value, ogr_type)
                if wkb is not None:
                    geometry = ogr_geometry(bytes(wkb))
                    if geometry is None:
                        raise InputError(f"Parcel file {layer.path} holds a geometry that is not valid WKB at row "
                                         f"{int(starts[g]) + row}; write the file again.")
                    if geometry.IsEmpty():  # no geometry, as a GeoDataFrame written by OGR has it
                        geometry = None
                    elif promote and ogr.GT_Flatten(geometry.GetGeometryType()) != ogr.GT_Flatten(declared):
                        geometry = ogr.ForceTo(geometry, declared)
                    if geometry is not None:
                        feature.SetGeometryDirectly(geometry)
                if out.CreateFeature(feature) != 0:
                    raise OutputError(f"Writing a copy of {layer.path} in {path.parent} failed ({said(messages)}); "
                                      "the disk may be full.")
                written += 1
        if ds.CommitTransaction() != 0:
            raise OutputError(f"Writing a copy of {layer.path} in {path.parent} failed ({said(messages)}); the "
                              "disk may be full.")
        out = ds = None
    return written


def _set_value(feature: Any, index: int, value: Any, ogr_type: int) -> None:
    """Field ``index`` of an OGR feature from an Arrow value (None: NULL)."""
    from osgeo import ogr

    if value is None or (isinstance(value, float) and value != value):
        feature.SetFieldNull(index)
    elif ogr_type in (ogr.OFTInteger64, ogr.OFTInteger):
        feature.SetField(index, int(value))
    elif ogr_type == ogr.OFTReal:
        feature.SetField(index, float(value))
    elif ogr_type in (ogr.OFTDate, ogr.OFTDateTime):
        feature.SetField(index, value.isoformat())
    else:
        feature.SetField(index, str(value))


def read_geoparquet(path: PathLike, columns: Optional[Sequence[str]] = None) -> Any:
    """A GeoParquet parcel layer as a GeoDataFrame, read row group by row group (see
    :class:`GeoParquetLayer`; the index is 0..n-1)."""
    return GeoParquetLayer(path).read(columns)
