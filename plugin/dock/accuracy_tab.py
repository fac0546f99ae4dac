"""The Accuracy tab: ``accuracy_widget.AccuracyWidget`` in a scroll area, its outcome told in the
dock's status panel and message bar."""

from __future__ import annotations

from typing import Callable

from qgis.core import Qgis
from qgis.PyQt.QtWidgets import QScrollArea

from ..accuracy_widget import AccuracyWidget
from ..i18n import tr
from .layout import narrow_combos, scrolled


def accuracy_tab(say: Callable) -> tuple[AccuracyWidget, QScrollArea]:
    """The accuracy widget, reporting through ``say(text, level, bar=...)``, and its scrolled page."""
    widget = AccuracyWidget()
    widget.failed.connect(
        lambda message: say(tr("Accuracy assessment: {message}").format(message=message), Qgis.Warning, bar=True))
    widget.reportReady.connect(
        lambda report: say(tr("Accuracy assessment finished; the report is on the Accuracy tab."), Qgis.Success,
                           bar=True))
    # In a scroll area too, so that its report never makes the dock taller than the screen.
    narrow_combos(widget)
    return widget, scrolled(widget)
