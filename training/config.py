"""What a training run is given and what it gives back: its settings (``TrainingConfig``), the
split of its data into training, validation and test rows, the files it writes beside the
bundle and the device it runs on. ``train`` and ``ensemble`` both build on these."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import torch

from ..core.errors import DatasetError
from ..core.model.networks import VARIANTS
from ..core.pixel_sets import PixelSets
from .datasets import SPLIT_FRACTIONS, align_classes, check_bands, gdd_settings, model_classes, split_blocks
from .sampling import usable_parcels


@dataclass
class TrainingConfig:
    """Settings of one training run (paper values as defaults).

    Attributes:
        variant: model variant, one of ``core.model.networks.VARIANTS``.
        epochs: epochs (paper 100).
        steps_per_epoch: optimiser steps per epoch (paper 500).
        batch_size: parcels per step (paper 128).
        sample_pixels: S, random pixels per parcel (paper 64).
        sample_dates: T, random dates per parcel kept in order (paper 30).
        lr: Adam learning rate.
        weight_decay: Adam weight decay.
        gamma: focal loss gamma.
        max_shift: ShiftAug range in days (used by the "shiftaug" variant only).
        mean_pixel_share: share of training samples whose pixels all equal the parcel mean of
            their date, so that the model also meets per-parcel mean inputs (S = 1); 0 in
            the paper's recipe.
        season_window_share: share of training samples cut to a random part of the season
            (starting in the first third of the dates, ending from ``season_window_end`` of
            them to the last), so that partial seasons are met too; 0 in the paper's recipe.
        season_window_end: the earliest end of a cut window, as a share of the span of the
            dates (0.5: the window ends in the second half of the season).
        gdd_floor: the acquisitions of a training sample below this many GDD are left out (after
            its season window), as a bundle's GDD floor leaves them out of a classification
            (``core.model.season_floor``); 0: none. The model written does not carry the floor:
            give it one with ``scripts/gdd_floor.py set``.
        season_cuts: the cuts through the season (every ``1 / season_cuts`` of its GDD) at which
            the finished model's accuracy on the validation blocks is recorded in its bundle
            (``core.model.season_curve``).
        season_level: the OA recorded as the model's level; None: 90 % of its whole-season OA
            on the validation blocks.
        seed: seed of the split, the initial weights and the sampling.
        split_seed: seed of the block split and the input scaling alone, when it is not
            ``seed`` (None): an ensemble's members share one split and differ in the rest.
        members: train this many models on one split, with seeds ``seed``, ``seed + 1``, ...,
            and keep the average of their class probabilities (``training.ensemble``).
        device: "auto" (CUDA when present), "cpu" or "cuda".
        amp: mixed precision on CUDA.
        classes: the model's class list; None takes the union of the training datasets'
            classes. With a list, parcels of other classes are left out of training and
            validation.
        model_settings: ``core.model.networks.ModelConfig`` fields other than the defaults, e.g.
            ``{"dropout": 0.0}``; stored in the bundle with the rest of the model config.
        init: a model bundle whose weights start the run (fine-tuning, ``training.finetune``);
            None starts from random weights. Its variant, hyper-parameters, bands, input
            scaling and GDD settings are kept.
        init_member: the member of an ensemble ``init`` that starts this run (set for each
            member of a fine-tuned ensemble by ``training.ensemble.member_configs``).
        freeze_pixel_encoder: keep the pixel-set encoder's weights as ``init`` has them (its
            BatchNorm statistics still follow the new data).
        init_anchor: strength of the pull of the weights toward those of ``init`` (an L2
            penalty on their difference, ``init_anchor / 2 * sum((w - w_init) ** 2)``); 0: none.
        test_split: hold out 20 % of the blocks to score the model at the end; False lets those
            blocks train too (few labels) and scores the model on the validation blocks.
        teacher: a model bundle (typically an ensemble) whose class probabilities this model
            learns (distillation, ``training.distil``); None trains on the labels alone. The
            teacher's classes, bands, input scaling and GDD settings are kept.
        distil_temperature: the temperature that softens the teacher's and the student's
            probabilities in the distillation loss.
        distil_hard_weight: weight of the focal loss on the labels beside the distillation loss
            (0: the teacher alone).
        distil_noise: standard deviation of the noise added to the scaled pixels of each
            distillation batch before the teacher and the student see it (0: none).
    """

    variant: str = "tpe_recurrent"
    epochs: int = 100
    steps_per_epoch: int = 500
    batch_size: int = 128
    sample_pixels: int = 64
    sample_dates: int = 30
    lr: float = 1e-3
    weight_decay: float = 1e-4
    gamma: float = 1.0
    max_shift: int = 60
    mean_pixel_share: float = 0.0
    season_window_share: float = 0.0
    season_window_end: float = 0.5
    gdd_floor: float = 0.0
    season_cuts: int = 20
    season_level: Optional[float] = None
    seed: int = 0
    split_seed: Optional[int] = None
    members: int = 1
    device: str = "auto"
    amp: bool = False
    classes: Optional[tuple[str, ...]] = None
    model_settings: dict[str, Any] = field(default_factory=dict)
    init: Optional[str] = None
    init_member: Optional[int] = None
    freeze_pixel_encoder: bool = False
    init_anchor: float = 0.0
    test_split: bool = True
    teacher: Optional[str] = None
    distil_temperature: float = 2.0
    distil_hard_weight: float = 0.0
    distil_noise: float = 0.0

    @property
    def data_seed(self) -> int:
        """The seed of the block split and the input scaling."""
        return self.seed if self.split_seed is None else self.split_seed

    def __post_init__(self) -> None:
        if self.classes is not None:
            self.classes = tuple(str(c) for c in self.classes)
        if self.variant not in VARIANTS:
            raise ValueError(f"Unknown variant {self.variant!r}; choose one of {VARIANTS}.")
        for name in ("epochs", "steps_per_epoch", "batch_size", "sample_pixels", "sample_dates", "members",
                     "season_cuts"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("mean_pixel_share", "season_window_share", "season_window_end"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie between 0 and 1")
        if self.gdd_floor < 0:
            raise ValueError("gdd_floor must be at least 0")
        if self.season_level is not None and not 0.0 <= self.season_level <= 1.0:
            raise ValueError("season_level must lie between 0 and 1")
        if self.init is not None:
            self.init = str(self.init)
        if self.init_anchor < 0:
            raise ValueError("init_anchor must be at least 0")
        if self.teacher is not None:
            self.teacher = str(self.teacher)
            if self.members != 1 or self.init is not None:
                raise ValueError("a distilled model is one model trained from scratch: no members, no init")
        if self.distil_temperature <= 0 or self.distil_hard_weight < 0 or self.distil_noise < 0:
            raise ValueError("distil_temperature must be above 0, distil_hard_weight and distil_noise at least 0")
        if self.init is None and (self.freeze_pixel_encoder or self.init_anchor or self.init_member is not None):
            raise ValueError("freeze_pixel_encoder, init_anchor and init_member need an initial model (init)")


def stored_config(data: dict[str, Any]) -> dict[str, Any]:
    """The settings a checkpoint or metrics file stored, with the defaults of settings added since."""
    defaults = {f.name: f.default for f in fields(TrainingConfig)
                if f.name not in data and f.default is not MISSING}
    return {**defaults, **data}


@dataclass
class TrainingResult:
    """What a run produced.

    Attributes:
        bundle_path: the saved bundle (best validation checkpoint).
        metrics: the content of ``metrics.json``.
        files: every output file by role.
    """

    bundle_path: Path
    metrics: dict[str, Any]
    files: dict[str, Path] = field(default_factory=dict)


def resolve_device(device: str) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("CUDA was asked for but PyTorch sees no GPU; use --device cpu.")
    return torch.device(device)


def output_paths(out: Path) -> dict[str, Path]:
    """Files written next to the bundle ``out`` (e.g. ``model.tcm``)."""
    stem = out.with_suffix("")
    return {"bundle": out, "metrics": Path(f"{stem}.metrics.json"),
            "confusion": Path(f"{stem}.confusion.png"), "curve": Path(f"{stem}.curve.png"),
            "checkpoint": Path(f"{stem}.ckpt")}


@dataclass
class TrainingSplit:
    """The data of a run: the datasets on the model's classes and their rows by role."""

    datasets: list[PixelSets]
    classes: tuple[str, ...]
    gdd: dict[str, Any]
    train_rows: list[np.ndarray]
    val_sets: list[PixelSets]
    val_rows: list[np.ndarray]
    test_sets: list[PixelSets]
    test_rows: list[np.ndarray]


def data_provenance(datasets: Sequence[PixelSets]) -> dict[str, Any]:
    """What a bundle records about its training data: the scene levels, when the datasets name any."""
    levels = sorted({lv for ps in datasets for lv in (ps.meta or {}).get("levels", [])})
    return {"scene_levels": levels} if levels else {}


def training_split(datasets: Sequence[PixelSets], config: TrainingConfig,
                   val_datasets: Optional[Sequence[PixelSets]] = None) -> TrainingSplit:
    """Classes, GDD settings and train / validation / test rows of a run (see ``train_model``).

    Raises:
        DatasetError: bands or GDD settings differ, or the validation split is empty.
    """
    check_bands(list(datasets) + list(val_datasets or []), "training")
    classes = model_classes(datasets, config.classes)
    # A chosen list leaves the other classes out; the union leaves nothing out of training, and
    # validation data must not hold classes the model cannot predict.
    datasets = align_classes(datasets, classes, unseen="drop")
    val_datasets = align_classes(val_datasets, classes, "drop" if config.classes else "error") \
        if val_datasets else None
    gdd = gdd_settings(list(datasets) + list(val_datasets or []))
    k = len(classes)
    if val_datasets:
        train_rows = [usable_parcels(ps, k) for ps in datasets]
        val_sets, val_rows = list(val_datasets), [usable_parcels(ps, k) for ps in val_datasets]
        test_sets, test_rows = [], []
    else:
        fractions = SPLIT_FRACTIONS if config.test_split else (1.0 - SPLIT_FRACTIONS[1], SPLIT_FRACTIONS[1], 0.0)
        splits = split_blocks(datasets, k, config.data_seed, fractions)
        train_rows = [s[0] for s in splits]
        val_sets, val_rows = list(datasets), [s[1] for s in splits]
        test_sets, test_rows = list(datasets), [s[2] for s in splits]
    if sum(len(r) for r in val_rows) == 0:
        raise DatasetError("The validation split is empty; give --val-data or more blocks.")
    return TrainingSplit(list(datasets), tuple(classes), gdd, train_rows, val_sets, val_rows, test_sets,
                         test_rows)
