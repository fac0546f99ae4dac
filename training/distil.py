"""Distillation: one model (the student) trained to give the class probabilities of another
bundle (the teacher, typically an ensemble) on the training samples, so that one model's work
gives what the teacher gives.

A distilled run is an ordinary training run (``train.train_model``) with ``config.teacher`` set:
the student takes the teacher's variant, hyper-parameters (one member), classes, bands, input
scaling and GDD settings, and each step's loss is the Kullback-Leibler divergence from the
teacher's temperature-softened probabilities to the student's on the same batch (scaled by the
temperature squared, as usual, so its gradients keep their size across temperatures), plus, with
``config.distil_hard_weight`` > 0, the focal loss on the labels.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..core.errors import DatasetError, InputError
from ..core.model.bundle import InputScaling, ModelBundle, load_bundle
from .config import TrainingConfig, TrainingSplit
from .finetune import SAMPLING_KEPT, bundle_digest
from .losses import FocalLoss

log = logging.getLogger(__name__)

__all__ = ["DISTIL_RECIPE", "DistillationLoss", "Teacher", "distillation_config", "load_teacher", "teacher_classes",
           "teacher_provenance"]

DISTIL_RECIPE: dict[str, Any] = {"distil_temperature": 2.0, "distil_hard_weight": 0.0, "distil_noise": 0.0}
"""What a distillation run uses unless told otherwise: probabilities softened at temperature 2 and
no label term (the teacher's probabilities carry the labels' information and more)."""


@dataclass
class Teacher:
    """The bundle whose probabilities a run learns, checked against the run's data.

    Attributes:
        bundle: the loaded bundle, its model in eval mode on the run's device.
        name: its file name (for messages).
    """

    bundle: ModelBundle
    name: str

    @property
    def scaling(self) -> InputScaling:
        """The teacher's input scaling: the student is fed the same inputs."""
        return self.bundle.config.scaling

    @torch.no_grad()
    def logits(self, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
        """``(B, K)`` teacher logits (an ensemble's log mean probability) of a training batch."""
        return self.bundle.fast_model()(*inputs).float()


def teacher_provenance(path: str) -> dict[str, Any]:
    """What a distilled bundle records of its teacher: file name and sha256."""
    return {"teacher": {"file": Path(path).name, "sha256": bundle_digest(Path(path))}}


def distillation_config(given: Optional[Mapping[str, Any]], teacher: str) -> TrainingConfig:
    """The settings of a run that distils ``teacher``: its variant and hyper-parameters (one
    member), the sampling settings and budget of its own training, then ``DISTIL_RECIPE``, then
    the options ``given`` (None values count as not set).

    Raises:
        InputError: an option contradicts the teacher (another variant, or several members).
        BundleError: ``teacher`` is no readable bundle.
    """
    given = {k: v for k, v in (given or {}).items() if v is not None}
    bundle = load_bundle(teacher).config
    name = Path(teacher).name
    if given.get("variant") not in (None, bundle.variant):
        raise InputError(f"The variant {given['variant']} contradicts the teacher {name}, a {bundle.variant} model: "
                         "the student has the teacher's variant; leave the variant out.")
    if given.get("members") not in (None, 1):
        raise InputError("A distilled model is one model: leave --members out when a teacher is given.")
    if given.get("init"):
        raise InputError("Give either an initial model or a teacher, not both.")
    hp = {k: v for k, v in bundle.hyperparameters.items() if k != "members"}
    trained = (bundle.provenance or {}).get("training") or {}
    kept = {k: trained[k] for k in (*SAMPLING_KEPT, "epochs", "steps_per_epoch", "batch_size") if k in trained}
    settings = {**kept, **DISTIL_RECIPE, **given, "variant": bundle.variant, "members": 1,
                "model_settings": {**hp, **(given.get("model_settings") or {})}, "teacher": str(teacher)}
    return TrainingConfig(**settings)


def teacher_classes(config: TrainingConfig) -> TrainingConfig:
    """``config`` with the teacher's class list: the student's outputs are the teacher's, and
    parcels of other classes are left out of training and validation.

    Raises:
        InputError: a class list was given that is not the teacher's.
    """
    known = tuple(load_bundle(config.teacher).classes)
    if config.classes is not None and tuple(config.classes) != known:
        raise InputError(f"The classes {list(config.classes)} are not those of the teacher "
                         f"{Path(config.teacher).name} ({list(known)}): a distilled model has its teacher's "
                         "classes; leave --classes out.")
    return replace(config, classes=known)


def load_teacher(config: TrainingConfig, split: TrainingSplit, bands: Sequence[str],
                 device: torch.device) -> Teacher:
    """The bundle ``config.teacher`` on ``device``, checked against the run's data.

    Raises:
        DatasetError: data whose bands, classes or GDD settings differ from the teacher's.
    """
    bundle = load_bundle(config.teacher)
    name = Path(config.teacher).name
    bc = bundle.config
    if tuple(bands) != tuple(bc.bands):
        raise DatasetError(f"The training data have the bands {list(bands)}, the teacher {name} takes "
                           f"{list(bc.bands)}; extract the data with the teacher's bands, in its order.")
    if tuple(split.classes) != tuple(bc.classes):
        raise DatasetError(f"The run's classes {list(split.classes)} are not the teacher's {list(bc.classes)}.")
    gdd = {k: bc.gdd.get(k) for k in split.gdd}
    if gdd != split.gdd:
        raise DatasetError(f"The training data were extracted with the GDD settings {split.gdd}, the teacher "
                           f"{name} uses {bc.gdd}; extract them again with the teacher's settings.")
    bundle.model.to(device).eval()
    bundle.fast_model()  # BatchNorm folded into the linear layers, built here on the run's device
    log.info("Distilling %s (%d parameters) at temperature %.2f, label weight %.2f, input noise %.2f", name,
             sum(p.numel() for p in bundle.model.parameters()), config.distil_temperature, config.distil_hard_weight,
             config.distil_noise)
    return Teacher(bundle, name)


class DistillationLoss(nn.Module):
    """``T**2 * KL(teacher_T || student_T) + hard_weight * focal(student, labels)`` over a batch,
    with ``x_T = softmax(logits / T)``.

    ``perturb`` moves a batch's inputs away from the training samples before both models see
    them, so that the student also learns the teacher where no training sample lies.

    Args:
        teacher: the teacher, whose model sees the same inputs as the student.
        temperature: T (> 0); 1 matches the probabilities as they are, higher also the ranks
            of the unlikely classes.
        hard_weight: weight of the focal loss on the labels (0: none).
        gamma: focal loss gamma.
        noise: standard deviation of the perturbation (in units of the scaled inputs); 0: none.
    """

    def __init__(self, teacher: Teacher, temperature: float = 2.0, hard_weight: float = 0.0,
                 gamma: float = 1.0, noise: float = 0.0) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError("the distillation temperature must be above 0")
        self.teacher = teacher
        self.temperature = float(temperature)
        self.hard_weight = float(hard_weight)
        self.focal = FocalLoss(gamma)
        self.noise = float(noise)

    def perturb(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """The batch with Gaussian noise of ``noise`` added to the pixels ``(B, T, C, S)``: one
        draw per parcel and band for the whole season (an offset, as a sensor or atmosphere would
        give) and one per parcel, date and band, each the same for every pixel of that date (a
        parcel-mean sample stays one). Draws from torch's global generator (the training loop
        seeds it per epoch)."""
        if self.noise <= 0:
            return inputs
        pixels = inputs[0]
        b, t, c, _ = pixels.shape
        offset = torch.randn(b, 1, c, 1, device=pixels.device)
        per_date = torch.randn(b, t, c, 1, device=pixels.device)
        noisy = pixels + self.noise * (offset + per_date) / 2 ** 0.5
        return [noisy * inputs[1].unsqueeze(2).to(noisy.dtype), *inputs[1:]]

    def forward(self, logits: torch.Tensor, target: torch.Tensor,
                inputs: Sequence[torch.Tensor]) -> torch.Tensor:
        """Loss of the student's ``logits (B, K)`` on the batch ``inputs`` (the five tensors of the
        model's call) with labels ``target (B,)``; a scalar."""
        t = self.temperature
        soft = F.log_softmax(self.teacher.logits(inputs) / t, dim=1)
        student = F.log_softmax(logits.float() / t, dim=1)
        loss = t * t * F.kl_div(student, soft, log_target=True, reduction="batchmean")
        if self.hard_weight > 0:
            loss = loss + self.hard_weight * self.focal(logits, target)
        return loss
