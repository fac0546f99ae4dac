"""Writing a parcel layer back out with added fields, in any OGR format, without ever leaving a
half-written file or replacing the input unasked."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import numpy as np

from .errors import InputError

OGR_DRIVERS = {
    ".gpkg": "GPKG",
    ".shp": "ESRI Shapefile",
    ".geojson": "GeoJSON",
    ".json": "GeoJSON",
    ".fgb": "FlatGeobuf",
    ".sqlite": "SQLite",
    ".gml": "GML",
    ".csv": "CSV",
}

_LAYER_OPTIONS = {"CSV": {"GEOMETRY": "AS_WKT"}}
"""Layer creation options a format needs to keep the features: CSV drops geometry otherwise."""


def ogr_driver(out: Union[str, os.PathLike]) -> str:
    """The OGR driver for ``out``'s extension.

    Raises:
        InputError: an extension no driver is known for.
    """
    driver = OGR_DRIVERS.get(Path(out).suffix.lower())
    if driver is None:
        raise InputError(f"Cannot tell the format of {out}: use one of {', '.join(sorted(OGR_DRIVERS))}.")
    return driver


def layer_for_output(parcels: Any, out: Union[str, os.PathLike], *, overwrite: bool = False,
                     layer: Optional[str] = None):
    """The features of ``parcels`` as a GeoDataFrame, once it is clear ``out`` may be written.

    Raises:
        InputError: unknown extension, an existing output (the input included) without
            ``overwrite``, or an unreadable input.
    """
    import geopandas as gpd

    out = Path(out)
    ogr_driver(out)
    if isinstance(parcels, gpd.GeoDataFrame):
        gdf = parcels.copy()
    else:
        source = Path(parcels)
        if not overwrite and out.exists() and out.resolve() == source.resolve():
            raise InputError(f"The output {out} is the parcel layer itself; choose another output or allow "
                             "overwriting.")
        try:
            gdf = gpd.read_file(source, layer=layer) if layer else gpd.read_file(source)
        except Exception as exc:  # fiona / pyogrio raise their own hierarchies
            raise InputError(f"Cannot read parcel layer {source}: {exc}") from exc
    if out.exists() and not overwrite:
        raise InputError(f"{out} already exists; choose another output or allow overwriting.")
    return gdf


def write_layer(gdf, out: Union[str, os.PathLike]) -> Path:
    """Write ``gdf`` in the format of ``out``'s extension; the file appears only once complete
    (written beside it, then renamed), replacing what was there.

    Raises:
        InputError: unknown extension, or the writer failed (nothing is left behind).
    """
    out = Path(out)
    driver = ogr_driver(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        try:
            gdf.to_file(tmp / out.name, driver=driver, **_LAYER_OPTIONS.get(driver, {}))
        except Exception as exc:
            raise InputError(f"Writing {out} ({driver}) failed: {exc}") from exc
        # Formats such as Shapefile write several files; move each into place.
        for f in sorted(tmp.iterdir()):
            os.replace(f, out.parent / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def write_with_fields(
    parcels: Any,
    fields: Mapping[str, np.ndarray],
    out: Union[str, os.PathLike],
    *,
    overwrite: bool = False,
    layer: Optional[str] = None,
) -> Path:
    """Write every feature and attribute of ``parcels`` plus ``fields``, format by extension.

    Args:
        parcels: a vector file or a GeoDataFrame.
        fields: field name -> one value per feature of the layer, in layer order; a field of
            the same name is replaced.
        out: output file.
        overwrite: allow replacing an existing file, the input included.
        layer: layer name inside a multi-layer input file.

    Raises:
        InputError: see ``layer_for_output`` and ``write_layer``; fields that do not fit the layer.
    """
    gdf = layer_for_output(parcels, out, overwrite=overwrite, layer=layer)
    for name, values in fields.items():
        if len(values) != len(gdf):
            raise InputError(f"Field {name} holds {len(values)} values but the layer has {len(gdf)} "
                             "features; compute it for this layer again.")
        gdf[name] = values
    return write_layer(gdf, out)
