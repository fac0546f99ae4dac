"""Processing dialog widgets of ThermoCrop's own: a list of dataset folders with a folder picker, and
a field list that starts at a likely label or reference field (never ``fid``).

Loaded by Processing from the parameter's ``widget_wrapper`` metadata (a class path), so that
headless runs (qgis_process) never import Processing's GUI.
"""

from __future__ import annotations

from processing.gui.wrappers import DIALOG_MODELER, WidgetWrapper
from qgis.core import (
    QgsProcessingContext,
    QgsProcessingFeatureSourceDefinition,
    QgsProcessingUtils,
    QgsProject,
    QgsVectorLayer,
)
from qgis.gui import QgsFieldComboBox
from qgis.PyQt.QtCore import QVariant
from qgis.PyQt.QtWidgets import QFileDialog, QHBoxLayout, QLineEdit, QToolButton, QWidget

from .accuracy_layer import guess_fields
from .i18n import tr
from .layers import guess_label_field

SEPARATOR = ";"


def join_folders(text: str, folder: str) -> str:
    """``text`` (folders separated by ';') with ``folder`` appended unless it is already there."""
    folders = [p.strip() for p in text.split(SEPARATOR) if p.strip()]
    if folder and folder not in folders:
        folders.append(folder)
    return SEPARATOR.join(folders)


class DatasetFoldersWrapper(WidgetWrapper):
    """A line of dataset folders separated by ';' and a button that adds one more with a folder dialog."""

    def createWidget(self):  # noqa: N802 (Processing API)
        self.line = QLineEdit()
        self.line.setPlaceholderText(tr("dataset folders, separated by ';'"))
        if self.dialogType == DIALOG_MODELER:
            return self.line
        widget = QWidget()
        layout = QHBoxLayout(widget)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.line, 1)
        self.add_button = QToolButton()
        self.add_button.setText("…")
        self.add_button.setToolTip(tr("Add a dataset folder"))
        self.add_button.clicked.connect(self.pick_folder)
        layout.addWidget(self.add_button)
        return widget

    def pick_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self.line, tr("Dataset folder (from Export training data)"))
        self.add_folder(folder)

    def add_folder(self, folder: str) -> None:
        """Append ``folder`` to the list (what the folder dialog does once a folder is chosen)."""
        self.line.setText(join_folders(self.line.text(), folder))
        self.widgetValueHasChanged.emit(self)

    def setValue(self, value):  # noqa: N802
        self.line.setText("" if value is None else str(value))

    def value(self):
        return self.line.text()


GUESSES = {"label": "label", "reference": "reference"}
"""What a :class:`GuessedFieldWrapper` looks for: a crop label field or a reference class field."""


def guess_field(layer, guess: str) -> str:
    """The field of ``layer`` a dialog should offer first for ``guess`` ("" when none fits; never fid)."""
    if layer is None:
        return ""
    names = layer.fields().names()
    if guess == GUESSES["reference"]:
        reference = guess_fields(names)[1]
        if reference:
            return reference
    kinds = {f.name(): f.type() == QVariant.String for f in layer.fields()}
    return guess_label_field(names, kinds) or ""


class GuessedFieldWrapper(WidgetWrapper):
    """A field list that follows its parent layer and starts at a likely field (a crop label or
    reference class), never at the first field (``fid``); empty when nothing fits."""

    def createWidget(self, guess: str = GUESSES["label"]):  # noqa: N802 (Processing API)
        self.guess = guess
        self.layer = None
        if self.dialogType == DIALOG_MODELER:
            self.combo = None
            self.line = QLineEdit()
            return self.line
        self.combo = QgsFieldComboBox()
        self.combo.setAllowEmptyFieldName(True)
        self.combo.fieldChanged.connect(lambda _: self.widgetValueHasChanged.emit(self))
        return self.combo

    def postInitialize(self, wrappers):  # noqa: N802
        parent = self.parameterDefinition().parentLayerParameterName()
        for wrapper in wrappers:
            if wrapper.parameterDefinition().name() == parent:
                wrapper.widgetValueHasChanged.connect(self.parent_changed)
                self.parent_changed(wrapper)

    def parent_changed(self, wrapper) -> None:
        """The parent layer parameter changed: list its fields and choose the likely one."""
        value = wrapper.parameterValue() if hasattr(wrapper, "parameterValue") else wrapper.value()
        self.set_layer(_layer_of(value))

    def set_layer(self, layer) -> None:
        self.layer = layer  # a layer loaded from a path lives as long as the dialog needs its fields
        if self.combo is None:
            return
        self.combo.setLayer(layer)
        self.combo.setField(guess_field(layer, self.guess))

    def setValue(self, value):  # noqa: N802
        text = "" if value is None else str(value)
        if self.combo is None:
            self.line.setText(text)
        elif text:
            self.combo.setField(text)

    def value(self):
        return self.line.text() if self.combo is None else self.combo.currentField()


def _layer_of(value):
    """The vector layer a feature source parameter's value names (a layer, its id or a path), or None."""
    if isinstance(value, QgsProcessingFeatureSourceDefinition):
        value = value.source.staticValue()
    if isinstance(value, QgsVectorLayer):
        return value
    if not value or not isinstance(value, str):
        return None
    context = QgsProcessingContext()
    context.setProject(QgsProject.instance())
    layer = QgsProcessingUtils.mapLayerFromString(value, context, allowLoadingNewLayers=True)
    if isinstance(layer, QgsVectorLayer):
        # Loaded from a path, it belongs to the context; a copy outlives it.
        return layer if QgsProject.instance().mapLayer(layer.id()) is not None else layer.clone()
    return None
