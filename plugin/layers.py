"""Turns QGIS features into the GeoDataFrames core reads, remembering which feature is which row."""

from __future__ import annotations

from typing import Iterable, Optional

from qgis.core import QgsCoordinateReferenceSystem, QgsFeature

ID_COLUMN = "parcel_id"


def features_to_frame(features: Iterable[QgsFeature], crs: QgsCoordinateReferenceSystem,
                      label_field: Optional[str] = None):
    """A GeoDataFrame of the features' geometries, with the feature ids as parcel ids.

    Args:
        features: the parcels, in the order the result rows will follow.
        crs: their CRS.
        label_field: attribute copied as column ``label_field`` (for training data), or None.

    Returns:
        ``(frame, fids)``: the GeoDataFrame (column ``parcel_id`` = feature id as text, rows in
        feature order) and the ``(P,)`` list of feature ids.
    """
    import geopandas as gpd
    from shapely import wkb

    fids, geoms, labels = [], [], []
    for feature in features:
        geometry = feature.geometry()
        fids.append(feature.id())
        geoms.append(None if geometry.isNull() else wkb.loads(bytes(geometry.asWkb())))
        if label_field:
            value = feature[label_field]
            labels.append(None if value is None or str(value) == "NULL" else str(value))
    data = {ID_COLUMN: [str(fid) for fid in fids]}
    if label_field:
        data[label_field] = labels
    frame = gpd.GeoDataFrame(data, geometry=geoms, crs=crs.toWkt() if crs.isValid() else None)
    return frame, fids
