"""``thermocrop:calibratemodel``: refit a model's calibration (its confidence and prediction sets)
on labelled reference parcels and write the model with it as a new bundle."""

from __future__ import annotations

import os
from typing import Optional

from qgis.core import (
    QgsProcessing,
    QgsProcessingException,
    QgsProcessingOutputNumber,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterField,
    QgsProcessingParameterFile,
    QgsProcessingParameterFileDestination,
    QgsProcessingParameterNumber,
)

from ... import app
from ...app import CalibrateRequest, ParcelsSpec
from ...core.model.season_floor import FLOOR_LIMITS
from ..i18n import tr
from ..layers import features_to_frame
from .base import WIDGETS_MODULE, ThermoCropAlgorithm
from .request_parts import PRESET_LABELS, ProcessingRun, class_map_of, scenes_spec, weather_spec


class CalibrateModel(ThermoCropAlgorithm):
    """Classify labelled reference parcels with a model's raw probabilities, fit the calibration on
    their labels and write the calibrated model."""

    NAME = "calibratemodel"
    DISPLAY = "Calibrate model"
    MODEL = "MODEL"
    LABEL_FIELD = "LABEL_FIELD"
    CLASS_MAP = "CLASS_MAP"
    CLASS_MAP_FILE = "CLASS_MAP_FILE"
    METHOD = "METHOD"
    GDD_FLOOR = "GDD_FLOOR"
    METHODS = (("temperature", "Temperature scaling (labels unchanged)"),
               ("vector", "Vector scaling (a temperature and a bias per class)"))
    TEMPERATURE = "TEMPERATURE"
    PARCELS = "PARCELS"
    SUMMARY = ("Makes a model's confidence a probability on your own fields: classifies the labelled reference "
               "parcels from the scenes and weather, fits the calibration (a temperature for the probabilities and "
               "the scores of the prediction sets) on the parcels whose label is one of the model's classes, and "
               "writes the model with it as a new bundle. Use parcels the model was not trained on, at least 50 of "
               "them and some of every class; the log gives the calibration error before and after.")
    HELP = {
        "INPUT": "Reference parcel polygons with a crop label field (only the selected ones, if any are selected "
                 "and the layer is chosen with 'Selected features only').",
        "LABEL_FIELD": "Field holding each parcel's true class: the model's class names, or crop codes with a "
                       "class map. Parcels with an empty value are left out.",
        "CLASS_MAP": "Map national crop codes to classes with the table of the paper's data for France, Denmark or "
                     "Austria; codes not in the table become 'unknown'.",
        "CLASS_MAP_FILE": "Or your own class map: a CSV with columns code,class (or a YAML file). Give either this "
                          "or a preset, not both.",
        "SCENES": ThermoCropAlgorithm.SCENES_HELP,
        "SCENE_FOLDER": ThermoCropAlgorithm.SCENE_FOLDER_HELP,
        "WEATHER": "Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV; or leave it empty "
                   "and choose a weather service below.",
        "MODEL": "Model bundle (.tcm) to calibrate. Leave empty for the model shipped with the plugin.",
        "METHOD": "Temperature scaling divides the log-probabilities by one number and keeps every label. Vector "
                  "scaling adds one bias per class, fitted with a penalty chosen by cross-validation on the reference "
                  "parcels, for the whole season and for each stage of it: it corrects how often the model names each "
                  "class on your fields and can change labels, most early in the season. On the real Bavarian "
                  "parcels it gave the lower calibration error, and as of late May and June 7 to 15 points more "
                  "accuracy on the other half (docs/calibration.md).",
        "GDD_FLOOR": "Give the calibrated model this GDD floor: each parcel's acquisitions before it (growing degree "
                     "days since the season start) are left out of its classification where it has one from then "
                     "on, and the calibration is fitted so. 0: none. Leave it empty to keep the model's own (550 for "
                     "the shipped L1C model, chosen on real Bavarian parcels whose winter scenes misled it; "
                     "docs/in-season.md).",
        "OUTPUT": "The calibrated model bundle (.tcm) to write; the model's weights are those of the input model.",
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.add(QgsProcessingParameterFeatureSource(self.INPUT, "Reference parcels",
                                                     [QgsProcessing.TypeVectorPolygon]))
        label = QgsProcessingParameterField(self.LABEL_FIELD, "Label field", parentLayerParameterName=self.INPUT)
        label.setMetadata({"widget_wrapper": {"class": f"{WIDGETS_MODULE}.GuessedFieldWrapper", "guess": "label"}})
        self.add(label)
        self.add(QgsProcessingParameterEnum(self.CLASS_MAP, "Crop code table (class map preset)",
                                            options=list(PRESET_LABELS), defaultValue=0))
        self.add(QgsProcessingParameterFile(self.CLASS_MAP_FILE, "Class map file (CSV or YAML)", optional=True,
                                            fileFilter="Class maps (*.csv *.yml *.yaml)"))
        self.add_scene_parameters()
        self.add_weather_parameters(self.HELP["WEATHER"])
        self.add(QgsProcessingParameterFile(self.MODEL, "Model bundle to calibrate",
                                            fileFilter="ThermoCrop model (*.tcm)", optional=True))
        self.add(QgsProcessingParameterEnum(self.METHOD, "Calibration method",
                                            options=[label for _, label in self.METHODS], defaultValue=0))
        self.add(QgsProcessingParameterNumber(self.GDD_FLOOR, "GDD floor (empty: the model's own)",
                                              QgsProcessingParameterNumber.Double, optional=True,
                                              minValue=FLOOR_LIMITS[0], maxValue=FLOOR_LIMITS[1]))
        self.add(QgsProcessingParameterFileDestination(self.OUTPUT, "Calibrated model bundle",
                                                       fileFilter="ThermoCrop model (*.tcm)"))
        self.addOutput(QgsProcessingOutputNumber(self.TEMPERATURE, "Temperature"))
        self.addOutput(QgsProcessingOutputNumber(self.PARCELS, "Reference parcels used"))

    def check_model(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the model bundle given exists (empty: the shipped one)."""
        model = self.parameterAsFile(parameters, self.MODEL, context)
        if model and not os.path.isfile(model):
            return False, tr("The model bundle {model!r} does not exist; choose a .tcm file or leave it "
                             "empty.").format(model=model)
        return True, ""

    def check_class_map(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: a code table or a class map file that loads, not both."""
        try:
            class_map_of(self, parameters, context)
        except QgsProcessingException as exc:
            return False, str(exc)
        return True, ""

    def check_output(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the bundle can be written there, over none of the inputs."""
        inputs = [self.parameterAsFile(parameters, self.MODEL, context),
                  self.parameterAsFile(parameters, self.WEATHER, context)]
        return self.check_output_file(self.parameterAsFileOutput(parameters, self.OUTPUT, context),
                                      what="calibrated model", suffixes=(".tcm",), overwrite=True,
                                      inputs=[p for p in inputs if p])

    CHECKS = (ThermoCropAlgorithm.check_weather, check_model, check_class_map, ThermoCropAlgorithm.check_parcel_crs,
              ThermoCropAlgorithm.check_label_field, ThermoCropAlgorithm.check_scenes, check_output)

    def request(self, parameters, context) -> CalibrateRequest:
        """The calibration the parameters ask for, of the features of ``INPUT`` (read now)."""
        source = self.parameterAsSource(parameters, self.INPUT, context)
        if source is None:
            raise QgsProcessingException(tr("The reference layer could not be read; check INPUT."))
        label_field = self.parameterAsString(parameters, self.LABEL_FIELD, context)
        frame, _ = features_to_frame(source.getFeatures(), source.sourceCrs(), label_field=label_field)
        return CalibrateRequest(
            reference=ParcelsSpec(frame, name=source.sourceName()), label_field=label_field,
            scenes=scenes_spec(self, parameters, context), weather=weather_spec(self, parameters, context),
            out=self.parameterAsFileOutput(parameters, self.OUTPUT, context),
            model=self.parameterAsFile(parameters, self.MODEL, context) or None,
            class_map=class_map_of(self, parameters, context), overwrite=True,
            method=self.METHODS[self.parameterAsEnum(parameters, self.METHOD, context)][0],
            gdd_floor=self.gdd_floor(parameters, context))

    def gdd_floor(self, parameters, context) -> Optional[float]:
        """The ``GDD_FLOOR`` given, or None where it is empty (the model's own)."""
        if parameters.get(self.GDD_FLOOR) in (None, ""):
            return None
        return self.parameterAsDouble(parameters, self.GDD_FLOOR, context)

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        self.acknowledge_cancel(feedback)
        request = self.request(parameters, context)
        run = self.run_core(lambda: app.run_calibration(request, ProcessingRun(feedback)))
        calibration = run.calibration
        feedback.pushInfo(tr("Calibrated ({method}) on {n} reference parcels: temperature {t:.3f}").format(
            method=calibration.method, n=calibration.parcels, t=calibration.temperature))
        feedback.pushInfo(tr("Reference parcels by class: {counts}").format(
            counts=", ".join(f"{c} {n}" for c, n in sorted(run.counts.items()))))
        if run.skipped:
            feedback.pushWarning(tr("Left out (classes the model does not know): {counts}").format(
                counts=", ".join(f"{c} {n}" for c, n in sorted(run.skipped.items()))))
        feedback.pushInfo(tr("Expected calibration error (10 bins): {before:.3f} uncalibrated, {after:.3f} after").format(
            before=calibration.ece_before, after=calibration.ece_after))
        if run.current is not None:
            feedback.pushInfo(tr("With the model's own calibration: {current:.3f}").format(current=run.current))
        feedback.pushInfo(tr("Model written to {path}").format(path=run.path))
        return {self.OUTPUT: str(run.path), self.TEMPERATURE: calibration.temperature,
                self.PARCELS: calibration.parcels}
