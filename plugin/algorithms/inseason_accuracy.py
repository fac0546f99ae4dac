"""``thermocrop:inseasonaccuracy``: a model's accuracy as of each acquisition on labelled reference
parcels classified from the scenes and weather (``thermocrop inseason --reference``)."""

from __future__ import annotations

import os

from qgis.core import (
    QgsProcessing,
    QgsProcessingException,
    QgsProcessingOutputFile,
    QgsProcessingOutputNumber,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterField,
    QgsProcessingParameterFile,
    QgsProcessingParameterFolderDestination,
)

from ... import app
from ...app import ParcelsSpec, SeasonAccuracyRequest
from ...core.errors import ThermoCropError
from ..i18n import tr
from ..layers import features_to_frame
from .base import WIDGETS_MODULE, ThermoCropAlgorithm
from .request_parts import PRESET_LABELS, ProcessingRun, class_map_of, scenes_spec, weather_spec


class InSeasonAccuracy(ThermoCropAlgorithm):
    """Score a model on labelled reference parcels as of each acquisition and write the tables
    and the figure of ``thermocrop inseason``."""

    NAME = "inseasonaccuracy"
    DISPLAY = "In-season accuracy"
    MODEL = "MODEL"
    LABEL_FIELD = "LABEL_FIELD"
    CLASS_MAP = "CLASS_MAP"
    CLASS_MAP_FILE = "CLASS_MAP_FILE"
    TABLE = "TABLE"
    CLASSES = "CLASSES"
    FIGURE = "FIGURE"
    OVERALL_ACCURACY = "OVERALL_ACCURACY"
    PARCELS = "PARCELS"
    SUMMARY = ("How early in the season the model can be trusted on your own fields: classifies the labelled "
               "reference parcels from the scenes and weather as of each acquisition, and writes the overall "
               "accuracy, macro F1 and each class's F1 against the date and the growing degree days "
               "(inseason.csv), for each class the GDD at which its F1 first reaches 90 % of its whole-season "
               "value (inseason_classes.csv), and a figure of both (inseason.png). Parcels of classes the model "
               "does not know are left out and counted in the log.")
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
        "MODEL": "Model bundle (.tcm) to score. Leave empty for the model shipped with the plugin for the scenes' "
                 "processing level.",
        "OUTPUT": "Folder for inseason.csv, inseason_classes.csv and inseason.png; the files of an earlier run "
                  "there are replaced.",
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
        self.add(QgsProcessingParameterFile(self.MODEL, "Model bundle", fileFilter="ThermoCrop model (*.tcm)",
                                            optional=True))
        self.add(QgsProcessingParameterFolderDestination(self.OUTPUT, "Output folder"))
        self.addOutput(QgsProcessingOutputFile(self.TABLE, "Accuracy as of each acquisition (inseason.csv)"))
        self.addOutput(QgsProcessingOutputFile(self.CLASSES, "GDD at which each class is recognised "
                                                             "(inseason_classes.csv)"))
        self.addOutput(QgsProcessingOutputFile(self.FIGURE, "Figure (inseason.png)"))
        self.addOutput(QgsProcessingOutputNumber(self.OVERALL_ACCURACY, "Whole-season overall accuracy"))
        self.addOutput(QgsProcessingOutputNumber(self.PARCELS, "Reference parcels scored"))

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
        """``(ok, message)``: the files can be written into the folder, over none of the inputs."""
        # Here, not at the top: the training package needs torch, which the provider loads without.
        from ...training.season_accuracy import check_season_accuracy_out

        inputs = [self.parameterAsFile(parameters, self.MODEL, context),
                  self.parameterAsFile(parameters, self.WEATHER, context)]
        try:
            check_season_accuracy_out(self.parameterAsString(parameters, self.OUTPUT, context), overwrite=True,
                                      inputs=[p for p in inputs if p])
        except ThermoCropError as exc:
            return False, str(exc)
        return True, ""

    CHECKS = (ThermoCropAlgorithm.check_weather, check_model, check_class_map, ThermoCropAlgorithm.check_parcel_crs,
              ThermoCropAlgorithm.check_label_field, ThermoCropAlgorithm.check_scenes, check_output)

    def request(self, parameters, context) -> SeasonAccuracyRequest:
        """The scoring the parameters ask for, of the features of ``INPUT`` (read now)."""
        source = self.parameterAsSource(parameters, self.INPUT, context)
        if source is None:
            raise QgsProcessingException(tr("The reference layer could not be read; check INPUT."))
        label_field = self.parameterAsString(parameters, self.LABEL_FIELD, context)
        frame, _ = features_to_frame(source.getFeatures(), source.sourceCrs(), label_field=label_field)
        return SeasonAccuracyRequest(
            reference=ParcelsSpec(frame, name=source.sourceName()), label_field=label_field,
            scenes=scenes_spec(self, parameters, context), weather=weather_spec(self, parameters, context),
            out=self.parameterAsString(parameters, self.OUTPUT, context),
            model=self.parameterAsFile(parameters, self.MODEL, context) or None,
            class_map=class_map_of(self, parameters, context), overwrite=True)

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        from ...training.season_accuracy import REACHED_SHARE

        self.acknowledge_cancel(feedback)
        request = self.request(parameters, context)
        run = self.run_core(lambda: app.run_season_accuracy(request, ProcessingRun(feedback)))
        accuracy = run.accuracy
        if run.left_out:
            feedback.pushWarning(tr("Left out (classes the model does not know): {counts}").format(
                counts=", ".join(f"{c} {n}" for c, n in sorted(run.left_out.items()))))
        overall = float(accuracy.overall_accuracy[-1])
        feedback.pushInfo(tr("{n} reference parcels, {t} acquisitions: whole-season overall accuracy {oa:.3f}, "
                             "macro F1 {f1:.3f}").format(n=accuracy.parcels, t=len(accuracy.dates), oa=overall,
                                                         f1=float(accuracy.macro_f1[-1])))
        first = accuracy.overall_reached()
        if first is not None:
            feedback.pushInfo(tr("The overall accuracy first reaches {share} % of it on {date} ({gdd:.0f} GDD)").format(
                share=round(100 * REACHED_SHARE), date=str(accuracy.dates[first]), gdd=float(accuracy.gdd[first])))
        never = accuracy.never_right()
        for name, gdd in accuracy.reached().items():
            if gdd is not None:
                feedback.pushInfo(tr("{name}: F1 first reaches {share} % of its whole-season value at {gdd:.0f} "
                                     "GDD").format(name=name, share=round(100 * REACHED_SHARE), gdd=gdd))
            elif name in never:
                feedback.pushInfo(tr("{name}: never right on the whole season (F1 0)").format(name=name))
        paths = run.paths
        return {self.OUTPUT: request.out, self.TABLE: str(paths["table"]), self.CLASSES: str(paths["classes"]),
                self.FIGURE: str(paths["figure"]), self.OVERALL_ACCURACY: overall, self.PARCELS: accuracy.parcels}
