"""``thermocrop:exporttrainingdata``: labelled parcels -> a pixel-set training dataset folder."""

from __future__ import annotations

import os
from typing import Optional

from qgis.core import (
    QgsProcessing,
    QgsProcessingException,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterField,
    QgsProcessingParameterFile,
    QgsProcessingParameterFolderDestination,
    QgsProcessingParameterString,
)

from ... import app
from ...app import ExtractRequest, ParcelsSpec
from ...core.settings import ExtractionSettings, PixelSampling, ThermalTime
from ..i18n import tr
from ..layers import features_to_frame
from .base import WIDGETS_MODULE, ThermoCropAlgorithm
from .request_parts import (
    CLUSTER_HELP,
    PRESET_LABELS,
    ProcessingRun,
    add_cluster_parameters,
    check_cluster,
    class_map_of,
    cluster_spec,
    run_request,
    scenes_spec,
    weather_spec,
)

DEFAULT_BLOCK_FIELD = "block"
"""The block field ``core.extract`` reads by default, and this algorithm's default."""


class ExportTrainingData(ThermoCropAlgorithm):
    """Extract the pixel sets of labelled parcels into a dataset for ``trainmodel``."""

    NAME = "exporttrainingdata"
    DISPLAY = "Export training data"
    READS_GEOPARQUET = True
    LABEL_FIELD = "LABEL_FIELD"
    BLOCK_FIELD = "BLOCK_FIELD"
    CLASS_MAP = "CLASS_MAP"
    CLASS_MAP_FILE = "CLASS_MAP_FILE"
    MIN_PARCELS = "MIN_PARCELS"
    SEASON_START = "SEASON_START"
    MAX_PIXELS = "MAX_PIXELS"
    SUMMARY = ("Samples up to MAX_PIXELS pixels of every labelled parcel on every scene date, with "
               "cloud masks and growing degree days, and writes them as a ThermoCrop dataset folder "
               "that Train model reads. The dataset's classes are the labels found, or the classes "
               "a class map gives the crop codes.")
    HELP = {
        "INPUT": "Parcel polygons with a crop label field."
                 " Or a GeoParquet file (.parquet) given by its path, which QGIS 3.22 cannot open: "
                 "ThermoCrop reads it by row groups (parcels named by its parcel_id field, as on the "
                 "command line).",
        "LABEL_FIELD": "Field holding each parcel's crop label: any class names or crop codes. Parcels "
                       "with an empty value are left unlabelled.",
        "CLASS_MAP": "Map national crop codes to classes with the table of the paper's data for France, "
                     "Denmark or Austria; codes not in the table become 'unknown'.",
        "CLASS_MAP_FILE": "Or your own class map: a CSV with columns code,class (or a YAML file). Codes "
                          "not in it become 'unknown'. Give either this or a preset, not both.",
        "BLOCK_FIELD": "Field of each parcel's spatial block (e.g. a 10 km grid cell id): Train model splits "
                       "training, validation and test by block, so that neighbouring parcels do not score each "
                       "other. Default: the field 'block' when the layer has one; empty: no blocks (Train model "
                       "then splits at random and warns).",
        "MIN_PARCELS": "Classes with fewer labelled parcels become 'unknown' (0: keep every class).",
        "SCENES": ThermoCropAlgorithm.SCENES_HELP,
        "SCENE_FOLDER": ThermoCropAlgorithm.SCENE_FOLDER_HELP,
        "WEATHER": "Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV; or leave it empty "
                   "and choose a weather service below.",
        "SEASON_START": "Season start as MM-DD, or MM-DD/-1 for the previous year.",
        "MAX_PIXELS": "Pixels sampled per parcel and date (the paper uses 64).",
        **CLUSTER_HELP,
        "OUTPUT": "Dataset folder to create; it must not exist yet.",
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.add(QgsProcessingParameterFeatureSource(self.INPUT, "Labelled parcels",
                                                     [QgsProcessing.TypeVectorPolygon]))
        label = QgsProcessingParameterField(self.LABEL_FIELD, "Label field", parentLayerParameterName=self.INPUT)
        # The dialog starts at a label-like field (crop, CODE_CULTU...), never at fid.
        label.setMetadata({"widget_wrapper": {"class": f"{WIDGETS_MODULE}.GuessedFieldWrapper", "guess": "label"}})
        self.add(label)
        self.add(QgsProcessingParameterField(self.BLOCK_FIELD, "Block field (spatial split)",
                                             defaultValue=DEFAULT_BLOCK_FIELD, parentLayerParameterName=self.INPUT,
                                             optional=True))
        self.add(QgsProcessingParameterEnum(self.CLASS_MAP, "Crop code table (class map preset)",
                                            options=list(PRESET_LABELS), defaultValue=0))
        self.add(QgsProcessingParameterFile(self.CLASS_MAP_FILE, "Class map file (CSV or YAML)", optional=True,
                                            fileFilter="Class maps (*.csv *.yml *.yaml)"))
        self.add(self.number(self.MIN_PARCELS, "Minimum parcels per class", "min_parcels", 0))
        self.add_scene_parameters()
        self.add_weather_parameters(self.HELP["WEATHER"])
        self.add(QgsProcessingParameterString(self.SEASON_START, "Season start", defaultValue="01-01"))
        self.add(self.number(self.MAX_PIXELS, "Pixels per parcel", "max_pixels", 64))
        add_cluster_parameters(self)
        self.add(QgsProcessingParameterFolderDestination(self.OUTPUT, "Dataset folder"))

    def check_season_start(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the season start reads as MM-DD or MM-DD/-1."""
        from ...core.thermal.gdd import SeasonStart

        try:
            SeasonStart.parse(self.parameterAsString(parameters, self.SEASON_START, context))
        except ValueError as exc:
            return False, str(exc)
        return True, ""

    def check_class_map(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: a code table or a class map file that loads, not both."""
        try:
            self.class_map(parameters, context)
        except QgsProcessingException as exc:
            return False, str(exc)
        return True, ""

    def check_output(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the dataset folder can be created (before any scene is read)."""
        return self.check_output_file(self.parameterAsString(parameters, self.OUTPUT, context),
                                      what="dataset folder", kind="folder")

    CHECKS = (ThermoCropAlgorithm.check_weather, ThermoCropAlgorithm.check_parcel_crs,
              ThermoCropAlgorithm.check_label_field, check_season_start, check_class_map,
              ThermoCropAlgorithm.check_scenes, check_cluster, check_output)

    def class_map(self, parameters, context):
        """The ``ClassMap`` chosen (preset or file), or None."""
        return class_map_of(self, parameters, context)

    def block_field(self, parameters, context, names: list, feedback=None) -> Optional[str]:
        """The block field to copy, or None: the default ``block`` counts only when the layer has it.

        Raises:
            QgsProcessingException: another field was named that the layer lacks.
        """
        name = self.parameterAsString(parameters, self.BLOCK_FIELD, context)
        if not name:
            return None
        if name in names:
            return name
        if name == DEFAULT_BLOCK_FIELD:
            if feedback is not None:
                feedback.pushInfo(tr("The parcels have no '{field}' field; Train model will split them at random "
                                     "(give a block field for a spatial split).").format(field=DEFAULT_BLOCK_FIELD))
            return None
        raise QgsProcessingException(tr("The parcel layer has no field {field}; choose its block field or leave "
                                        "it empty.").format(field=name))

    def request(self, parameters, context, feedback) -> ExtractRequest:
        """The extraction the parameters ask for, of the labelled features of ``INPUT`` (read now; a
        GeoParquet file, which QGIS cannot read, is read by the run by row groups)."""
        label_field = self.parameterAsString(parameters, self.LABEL_FIELD, context)
        path = self.geoparquet_input(parameters, context)
        if path is not None:
            from ...core.io.source_layer import source_field_kinds

            names = list(self.run_core(lambda: source_field_kinds(path)))
            block_field = self.block_field(parameters, context, names, feedback)
            parcels = ParcelsSpec(path)
        else:
            source = self.parameterAsSource(parameters, self.INPUT, context)
            block_field = self.block_field(parameters, context, source.fields().names(), feedback)
            frame, _ = features_to_frame(source.getFeatures(), source.sourceCrs(), label_field=label_field,
                                         block_field=block_field)
            parcels = ParcelsSpec(frame, name=source.sourceName())
        season = self.parameterAsString(parameters, self.SEASON_START, context)
        sampling = PixelSampling(max_pixels=self.parameterAsInt(parameters, self.MAX_PIXELS, context))
        return ExtractRequest(
            parcels=parcels, scenes=scenes_spec(self, parameters, context),
            weather=weather_spec(self, parameters, context), out=self.parameterAsString(parameters, self.OUTPUT, context),
            label_field=label_field, class_map=self.class_map(parameters, context),
            min_parcels=self.parameterAsInt(parameters, self.MIN_PARCELS, context), block_field=block_field,
            settings=ExtractionSettings(sampling=sampling, thermal=ThermalTime(season_start=season)),
            chunk_size=self.parameterAsInt(parameters, self.CHUNK_SIZE, context),
            cluster=cluster_spec(self, parameters, context))

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        out = self.parameterAsString(parameters, self.OUTPUT, context)
        min_parcels = self.parameterAsInt(parameters, self.MIN_PARCELS, context)
        # Processing creates the destination folder beforehand; an empty one is ours to fill.
        if os.path.isdir(out) and os.listdir(out):
            raise QgsProcessingException(tr("The dataset folder {out} is not empty; choose a new folder.").format(
                out=out))
        request = self.request(parameters, context, feedback)
        if os.path.isdir(out):
            os.rmdir(out)
        path = run_request(self, lambda: app.run_extraction(request, ProcessingRun(feedback)), request.cluster,
                           feedback).path
        from ...core.pixel_sets import open_dataset

        ps = open_dataset(path)
        labels = ps.meta.get("labels", {})
        feedback.pushInfo(tr("{n} classes (labelled parcels with data):").format(n=len(ps.classes)))
        for name, n in ps.class_counts().items():
            feedback.pushInfo(f"  {name}: {n}")
        if labels.get("unmapped_codes"):
            feedback.pushWarning(tr("Codes not in the class map, counted as unknown: {codes}").format(
                codes=", ".join(f"{code} ({n})" for code, n in labels["unmapped_codes"].items())))
        if labels.get("rare_classes"):
            feedback.pushWarning(tr("Classes with fewer than {n} parcels, counted as unknown: {classes}").format(
                n=min_parcels, classes=", ".join(f"{c} ({n})" for c, n in labels["rare_classes"].items())))
        return {"OUTPUT": str(path)}
