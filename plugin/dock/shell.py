"""The ThermoCrop dock: a shell of tabs over the status panel.

Tabs: Classify (``inputs.py``, the form; ``classify.py``, the run and the counts of its result),
Explain (``explain.py``), Accuracy (``accuracy.py``) and Train (``train.py``). The status panel
(``status.py``: Classify / Cancel, progress, messages, the install button) sits below the tabs and
never scrolls away; failures and completions also reach the QGIS message bar and the ThermoCrop
tab of the message log.

The panels' widgets and state are reachable from the dock by their names (``dock.layer_combo``,
``dock.task``, ``dock.start()``...), as the plugin and its tests use them.
"""

from __future__ import annotations

from qgis.core import QgsProject
from qgis.gui import QgsDockWidget
from qgis.PyQt.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from ..i18n import tr
from .accuracy_tab import accuracy_tab
from .classify_tab import ClassifyPanel
from .explain_tab import ExplainPanel
from .input_widgets import ClassifyInputs
from .layout import narrow_combos
from .status_panel import StatusPanel
from .train_tab import train_tab

FORWARDED = {
    "inputs": ("layer_combo", "selected_only", "scene_list", "add_files", "add_folder", "remove_scenes",
               "clear_scenes", "left_out", "left_out_note", "catalog", "weather_from", "weather",
               "weather_caption", "model", "model_card", "to_new_file", "in_place", "output_mode", "output_file",
               "label_field", "conf_field", "status_field", "probabilities", "prediction_sets", "coverage", "cluster",
               "classify_layout", "refresh_rasters",
               "add_scene_paths", "remove_selected_scenes", "clear_added_scenes", "scene_paths",
               "weather_service", "set_weather_service", "save_settings", "restore_settings",
               "show_model_card"),
    "status": ("run_button", "cancel_button", "progress", "message", "install_button", "install_task", "say",
               "check_dependencies", "install_missing"),
    "classify": ("task", "last_result", "last_fids", "last_bundle", "preflight", "output_layer", "target_layer",
                 "confirm_overwrite", "results_box", "counts", "colour_by", "low_confidence", "threshold",
                 "show_counts", "counts_text", "parameters", "check_inputs", "start", "cancel",
                 "apply_confidence_filter", "several_classes", "visit_button", "write_field_visits",
                 "ask_visit_path"),
    "explain_panel": ("explain_task", "last_explanation", "pick_button", "explain_button", "reference_field",
                      "explain_message", "map_tool", "explain_box", "explain_layout", "figure_canvas", "explain",
                      "draw_explanation", "reference_class", "parcel_clicked", "explain_selected"),
}
"""The names the dock answers for its panels, by the dock attribute that holds the panel."""


class ThermoCropDock(QgsDockWidget):
    """Interactive classification of the parcels of a project layer.

    Args:
        iface: the QGIS interface (message bar, map canvas), or None without a desktop.
        restore: fill the form from the last session and keep it in the settings as it changes.
    """

    def __init__(self, iface=None, parent=None, restore: bool = True) -> None:
        super().__init__(tr("ThermoCrop"), parent)
        self.setObjectName("ThermoCropDock")
        self.iface = iface
        self.status = StatusPanel(lambda: self.iface, installed=lambda: self.inputs.show_model_card())
        self.inputs = ClassifyInputs(self.status.say)
        self.classify = ClassifyPanel(self.inputs, self.status)
        self.explain_panel = ExplainPanel(self.classify, lambda: self.iface)
        self.accuracy_widget, self.calibrate_panel, self.season_panel, accuracy_page = accuracy_tab(
            self.status.say, self.inputs)
        self.train_panel, train_page = train_tab(self.inputs, lambda: self.iface)
        self.classify_scroll = self.classify.scroll

        self.tabs = QTabWidget()
        self.tabs.addTab(self.classify_scroll, tr("Classify"))
        self.tabs.addTab(self.explain_panel, tr("Explain"))
        self.tabs.addTab(accuracy_page, tr("Accuracy"))
        self.tabs.addTab(train_page, tr("Train"))
        self.tabs.currentChanged.connect(self._tab_changed)
        container = QWidget()
        layout = QVBoxLayout(container)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.status)
        narrow_combos(container)
        self.setWidget(container)
        self._tab_changed(0)

        self.status.run_button.clicked.connect(self.classify.start)
        self.status.cancel_button.clicked.connect(self.classify.cancel)
        self.classify.resultChanged.connect(lambda: self._tab_changed(self.tabs.currentIndex()))
        self.classify.layerClassified.connect(self.accuracy_widget.set_layer)
        if restore:
            self.inputs.restore_settings()
        self.inputs.remember(restore)
        self.inputs.refresh_rasters()
        QgsProject.instance().layersAdded.connect(self.inputs.refresh_rasters)
        QgsProject.instance().layersRemoved.connect(self.inputs.refresh_rasters)
        self.status.check_dependencies()

    def _tab_changed(self, index: int) -> None:
        self.classify.results_box.setVisible(self.classify.last_result is not None)
        if index == 1:
            self.explain_panel.sync_reference_layer()

    def shutdown(self) -> None:
        """Stop running work and disconnect from the project (called by unload)."""
        self.inputs.catalog.shutdown()
        self.explain_panel.shutdown()
        self.classify.shutdown()
        self.accuracy_widget.shutdown()
        self.calibrate_panel.shutdown()
        self.season_panel.shutdown()
        self.train_panel.shutdown()
        self.status.shutdown()
        for signal in (QgsProject.instance().layersAdded, QgsProject.instance().layersRemoved):
            try:
                signal.disconnect(self.inputs.refresh_rasters)
            except TypeError:
                pass


def _forwarded(panel: str, name: str) -> property:
    """``name`` of the panel the dock holds as ``panel``, read and set through the dock."""
    return property(lambda dock: getattr(getattr(dock, panel), name),
                    lambda dock, value: setattr(getattr(dock, panel), name, value),
                    doc=f"The {panel} panel's ``{name}``.")


for _panel, _names in FORWARDED.items():
    for _name in _names:
        setattr(ThermoCropDock, _name, _forwarded(_panel, _name))
