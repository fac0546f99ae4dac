"""The Accuracy tab's "Calibrate on these reference parcels": the tab's layer and reference field,
the Classify tab's scenes, weather and model, ``app.run_calibration`` in a background task; the
calibrated model is saved beside the project and chosen for the next classification."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from qgis.core import Qgis, QgsProject, QgsVectorLayer, QgsVectorLayerFeatureSource
from qgis.PyQt.QtCore import pyqtSignal
from qgis.PyQt.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from .. import app
from ..app import CalibrateRequest, ParcelsSpec, RunProgress, ScenesSpec, weather_spec
from ..core.model.season_floor import FLOOR_LIMITS
from .i18n import tr
from .task import LayerSnapshot, ReferenceLayerTask
from .task_panel import TaskPanelMixin

LOG_TAG = "ThermoCrop"


class CalibrationTask(ReferenceLayerTask):
    """Reads the reference parcels (a :class:`LayerSnapshot`, in the worker thread) and runs
    ``app.run_calibration``. After it ends, ``run`` holds the ``CalibrationRun``, or ``error``
    what went wrong (``cancelled`` tells a user stop); the bundle is written only at the end."""

    WHAT = "Calibration"

    def __init__(self, request, on_done: Optional[Callable[["CalibrationTask"], None]]):
        super().__init__(request, on_done, tr("ThermoCrop: calibrate on {layer}"))

    def run_request(self, request, progress: RunProgress):
        return app.run_calibration(request, progress)


def calibrated_model_path(folder: Path, model: Optional[str]) -> Path:
    """``<folder>/<model stem>_calibrated.tcm`` (``default`` for the shipped model), or ``_2``,
    ``_3``... where that exists."""
    stem = f"{Path(model).stem if model else 'default'}_calibrated"
    for n in range(1, 1000):
        path = folder / f"{stem}{'' if n == 1 else f'_{n}'}.tcm"
        if not path.exists():
            return path
    raise ValueError(tr("No free model file name in {folder}.").format(folder=folder))


class CalibratePanel(TaskPanelMixin, QWidget):
    """The calibrate action below the accuracy report.

    Args:
        reference: gives ``(layer, label field, class map)`` of the Accuracy tab (a layer may be None).
        inputs: gives the Classify tab's ``(scenes, weather, model)`` (model None: the shipped one).
        use_model: called with the written bundle's path (the Classify tab's model box).

    Signals:
        calibrated(str): the calibrated bundle written.
        message(str, int): a text and its ``Qgis`` level for the dock's status panel.
    """

    calibrated = pyqtSignal(str)
    message = pyqtSignal(str, int)

    def __init__(self, reference: Callable[[], tuple], inputs: Callable[[], tuple], use_model: Callable[[str], None],
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.reference, self.inputs, self.use_model = reference, inputs, use_model
        self.task: Optional[CalibrationTask] = None
        self._filter = ("", 0)
        """The reference layer's filter and the features it showed when the run started."""
        self._selected = 0
        """The reference layer's features selected when the run started (0: none, every feature used)."""
        # Replaced in tests; asks where the model goes when the project is not saved.
        self.ask_path: Callable[[str], str] = self._ask_path
        self.calibrate_button = QPushButton(tr("Calibrate on these reference parcels"))
        self.calibrate_button.setToolTip(tr("Fit the model's calibration (its confidence and prediction sets) on "
                                            "the layer's parcels whose reference class is filled, classified from "
                                            "the Classify tab's scenes and weather; the calibrated model is saved "
                                            "beside the project and chosen for the next classification"))
        # The same choices, in the same words, as the Toolbox's Calibrate model.
        self.method_box = QComboBox()
        self.method_box.addItem(tr("Temperature scaling (labels unchanged)"), "temperature")
        self.method_box.addItem(tr("Vector scaling (a temperature and a bias per class)"), "vector")
        self.method_box.setToolTip(tr("Temperature scaling divides the log-probabilities by one number and keeps "
                                      "every label; vector scaling also corrects how often the model names each "
                                      "class on your fields, for the whole season and each stage of it, and can "
                                      "change labels, most early in the season"))
        # The GDD floor of the calibrated model: at the minimum (-1) the model's own, as the
        # Toolbox's empty GDD_FLOOR and the command line without --gdd-floor.
        self.floor_box = QDoubleSpinBox()
        self.floor_box.setRange(-1.0, FLOOR_LIMITS[1])
        self.floor_box.setDecimals(0)
        self.floor_box.setSingleStep(50.0)
        self.floor_box.setPrefix(tr("GDD floor: "))
        self.floor_box.setSpecialValueText(tr("GDD floor: the model's own"))
        self.floor_box.setValue(-1.0)
        self.floor_box.setToolTip(tr("Each parcel's acquisitions before this many GDD are left out of its "
                                     "classification where it has one from then on, and the calibration is fitted "
                                     "so; 0: none. The shipped L1C model leaves out those before 550 GDD, whose "
                                     "winter scenes misled it on real fields (docs/in-season.md)"))
        self.cancel_button = QPushButton(tr("Cancel"))
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setMaximumHeight(18)
        self.status = QLabel()
        self.status.setWordWrap(True)
        buttons = QHBoxLayout()
        for button, stretch in ((self.calibrate_button, 3), (self.cancel_button, 1)):
            # Narrow docks: the long label is cut rather than widening the dock (its tooltip says it all).
            button.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
            button.setMinimumWidth(40)
            buttons.addWidget(button, stretch)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.method_box)
        layout.addWidget(self.floor_box)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        self.calibrate_button.clicked.connect(lambda: self.calibrate())
        self.cancel_button.clicked.connect(self.cancel)

    def request(self, out: Optional[str] = None) -> Optional[CalibrateRequest]:
        """The calibration the two tabs ask for, or None with the reason shown."""
        layer, label_field, class_map = self.reference()
        if layer is None or not layer.isValid():
            return self._refuse(tr("Choose the layer with the reference parcels on this tab."))
        if not label_field:
            return self._refuse(tr("Choose the reference class field of {layer}.").format(layer=layer.name()))
        scenes, weather, model = self.inputs()
        if not scenes:
            return self._refuse(tr("Tick or add the Sentinel-2 scenes on the Classify tab first."))
        if not weather:
            return self._refuse(tr("Choose the daily temperature file (or a weather service) on the Classify tab "
                                   "first."))
        # The default path is a free name, which nothing may take while the run writes; a path
        # asked for was confirmed in the save dialog, so an existing file there is replaced.
        confirmed = out is not None
        if out is None:
            out, confirmed = self._default_path(layer, model)
            if not out:
                return None
        if Path(out).suffix.lower() != ".tcm":
            out = str(Path(out).with_suffix(".tcm"))
        selected = list(layer.selectedFeatureIds()) or None  # the selected features alone, where some are
        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(), [], selected)
        self._filter = (layer.subsetString(), layer.featureCount())
        self._selected = len(selected or ())
        return CalibrateRequest(reference=ParcelsSpec(snapshot, name=layer.name()), label_field=label_field,
                                scenes=ScenesSpec(files=tuple(scenes)), weather=weather_spec(weather), out=str(out),
                                model=model or None, class_map=class_map or None, overwrite=confirmed,
                                method=self.method_box.currentData(),
                                gdd_floor=self.floor_box.value() if self.floor_box.value() >= 0 else None)

    def _default_path(self, layer: QgsVectorLayer, model: Optional[str]) -> tuple[str, bool]:
        """Beside the project; beside the layer's file when it is not saved; else asked (and
        confirmed in the dialog where it exists). ``(path, confirmed)``; "" where none was given."""
        home = QgsProject.instance().absolutePath()
        source = Path(layer.source().split("|")[0])
        folder = Path(home) if home else (source.parent if source.is_file() else None)
        if folder is None:
            path = self.ask_path(str(calibrated_model_path(Path.home(), model)))
            if not path:  # the dialog was cancelled: the last run's text must not stay as if it were this one's
                self._show(tr("Not calibrated: no file was chosen for the calibrated model."), Qgis.Info)
            return path, True
        try:
            return str(calibrated_model_path(folder, model)), False
        except ValueError as exc:
            self._refuse(str(exc))
            return "", False

    def _ask_path(self, default: str) -> str:
        path, _ = QFileDialog.getSaveFileName(self, tr("Calibrated model"), default, tr("ThermoCrop model (*.tcm)"))
        return path

    def calibrate(self, out: Optional[str] = None) -> Optional[CalibrationTask]:
        """Start the calibration in the background (the bundle to ``out``, else beside the project);
        None, with the reason shown, when it cannot start."""
        if self.task is not None:
            return None
        request = self.request(out)
        if request is None:
            return None
        task = CalibrationTask(request, self._finished)
        task.progressChanged.connect(lambda value: self.progress.setValue(int(value)))
        self.calibrate_button.setEnabled(False)
        self.progress.setValue(0)
        self._show(tr("Calibrating on the reference parcels of {layer} …").format(
            layer=request.reference.describe()), Qgis.Info)
        return self.launch(task)

    def _finished(self, task: CalibrationTask) -> None:
        self.task_ended()
        self.calibrate_button.setEnabled(True)
        if task.cancelled:
            self.progress.setValue(0)
            self._show(tr("Calibration cancelled; no model was written."), Qgis.Info)
            return
        run = task.run_result
        # A calibration fitted on a filtered layer (e.g. the Classify tab's "only below") is fitted on
        # the parcels the filter picked, not on a fair sample of the reference parcels: said. So is
        # a selection.
        subset, shown = self._filter
        filtered = tr(" Only the {n} features the layer's filter shows were used ({subset}); clear the filter to "
                      "calibrate on every reference parcel.").format(n=shown, subset=subset) if subset else ""
        if self._selected:
            filtered += tr(" Only the {n} selected features were used; clear the selection to calibrate on every "
                           "reference parcel.").format(n=self._selected)
        if run is None:
            self.progress.setValue(0)
            self._show(tr("Calibration failed: {error}").format(error=task.error) + filtered, Qgis.Critical)
            return
        self.progress.setValue(100)
        calibration = run.calibration
        path = str(run.path)
        self.use_model(path)
        counts = ", ".join(f"{c} {n}" for c, n in sorted(run.counts.items()))
        # From the error the user saw with the model as it was (its own calibration), where it had one.
        before = tr("{before:.3f} with the model's own calibration").format(before=run.current) \
            if run.current is not None else tr("{before:.3f} uncalibrated").format(before=calibration.ece_before)
        text = tr("Calibrated on {n} reference parcels ({counts}): temperature {t:.2f}, calibration error {before} "
                  "-> {after:.3f}. Saved to {path} and chosen for the next classification.").format(
            n=calibration.parcels, counts=counts, t=calibration.temperature, before=before,
            after=calibration.ece_after, path=path)
        text += filtered
        # What the run said besides: parcels left out and why, the season stages, a better calibration
        # the model had.
        text += "".join(" " + line for line in task.reports)
        self._show(text, Qgis.Warning if filtered else Qgis.Success)
        self.calibrated.emit(path)
