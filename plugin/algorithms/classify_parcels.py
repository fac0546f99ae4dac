"""``thermocrop:classifyparcels``: predict the crop of every parcel with a model bundle."""

from __future__ import annotations

import contextlib
import datetime
import os
from typing import Optional

from qgis.core import (
    QgsFeature,
    QgsFeatureSink,
    QgsField,
    QgsFields,
    QgsProcessing,
    QgsProcessingException,
    QgsProcessingLayerPostProcessorInterface,
    QgsProcessingOutputNumber,
    QgsProcessingParameterBoolean,
    QgsProcessingParameterFeatureSink,
    QgsProcessingParameterFeatureSource,
    QgsProcessingParameterFile,
    QgsProcessingParameterString,
    QgsProcessingUtils,
    QgsWkbTypes,
)
from qgis.PyQt.QtCore import QVariant

from ... import app
from ...app import NOT_SELECTED, ClassificationOutput, ClassifyRequest, ParcelsSpec, ResultFields, result_columns
from ...core.classify import estimated_seconds
from ...core.errors import InputError
from ...core.inseason import DEFAULT_DECIDED_THRESHOLD
from ...core.model.calibration import DEFAULT_COVERAGE
from ...core.result_columns import earlier_run_fields, empty_columns
from ..i18n import tr
from ..layer_writer import QVARIANT_KINDS, column_kind, qgis_value
from ..layers import features_to_frame
from ..staged_sinks import (
    StagedSink,
    check_sink,
    field_kinds,
    file_output,
    geometry_type,
    layer_file,
    load_on_completion,
)
from ..styles import apply_class_style, save_style_beside
from .base import ThermoCropAlgorithm
from .request_parts import (
    CLUSTER_HELP,
    ProcessingRun,
    add_cluster_parameters,
    check_cluster,
    cluster_spec,
    run_request,
    scenes_spec,
    weather_spec,
)

QVARIANT_OF_KIND = {"string": QVariant.String, "real": QVariant.Double, "integer": QVariant.LongLong}
"""The attribute type of each kind of result column (``core.io.vector.field_kind``)."""

# Post-processors must outlive processAlgorithm; QGIS holds only a C++ pointer to them.
_POST_PROCESSORS: list = []


class _StyleLoadedLayer(QgsProcessingLayerPostProcessorInterface):
    def __init__(self, field: str, classes) -> None:
        super().__init__()
        self.field, self.classes = field, classes

    def postProcessLayer(self, layer, context, feedback):  # noqa: N802 (QGIS API)
        apply_class_style(layer, self.field, self.classes)


class ClassifyParcels(ThermoCropAlgorithm):
    """Classify parcels: the input's features plus label, confidence and status fields."""

    NAME = "classifyparcels"
    DISPLAY = "Classify parcels"
    READS_GEOPARQUET = True
    MODEL = "MODEL"
    LABEL_FIELD = "LABEL_FIELD"
    CONFIDENCE_FIELD = "CONFIDENCE_FIELD"
    STATUS_FIELD = "STATUS_FIELD"
    PROBABILITIES = "PROBABILITIES"
    PREDICTION_SETS = "PREDICTION_SETS"
    COVERAGE = "COVERAGE"
    AS_OF = "AS_OF"
    DECIDED = "DECIDED"
    DECIDED_THRESHOLD = "DECIDED_THRESHOLD"
    CLASS_SHARES = "CLASS_SHARES"
    CLASSIFIED = "CLASSIFIED"
    SUMMARY = ("Predicts the crop type of every parcel from a Sentinel-2 time series and daily "
               "temperatures with a ThermoCrop model (PSE+LTAE with thermal positional encoding). "
               "The output keeps every feature and attribute of the input and adds the predicted "
               "class, its probability and a status saying why a parcel could not be classified.")
    HELP = {
        "INPUT": "Parcel polygons, any CRS. Every feature is classified."
                 " Or a GeoParquet file (.parquet) given by its path, which QGIS 3.22 cannot open: "
                 "ThermoCrop reads it by row groups and writes the output itself (a temporary output "
                 "becomes a GeoPackage).",
        "SCENES": ThermoCropAlgorithm.SCENES_HELP,
        "SCENE_FOLDER": ThermoCropAlgorithm.SCENE_FOLDER_HELP,
        "WEATHER": "Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV "
                   "(date,tmin,tmax) covering the season; or leave it empty and choose a weather service below.",
        "MODEL": "Model bundle (.tcm). Leave empty for the model shipped for the scenes' processing level: "
                 "default_fast_l2a.tcm for L2A scenes (every catalogue's), default_fast.tcm for L1C or mixed "
                 "ones; as of a date whose last scene kept has fewer than 2,000 GDD (about mid-July in central "
                 "Europe), on L1C scenes, the in-season model inseason.tcm. The ensembles they were distilled "
                 "from, default_l2a.tcm and default.tcm, are beside them in resources/models.",
        "LABEL_FIELD": "Name of the output field with the predicted class.",
        "CONFIDENCE_FIELD": "Name of the output field with the predicted class's probability (0-1).",
        "STATUS_FIELD": "Name of the output field saying 'ok' or why a parcel was not classified.",
        "PROBABILITIES": "Also write each class's probability (p_<class>), the margin between the two likeliest "
                         "classes (crop_margin) and the normalised entropy of the probabilities (crop_entropy, "
                         "0 sure .. 1 undecided).",
        "PREDICTION_SETS": "Write each parcel's prediction set: the classes that hold its true class with the "
                           "chosen coverage (crop_set, most probable first, joined by |) and how many they are "
                           "(crop_set_size; 1 means the label is sure at that coverage). Needs a calibrated model.",
        "COVERAGE": "The chance that a parcel's prediction set holds its true class (0.9: nine parcels in ten); a "
                    "higher coverage gives larger sets.",
        "AS_OF": "Classify as of this date (YYYY-MM-DD): scenes acquired after it are left out and the season's "
                 "status on it (acquisitions, GDD) is logged. Empty: the whole season.",
        "DECIDED": "Also write crop_decided (the acquisition from which the label no longer changes and keeps the "
                   "confidence below, as YYYY-MM-DD text) and crop_decided_gdd (the parcel's GDD then).",
        "DECIDED_THRESHOLD": "The confidence (calibrated where the model carries a calibration) a decided label "
                             "keeps up to the last acquisition, from 0 to 1. Used with DECIDED.",
        "CLASS_SHARES": "Optional: the crops' shares of the parcels in the area, known from elsewhere (last year's "
                        "declarations, agricultural statistics), as a CSV file 'class,share' by the model's class "
                        "names. The probabilities are brought to these shares before labels and sets are made, "
                        "which helps most early in the season (decision dates follow each date's map so adjusted). "
                        "Not with a partitioned run.",
        **CLUSTER_HELP,
        "OUTPUT": "Classified parcels, styled by class; the style is saved beside file outputs.",
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.add(QgsProcessingParameterFeatureSource(
            self.INPUT, "Parcel layer", [QgsProcessing.TypeVectorPolygon]))
        self.add_scene_parameters()
        self.add_weather_parameters(self.HELP["WEATHER"])
        self.add(QgsProcessingParameterFile(self.MODEL, "Model bundle", fileFilter="ThermoCrop model (*.tcm)",
                                            optional=True))
        self.add(QgsProcessingParameterString(self.LABEL_FIELD, "Class field", defaultValue="crop_pred"))
        self.add(QgsProcessingParameterString(self.CONFIDENCE_FIELD, "Confidence field", defaultValue="crop_conf"))
        self.add(QgsProcessingParameterString(self.STATUS_FIELD, "Status field", defaultValue="crop_status"))
        self.add(QgsProcessingParameterBoolean(self.PROBABILITIES, "Class probabilities, margin and entropy fields",
                                               defaultValue=False))
        self.add(QgsProcessingParameterBoolean(self.PREDICTION_SETS, "Prediction sets (crop_set, crop_set_size)",
                                               defaultValue=True))
        self.add(self.number(self.COVERAGE, "Prediction set coverage", "coverage", DEFAULT_COVERAGE))
        self.add(QgsProcessingParameterString(self.AS_OF, "As of date (YYYY-MM-DD; empty: the whole season)",
                                              optional=True))
        self.add(QgsProcessingParameterBoolean(self.DECIDED, "When each label was decided (crop_decided)",
                                               defaultValue=False))
        self.add(self.number(self.DECIDED_THRESHOLD, "Confidence a decided label keeps", "decided_threshold",
                             DEFAULT_DECIDED_THRESHOLD))
        self.add(QgsProcessingParameterFile(self.CLASS_SHARES, "Class shares of the area (CSV)",
                                            fileFilter="CSV files (*.csv)", optional=True))
        add_cluster_parameters(self)
        self.add(QgsProcessingParameterFeatureSink(self.OUTPUT, "Classified parcels",
                                                   QgsProcessing.TypeVectorPolygon))
        self.addOutput(QgsProcessingOutputNumber(self.CLASSIFIED, "Parcels classified"))

    def check_model(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the model bundle given exists (empty: the shipped one)."""
        model = self.parameterAsFile(parameters, self.MODEL, context)
        if model and not os.path.isfile(model):
            return False, tr("The model bundle {model!r} does not exist; choose a .tcm file or leave it "
                             "empty.").format(model=model)
        return True, ""

    def _field_names(self, parameters, context) -> list[str]:
        """The class, confidence and status field names given."""
        return [self.parameterAsString(parameters, key, context)
                for key in (self.LABEL_FIELD, self.CONFIDENCE_FIELD, self.STATUS_FIELD)]

    def check_field_names(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: three different, non-empty output field names."""
        names = self._field_names(parameters, context)
        if any(not name.strip() for name in names) or len({name.lower() for name in names}) < 3:
            return False, tr("The class, confidence and status fields need three different, non-empty names.")
        try:
            self._fields(parameters, context)  # not the name of a prediction set or decision field either
        except InputError as e:
            return False, str(e)
        return True, ""

    def check_output(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the output, before any scene is read: format, folder, not the input, field
        names and types."""
        parquet = self.geoparquet_input(parameters, context)  # checked by the run, as QGIS cannot read it
        source = None if parquet else self.parameterAsSource(parameters, self.INPUT, context)
        return check_sink(self, parameters, context, inputs=self._inputs(parameters, context),
                          kinds=self._fields(parameters, context).kinds(),
                          source=source, qgis_writes=not parquet)

    def as_of(self, parameters, context):
        """The ``AS_OF`` date as a ``datetime.date``, or None when empty.

        Raises:
            ValueError: the text is not a date written YYYY-MM-DD.
        """
        text = (self.parameterAsString(parameters, self.AS_OF, context) or "").strip()
        return datetime.date.fromisoformat(text) if text else None

    def check_as_of(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: ``AS_OF`` is empty or a date written YYYY-MM-DD."""
        try:
            self.as_of(parameters, context)
        except ValueError:
            return False, tr("The as-of date {text!r} is not a date written YYYY-MM-DD; correct it or leave it "
                             "empty for the whole season.").format(
                text=self.parameterAsString(parameters, self.AS_OF, context))
        return True, ""

    CHECKS = (ThermoCropAlgorithm.check_weather, check_model, check_field_names, check_as_of, ThermoCropAlgorithm.check_parcel_crs,
              ThermoCropAlgorithm.check_scenes, check_cluster, check_output)

    def _inputs(self, parameters, context) -> list:
        """The files this run reads, which the output may not be."""
        return [self.geoparquet_input(parameters, context)
                or layer_file(self.parameterAsVectorLayer(parameters, self.INPUT, context)),
                self.parameterAsFile(parameters, self.WEATHER, context),
                self.parameterAsFile(parameters, self.MODEL, context), self.stac_items(parameters, context)]

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        self.acknowledge_cancel(feedback)
        if (not self.parameterAsBoolean(parameters, self.DECIDED, context)
                and self.parameterAsDouble(parameters, self.DECIDED_THRESHOLD, context) != DEFAULT_DECIDED_THRESHOLD):
            feedback.pushWarning(tr("DECIDED_THRESHOLD is used only with DECIDED: no decision fields are written."))
        parquet = self.geoparquet_input(parameters, context)
        if parquet is not None:
            return self._classify_file(parquet, parameters, context, feedback)
        source = self.parameterAsSource(parameters, self.INPUT, context)
        if source is None:
            raise QgsProcessingException(tr("The parcel layer could not be read; check INPUT."))
        frame, fids = features_to_frame(source.getFeatures(), source.sourceCrs())
        request = self.request(parameters, context, ParcelsSpec(frame, name=source.sourceName()))
        # The bar moves through classifying and writing by their cost, known once the scenes are.
        bar = self.progress(feedback)
        parts = {}

        def checked(preflight) -> None:
            cost = estimated_seconds(max(len(fids), 1), len(preflight.scenes))
            reading, parts["classifying"], parts["writing"] = bar.parts(
                [cost["read"], cost["extract"] + cost["predict"], cost["write"]])
            reading(1.0)
            self._report_preflight(preflight, len(fids), feedback)

        class Run(ProcessingRun):
            def bar(self, what):
                return contextlib.nullcontext(parts["classifying"])

        run = run_request(self, lambda: app.run_classification(request, Run(feedback, checked=checked)),
                          request.cluster, feedback)
        result, bundle = run.result, run.bundle
        for warning in result.warnings:
            feedback.pushWarning(warning)
        fields = request.fields
        columns = result_columns(result, len(fids), label_field=fields.label, conf_field=fields.confidence,
                                 status_field=fields.status, probabilities=fields.probabilities)
        earlier = earlier_run_fields(source.fields().names(), columns, result.classes)
        if earlier:  # an earlier run's values, which no longer match this run's classes
            feedback.pushInfo(tr("Fields {fields} of the input came from an earlier run and this run does not make "
                                 "them: they are written empty.").format(fields=", ".join(earlier)))
            columns.update(empty_columns(earlier, len(fids)))
        requested = (fields.label, fields.confidence, fields.status)
        extra = [name for name in columns if name not in requested]
        with StagedSink(self, parameters, context, inputs=self._inputs(parameters, context),
                        fields=[*requested, *extra]) as staged:
            dest_id = self._write(source, staged, columns, {fid: row for row, fid in enumerate(fids)}, requested,
                                  feedback, parts["writing"])
        label_field = staged.field_names[fields.label]
        self._report_result(result, feedback)
        self._style = (dest_id, label_field, tuple(bundle.classes))
        return {"OUTPUT": dest_id, "CLASSIFIED": int((result.status == "ok").sum())}

    def _classify_file(self, path: str, parameters, context, feedback) -> dict:
        """Classify a GeoParquet layer (``geoparquet_input``) as the command line does: read by row
        groups and written by ThermoCrop's writers (a partitioned run's output batch by batch as its
        partitions finish), so the layer is never held whole here."""
        out, layer = file_output(self, parameters, context, "classified")
        inputs = tuple(p for p in self._inputs(parameters, context) if p)
        request = self.request(parameters, context, ParcelsSpec(path),
                               ClassificationOutput(out, layer=layer, overwrite=True, inputs=inputs))
        progress = ProcessingRun(feedback, checked=lambda preflight: self._report_preflight(
            preflight, preflight.parcel_count, feedback))
        run = run_request(self, lambda: app.run_classification(request, progress), request.cluster, feedback)
        result, target = run.result, run.target
        for warning in result.warnings:
            feedback.pushWarning(warning)
        feedback.pushInfo(tr("Wrote {path}: {n} parcels").format(path=run.written, n=len(result)))
        self._report_result(result, feedback)
        dest_id = target.source_string()
        if not load_on_completion(parameters, context, dest_id, self.parameterDefinition("OUTPUT").description()) \
                and target.driver == "Parquet":
            feedback.pushInfo(tr("QGIS 3.22 cannot open a GeoParquet file; write a GeoPackage (.gpkg) or FlatGeobuf "
                                 "(.fgb) output to see the result in QGIS."))
        self._style = (dest_id, target.fields[request.fields.label], tuple(run.bundle.classes))
        return {"OUTPUT": dest_id, "CLASSIFIED": result.status_counts().get("ok", 0)}

    def _report_preflight(self, preflight, parcels: Optional[int], feedback) -> None:
        """The log's lines on what the inputs' checks found: the model, why it was chosen where none
        was given, and the parcels and scenes to classify."""
        bundle = preflight.bundle
        feedback.pushInfo(tr("Model: {variant}, classes {classes}").format(variant=bundle.config.variant,
                                                                         classes=", ".join(bundle.classes)))
        if preflight.model_choice:  # no model given: the scenes' level chose the shipped one
            feedback.pushInfo(preflight.model_choice)
        feedback.pushInfo(tr("{n} parcels, {scenes}").format(
            n="?" if parcels is None else parcels, scenes=self.describe_scenes(preflight.scenes)))

    @staticmethod
    def _report_result(result, feedback) -> None:
        """The log's lines on the classified parcels: a count per status and the prediction sets' size
        (of a result held here; a partitioned run's partitions log their own)."""
        counts = result.counts()
        for key in sorted(counts):
            feedback.pushInfo(f"  {key}: {counts[key]}")
        if getattr(result, "sets", None) is not None:
            sizes = result.sets[result.status == "ok"].sum(axis=1)
            feedback.pushInfo(tr("Prediction sets for {coverage:g} % coverage: mean size {mean:.2f}, {several} "
                                 "parcels with more than one class").format(
                coverage=100 * result.coverage, mean=float(sizes.mean()) if len(sizes) else 0.0,
                several=int((sizes > 1).sum())))

    def request(self, parameters, context, parcels: ParcelsSpec,
                output: Optional[ClassificationOutput] = None) -> ClassifyRequest:
        """The classification the parameters ask for, of ``parcels`` (into ``output`` where
        ThermoCrop writes the result; None where the algorithm writes it through a sink)."""
        return ClassifyRequest(
            parcels=parcels, output=output,
            scenes=scenes_spec(self, parameters, context), weather=weather_spec(self, parameters, context),
            model=self.parameterAsFile(parameters, self.MODEL, context) or None,
            fields=self._fields(parameters, context), as_of=self.as_of(parameters, context),
            chunk_size=self.parameterAsInt(parameters, self.CHUNK_SIZE, context),
            cluster=cluster_spec(self, parameters, context),
            class_shares=self.parameterAsFile(parameters, self.CLASS_SHARES, context) or None)

    def _fields(self, parameters, context) -> ResultFields:
        """The result's columns the parameters ask for (no sets without ``PREDICTION_SETS``, no
        decision dates without ``DECIDED``)."""
        sets = self.parameterAsBoolean(parameters, self.PREDICTION_SETS, context)
        decided = self.parameterAsBoolean(parameters, self.DECIDED, context)
        return ResultFields(*self._field_names(parameters, context),
                            self.parameterAsBoolean(parameters, self.PROBABILITIES, context),
                            coverage=self.parameterAsDouble(parameters, self.COVERAGE, context) if sets else None,
                            decided=self.parameterAsDouble(parameters, self.DECIDED_THRESHOLD, context)
                            if decided else None)

    def _write(self, source, staged: StagedSink, columns: dict, row_of: dict, requested: tuple, feedback,
               writing=None) -> str:
        """Write the input's features plus the result's ``columns`` (``core.result_columns``, one
        value per row of the classified table; ``row_of`` maps a feature id to its row) into
        ``staged``; ``writing`` is the part of the progress (a ``core.progress.Progress``) it moves
        through."""
        from ...core.io.vector import measures_supported, replaced_fields

        extra = [name for name in columns if name not in requested]
        order = [*requested, *extra]
        names = [staged.field_names[n] for n in requested]
        kinds = {name: column_kind(name, requested[0], requested[2]) for name in order}
        replaced = set(self.run_core(lambda: replaced_fields(field_kinds(source.fields()), staged.target, kinds)))
        if replaced:
            feedback.pushInfo(tr("Fields {fields} of the input are replaced by the new values.").format(
                fields=", ".join(sorted(replaced))))
        shortened = [f"{name} -> {staged.field_names[name]}" for name in order if staged.field_names[name] != name]
        if shortened:
            feedback.pushInfo(tr("Field names as stored in this format: {names}").format(names=", ".join(shortened)))
        kept = [i for i, f in enumerate(source.fields()) if f.name() not in replaced]
        fields = QgsFields()
        for i in kept:
            fields.append(source.fields().at(i))
        for name, kind, length in zip(names, (QVariant.String, QVariant.Double, QVariant.String), (40, 0, 40)):
            fields.append(QgsField(name, kind, len=length))
        for name in extra:
            kind = QVARIANT_KINDS[kinds[name]]
            fields.append(QgsField(staged.field_names[name], kind, len=254 if kind == QVariant.String else 0))
        wkb_type, make_multi = geometry_type(source)
        if QgsWkbTypes.hasM(wkb_type) and staged.driver and not measures_supported(staged.driver):
            feedback.pushWarning(self.measures_dropped(staged.driver))
        sink, dest_id = staged.create(fields, wkb_type, source.sourceCrs())
        total = max(source.featureCount(), 1)
        written = 0
        for n, feature in enumerate(source.getFeatures()):
            if feedback.isCanceled():
                del sink
                raise QgsProcessingException(tr("Cancelled: nothing was written."))
            row = row_of.get(feature.id())
            out = QgsFeature(fields)
            geometry = feature.geometry()
            if make_multi and not geometry.isNull():
                geometry.convertToMultiType()
            out.setGeometry(geometry)
            attributes = feature.attributes()
            values = [qgis_value(columns[name][row]) if row is not None else None for name in order]
            if row is None:  # a feature added since the layer was read
                values[2] = NOT_SELECTED
            out.setAttributes([attributes[k] for k in kept] + values)
            if not sink.addFeature(out, QgsFeatureSink.FastInsert):
                raise QgsProcessingException(self.write_failed(feature.id(), sink.lastError()))
            written += 1
            if writing is not None and n % 100 == 0:  # the loop checks the cancel itself, closing the sink first
                feedback.setProgress(100.0 * (writing.start + (writing.stop - writing.start) * n / total))
        del sink  # flushes and closes a file output before it is checked and published
        committed = staged.commit(written)
        if writing is not None:
            feedback.setProgress(100.0 * writing.stop)
        return committed

    def postProcessAlgorithm(self, context, feedback):  # noqa: N802
        from ...core.io.geoparquet import is_parquet

        dest_id, field, classes = self._style
        if is_parquet(dest_id):  # QGIS 3.22 cannot open it: every provider would fail, loudly
            return {}
        layer = QgsProcessingUtils.mapLayerFromString(dest_id, context)
        if layer is not None:
            apply_class_style(layer, field, classes)
            qml = save_style_beside(layer, layer.source())
            if qml is not None:
                feedback.pushInfo(tr("Style saved to {qml}").format(qml=qml))
        if context.willLoadLayerOnCompletion(dest_id):
            processor = _StyleLoadedLayer(field, classes)
            _POST_PROCESSORS.append(processor)
            context.layerToLoadOnCompletionDetails(dest_id).setPostProcessor(processor)
        return {}
