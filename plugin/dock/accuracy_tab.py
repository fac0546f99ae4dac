"""The Accuracy tab: ``accuracy_widget.AccuracyWidget`` in a scroll area, with the calibrate action
(``calibrate_panel.CalibratePanel``) and the accuracy through the season
(``season_panel.SeasonPanel``) fed by the Classify tab's scenes, weather and model; their outcome
told in the dock's status panel and message bar."""

from __future__ import annotations

from typing import Callable

from qgis.core import Qgis
from qgis.PyQt.QtWidgets import QScrollArea

from ..accuracy_widget import AccuracyWidget
from ..calibrate_panel import CalibratePanel
from ..i18n import tr
from ..season_panel import SeasonPanel
from .input_widgets import ClassifyInputs
from .layout import narrow_combos, scrolled


def accuracy_tab(say: Callable, inputs: ClassifyInputs
                 ) -> tuple[AccuracyWidget, CalibratePanel, SeasonPanel, QScrollArea]:
    """The accuracy widget, its calibrate and in-season actions, reporting through
    ``say(text, level, bar=...)``, and their scrolled page. A calibrated model becomes the model of
    ``inputs``."""
    widget = AccuracyWidget()
    widget.failed.connect(
        lambda message: say(tr("Accuracy assessment: {message}").format(message=message), Qgis.Warning, bar=True))
    widget.reportReady.connect(
        lambda report: say(tr("Accuracy assessment finished; the report is on the Accuracy tab."), Qgis.Success,
                           bar=True))

    def reference():
        return widget.layer(), widget.reference_combo.currentField(), widget.codes_combo.currentData()

    def classify_inputs():
        return (inputs.scene_paths(), inputs.weather_service() or inputs.weather.filePath(),
                inputs.model.filePath() or None)

    panel = CalibratePanel(reference, classify_inputs, inputs.model.setFilePath)
    season = SeasonPanel(reference, classify_inputs)
    layout = widget.layout()
    for action in (panel, season):
        action.message.connect(lambda text, level: say(text, level, bar=level in (Qgis.Success, Qgis.Critical)))
        layout.insertWidget(layout.indexOf(widget.browser), action)
        widget.layer_combo.layerChanged.connect(action.reference_layer_changed)
    # In a scroll area too, so that its report never makes the dock taller than the screen.
    narrow_combos(widget)
    return widget, panel, season, scrolled(widget)
