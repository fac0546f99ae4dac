"""``thermocrop:parcelgdd``: growing degree days of every parcel at given dates or scene dates."""

from __future__ import annotations

import numpy as np
from qgis.core import (
    QgsCoordinateReferenceSystem,
    QgsFeature,
    QgsFeatureSink,
    QgsField,
    QgsFields,
    QgsProcessing,
    QgsProcessingException,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterFile,
    QgsProcessingParameterNumber,
    QgsProcessingParameterString,
)
from qgis.PyQt.QtCore import QVariant

from .base import ThermoCropAlgorithm

METHODS = ("paper", "average")


class ParcelGDD(ThermoCropAlgorithm):
    """Adds one GDD field per date (``gdd_YYYYMMDD``) to the parcels."""

    NAME = "parcelgdd"
    SCENES_REQUIRED = False  # DATES may give the dates instead
    DISPLAY = "Growing degree days per parcel"
    SUMMARY = ("Accumulates growing degree days (GDD) from the season start at each parcel's "
               "centroid, from daily temperatures, and adds one field per date.")
    HELP = {
        "INPUT": "Parcel polygons, any CRS.",
        "WEATHER": "Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV.",
        "DATES": "Dates as YYYY-MM-DD separated by commas. Leave empty to use the scene dates.",
        "SCENES": "Sentinel-2 scenes whose acquisition dates are used when DATES is empty.",
        "SCENE_FOLDER": "A folder of scenes whose dates are used when DATES is empty.",
        "SEASON_START": "Season start as MM-DD, or MM-DD/-1 for the previous year (e.g. 09-01/-1).",
        "T_BASE": "Base temperature (°C) below which no growth is counted.",
        "T_CAP": "Cap temperature (°C) above which no extra growth is counted.",
        "METHOD": "paper: clip daily min/max then average; average: average then clip at the base.",
        "OUTPUT": "The parcels with one field gdd_YYYYMMDD per date.",
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.add(QgsProcessingParameterFeatureSource("INPUT", "Parcel layer", [QgsProcessing.TypeVectorPolygon]))
        self.add(QgsProcessingParameterFile("WEATHER", "Daily temperature file"))
        self.add(QgsProcessingParameterString("DATES", "Dates", optional=True))
        self.add_scene_parameters("Scenes (for their dates)")
        self.add(QgsProcessingParameterString("SEASON_START", "Season start", defaultValue="01-01"))
        self.add(QgsProcessingParameterNumber("T_BASE", "Base temperature", QgsProcessingParameterNumber.Double,
                                              defaultValue=0.0))
        self.add(QgsProcessingParameterNumber("T_CAP", "Cap temperature", QgsProcessingParameterNumber.Double,
                                              defaultValue=30.0))
        self.add(QgsProcessingParameterEnum("METHOD", "Method", options=list(METHODS), defaultValue=0))
        self.add(QgsProcessingParameterFeatureSink("OUTPUT", "Parcels with GDD", QgsProcessing.TypeVectorPolygon))

    def _dates(self, parameters, context) -> np.ndarray:
        text = self.parameterAsString(parameters, "DATES", context).strip()
        if text:
            try:
                return np.array(sorted({np.datetime64(d.strip(), "D") for d in text.split(",") if d.strip()}))
            except ValueError as exc:
                raise QgsProcessingException(f"Cannot read the dates {text!r}: write them as YYYY-MM-DD, "
                                             "separated by commas.") from exc
        scenes = self.scenes(parameters, context)

        def dates():
            from ...core.scenes import find_scenes

            return np.array(sorted({np.datetime64(s.date, "D") for s in find_scenes(scenes)}))

        return self.run_core(dates)

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        ok, message = self.check_files([self.parameterAsFile(parameters, "WEATHER", context)], "temperature file")
        if not ok:
            return ok, message
        if not self.parameterAsString(parameters, "DATES", context).strip():
            ok, message = self.check_scenes(parameters, context)
            if not ok:
                return False, "Give either DATES or scenes, so that there are dates to compute GDD at. " + message
        if self.parameterAsDouble(parameters, "T_CAP", context) <= self.parameterAsDouble(parameters, "T_BASE",
                                                                                           context):
            return False, "The cap temperature must be above the base temperature."
        return True, ""

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        source = self.parameterAsSource(parameters, "INPUT", context)
        dates = self._dates(parameters, context)
        weather_path = self.parameterAsFile(parameters, "WEATHER", context)
        season = self.parameterAsString(parameters, "SEASON_START", context)
        t_base = self.parameterAsDouble(parameters, "T_BASE", context)
        t_cap = self.parameterAsDouble(parameters, "T_CAP", context)
        method = METHODS[self.parameterAsEnum(parameters, "METHOD", context)]
        features = list(source.getFeatures())
        # A point inside each parcel (as extraction uses), in the layer CRS; the weather reader
        # transforms it to the grid's.
        points = [f.geometry().pointOnSurface().asPoint() if f.hasGeometry() else None for f in features]
        xs = np.array([p.x() if p is not None else np.nan for p in points])
        ys = np.array([p.y() if p is not None else np.nan for p in points])
        crs: QgsCoordinateReferenceSystem = source.sourceCrs()

        def compute():
            from ...core.gdd import SeasonStart, gdd_at_points

            feedback.pushInfo(f"GDD of {len(features)} parcels at {len(dates)} dates from {weather_path}")
            return gdd_at_points(weather_path, xs, ys, crs.toWkt(), dates, season_start=SeasonStart.parse(season),
                                 t_base=t_base, t_cap=t_cap, method=method,
                                 parcel_ids=[str(f.id()) for f in features])

        gdd = self.run_core(compute)
        feedback.setProgress(50)
        lost = [str(features[i].id()) for i in np.flatnonzero(~np.isfinite(gdd).all(axis=1))]
        if lost:
            feedback.pushWarning(f"{len(lost)} parcels have no usable temperatures (no grid cell with data within "
                                 f"25 km, or a gap of more than 3 days); their GDD fields stay empty. Features: "
                                 f"{', '.join(lost[:10])}{' ...' if len(lost) > 10 else ''}")
        fields = QgsFields(source.fields())
        names = [f"gdd_{str(d).replace('-', '')}" for d in dates]
        for name in names:
            fields.append(QgsField(name, QVariant.Double))
        sink, dest_id = self.parameterAsSink(parameters, "OUTPUT", context, fields, source.wkbType(), crs)
        for i, feature in enumerate(features):
            out = QgsFeature(fields)
            out.setGeometry(feature.geometry())
            out.setAttributes(feature.attributes() + [float(v) if np.isfinite(v) else None for v in gdd[i]])
            sink.addFeature(out, QgsFeatureSink.FastInsert)
        feedback.setProgress(100)
        return {"OUTPUT": dest_id}
