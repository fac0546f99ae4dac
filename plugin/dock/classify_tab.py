"""The Classify tab's run: the form checked (``form.py``), the output and inputs checked before any
scene is read, the temperatures fetched from a service when one is chosen, the classification in a
background task, the result written (a new layer file or the layer's own fields), styled and
counted per class at the head of the page."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable, Optional

from qgis.core import (
    Qgis,
    QgsApplication,
    QgsExpression,
    QgsMessageLog,
    QgsProject,
    QgsVectorLayer,
    QgsVectorLayerFeatureSource,
)
from qgis.PyQt.QtCore import QObject, Qt, QUrl, pyqtSignal
from qgis.PyQt.QtGui import QColor, QIcon, QPixmap
from qgis.PyQt.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QMessageBox,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from ...core.crops import UNKNOWN_CLASS, class_colours
from ...core.errors import ThermoCropError
from ...core.inseason import DEFAULT_DECIDED_THRESHOLD, weather_dates_as_of
from ...core.result_columns import SET_FIELD, SET_SIZE_FIELD
from ..i18n import tr
from ..layer_writer import (
    check_layer_fields,
    check_new_layer_file,
    field_name_problems,
    layer_alive,
    unique_layer_name,
    write_result_to_layer,
)
from ..layers import copied_field_names
from ..staged_sinks import layer_file
from ..styles import (
    UNCLASSIFIED_COLOUR,
    apply_class_style,
    class_label,
    confidence_renderer,
    save_style_beside,
)
from ..task import ClassificationParameters, ClassificationTask, LayerSnapshot, prepared_cluster
from ..weather_task import WeatherTask, scene_dates
from .form import read_form
from .input_widgets import ClassifyInputs
from .layout import scrolled
from .status_panel import LOG_TAG, StatusPanel

log = logging.getLogger(__name__)

CONFIDENCE_STYLE = "ThermoCrop confidence"


class ClassifyPanel(QObject):
    """The Classify tab: its form (``inputs``), the run and the counts of the last result.

    Signals:
        resultChanged(): the last result was set or cleared (the counts show or hide).
        layerClassified(object, str): the result layer and its class field, once written.
    """

    resultChanged = pyqtSignal()
    layerClassified = pyqtSignal(object, str)

    def __init__(self, inputs: ClassifyInputs, status: StatusPanel) -> None:
        super().__init__()
        self.inputs, self.status = inputs, status
        self.task: Optional[ClassificationTask] = None
        self.last_result = None
        self.last_fids: list = []
        self.last_bundle = None
        self.preflight = None
        self.output_layer: Optional[QgsVectorLayer] = None
        self.target_layer: Optional[QgsVectorLayer] = None
        self._layer_removed = False
        self._base_subset: Optional[str] = None
        self.last_fields = ("crop_pred", "crop_conf")
        """The class and confidence fields the last run wrote (the form may have changed since)."""
        self.last_as_of = None
        """The date the last run was classified as of (None: the whole season)."""
        self._class_style = ""
        # Replaced in tests; asks the user before fields or files are overwritten.
        self.confirm_overwrite: Callable[[list], bool] = self._ask_overwrite
        # Replaced in tests; asks where the field-visit list goes (the default: beside the result).
        self.ask_visit_path: Callable[[str], str] = self._ask_visit_path
        self.results_box = self._build_results()
        # The counts of the last run head the Classify page, scrolling with the form, so that
        # neither squeezes the other in a short dock.
        inputs.classify_layout.insertWidget(0, self.results_box)
        self.scroll = scrolled(inputs)

    def _build_results(self) -> QGroupBox:
        box = QGroupBox(tr("Parcels per class"))
        results = QVBoxLayout(box)
        results.setContentsMargins(4, 4, 4, 4)
        self.counts = QTreeWidget()
        self.counts.setColumnCount(3)
        self.counts.setHeaderLabels([tr("Class"), tr("Parcels"), tr("Share")])
        self.counts.setRootIsDecorated(False)
        results.addWidget(self.counts)
        row = QHBoxLayout()
        self.colour_by = QComboBox()
        self.colour_by.addItems([tr("colour by class"), tr("colour by confidence")])
        self.colour_by.setToolTip(tr("The result layer's style: class colours, or confidence from purple "
                                     "(unsure) to yellow (sure)"))
        self.colour_by.currentIndexChanged.connect(self._colour_by_changed)
        results.addWidget(self.colour_by)
        self.low_confidence = QCheckBox(tr("only below"))
        self.low_confidence.setToolTip(tr("Show only the parcels whose confidence is below the threshold "
                                          "(a filter on the result layer; untick to show all)"))
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(0.05, 1.0)
        self.threshold.setSingleStep(0.05)
        self.threshold.setDecimals(2)
        self.threshold.setValue(0.6)
        self.low_confidence.toggled.connect(self.apply_confidence_filter)
        self.threshold.valueChanged.connect(self.apply_confidence_filter)
        # Its own row: beside the style list it was squeezed onto the class table in a narrow dock.
        row.addWidget(self.low_confidence)
        row.addWidget(self.threshold)
        row.addStretch(1)
        results.addLayout(row)
        doubt = QHBoxLayout()
        self.several_classes = QCheckBox(tr("only sets of several classes"))
        self._sets_tip = tr("Show only the parcels whose prediction set holds more than one class "
                            "(crop_set_size above 1: the label is in doubt at the chosen coverage)")
        self.several_classes.setToolTip(self._sets_tip)
        self.several_classes.toggled.connect(self.apply_confidence_filter)
        self.visit_button = QPushButton(tr("Field-visit list…"))
        self.visit_button.setToolTip(tr("Write the parcels in doubt (a set of several classes, or a confidence "
                                        "below the threshold when 'only below' is ticked), most doubtful first, "
                                        "as a CSV with a point in each parcel, and add it to the project as a layer"))
        self.visit_button.clicked.connect(lambda: self.write_field_visits())
        # Rows of their own: side by side they set the narrowest the dock could be.
        doubt.addWidget(self.several_classes)
        doubt.addStretch(1)
        results.addLayout(doubt)
        visits = QHBoxLayout()
        visits.addWidget(self.visit_button)
        visits.addStretch(1)
        results.addLayout(visits)
        box.setVisible(False)
        return box

    # ----- counts
    def show_counts(self, counts: dict, colours: dict) -> None:
        """List parcels per class with the class colour; not-classified statuses come last."""
        self.counts.clear()
        total = max(sum(counts.values()), 1)
        for key in sorted(counts, key=lambda k: (k.startswith("("), k)):
            item = QTreeWidgetItem([key if key.startswith("(") else class_label(key), str(counts[key]),
                                    f"{100.0 * counts[key] / total:.0f} %"])
            item.setData(0, Qt.UserRole, key)
            item.setToolTip(0, key)
            swatch = QPixmap(12, 12)
            swatch.fill(QColor(colours.get(key, UNCLASSIFIED_COLOUR)))
            item.setIcon(0, QIcon(swatch))
            item.setTextAlignment(1, Qt.AlignRight | Qt.AlignVCenter)
            item.setTextAlignment(2, Qt.AlignRight | Qt.AlignVCenter)
            self.counts.addTopLevelItem(item)
        for column in range(3):
            self.counts.resizeColumnToContents(column)
        # Tall enough for every row up to ten, so the counts need no scrolling.
        rows = min(self.counts.topLevelItemCount(), 10)
        row_height = self.counts.sizeHintForRow(0) if rows else 0
        self.counts.setFixedHeight(self.counts.header().sizeHint().height() + rows * row_height
                                   + 2 * self.counts.frameWidth() + 2)

    def counts_text(self) -> str:
        """The class counts as ``class id: parcels`` lines (the list shows the ids as words)."""
        items = [self.counts.topLevelItem(i) for i in range(self.counts.topLevelItemCount())]
        return "\n".join(f"{item.data(0, Qt.UserRole)}: {item.text(1)}" for item in items)

    # ----- preflight
    def parameters(self) -> Optional[ClassificationParameters]:
        """Check the form and run the preflight (inputs and output, before any scene is read); gather it.

        First what the form must hold (``ClassifyForm.problem``), then the output (``core.io.vector``'s
        checks: format, folder, not an input, field types; milliseconds), then the inputs
        (``core.preflight.check_inputs``: the layer's CRS, the scenes of one season, the model loaded
        and validated, the weather read at a few points; about a second). What they load (model,
        scenes) goes to the task.

        Returns None, with the reason shown, when something must be fixed first.
        """
        say = self.status.say
        form = read_form(self.inputs)
        problem = form.problem()
        if problem:
            say(problem, Qgis.Warning)
            return None
        layer, scenes, weather, model, output = form.layer, list(form.scenes), form.weather, form.model, form.output
        kinds = form.field_kinds()
        missing = [p for p in scenes if not os.path.exists(p)]
        try:
            # The output first: it costs milliseconds, the inputs about a second.
            if output:
                check_new_layer_file(output, layer, [layer_file(layer), weather, model], kinds)
            else:
                check_layer_fields(layer, kinds)
            if missing:
                say(tr("The scene {path} does not exist; untick it or add it again.").format(path=missing[0]),
                    Qgis.Warning)
                return None
            say(tr("Checking the inputs …"))
            self.status.message.repaint()  # the check holds the UI thread for about a second
            # Items found in a catalogue are opened by the task (over the network, with the
            # chosen credentials), never here on the UI thread.
            from ...core.extract import scene_list_of

            found = None if form.from_catalog else scene_list_of(scenes)
            checked = self.check_inputs(layer, found, weather or None, model,
                                        dates=weather_dates_as_of(found or (), form.as_of))
            self.preflight = checked
            # The model is known now: the fields that depend on it (probabilities, and the sets
            # where it carries a calibration) are checked as the others were.
            calibration = getattr(checked.bundle, "calibration", None)
            sets = form.coverage is not None and calibration is not None and bool(calibration.scores)
            if sets:
                kinds.update({SET_FIELD: "string", SET_SIZE_FIELD: "integer"})
                problems = [] if output else field_name_problems(layer, [SET_FIELD, SET_SIZE_FIELD], False)
                if problems:
                    say(tr("Cannot write the prediction sets into {layer}: {problems}. Untick 'Prediction sets' or "
                           "write a new layer file.").format(layer=layer.name(), problems="; ".join(problems)),
                        Qgis.Warning)
                    return None
            if form.probabilities:
                from ...core.model.uncertainty import ENTROPY_FIELD, MARGIN_FIELD, probability_field_names

                extra = [*probability_field_names(checked.bundle.classes), MARGIN_FIELD, ENTROPY_FIELD]
                kinds.update(dict.fromkeys(extra, "real"))
            if form.probabilities or sets:
                if output:
                    check_new_layer_file(output, layer, [layer_file(layer), weather, model], kinds)
                else:
                    check_layer_fields(layer, kinds)
        except ThermoCropError as exc:
            say(tr("Not started: {reason}").format(reason=exc), Qgis.Critical, bar=True)
            return None
        overwrite = False
        if output and Path(output).exists():
            if not self.confirm_overwrite([output]):
                say(tr("Not started: {path} exists and is not to be replaced.").format(path=output))
                return None
            overwrite = True
        if not output:
            existing = [n for n in kinds if layer.fields().indexOf(n) >= 0]
            # An earlier run's optional fields that this run does not write are emptied: asked too.
            from ...core.result_columns import earlier_run_fields

            classes = getattr(self.preflight.bundle, "classes", ()) if self.preflight is not None else ()
            existing += earlier_run_fields(layer.fields().names(), kinds, classes)
            if existing and not self.confirm_overwrite(existing):
                say(tr("Not started: the fields exist and are not to be overwritten."))
                return None
        try:
            # A partitioned run's folder: beside the new file, or beside the layer's own file.
            cluster = prepared_cluster(form.cluster, output or layer_file(layer), "classify")
        except ThermoCropError as exc:
            say(tr("Not started: {reason}").format(reason=exc), Qgis.Critical, bar=True)
            return None
        selected = list(layer.selectedFeatureIds()) if form.selected_only else None
        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(),
                                 copied_field_names(layer), selected)
        # Catalogue items are read by the task: without a model of the user's, the shipped model of
        # their processing level is chosen there, once they are opened. As of a date, the run
        # chooses it too (early in the season, the in-season model: app.season_status).
        shipped_for_items = not model and (form.from_catalog or form.as_of is not None)
        return ClassificationParameters(snapshot, [], scenes if form.from_catalog else checked.scenes, weather,
                                        model, form.label_field, form.confidence_field, form.status_field,
                                        form.probabilities, output, overwrite,
                                        bundle=None if shipped_for_items else checked.bundle,
                                        inputs=[p for p in (layer_file(layer), weather, model,
                                                                    form.class_shares) if p],
                                        coverage=form.coverage, as_of=form.as_of,
                                        decided=DEFAULT_DECIDED_THRESHOLD if form.decided else None,
                                        cluster=cluster, class_shares=form.class_shares)

    @staticmethod
    def check_inputs(layer: QgsVectorLayer, scenes: Optional[list], weather: str, model: Optional[str],
                     dates: Optional[list] = None):
        """``core.preflight.check_inputs`` for a project layer: its CRS and extent, the scenes, the
        weather (at ``dates`` where given, else the scenes' dates) and the model (loaded and
        validated). Returns the ``Preflight``.

        Raises:
            ThermoCropError: the first problem, naming the file, layer or variable.
        """
        from ...core.preflight import LayerFootprint, check_inputs

        crs = layer.crs()
        extent = layer.extent()
        bounds = None if extent.isEmpty() else (extent.xMinimum(), extent.yMinimum(), extent.xMaximum(),
                                                extent.yMaximum())
        checked = check_inputs(parcels=LayerFootprint(crs.toWkt() if crs.isValid() else "", bounds), scenes=scenes,
                               weather=weather, bundle=model, need_bundle=True, dates=dates)
        log.info("Dock preflight of %s took %.2f s", layer.name(), checked.seconds)
        return checked

    # ----- run
    def start(self) -> Optional[ClassificationTask]:
        params = self.parameters()
        status = self.status
        if params is None:
            # Nothing runs: the bar must not show the last run's 100 % beside the reason.
            status.progress.setValue(0)
            return None
        catalog = self.inputs.catalog
        if catalog.in_use():
            try:
                params.credentials = catalog.credentials()
            except ValueError as exc:
                status.say(str(exc), Qgis.Warning)
                return None
        self.inputs.save_settings()
        self.target_layer = self.inputs.layer_combo.currentLayer()
        self._layer_removed = False
        self.target_layer.willBeDeleted.connect(self._target_removed)
        status.run_button.setEnabled(False)
        status.cancel_button.setEnabled(True)
        status.progress.setValue(0)
        # The counts and filters belonged to the last result; this run may not give one.
        self.last_result = None
        self.resultChanged.emit()
        service = self.inputs.weather_service()
        if service:
            return self._fetch_weather(params, service)
        return self._launch(params)

    def _fetch_weather(self, params: ClassificationParameters, service: str) -> WeatherTask:
        """Fetch the run's temperatures from ``service`` first (``self.task`` meanwhile), then classify."""
        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(self.target_layer), self.target_layer.crs(),
                                 self.target_layer.name(), [], params.parcels.selected)
        checked = self.preflight
        task = WeatherTask(snapshot, service, scene_dates(params.scenes), checked.season_start,
                           lambda task: self._weather_fetched(task, params))
        task.progressChanged.connect(self._show_progress)
        self.task = task
        self.status.say(tr("Fetching the daily temperatures of {layer}'s parcels from {service} …").format(
            layer=self.target_layer.name(), service=self.inputs.weather_from.currentText()))
        QgsApplication.taskManager().addTask(task)
        return task

    def _weather_fetched(self, task: WeatherTask, params: ClassificationParameters) -> None:
        self.task = None
        say = self.status.say
        if task.path is None or self._layer_removed or not layer_alive(self.target_layer):
            self._run_ended()
            if self._layer_removed or not layer_alive(self.target_layer):
                say(tr("The parcel layer was removed while classifying; nothing was written."), Qgis.Warning,
                    bar=True)
            elif task.cancelled:
                say(tr("Cancelled; nothing was written and the layer was not changed."), Qgis.Info)
            else:
                say(tr("No temperatures from {service}: {error}").format(service=task.service, error=task.error),
                    Qgis.Critical, bar=True)
            return
        # The fetched file is the run's (and Explain's) weather; the service stays chosen.
        self.inputs.weather.setFilePath(task.path)
        params.weather = task.path
        params.inputs = [*params.inputs, task.path]
        QgsMessageLog.logMessage(tr("Temperatures from {service}: {path}").format(service=task.service,
                                                                               path=task.path),
                                 LOG_TAG, Qgis.Info)
        self._launch(params)

    def _launch(self, params: ClassificationParameters) -> ClassificationTask:
        self.task = ClassificationTask(params, self._finished)
        self.task.progressChanged.connect(self._show_progress)
        selected = params.parcels.selected
        count = len(selected) if selected is not None else self.target_layer.featureCount()
        self.status.say(tr("Classifying {n} parcels of {layer} …").format(n=count, layer=self.target_layer.name()))
        QgsApplication.taskManager().addTask(self.task)
        return self.task

    def _target_removed(self) -> None:
        self._layer_removed = True
        if self.task is not None:
            self.task.cancel()

    def _show_progress(self, percent: float) -> None:
        self.status.progress.setValue(int(percent))

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.status.cancel_button.setEnabled(False)
            self.status.say(tr("Cancelling…"), Qgis.Info)

    def _run_ended(self) -> None:
        """The buttons back to idle, and the parcel layer's removal no longer watched."""
        self.status.run_button.setEnabled(True)
        self.status.cancel_button.setEnabled(False)
        if layer_alive(self.target_layer):
            try:
                self.target_layer.willBeDeleted.disconnect(self._target_removed)
            except TypeError:
                pass

    def _finished(self, task: ClassificationTask) -> None:
        self.task = None
        self._run_ended()
        say = self.status.say
        layer = self.target_layer
        if self._layer_removed or not layer_alive(layer):
            say(tr("The parcel layer was removed while classifying; nothing was written."), Qgis.Warning, bar=True)
            return
        if task.cancelled:
            text = tr("Cancelled; nothing was written and the layer was not changed.")
            cluster = task.request.cluster
            if cluster.partitioned:
                text += " " + tr("The partitions written so far stay in {folder}; tick 'Resume the interrupted "
                                 "run' and classify again to take the run up.").format(folder=cluster.run_folder)
            say(text, Qgis.Info)
            return
        if task.result is None:
            say(tr("Classification failed: {error}").format(error=task.error), Qgis.Critical, bar=True)
            return
        params = task.params
        try:
            if params.output:
                out = QgsVectorLayer(task.written, unique_layer_name(tr("{layer} (classified)").format(
                    layer=layer.name())), "ogr")
                if not out.isValid():
                    raise ValueError(tr("QGIS cannot open the written file {path}.").format(path=task.written))
                where = tr("the new layer {name}").format(name=Path(task.written).name)
            else:
                out = write_result_to_layer(layer, task.fids, task.result, params.label_field,
                                            params.confidence_field, lambda names: True, params.status_field,
                                            params.probabilities)
                where = tr("{layer} (saved)").format(layer=layer.name()) if not layer.isEditable() else \
                    tr("{layer} (one edit of the running edit session; Undo reverts it)").format(layer=layer.name())
        except Exception as exc:
            log.exception("Writing the result failed")
            say(tr("Writing the result failed: {error}").format(error=exc), Qgis.Critical, bar=True)
            return
        if params.output:
            self._add_above(out, layer)
        self.output_layer = out
        self.last_result, self.last_fids, self.last_bundle = task.result, task.fids, task.bundle
        style_note = self._style_output(out, params, own_file=bool(params.output))
        self.layerClassified.emit(out, params.label_field)
        self.show_counts(task.result.counts(), class_colours(task.bundle.classes))
        self.resultChanged.emit()
        self.scroll.verticalScrollBar().setValue(0)  # the counts head the page
        ok = task.result.status == "ok"
        done = int(ok.sum())
        unknown = int((task.result.labels[ok] == UNKNOWN_CLASS).sum())
        text = tr("Classified {done} of {n} parcels ({unknown} unknown) into {where}.").format(
            done=done, n=len(task.result), unknown=unknown, where=where)
        if style_note:
            text += " " + style_note
        # Without a model of the user's: which shipped model the scenes' level chose (here, or in
        # the task for catalogue items).
        choice = task.model_choice or (self.preflight.model_choice if self.preflight is not None else None)
        if choice:
            text += "\n" + choice
        # As of a date: the season's status on it and what part of the season the model met.
        text += "".join(f"\n{line[0].upper()}{line[1:]}" for line in getattr(task, "reports", ()) if line != choice)
        warnings = "".join(f"\n{w}" for w in task.result.warnings)
        say(text + warnings, Qgis.Warning if task.result.warnings or done == 0 else Qgis.Success, bar=True)
        self.status.message.setToolTip(task.written or layer.source())
        self.status.progress.setValue(100)

    @staticmethod
    def _add_above(new: QgsVectorLayer, below: QgsVectorLayer) -> None:
        """Add ``new`` to the project right above ``below`` in the layer tree, so that it shows."""
        project = QgsProject.instance()
        project.addMapLayer(new, False)
        node = project.layerTreeRoot().findLayer(below.id())
        group = node.parent() if node is not None else project.layerTreeRoot()
        index = group.children().index(node) if node is not None else 0
        group.insertLayer(index, new)

    # ----- the result layer's styles and filter
    def _style_output(self, layer: QgsVectorLayer, params, own_file: bool) -> str:
        """Class style (current) and confidence style (in the layer's style list); save a .qml."""
        bundle = self.last_bundle
        manager = layer.styleManager()
        if manager.currentStyle() == CONFIDENCE_STYLE:
            manager.setCurrentStyle(next(s for s in manager.styles() if s != CONFIDENCE_STYLE))
        if CONFIDENCE_STYLE in manager.styles():
            manager.removeStyle(CONFIDENCE_STYLE)
        layer.setRenderer(confidence_renderer(params.confidence_field, self._confidence_labels()))
        manager.addStyleFromLayer(CONFIDENCE_STYLE)
        apply_class_style(layer, params.label_field, bundle.classes)
        self._class_style = manager.currentStyle()
        self._base_subset = layer.subsetString()
        self.last_fields = (params.label_field, params.confidence_field)
        self.last_as_of = params.as_of
        self.colour_by.blockSignals(True)
        self.colour_by.setCurrentIndex(0)
        self.colour_by.blockSignals(False)
        for box in (self.low_confidence, self.several_classes):
            box.blockSignals(True)
            box.setChecked(False)
            box.blockSignals(False)
        has_sets = getattr(self.last_result, "sets", None) is not None
        self.several_classes.setEnabled(has_sets)
        self.several_classes.setToolTip(self._sets_tip if has_sets else tr(
            "This result has no prediction sets: classify with a calibrated model and 'Prediction sets' ticked"))
        source = layer.source().split("|")[0]
        qml = Path(source).with_suffix(".qml")
        if not Path(source).is_file():
            return ""
        if not own_file and qml.exists():
            return tr("{qml} exists and was left as it is.").format(qml=qml.name)
        saved = save_style_beside(layer, source)
        return tr("Style saved to {qml}.").format(qml=saved.name) if saved else ""

    @staticmethod
    def _confidence_labels() -> list:
        return [tr("below 0.4"), tr("0.4 to 0.6"), tr("0.6 to 0.8"), tr("0.8 and above"), tr("not classified")]

    def _colour_by_changed(self, index: int) -> None:
        layer = self.output_layer
        if not layer_alive(layer):
            return
        manager = layer.styleManager()
        name = CONFIDENCE_STYLE if index == 1 else self._class_style
        if name in manager.styles():
            manager.setCurrentStyle(name)
        layer.triggerRepaint()

    def apply_confidence_filter(self, *args) -> int:
        """Filter the result layer to parcels whose confidence is below the threshold and/or whose
        prediction set holds more than one class (or undo it).

        Returns:
            The number of features the layer shows afterwards (-1 without a result layer).
        """
        layer = self.output_layer
        if not layer_alive(layer) or self.last_result is None:
            return -1
        base = self._base_subset or ""
        conditions = []
        if self.low_confidence.isChecked():
            column = QgsExpression.quotedColumnRef(self.last_fields[1])
            conditions.append(f"{column} < {self.threshold.value():.4f}")
        if self.several_classes.isChecked() and self.several_classes.isEnabled():
            conditions.append(f"{QgsExpression.quotedColumnRef(SET_SIZE_FIELD)} > 1")
        subset = " AND ".join([f"({base})", *conditions]) if base and conditions else base or " AND ".join(conditions)
        if layer.isEditable():
            self.status.say(tr("{layer} is being edited; save or discard the edits to filter it.").format(
                layer=layer.name()), Qgis.Warning)
            return -1
        if not layer.setSubsetString(subset):
            self.status.say(tr("{layer} cannot be filtered by its provider.").format(layer=layer.name()),
                            Qgis.Warning)
            return -1
        layer.triggerRepaint()
        return layer.featureCount()

    # ----- field visits
    def write_field_visits(self, path: Optional[str] = None) -> Optional[QgsVectorLayer]:
        """Write the field-visit list of the result layer (``core.field_visits``) to ``path`` (asked
        for when None) and add it to the project as a point layer; the layer, or None with the
        reason shown."""
        from ...core.field_visits import field_visits, write_field_visits
        from ..accuracy_layer import attribute_frame

        say = self.status.say
        layer = self.output_layer
        if not layer_alive(layer) or self.last_result is None:
            say(tr("Classify first: the field-visit list is made from the result layer."), Qgis.Warning)
            return None
        below = self.threshold.value() if self.low_confidence.isChecked() else None
        if getattr(self.last_result, "sets", None) is None and below is None:
            below = self.threshold.value()  # without sets, the confidence says what is in doubt
        path = path or self.ask_visit_path(self._visit_path_beside(layer))
        if not path:
            return None
        label, conf = self.last_fields
        names = layer.fields().names()
        id_field = "parcel_id" if "parcel_id" in names else None
        wanted = [n for n in (id_field, label, conf, SET_FIELD, SET_SIZE_FIELD) if n and n in names]
        features = self._features_without_result_filter(layer)
        try:
            frame = attribute_frame(features, layer.crs(), wanted)
            frame.index = [feature.id() for feature in features]
            visits = field_visits(frame, label_field=label, conf_field=conf, id_field=id_field, below=below)
            written = write_field_visits(visits, path, overwrite=True, inputs=[layer_file(layer)])
        except (ThermoCropError, OSError) as exc:
            say(tr("The field-visit list was not written: {error}").format(error=exc), Qgis.Critical, bar=True)
            return None
        # Encoded: with accented letters in the path the delimited-text provider finds no file.
        uri = f"{QUrl.fromLocalFile(str(written)).toString(QUrl.FullyEncoded)}?type=csv&xField=lon&yField=lat&crs=EPSG:4326" \
              "&detectTypes=yes&geomType=point"
        visit_layer = QgsVectorLayer(uri, unique_layer_name(tr("{layer} field visits").format(layer=layer.name())),
                                     "delimitedtext")
        if not visit_layer.isValid():
            say(tr("{path} was written, but QGIS cannot open it as a layer.").format(path=written), Qgis.Warning)
            return None
        self._add_above(visit_layer, layer)
        why = tr("a set of several classes") if below is None else \
            tr("a set of several classes or a confidence below {threshold:.2f}").format(threshold=below)
        say(tr("{n} parcels to visit ({why}), most doubtful first: {path}").format(n=len(visits), why=why,
                                                                                 path=written), Qgis.Success, bar=True)
        return visit_layer

    def _features_without_result_filter(self, layer: QgsVectorLayer) -> list:
        """The features of ``layer`` under the filter it had before the run, not the tab's "only
        below" / "several classes" filter: the visit list takes a parcel with a set of several
        classes *or* a low confidence, where the filter shows those with both."""
        shown, base = layer.subsetString(), self._base_subset or ""
        if shown == base or layer.isEditable():
            return list(layer.getFeatures())
        layer.setSubsetString(base)
        try:
            return list(layer.getFeatures())
        finally:
            layer.setSubsetString(shown)

    @staticmethod
    def _visit_path_beside(layer: QgsVectorLayer) -> str:
        source = Path(layer.source().split("|")[0])
        return str(source.with_name(f"{source.stem}_field_visits.csv")) if source.is_file() else "field_visits.csv"

    def _ask_visit_path(self, default: str) -> str:
        path, _ = QFileDialog.getSaveFileName(self.inputs, tr("Field-visit list"), default, tr("CSV (*.csv)"))
        return path

    def _ask_overwrite(self, names: list) -> bool:
        answer = QMessageBox.question(self.inputs, tr("ThermoCrop"), tr("{names} already exist(s). Overwrite?").format(
            names=", ".join(names)), QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        return answer == QMessageBox.Yes

    def shutdown(self) -> None:
        """Stop a running classification without calling back, and stop watching the parcel layer."""
        task = self.task
        if task is not None:
            # The task may end after the dock is gone; it must not call back into it.
            task.on_done = lambda task: None
            try:
                task.progressChanged.disconnect(self._show_progress)
                task.cancel()
            except (TypeError, RuntimeError):  # already disconnected, or the task has ended
                pass
            # The task manager owns the task now; the dock forgets it.
            self.task = None
        if layer_alive(self.target_layer):
            try:
                self.target_layer.willBeDeleted.disconnect(self._target_removed)
            except TypeError:
                pass
