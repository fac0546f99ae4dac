"""Reading a parcel layer's description before any work: whether it opens (and if not, why, in
words a user can act on), its first layer's name, its feature count, its fields' kinds and the
first feature without a geometry. Any OGR vector file, a GeoParquet file (through pyarrow) or a
GeoDataFrame.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator, Optional, Union

import numpy as np

from ..errors import InputError
from .field_batches import field_kind
from .gdal_messages import gdal_messages, said
from .geoparquet import GeoParquetLayer, is_parquet, ogr_geometry

PathLike = Union[str, os.PathLike]


def default_layer_name(path: PathLike, layer: Optional[str] = None) -> Optional[str]:
    """``layer``, or the name of the first layer of ``path`` (None when it has none)."""
    from osgeo import gdal

    if layer:
        return layer
    if is_parquet(path):  # one layer, named after the file as GDAL names it
        return Path(os.fspath(path)).stem
    with gdal_messages():
        ds = gdal.OpenEx(os.fspath(path), gdal.OF_VECTOR | gdal.OF_READONLY)
        if ds is None or ds.GetLayerCount() == 0:
            return None
        return ds.GetLayer(0).GetName()


@contextlib.contextmanager
def _opened_layer(path: PathLike, layer: Optional[str]) -> Iterator[Any]:
    """The OGR layer ``layer`` (default: the first) of the vector file ``path``, open while in use.

    Raises:
        InputError: the file or layer cannot be opened, with GDAL's message.
    """
    from osgeo import gdal

    with gdal_messages() as messages:
        ds = gdal.OpenEx(os.fspath(path), gdal.OF_VECTOR | gdal.OF_READONLY)
        lyr = None if ds is None else (ds.GetLayerByName(layer) if layer else ds.GetLayer(0))
        if lyr is None:
            raise InputError(f"Cannot read parcel layer {path}{f' (layer {layer})' if layer else ''}: "
                             f"{said(messages)}")
        try:
            yield lyr
        finally:
            lyr = ds = None


def feature_count(parcels: Any, layer: Optional[str] = None) -> int:
    """The number of features of a GeoDataFrame, or of ``layer`` (default: the first) of a file.

    Raises:
        InputError: the file or layer cannot be read.
    """

    if hasattr(parcels, "geometry") and hasattr(parcels, "__len__"):
        return len(parcels)
    problem = parcel_layer_problem(parcels, layer)
    if problem:
        raise InputError(problem)
    if is_parquet(parcels):
        return len(GeoParquetLayer(parcels))
    with _opened_layer(parcels, layer) as lyr:
        return lyr.GetFeatureCount(force=1)


def parcel_layer_problem(path: PathLike, layer: Optional[str] = None) -> Optional[str]:
    """Why the layer ``layer`` (default: the first) of the vector file ``path`` cannot be read,
    in words a user can act on (not GDAL's), or None when it opens.

    Checked: the file exists and is not empty, a shapefile has its ``.shx`` and ``.dbf``,
    GDAL recognises the format, the file holds a layer and the named one is among them.
    """
    from osgeo import gdal

    p = Path(os.fspath(path))
    if not p.exists():
        return f"Parcel file {p} does not exist (file not found); check the path."
    if p.is_file() and p.stat().st_size == 0:
        return f"Parcel file {p} is empty (0 bytes): it was not written completely. Save or export the layer again."
    if p.suffix.lower() == ".shp":
        lacking = [s for s in (".shx", ".dbf") if not (p.with_suffix(s).exists() or p.with_suffix(s.upper()).exists())]
        if lacking:
            return (f"Shapefile {p} lacks its {' and '.join(lacking)} file: a shapefile is several files (.shp, .shx, "
                    ".dbf, .prj) that must stay together; copy them all, or save the layer as a GeoPackage.")
    if is_parquet(p):
        try:
            GeoParquetLayer(p)
        except InputError as exc:
            return str(exc)
        if isinstance(layer, str) and layer and layer != p.stem:
            return f"Parcel file {p} has no layer {layer!r}; a GeoParquet file holds one layer, {p.stem!r}."
        return None
    with gdal_messages():
        ds = gdal.OpenEx(str(p), gdal.OF_VECTOR | gdal.OF_READONLY)
        names = [] if ds is None else [ds.GetLayer(i).GetName() for i in range(ds.GetLayerCount())]
        ds = None
    if not names:
        what = "a folder" if p.is_dir() else "a file"
        return (f"Parcel file {p} is {what} GDAL cannot read as a vector layer; give a GeoPackage (.gpkg), "
                "shapefile (.shp), GeoJSON, FlatGeobuf (.fgb) or another OGR vector format.")
    if isinstance(layer, str) and layer and layer not in names:
        return f"Parcel file {p} has no layer {layer!r}; its layers are {', '.join(map(repr, names))}."
    return None


def source_field_kinds(parcels: Any, layer: Optional[str] = None) -> dict[str, str]:
    """Field name -> kind of a vector file's layer (default: the first), or of a GeoDataFrame."""
    from osgeo import ogr

    if hasattr(parcels, "geometry") and hasattr(parcels, "columns"):
        return {c: field_kind(parcels[c].to_numpy()) for c in parcels.columns if c != parcels.geometry.name}
    kinds = {ogr.OFTString: "string", ogr.OFTReal: "real", ogr.OFTInteger: "integer", ogr.OFTInteger64: "integer"}
    problem = parcel_layer_problem(parcels, layer)
    if problem:
        raise InputError(problem)
    if is_parquet(parcels):
        return GeoParquetLayer(parcels).field_kinds()
    with _opened_layer(parcels, layer) as lyr:
        defn = lyr.GetLayerDefn()
        fields = [defn.GetFieldDefn(i) for i in range(defn.GetFieldCount())]
        return {f.GetName(): kinds.get(f.GetType(), f.GetFieldTypeName(f.GetType()).lower()) for f in fields}


def first_feature_without_geometry(parcels: Any, layer: Optional[str] = None) -> Optional[str]:
    """How to find the first feature of a vector file's layer (or a GeoDataFrame) that has no
    geometry or an empty one ("row 4", "feature id 17"), None where every feature has one. Only
    the geometries are read."""

    if hasattr(parcels, "geometry") and hasattr(parcels, "columns"):
        missing = np.flatnonzero(np.asarray(parcels.geometry.isna() | parcels.geometry.is_empty))
        return f"row {int(missing[0])}" if len(missing) else None
    if is_parquet(parcels):
        found = GeoParquetLayer(parcels)
        starts = found.row_group_starts()
        with gdal_messages():
            for g in range(found.file.num_row_groups):
                values = found._read_group(g, [found.geometry_column]).column(found.geometry_column).to_pylist()
                for row, wkb in enumerate(values):
                    geometry = None if wkb is None else ogr_geometry(wkb)
                    if geometry is None or geometry.IsEmpty():
                        return f"row {int(starts[g]) + row}"
        return None
    with _opened_layer(parcels, layer) as lyr:
        defn = lyr.GetLayerDefn()
        lyr.SetIgnoredFields([defn.GetFieldDefn(i).GetName() for i in range(defn.GetFieldCount())])
        for feature in lyr:
            geometry = feature.GetGeometryRef()
            if geometry is None or geometry.IsEmpty():
                return f"feature id {feature.GetFID()}"
    return None
