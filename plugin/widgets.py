"""Processing dialog widgets of ThermoCrop's own: a list of dataset folders with a folder picker.

Loaded by Processing from the parameter's ``widget_wrapper`` metadata (a class path), so that
headless runs (qgis_process) never import Processing's GUI.
"""

from __future__ import annotations

from processing.gui.wrappers import DIALOG_MODELER, WidgetWrapper
from qgis.PyQt.QtWidgets import QFileDialog, QHBoxLayout, QLineEdit, QToolButton, QWidget

from .i18n import tr

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
