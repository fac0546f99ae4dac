"""``thermocrop:trainmodel``: dataset folder(s) -> a model bundle, on CPU or GPU."""

from __future__ import annotations

import os

from qgis.core import (
    QgsProcessingException,
    QgsProcessingParameterEnum,
    QgsProcessingParameterFile,
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
    INIT_MODEL = "INIT_MODEL"
    SUMMARY = ("Trains a PSE+LTAE classifier with the chosen positional encoding on one or more "
               "datasets written by Export training data, and saves a model bundle (.tcm) that "
               "Classify parcels and the dock can use.")
    HELP = {
        "DATASETS": "Dataset folders, separated by ';' (from Export training data); '…' adds one with a folder "
                    "dialog.",
        "VARIANT": "Positional encoding: thermal (tpe_*), calendar days, ShiftAug or none. tpe_sinusoidal, the "
                   "shipped model's, is recommended (docs/training.md). With an initial model its variant holds: "
                   "the default stands for it, another choice than the model's is refused.",
        "EPOCHS": "Training epochs (default 30, the shipped model's; the paper trains 100). The time the run "
                  "will take is measured and logged before it starts.",
        "STEPS": "Optimiser steps per epoch (default 25; the paper uses 500).",
        "BATCH_SIZE": "Parcels per optimiser step (default 64; the paper uses 128).",
        "DEVICE": "auto uses a CUDA GPU when there is one, else the CPU.",
        "CLASSES": "The model's classes, separated by commas (e.g. corn,meadow,winter_wheat,unknown). Empty: "
                   "every class of the datasets. Parcels of other classes are left out of training.",
        "INIT_MODEL": "A model bundle (.tcm) to start from (fine-tuning), e.g. the shipped model. Its variant, "
                      "settings, bands, input scaling and GDD settings are kept, its classes too when the datasets' "
                      "classes are among them (else a new output layer learns the new list), and it trains with the "
                      "few-label recipe (docs/training.md). Empty: from random weights.",
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
        self.add(QgsProcessingParameterFile(self.INIT_MODEL, "Initial model (empty: from random weights)",
                                            fileFilter="ThermoCrop model (*.tcm)", optional=True))
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
        init = self.parameterAsFile(parameters, self.INIT_MODEL, context)
        return self.check_output_file(self.parameterAsFileOutput(parameters, self.OUTPUT, context),
                                      what="model bundle", suffixes=(".tcm",),
                                      inputs=self._datasets(parameters, context) + ([init] if init else []))

    def check_init_model(self, parameters, context) -> tuple[bool, str]:
        """``(ok, message)``: the initial model, when given, exists."""
        init = self.parameterAsFile(parameters, self.INIT_MODEL, context)
        return self.check_files([init], tr("initial model")) if init else (True, "")

    def training_config(self, parameters, context):
        """The ``TrainingConfig`` of the parameters (``training.finetune.training_config``, as the
        command line and the dock build it)."""
        from ...training.finetune import training_config

        init = self.parameterAsFile(parameters, self.INIT_MODEL, context) or None
        variant = VARIANTS[self.parameterAsEnum(parameters, self.VARIANT, context)]
        if init and variant == RECOMMENDED_VARIANT:
            variant = None  # the default stands for the initial model's variant; a choice of another is checked
        text = self.parameterAsString(parameters, self.CLASSES, context)
        given = {"variant": variant, "epochs": self.parameterAsInt(parameters, self.EPOCHS, context),
                 "steps_per_epoch": self.parameterAsInt(parameters, self.STEPS, context),
                 "batch_size": self.parameterAsInt(parameters, self.BATCH_SIZE, context),
                 "device": DEVICES[self.parameterAsEnum(parameters, self.DEVICE, context)],
                 "classes": tuple(c.strip() for c in text.split(",") if c.strip()) or None}
        return training_config(given, init=init)

    CHECKS = (check_datasets, check_init_model, check_output)

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        datasets = self._datasets(parameters, context)
        out = self.parameterAsFileOutput(parameters, self.OUTPUT, context)
        if os.path.exists(out):
            raise QgsProcessingException(tr("{out} already exists; choose a new model file.").format(out=out))

        def train():
            import torch

            from ...core.pixel_sets import open_dataset
            from ...training.experiment import describe_training_estimate, estimate_training
            from ...training.train import train_model

            config = self.training_config(parameters, context)
            if config.device == "cuda" and not torch.cuda.is_available():
                raise QgsProcessingException(tr("No CUDA GPU is available to this QGIS; choose the cpu or auto "
                                                "device."))
            data = [open_dataset(path) for path in datasets]
            if config.init:
                feedback.pushInfo(tr("Fine-tuning {init} with the few-label recipe (learning rate {lr:g})").format(
                    init=config.init, lr=config.lr))
            feedback.pushInfo(tr("Training {variant} on {n} parcels, {epochs} epochs of {steps} steps, device "
                                 "{device}").format(variant=config.variant, n=sum(len(d.parcel_ids) for d in data),
                                                    epochs=config.epochs, steps=config.steps_per_epoch,
                                                    device=config.device))
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
