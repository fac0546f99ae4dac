"""A self-contained accuracy-assessment panel: a classified layer, its map and reference fields,
the map class weighting; assesses in a background task and shows the HTML report."""

from __future__ import annotations

import base64
import math
import re
from pathlib import Path
from typing import Optional

from qgis.core import (
    Qgis,
    QgsFeatureRequest,
    QgsFieldProxyModel,
    QgsMapLayerProxyModel,
    QgsMessageLog,
    QgsVectorLayer,
    QgsVectorLayerFeatureSource,
    QgsWkbTypes,
)
from qgis.gui import QgsFieldComboBox, QgsFileWidget, QgsMapLayerComboBox
from qgis.PyQt.QtCore import QEvent, QUrl, pyqtSignal
from qgis.PyQt.QtGui import QImage, QTextDocument
from qgis.PyQt.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from .accuracy_layer import WEIGHTING_LABELS, assess_features, guess_confidence_field, guess_fields
from .i18n import tr
from .staged_sinks import layer_file
from .task import ThermoCropTask
from .task_panel import TaskPanelMixin
from .train_panel import CLASS_MAP_LABELS, CLASS_MAPS, CODE_FIELDS

TABLE_MARGIN = 24
"""Pixels kept right of the widest table when the report is laid out wider than the browser."""
PAGE_EDGE = 8
"""Pixels the document's own margins add to its page: the page is that much narrower than the
browser, and a document at most that much wider than its page fits."""


def readable_headers(page: str) -> str:
    """The report with class ids in table headers as words (``winter_rapeseed`` -> ``winter
    rapeseed``), so that a narrow column wraps them between words rather than letter by letter."""
    return re.sub(r"(<th[^>]*>)([^<]*)(</th>)", lambda m: m.group(1) + m.group(2).replace("_", " ") + m.group(3),
                  page)
TABLE = "table"
"""Weighting key of a user-given class-area table."""


class AccuracyTask(ThermoCropTask):
    """Reads the layer (through a feature source made in the main thread) and assesses it.

    After it ends, ``report`` holds the ``AccuracyReport`` or ``error`` the message.
    """

    WHAT = "Accuracy assessment"

    def __init__(self, layer: QgsVectorLayer, predicted: str, reference: str, weighting: str,
                 class_areas_path: Optional[str], on_done, reference_class_map: str = "", confidence: str = ""):
        super().__init__(f"ThermoCrop: accuracy of {layer.name()}", on_done)
        self.source = QgsVectorLayerFeatureSource(layer)
        self.crs = layer.crs()
        self.reference_class_map = reference_class_map
        codes = f", codes through the {reference_class_map} table" if reference_class_map else ""
        # The layer's filter (e.g. the dock's "only below" confidence filter) decides which
        # features are read: the report says so.
        self.subset = layer.subsetString()
        shown = f"; only the features of the filter {self.subset}" if self.subset else ""
        self.title = f"{layer.name()} ({predicted} against {reference}{codes}{shown})"
        self.predicted, self.reference, self.confidence = predicted, reference, confidence or None
        self.weighting, self.class_areas_path = weighting, class_areas_path
        self.needs_geometry = weighting == "area"
        fields = layer.fields()
        self.request = QgsFeatureRequest().setSubsetOfAttributes(
            [fields.indexOf(name) for name in (predicted, reference, confidence) if name])
        if not self.needs_geometry:
            self.request.setFlags(QgsFeatureRequest.NoGeometry)
        self.report = None

    def work(self, progress) -> None:
        from ..core.accuracy import read_class_areas

        areas = read_class_areas(self.class_areas_path) if self.weighting == TABLE else None
        self.report = assess_features(
            self.source.getFeatures(self.request), self.crs, self.predicted, self.reference,
            weighting="none" if self.weighting == TABLE else self.weighting, class_areas=areas,
            area_unit="map units (table)" if areas is not None else None, title=self.title,
            cancelled=self.isCanceled, reference_class_map=self.reference_class_map or None,
            confidence_field=self.confidence)


class AccuracyWidget(TaskPanelMixin, QWidget):
    """Accuracy assessment of a classified layer against a reference field.

    Use: ``set_layer(layer, predicted_field, reference_field)`` (or let the user pick), then
    ``assess()`` (or the *Assess* button) runs in a ``QgsTask``; ``reportReady(report)`` or
    ``failed(message)`` follows and the report shows in the panel. ``save_report(path)`` (or
    *Save report…*) writes ``path`` (HTML) and, beside it, ``<stem>.csv`` and
    ``<stem>_matrix.csv``. Call ``shutdown()`` before the widget goes away.

    Signals:
        reportReady(object): the ``core.accuracy.AccuracyReport`` of a finished assessment.
        failed(str): what went wrong (cancellation says "Cancelled").
    """

    reportReady = pyqtSignal(object)  # noqa: N815 (Qt naming)
    failed = pyqtSignal(str)

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.task: Optional[AccuracyTask] = None
        self.report = None

        self.layer_combo = QgsMapLayerComboBox()
        self.layer_combo.setFilters(QgsMapLayerProxyModel.VectorLayer)
        self.layer_combo.setAllowEmptyLayer(True)
        self.layer_combo.setToolTip("The classified layer: every feature is part of the map; "
                                    "features with a reference class are the sample.")
        self.predicted_combo = QgsFieldComboBox()
        self.predicted_combo.setToolTip("Field with the map's (predicted) class, e.g. crop_pred.")
        self.reference_combo = QgsFieldComboBox()
        self.reference_combo.setToolTip("Field with the reference (ground truth) class; empty where "
                                        "a parcel was not checked.")
        self.confidence_combo = QgsFieldComboBox()
        self.confidence_combo.setAllowEmptyFieldName(True)
        self.confidence_combo.setFilters(QgsFieldProxyModel.Numeric)
        self.confidence_combo.setToolTip(tr("Field with the map's confidence (crop_conf): the report then shows "
                                            "how often parcels of each confidence are right (a reliability diagram) "
                                            "and the expected calibration error. Empty: no reliability."))
        self.weighting_combo = QComboBox()
        for key, label in WEIGHTING_LABELS.items():
            self.weighting_combo.addItem(label, key)
        self.weighting_combo.addItem("Map class areas: from a table (CSV class,area)", TABLE)
        self.weighting_combo.setToolTip(
            "Where the map's class areas (the strata weights of the area-adjusted estimates) "
            "come from: the layer's parcel areas or counts, a table of class areas (e.g. of a "
            "larger map), or none (sample scores only).")
        self.areas_file = QgsFileWidget()
        self.areas_file.setFilter("CSV (*.csv);;All files (*)")
        self.areas_file.setToolTip("CSV with a header; first column the class, second its area.")
        self.areas_file.setEnabled(False)
        self.codes_combo = QComboBox()
        for key, label in zip(CLASS_MAPS, CLASS_MAP_LABELS):
            self.codes_combo.addItem(label, key)
        self.codes_combo.setToolTip("When the reference field holds national crop codes (e.g. the French "
                                    "CODE_CULTU), the paper's table turns them into the map's classes; codes "
                                    "not in it count as 'unknown'.")

        self.assess_button = QPushButton("Assess")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.save_button = QPushButton("Save report…")
        self.save_button.setEnabled(False)
        self.status = QLabel("Choose the classified layer, its class field and the reference field.")
        self.status.setWordWrap(True)
        self.browser = QTextBrowser()
        self.browser.setOpenLinks(False)
        # The report is laid out as wide as the browser, or as its widest table when that is wider
        # (then it scrolls sideways), so that no table squeezes its headers letter by letter.
        self.browser.setLineWrapMode(QTextBrowser.FixedPixelWidth)
        self.browser.viewport().installEventFilter(self)

        form = QFormLayout()
        # In a narrow dock a field goes below its label rather than past the dock's edge.
        form.setRowWrapPolicy(QFormLayout.WrapLongRows)
        form.addRow("Classified layer", self.layer_combo)
        form.addRow("Map (predicted) class", self.predicted_combo)
        form.addRow("Reference class", self.reference_combo)
        form.addRow("Reference codes", self.codes_combo)
        form.addRow(tr("Confidence"), self.confidence_combo)
        form.addRow("Weighting", self.weighting_combo)
        form.addRow("Class-area table", self.areas_file)
        buttons = QHBoxLayout()
        for button in (self.assess_button, self.cancel_button, self.save_button):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        layout.addWidget(self.browser, 1)

        self.layer_combo.layerChanged.connect(self._layer_changed)
        # Only a field the user picks chooses the code table (the field list refreshes itself too).
        self.reference_combo.activated.connect(lambda _: self._reference_changed(self.reference_combo.currentField()))
        self.weighting_combo.currentIndexChanged.connect(
            lambda _: self.areas_file.setEnabled(self.weighting() == TABLE))
        self.assess_button.clicked.connect(self.assess)
        self.cancel_button.clicked.connect(self.cancel)
        self.save_button.clicked.connect(self._ask_save)
        self._layer_changed(self.layer_combo.currentLayer())

    # -- inputs --------------------------------------------------------------------------------

    def set_layer(self, layer: Optional[QgsVectorLayer], predicted_field: Optional[str] = None,
                  reference_field: Optional[str] = None) -> None:
        """Show ``layer`` (a project layer) with these fields chosen (guessed when None)."""
        self.layer_combo.setLayer(layer)
        self._layer_changed(layer)
        if predicted_field:
            self.predicted_combo.setField(predicted_field)
        if reference_field:
            self.reference_combo.setField(reference_field)
            self._reference_changed(reference_field)

    def layer(self) -> Optional[QgsVectorLayer]:
        return self.layer_combo.currentLayer()

    def weighting(self) -> str:
        """``"area"``, ``"count"``, ``"none"`` or ``"table"``."""
        return self.weighting_combo.currentData()

    def set_weighting(self, key: str, table: Optional[str] = None) -> None:
        """Choose the weighting by key; ``table`` is the CSV for ``"table"``."""
        index = self.weighting_combo.findData(key)
        if index < 0:
            raise ValueError(f"unknown weighting {key!r}")
        self.weighting_combo.setCurrentIndex(index)
        if table is not None:
            self.areas_file.setFilePath(str(table))

    def _layer_changed(self, layer) -> None:
        self.predicted_combo.setLayer(layer)
        self.reference_combo.setLayer(layer)
        self.confidence_combo.setLayer(layer)
        if layer is not None:
            names = layer.fields().names()
            self.confidence_combo.setField(guess_confidence_field(names) or "")
            predicted, reference = guess_fields(names)
            if reference is None:  # crop codes of a national register, say CODE_CULTU
                reference = next((n for n in names if n.lower() in CODE_FIELDS), None)
            self.predicted_combo.setField(predicted or "")
            self.reference_combo.setField(reference or "")
            self._reference_changed(reference or "")
        self.assess_button.setEnabled(layer is not None and self.task is None)

    def _reference_changed(self, field: str) -> None:
        """A reference field of a register's crop codes chooses its code table."""
        preset = CODE_FIELDS.get((field or "").lower(), "")
        self.codes_combo.setCurrentIndex(self.codes_combo.findData(preset))

    # -- running -------------------------------------------------------------------------------

    def check(self) -> Optional[str]:
        """What is missing before an assessment can start, or None."""
        layer = self.layer()
        if layer is None or not layer.isValid():
            return "Choose the classified layer."
        predicted, reference = self.predicted_combo.currentField(), self.reference_combo.currentField()
        if not predicted or not reference:
            return "Choose both the map (predicted) class field and the reference class field."
        if predicted == reference:
            return "The map and reference fields are the same; choose the reference (ground truth) field."
        if self.weighting() == "area" and layer.geometryType() != QgsWkbTypes.PolygonGeometry:
            return ("Parcel areas need a polygon layer; weight by parcel count, give a class-area "
                    "table or choose no weighting.")
        if self.weighting() == TABLE and not Path(self.areas_file.filePath()).is_file():
            return "Choose the CSV table of map class areas (class,area)."
        return None

    def assess(self) -> Optional[AccuracyTask]:
        """Start the assessment in the background; None (with the reason shown) when it cannot."""
        if self.task is not None:
            return None
        problem = self.check()
        if problem:
            self._fail(problem)
            return None
        layer = self.layer()
        task = AccuracyTask(layer, self.predicted_combo.currentField(),
                            self.reference_combo.currentField(), self.weighting(),
                            self.areas_file.filePath() or None, self._finished,
                            reference_class_map=self.codes_combo.currentData(),
                            confidence=self.confidence_combo.currentField())
        self.assess_button.setEnabled(False)
        self.status.setText(f"Assessing {layer.name()}…")
        self.status.setStyleSheet("")
        return self.launch(task)

    def _finished(self, task: AccuracyTask) -> None:
        self.task_ended()
        self.assess_button.setEnabled(self.layer() is not None)
        if task.report is None:
            self._fail(task.error or "Cancelled: the assessment was stopped.")
            return
        self.show_report(task.report)

    def show_report(self, report) -> None:
        """Display ``report`` (a ``core.accuracy.AccuracyReport``) and allow saving it."""
        from ..core.accuracy import report_html

        self.report = report
        # The matrices' columns are numbered (the rows give number and name): they fit a dock of
        # the default width.
        page = readable_headers(report_html(report, narrow=True))
        # Qt's text browser shows images it holds as resources: the report's inline figures.
        for uri in set(re.findall(r'src="(data:image/png;base64,[^"]+)"', page)):
            image = QImage.fromData(base64.b64decode(uri.split(",", 1)[1]), "PNG")
            self.browser.document().addResource(QTextDocument.ImageResource, QUrl(uri), image)
        self.browser.setHtml(page)
        self.fit_report()
        s = report.sample
        text = (f"{s.n} reference parcels: overall accuracy {s.overall_accuracy:.3f}, "
                f"kappa {s.kappa:.3f}")
        if report.reliability is not None:
            text += tr("; expected calibration error {ece:.3f}").format(ece=report.reliability.ece)
        layer = self.layer()
        if layer is not None and layer.subsetString():
            text = (f"Only the {layer.featureCount()} features the layer's filter shows were assessed "
                    f"({layer.subsetString()}; clear the filter to assess every feature): " + text)
        if report.estimates is not None:
            from ..core.accuracy import format_estimate

            e = report.estimates
            text += f"; area-adjusted {format_estimate(e.overall_accuracy, e.overall_accuracy_se)}"
        text += "." + "".join(f" {w}" for w in report.warnings if "does not map" in w)
        self.status.setText(text)
        self.status.setStyleSheet("")
        self.save_button.setEnabled(True)
        QgsMessageLog.logMessage(f"Accuracy of {report.title}: {text}", "ThermoCrop", Qgis.Info)
        self.reportReady.emit(report)

    def fit_report(self) -> None:
        """Lay the report out as wide as the browser shows, or as its widest table needs."""
        browser = self.browser
        width = browser.viewport().width() - PAGE_EDGE
        # A table that cannot be narrower than its words makes the document wider than the page;
        # on a wider page it may widen again (its text wraps less), hence a few rounds.
        for _ in range(4):
            browser.setLineWrapColumnOrWidth(width)
            need = int(math.ceil(browser.document().size().width()))
            if need <= width + PAGE_EDGE:
                return
            width = need + TABLE_MARGIN

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name)
        # The browser's viewport resized (the dock did): the report follows its width.
        if event.type() == QEvent.Resize and watched is self.browser.viewport() and self.report is not None:
            self.fit_report()
        return super().eventFilter(watched, event)

    def _fail(self, message: str) -> None:
        self.status.setText(message)
        self.status.setStyleSheet("color: #b00020")
        QgsMessageLog.logMessage(f"Accuracy assessment: {message}", "ThermoCrop", Qgis.Warning)
        self.failed.emit(message)

    # -- saving --------------------------------------------------------------------------------

    def save_report(self, html_path) -> list[Path]:
        """Write the shown report: ``html_path`` and, beside it, ``<stem>.csv`` and
        ``<stem>_matrix.csv``. Returns the three paths."""
        from ..core.accuracy import write_reports

        if self.report is None:
            raise RuntimeError("No report to save yet; run the assessment first.")
        html_path = Path(html_path)
        if html_path.suffix.lower() not in (".html", ".htm"):
            html_path = html_path.with_suffix(".html")
        stem = html_path.with_suffix("")
        outputs = [("html", "", html_path), ("csv", "", f"{stem}.csv"), ("matrix", "", f"{stem}_matrix.csv")]
        # The save dialog asked before replacing the report; never the layer or the area table.
        return write_reports(self.report, outputs, overwrite=True,
                             inputs=[layer_file(self.layer()), self.areas_file.filePath() or None])

    def _ask_save(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save the accuracy report", "accuracy.html",
                                              "HTML report (*.html)")
        if not path:
            return
        from ..core.errors import ThermoCropError

        try:
            written = self.save_report(path)
        except (ThermoCropError, OSError) as exc:
            self._fail(f"The report could not be saved: {exc}")
            return
        self.status.setText("Saved " + ", ".join(str(p) for p in written))
