"""The Accuracy tab's "Accuracy through the season": the tab's layer, reference field and code table,
the Classify tab's scenes, weather and model, ``app.run_season_accuracy`` in a background task; the
figure and a summary are shown in the tab, the tables and figure saved beside the project."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Callable, Optional

from qgis.core import Qgis, QgsProject, QgsVectorLayer, QgsVectorLayerFeatureSource
from qgis.PyQt.QtCore import Qt, QUrl, pyqtSignal
from qgis.PyQt.QtGui import QPixmap
from qgis.PyQt.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from .. import app
from ..app import ParcelsSpec, RunProgress, ScenesSpec, SeasonAccuracyRequest, weather_spec
from .i18n import tr
from .task import LayerSnapshot, ReferenceLayerTask
from .task_panel import TaskPanelMixin

LOG_TAG = "ThermoCrop"
FIGURE_WIDTH = 480
"""The widest the figure is shown in the dock, in pixels (narrower docks scale it down)."""


class SeasonAccuracyTask(ReferenceLayerTask):
    """Reads the reference parcels (a :class:`LayerSnapshot`, in the worker thread) and runs
    ``app.run_season_accuracy``. After it ends, ``run_result`` holds the ``SeasonAccuracyRun``, or
    ``error`` what went wrong (``cancelled`` tells a user stop); the files are written only at the end."""

    WHAT = "In-season accuracy"

    def __init__(self, request, on_done: Optional[Callable[["SeasonAccuracyTask"], None]]):
        super().__init__(request, on_done, tr("ThermoCrop: accuracy through the season on {layer}"))

    def run_request(self, request, progress: RunProgress):
        return app.run_season_accuracy(request, progress)


def season_folder(folder: Path, layer_name: str) -> Path:
    """``<folder>/<layer name>_inseason``, or ``_2``, ``_3``... where that exists."""
    stem = (re.sub(r"[^\w.-]+", "_", layer_name).strip("._") or "reference") + "_inseason"
    for n in range(1, 1000):
        path = folder / f"{stem}{'' if n == 1 else f'_{n}'}"
        if not path.exists():
            return path
    raise ValueError(tr("No free folder name in {folder}.").format(folder=folder))


class SeasonPanel(TaskPanelMixin, QWidget):
    """The in-season accuracy action below the calibrate action.

    Args:
        reference: gives ``(layer, label field, class map)`` of the Accuracy tab (a layer may be None).
        inputs: gives the Classify tab's ``(scenes, weather, model)`` (model None: the shipped one).

    Signals:
        finished(str): the folder the tables and the figure were written to.
        message(str, int): a text and its ``Qgis`` level for the dock's status panel.
    """

    finished = pyqtSignal(str)
    message = pyqtSignal(str, int)

    def __init__(self, reference: Callable[[], tuple], inputs: Callable[[], tuple],
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.reference, self.inputs = reference, inputs
        self.task: Optional[SeasonAccuracyTask] = None
        self._selected = 0
        """The reference layer's features selected when the run started (0: none, every feature scored)."""
        self.run_button = QPushButton(tr("Accuracy through the season"))
        self.run_button.setToolTip(tr("Classify the layer's parcels whose reference class is filled as of each "
                                      "acquisition of the Classify tab's scenes, and show the overall accuracy, "
                                      "macro F1 and each class's F1 against the date and the growing degree days; "
                                      "the tables and the figure are saved beside the project"))
        self.cancel_button = QPushButton(tr("Cancel"))
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setMaximumHeight(18)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.figure = QLabel()
        self.figure.setVisible(False)
        # The figure's two panels side by side are small in a narrow dock: a link opens it full size.
        self.figure_link = QLabel()
        self.figure_link.setOpenExternalLinks(True)
        self.figure_link.setVisible(False)
        buttons = QHBoxLayout()
        for button, stretch in ((self.run_button, 3), (self.cancel_button, 1)):
            button.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
            button.setMinimumWidth(40)
            buttons.addWidget(button, stretch)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.figure)
        layout.addWidget(self.figure_link)
        self.run_button.clicked.connect(lambda: self.start())
        self.cancel_button.clicked.connect(self.cancel)

    def request(self, out: Optional[str] = None) -> Optional[SeasonAccuracyRequest]:
        """The scoring the two tabs ask for (into ``out``, else a free folder beside the project),
        or None with the reason shown."""
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
        if out is None:
            try:
                out = str(season_folder(self._home(layer), layer.name()))
            except ValueError as exc:
                return self._refuse(str(exc))
        selected = list(layer.selectedFeatureIds()) or None  # the selected features alone, where some are
        self._selected = len(selected or ())
        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(), [], selected)
        return SeasonAccuracyRequest(reference=ParcelsSpec(snapshot, name=layer.name()), label_field=label_field,
                                     scenes=ScenesSpec(files=tuple(scenes)), weather=weather_spec(weather),
                                     out=str(out), model=model or None, class_map=class_map or None, overwrite=True)

    @staticmethod
    def _home(layer: QgsVectorLayer) -> Path:
        """The project's folder; the layer file's when the project is not saved; else a new
        temporary folder."""
        home = QgsProject.instance().absolutePath()
        if home:
            return Path(home)
        source = Path(layer.source().split("|")[0])
        return source.parent if source.is_file() else Path(tempfile.mkdtemp(prefix="thermocrop-"))

    def start(self, out: Optional[str] = None) -> Optional[SeasonAccuracyTask]:
        """Start the scoring in the background (into the folder ``out``, else beside the project);
        None, with the reason shown, when it cannot start."""
        if self.task is not None:
            return None
        request = self.request(out)
        if request is None:
            return None
        task = SeasonAccuracyTask(request, self._finished)
        task.progressChanged.connect(lambda value: self.progress.setValue(int(value)))
        self.run_button.setEnabled(False)
        self.progress.setValue(0)
        self.figure.setVisible(False)
        self.figure_link.setVisible(False)
        self._show(tr("Scoring the reference parcels of {layer} as of each acquisition …").format(
            layer=request.reference.describe()), Qgis.Info)
        return self.launch(task)

    def _finished(self, task: SeasonAccuracyTask) -> None:
        self.task_ended()
        self.run_button.setEnabled(True)
        if task.cancelled:
            self.progress.setValue(0)
            self._show(tr("In-season accuracy cancelled; nothing was written."), Qgis.Info)
            return
        run = task.run_result
        if run is None:
            self.progress.setValue(0)
            self._show(tr("In-season accuracy failed: {error}").format(error=task.error), Qgis.Critical)
            return
        self.progress.setValue(100)
        text = summary(run)
        if self._selected:
            text += " " + tr("Only the {n} selected features were scored; clear the selection to score every "
                             "reference parcel.").format(n=self._selected)
        # What the run said besides (parcels left out and why, scenes of another level than the model's).
        text += "".join(" " + line for line in task.reports)
        self._show_figure(str(run.paths["figure"]))
        self._show(text, Qgis.Success)
        self.finished.emit(str(Path(run.paths["table"]).parent))

    def _show_figure(self, path: str) -> None:
        pixmap = QPixmap(path)
        if pixmap.isNull():
            return
        width = min(FIGURE_WIDTH, max(self.width(), 240))
        self.figure.setPixmap(pixmap.scaledToWidth(width, Qt.SmoothTransformation))
        self.figure.setToolTip(path)
        self.figure.setVisible(True)
        self.figure_link.setText('<a href="{url}">{text}</a>'.format(
            url=QUrl.fromLocalFile(path).toString(), text=tr("Open the figure full size")))
        self.figure_link.setToolTip(path)
        self.figure_link.setVisible(True)


def summary(run) -> str:
    """What the dock says of a ``SeasonAccuracyRun``: the whole-season OA, when OA first reaches
    ``REACHED_SHARE`` of it and where the files are (what was left out is among the run's reports)."""
    # Here, not at the top: the training package needs torch, which the dock opens without.
    from ..training.season_accuracy import REACHED_SHARE

    accuracy = run.accuracy
    text = tr("{model} on {n} reference parcels, {t} acquisitions: whole-season overall accuracy {oa:.1%}, macro F1 "
              "{f1:.3f}.").format(model=run.model, n=accuracy.parcels, t=len(accuracy.dates),
                                  oa=float(accuracy.overall_accuracy[-1]), f1=float(accuracy.macro_f1[-1]))
    first = accuracy.overall_reached()
    if first is not None:
        text += " " + tr("It first reaches {share} % of that on {date} ({gdd:.0f} GDD).").format(
            share=round(100 * REACHED_SHARE), date=str(accuracy.dates[first]), gdd=float(accuracy.gdd[first]))
    from ..app.season_status import INSEASON_BUNDLE, INSEASON_GDD
    from ..core.model.bundle import SHIPPED_BUNDLES

    if run.model == SHIPPED_BUNDLES["L1C"]:  # chosen for want of a model: early runs choose another
        text += " " + tr("A run as of a date before {gdd:,.0f} GDD uses {inseason} instead; choose it as the model "
                         "to score it.").format(gdd=INSEASON_GDD, inseason=INSEASON_BUNDLE)
    return text + " " + tr("Tables and figure in {folder}.").format(folder=Path(run.paths["table"]).parent)
