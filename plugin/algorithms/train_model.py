"""``thermocrop:trainmodel``: dataset folder(s) -> a model bundle, on CPU or GPU."""

from __future__ import annotations

import os

from qgis.core import (
    QgsProcessingException,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFileDestination,
    QgsProcessingParameterString,
)

from ..i18n import tr
from .base import WIDGETS_MODULE, ThermoCropAlgorithm

VARIANTS = ("tpe_recurrent", "tpe_sinusoidal", "tpe_concat", "tpe_fourier", "calendar", "shiftaug", "no_pe")
DEVICES = ("auto", "cpu", "cuda")
RECOMMENDED_VARIANT = "tpe_sinusoidal"
"""The shipped model's variant, first of the seven in the leave-one-region-out experiment."""
EPOCHS, STEPS, BATCH_SIZE = 30, 25, 64
"""The default budget: the shipped model's (750 steps of 64 parcels), minutes on a laptop CPU. The
paper's 100 x 500 x 128 takes hours there; give it for a GPU or a long run."""


class TrainModel(ThermoCropAlgorithm):
    """Train a PSE+LTAE model on exported datasets and save it as a bundle."""

    NAME = "trainmodel"
    DISPLAY = "Train model"
    DATASETS = "DATASETS"
    VARIANT = "VARIANT"
    EPOCHS = "EPOCHS"
    STEPS = "STEPS"
    BATCH_SIZE = "BATCH_SIZE"
    DEVICE = "DEVICE"
    CLASSES = "CLASSES"
    SUMMARY = ("Trains a PSE+LTAE classifier with the chosen positional encoding on one or more "
               "datasets written by Export training data, and saves a model bundle (.tcm) that "
               "Classify parcels and the dock can use.")
    HELP = {
        "DATASETS": "Dataset folders, separated by ';' (from Export training data); '…' adds one with a folder "
                    "dialog.",
        "VARIANT": "Positional encoding: thermal (tpe_*), calendar days, ShiftAug or none. tpe_sinusoidal, the "
                   "shipped model's, is recommended (docs/training.md).",
        "EPOCHS": "Training epochs (default 30, the shipped model's; the paper trains 100). The time the run "
                  "will take is measured and logged before it starts.",
        "STEPS": "Optimiser steps per epoch (default 25; the paper uses 500).",
        "BATCH_SIZE": "Parcels per optimiser step (default 64; the paper uses 128).",
        "DEVICE": "auto uses a CUDA GPU when there is one, else the CPU.",
        "CLASSES": "The model's classes, separated by commas (e.g. corn,meadow,winter_wheat,unknown). Empty: "
                   "every class of the datasets. Parcels of other classes are left out of training.",
        "OUTPUT": "Model bundle file (.tcm) to write.",
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        datasets = QgsProcessingParameterString(self.DATASETS, "Dataset folders")
        # A folder picker in the dialog; the value stays folders separated by ';' for qgis_process.
        datasets.setMetadata({"widget_wrapper": {"class": f"{WIDGETS_MODULE}.DatasetFoldersWrapper"}})
        self.add(datasets)
        self.add(QgsProcessingParameterEnum(self.VARIANT, "Model variant", options=list(VARIANTS),
                                            defaultValue=VARIANTS.index(RECOMMENDED_VARIANT)))
        self.add(self.number(self.EPOCHS, "Epochs", "epochs", EPOCHS))
        self.add(self.number(self.STEPS, "Steps per epoch", "steps_per_epoch", STEPS))
        self.add(self.number(self.BATCH_SIZE, "Batch size", "batch_size", BATCH_SIZE))
        self.add(QgsProcessingParameterEnum(self.DEVICE, "Device", options=list(DEVICES), defaultValue=0))
        self.add(QgsProcessingParameterString(self.CLASSES, "Classes (empty: all classes of the datasets)",
                                              optional=True))
        self.add(QgsProcessingParameterFileDestination(self.OUTPUT, "Model bundle",
                                                       fileFilter="ThermoCrop model (*.tcm)"))

    def _datasets(self, parameters, context) -> list[str]:
        text = self.parameterAsString(parameters, self.DATASETS, context)
        return [p.strip() for p in text.split(";") if p.strip()]

    def check_datasets(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: at least one dataset folder, and every one exists."""
        datasets = self._datasets(parameters, context)
        if not datasets:
            return False, tr("Give at least one dataset folder (separate several with ';').")
        return self.check_files(datasets, tr("dataset folder"))

    def check_output(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the model bundle can be written there (not over a dataset)."""
        return self.check_output_file(self.parameterAsFileOutput(parameters, self.OUTPUT, context),
                                      what="model bundle", suffixes=(".tcm",),
                                      inputs=self._datasets(parameters, context))

    CHECKS = (check_datasets, check_output)

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        datasets = self._datasets(parameters, context)
        variant = VARIANTS[self.parameterAsEnum(parameters, self.VARIANT, context)]
        epochs = self.parameterAsInt(parameters, self.EPOCHS, context)
        device = DEVICES[self.parameterAsEnum(parameters, self.DEVICE, context)]
        out = self.parameterAsFileOutput(parameters, self.OUTPUT, context)
        if os.path.exists(out):
            raise QgsProcessingException(tr("{out} already exists; choose a new model file.").format(out=out))

        steps = self.parameterAsInt(parameters, self.STEPS, context)
        batch_size = self.parameterAsInt(parameters, self.BATCH_SIZE, context)
        text = self.parameterAsString(parameters, self.CLASSES, context)
        classes = tuple(c.strip() for c in text.split(",") if c.strip()) or None

        def train():
            import torch

            from ...core.pixel_sets import open_dataset
            from ...training.experiment import describe_training_estimate, estimate_training
            from ...training.train import TrainingConfig, train_model

            if device == "cuda" and not torch.cuda.is_available():
                raise QgsProcessingException(tr("No CUDA GPU is available to this QGIS; choose the cpu or auto "
                                                "device."))
            data = [open_dataset(path) for path in datasets]
            config = TrainingConfig(variant=variant, epochs=epochs, steps_per_epoch=steps, batch_size=batch_size,
                                    device=device, classes=classes)
            feedback.pushInfo(tr("Training {variant} on {n} parcels, {epochs} epochs of {steps} steps, device "
                                 "{device}").format(variant=variant, n=sum(len(d.parcel_ids) for d in data),
                                                    epochs=epochs, steps=steps, device=device))
            found = sorted({c for d in data for c in d.classes})
            feedback.pushInfo(tr("Classes of the datasets: {classes}").format(classes=", ".join(found)))
            estimate = estimate_training(data, config)
            feedback.pushInfo(tr("Estimate: {estimate}").format(estimate=describe_training_estimate(estimate)))
            if estimate.long_on_cpu:
                feedback.pushWarning(tr("This budget takes long on the CPU; fewer epochs or steps per epoch "
                                        "finish sooner (the defaults take minutes)."))
            return train_model(data, out, config, show_progress=False, progress=self.progress(feedback))

        result = self.run_core(train)
        feedback.pushInfo(tr("Model classes ({n}): {classes}").format(n=len(result.metrics["classes"]),
                                                                    classes=", ".join(result.metrics["classes"])))
        for key, value in result.metrics.items():
            if isinstance(value, (int, float, str)):
                feedback.pushInfo(f"  {key}: {value}")
        return {self.OUTPUT: str(result.bundle_path)}
