"""The Train tab: ``train_panel.TrainPanel`` with the Classify tab's scenes and weather; the model it
trains becomes the Classify tab's model."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from qgis.core import Qgis, QgsMessageLog
from qgis.PyQt.QtWidgets import QScrollArea

from ..i18n import tr
from ..train_panel import TrainPanel
from .input_widgets import ClassifyInputs
from .layout import scrolled
from .status_panel import LOG_TAG


def train_tab(inputs: ClassifyInputs, iface: Callable[[], object]) -> tuple[TrainPanel, QScrollArea]:
    """The Train panel fed by ``inputs`` (scenes, weather) and choosing its model there, and its page.

    ``iface`` gives the QGIS interface (or None) whose message bar tells that a model was trained.
    """
    panel = TrainPanel(lambda: (inputs.scene_paths(), inputs.weather_service() or inputs.weather.filePath()),
                       inputs.model.setFilePath)
    panel.message.connect(
        lambda text, level: QgsMessageLog.logMessage(text, LOG_TAG, Qgis.Info if level == Qgis.Success else level))
    panel.trained.connect(lambda path: _tell_trained(iface(), path))
    return panel, scrolled(panel)


def _tell_trained(iface, path: str) -> None:
    if iface is not None:
        iface.messageBar().pushMessage(LOG_TAG, tr("Model {name} trained and chosen for the next classification.")
                                       .format(name=Path(path).name), Qgis.Success, 8)
