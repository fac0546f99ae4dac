"""The dock's Train tab: a model from a labelled parcel layer, in one background task.

The task does what *Export training data* and *Train model* do one after the other
(``core.extract.extract_to_dataset``, then ``training.train.train_model``) with the Classify tab's
scenes and weather, measures the speed and says how long the training will take before it starts,
and saves the bundle beside the project; the dock then selects it for the next run.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from qgis.core import (
    Qgis,
    QgsMapLayerProxyModel,
    QgsMessageLog,
    QgsProject,
    QgsSettings,
    QgsVectorLayer,
    QgsVectorLayerFeatureSource,
)
from qgis.gui import QgsFieldComboBox, QgsFileWidget, QgsMapLayerComboBox
from qgis.PyQt.QtCore import QVariant, pyqtSignal
from qgis.PyQt.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from .i18n import tr
from .layers import guess_label_field
from .task import LayerSnapshot, ThermoCropTask
from .task_panel import TaskPanelMixin

log = logging.getLogger(__name__)

LOG_TAG = "ThermoCrop"
SETTINGS_GROUP = "thermocrop/train"
VARIANTS = ("tpe_sinusoidal", "tpe_recurrent", "tpe_concat", "tpe_fourier", "calendar", "shiftaug", "no_pe")
"""The recommended variant (the shipped model's) first."""
EPOCHS, STEPS, BATCH_SIZE, MAX_PIXELS = 30, 25, 64, 32
"""The default budget: the shipped model's 750 steps of 64 parcels, minutes on a laptop CPU."""
CLASS_MAPS = ("", "france", "denmark", "austria")
CLASS_MAP_LABELS = ("none: the label values are the classes", "France (RPG CODE_CULTU codes)",
                    "Denmark (afgkode codes)", "Austria (SNAR codes)")
CODE_FIELDS = {"code_cultu": "france", "afgkode": "denmark", "snar_code": "austria"}
"""Fields of national registers' crop codes, and the code table each takes."""


@dataclass
class TrainingRequest:
    """What the Train tab hands to the task (plain values and a layer snapshot).

    Attributes:
        parcels: the labelled layer as the worker thread may read it.
        label_field: the field of labels or crop codes; block_field: of spatial blocks, or None.
        class_map: a preset name (``france``...) or "" for labels that are class names.
        scenes: scene files or folders (or a saved item collection); weather: a temperature
            file or a weather service name (``open-meteo``...).
        variant, epochs, steps_per_epoch, batch_size: the training run; max_pixels: pixels
            sampled per parcel and date.
        out: the bundle to write; dataset: the dataset folder to write first.
        init: a model bundle to start from (fine-tuning; its variant is kept), or "" for random
            weights.
    """

    parcels: LayerSnapshot
    label_field: str
    block_field: Optional[str]
    class_map: str
    scenes: list
    weather: str
    variant: str = VARIANTS[0]
    epochs: int = EPOCHS
    steps_per_epoch: int = STEPS
    batch_size: int = BATCH_SIZE
    max_pixels: int = MAX_PIXELS
    out: str = ""
    dataset: str = ""
    init: str = ""

    def training_config(self):
        """The ``TrainingConfig`` of the request (``training.finetune.training_config``, as the command
        line and the Toolbox build it)."""
        from ..training.finetune import training_config

        # Fine-tuning keeps the initial model's variant and pixel sampling, as the other doors do.
        return training_config({"variant": None if self.init else self.variant, "epochs": self.epochs,
                                "steps_per_epoch": self.steps_per_epoch, "batch_size": self.batch_size,
                                "sample_pixels": None if self.init else min(self.max_pixels, 64)},
                               init=self.init or None)


def model_path_beside(folder: Path, stem: str) -> Path:
    """``<folder>/<stem>.tcm``, or ``<stem>_2.tcm``... when that, its dataset folder or one of the
    files a training writes beside it exists."""
    for n in range(1, 1000):
        path = folder / f"{stem}{'' if n == 1 else f'_{n}'}.tcm"
        if not taken_paths(path):
            return path
    raise ValueError(tr("No free model file name in {folder}.").format(folder=folder))


def taken_paths(bundle: Path) -> list[Path]:
    """What exists of the files a training into ``bundle`` writes: the bundle, its dataset folder,
    its metrics, figures and checkpoint (``training.config.output_paths``)."""
    from ..training.config import output_paths

    return [path for path in (*output_paths(bundle).values(), dataset_folder(bundle)) if path.exists()]


def dataset_folder(bundle: Path) -> Path:
    """The training dataset folder kept beside a bundle: ``<stem>_dataset``."""
    return bundle.with_name(f"{bundle.stem}_dataset")


class TrainingTask(ThermoCropTask):
    """Extracts the labelled parcels' pixel sets, estimates the time, trains and saves the bundle.

    ``estimated(text)`` is emitted (to the main thread) once the speed is measured, before the
    training starts. After it ends, ``bundle_path`` and ``metrics`` hold the result, or ``error``
    what went wrong; a failed or cancelled run leaves no dataset folder or model file behind.
    """

    WHAT = "Training"
    estimated = pyqtSignal(str)

    def __init__(self, request: TrainingRequest, on_done: Optional[Callable[["TrainingTask"], None]]):
        super().__init__(tr("ThermoCrop: train a model on {layer}").format(layer=request.parcels.name), on_done)
        self.request = request
        # Files of those names that were there before the run are not the run's to remove.
        self._found = set(taken_paths(Path(request.out)))
        self.bundle_path: Optional[Path] = None
        self.calibrated = False
        """Whether the model written carries a calibration (too few validation parcels: none)."""
        self.metrics: dict = {}
        self.estimate = None

    def work(self, progress) -> None:
        try:
            self._train(progress)
        except BaseException:
            self._remove_outputs()
            raise

    def _train(self, progress) -> None:
        from ..core.extract import extract_to_dataset
        from ..core.parcels import ParcelFields
        from ..core.pixel_sets import open_dataset
        from ..core.scenes.local import find_scenes
        from ..core.settings import ExtractionSettings, PixelSampling
        from ..core.thermal.weather_services import fetch_for_parcels, is_weather_service
        from ..training.experiment import describe_training_estimate, estimate_training
        from ..training.train import train_model

        r = self.request
        config = r.training_config()  # an initial model that cannot be used stops the run here
        # The layer's selected features alone, where some are; named by the layer in messages.
        frame, _ = r.parcels.read(label_field=r.label_field, block_field=r.block_field)
        progress(0.02)
        scenes = r.scenes
        weather = r.weather
        if is_weather_service(weather):
            scenes = find_scenes(scenes)
            weather = str(fetch_for_parcels(weather, frame.geometry, [s.date for s in scenes],
                                            progress=progress.sub(0.02, 0.05)))
        dataset = extract_to_dataset(frame, scenes, weather, r.dataset,
                                     settings=ExtractionSettings(sampling=PixelSampling(max_pixels=r.max_pixels)),
                                     fields=ParcelFields(label_field=r.label_field, block_field=r.block_field,
                                                         class_map=r.class_map or None),
                                     progress=progress.sub(0.05, 0.35))
        data = [open_dataset(dataset)]
        progress.check()
        self.estimate = estimate_training(data, config)
        text = describe_training_estimate(self.estimate)
        log.info("Training %s on %s%s: %s", config.variant, r.parcels.name,
                 f", starting from {Path(r.init).name}" if r.init else "", text)
        self.estimated.emit(text)
        progress(0.4)
        result = train_model(data, r.out, config, show_progress=False, progress=progress.sub(0.4, 1.0),
                             provenance={"train_regions": [r.parcels.name]})
        self.bundle_path, self.metrics = result.bundle_path, result.metrics
        self.calibrated = "calibration" in result.metrics  # recorded with the bundle's (training.results)

    def _remove_outputs(self) -> None:
        """What this run wrote: the dataset folder and the bundle with its side files."""
        from ..training.train import output_paths

        if Path(self.request.dataset) not in self._found:
            shutil.rmtree(self.request.dataset, ignore_errors=True)
        for path in output_paths(Path(self.request.out)).values():
            if Path(path).is_file() and Path(path) not in self._found:
                Path(path).unlink()


class TrainPanel(TaskPanelMixin, QWidget):
    """The Train tab. ``inputs()`` gives the Classify tab's ``(scenes, weather)``; a finished
    training calls ``use_model(path)`` and emits ``trained(path)``.

    Signals:
        trained(str): the bundle written.
        message(str, int): a text and its ``Qgis`` level for the dock's status panel.
    """

    trained = pyqtSignal(str)
    message = pyqtSignal(str, int)

    def __init__(self, inputs: Callable[[], tuple], use_model: Callable[[str], None],
                 parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.inputs, self.use_model = inputs, use_model
        self.task: Optional[TrainingTask] = None
        self._selected = 0
        """The labelled layer's features selected when the training started (0: none, every feature used)."""

        labelled = QGroupBox(tr("Labelled parcels"))
        form = QFormLayout(labelled)
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        form.setRowWrapPolicy(QFormLayout.WrapLongRows)
        self.layer_combo = QgsMapLayerComboBox()
        self.layer_combo.setFilters(QgsMapLayerProxyModel.PolygonLayer)
        self.layer_combo.setToolTip(tr("Polygon layer whose parcels carry a crop label or code"))
        self.label_combo = QgsFieldComboBox()
        self.label_combo.setToolTip(tr("Field of each parcel's crop label (class names or crop codes); parcels "
                                       "with an empty value are left out"))
        self.block_combo = QgsFieldComboBox()
        self.block_combo.setAllowEmptyFieldName(True)
        self.block_combo.setToolTip(tr("Field of each parcel's spatial block (e.g. a 10 km grid cell): training, "
                                       "validation and test are split by block. Empty: a random split"))
        self.class_map = QComboBox()
        for key, label in zip(CLASS_MAPS, CLASS_MAP_LABELS):
            self.class_map.addItem(tr(label), key)
        self.class_map.setToolTip(tr("Map national crop codes to classes with the paper's table for France, "
                                     "Denmark or Austria; codes not in it become 'unknown'"))
        for combo in (self.layer_combo, self.label_combo, self.block_combo, self.class_map):
            combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(8)
        form.addRow(tr("Layer"), self.layer_combo)
        form.addRow(tr("Label field"), self.label_combo)
        form.addRow(tr("Block field"), self.block_combo)
        form.addRow(tr("Crop codes"), self.class_map)

        run = QGroupBox(tr("Training"))
        form = QFormLayout(run)
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        form.setRowWrapPolicy(QFormLayout.WrapLongRows)
        self.variant = QComboBox()
        self.variant.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.variant.setMinimumContentsLength(8)
        for name in VARIANTS:
            self.variant.addItem(name + (tr(" (recommended)") if name == VARIANTS[0] else ""), name)
        self.epochs, self.steps, self.batch_size = (self._spin(v, 1, limit) for v, limit in
                                                    ((EPOCHS, 1000), (STEPS, 5000), (BATCH_SIZE, 1024)))
        budget = QHBoxLayout()
        for spin, tip in ((self.epochs, tr("epochs")), (self.steps, tr("steps per epoch")),
                          (self.batch_size, tr("parcels per step"))):
            spin.setToolTip(tip)
            budget.addWidget(spin)
        self.budget_note = QLabel()
        self.budget_note.setWordWrap(True)
        self.output = QgsFileWidget()
        self.output.setStorageMode(QgsFileWidget.SaveFile)
        self.output.setFilter(tr("ThermoCrop model (*.tcm)"))
        self.output.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.output.lineEdit().setPlaceholderText(tr("empty: beside the project"))
        self.init_model = QgsFileWidget()
        self.init_model.setStorageMode(QgsFileWidget.GetFile)
        self.init_model.setFilter(tr("ThermoCrop model (*.tcm)"))
        self.init_model.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.init_model.lineEdit().setPlaceholderText(tr("empty: from scratch"))
        self.init_model.setToolTip(tr("A model to start from (fine-tuning): with a few dozen labelled parcels per "
                                      "class, starting from the shipped model is far better than from scratch. Its "
                                      "variant, bands and settings are kept, and its classes when yours are among "
                                      "them. Empty: random weights."))
        self.shipped_button = QPushButton(tr("Shipped model"))
        self.shipped_button.setToolTip(tr("Start from the model shipped with the plugin"))
        init_row = QHBoxLayout()
        init_row.addWidget(self.init_model, 1)
        init_row.addWidget(self.shipped_button)
        form.addRow(tr("Start from"), init_row)
        form.addRow(tr("Variant"), self.variant)
        form.addRow(tr("Budget"), budget)
        form.addRow(self.budget_note)
        form.addRow(tr("Model file"), self.output)

        self.train_button = QPushButton(tr("Train"))
        self.cancel_button = QPushButton(tr("Cancel"))
        self.cancel_button.setEnabled(False)
        buttons = QHBoxLayout()
        buttons.addWidget(self.train_button)
        buttons.addWidget(self.cancel_button)
        self.progress = QProgressBar()
        self.progress.setMaximumHeight(18)
        self.status = QLabel(tr("Uses the scenes and weather of the Classify tab; the new model is saved beside "
                                "the project and chosen for the next classification."))
        self.status.setWordWrap(True)

        layout = QVBoxLayout(self)
        layout.addWidget(labelled)
        layout.addWidget(run)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addStretch(1)

        self.layer_combo.layerChanged.connect(self._layer_changed)
        for spin in (self.epochs, self.steps, self.batch_size):
            spin.valueChanged.connect(self._show_budget)
        self.variant.currentIndexChanged.connect(self._show_budget)
        self.init_model.fileChanged.connect(self._init_changed)
        self.shipped_button.clicked.connect(self._use_shipped_model)
        self.train_button.clicked.connect(self.train)
        self.cancel_button.clicked.connect(self.cancel)
        self._layer_changed(self.layer_combo.currentLayer())
        self._show_budget()

    @staticmethod
    def _spin(value: int, low: int, high: int) -> QSpinBox:
        spin = QSpinBox()
        spin.setRange(low, high)
        spin.setValue(value)
        spin.setMinimumWidth(40)
        spin.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        return spin

    # -- inputs --------------------------------------------------------------------------------

    def _use_shipped_model(self) -> None:
        """Start from the shipped L1C ensemble, the model the few-label recipe was measured on."""
        from ..core.model.bundle import ensemble_bundle_path

        self.init_model.setFilePath(str(ensemble_bundle_path()))

    def _init_changed(self, path: str) -> None:
        """A model to start from brings its own variant: the variant box waits until it is cleared."""
        self.variant.setEnabled(not path)
        self._show_budget()

    def set_layer(self, layer: Optional[QgsVectorLayer], label_field: Optional[str] = None,
                  block_field: Optional[str] = None) -> None:
        """Choose the labelled layer and its fields (guessed when None)."""
        self.layer_combo.setLayer(layer)
        self._layer_changed(layer)
        if label_field:
            self.label_combo.setField(label_field)
        if block_field is not None:
            self.block_combo.setField(block_field)

    def _layer_changed(self, layer) -> None:
        self.label_combo.setLayer(layer)
        self.block_combo.setLayer(layer)
        if layer is None:
            return
        names = layer.fields().names()
        kinds = {f.name(): f.type() == QVariant.String for f in layer.fields()}
        self.label_combo.setField(guess_label_field(names, kinds) or "")
        self.block_combo.setField("block" if "block" in names else "")
        preset = CODE_FIELDS.get((self.label_combo.currentField() or "").lower(), "")
        self.class_map.setCurrentIndex(self.class_map.findData(preset))

    def _budget_steps(self) -> int:
        return self.epochs.value() * self.steps.value()

    def _show_budget(self, *args) -> None:
        """The run's steps, and the time they took at the last speed measured here for this variant."""
        steps = self._budget_steps()
        text = tr("{steps:,} steps of {batch} parcels").format(steps=steps, batch=self.batch_size.value())
        ms = QgsSettings().value(f"{SETTINGS_GROUP}/step_ms/{self._speed_key()}", 0.0, type=float)
        if getattr(self, "init_model", None) is not None and self.init_model.filePath().strip():
            # Fine-tuning an ensemble trains each of its members for these steps.
            text += tr(" for each member of the model started from; the time is measured and shown before the "
                       "training starts")
        elif ms > 0:
            text += tr("; about {time} at the {ms:.0f} ms per step measured here last time").format(
                time=_duration(steps * ms / 1000.0), ms=ms)
        else:
            text += tr("; the time is measured and shown before the training starts")
        self.budget_note.setText(f"<small>{text}</small>")

    def _speed_key(self) -> str:
        return f"{self.variant.currentData()}_{self.batch_size.value()}"

    def request(self) -> Optional[TrainingRequest]:
        """The training request from the form, or None with the reason shown."""
        layer = self.layer_combo.currentLayer()
        if layer is None:
            return self._refuse(tr("Choose the labelled parcel layer."))
        label = self.label_combo.currentField()
        if not label:
            return self._refuse(tr("Choose the field of {layer} that holds the crop labels.").format(
                layer=layer.name()))
        block = self.block_combo.currentField() or None
        if block == label:
            return self._refuse(tr("The label and block fields are the same; choose the block field or leave it "
                                   "empty."))
        scenes, weather = self.inputs()
        if not scenes:
            return self._refuse(tr("Tick or add the Sentinel-2 scenes on the Classify tab first."))
        if not weather:
            return self._refuse(tr("Choose the daily temperature file (or a weather service) on the Classify tab "
                                   "first."))
        init = self.init_model.filePath().strip()
        if init and not Path(init).is_file():
            return self._refuse(tr("The model to start from, {path}, does not exist; choose a .tcm file or clear "
                                   "the field to train from scratch.").format(path=init))
        kind = "tuned" if init else self.variant.currentData()
        try:
            out = Path(self.output.filePath()) if self.output.filePath() else \
                model_path_beside(self._model_folder(layer), f"{_safe_stem(layer.name())}_{kind}")
        except ValueError as exc:
            return self._refuse(str(exc))
        if out.suffix.lower() != ".tcm":
            out = out.with_suffix(".tcm")
        taken = taken_paths(out)
        if taken:
            return self._refuse(tr("{path} exists (a training into {out} writes it); choose a new model file.").format(
                path=taken[0], out=out.name))
        selected = list(layer.selectedFeatureIds()) or None  # the selected features alone, where some are
        self._selected = len(selected or ())
        snapshot = LayerSnapshot(QgsVectorLayerFeatureSource(layer), layer.crs(), layer.name(), [], selected)
        return TrainingRequest(snapshot, label, block, self.class_map.currentData(), list(scenes), weather,
                               variant=self.variant.currentData(), epochs=self.epochs.value(),
                               steps_per_epoch=self.steps.value(), batch_size=self.batch_size.value(),
                               out=str(out), dataset=str(dataset_folder(out)), init=init)

    @staticmethod
    def _model_folder(layer: QgsVectorLayer) -> Path:
        """The project's folder; for a project not saved yet, the layer file's folder."""
        home = QgsProject.instance().absolutePath()
        if home:
            return Path(home)
        source = Path(layer.source().split("|")[0])
        if source.is_file():
            return source.parent
        raise ValueError(tr("Save the project first, or choose the model file: {layer} is no file layer.").format(
            layer=layer.name()))

    # -- running -------------------------------------------------------------------------------

    def train(self) -> Optional[TrainingTask]:
        """Start the training in the background; None (with the reason shown) when it cannot."""
        if self.task is not None:
            return None
        request = self.request()
        if request is None:
            return None
        task = TrainingTask(request, self._finished)
        task.estimated.connect(self._estimated)
        task.progressChanged.connect(lambda value: self.progress.setValue(int(value)))
        self.train_button.setEnabled(False)
        self.progress.setValue(0)
        self._show(tr("Extracting the labelled parcels of {layer} …").format(layer=request.parcels.name), Qgis.Info)
        return self.launch(task)

    def _estimated(self, text: str) -> None:
        task = self.task
        if task is not None and task.estimate is not None:
            settings = QgsSettings()
            settings.setValue(f"{SETTINGS_GROUP}/step_ms/{self._speed_key()}", task.estimate.step_s * 1000.0)
        self._show(tr("Training: {estimate}. Cancel stops it and leaves nothing behind.").format(estimate=text),
                   Qgis.Info)

    def _finished(self, task: TrainingTask) -> None:
        self.task_ended()
        self.train_button.setEnabled(True)
        self._show_budget()
        if task.cancelled:
            self._show(tr("Training cancelled; no model or dataset was written."), Qgis.Info)
            return
        if task.bundle_path is None:
            self._show(tr("Training failed: {error}").format(error=task.error), Qgis.Critical)
            return
        path = str(task.bundle_path)
        self.progress.setValue(100)
        scores = ", ".join(f"{key.replace('_', ' ')} {value:.2f}" for key, value in sorted(task.metrics.items())
                           if isinstance(value, float) and ("f1" in key or "accuracy" in key))
        self.use_model(path)
        text = tr("Model saved to {path} and chosen for the next classification{scores}.").format(
            path=path, scores=f" ({scores})" if scores else "")
        if self._selected:
            text += " " + tr("Only the {n} selected features were used; clear the selection to train on every "
                             "labelled parcel.").format(n=self._selected)
        if not task.calibrated:
            text += " " + tr("It carries no calibration (its validation blocks held too few labelled parcels): its "
                             "confidence is the network's raw probability and runs with it make no prediction sets. "
                             "Calibrate it on the Accuracy tab with reference parcels.")
        self._show(text, Qgis.Success if task.calibrated else Qgis.Warning)
        QgsMessageLog.logMessage(tr("Trained {path}").format(path=path), LOG_TAG, Qgis.Info)
        self.trained.emit(path)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return tr("{n:.0f} s").format(n=seconds)
    if seconds < 5400:
        return tr("{n:.0f} min").format(n=seconds / 60)
    return tr("{n:.1f} h").format(n=seconds / 3600)


def _safe_stem(name: str) -> str:
    """A layer name as a file name stem: letters, digits, '-' and '_' only."""
    stem = "".join(c if c.isalnum() or c in "-_" else "_" for c in name).strip("_")
    return stem or "model"
