"""The names of the geometry and feature id columns of the GeoPackage and SQLite layers written
here: the usual ones, unless a field of the layer is so named (SQLite tells no case apart).

A field named like the geometry column would make a second column of that name and fail the
write; a field named like the feature id column would become the feature ids, so that a repeated
or NULL value fails the write and every other format copied from that layer lacks the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

GEOPACKAGE_COLUMNS = ("geom", "fid")
"""What GDAL names a new GeoPackage layer's geometry and feature id columns."""

SQLITE_COLUMNS = ("GEOMETRY", "OGC_FID")
"""What GDAL names a new SQLite layer's geometry and feature id columns."""


def free_column_name(preferred: str, taken: Iterable[str]) -> str:
    """``preferred``, or the first of ``preferred_1``, ``preferred_2``, ... that is none of
    ``taken`` (case aside)."""
    taken = {str(name).lower() for name in taken}
    name, n = preferred, 0
    while name.lower() in taken:
        n += 1
        name = f"{preferred}_{n}"
    return name


def column_options(fields: Iterable[str], geometry: str = GEOPACKAGE_COLUMNS[0],
                   fid: str = GEOPACKAGE_COLUMNS[1]) -> list[str]:
    """Layer creation options (GeoPackage, SQLite) naming the geometry column ``geometry`` and the
    feature id column ``fid``, each renamed as :func:`free_column_name` says when one of the
    layer's ``fields`` has its name."""
    fields = list(fields)
    geometry = free_column_name(geometry, fields)
    return [f"GEOMETRY_NAME={geometry}", f"FID={free_column_name(fid, [*fields, geometry])}"]


def frame_to_geopackage(frame: Any, path: Path, layer: str) -> None:
    """Write a GeoDataFrame as layer ``layer`` of the new GeoPackage ``path``, its fields all kept
    as fields (a field 'fid' or 'geom' too)."""
    fields = [c for c in frame.columns if c != frame.geometry.name]
    options = dict(option.split("=", 1) for option in column_options(fields))
    frame.to_file(path, layer=layer, driver="GPKG", **options)
