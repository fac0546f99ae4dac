"""Reads a classified QGIS layer into the frame ``core.accuracy`` assesses; shared by the accuracy
algorithm and the accuracy widget so both give the same numbers as ``thermocrop accuracy``."""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Optional

from qgis.core import QgsCoordinateReferenceSystem, QgsFeature

from ..core.errors import CancelledError

WEIGHTING_LABELS = {
    "area": "Map class areas: parcel areas of the layer (ha)",
    "count": "Map class areas: parcel counts of the layer",
    "none": "No area weighting (reference units only)",
}
"""User-facing names of ``core.accuracy.WEIGHTINGS``, in that order."""


def _value(value):
    # PyQt returns NULL attributes as a null QVariant, which is neither None nor empty text.
    if value is None or (hasattr(value, "isNull") and value.isNull()):
        return None
    return value


def attribute_frame(features: Iterable[QgsFeature], crs: QgsCoordinateReferenceSystem,
                    fields: Iterable[str], with_geometry: bool = True,
                    cancelled: Optional[Callable[[], bool]] = None):
    """A GeoDataFrame of ``fields`` (and the geometry) of the features, in feature order.

    Raises:
        CancelledError: ``cancelled()`` returned True while reading.
    """
    import geopandas as gpd
    from shapely import wkb

    fields = list(fields)
    columns: dict[str, list] = {name: [] for name in fields}
    geometries = []
    for n, feature in enumerate(features):
        if cancelled is not None and n % 2000 == 0 and cancelled():
            raise CancelledError("Cancelled by the user.")
        for name in fields:
            columns[name].append(_value(feature[name]))
        if with_geometry:
            geometry = feature.geometry()
            geometries.append(None if geometry.isNull() else wkb.loads(bytes(geometry.asWkb())))
    crs_wkt = crs.toWkt() if crs is not None and crs.isValid() else None
    if not with_geometry:
        geometries = [None] * len(columns[fields[0]]) if fields else []
    return gpd.GeoDataFrame(columns, geometry=geometries, crs=crs_wkt)


def assess_features(features: Iterable[QgsFeature], crs: QgsCoordinateReferenceSystem,
                    predicted_field: str, reference_field: str, weighting: str = "area",
                    class_areas: Optional[Mapping[str, float]] = None,
                    area_unit: Optional[str] = None, title: str = "",
                    cancelled: Optional[Callable[[], bool]] = None, reference_class_map: Optional[str] = None,
                    confidence_field: Optional[str] = None):
    """``core.accuracy.assess_layer`` on QGIS features (geometries read only when areas are needed).

    ``reference_class_map``: a class map (preset name or file) turning reference crop codes
    (e.g. the French ``CODE_CULTU``) into the map's classes; codes not in it become ``unknown``.
    ``confidence_field``: the map's confidence (``crop_conf``) for the reliability table, or None.
    """
    from ..core.accuracy import assess_layer
    from ..core.classmap import ClassMap

    need_geometry = class_areas is None and weighting == "area"
    fields = [predicted_field, reference_field] + ([confidence_field] if confidence_field else [])
    frame = attribute_frame(features, crs, fields, need_geometry, cancelled)
    unmapped = {}
    if reference_class_map:
        frame[reference_field], unmapped = ClassMap.load(reference_class_map).map_labels(frame[reference_field])
    report = assess_layer(frame, predicted_field, reference_field, weighting=weighting,
                          class_areas=class_areas, area_unit=area_unit, title=title, confidence_field=confidence_field)
    if unmapped:  # said, as the other doors say it: they count as the reference class 'unknown'
        codes = ", ".join(f"{code} ({n})" for code, n in list(unmapped.items())[:10])
        report.warnings.append(f"{sum(unmapped.values())} reference units have {len(unmapped)} codes that the class "
                               f"map {reference_class_map} does not map; they count as 'unknown'. Codes (units): "
                               f"{codes}")
    return report


REFERENCE_FIELD_GUESSES = ("reference", "ref", "truth", "crop_ref", "crop_true", "crop", "label",
                           "class", "ground_truth")
PREDICTED_FIELD_GUESSES = ("crop_pred", "prediction", "predicted", "pred")
CONFIDENCE_FIELD_GUESSES = ("crop_conf", "confidence", "conf")


def guess_confidence_field(names: Iterable[str]) -> Optional[str]:
    """A likely confidence field among a layer's fields (``crop_conf``...), or None."""
    lower = {n.lower(): n for n in names}
    return next((lower[g] for g in CONFIDENCE_FIELD_GUESSES if g in lower), None)


def guess_fields(names: Iterable[str]) -> tuple[Optional[str], Optional[str]]:
    """Likely ``(predicted, reference)`` field names among a layer's fields (None when unsure)."""
    names = list(names)
    lower = {n.lower(): n for n in names}
    predicted = next((lower[g] for g in PREDICTED_FIELD_GUESSES if g in lower), None)
    reference = next((lower[g] for g in REFERENCE_FIELD_GUESSES if g in lower and lower[g] != predicted),
                     None)
    return predicted, reference
