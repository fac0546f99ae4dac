"""Turns QGIS features into the GeoDataFrames core reads, remembering which feature is which row,
and tells which raster layers of a project can be Sentinel-2 scenes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from qgis.core import QgsCoordinateReferenceSystem, QgsFeature

from .i18n import tr

ID_COLUMN = "parcel_id"

SCENE_FILE_FILTER = ("Sentinel-2 products and rasters (*.zip *.ZIP MTD_MSIL*.xml *.tif *.tiff *.TIF *.jp2 *.vrt);;"
                     "Zipped products (*.zip *.ZIP);;.SAFE product metadata (MTD_MSIL*.xml);;"
                     "Rasters (*.tif *.tiff *.TIF *.jp2 *.vrt);;All files (*)")
"""The file dialog's filter for scenes: what ``core.scenes.find_scenes`` reads (a .SAFE folder is
picked through its ``MTD_MSIL*.xml``, or with *Add folder*)."""


def scene_source(path) -> str:
    """The path ``find_scenes`` reads for a chosen file: a product's ``MTD_MSIL*.xml`` stands for
    its ``.SAFE`` folder; anything else is itself."""
    path = Path(path)
    if path.name.upper().startswith("MTD_MSIL") and path.suffix.lower() == ".xml" \
            and path.parent.name.upper().endswith(".SAFE"):
        return str(path.parent)
    return str(path)


def python_value(value):
    """A QGIS attribute value as plain Python: NULL -> None, QDate/QDateTime/QTime -> datetime."""
    if value is None:
        return None
    if hasattr(value, "isNull") and callable(value.isNull) and value.isNull():
        return None
    for method in ("toPyDateTime", "toPyDate", "toPyTime"):
        if hasattr(value, method):
            return getattr(value, method)()
    if type(value).__name__ == "QVariant":
        return value.value()
    if isinstance(value, (list, dict)):
        return str(value)
    return value


def copied_field_names(layer) -> list:
    """The fields of ``layer`` a new layer file copies: all but its provider's key (a GeoPackage's
    ``fid``), which the new file numbers itself; copied as a plain field, it made the file's own
    key ``fid_1`` and gave the dock's file a column the command line's has not."""
    key = set(layer.primaryKeyAttributes())
    return [field.name() for i, field in enumerate(layer.fields()) if i not in key]


def features_to_frame(features: Iterable[QgsFeature], crs: QgsCoordinateReferenceSystem,
                      label_field: Optional[str] = None, attributes: Optional[Sequence[str]] = None,
                      block_field: Optional[str] = None):
    """A GeoDataFrame of the features' geometries, with the feature ids as parcel ids.

    Safe in a worker thread when ``features`` come from a ``QgsVectorLayerFeatureSource``.

    Args:
        features: the parcels, in the order the result rows will follow.
        crs: their CRS.
        label_field: attribute copied as column ``label_field`` (for training data), or None.
        block_field: attribute copied as column ``block_field`` (the spatial blocks of the
            training split), or None.
        attributes: field names to copy as they are (for writing the layer out again); None
            copies none. The frame then has these columns only (no ``parcel_id`` added).

    Returns:
        ``(frame, fids)``: the GeoDataFrame (column ``parcel_id`` = feature id as text, rows in
        feature order, unless ``attributes`` are asked for) and the ``(P,)`` list of feature ids.
    """
    import geopandas as gpd
    from shapely import wkb

    fids, geoms, labels, blocks = [], [], [], []
    columns = {name: [] for name in attributes or ()}
    indexes, kinds = None, {}
    for feature in features:
        geometry = feature.geometry()
        fids.append(feature.id())
        geoms.append(None if geometry.isNull() else wkb.loads(bytes(geometry.asWkb())))
        if label_field:
            value = feature[label_field]
            labels.append(None if value is None or str(value) == "NULL" else str(value))
        if block_field:
            blocks.append(python_value(feature[block_field]))
        if columns:
            if indexes is None:  # looked up once: every feature of a source has the same fields
                indexes = [(columns[name], feature.fields().indexOf(name)) for name in columns]
                kinds = {name: feature.fields().field(name).type() for name in columns}
            values = feature.attributes()
            for column, index in indexes:
                column.append(python_value(values[index]))
    if attributes is not None:
        data = {name: _typed(values, kinds[name] if indexes else None) for name, values in columns.items()}
    else:
        data = {ID_COLUMN: [str(fid) for fid in fids]}
    if label_field:
        data[label_field] = labels
    if block_field:
        data[block_field] = blocks
    frame = gpd.GeoDataFrame(data, geometry=geoms, crs=crs.toWkt() if crs.isValid() else None)
    return frame, fids


def _typed(values: list, kind):
    """A pandas column keeping the QGIS field type through a write (integers with NULLs stay integers)."""
    import pandas as pd
    from qgis.PyQt.QtCore import QVariant

    if kind in (QVariant.Int, QVariant.UInt, QVariant.LongLong, QVariant.ULongLong):
        return pd.array(values, dtype="Int64")
    if kind == QVariant.Double:
        return pd.array([float("nan") if v is None else v for v in values], dtype="float64")
    if kind == QVariant.Bool:
        return pd.array(values, dtype="boolean")
    if kind in (QVariant.Date, QVariant.DateTime):
        return pd.to_datetime(pd.Series(values, dtype=object))
    return pd.Series([v if v is None or isinstance(v, str) else str(v) for v in values], dtype=object)


@dataclass(frozen=True)
class SceneCandidate:
    """What the dock makes of one raster layer.

    Attributes:
        use: ``"scene"`` (a Sentinel-2 product ThermoCrop reads: listed and ticked), ``"maybe"``
            (could be part of one, e.g. a single band file: listed, not ticked) or ``"no"``
            (left out of the list).
        reason: a short phrase for the user (the date and level, or why it was left out).
    """

    use: str
    reason: str


_CACHE: dict = {}


def scene_candidate(provider: str, source: str) -> SceneCandidate:
    """Whether the raster layer with ``provider`` and ``source`` can be a Sentinel-2 scene.

    Web and database layers (XYZ, WMS, WCS, ...) are never scenes; a local file is a scene when
    ``find_scenes`` reads it as a whole product, may be one when some band is a Sentinel-2 band
    (a per-band file, a multi-band file without band descriptions) and is not one otherwise
    (a DEM, a classification, an RGB picture). Answers are cached by path and modification time.
    """
    if provider != "gdal":
        return SceneCandidate("no", tr("a {provider} web or database layer, not a file").format(provider=provider))
    path = source.split("|")[0]
    if not os.path.exists(path):
        return SceneCandidate("no", tr("not a local file"))
    key = (path, os.path.getmtime(path))
    if key not in _CACHE:
        _CACHE[key] = _judge_file(Path(path))
    return _CACHE[key]


def _judge_file(path: Path) -> SceneCandidate:
    from ..core.errors import ThermoCropError
    from ..core.scenes.bands import S2_BANDS
    from ..core.scenes.local import find_scenes
    from ..core.scenes.naming import band_name

    try:
        scenes = find_scenes([path])
        scene = scenes[0]
        level = f" {scene.level}" if scene.level else ""
        return SceneCandidate("scene", f"{scene.date}{level}")
    except ThermoCropError as exc:
        problem = str(exc)
    except Exception as exc:  # an unreadable file is no scene; say why
        return SceneCandidate("no", tr("cannot be read: {error}").format(error=exc))
    try:
        import rasterio

        with rasterio.open(path) as ds:
            count, descriptions = ds.count, list(ds.descriptions)
    except Exception as exc:
        return SceneCandidate("no", tr("cannot be read: {error}").format(error=exc))
    named = {band_name(d or "") for d in descriptions}
    named |= {band_name(token) for token in path.stem.replace("-", "_").split("_")}
    s2 = sorted(named & set(S2_BANDS))
    if s2:
        return SceneCandidate("maybe", tr("holds only {bands}: tick it together with the product's other "
                                          "band files").format(bands=", ".join(s2)))
    if count >= len(S2_BANDS) and not any(descriptions):
        return SceneCandidate("maybe", tr("{count} bands without band names: {problem}").format(
            count=count, problem=problem))
    if "SCL" in named:
        return SceneCandidate("no", tr("a scene classification (SCL) file; it is read with its scene"))
    return SceneCandidate("no", tr("{count} band(s), none of them a Sentinel-2 band (a DEM or another "
                                   "raster?)").format(count=count))


LABEL_FIELD_GUESSES = ("crop", "label", "class", "crop_type", "croptype", "culture", "code_cultu", "code_group",
                       "afgkode", "snar_code", "snar_bezei", "crop_code", "landuse", "lu_code", "reference", "truth")
"""Names of fields that hold crop labels or codes, most likely first (compared case-insensitively)."""
ID_LIKE = ("fid", "id", "ogc_fid", "objectid", "parcel_id", "gid", "block", "area", "shape_area", "shape_leng")


def guess_label_field(names: Sequence[str], kinds: Optional[dict] = None) -> Optional[str]:
    """The field of ``names`` most likely to hold crop labels, or None; never an id field.

    A known label name first (``crop``, ``CODE_CULTU``, ...); else the first text field
    (``kinds``: name -> True when it holds text) that is not id-like.
    """
    lower = {n.lower(): n for n in names}
    for guess in LABEL_FIELD_GUESSES:
        if guess in lower:
            return lower[guess]
    if kinds:
        return next((n for n in names if kinds.get(n) and n.lower() not in ID_LIKE), None)
    return None
