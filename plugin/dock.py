"""The ThermoCrop dock: choose parcels, scenes, weather and model, classify in the background,
write the result as one undoable edit, and explain one parcel's prediction."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Callable, Optional

from qgis.core import (
    QgsApplication,
    QgsFeature,
    QgsFeatureRequest,
    QgsField,
    QgsMapLayerProxyModel,
    QgsProject,
    QgsRasterLayer,
    QgsVectorDataProvider,
    QgsVectorLayer,
)
from qgis.gui import QgsDockWidget, QgsFileWidget, QgsMapLayerComboBox
from qgis.PyQt.QtCore import Qt, QVariant
from qgis.PyQt.QtGui import QColor, QIcon, QPixmap
from qgis.PyQt.QtWidgets import (
    QCheckBox,
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
    QScrollArea,
    QSizePolicy,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..core.crops import class_colours, colour_list
from .dependencies import describe_missing, dependency_folder, make_install_task, missing_requirements
from .layers import features_to_frame
from .styles import UNCLASSIFIED_COLOUR, apply_class_style
from .task import ClassificationParameters, ClassificationTask

log = logging.getLogger(__name__)


def layer_is_writable(layer: QgsVectorLayer) -> bool:
    """True when fields can be added and values changed in ``layer``."""
    needed = QgsVectorDataProvider.AddAttributes | QgsVectorDataProvider.ChangeAttributeValues
    caps = layer.dataProvider().capabilities()
    return not layer.readOnly() and (caps & needed) == needed


def write_result_to_layer(layer: QgsVectorLayer, fids: list, result, label_field: str, conf_field: str,
                          confirm_overwrite: Callable[[list], bool]) -> Optional[QgsVectorLayer]:
    """Write labels and confidences into ``layer`` as one undoable edit, or into a new layer.

    A layer that cannot be edited gets a new memory layer (a copy with the two fields) instead.
    Existing fields are overwritten only when ``confirm_overwrite(names)`` returns True.

    Returns:
        The layer that received the result, or None when the user declined to overwrite.
    """
    values = {}
    for i, row in enumerate(result.rows):
        ok = result.status[i] == "ok"
        conf = float(result.confidence[i])
        values[fids[row]] = (str(result.labels[i]) if ok else None, None if math.isnan(conf) else conf)

    if not layer_is_writable(layer):
        return _result_layer(layer, values, label_field, conf_field)
    existing = [n for n in (label_field, conf_field) if layer.fields().indexOf(n) >= 0]
    if existing and not confirm_overwrite(existing):
        return None
    if not layer.isEditable():
        layer.startEditing()
    layer.beginEditCommand("ThermoCrop classification")
    try:
        for name, kind in ((label_field, QVariant.String), (conf_field, QVariant.Double)):
            if layer.fields().indexOf(name) < 0:
                layer.addAttribute(QgsField(name, kind, len=40 if kind == QVariant.String else 0))
        label_idx, conf_idx = layer.fields().indexOf(label_field), layer.fields().indexOf(conf_field)
        for fid, (label, conf) in values.items():
            layer.changeAttributeValues(fid, {label_idx: label, conf_idx: conf})
    except Exception:
        layer.destroyEditCommand()
        raise
    layer.endEditCommand()
    return layer


def _result_layer(layer: QgsVectorLayer, values: dict, label_field: str, conf_field: str) -> QgsVectorLayer:
    from qgis.core import QgsWkbTypes

    uri = f"{QgsWkbTypes.displayString(layer.wkbType())}?crs={layer.crs().authid() or 'EPSG:4326'}"
    out = QgsVectorLayer(uri, f"{layer.name()} (classified)", "memory")
    if not layer.crs().authid():
        out.setCrs(layer.crs())
    fields = layer.fields()
    for name, kind in ((label_field, QVariant.String), (conf_field, QVariant.Double)):
        if fields.indexOf(name) < 0:
            fields.append(QgsField(name, kind))
    out.dataProvider().addAttributes(fields.toList())
    out.updateFields()
    label_idx, conf_idx = out.fields().indexOf(label_field), out.fields().indexOf(conf_field)
    features = []
    for feature in layer.getFeatures():
        new = QgsFeature(out.fields())
        new.setGeometry(feature.geometry())
        attrs = feature.attributes() + [None] * (out.fields().count() - len(feature.attributes()))
        label, conf = values.get(feature.id(), (None, None))
        attrs[label_idx], attrs[conf_idx] = label, conf
        new.setAttributes(attrs)
        features.append(new)
    out.dataProvider().addFeatures(features)
    out.updateExtents()
    return out


def ndvi_series(ps, parcel: int = 0):
    """Mean NDVI per date of one parcel, ``(T,)`` with NaN on unusable dates.

    NDVI = (B08 - B04) / (B08 + B04) over the parcel's valid pixels.
    """
    import numpy as np

    bands = list(ps.bands)
    red = np.asarray(ps.pixels[parcel, :, bands.index("B04")], dtype=np.float64)
    nir = np.asarray(ps.pixels[parcel, :, bands.index("B08")], dtype=np.float64)
    mask = np.asarray(ps.pixel_mask[parcel])
    with np.errstate(invalid="ignore", divide="ignore"):
        ndvi = np.where(mask, (nir - red) / (nir + red), np.nan)
        series = np.nanmean(np.where(mask.any(axis=1, keepdims=True), ndvi, 0.0), axis=1)
    series[~np.asarray(ps.date_mask[parcel])] = np.nan
    return series


def _layer_alive(layer) -> bool:
    """False when ``layer`` was deleted (removed from the project) behind Python's back."""
    if layer is None:
        return False
    try:
        layer.id()
    except RuntimeError:  # the wrapped C++ layer is gone
        return False
    return True


class ThermoCropDock(QgsDockWidget):
    """Interactive classification of the parcels of a project layer."""

    def __init__(self, iface=None, parent=None) -> None:
        super().__init__("ThermoCrop", parent)
        self.setObjectName("ThermoCropDock")
        self.iface = iface
        self.task: Optional[ClassificationTask] = None
        self.install_task = None
        self.last_result = None
        self.last_fids: list = []
        self.last_bundle = None
        self.output_layer: Optional[QgsVectorLayer] = None
        self.target_layer: Optional[QgsVectorLayer] = None
        # Replaced in tests; asks the user before fields are overwritten.
        self.confirm_overwrite: Callable[[list], bool] = self._ask_overwrite
        self._build()
        self.refresh_rasters()
        QgsProject.instance().layersAdded.connect(self.refresh_rasters)
        QgsProject.instance().layersRemoved.connect(self.refresh_rasters)
        self.check_dependencies()

    # ----- layout
    def _build(self) -> None:
        tabs = QTabWidget()
        # A scroll area keeps every control reachable when the dock is short.
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(self._build_classify_page())
        tabs.addTab(scroll, "Classify")
        tabs.addTab(self._build_explain_page(), "Explain")
        self.setWidget(tabs)
        self.show_model_card()

    @staticmethod
    def _form(box: QGroupBox) -> QFormLayout:
        form = QFormLayout(box)
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        form.setLabelAlignment(Qt.AlignLeft | Qt.AlignVCenter)
        return form

    @staticmethod
    def _file_widget(filter_text: str) -> QgsFileWidget:
        widget = QgsFileWidget()
        widget.setFilter(filter_text)
        # Without this the form hands spare height to the file rows and their labels float.
        widget.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        return widget

    def _build_classify_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)

        inputs = QGroupBox("Input")
        form = self._form(inputs)
        self.layer_combo = QgsMapLayerComboBox()
        self.layer_combo.setFilters(QgsMapLayerProxyModel.PolygonLayer)
        self.layer_combo.setToolTip("Polygon layer of the project whose parcels are classified")
        form.addRow("Parcels", self.layer_combo)
        self.selected_only = QCheckBox("Selected features only")
        form.addRow("", self.selected_only)
        self.scene_list = QListWidget()
        self.scene_list.setMinimumHeight(60)
        self.scene_list.setMaximumHeight(110)
        self.scene_list.setToolTip("Ticked scenes are used: the project's raster layers and added files or folders")
        form.addRow("Scenes", self.scene_list)
        buttons = QHBoxLayout()
        self.add_files = QPushButton("Add files…")
        self.add_folder = QPushButton("Add folder…")
        self.add_files.clicked.connect(self._pick_files)
        self.add_folder.clicked.connect(self._pick_folder)
        buttons.addWidget(self.add_files)
        buttons.addWidget(self.add_folder)
        form.addRow("", buttons)
        self.weather = self._file_widget("Temperatures (*.nc *.nc4 *.csv);;All files (*)")
        self.weather.setToolTip("Daily minimum/maximum temperatures: E-OBS or CF NetCDF, or a station CSV")
        form.addRow("Weather", self.weather)
        layout.addWidget(inputs)

        model_box = QGroupBox("Model")
        form = self._form(model_box)
        self.model = self._file_widget("ThermoCrop model (*.tcm)")
        self.model.lineEdit().setPlaceholderText("empty: the shipped model")
        self.model.fileChanged.connect(self.show_model_card)
        form.addRow("Bundle", self.model)
        self.model_card = QLabel()
        self.model_card.setWordWrap(True)
        self.model_card.setTextFormat(Qt.RichText)
        form.addRow(self.model_card)
        layout.addWidget(model_box)

        output_box = QGroupBox("Output fields")
        form = self._form(output_box)
        self.label_field = QLineEdit("crop_pred")
        self.conf_field = QLineEdit("crop_conf")
        form.addRow("Class", self.label_field)
        form.addRow("Confidence", self.conf_field)
        layout.addWidget(output_box)

        row = QHBoxLayout()
        self.run_button = QPushButton("Classify")
        self.run_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.run_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        self.progress = QProgressBar()
        layout.addWidget(self.progress)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextSelectableByMouse)
        layout.addWidget(self.message)
        self.install_button = QPushButton("Install missing packages")
        self.install_button.clicked.connect(self.install_missing)
        self.install_button.setVisible(False)
        layout.addWidget(self.install_button)

        counts_box = QGroupBox("Parcels per class")
        counts_layout = QVBoxLayout(counts_box)
        self.counts = QTreeWidget()
        self.counts.setColumnCount(3)
        self.counts.setHeaderLabels(["Class", "Parcels", "Share"])
        self.counts.setRootIsDecorated(False)
        self.counts.setMinimumHeight(80)
        self.counts.setMaximumHeight(190)
        counts_layout.addWidget(self.counts)
        layout.addWidget(counts_box)
        layout.addStretch(1)
        return page

    def _build_explain_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        self.explain_button = QPushButton("Explain the selected parcel")
        self.explain_button.setToolTip("Select one parcel on the map, then press this button")
        self.explain_button.clicked.connect(self.explain_selected)
        layout.addWidget(self.explain_button)
        self.explain_message = QLabel("Select one parcel of the classified layer to see its NDVI series "
                                      "against the calendar and against growing degree days, and the "
                                      "model's class probabilities.")
        self.explain_message.setWordWrap(True)
        layout.addWidget(self.explain_message)
        self.explain_box = QGroupBox("NDVI and class probabilities")
        self.explain_layout = QVBoxLayout(self.explain_box)
        layout.addWidget(self.explain_box, 1)
        self.figure_canvas = None
        return page

    def show_counts(self, counts: dict, colours: dict) -> None:
        """List parcels per class with the class colour; not-classified statuses come last."""
        self.counts.clear()
        total = max(sum(counts.values()), 1)
        for key in sorted(counts, key=lambda k: (k.startswith("("), k)):
            item = QTreeWidgetItem([key, str(counts[key]), f"{100.0 * counts[key] / total:.0f} %"])
            swatch = QPixmap(12, 12)
            swatch.fill(QColor(colours.get(key, UNCLASSIFIED_COLOUR)))
            item.setIcon(0, QIcon(swatch))
            item.setTextAlignment(1, Qt.AlignRight | Qt.AlignVCenter)
            item.setTextAlignment(2, Qt.AlignRight | Qt.AlignVCenter)
            self.counts.addTopLevelItem(item)
        for column in range(3):
            self.counts.resizeColumnToContents(column)

    def counts_text(self) -> str:
        """The class counts as ``class: parcels`` lines (what the list shows)."""
        items = [self.counts.topLevelItem(i) for i in range(self.counts.topLevelItemCount())]
        return "\n".join(f"{item.text(0)}: {item.text(1)}" for item in items)

    def refresh_rasters(self, *args) -> None:
        """List the project's raster layers (checked) before any files added by hand."""
        files = [self.scene_list.item(i).data(Qt.UserRole) for i in range(self.scene_list.count())
                 if self.scene_list.item(i).data(Qt.UserRole + 1) == "file"]
        checked = {self.scene_list.item(i).data(Qt.UserRole) for i in range(self.scene_list.count())
                   if self.scene_list.item(i).checkState() == Qt.Checked}
        self.scene_list.clear()
        for layer in QgsProject.instance().mapLayers().values():
            if isinstance(layer, QgsRasterLayer):
                path = layer.source().split("|")[0]
                self._add_scene(layer.name(), path, "layer", path in checked or not checked)
        for path in files:
            self._add_scene(Path(path).name, path, "file", path in checked)

    def _add_scene(self, text: str, path: str, kind: str, checked: bool = True) -> None:
        icon = "/mIconRasterLayer.svg" if kind == "layer" else (
            "/mIconFolder.svg" if Path(path).is_dir() else "/mIconFile.svg")
        item = QListWidgetItem(QgsApplication.getThemeIcon(icon), text)
        item.setToolTip(path)
        item.setData(Qt.UserRole, path)
        item.setData(Qt.UserRole + 1, kind)
        item.setFlags(item.flags() | Qt.ItemIsUserCheckable)
        item.setCheckState(Qt.Checked if checked else Qt.Unchecked)
        self.scene_list.addItem(item)

    def add_scene_paths(self, paths: list) -> None:
        """Add scene files or folders to the list, checked."""
        for path in paths:
            self._add_scene(Path(path).name, str(path), "file")

    def _pick_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Sentinel-2 scenes", "", "Rasters (*.tif *.tiff *.jp2);;All (*)")
        self.add_scene_paths(paths)

    def _pick_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Folder of Sentinel-2 scenes")
        if folder:
            self.add_scene_paths([folder])

    def scene_paths(self) -> list:
        """The checked scenes; files inside a checked folder are left to the folder."""
        import os

        paths = [self.scene_list.item(i).data(Qt.UserRole) for i in range(self.scene_list.count())
                 if self.scene_list.item(i).checkState() == Qt.Checked]
        folders = [os.path.abspath(p) + os.sep for p in paths if os.path.isdir(p)]
        return [p for p in paths if not any(os.path.abspath(p).startswith(f) for f in folders)]

    # ----- model card and dependencies
    def show_model_card(self, *args) -> None:
        """Describe the chosen (or shipped) model: variant, classes, regions and scores."""
        try:
            from ..core.bundle import default_bundle_path, load_bundle

            path = self.model.filePath() or str(default_bundle_path())
            if not Path(path).is_file():
                self.model_card.setText(f"<i>No model at {path}; choose a .tcm file.</i>")
                return
            config = load_bundle(path).config
        except Exception as exc:  # missing torch or a bad file: the card says so
            self.model_card.setText(f"<i>Model not available: {exc}</i>")
            return
        prov = config.provenance or {}
        regions = prov.get("train_regions") or prov.get("regions") or prov.get("datasets") or "not recorded"
        if isinstance(regions, (list, tuple)):
            regions = ", ".join(map(str, regions))
        if prov.get("data"):
            regions = f"{regions} ({prov['data']})"
        flat = dict(prov.get("metrics") or {}, **{k: v for k, v in prov.items() if k != "metrics"})
        scores = ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in sorted(flat.items())
                           if isinstance(v, float) and any(w in k for w in ("f1", "accuracy", "kappa", "oa")))
        self.model_card.setText(
            f"<small><b>{Path(path).name}</b>: {config.variant}<br>classes: {', '.join(config.classes)}<br>"
            f"trained on: {regions}<br>scores: {scores or 'not recorded'}</small>")

    def check_dependencies(self) -> list:
        missing = missing_requirements()
        self.install_button.setVisible(any(r.pip for r in missing))
        if missing:
            self.message.setText(describe_missing(missing, dependency_folder()))
        self.run_button.setEnabled(not missing)
        return missing

    def install_missing(self) -> None:
        missing = missing_requirements()
        folder = dependency_folder()
        self.message.setText(f"Installing into {folder} …")

        def done(code, output):
            self.install_task = None
            self.message.setText("Packages installed." if code == 0 else f"pip failed ({code}):\n{output[-800:]}")
            self.check_dependencies()

        self.install_task = make_install_task(missing, folder, done)
        QgsApplication.taskManager().addTask(self.install_task)

    # ----- run
    def parameters(self) -> Optional[ClassificationParameters]:
        """Gather the form into plain parameters (reads the layer in the main thread)."""
        layer = self.layer_combo.currentLayer()
        if layer is None:
            self.message.setText("Choose a parcel layer.")
            return None
        if self.selected_only.isChecked() and layer.selectedFeatureCount() == 0:
            self.message.setText(f"No feature of {layer.name()} is selected; select parcels or untick "
                                 "'Selected features only'.")
            return None
        scenes = self.scene_paths()
        if not scenes:
            self.message.setText("Tick or add at least one Sentinel-2 scene.")
            return None
        weather = self.weather.filePath()
        if not weather:
            self.message.setText("Choose a daily temperature file.")
            return None
        if not Path(weather).is_file():
            self.message.setText(f"The temperature file {weather} does not exist; choose an existing file.")
            return None
        label, conf = self.label_field.text().strip(), self.conf_field.text().strip()
        if not label or not conf or label == conf:
            self.message.setText("The class and confidence fields need two different names.")
            return None
        # Read last: the other checks are instant, reading a large layer is not.
        features = layer.getSelectedFeatures() if self.selected_only.isChecked() else \
            layer.getFeatures(QgsFeatureRequest())
        frame, fids = features_to_frame(features, layer.crs())
        return ClassificationParameters(frame, fids, scenes, weather,
                                        self.model.filePath() or None, label, conf)

    def start(self) -> Optional[ClassificationTask]:
        params = self.parameters()
        if params is None:
            return None
        self.target_layer = self.layer_combo.currentLayer()
        self.task = ClassificationTask(params, self._finished)
        self.task.progressChanged.connect(self._show_progress)
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.message.setText(f"Classifying {len(params.fids)} parcels …")
        QgsApplication.taskManager().addTask(self.task)
        return self.task

    def _show_progress(self, percent: float) -> None:
        self.progress.setValue(int(percent))

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def _finished(self, task: ClassificationTask) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.task = None
        if task.cancelled:
            self.message.setText("Cancelled; the layer was not changed.")
            return
        if task.result is None:
            self.message.setText(f"Classification failed: {task.error}")
            return
        layer = self.target_layer
        params = task.params
        if not _layer_alive(layer):
            self.message.setText("The parcel layer was removed while classifying; nothing was written.")
            return
        out = write_result_to_layer(layer, params.fids, task.result, params.label_field, params.confidence_field,
                                    self.confirm_overwrite)
        if out is None:
            self.message.setText("Not written: the fields exist and were not to be overwritten.")
            return
        if out is not layer:
            QgsProject.instance().addMapLayer(out)
        apply_class_style(out, params.label_field, task.bundle.classes)
        self.output_layer = out
        self.last_result, self.last_fids, self.last_bundle = task.result, params.fids, task.bundle
        self.show_counts(task.result.counts(), class_colours(task.bundle.classes))
        where = "a new layer (the parcel layer is read-only)" if out is not layer else \
            f"{layer.name()} (one edit; Undo reverts it)"
        warnings = "".join(f"\n{w}" for w in task.result.warnings)
        self.message.setText(f"Classified {len(task.result)} parcels into {where}.{warnings}")
        self.progress.setValue(100)

    def _ask_overwrite(self, names: list) -> bool:
        answer = QMessageBox.question(self, "ThermoCrop", f"The layer already has {', '.join(names)}. "
                                      "Overwrite their values?", QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        return answer == QMessageBox.Yes

    # ----- explain
    def explain(self, fid: int):
        """Draw the NDVI series of parcel ``fid`` against date and GDD, and its probabilities.

        Returns:
            ``(figure, ndvi, probabilities)``: the matplotlib figure, the ``(T,)`` mean NDVI per
            date (NaN where unusable) and the ``(K,)`` class probabilities (NaN when the parcel
            could not be classified).
        """
        import numpy as np
        from matplotlib.backends.backend_qt5agg import FigureCanvasQTAgg
        from matplotlib.dates import AutoDateLocator, DateFormatter
        from matplotlib.figure import Figure

        from ..core.classify import _gdd_settings
        from ..core.extract import extract_pixel_sets

        layer = self._explained_layer()
        feature = layer.getFeature(fid)
        frame, _ = features_to_frame([feature], layer.crs())
        bundle = self.last_bundle
        if bundle is None:
            from ..core.bundle import default_bundle_path, load_bundle

            bundle = load_bundle(self.model.filePath() or default_bundle_path())
        ps = extract_pixel_sets(frame, self.scene_paths(), self.weather.filePath(), block_field=None,
                                **_gdd_settings(bundle))
        ndvi = ndvi_series(ps)
        probs = bundle.predict(ps)[0] if ps.status[0] == "ok" else np.full(len(bundle.classes), np.nan)
        figure = Figure(figsize=(4, 6), tight_layout=True)
        ax1, ax2, ax3 = figure.subplots(3, 1, gridspec_kw={"height_ratios": (1, 1, 1.1)})
        dates = ps.dates.astype("datetime64[D]").astype(object)
        ax1.plot(dates, ndvi, "o-", color="#2e7d32", markersize=4)
        ax1.set_ylabel("NDVI")
        ax1.set_title("against calendar date", fontsize=10)
        ax1.xaxis.set_major_locator(AutoDateLocator(maxticks=7))
        ax1.xaxis.set_major_formatter(DateFormatter("%b"))
        ax2.plot(np.asarray(ps.gdd[0]), ndvi, "o-", color="#c62828", markersize=4)
        ax2.set_xlabel("growing degree days (°C·d)")
        ax2.set_ylabel("NDVI")
        ax2.set_title("against thermal time", fontsize=10)
        colours = colour_list(bundle.classes)
        shown = np.nan_to_num(probs)
        rows = np.arange(len(bundle.classes))
        ax3.barh(rows, shown, color=colours, edgecolor="#404040", linewidth=0.4)
        # Names inside the plot: tick labels this long would squeeze the two NDVI plots above.
        for row, (name_k, p) in enumerate(zip(bundle.classes, probs)):
            text = f"{name_k}  {p:.2f}" if np.isfinite(p) else name_k
            ax3.text(0.01, row, text, va="center", fontsize=8)
        ax3.set_yticks([])
        ax3.invert_yaxis()  # classes read top-down in the model's order
        ax3.set_xlim(0, 1)
        ax3.set_xlabel("class probability")
        name = feature["parcel_id"] if feature.fields().indexOf("parcel_id") >= 0 else fid
        best = int(np.nanargmax(probs)) if np.isfinite(probs).any() else None
        verdict = f"{bundle.classes[best]} ({probs[best]:.2f})" if best is not None else str(ps.status[0])
        if self.figure_canvas is not None:
            self.explain_layout.removeWidget(self.figure_canvas)
            self.figure_canvas.deleteLater()
        self.figure_canvas = FigureCanvasQTAgg(figure)
        self.explain_layout.addWidget(self.figure_canvas)
        self.explain_message.setText(f"<b>Parcel {name}</b> of {layer.name()}: {verdict}")
        return figure, ndvi, probs

    def _explained_layer(self) -> Optional[QgsVectorLayer]:
        """The layer of the last result (it may be a new layer), else the chosen parcel layer."""
        return self.output_layer if _layer_alive(self.output_layer) else self.layer_combo.currentLayer()

    def explain_selected(self) -> None:
        layer = self._explained_layer()
        if layer is None or layer.selectedFeatureCount() != 1:
            what = f"of {layer.name()} " if layer is not None else ""
            self.explain_message.setText(f"Select exactly one parcel {what}to explain "
                                         f"({0 if layer is None else layer.selectedFeatureCount()} selected).")
            return
        if not self.scene_paths() or not self.weather.filePath():
            self.explain_message.setText("Choose the scenes and the weather file on the Classify tab first.")
            return
        try:
            self.explain(layer.selectedFeatureIds()[0])
        except Exception as exc:  # a bad file or a parcel outside the scenes: say so, keep the dock
            log.exception("Explain failed")
            self.explain_message.setText(f"Cannot explain this parcel: {exc}")

    def shutdown(self) -> None:
        """Stop running work and disconnect from the project (called by unload)."""
        if self.task is not None:
            # The task may end after the dock is gone; it must not call back into it.
            self.task.on_done = lambda task: None
            try:
                self.task.progressChanged.disconnect(self._show_progress)
                self.task.cancel()
            except (TypeError, RuntimeError):  # already disconnected, or the task has ended
                pass
            # The task manager owns the task now; the dock forgets it.
            self.task = None
        if self.install_task is not None:
            # pip is left to finish (killing it could leave a half-installed package) but
            # must not report into a dock that no longer exists.
            self.install_task.on_done = None
        for signal in (QgsProject.instance().layersAdded, QgsProject.instance().layersRemoved):
            try:
                signal.disconnect(self.refresh_rasters)
            except TypeError:
                pass
