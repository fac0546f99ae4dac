"""The Classify tab's form: the parcel layer, the scenes (project rasters, files and folders, or a
catalogue search), the weather (a file or a service), the model with its card, the output (a
new layer file or the layer's own fields) and where the run goes (``cluster_box.py``),
remembered between sessions."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Callable, Optional

from qgis.core import (
    QgsApplication,
    QgsMapLayerProxyModel,
    QgsProject,
    QgsRasterLayer,
    QgsSettings,
)
from qgis.gui import QgsFileWidget, QgsMapLayerComboBox
from qgis.PyQt.QtCore import QDate, Qt
from qgis.PyQt.QtGui import QKeySequence
from qgis.PyQt.QtWidgets import (
    QApplication,
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDateEdit,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QRadioButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ...core.limits import LIMITS
from ...core.model.calibration import DEFAULT_COVERAGE
from ...core.scenes.naming import level_from_name
from ..catalog import WEATHER_LABELS, WEATHER_SERVICES
from ..catalog_widget import CatalogWidget
from ..i18n import tr
from ..layer_writer import default_output_path
from ..layers import SCENE_FILE_FILTER, scene_candidate, scene_source
from .cluster_box import ClusterBox
from .layout import ElidedLabel, file_row, wrapping_form

SETTINGS_GROUP = "thermocrop/dock"
NEW_FILE, IN_PLACE = "new_file", "in_place"
COVERAGE_LIMIT = LIMITS["coverage"]


class TypedDateEdit(QDateEdit):
    """A ``yyyy-MM-dd`` date field that takes a whole date typed over it.

    Qt's date field edits one section at a time: with the whole text selected, a digit typed
    replaces nothing, and a "-" typed after a section that filled up (and so moved on by itself)
    skips the next one, so "2017-05-01" typed over "2018-08-30" gave 2018-05-01. Here a digit
    typed over the whole text starts at the year, a "-" right after a separator is the one the
    full section already passed, and a "-" that moves on selects the next section to type over.
    """

    PASTED_FORMATS = ("yyyy-MM-dd", "yyyy-M-d", "yyyyMMdd", "yyyy/M/d", "yyyy.M.d")
    """The forms a pasted date may take (year first, as the field shows it)."""

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if event.matches(QKeySequence.Paste):
            # Qt pastes into the section under the cursor: "2017-05-01" pasted over the whole
            # text gave 2017-05-30. A whole date is taken; anything else leaves the date as it was.
            self.paste_date(QApplication.clipboard().text())
            event.accept()
            return
        edit, typed = self.lineEdit(), event.text()
        text, cursor = edit.text(), edit.cursorPosition()
        if typed.isdigit() and edit.hasSelectedText() and edit.selectedText() == text:
            self.setSelectedSection(self.sectionAt(0))
        elif typed == "-" and cursor > 0 and text[cursor - 1] == "-":
            event.accept()
            return
        super().keyPressEvent(event)
        if typed == "-":
            self.setSelectedSection(self.currentSection())

    def paste_date(self, text: str) -> bool:
        """Take ``text`` as the date where it is a whole date of the field's range (one of
        :data:`PASTED_FORMATS`); otherwise leave the date and beep. Whether it was taken."""
        for form in self.PASTED_FORMATS:
            day = QDate.fromString(text.strip(), form)
            if day.isValid() and self.minimumDate() <= day <= self.maximumDate():
                self.setDate(day)
                return True
        QApplication.beep()
        return False


class ClassifyInputs(QWidget):
    """The Classify page's form; ``say(text, level)`` shows its hints in the dock's status panel.

    A form made with ``remember=False`` keeps nothing in the settings (tests, throw-away docks).
    """

    def __init__(self, say: Callable, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.say = say
        self.left_out: dict = {}
        # Off while the form is built and restored, so that half a form never overwrites the settings.
        self._remembering = False
        self.classify_layout = QVBoxLayout(self)
        self.classify_layout.addWidget(self._build_inputs())
        self.classify_layout.addWidget(self._build_model())
        self.classify_layout.addWidget(self._build_output())
        self.cluster = ClusterBox()
        self.classify_layout.addWidget(self.cluster)
        self.classify_layout.addStretch(1)
        self._card_path: Optional[str] = None
        self.show_model_card()
        # Without a model of the user's, the card follows the scenes' level (the shipped model for it).
        self.scene_list.itemChanged.connect(self._scenes_changed)
        self.scene_list.model().rowsInserted.connect(self._scenes_changed)
        self.scene_list.model().rowsRemoved.connect(self._scenes_changed)
        self.catalog.itemsChanged.connect(self._scenes_changed)
        self.catalog.toggled.connect(self._scenes_changed)

    # ----- layout
    def _build_inputs(self) -> QGroupBox:
        inputs = QGroupBox(tr("Input"))
        form = wrapping_form(inputs)
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
        buttons = QGridLayout()
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
        for i, button in enumerate((self.add_files, self.add_folder, self.remove_scenes, self.clear_scenes)):
            # Two rows of two: at the dock's default width four in a row clipped "Add files…"; the
            # buttons share the width rather than push the form wider.
            button.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
            button.setMinimumWidth(40)
            buttons.addWidget(button, i // 2, i % 2)
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
        self.weather = file_row(tr("Temperatures (*.nc *.nc4 *.csv);;All files (*)"))
        self.weather.setToolTip(tr("Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV"))
        # Label above the field: the path gets the dock's whole width.
        form.addRow(QLabel(tr("Weather")))
        form.addRow(self.weather_from)
        form.addRow(self.weather)
        self.weather_caption = ElidedLabel()
        form.addRow(self.weather_caption)
        self.weather.fileChanged.connect(lambda *_: self._path_changed(self.weather, self.weather_caption))
        return inputs

    def _build_model(self) -> QGroupBox:
        model_box = QGroupBox(tr("Model"))
        form = wrapping_form(model_box)
        self.model = file_row(tr("ThermoCrop model (*.tcm)"))
        self.model.lineEdit().setPlaceholderText(tr("empty: the shipped model for the scenes' level"))
        self.model.fileChanged.connect(self.show_model_card)
        form.addRow(self.model)
        self.model_card = QLabel()
        self.model_card.setWordWrap(True)
        self.model_card.setTextFormat(Qt.RichText)
        form.addRow(self.model_card)
        return model_box

    def _build_output(self) -> QGroupBox:
        output_box = QGroupBox(tr("Output"))
        form = wrapping_form(output_box)
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
        self.prediction_sets = QCheckBox(tr("Prediction sets, coverage"))
        self.prediction_sets.setToolTip(tr("Also write crop_set (the classes that hold the parcel's true class "
                                           "with the chosen chance, most probable first) and crop_set_size; "
                                           "needs a calibrated model"))
        self.prediction_sets.setChecked(True)
        self.coverage = QDoubleSpinBox()
        self.coverage.setDecimals(2)
        self.coverage.setSingleStep(0.05)
        # At most 0.99: two decimals would show and return the limit 0.999 as 1, which no set can
        # have (and 0.999 needs 999 calibration parcels; the shipped models have 174).
        self.coverage.setRange(0.5, min(0.99, COVERAGE_LIMIT.high))
        self.coverage.setValue(DEFAULT_COVERAGE)
        self.coverage.setToolTip(tr("The chance that a parcel's set holds its true class (0.90: nine parcels in "
                                    "ten); a higher coverage gives larger sets"))
        self.prediction_sets.toggled.connect(self.coverage.setEnabled)
        sets_row = QHBoxLayout()
        sets_row.addWidget(self.prediction_sets)
        sets_row.addWidget(self.coverage)
        sets_row.addStretch(1)
        form.addRow(sets_row)
        self.as_of_on = QCheckBox(tr("Classify as of"))
        self.as_of_on.setToolTip(tr("Leave out the scenes acquired after this date and log the season's status on "
                                    "it (unticked: every scene, up to the last)"))
        self.as_of = TypedDateEdit(QDate.currentDate())
        self.as_of.setCalendarPopup(True)
        self.as_of.setDisplayFormat("yyyy-MM-dd")
        # From the first Sentinel-2 year: a year typed digit by digit stays within the range.
        self.as_of.setDateRange(QDate(2015, 1, 1), QDate(2100, 12, 31))
        self.as_of.setEnabled(False)
        self.as_of_on.toggled.connect(self.as_of.setEnabled)
        self.as_of_on.toggled.connect(self._as_of_ticked)
        form.addRow(self.as_of_on, self.as_of)
        self.decided = QCheckBox(tr("When each label was decided"))
        self.decided.setToolTip(tr("Also write crop_decided, the acquisition from which the label no longer changes "
                                   "and keeps a confidence of 0.8, and crop_decided_gdd, the parcel's GDD then"))
        form.addRow(self.decided)
        self.class_shares = QgsFileWidget()
        self.class_shares.setFilter(tr("CSV files (*.csv)"))
        self.class_shares.lineEdit().setPlaceholderText(tr("optional CSV"))
        self.class_shares.setToolTip(tr("A CSV file 'class,share' by the model's class names, with the crops' shares "
                                        "of the parcels known from elsewhere (last year's declarations, statistics): "
                                        "the probabilities are brought to them before labels and sets are made"))
        form.addRow(tr("Class shares"), self.class_shares)
        return output_box

    def set_coverage(self) -> Optional[float]:
        """The prediction sets' coverage chosen, or None for no sets."""
        return round(self.coverage.value(), 4) if self.prediction_sets.isChecked() else None

    def _path_changed(self, widget: QgsFileWidget, caption: ElidedLabel) -> None:
        """Show a chosen path from its left end; the caption below shows it whole, elided in the middle.

        A path being typed keeps its cursor where the typing is (the line edit is "modified"
        while the user edits it; choosing a file or ``setFilePath`` resets that).
        """
        if not widget.lineEdit().isModified():
            widget.lineEdit().setCursorPosition(0)
        caption.setFullText(widget.filePath())
        self._remember()

    def _layer_changed(self, layer) -> None:
        path = default_output_path(layer)
        self.output_file.lineEdit().setPlaceholderText(
            tr("empty: {name} beside the parcels").format(name=Path(path).name) if path
            else tr("choose a file (.gpkg, .shp, .geojson, .fgb)"))

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
        self.catalog = CatalogWidget(self.layer_combo.currentLayer)
        # A short title: the long one set the narrowest the dock could be.
        self.catalog.setTitle(tr("Search a catalogue"))
        self.catalog.message.connect(lambda text, level: self.say(text, level))
        self.catalog.itemsChanged.connect(self._catalog_used)
        form.addRow(self.catalog)
        self._catalog_used()

    def _catalog_used(self) -> None:
        files = not self.catalog.in_use()
        for widget in (self.scene_list, self.add_files, self.add_folder):
            widget.setEnabled(files)

    def _as_of_ticked(self, on: bool) -> None:
        """Ticked, the date starts at the last scene listed (not today, maybe years away)."""
        last = self.last_scene_date() if on else None
        if last is not None:
            self.as_of.setDate(QDate(last.year, last.month, last.day))

    def last_scene_date(self) -> Optional[datetime.date]:
        """The latest acquisition date in the names of the checked scenes (and of the products in
        checked folders); None where no name holds one."""
        from ...core.scenes.naming import date_from_name

        names = []
        for path in self.scene_paths():
            names.append(os.path.basename(path.rstrip(os.sep)))
            if os.path.isdir(path) and not path.rstrip(os.sep).lower().endswith(".safe"):
                try:
                    names += os.listdir(path)
                except OSError:
                    continue
        dates = [d for d in map(date_from_name, names) if d is not None]
        return max(dates).astype(datetime.date) if dates else None

    def scene_paths(self) -> list:
        """The checked scenes; files inside a checked folder are left to the folder. With
        "Search a catalogue" ticked, the item collection it found instead."""
        if self.catalog.in_use():
            return self.catalog.scene_paths()
        paths = [self.scene_list.item(i).data(Qt.UserRole) for i in range(self.scene_list.count())
                 if self.scene_list.item(i).checkState() == Qt.Checked]
        folders = [os.path.abspath(p) + os.sep for p in paths if os.path.isdir(p)]
        return [p for p in paths if not any(os.path.abspath(p).startswith(f) for f in folders)]

    # ----- weather
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

    # ----- settings
    def remember(self, on: bool) -> None:
        """From now on keep the form in the settings as it changes (``on``), or not."""
        self._remembering = on
        self.model.fileChanged.connect(lambda *_: self._remember())
        self.to_new_file.toggled.connect(lambda *_: self._remember())
        self.probabilities.toggled.connect(lambda *_: self._remember())
        self.prediction_sets.toggled.connect(lambda *_: self._remember())
        self.coverage.valueChanged.connect(lambda *_: self._remember())
        self.as_of_on.toggled.connect(lambda *_: self._remember())
        self.as_of.dateChanged.connect(lambda *_: self._remember())
        self.decided.toggled.connect(lambda *_: self._remember())
        self.class_shares.fileChanged.connect(lambda *_: self._remember())
        self.cluster.workers.valueChanged.connect(lambda *_: self._remember())
        self.cluster.scheduler.editingFinished.connect(self._remember)
        self.cluster.run_folder.fileChanged.connect(lambda *_: self._remember())

    def _remember(self) -> None:
        if self._remembering:
            self.save_settings()

    def save_settings(self) -> None:
        """Remember the scenes added by hand (and which are ticked), the weather, model and output,
        and the as-of date and decision dates asked for."""
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
        settings.setValue("prediction_sets", self.prediction_sets.isChecked())
        settings.setValue("coverage", self.coverage.value())
        settings.setValue("as_of_on", self.as_of_on.isChecked())
        settings.setValue("as_of", self.as_of.date().toString(Qt.ISODate))
        settings.setValue("decided", self.decided.isChecked())
        settings.setValue("class_shares", self.class_shares.filePath())
        self.cluster.save_settings(settings)
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
        for key, widget in (("weather", self.weather), ("model", self.model), ("class_shares", self.class_shares)):
            path = settings.value(key, "") or ""
            if path and os.path.isfile(path):
                widget.setFilePath(path)
        index = self.weather_from.findData(settings.value("weather_service", "") or "")
        self.weather_from.setCurrentIndex(max(index, 0))
        self.in_place.setChecked(settings.value("output_mode", NEW_FILE) == IN_PLACE)
        self.to_new_file.setChecked(settings.value("output_mode", NEW_FILE) != IN_PLACE)
        self.probabilities.setChecked(settings.value("probabilities", False, type=bool))
        self.prediction_sets.setChecked(settings.value("prediction_sets", True, type=bool))
        self.coverage.setValue(settings.value("coverage", DEFAULT_COVERAGE, type=float))
        # Ticking "as of" moves the date to the last scene; the date of the last session then wins.
        self.as_of_on.setChecked(settings.value("as_of_on", False, type=bool))
        as_of = QDate.fromString(settings.value("as_of", "") or "", Qt.ISODate)
        if self.as_of_on.isChecked() and as_of.isValid():
            self.as_of.setDate(as_of)
        self.decided.setChecked(settings.value("decided", False, type=bool))
        self.cluster.restore_settings(settings)
        settings.endGroup()

    # ----- model card
    def scene_levels(self) -> list:
        """The processing levels of the run's scenes as far as the form knows them (None where it
        does not): the catalogue's items when it is in use, else what the names of the ticked
        files and folders, and of the files in the folders, say."""
        if self.catalog.in_use():
            return [summary.level for summary in self.catalog.summaries]
        names = []
        for path in self.scene_paths():
            names.append(Path(path).name)
            if os.path.isdir(path):
                try:
                    names += os.listdir(path)
                except OSError:  # an unreadable folder: the run says why
                    pass
        return [level_from_name(name) for name in names]

    def shipped_model(self) -> str:
        """The path of the model shipped for the scenes' level (``core.model.bundle.shipped_model_choice``)."""
        from ...core.model.bundle import shipped_model_choice

        return str(shipped_model_choice(self.scene_levels())[0])

    def _scenes_changed(self, *args) -> None:
        if self.model.filePath():
            return
        try:
            path = self.shipped_model()
        except ImportError:  # torch not installed yet: the card says so
            return
        if path != self._card_path:
            self.show_model_card()

    def show_model_card(self, *args) -> None:
        """Describe the chosen model, or the one shipped for the scenes' level: variant, classes,
        regions and scores."""
        try:
            from ...core.model.bundle import load_bundle
            from ...core.model.season_floor import gdd_floor

            path = self._card_path = self.model.filePath() or self.shipped_model()
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
        shipped = "" if self.model.filePath() else " (" + tr("shipped, for {level} scenes").format(
            level=config.scene_level or "L1C") + ")"
        floor = gdd_floor(config.gdd or {})
        floor_line = "<br>" + tr("leaves out each parcel's acquisitions before {gdd} GDD (its GDD floor)").format(
            gdd=f"{floor:,.0f}") if floor > 0 else ""
        self.model_card.setText(
            f"<small><b>{Path(path).name}</b>{shipped}: {config.variant}<br>{tr('classes')}: {', '.join(config.classes)}"
            f"<br>{tr('trained on')}: {regions}<br>{tr('scores')}: {scores or tr('not recorded')}{floor_line}</small>")
