"""``thermocrop:accuracyassessment``: a classified layer against its reference field, as an HTML
report (the confusion matrix as a heat map) and CSV tables."""

from __future__ import annotations

import os

from qgis.core import (
    QgsFeatureRequest,
    QgsProcessing,
    QgsProcessingException,
    QgsProcessingOutputNumber,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterField,
    QgsProcessingParameterFile,
    QgsProcessingParameterFileDestination,
    QgsWkbTypes,
)

from ..accuracy_layer import WEIGHTING_LABELS, assess_features
from ..i18n import tr
from ..staged_sinks import layer_file
from .base import WIDGETS_MODULE, ThermoCropAlgorithm

WEIGHTINGS = tuple(WEIGHTING_LABELS)


class AccuracyAssessment(ThermoCropAlgorithm):
    """Confusion matrix, overall accuracy, kappa, per-class accuracies and F1, and area-adjusted
    accuracy and class areas with 95 % confidence intervals."""

    NAME = "accuracyassessment"
    DISPLAY = "Accuracy assessment"
    PREDICTED_FIELD = "PREDICTED_FIELD"
    REFERENCE_FIELD = "REFERENCE_FIELD"
    CONFIDENCE_FIELD = "CONFIDENCE_FIELD"
    WEIGHTING = "WEIGHTING"
    CLASS_AREAS = "CLASS_AREAS"
    OUTPUT_HTML = "OUTPUT_HTML"
    OUTPUT_CSV = "OUTPUT_CSV"
    OUTPUT_MATRIX = "OUTPUT_MATRIX"
    OVERALL_ACCURACY = "OVERALL_ACCURACY"
    KAPPA = "KAPPA"
    ADJUSTED_OVERALL_ACCURACY = "ADJUSTED_OVERALL_ACCURACY"
    SAMPLE_SIZE = "SAMPLE_SIZE"
    CALIBRATION_ERROR = "CALIBRATION_ERROR"
    FILE_OUTPUTS = (("html", OUTPUT_HTML), ("csv", OUTPUT_CSV), ("matrix", OUTPUT_MATRIX))
    """The file outputs: ``core.accuracy.REPORT_FORMATS`` kind and parameter."""
    SUMMARY = (
        "Compares the classes of a classified layer with reference (ground truth) classes: "
        "confusion matrix, overall accuracy, kappa, and per class the user's accuracy "
        "(1 - commission error), the producer's accuracy (1 - omission error) and F1. With the "
        "map's class areas as strata weights it also gives area-adjusted accuracies and each "
        "class's estimated area with 95 % confidence intervals (stratified estimators of "
        "Olofsson et al. 2014, 'Good practices for estimating area and assessing accuracy of "
        "land change'). Every feature is part of the map; the features whose reference field is "
        "filled are the sample, which should be a random sample within each map class (or of "
        "the whole map). Writes an HTML report with the matrix as a heat map and a CSV table.")
    HELP = {
        "INPUT": "The classified layer (e.g. the output of Classify parcels), with the reference "
                 "class filled on the sampled features and empty elsewhere.",
        "PREDICTED_FIELD": "Field holding the map's (predicted) class.",
        "REFERENCE_FIELD": "Field holding the reference (ground truth) class, with the same "
                           "class names as the map; empty where a feature was not checked.",
        "CONFIDENCE_FIELD": "Optional field of the map's confidence (crop_conf): the report then shows how often "
                            "the reference units of each confidence are right (a reliability diagram, 10 bins) and "
                            "the expected calibration error.",
        "WEIGHTING": "Where the map's class areas (strata weights) come from when no class-area "
                     "table is given: the summed ellipsoidal area of the layer's features per "
                     "predicted class (hectares; polygons only), their number, or no weighting "
                     "(scores of the reference sample only).",
        "CLASS_AREAS": "Optional CSV table of the map's class areas (header, then one row per "
                       "class: class name, area in any unit, e.g. of a larger map the layer "
                       "samples). Overrides WEIGHTING.",
        "OUTPUT_HTML": "The report: summary, confusion matrix as a heat map, per-class and "
                       "area-adjusted tables (one self-contained file).",
        "OUTPUT_CSV": "Per-class table: counts, user's / producer's accuracy, F1, and the "
                      "area-adjusted figures with the half-widths of their 95 % intervals; "
                      "a last row 'overall'.",
        "OUTPUT_MATRIX": "Optional CSV of the confusion matrix (rows map, columns reference).",
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.add(QgsProcessingParameterFeatureSource(self.INPUT, "Classified layer",
                                                     [QgsProcessing.TypeVector]))
        self.add(QgsProcessingParameterField(self.PREDICTED_FIELD, "Map (predicted) class field",
                                             defaultValue="crop_pred", parentLayerParameterName=self.INPUT))
        reference = QgsProcessingParameterField(self.REFERENCE_FIELD, "Reference class field",
                                                parentLayerParameterName=self.INPUT)
        # The dialog starts at a reference-like field (reference, truth, crop...), never at fid.
        reference.setMetadata({"widget_wrapper": {"class": f"{WIDGETS_MODULE}.GuessedFieldWrapper",
                                                  "guess": "reference"}})
        self.add(reference)
        self.add(QgsProcessingParameterField(self.CONFIDENCE_FIELD, "Confidence field (reliability)",
                                             parentLayerParameterName=self.INPUT,
                                             type=QgsProcessingParameterField.Numeric, optional=True))
        self.add(QgsProcessingParameterEnum(self.WEIGHTING, "Map class areas",
                                            options=list(WEIGHTING_LABELS.values()), defaultValue=0))
        self.add(QgsProcessingParameterFile(self.CLASS_AREAS, "Table of map class areas (CSV)",
                                            fileFilter="CSV (*.csv);;All files (*)", optional=True))
        self.add(QgsProcessingParameterFileDestination(self.OUTPUT_HTML, "Accuracy report",
                                                       "HTML files (*.html)"))
        self.add(QgsProcessingParameterFileDestination(self.OUTPUT_CSV, "Per-class table", "CSV files (*.csv)"))
        self.add(QgsProcessingParameterFileDestination(self.OUTPUT_MATRIX, "Confusion matrix table",
                                                       "CSV files (*.csv)", optional=True,
                                                       createByDefault=False))
        for name, label in ((self.OVERALL_ACCURACY, "Overall accuracy"), (self.KAPPA, "Kappa"),
                            (self.ADJUSTED_OVERALL_ACCURACY, "Area-adjusted overall accuracy"),
                            (self.SAMPLE_SIZE, "Reference units"),
                            (self.CALIBRATION_ERROR, "Expected calibration error")):
            self.addOutput(QgsProcessingOutputNumber(name, label))

    def check_fields(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: a map field and a different reference field."""
        predicted = self.parameterAsString(parameters, self.PREDICTED_FIELD, context)
        reference = self.parameterAsString(parameters, self.REFERENCE_FIELD, context)
        if not predicted or not reference:
            return False, tr("Choose both the map (predicted) class field and the reference class field.")
        if predicted == reference:
            return False, tr("The map and reference fields are the same field; choose the field holding "
                             "the reference (ground truth) classes.")
        return True, ""

    def check_class_areas(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the class-area table given exists."""
        table = self.parameterAsFile(parameters, self.CLASS_AREAS, context)
        if table and not os.path.isfile(table):
            return False, tr("The class-area table {table!r} does not exist; choose a CSV file or leave it "
                             "empty.").format(table=table)
        return True, ""

    def check_outputs(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)`` of :meth:`checked_outputs`."""
        from ...core.errors import ThermoCropError

        try:
            self.checked_outputs(parameters, context)
        except ThermoCropError as exc:
            return False, str(exc)
        return True, ""

    CHECKS = (check_fields, check_class_areas, check_outputs)

    def output_files(self, parameters, context) -> tuple[list, list]:
        """``(outputs, inputs)`` for ``core.accuracy.check_report_outputs``: each file output as
        ``(kind, parameter, path)`` and the files the algorithm reads."""
        outputs = [(kind, key, self.parameterAsFileOutput(parameters, key, context) or None)
                   for kind, key in self.FILE_OUTPUTS]
        inputs = [layer_file(self.parameterAsVectorLayer(parameters, self.INPUT, context)),
                  self.parameterAsFile(parameters, self.CLASS_AREAS, context) or None]
        return outputs, inputs

    def checked_outputs(self, parameters, context) -> list:
        """The outputs, checked: none is the input layer's file (under any name) or the class-area
        table, no two are one file, each folder can be written. Processing replaces an existing
        report (the dialog asks first)."""
        from ...core.accuracy import check_report_outputs

        outputs, inputs = self.output_files(parameters, context)
        return check_report_outputs(outputs, overwrite=True, inputs=inputs)

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        source = self.parameterAsSource(parameters, self.INPUT, context)
        if source is None:
            raise QgsProcessingException(tr("The classified layer could not be read; check INPUT."))
        predicted = self.parameterAsString(parameters, self.PREDICTED_FIELD, context)
        reference = self.parameterAsString(parameters, self.REFERENCE_FIELD, context)
        confidence = self.parameterAsString(parameters, self.CONFIDENCE_FIELD, context) or None
        fields = source.fields()
        named = [(predicted, self.PREDICTED_FIELD), (reference, self.REFERENCE_FIELD)]
        for name, what in named + ([(confidence, self.CONFIDENCE_FIELD)] if confidence else []):
            if fields.indexOf(name) < 0:
                raise QgsProcessingException(tr("The layer {layer} has no field {name!r} ({what}); its fields are "
                                                "{fields}.").format(layer=source.sourceName(), name=name, what=what,
                                                                    fields=", ".join(fields.names())))
        weighting = WEIGHTINGS[self.parameterAsEnum(parameters, self.WEIGHTING, context)]
        table = self.parameterAsFile(parameters, self.CLASS_AREAS, context) or None
        if (table is None and weighting == "area"
                and QgsWkbTypes.geometryType(source.wkbType()) != QgsWkbTypes.PolygonGeometry):
            raise QgsProcessingException(tr("Map class areas from the layer need polygons; choose the parcel "
                                            "count weighting, give CLASS_AREAS or choose no weighting."))
        outputs, inputs = self.output_files(parameters, context)
        # Checked again here: a script may call processAlgorithm without checkParameterValues.
        self.run_core(lambda: self.checked_outputs(parameters, context))
        html_path, csv_path, matrix_path = (path for _, _, path in outputs)
        request = QgsFeatureRequest().setSubsetOfAttributes(
            [fields.indexOf(name) for name in (predicted, reference, confidence) if name])
        if table is not None or weighting != "area":
            request.setFlags(QgsFeatureRequest.NoGeometry)

        def assess():
            from ...core.accuracy import read_class_areas

            areas = read_class_areas(table) if table else None
            return assess_features(source.getFeatures(request), source.sourceCrs(), predicted, reference,
                                   weighting=weighting, class_areas=areas,
                                   area_unit="map units (table)" if areas is not None else None,
                                   title=f"{source.sourceName()} ({predicted} against {reference})",
                                   cancelled=feedback.isCanceled, confidence_field=confidence)

        report = self.run_core(assess)
        for warning in report.warnings:
            feedback.pushWarning(warning)
        s, e = report.sample, report.estimates
        feedback.pushInfo(tr("{n} reference units: overall accuracy {oa}, kappa {kappa}, macro F1 {f1}").format(
            n=s.n, oa=f"{s.overall_accuracy:.4f}", kappa=f"{s.kappa:.4f}", f1=f"{s.macro_f1:.4f}"))
        if e is not None:
            from ...core.accuracy import format_estimate

            feedback.pushInfo(tr("Area-adjusted overall accuracy {estimate} (95 %)").format(
                estimate=format_estimate(e.overall_accuracy, e.overall_accuracy_se, 4)))

        if report.reliability is not None:
            feedback.pushInfo(tr("Expected calibration error (10 bins) of {field}: {ece} over {n} units").format(
                field=confidence, ece=f"{report.reliability.ece:.4f}", n=report.reliability.units))

        def write():
            from ...core.accuracy import write_reports

            return write_reports(report, outputs, overwrite=True, inputs=inputs)

        self.run_core(write)
        results = {self.OUTPUT_HTML: html_path, self.OUTPUT_CSV: csv_path,
                   self.OVERALL_ACCURACY: s.overall_accuracy, self.KAPPA: s.kappa,
                   self.ADJUSTED_OVERALL_ACCURACY: e.overall_accuracy if e is not None else None,
                   self.SAMPLE_SIZE: s.n,
                   self.CALIBRATION_ERROR: report.reliability.ece if report.reliability is not None else None}
        if matrix_path:
            results[self.OUTPUT_MATRIX] = matrix_path
        return results
