"""Fine-tuning: a training run that starts from a model bundle's weights, and the recipe for few
labels that such a run follows unless told otherwise.

The bundle's class list is kept when the training classes are among its classes (every weight
is loaded); a new class list gets a new output layer and keeps every other weight. The bundle's
variant, hyper-parameters, bands, input scaling and GDD settings are kept; an ensemble's members
are fine-tuned one by one, each from its own weights.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import torch

from ..core.errors import DatasetError, InputError
from ..core.model.bundle import BundleConfig, InputScaling, ModelBundle, load_bundle
from ..core.model.networks import build_model
from ..core.pixel_sets import PixelSets
from .config import TrainingConfig, TrainingSplit
from .datasets import model_classes

log = logging.getLogger(__name__)

__all__ = ["FEW_LABEL_RECIPE", "OUTPUT_LAYER", "InitialWeights", "anchor_penalty", "bundle_digest", "init_classes", "init_provenance",
           "initial_weights", "new_model", "training_config"]

FEW_LABEL_RECIPE: dict[str, Any] = {
    "epochs": 30, "steps_per_epoch": 25, "batch_size": 64, "lr": 3e-4, "weight_decay": 0.0,
    "freeze_pixel_encoder": False, "init_anchor": 1.0, "test_split": False,
}
"""What ``init`` sets unless the options say otherwise: the shipped model's budget (750 steps of 64
parcels), a learning rate a third of the one from scratch, every weight free but pulled toward
the initial weights (an L2 penalty of strength 1 on their difference, instead of a decay toward
zero), and no test blocks held out, so that a few dozen labelled parcels per class all serve
(the validation blocks still choose the epoch and give the scores). Chosen on the west half of
the real Bavarian parcels (``scripts/finetune_study.py``; docs/training.md gives the table)."""

SAMPLING_KEPT = ("sample_pixels", "sample_dates", "mean_pixel_share", "season_window_share", "season_window_end",
                 "gamma", "max_shift")
"""Training settings that a fine-tuning run takes from the bundle's own training (its provenance),
so that it meets the inputs it was made for (parcel means, part seasons) as it did."""

OUTPUT_LAYER = "decoder.out."
"""The weights of the last (output) layer: the only ones a new class list does not take over."""


def bundle_digest(path: Path) -> str:
    """The sha256 of a bundle file (what a bundle made from another records of it)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def init_provenance(path: str) -> dict[str, Any]:
    """What a fine-tuned bundle records of the bundle it started from: file name and sha256."""
    return {"init": {"file": Path(path).name, "sha256": bundle_digest(Path(path))}}


def _contradictions(given: Mapping[str, Any], bundle: BundleConfig, name: str) -> None:
    """Refuse options that contradict the bundle's variant or hyper-parameters."""
    members = int(bundle.hyperparameters.get("members", 1))
    if given.get("variant") not in (None, bundle.variant):
        raise InputError(f"The variant {given['variant']} contradicts the initial model {name}, a "
                         f"{bundle.variant} model; leave the variant out to fine-tune it as it is.")
    if given.get("members") not in (None, members):
        raise InputError(f"{given['members']} member(s) contradict the initial model {name}, "
                         f"{'an ensemble of ' + str(members) if members > 1 else 'a single model'}; "
                         "leave the number of members out: each member of the model is fine-tuned.")
    for key, value in (given.get("model_settings") or {}).items():
        have = bundle.hyperparameters.get(key)
        if have is not None and (list(have) if isinstance(have, (list, tuple)) else have) != \
                (list(value) if isinstance(value, (list, tuple)) else value):
            raise InputError(f"The model setting {key} = {value!r} contradicts the initial model {name}, whose "
                             f"{key} is {have!r}; leave it out to keep the model's.")


def training_config(given: Optional[Mapping[str, Any]] = None, init: Optional[str] = None) -> TrainingConfig:
    """The settings of a run from the options a user gave (every door calls this).

    Without ``init``: ``TrainingConfig``'s defaults under ``given``. With ``init``: the bundle's
    variant, hyper-parameters and sampling settings, then ``FEW_LABEL_RECIPE``, then ``given``.

    Args:
        given: ``TrainingConfig`` fields the user set (None values count as not set).
        init: path of the bundle to start from.

    Raises:
        InputError: an option contradicts the bundle's variant or hyper-parameters.
        BundleError: ``init`` is no readable bundle.
    """
    given = {k: v for k, v in (given or {}).items() if v is not None}
    unknown = set(given) - {f.name for f in fields(TrainingConfig)}
    if unknown:
        raise ValueError(f"Unknown training settings {sorted(unknown)}")
    if not init:
        return TrainingConfig(**given)
    bundle = load_bundle(init).config
    _contradictions(given, bundle, Path(init).name)
    hp = dict(bundle.hyperparameters)
    members = int(hp.pop("members", 1))
    trained = (bundle.provenance or {}).get("training") or {}
    kept = {k: trained[k] for k in SAMPLING_KEPT if k in trained}
    settings = {**kept, **FEW_LABEL_RECIPE, **given, "variant": bundle.variant, "members": members,
                "model_settings": hp, "init": str(init)}
    return TrainingConfig(**settings)


def init_classes(config: TrainingConfig, datasets: Sequence[PixelSets]) -> TrainingConfig:
    """``config`` with the bundle's class list when the training classes are among its classes
    (the union of the datasets' classes, or ``config.classes``); else as it is (a new list)."""
    if not config.init:
        return config
    known = load_bundle(config.init).classes
    wanted = model_classes(datasets, config.classes)
    if config.classes is None and set(wanted) <= set(known):
        return replace(config, classes=tuple(known))
    return config


@dataclass
class InitialWeights:
    """The bundle a run starts from, ready to be put into the new model.

    Attributes:
        bundle: the loaded bundle.
        name: its file name (for messages).
        member: the ensemble member whose weights start this run (None: a single model).
    """

    bundle: ModelBundle
    name: str
    member: Optional[int] = None

    @property
    def scaling(self) -> InputScaling:
        return self.bundle.config.scaling

    def state(self) -> dict[str, torch.Tensor]:
        """The weights of the model (or of its member) this run starts from."""
        model = self.bundle.model
        if self.member is not None:
            model = model.members[self.member]
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    def load_into(self, model: torch.nn.Module, classes: Sequence[str]) -> list[str]:
        """Copy the weights into ``model`` (a new one, of the bundle's settings and ``classes``).

        Returns:
            The names of the weights copied (every one, or every one but the output layer's).
        """
        state = self.state()
        if tuple(classes) != tuple(self.bundle.classes):
            state = {k: v for k, v in state.items() if not k.startswith(OUTPUT_LAYER)}
            log.info("Fine-tuning %s with a new class list (%d classes instead of its %d): every weight but the "
                     "output layer's is taken over; the output layer starts afresh.", self.name, len(classes),
                     len(self.bundle.classes))
        else:
            log.info("Fine-tuning %s: every weight is taken over, with its %d classes.", self.name, len(classes))
        missing, unexpected = model.load_state_dict(state, strict=False)
        wrong = [k for k in missing if not k.startswith(OUTPUT_LAYER)] + list(unexpected)
        if wrong:
            raise InputError(f"The initial model {self.name} does not fit the model to train ({', '.join(wrong[:5])}).")
        return list(state)


def initial_weights(config: TrainingConfig, split: TrainingSplit, bands: Sequence[str]) -> InitialWeights:
    """The bundle ``config.init`` checked against the run's settings and data.

    Raises:
        InputError: settings that differ from the bundle's (variant, hyper-parameters, members).
        DatasetError: data whose bands or GDD settings differ from the bundle's.
    """
    bundle = load_bundle(config.init)
    name = Path(config.init).name
    bc = bundle.config
    members = int(bc.hyperparameters.get("members", 1))
    _contradictions({"variant": config.variant, "model_settings": config.model_settings,
                     "members": members if config.init_member is not None else config.members}, bc, name)
    if config.init_member is not None and not 0 <= config.init_member < members:
        raise InputError(f"The initial model {name} has {members} member(s); there is no member {config.init_member}.")
    if tuple(bands) != tuple(bc.bands):
        raise DatasetError(f"The training data have the bands {list(bands)}, the initial model {name} takes "
                           f"{list(bc.bands)}; extract the data with the model's bands, in its order.")
    gdd = {k: bc.gdd.get(k) for k in split.gdd}
    if gdd != split.gdd:
        raise DatasetError(f"The training data were extracted with the GDD settings {split.gdd}, the initial model "
                           f"{name} uses {bc.gdd}; extract them again with the model's settings.")
    return InitialWeights(bundle, name, config.init_member if members > 1 else None)


def new_model(config: TrainingConfig, k: int, init: Optional[InitialWeights], classes: Sequence[str],
              device: torch.device) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    """The model a run trains: random weights, or those of ``init``; with the anchors (the initial
    values of the weights taken over) when ``config.init_anchor`` pulls toward them."""
    model = build_model(config.variant, k, **config.model_settings)
    anchors: dict[str, torch.Tensor] = {}
    if init is not None:
        taken = set(init.load_into(model, classes))
        if config.freeze_pixel_encoder:
            for p in model.pse.parameters():
                p.requires_grad_(False)
        if config.init_anchor > 0:
            anchors = {n: p.detach().clone().to(device) for n, p in model.named_parameters()
                       if n in taken and p.requires_grad}
    return model.to(device), anchors


def anchor_penalty(model: torch.nn.Module, anchors: Mapping[str, torch.Tensor], strength: float) -> torch.Tensor:
    """``strength / 2 * sum((w - w_init) ** 2)`` over the anchored weights."""
    params = dict(model.named_parameters())
    total = sum(((params[n] - a) ** 2).sum() for n, a in anchors.items())
    return 0.5 * strength * total
