"""The ThermoCrop dock: choose parcels, scenes (files or a catalogue search), weather (a file or a
weather service) and model, classify in the background into a new layer file (or the parcel
layer's own fields), explain one parcel's prediction, assess a result (``accuracy_widget.py``) and
train a model from a labelled layer (``train_panel.py``).

The status (Classify / Cancel, progress, messages, the install button and the class counts) sits
below the tabs and never scrolls away; failures and completions also reach the QGIS message bar
and the ThermoCrop tab of the message log.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Callable, Optional

from qgis.core import (
    Qgis,
    QgsApplication,
    QgsExpression,
    QgsMapLayerProxyModel,
    QgsMessageLog,
    QgsProject,
    QgsRasterLayer,
    QgsSettings,
    QgsVectorLayer,
    QgsVectorLayerFeatureSource,
)
from qgis.gui import QgsDockWidget, QgsFieldComboBox, QgsFileWidget, QgsMapLayerComboBox, QgsMapToolIdentifyFeature
from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtGui import QColor, QIcon, QPixmap
from qgis.PyQt.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSizePolicy,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..core.crops import UNKNOWN_CLASS, class_colours, colour_list
from .dependencies import (describe_install, describe_missing, dependency_folder, make_install_task,
                           missing_requirements)
from .i18n import tr
from .layer_writer import (
    check_layer_fields,
    check_new_layer_file,
    default_output_path,
    field_name_problems,
    layer_alive,
    layer_is_writable,
    unique_layer_name,
    write_result_to_layer,
)
from .layers import SCENE_FILE_FILTER, scene_candidate, scene_source
from .accuracy_layer import guess_fields
from .catalog import WEATHER_LABELS, WEATHER_SERVICES
from .staged_sinks import layer_file
from .styles import UNCLASSIFIED_COLOUR, apply_class_style, class_label, confidence_renderer, save_style_beside
from .train_panel import TrainPanel
from .weather_task import WeatherTask, scene_dates
from .task import (  # noqa: F401 (ndvi_series is part of the dock's API)
    ClassificationParameters,
    ClassificationTask,
    ExplainTask,
    LayerSnapshot,
    ndvi_series,
)

log = logging.getLogger(__name__)

LOG_TAG = "ThermoCrop"
SETTINGS_GROUP = "thermocrop/dock"
CONFIDENCE_STYLE = "ThermoCrop confidence"
NEW_FILE, IN_PLACE = "new_file", "in_place"


def month_locator(first, last, max_ticks: int = 4):
    """A matplotlib month locator with at most ``max_ticks`` ticks between two dates."""
    from matplotlib.dates import MonthLocator

    months = max((last.year - first.year) * 12 + last.month - first.month + 1, 1)
    return MonthLocator(interval=max(1, math.ceil(months / max_ticks)))


class ElidedLabel(QLabel):
    """A small grey label showing a long text (a path) whole, elided in the middle to fit its width."""

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self._full = text
        self.setStyleSheet("color: #606060;")
        self.setMinimumWidth(40)
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        font = self.font()
        font.setPointSizeF(font.pointSizeF() * 0.9)
        self.setFont(font)
        self.setFullText(text)

    def setFullText(self, text: str) -> None:  # noqa: N802 (Qt style)
        self._full = text or ""
        self.setToolTip(self._full)
        self.setVisible(bool(self._full))
        self._elide()

    def fullText(self) -> str:  # noqa: N802
        return self._full

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        self.setText(self.fontMetrics().elidedText(self._full, Qt.ElideMiddle, max(self.width(), 40)))


class ThermoCropDock(QgsDockWidget):
    """Interactive classification of the parcels of a project layer."""

    def __init__(self, iface=None, parent=None, restore: bool = True) -> None:
        super().__init__(tr("ThermoCrop"), parent)
        self.setObjectName("ThermoCropDock")
        self.iface = iface
        self.task: Optional[ClassificationTask] = None
        self.explain_task: Optional[ExplainTask] = None
        self.install_task = None
        self.last_result = None
        self.last_fids: list = []
        self.last_bundle = None
        self.last_explanation = None
        self.preflight = None
        self.weather_task: Optional[WeatherTask] = None
        self.output_layer: Optional[QgsVectorLayer] = None
        self.target_layer: Optional[QgsVectorLayer] = None
        self._layer_removed = False
        self._base_subset: Optional[str] = None
        self._class_style = ""
        self.left_out: dict = {}
        # Replaced in tests; asks the user before fields or files are overwritten.
        self.confirm_overwrite: Callable[[list], bool] = self._ask_overwrite
        # Off while the form is built and restored, so that half a form never overwrites the settings.
        self._remembering = False
        self._build()
        if restore:
            self.restore_settings()
        self._remembering = restore
        self.model.fileChanged.connect(lambda *_: self._remember())
        self.to_new_file.toggled.connect(lambda *_: self._remember())
        self.probabilities.toggled.connect(lambda *_: self._remember())
        self.refresh_rasters()
        QgsProject.instance().layersAdded.connect(self.refresh_rasters)
        QgsProject.instance().layersRemoved.connect(self.refresh_rasters)
        self.check_dependencies()

    # ----- layout
    def _build(self) -> None:
        self.tabs = QTabWidget()
        # A scroll area keeps every control reachable when the dock is short.
        self.classify_scroll = self._scroll(self._build_classify_page())
        self.tabs.addTab(self.classify_scroll, tr("Classify"))
        self.tabs.addTab(self._build_explain_page(), tr("Explain"))
        self._add_accuracy_tab()
        self._add_train_tab()
        self.tabs.currentChanged.connect(self._tab_changed)

        container = QWidget()
        layout = QVBoxLayout(container)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self._build_status_panel())
        # The counts of the last run head the Classify page, scrolling with the form, so that
        # neither squeezes the other in a short dock.
        self.classify_layout.insertWidget(0, self.results_box)
        # Combo boxes sized by their longest item would make a page wider than the dock.
        for combo in container.findChildren(QComboBox):
            combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(8)
        self.setWidget(container)
        self.show_model_card()
        self._tab_changed(0)

    def _add_accuracy_tab(self) -> None:
        """The accuracy assessment tab, when the plugin has the accuracy widget."""
        self.accuracy_widget = None
        try:
            from .accuracy_widget import AccuracyWidget
        except ImportError:
            return
        self.accuracy_widget = AccuracyWidget()
        self.accuracy_widget.failed.connect(
            lambda message: self.say(tr("Accuracy assessment: {message}").format(message=message), Qgis.Warning,
                                     bar=True))
        self.accuracy_widget.reportReady.connect(
            lambda report: self.say(tr("Accuracy assessment finished; the report is on the Accuracy tab."),
                                    Qgis.Success, bar=True))
        # In a scroll area too, so that its report never makes the dock taller than the screen.
        # Combo boxes sized by their longest item would make the page wider than the dock.
        for combo in self.accuracy_widget.findChildren(QComboBox):
            combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(8)
        self.tabs.addTab(self._scroll(self.accuracy_widget), tr("Accuracy"))

    def _add_train_tab(self) -> None:
        """The Train tab: a model from a labelled layer with this tab's scenes and weather."""
        self.train_panel = TrainPanel(lambda: (self.scene_paths(), self.weather_service() or self.weather.filePath()),
                                      self.model.setFilePath)
        self.train_panel.message.connect(
            lambda text, level: QgsMessageLog.logMessage(text, LOG_TAG, Qgis.Info if level == Qgis.Success else level))
        self.train_panel.trained.connect(
            lambda path: self.iface.messageBar().pushMessage(
                LOG_TAG, tr("Model {name} trained and chosen for the next classification.").format(
                    name=Path(path).name), Qgis.Success, 8) if self.iface is not None else None)
        self.tabs.addTab(self._scroll(self.train_panel), tr("Train"))

    @staticmethod
    def _scroll(page: QWidget) -> QScrollArea:
        """``page`` in a vertical scroll area: every control stays reachable when the dock is short,
        and the page is as wide as the dock (never scrolled sideways, never cut off)."""
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        scroll.setWidget(page)
        return scroll

    @staticmethod
    def _form(box: QGroupBox) -> QFormLayout:
        form = QFormLayout(box)
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        # In a narrow dock a field goes below its label rather than past the dock's edge.
        form.setRowWrapPolicy(QFormLayout.WrapLongRows)
        form.setLabelAlignment(Qt.AlignLeft | Qt.AlignVCenter)
        return form

    @staticmethod
    def _file_widget(filter_text: str) -> QgsFileWidget:
        widget = QgsFileWidget()
        widget.setFilter(filter_text)
        # Without this the form hands spare height to the file rows and their labels float.
        widget.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        # The full path, whatever part of it the field has room for.
        widget.fileChanged.connect(lambda path, w=widget: w.lineEdit().setToolTip(path))
        return widget

    def _path_changed(self, widget: QgsFileWidget, caption: "ElidedLabel") -> None:
        """Show a chosen path from its left end; the caption below shows it whole, elided in the middle.

        A path being typed keeps its cursor where the typing is (the line edit is "modified"
        while the user edits it; choosing a file or ``setFilePath`` resets that).
        """
        if not widget.lineEdit().isModified():
            widget.lineEdit().setCursorPosition(0)
        caption.setFullText(widget.filePath())
        self._remember()

    def _build_classify_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        self.classify_layout = layout

        inputs = QGroupBox(tr("Input"))
        form = self._form(inputs)
        self.layer_combo = QgsMapLayerComboBox()
        self.layer_combo.setFilters(QgsMapLayerProxyModel.PolygonLayer)
        self.layer_combo.setToolTip(tr("Polygon layer of the project whose parcels are classified"))
        self.layer_combo.layerChanged.connect(self._layer_changed)
        form.addRow(tr("Parcels"), self.layer_combo)
        self.selected_only = QCheckBox(tr("Selected features only"))
        form.addRow("", self.selected_only)
        self.scene_list = QListWidget()
        self.scene_list.setMinimumHeight(60)
        self.scene_list.setMaximumHeight(110)
        # Long names are shortened in the middle rather than scrolled sideways; the tooltip has them whole.
        self.scene_list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.scene_list.setTextElideMode(Qt.ElideMiddle)
        self.scene_list.setToolTip(tr("Ticked scenes are used: the project's Sentinel-2 rasters and added "
                                      "files or folders"))
        form.addRow(tr("Scenes"), self.scene_list)
        buttons = QHBoxLayout()
        self.add_files = QPushButton(tr("Add files…"))
        self.add_files.setToolTip(tr("Add Sentinel-2 products: .zip or .SAFE (choose its MTD_MSIL*.xml), "
                                     "or GeoTIFF / JPEG 2000 files"))
        self.add_folder = QPushButton(tr("Add folder…"))
        self.add_folder.setToolTip(tr("Add a folder: every product and raster in it (and below) is read"))
        self.remove_scenes = QPushButton(tr("Remove"))
        self.remove_scenes.setToolTip(tr("Remove the selected files or folders added by hand (a project layer "
                                         "stays listed: untick it)"))
        self.clear_scenes = QPushButton(tr("Clear"))
        self.clear_scenes.setToolTip(tr("Remove every file and folder added by hand"))
        self.add_files.clicked.connect(self._pick_files)
        self.add_folder.clicked.connect(self._pick_folder)
        self.remove_scenes.clicked.connect(self.remove_selected_scenes)
        self.clear_scenes.clicked.connect(self.clear_added_scenes)
        self.scene_list.setSelectionMode(QListWidget.ExtendedSelection)
        self.scene_list.itemChanged.connect(lambda *_: self._remember())
        for button in (self.add_files, self.add_folder, self.remove_scenes, self.clear_scenes):
            # Narrow docks: the four buttons share the row instead of pushing the form wider.
            button.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
            button.setMinimumWidth(40)
            buttons.addWidget(button)
        form.addRow(buttons)
        self.left_out_note = QLabel()
        self.left_out_note.setWordWrap(True)
        self.left_out_note.setTextFormat(Qt.RichText)
        self.left_out_note.setVisible(False)
        form.addRow(self.left_out_note)
        self._add_catalog(form)
        self.weather_from = QComboBox()
        for service, label in zip(WEATHER_SERVICES, WEATHER_LABELS):
            self.weather_from.addItem(tr(label), service)
        self.weather_from.setToolTip(tr("Where the daily temperatures come from: a file, or a weather service "
                                        "fetched for the parcels when the run starts and kept in the cache "
                                        "(Open-Meteo needs no key; the Copernicus CDS needs CDSAPI_URL / "
                                        "CDSAPI_KEY in the environment)"))
        self.weather_from.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.weather_from.setMinimumContentsLength(10)
        self.weather_from.currentIndexChanged.connect(self._weather_source_changed)
        self.weather = self._file_widget(tr("Temperatures (*.nc *.nc4 *.csv);;All files (*)"))
        self.weather.setToolTip(tr("Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV"))
        # Label above the field: the path gets the dock's whole width.
        form.addRow(QLabel(tr("Weather")))
        form.addRow(self.weather_from)
        form.addRow(self.weather)
        self.weather_caption = ElidedLabel()
        form.addRow(self.weather_caption)
        self.weather.fileChanged.connect(lambda *_: self._path_changed(self.weather, self.weather_caption))
        layout.addWidget(inputs)

        model_box = QGroupBox(tr("Model"))
        form = self._form(model_box)
        self.model = self._file_widget(tr("ThermoCrop model (*.tcm)"))
        self.model.lineEdit().setPlaceholderText(tr("empty: the shipped model"))
        self.model.fileChanged.connect(self.show_model_card)
        form.addRow(self.model)
        self.model_card = QLabel()
        self.model_card.setWordWrap(True)
        self.model_card.setTextFormat(Qt.RichText)
        form.addRow(self.model_card)
        layout.addWidget(model_box)

        output_box = QGroupBox(tr("Output"))
        form = self._form(output_box)
        self.to_new_file = QRadioButton(tr("New layer file"))
        self.to_new_file.setToolTip(tr("Write the parcels with the result fields to a new file; the parcel "
                                       "layer is not changed"))
        self.in_place = QRadioButton(tr("Fields of the parcel layer"))
        self.in_place.setToolTip(tr("Add the result fields to the parcel layer and save it (in a running edit "
                                    "session: one undoable edit)"))
        self.output_mode = QButtonGroup(self)
        self.output_mode.addButton(self.to_new_file)
        self.output_mode.addButton(self.in_place)
        self.to_new_file.setChecked(True)
        form.addRow(self.to_new_file)
        self.output_file = QgsFileWidget()
        self.output_file.setStorageMode(QgsFileWidget.SaveFile)
        self.output_file.setFilter(tr("GeoPackage (*.gpkg);;Shapefile (*.shp);;GeoJSON (*.geojson);;"
                                      "FlatGeobuf (*.fgb)"))
        self.output_file.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.output_file.setConfirmOverwrite(True)
        form.addRow(self.output_file)
        form.addRow(self.in_place)
        self.to_new_file.toggled.connect(self.output_file.setEnabled)
        self.label_field = QLineEdit("crop_pred")
        self.conf_field = QLineEdit("crop_conf")
        self.status_field = QLineEdit("crop_status")
        form.addRow(tr("Class field"), self.label_field)
        form.addRow(tr("Confidence field"), self.conf_field)
        form.addRow(tr("Status field"), self.status_field)
        self.probabilities = QCheckBox(tr("Probabilities, margin, entropy"))
        self.probabilities.setToolTip(tr("Also write p_<class> for every class, crop_margin (best minus second "
                                         "best probability) and crop_entropy (0 sure .. 1 undecided)"))
        form.addRow(self.probabilities)
        layout.addWidget(output_box)
        layout.addStretch(1)
        return page

    def _build_status_panel(self) -> QWidget:
        panel = QFrame()
        panel.setFrameShape(QFrame.StyledPanel)
        layout = QVBoxLayout(panel)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.setSpacing(4)
        row = QHBoxLayout()
        self.run_button = QPushButton(tr("Classify"))
        self.run_button.setDefault(True)
        self.cancel_button = QPushButton(tr("Cancel"))
        self.cancel_button.setEnabled(False)
        self.run_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        self.progress = QProgressBar()
        self.progress.setMaximumHeight(18)
        layout.addWidget(self.progress)
        self.message = QLabel()
        self.message.setWordWrap(True)
        # A long message (a path, an error) wraps within the dock and never widens it; an unbreakable
        # path is cut at the dock's edge, and the tooltip holds the whole text.
        self.message.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.message.setMinimumWidth(40)
        self.message.setTextInteractionFlags(Qt.TextSelectableByMouse)
        layout.addWidget(self.message)
        self.install_button = QPushButton(tr("Install missing packages"))
        self.install_button.clicked.connect(self.install_missing)
        self.install_button.setVisible(False)
        layout.addWidget(self.install_button)

        self.results_box = QGroupBox(tr("Parcels per class"))
        results = QVBoxLayout(self.results_box)
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
        self.results_box.setVisible(False)
        return panel

    def _build_explain_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        row = QHBoxLayout()
        self.pick_button = QPushButton(tr("Click a parcel"))
        self.pick_button.setCheckable(True)
        self.pick_button.setToolTip(tr("Then click a parcel of the classified layer on the map to explain it"))
        self.pick_button.setEnabled(self.iface is not None)
        self.pick_button.toggled.connect(self._pick_toggled)
        self.explain_button = QPushButton(tr("Explain the selected"))
        self.explain_button.setToolTip(tr("Explain the one selected parcel of the classified layer"))
        self.explain_button.clicked.connect(self.explain_selected)
        for button in (self.pick_button, self.explain_button):
            button.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
            button.setMinimumWidth(40)
            row.addWidget(button, 1)
        layout.addLayout(row)
        form = QFormLayout()
        self.reference_field = QgsFieldComboBox()
        self.reference_field.setAllowEmptyFieldName(True)
        self.reference_field.setToolTip(tr("A field of the parcels with their known (reference) class, shown beside "
                                           "the prediction; empty: none"))
        form.addRow(tr("Reference"), self.reference_field)
        layout.addLayout(form)
        self.explain_message = QLabel(tr("Click a parcel of the classified layer (or select one) to see its NDVI "
                                         "series against the calendar and against growing degree days, and the "
                                         "model's class probabilities."))
        self.explain_message.setWordWrap(True)
        layout.addWidget(self.explain_message)
        self.map_tool = None
        self.explain_box = QWidget()
        self.explain_layout = QVBoxLayout(self.explain_box)
        self.explain_layout.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(self.explain_box)
        layout.addWidget(scroll, 1)
        self.figure_canvas = None
        return page

    def _tab_changed(self, index: int) -> None:
        self.results_box.setVisible(self.last_result is not None)
        if index == 1:
            self._sync_reference_layer()

    # ----- status
    def say(self, text: str, level: Optional[int] = None, bar: bool = False) -> None:
        """Show ``text`` in the status panel; log it, and push it to the message bar when ``bar``.

        ``level``: ``Qgis.Info``, ``Qgis.Warning``, ``Qgis.Critical`` or ``Qgis.Success``; None only
        shows the text (hints while filling in the form).
        """
        colour = {Qgis.Critical: "#b71c1c", Qgis.Warning: "#8a5a00"}.get(level)
        self.message.setStyleSheet(f"color: {colour};" if colour else "")
        self.message.setText(text)
        self.message.setToolTip(text)
        if level is None:
            return
        QgsMessageLog.logMessage(text, LOG_TAG, Qgis.Info if level == Qgis.Success else level)
        if bar and self.iface is not None:
            self.iface.messageBar().pushMessage(LOG_TAG, text.splitlines()[0], level,
                                                0 if level == Qgis.Critical else 8)

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

    # ----- scenes
    def refresh_rasters(self, *args) -> None:
        """List the project's rasters that can be Sentinel-2 before files added by hand.

        Rasters read as whole Sentinel-2 products are ticked; ones that could be part of one (a
        single band file) are listed unticked; the rest (web maps, DEMs...) are left out and named
        in a note with the reason.
        """
        files = [self.scene_list.item(i).data(Qt.UserRole) for i in range(self.scene_list.count())
                 if self.scene_list.item(i).data(Qt.UserRole + 1) == "file"]
        states = {self.scene_list.item(i).data(Qt.UserRole): self.scene_list.item(i).checkState() == Qt.Checked
                  for i in range(self.scene_list.count())}
        self.scene_list.clear()
        self.left_out = {}
        for layer in QgsProject.instance().mapLayers().values():
            if not isinstance(layer, QgsRasterLayer):
                continue
            verdict = scene_candidate(layer.providerType(), layer.source())
            if verdict.use == "no":
                self.left_out[layer.name()] = verdict.reason
                continue
            path = layer.source().split("|")[0]
            self._add_scene(f"{layer.name()} ({verdict.reason})" if verdict.use == "scene" else layer.name(),
                            path, "layer", states.get(path, verdict.use == "scene"),
                            tooltip=path if verdict.use == "scene" else f"{path}\n{verdict.reason}")
        for path in files:
            self._add_scene(Path(path).name, path, "file", states.get(path, True))
        self.left_out_note.setVisible(bool(self.left_out))
        if self.left_out:
            names = "; ".join(f"<b>{name}</b>: {reason}" for name, reason in sorted(self.left_out.items()))
            self.left_out_note.setText(f"<small>{tr('Not offered as scenes')}: {names}</small>")

    def _add_scene(self, text: str, path: str, kind: str, checked: bool = True, tooltip: str = "") -> None:
        icon = "/mIconRasterLayer.svg" if kind == "layer" else (
            "/mIconFolder.svg" if Path(path).is_dir() else "/mIconFile.svg")
        item = QListWidgetItem(QgsApplication.getThemeIcon(icon), text)
        item.setToolTip(tooltip or path)
        item.setData(Qt.UserRole, path)
        item.setData(Qt.UserRole + 1, kind)
        item.setFlags(item.flags() | Qt.ItemIsUserCheckable)
        item.setCheckState(Qt.Checked if checked else Qt.Unchecked)
        self.scene_list.addItem(item)

    def add_scene_paths(self, paths: list) -> None:
        """Add scene files or folders to the list, checked (a path already listed is not repeated).

        A product's ``MTD_MSIL*.xml`` stands for its ``.SAFE`` folder (what the file dialog can pick).
        """
        listed = {self.scene_list.item(i).data(Qt.UserRole) for i in range(self.scene_list.count())}
        for path in map(scene_source, paths):
            if path not in listed:
                self._add_scene(Path(path).name, path, "file")
                listed.add(path)
        self._remember()

    def remove_selected_scenes(self) -> int:
        """Remove the selected files and folders added by hand; returns how many were removed.

        Project layers stay in the list (they are the project's; unticking leaves them out).
        """
        rows = sorted((self.scene_list.row(item) for item in self.scene_list.selectedItems()
                       if item.data(Qt.UserRole + 1) == "file"), reverse=True)
        for row in rows:
            self.scene_list.takeItem(row)
        if not rows and self.scene_list.selectedItems():
            self.say(tr("Project layers stay listed; untick them to leave them out of the run."))
        self._remember()
        return len(rows)

    def clear_added_scenes(self) -> int:
        """Remove every file and folder added by hand; returns how many were removed."""
        rows = [i for i in range(self.scene_list.count())
                if self.scene_list.item(i).data(Qt.UserRole + 1) == "file"]
        for row in reversed(rows):
            self.scene_list.takeItem(row)
        self._remember()
        return len(rows)

    def _pick_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, tr("Sentinel-2 scenes"), "", SCENE_FILE_FILTER)
        self.add_scene_paths(paths)

    def _pick_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, tr("Folder of Sentinel-2 scenes"))
        if folder:
            self.add_scene_paths([folder])

    def _add_catalog(self, form: QFormLayout) -> None:
        """The "Search a catalogue" section (``catalog_widget.py``): ticked, its items replace the
        scene list as the run's scenes."""
        from .catalog_widget import CatalogWidget

        self.catalog = CatalogWidget(self.layer_combo.currentLayer)
        # A short title: the long one set the narrowest the dock could be.
        self.catalog.setTitle(tr("Search a catalogue"))
        self.catalog.message.connect(lambda text, level: self.say(text, level))
        self.catalog.itemsChanged.connect(self._catalog_used)
        form.addRow(self.catalog)
        self._catalog_used()

    def weather_service(self) -> str:
        """The weather service chosen (``open-meteo``, ``cds:e-obs``...), or "" for the file."""
        return self.weather_from.currentData() or ""

    def set_weather_service(self, service: str) -> None:
        """Choose where the temperatures come from by key ("" for the file)."""
        index = self.weather_from.findData(service)
        if index < 0:
            raise ValueError(f"unknown weather service {service!r}")
        self.weather_from.setCurrentIndex(index)

    def _weather_source_changed(self, *args) -> None:
        service = self.weather_service()
        self.weather.lineEdit().setPlaceholderText(
            tr("fetched from {service} when the run starts").format(service=self.weather_from.currentText())
            if service else "")
        self._remember()

    def _catalog_used(self) -> None:
        files = not self.catalog.in_use()
        for widget in (self.scene_list, self.add_files, self.add_folder):
            widget.setEnabled(files)

    def scene_paths(self) -> list:
        """The checked scenes; files inside a checked folder are left to the folder. With
        "Search a catalogue" ticked, the item collection it found instead."""
        if self.catalog.in_use():
            return self.catalog.scene_paths()
        paths = [self.scene_list.item(i).data(Qt.UserRole) for i in range(self.scene_list.count())
                 if self.scene_list.item(i).checkState() == Qt.Checked]
        folders = [os.path.abspath(p) + os.sep for p in paths if os.path.isdir(p)]
        return [p for p in paths if not any(os.path.abspath(p).startswith(f) for f in folders)]

    # ----- settings
    def _remember(self) -> None:
        """Keep the form in the settings as it changes (a dock made with ``restore=False`` keeps nothing)."""
        if self._remembering:
            self.save_settings()

    def save_settings(self) -> None:
        """Remember the scenes added by hand (and which are ticked), the weather, model and output."""
        settings = QgsSettings()
        settings.beginGroup(SETTINGS_GROUP)
        items = [self.scene_list.item(i) for i in range(self.scene_list.count())]
        settings.setValue("scenes", [i.data(Qt.UserRole) for i in items if i.data(Qt.UserRole + 1) == "file"])
        settings.setValue("unticked", [i.data(Qt.UserRole) for i in items if i.checkState() != Qt.Checked])
        settings.setValue("weather", self.weather.filePath())
        settings.setValue("weather_service", self.weather_service())
        settings.setValue("model", self.model.filePath())
        settings.setValue("output_mode", NEW_FILE if self.to_new_file.isChecked() else IN_PLACE)
        settings.setValue("probabilities", self.probabilities.isChecked())
        settings.endGroup()
        self.catalog.save_settings()

    def restore_settings(self) -> None:
        """Fill the form with what the last run used (paths that no longer exist are skipped)."""
        settings = QgsSettings()
        settings.beginGroup(SETTINGS_GROUP)

        def paths(key):
            value = settings.value(key, []) or []
            return [value] if isinstance(value, str) else list(value)

        unticked = set(paths("unticked"))
        for path in paths("scenes"):
            if os.path.exists(path):
                self._add_scene(Path(path).name, path, "file", path not in unticked)
        for key, widget in (("weather", self.weather), ("model", self.model)):
            path = settings.value(key, "") or ""
            if path and os.path.isfile(path):
                widget.setFilePath(path)
        index = self.weather_from.findData(settings.value("weather_service", "") or "")
        self.weather_from.setCurrentIndex(max(index, 0))
        self.in_place.setChecked(settings.value("output_mode", NEW_FILE) == IN_PLACE)
        self.to_new_file.setChecked(settings.value("output_mode", NEW_FILE) != IN_PLACE)
        self.probabilities.setChecked(settings.value("probabilities", False, type=bool))
        settings.endGroup()

    # ----- model card and dependencies
    def show_model_card(self, *args) -> None:
        """Describe the chosen (or shipped) model: variant, classes, regions and scores."""
        try:
            from ..core.model.bundle import default_bundle_path, load_bundle

            path = self.model.filePath() or str(default_bundle_path())
            if not Path(path).is_file():
                self.model_card.setText("<i>" + tr("No model at {path}; choose a .tcm file.").format(path=path)
                                        + "</i>")
                return
            config = load_bundle(path).config
        except Exception as exc:  # missing torch or a bad file: the card says so
            self.model_card.setText("<i>" + tr("Model not available: {error}").format(error=exc) + "</i>")
            return
        prov = config.provenance or {}
        regions = prov.get("train_regions") or prov.get("regions") or prov.get("datasets") or tr("not recorded")
        if isinstance(regions, (list, tuple)):
            regions = ", ".join(map(str, regions))
        if prov.get("data"):
            regions = f"{regions} ({prov['data']})"
        flat = dict(prov.get("metrics") or {}, **{k: v for k, v in prov.items() if k != "metrics"})
        scores = ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in sorted(flat.items())
                           if isinstance(v, float) and any(w in k for w in ("f1", "accuracy", "kappa", "oa")))
        self.model_card.setText(
            f"<small><b>{Path(path).name}</b>: {config.variant}<br>{tr('classes')}: {', '.join(config.classes)}"
            f"<br>{tr('trained on')}: {regions}<br>{tr('scores')}: {scores or tr('not recorded')}</small>")

    def check_dependencies(self) -> list:
        missing = missing_requirements()
        self.install_button.setVisible(any(r.pip for r in missing))
        if missing:
            self.say(describe_missing(missing, dependency_folder()), Qgis.Warning)
        self.run_button.setEnabled(not missing)
        return missing

    def install_missing(self) -> None:
        missing = missing_requirements()
        folder = dependency_folder()
        self.say(tr("Installing into {folder} …").format(folder=folder), Qgis.Info)

        def done(code, output):
            self.install_task = None
            if code != 0:
                QgsMessageLog.logMessage(output, LOG_TAG, Qgis.Critical)
            self.say(describe_install(code, output), Qgis.Success if code == 0 else Qgis.Critical, bar=True)
            self.check_dependencies()
            self.show_model_card()  # it said torch was missing

        self.install_task = make_install_task(missing, folder, done)
        QgsApplication.taskManager().addTask(self.install_task)

    # ----- run
    def _layer_changed(self, layer) -> None:
        path = default_output_path(layer)
        self.output_file.lineEdit().setPlaceholderText(
            tr("empty: {name} beside the parcels").format(name=Path(path).name) if path
            else tr("choose a file (.gpkg, .shp, .geojson, .fgb)"))

    def _fields(self) -> Optional[tuple]:
        names = tuple(w.text().strip() for w in (self.label_field, self.conf_field, self.status_field))
        if any(not n for n in names) or len(set(names)) < 3:
            return None
        return names

    def parameters(self) -> Optional[ClassificationParameters]:
        """Check the form and run the preflight (inputs and output, before any scene is read); gather it.

        First what the form must hold, then the output (``core.vector``'s checks: format, folder,
        not an input, field types; milliseconds), then the inputs (``core.preflight.check_inputs``:
        the layer's CRS, the scenes of one season, the model loaded and validated, the weather read
        at a few points; about a second). What they load (model, scenes) goes to the task.

        Returns None, with the reason shown, when something must be fixed first.
        """
        from ..core.errors import ThermoCropError

        layer = self.layer_combo.currentLayer()
        if layer is None:
            self.say(tr("Choose a parcel layer."), Qgis.Warning)
            return None
        if self.selected_only.isChecked() and layer.selectedFeatureCount() == 0:
            self.say(tr("No feature of {layer} is selected; select parcels or untick 'Selected features "
                        "only'.").format(layer=layer.name()), Qgis.Warning)
            return None
        scenes = self.scene_paths()
        if not scenes and self.catalog.in_use():
            self.say(tr("Search the catalogue first (Search), or untick 'Search a catalogue' to use scene files."),
                     Qgis.Warning)
            return None
        if not scenes:
            self.say(tr("Tick or add at least one Sentinel-2 scene."), Qgis.Warning)
            return None
        service = self.weather_service()
        # With a service the temperatures are fetched once the preflight knows the scene dates.
        weather = "" if service else self.weather.filePath()
        if not weather and not service:
            self.say(tr("Choose a daily temperature file, or a weather service under 'Weather'."), Qgis.Warning)
            return None
        model = self.model.filePath() or None
        names = self._fields()
        if names is None:
            self.say(tr("The class, confidence and status fields need three different names."), Qgis.Warning)
            return None
        label, conf, status = names
        kinds = {label: "string", conf: "real", status: "string"}
        output = None
        if self.to_new_file.isChecked():
            output = self.output_file.filePath() or default_output_path(layer)
            if not output:
                self.say(tr("{layer} is not a file layer; choose the new layer file.").format(layer=layer.name()),
                         Qgis.Warning)
                return None
        else:
            if not layer_is_writable(layer):
                self.say(tr("{layer} is read-only; choose 'New layer file' to write the result.").format(
                    layer=layer.name()), Qgis.Warning)
                return None
            problems = field_name_problems(layer, list(kinds), self.probabilities.isChecked())
            if problems:
                self.say(tr("Cannot write into {layer}: {problems}. Choose other field names or a new layer "
                            "file.").format(layer=layer.name(), problems="; ".join(problems)), Qgis.Warning)
                return None
        missing = [p for p in scenes if not os.path.exists(p)]
        try:
            # The output first: it costs milliseconds, the inputs about a second.
            if output:
                check_new_layer_file(output, layer, [layer_file(layer), weather, model], kinds)
            else:
                check_layer_fields(layer, kinds)
            if missing:
                self.say(tr("The scene {path} does not exist; untick it or add it again.").format(path=missing[0]),
                         Qgis.Warning)
                return None
            self.say(tr("Checking the inputs …"))
            self.message.repaint()  # the check holds the UI thread for about a second
            # Items found in a catalogue are opened by the task (over the network, with the
            # chosen credentials), never here on the UI thread.
            from_catalog = self.catalog.in_use()
            checked = self.check_inputs(layer, None if from_catalog else scenes, weather or None, model)
            self.preflight = checked
            if self.probabilities.isChecked():
                from ..core.model.uncertainty import ENTROPY_FIELD, MARGIN_FIELD, probability_field_names

                extra = [*probability_field_names(checked.bundle.classes), MARGIN_FIELD, ENTROPY_FIELD]
                kinds.update(dict.fromkeys(extra, "real"))
                if output:
                    check_new_layer_file(output, layer, [layer_file(layer), weather, model], kinds)
                else:
                    check_layer_fields(layer, kinds)
        except ThermoCropError as exc:
            self.say(tr("Not started: {reason}").format(reason=exc), Qgis.Critical, bar=True)
            return None
        overwrite = False
        if output and Path(output).exists():
            if not self.confirm_overwrite([output]):
                self.say(tr("Not started: {path} exists and is not to be replaced.").format(path=output))
                return None
            overwrite = True
        if not output:
            existing = [n for n in kinds if layer.fields().indexOf(n) >= 0]
            if existing and not self.confirm_overwrite(existing):
                self.say(tr("Not started: the fields exist and are not to be overwritten."))
                return None
        selected = list(layer.selectedFeatureIds()) if self.selected_only.isChecked() else None
        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(),
                                 layer.fields().names(), selected)
        return ClassificationParameters(snapshot, [], scenes if from_catalog else checked.scenes, weather, model,
                                        label, conf, status,
                                        self.probabilities.isChecked(), output, overwrite, bundle=checked.bundle,
                                        inputs=[p for p in (layer_file(layer), weather, model) if p])

    @staticmethod
    def check_inputs(layer: QgsVectorLayer, scenes: Optional[list], weather: str, model: Optional[str]):
        """``core.preflight.check_inputs`` for a project layer: its CRS and extent, the scenes, the
        weather and the model (loaded and validated). Returns the ``Preflight``.

        Raises:
            ThermoCropError: the first problem, naming the file, layer or variable.
        """
        from ..core.preflight import LayerFootprint, check_inputs

        crs = layer.crs()
        extent = layer.extent()
        bounds = None if extent.isEmpty() else (extent.xMinimum(), extent.yMinimum(), extent.xMaximum(),
                                                extent.yMaximum())
        checked = check_inputs(parcels=LayerFootprint(crs.toWkt() if crs.isValid() else "", bounds), scenes=scenes,
                               weather=weather, bundle=model, need_bundle=True)
        log.info("Dock preflight of %s took %.2f s", layer.name(), checked.seconds)
        return checked

    def start(self) -> Optional[ClassificationTask]:
        params = self.parameters()
        if params is None:
            # Nothing runs: the bar must not show the last run's 100 % beside the reason.
            self.progress.setValue(0)
            return None
        if self.catalog.in_use():
            try:
                params.credentials = self.catalog.credentials()
            except ValueError as exc:
                self.say(str(exc), Qgis.Warning)
                return None
        self.save_settings()
        self.target_layer = self.layer_combo.currentLayer()
        self._layer_removed = False
        self.target_layer.willBeDeleted.connect(self._target_removed)
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setValue(0)
        # The counts and filters belonged to the last result; this run may not give one.
        self.last_result = None
        self._tab_changed(self.tabs.currentIndex())
        service = self.weather_service()
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
        self.say(tr("Fetching the daily temperatures of {layer}'s parcels from {service} …").format(
            layer=self.target_layer.name(), service=self.weather_from.currentText()))
        QgsApplication.taskManager().addTask(task)
        return task

    def _weather_fetched(self, task: WeatherTask, params: ClassificationParameters) -> None:
        self.task = None
        if task.path is None or self._layer_removed or not layer_alive(self.target_layer):
            self.run_button.setEnabled(True)
            self.cancel_button.setEnabled(False)
            if layer_alive(self.target_layer):
                try:
                    self.target_layer.willBeDeleted.disconnect(self._target_removed)
                except TypeError:
                    pass
            if self._layer_removed or not layer_alive(self.target_layer):
                self.say(tr("The parcel layer was removed while classifying; nothing was written."), Qgis.Warning,
                         bar=True)
            elif task.cancelled:
                self.say(tr("Cancelled; nothing was written and the layer was not changed."), Qgis.Info)
            else:
                self.say(tr("No temperatures from {service}: {error}").format(service=task.service,
                                                                               error=task.error),
                         Qgis.Critical, bar=True)
            return
        # The fetched file is the run's (and Explain's) weather; the service stays chosen.
        self.weather.setFilePath(task.path)
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
        self.say(tr("Classifying {n} parcels of {layer} …").format(n=count, layer=self.target_layer.name()))
        QgsApplication.taskManager().addTask(self.task)
        return self.task

    def _target_removed(self) -> None:
        self._layer_removed = True
        if self.task is not None:
            self.task.cancel()

    def _show_progress(self, percent: float) -> None:
        self.progress.setValue(int(percent))

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.cancel_button.setEnabled(False)
            self.say(tr("Cancelling…"), Qgis.Info)

    def _finished(self, task: ClassificationTask) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.task = None
        layer = self.target_layer
        if layer_alive(layer):
            try:
                layer.willBeDeleted.disconnect(self._target_removed)
            except TypeError:
                pass
        if self._layer_removed or not layer_alive(layer):
            self.say(tr("The parcel layer was removed while classifying; nothing was written."), Qgis.Warning,
                     bar=True)
            return
        if task.cancelled:
            self.say(tr("Cancelled; nothing was written and the layer was not changed."), Qgis.Info)
            return
        if task.result is None:
            self.say(tr("Classification failed: {error}").format(error=task.error), Qgis.Critical, bar=True)
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
            self.say(tr("Writing the result failed: {error}").format(error=exc), Qgis.Critical, bar=True)
            return
        if params.output:
            self._add_above(out, layer)
        self.output_layer = out
        self.last_result, self.last_fids, self.last_bundle = task.result, task.fids, task.bundle
        style_note = self._style_output(out, params, own_file=bool(params.output))
        if self.accuracy_widget is not None:
            self.accuracy_widget.set_layer(out, params.label_field)
        self.show_counts(task.result.counts(), class_colours(task.bundle.classes))
        self._tab_changed(self.tabs.currentIndex())
        self.classify_scroll.verticalScrollBar().setValue(0)  # the counts head the page
        ok = task.result.status == "ok"
        done = int(ok.sum())
        unknown = int((task.result.labels[ok] == UNKNOWN_CLASS).sum())
        text = tr("Classified {done} of {n} parcels ({unknown} unknown) into {where}.").format(
            done=done, n=len(task.result), unknown=unknown, where=where)
        if style_note:
            text += " " + style_note
        warnings = "".join(f"\n{w}" for w in task.result.warnings)
        self.say(text + warnings, Qgis.Warning if task.result.warnings or done == 0 else Qgis.Success, bar=True)
        self.message.setToolTip(task.written or layer.source())
        self.progress.setValue(100)

    @staticmethod
    def _add_above(new: QgsVectorLayer, below: QgsVectorLayer) -> None:
        """Add ``new`` to the project right above ``below`` in the layer tree, so that it shows."""
        project = QgsProject.instance()
        project.addMapLayer(new, False)
        node = project.layerTreeRoot().findLayer(below.id())
        group = node.parent() if node is not None else project.layerTreeRoot()
        index = group.children().index(node) if node is not None else 0
        group.insertLayer(index, new)

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
        self.colour_by.blockSignals(True)
        self.colour_by.setCurrentIndex(0)
        self.colour_by.blockSignals(False)
        self.low_confidence.blockSignals(True)
        self.low_confidence.setChecked(False)
        self.low_confidence.blockSignals(False)
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
        """Filter the result layer to parcels whose confidence is below the threshold (or undo it).

        Returns:
            The number of features the layer shows afterwards (-1 without a result layer).
        """
        layer = self.output_layer
        if not layer_alive(layer) or self.last_result is None:
            return -1
        base = self._base_subset or ""
        if self.low_confidence.isChecked():
            column = QgsExpression.quotedColumnRef(self.conf_field.text().strip() or "crop_conf")
            condition = f"{column} < {self.threshold.value():.4f}"
            subset = f"({base}) AND {condition}" if base else condition
        else:
            subset = base
        if layer.isEditable():
            self.say(tr("{layer} is being edited; save or discard the edits to filter it.").format(
                layer=layer.name()), Qgis.Warning)
            return -1
        if not layer.setSubsetString(subset):
            self.say(tr("{layer} cannot be filtered by its provider.").format(layer=layer.name()), Qgis.Warning)
            return -1
        layer.triggerRepaint()
        return layer.featureCount()

    def _ask_overwrite(self, names: list) -> bool:
        answer = QMessageBox.question(self, tr("ThermoCrop"), tr("{names} already exist(s). Overwrite?").format(
            names=", ".join(names)), QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        return answer == QMessageBox.Yes

    # ----- explain
    def explain(self, fid: int) -> Optional[ExplainTask]:
        """Explain parcel ``fid`` of the explained layer in the background; ``draw_explanation`` follows.

        Returns:
            The running task (its ``explanation`` holds the data once it ends), or None when no
            layer is there to explain.
        """
        layer = self._explained_layer()
        if layer is None:
            return None
        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(),
                                 layer.fields().names())
        bundle = self.last_bundle if self.last_bundle is not None else (self.model.filePath() or None)
        self._sync_reference_layer()
        self.explain_task = ExplainTask(snapshot, fid, self.scene_paths(), self.weather.filePath(), bundle,
                                        self._explained)
        self._explaining_layer = layer
        self.explain_button.setEnabled(False)
        self.explain_message.setText(tr("Reading the parcel's pixels …"))
        QgsApplication.taskManager().addTask(self.explain_task)
        return self.explain_task

    def _explained(self, task: ExplainTask) -> None:
        self.explain_task = None
        self.explain_button.setEnabled(True)
        if task.cancelled:
            self.explain_message.setText(tr("Explaining was cancelled."))
            return
        if task.explanation is None:
            self.explain_message.setText(tr("Cannot explain this parcel: {error}").format(error=task.error))
            QgsMessageLog.logMessage(self.explain_message.text(), LOG_TAG, Qgis.Warning)
            return
        self.last_explanation = task.explanation
        self.draw_explanation(task.explanation)
        reference = self.reference_class(task.fid)
        if reference is not None:
            self.explain_message.setText(self.explain_message.text() + "<br>" + tr("Reference: {name}").format(
                name=class_label(reference) if reference else tr("none given")))

    def draw_explanation(self, ex):
        """Draw NDVI against date and against GDD, and the class probabilities; returns the figure."""
        import numpy as np
        from matplotlib.backends.backend_qt5agg import FigureCanvasQTAgg
        from matplotlib.dates import DateFormatter
        from matplotlib.figure import Figure

        bundle = ex.bundle
        k = len(bundle.classes)
        # Laid out in pixels from the top: two NDVI plots, then one bar row of 18 px per class
        # whose names stand left of the bars (a wider margin than the plots above need) and whose
        # values stand right of the bar ends, so that no text lies on a bar.
        rows_px = 18 * k
        height = 375 + rows_px
        figure = Figure(figsize=(4, height / 100))

        def axes(top_px, height_px, left, right=0.96):
            return figure.add_axes((left, 1 - (top_px + height_px) / height, right - left, height_px / height))

        ax1, ax2, ax3 = axes(26, 95, 0.17), axes(180, 95, 0.17), axes(335, rows_px, 0.40, 0.90)
        dates = ex.dates.astype("datetime64[D]").astype(object)
        ax1.plot(dates, ex.ndvi, "o-", color="#2e7d32", markersize=4)
        ax1.set_ylabel("NDVI")
        ax1.set_title(tr("against calendar date"), fontsize=10)
        if len(dates):
            ax1.xaxis.set_major_locator(month_locator(dates[0], dates[-1]))
        ax1.xaxis.set_major_formatter(DateFormatter("%b"))
        ax2.plot(ex.gdd, ex.ndvi, "o-", color="#c62828", markersize=4)
        ax2.set_xlabel(tr("growing degree days (°C·d)"), fontsize=9)
        ax2.set_ylabel("NDVI")
        ax2.set_title(tr("against thermal time"), fontsize=10)
        colours = colour_list(bundle.classes)
        probs = ex.probabilities
        rows = np.arange(len(bundle.classes))
        ax3.barh(rows, np.nan_to_num(probs), height=0.7, color=colours, edgecolor="#404040", linewidth=0.4)
        ax3.set_yticks(rows)
        ax3.set_yticklabels([class_label(name) for name in bundle.classes], fontsize=8)
        for row, p in enumerate(probs):
            if np.isfinite(p):
                ax3.text(p + 0.02, row, f"{p:.2f}", va="center", fontsize=8, clip_on=False)
        ax3.set_ylim(k - 0.5, -0.5)  # classes read top-down in the model's order
        ax3.set_xlim(0, 1)
        ax3.set_xticks([0, 0.5, 1])
        ax3.tick_params(axis="x", labelsize=8)
        ax3.set_xlabel(tr("class probability"), fontsize=9)
        best = int(np.nanargmax(probs)) if np.isfinite(probs).any() else None
        verdict = f"{class_label(bundle.classes[best])} ({probs[best]:.2f})" if best is not None else ex.status
        if self.figure_canvas is not None:
            self.explain_layout.removeWidget(self.figure_canvas)
            self.figure_canvas.deleteLater()
        self.figure_canvas = FigureCanvasQTAgg(figure)
        self.figure_canvas.setMinimumHeight(height)
        self.explain_layout.addWidget(self.figure_canvas)
        layer = getattr(self, "_explaining_layer", None)
        where = tr(" of {layer}").format(layer=layer.name()) if layer_alive(layer) else ""
        self.explain_message.setText(f"<b>{tr('Parcel')} {ex.name}</b>{where}: {verdict}")
        return figure

    def reference_class(self, fid: int) -> Optional[str]:
        """Parcel ``fid``'s value of the chosen reference field ("" when empty), or None without one."""
        layer = getattr(self, "_explaining_layer", None)
        field = self.reference_field.currentField()
        if not field or not layer_alive(layer) or layer.fields().indexOf(field) < 0:
            return None
        value = layer.getFeature(fid)[field]
        return "" if value is None or str(value) in ("", "NULL") else str(value)

    def _sync_reference_layer(self) -> None:
        """The reference field list follows the explained layer (a reference-like field guessed)."""
        layer = self._explained_layer()
        if layer is self.reference_field.layer():
            return
        self.reference_field.setLayer(layer)
        if layer is not None:
            self.reference_field.setField(guess_fields(layer.fields().names())[1] or "")

    def _pick_toggled(self, on: bool) -> None:
        """Give the map a tool that explains the parcel clicked (or give the previous tool back)."""
        canvas = self.iface.mapCanvas() if self.iface is not None else None
        if canvas is None:
            return
        if not on:
            if self.map_tool is not None and canvas.mapTool() is self.map_tool:
                canvas.unsetMapTool(self.map_tool)
            return
        layer = self._explained_layer()
        if layer is None:
            self.explain_message.setText(tr("Choose a parcel layer (or classify) first."))
            self.pick_button.setChecked(False)
            return
        self.map_tool = QgsMapToolIdentifyFeature(canvas, layer)
        self.map_tool.featureIdentified.connect(self.parcel_clicked)
        self.map_tool.deactivated.connect(lambda: self.pick_button.setChecked(False))
        canvas.setMapTool(self.map_tool)
        self.explain_message.setText(tr("Click a parcel of {layer} on the map.").format(layer=layer.name()))

    def parcel_clicked(self, feature) -> Optional[ExplainTask]:
        """Explain the parcel clicked with the map tool (its layer's selection becomes that parcel)."""
        layer = self._explained_layer()
        if layer is None:
            return None
        layer.selectByIds([feature.id()])
        if not self.scene_paths() or not self.weather.filePath():
            self.explain_message.setText(tr("Choose the scenes and the weather file on the Classify tab first."))
            return None
        if self.explain_task is not None:
            return self.explain_task
        return self.explain(feature.id())

    def _explained_layer(self) -> Optional[QgsVectorLayer]:
        """The layer of the last result (it may be a new layer), else the chosen parcel layer."""
        return self.output_layer if layer_alive(self.output_layer) else self.layer_combo.currentLayer()

    def explain_selected(self) -> Optional[ExplainTask]:
        layer = self._explained_layer()
        if layer is None or layer.selectedFeatureCount() != 1:
            count = 0 if layer is None else layer.selectedFeatureCount()
            text = tr("Select exactly one parcel of {layer} to explain ({n} selected).").format(
                layer=layer.name(), n=count) if layer is not None else \
                tr("Select exactly one parcel to explain ({n} selected).").format(n=count)
            self.explain_message.setText(text)
            return None
        if not self.scene_paths() or not self.weather.filePath():
            self.explain_message.setText(tr("Choose the scenes and the weather file on the Classify tab first."))
            return None
        if self.explain_task is not None:
            return self.explain_task
        return self.explain(layer.selectedFeatureIds()[0])

    def shutdown(self) -> None:
        """Stop running work and disconnect from the project (called by unload)."""
        self.catalog.shutdown()
        if self.map_tool is not None and self.iface is not None:
            self.iface.mapCanvas().unsetMapTool(self.map_tool)
        for attr, slot in (("task", self._show_progress), ("explain_task", None)):
            task = getattr(self, attr)
            if task is None:
                continue
            # The task may end after the dock is gone; it must not call back into it.
            task.on_done = lambda task: None
            try:
                if slot is not None:
                    task.progressChanged.disconnect(slot)
                task.cancel()
            except (TypeError, RuntimeError):  # already disconnected, or the task has ended
                pass
            # The task manager owns the task now; the dock forgets it.
            setattr(self, attr, None)
        if layer_alive(self.target_layer):
            try:
                self.target_layer.willBeDeleted.disconnect(self._target_removed)
            except TypeError:
                pass
        if self.accuracy_widget is not None:
            self.accuracy_widget.shutdown()
        self.train_panel.shutdown()
        if self.install_task is not None:
            # pip is left to finish (killing it could leave a half-installed package) but
            # must not report into a dock that no longer exists.
            self.install_task.on_done = None
        for signal in (QgsProject.instance().layersAdded, QgsProject.instance().layersRemoved):
            try:
                signal.disconnect(self.refresh_rasters)
            except TypeError:
                pass
