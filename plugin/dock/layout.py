"""Building blocks the dock's pages share: scrolled pages, wrapping forms, file rows, elided path
captions, narrow combo boxes and the month ticks of the Explain charts."""

from __future__ import annotations

import math

from qgis.gui import QgsFileWidget
from qgis.PyQt.QtCore import Qt
from qgis.PyQt.QtWidgets import (
    QComboBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QWidget,
)


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


def scrolled(page: QWidget) -> QScrollArea:
    """``page`` in a vertical scroll area: every control stays reachable when the dock is short,
    and the page is as wide as the dock (never scrolled sideways, never cut off)."""
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.NoFrame)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    scroll.setWidget(page)
    return scroll


def wrapping_form(box: QGroupBox) -> QFormLayout:
    """A form layout for ``box`` whose fields go below their labels in a narrow dock."""
    form = QFormLayout(box)
    form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
    # In a narrow dock a field goes below its label rather than past the dock's edge.
    form.setRowWrapPolicy(QFormLayout.WrapLongRows)
    form.setLabelAlignment(Qt.AlignLeft | Qt.AlignVCenter)
    return form


def file_row(filter_text: str) -> QgsFileWidget:
    """A file field with ``filter_text``, of fixed height, whose tooltip holds the full path."""
    widget = QgsFileWidget()
    widget.setFilter(filter_text)
    # Without this the form hands spare height to the file rows and their labels float.
    widget.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
    # The full path, whatever part of it the field has room for.
    widget.fileChanged.connect(lambda path, w=widget: w.lineEdit().setToolTip(path))
    return widget


def narrow_combos(widget: QWidget) -> None:
    """Let the combo boxes under ``widget`` be narrower than their longest item.

    Combo boxes sized by their longest item would make a page wider than the dock.
    """
    for combo in widget.findChildren(QComboBox):
        combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(8)
