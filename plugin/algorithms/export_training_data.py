"""``thermocrop:exporttrainingdata``: labelled parcels -> a pixel-set training dataset folder."""

from __future__ import annotations

import os

from qgis.core import (
    QgsProcessing,
    QgsProcessingException,
    QgsProcessingParameterField,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterFile,
    QgsProcessingParameterFolderDestination,
    QgsProcessingParameterString,
)

from ..layers import features_to_frame
from .base import ThermoCropAlgorithm


class ExportTrainingData(ThermoCropAlgorithm):
    """Extract the pixel sets of labelled parcels into a dataset for ``trainmodel``."""

    NAME = "exporttrainingdata"
    DISPLAY = "Export training data"
    SUMMARY = ("Samples up to MAX_PIXELS pixels of every labelled parcel on every scene date, with "
               "cloud masks and growing degree days, and writes them as a ThermoCrop dataset folder "
               "that Train model reads.")
    HELP = {
        "INPUT": "Parcel polygons with a crop label field.",
        "LABEL_FIELD": "Field holding each parcel's crop class (one of the model classes).",
        "SCENES": ThermoCropAlgorithm.SCENES_HELP,
        "SCENE_FOLDER": ThermoCropAlgorithm.SCENE_FOLDER_HELP,
        "WEATHER": "Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV.",
        "SEASON_START": "Season start as MM-DD, or MM-DD/-1 for the previous year.",
        "MAX_PIXELS": "Pixels sampled per parcel and date (the paper uses 64).",
        "OUTPUT": "Dataset folder to create; it must not exist yet.",
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.add(QgsProcessingParameterFeatureSource("INPUT", "Labelled parcels", [QgsProcessing.TypeVectorPolygon]))
        self.add(QgsProcessingParameterField("LABEL_FIELD", "Label field", parentLayerParameterName="INPUT"))
        self.add_scene_parameters()
        self.add(QgsProcessingParameterFile("WEATHER", "Daily temperature file"))
        self.add(QgsProcessingParameterString("SEASON_START", "Season start", defaultValue="01-01"))
        self.add(self.number("MAX_PIXELS", "Pixels per parcel", "max_pixels", 64))
        self.add(QgsProcessingParameterFolderDestination("OUTPUT", "Dataset folder"))

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        ok, message = self.check_files([self.parameterAsFile(parameters, "WEATHER", context)], "temperature file")
        if not ok:
            return ok, message
        ok, message = self.check_parcel_crs(parameters, context)
        if not ok:
            return ok, message
        try:
            from ...core.gdd import SeasonStart

            SeasonStart.parse(self.parameterAsString(parameters, "SEASON_START", context))
        except ValueError as exc:
            return False, str(exc)
        return self.check_scenes(parameters, context)

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        source = self.parameterAsSource(parameters, "INPUT", context)
        label_field = self.parameterAsString(parameters, "LABEL_FIELD", context)
        scenes = self.scenes(parameters, context)
        weather = self.parameterAsFile(parameters, "WEATHER", context)
        season = self.parameterAsString(parameters, "SEASON_START", context)
        max_pixels = self.parameterAsInt(parameters, "MAX_PIXELS", context)
        out = self.parameterAsString(parameters, "OUTPUT", context)
        checked = self.preflight(parameters, context, feedback, scenes=scenes, weather=weather, season_start=season)
        scenes = checked.scenes
        # Processing creates the destination folder beforehand; an empty one is ours to fill.
        if os.path.isdir(out) and os.listdir(out):
            raise QgsProcessingException(f"The dataset folder {out} is not empty; choose a new folder.")
        if os.path.isdir(out):
            os.rmdir(out)
        frame, _ = features_to_frame(source.getFeatures(), source.sourceCrs(), label_field=label_field)

        def extract():
            from ...core.extract import extract_to_dataset

            return extract_to_dataset(frame, scenes, weather, out, label_field=label_field, block_field=None,
                                      max_pixels=max_pixels, season_start=season,
                                      progress=self.progress(feedback))

        path = self.run_core(extract)
        return {"OUTPUT": str(path)}
