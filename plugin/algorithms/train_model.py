"""``thermocrop:trainmodel``: dataset folder(s) -> a model bundle, on CPU or GPU."""

from __future__ import annotations

import inspect
import os

from qgis.core import (
    QgsProcessingException,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFile,
    QgsProcessingParameterFileDestination,
    QgsProcessingParameterNumber,
    QgsProcessingParameterString,
)

from .base import ThermoCropAlgorithm

VARIANTS = ("tpe_recurrent", "tpe_sinusoidal", "tpe_concat", "tpe_fourier", "calendar", "shiftaug", "no_pe")
DEVICES = ("auto", "cpu", "cuda")


class TrainModel(ThermoCropAlgorithm):
    """Train a PSE+LTAE model on exported datasets and save it as a bundle."""

    NAME = "trainmodel"
    DISPLAY = "Train model"
    SUMMARY = ("Trains a PSE+LTAE classifier with the chosen positional encoding on one or more "
               "datasets written by Export training data, and saves a model bundle (.tcm) that "
               "Classify parcels and the dock can use.")
    HELP = {
        "DATASETS": "Dataset folders, separated by ';' (from Export training data).",
        "VARIANT": "Positional encoding: thermal (tpe_*), calendar days, ShiftAug or none.",
        "EPOCHS": "Passes over the training data.",
        "DEVICE": "auto uses a CUDA GPU when there is one, else the CPU.",
        "OUTPUT": "Model bundle file (.tcm) to write.",
    }

    def initAlgorithm(self, config=None):  # noqa: N802
        self.add(QgsProcessingParameterString("DATASETS", "Dataset folders"))
        self.add(QgsProcessingParameterEnum("VARIANT", "Model variant", options=list(VARIANTS), defaultValue=0))
        self.add(QgsProcessingParameterNumber("EPOCHS", "Epochs", defaultValue=20, minValue=1, maxValue=10000))
        self.add(QgsProcessingParameterEnum("DEVICE", "Device", options=list(DEVICES), defaultValue=0))
        self.add(QgsProcessingParameterFileDestination("OUTPUT", "Model bundle", fileFilter="ThermoCrop model (*.tcm)"))

    def _datasets(self, parameters, context) -> list[str]:
        text = self.parameterAsString(parameters, "DATASETS", context)
        return [p.strip() for p in text.split(";") if p.strip()]

    def checkParameterValues(self, parameters, context):  # noqa: N802
        ok, message = super().checkParameterValues(parameters, context)
        if not ok:
            return ok, message
        datasets = self._datasets(parameters, context)
        if not datasets:
            return False, "Give at least one dataset folder (separate several with ';')."
        return self.check_files(datasets, "dataset folder")

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        datasets = self._datasets(parameters, context)
        variant = VARIANTS[self.parameterAsEnum(parameters, "VARIANT", context)]
        epochs = self.parameterAsInt(parameters, "EPOCHS", context)
        device = DEVICES[self.parameterAsEnum(parameters, "DEVICE", context)]
        out = self.parameterAsFileOutput(parameters, "OUTPUT", context)
        if os.path.exists(out):
            raise QgsProcessingException(f"{out} already exists; choose a new model file.")

        def train():
            import torch

            from ...training.train import train_model

            chosen = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
            if chosen == "cuda" and not torch.cuda.is_available():
                raise QgsProcessingException("No CUDA GPU is available to this QGIS; choose the CPU device.")
            feedback.pushInfo(f"Training {variant} on {chosen} for {epochs} epochs")
            options = {"epochs": epochs, "device": chosen, "progress": self.progress(feedback)}
            accepted = inspect.signature(train_model).parameters
            return train_model(datasets, variant, out, **{k: v for k, v in options.items() if k in accepted})

        self.run_core(train)
        return {"OUTPUT": out}
