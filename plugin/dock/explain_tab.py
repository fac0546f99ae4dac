"""The Explain tab: one parcel's NDVI series against the calendar and against growing degree days,
and the model's class probabilities, for a parcel clicked on the map or selected; beside the
prediction, the parcel's reference class when a field holds one."""

from __future__ import annotations

from typing import Callable, Optional

from qgis.core import (
    Qgis,
    QgsApplication,
    QgsMessageLog,
    QgsVectorLayer,
    QgsVectorLayerFeatureSource,
)
from qgis.gui import QgsFieldComboBox, QgsMapToolIdentifyFeature
from qgis.PyQt.QtWidgets import (
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ...core.crops import colour_list
from ..accuracy_layer import guess_fields
from ..i18n import tr
from ..layer_writer import layer_alive
from ..layers import copied_field_names
from ..styles import class_label
from ..task import ExplainTask, LayerSnapshot
from .classify_tab import ClassifyPanel
from .layout import month_locator
from .status_panel import LOG_TAG


class ExplainPanel(QWidget):
    """The Explain page; it explains parcels of the Classify tab's result (or its parcel layer)
    with the Classify tab's scenes, weather and model.

    Args:
        classify: the Classify tab (its result layer and model, its form's scenes and weather).
        iface: gives the QGIS interface (or None without a desktop) whose map canvas the pick tool uses.
    """

    def __init__(self, classify: ClassifyPanel, iface: Callable[[], object]) -> None:
        super().__init__()
        self.classify, self.iface = classify, iface
        self.explain_task: Optional[ExplainTask] = None
        self.last_explanation = None
        self._explaining_layer: Optional[QgsVectorLayer] = None
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.pick_button = QPushButton(tr("Click a parcel"))
        self.pick_button.setCheckable(True)
        self.pick_button.setToolTip(tr("Then click a parcel of the classified layer on the map to explain it"))
        self.pick_button.setEnabled(iface() is not None)
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

    def explain(self, fid: int) -> Optional[ExplainTask]:
        """Explain parcel ``fid`` of the explained layer in the background; ``draw_explanation`` follows.

        Returns:
            The running task (its ``explanation`` holds the data once it ends), or None when no
            layer is there to explain.
        """
        layer = self._explained_layer()
        if layer is None:
            return None
        inputs = self.classify.inputs
        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(),
                                 copied_field_names(layer))
        # The last run's model, and its date: after a run as of a date, the scenes up to it.
        last = self.classify.last_bundle is not None
        bundle = self.classify.last_bundle if last else (inputs.model.filePath() or None)
        self.sync_reference_layer()
        factors = getattr(self.classify.last_result, "share_factors", None) if last else None
        self.explain_task = ExplainTask(snapshot, fid, inputs.scene_paths(), inputs.weather.filePath(), bundle,
                                        self._explained, as_of=self.classify.last_as_of if last else None,
                                        share_factors=factors)
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
        ax3.set_xlabel(tr("class probability, brought to the class shares") if ex.share_factors is not None
                       else tr("class probability"), fontsize=9)
        best = int(np.nanargmax(probs)) if np.isfinite(probs).any() else None
        verdict = f"{class_label(bundle.classes[best])} ({probs[best]:.2f})" if best is not None else ex.status
        if self.figure_canvas is not None:
            self.explain_layout.removeWidget(self.figure_canvas)
            self.figure_canvas.deleteLater()
        self.figure_canvas = FigureCanvasQTAgg(figure)
        self.figure_canvas.setMinimumHeight(height)
        self.explain_layout.addWidget(self.figure_canvas)
        layer = self._explaining_layer
        where = tr(" of {layer}").format(layer=layer.name()) if layer_alive(layer) else ""
        self.explain_message.setText(f"<b>{tr('Parcel')} {ex.name}</b>{where}: {verdict}")
        return figure

    def reference_class(self, fid: int) -> Optional[str]:
        """Parcel ``fid``'s value of the chosen reference field ("" when empty), or None without one."""
        layer = self._explaining_layer
        field = self.reference_field.currentField()
        if not field or not layer_alive(layer) or layer.fields().indexOf(field) < 0:
            return None
        value = layer.getFeature(fid)[field]
        return "" if value is None or str(value) in ("", "NULL") else str(value)

    def sync_reference_layer(self) -> None:
        """The reference field list follows the explained layer (a reference-like field guessed)."""
        layer = self._explained_layer()
        if layer is self.reference_field.layer():
            return
        self.reference_field.setLayer(layer)
        if layer is not None:
            self.reference_field.setField(guess_fields(layer.fields().names())[1] or "")

    def _pick_toggled(self, on: bool) -> None:
        """Give the map a tool that explains the parcel clicked (or give the previous tool back)."""
        iface = self.iface()
        canvas = iface.mapCanvas() if iface is not None else None
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
        return self._explain_chosen(feature.id())

    def _explained_layer(self) -> Optional[QgsVectorLayer]:
        """The layer of the last result (it may be a new layer), else the chosen parcel layer."""
        output = self.classify.output_layer
        return output if layer_alive(output) else self.classify.inputs.layer_combo.currentLayer()

    def explain_selected(self) -> Optional[ExplainTask]:
        layer = self._explained_layer()
        if layer is None or layer.selectedFeatureCount() != 1:
            count = 0 if layer is None else layer.selectedFeatureCount()
            text = tr("Select exactly one parcel of {layer} to explain ({n} selected).").format(
                layer=layer.name(), n=count) if layer is not None else \
                tr("Select exactly one parcel to explain ({n} selected).").format(n=count)
            self.explain_message.setText(text)
            return None
        return self._explain_chosen(layer.selectedFeatureIds()[0])

    def _explain_chosen(self, fid: int) -> Optional[ExplainTask]:
        """Explain ``fid`` once the Classify tab has scenes and weather (the running task if one runs)."""
        inputs = self.classify.inputs
        if not inputs.scene_paths() or not inputs.weather.filePath():
            self.explain_message.setText(tr("Choose the scenes and the weather file on the Classify tab first."))
            return None
        if self.explain_task is not None:
            return self.explain_task
        return self.explain(fid)

    def shutdown(self) -> None:
        """Give the map its tool back and let a running explanation end without calling back."""
        iface = self.iface()
        if self.map_tool is not None and iface is not None:
            iface.mapCanvas().unsetMapTool(self.map_tool)
        task = self.explain_task
        if task is not None:
            # The task may end after the dock is gone; it must not call back into it.
            task.on_done = lambda task: None
            try:
                task.cancel()
            except (TypeError, RuntimeError):  # the task has ended
                pass
            self.explain_task = None
