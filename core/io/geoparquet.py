"""GeoParquet output for large layers: the parcels streamed from OGR in record batches, added
fields appended, written with pyarrow row group by row group, checked and published whole.

GeoParquet (https://geoparquet.org, version 1.0.0 metadata, WKB geometries) is read by
geopandas, DuckDB, Spark and Dask; Debian's GDAL 3.6 (and so QGIS 3.22) has no Parquet
driver, so for opening a large layer in QGIS write FlatGeobuf (``.fgb``) instead.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Union

import numpy as np

from ..errors import InputError, OutputError
from .gdal_messages import gdal_messages, said
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
    fields: Mapping[str, np.ndarray],
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
        fields: field name -> one value per feature, in layer order (None / NaN: NULL).
        out: the ``.parquet`` file.
        overwrite: allow replacing an existing file.
        layer: layer inside a multi-layer input (default: its first).
        inputs: files the run read, which ``out`` must not be.

    Raises:
        OutputError: the output is unusable or the write failed (nothing is left behind).
        InputError: an unreadable input, or fields that do not fit the layer.
    """
    import geopandas as gpd
    import pyarrow as pa
    import pyarrow.parquet as pq
    from osgeo import gdal

    frame = parcels if isinstance(parcels, gpd.GeoDataFrame) else None
    source = None if frame is not None else Path(parcels)
    target = check_output(out, what="output", suffixes=(PARQUET_SUFFIX,), overwrite=overwrite,
                          inputs=[*([source] if source is not None else []), *inputs])
    with Staging(target) as staging:
        if frame is not None:
            source, layer = staging.folder / "parcels.gpkg", "parcels"
            frame.to_file(source, layer=layer, driver="GPKG")
        with gdal_messages() as messages:
            ds = gdal.OpenEx(os.fspath(source), gdal.OF_VECTOR | gdal.OF_READONLY)
            lyr = None if ds is None else (ds.GetLayerByName(layer) if layer else ds.GetLayer(0))
            if lyr is None:
                raise InputError(f"Cannot read parcel layer {source}: {said(messages)}")
            count = lyr.GetFeatureCount(force=1)
            for name, values in fields.items():
                if len(values) != count:
                    raise InputError(f"Field {name} holds {len(values)} values but the layer has {count} "
                                     "features; compute it for this layer again.")
            geometry = lyr.GetGeometryColumn() or "geometry"
            srs = lyr.GetSpatialRef()
            stream = lyr.GetArrowStreamAsPyArrow(["INCLUDE_FID=NO", f"MAX_FEATURES_IN_BATCH={BATCH_FEATURES}"])
            added = {name: _arrow_values(values) for name, values in fields.items()}
            writer = None
            written = 0
            try:
                for batch in stream:
                    batch = pa.RecordBatch.from_struct_array(batch)
                    n = batch.num_rows
                    keep = [c for c in batch.schema.names if c not in added]
                    columns = [batch.column(c) for c in keep] + [a.slice(written, n) for a in added.values()]
                    table = pa.Table.from_arrays(columns, names=keep + list(added))
                    if writer is None:
                        schema = table.schema.with_metadata({b"geo": _geo_metadata(geometry, srs)})
                        writer = pq.ParquetWriter(str(staging.path), schema)
                    writer.write_table(table.cast(writer.schema))
                    written += n
                if writer is None:  # an empty layer still gets its columns
                    names = [lyr.GetLayerDefn().GetFieldDefn(i).GetName()
                             for i in range(lyr.GetLayerDefn().GetFieldCount())]
                    schema = pa.schema([(c, pa.string()) for c in names if c not in added]
                                       + [(geometry, pa.binary())] + [(k, a.type) for k, a in added.items()])
                    writer = pq.ParquetWriter(str(staging.path), schema.with_metadata(
                        {b"geo": _geo_metadata(geometry, srs)}))
            except OSError as exc:
                raise OutputError(f"Writing {target} failed ({exc.strerror or exc}); the disk may be full. "
                                  "Nothing was written.") from exc
            finally:
                if writer is not None:
                    writer.close()
                stream = lyr = ds = None
        if written != count:
            raise OutputError(f"Reading {source} gave {written} features instead of {count}; nothing was written.")
        try:
            back = pq.ParquetFile(str(staging.path))
            rows, names = back.metadata.num_rows, back.schema_arrow.names
        except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError
            raise OutputError(f"{target.name} does not read back after writing ({exc}); the disk may be full. "
                              "Nothing was written.") from None
        missing = [f for f in [*fields, geometry] if f not in names]
        if rows != count or missing:
            raise OutputError(f"{target.name} holds {rows} rows and lacks {missing} after writing; nothing was "
                              "written.")
        publish(staging.path, target, overwrite=overwrite, staging=staging)
    log.info("Wrote %d features to %s (GeoParquet)", count, target)
    return target
