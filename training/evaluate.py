"""Evaluation: the scores and confusion matrix of a model bundle on labelled datasets, whatever
their own class lists, on every parcel or on the test blocks of the training split."""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

import numpy as np

from ..core.errors import DatasetError
from ..core.model.bundle import ModelBundle
from ..core.pixel_sets import PixelSets
from .datasets import align_classes, gdd_settings, split_blocks
from .metrics import confusion_matrix, scores
from .sampling import usable_parcels

log = logging.getLogger(__name__)


def evaluate_bundle(bundle: ModelBundle, datasets: Sequence[PixelSets], split: str = "all",
                    seed: int = 0, batch_size: int = 256, unseen: str = "error") -> dict[str, Any]:
    """Scores of a bundle on labelled datasets.

    Each dataset's labels are moved onto the bundle's class list by name, so a dataset may list
    its classes in another order or fewer of them.

    Args:
        bundle: the model bundle.
        datasets: labelled pixel sets.
        split: ``"all"`` usable parcels or the ``"test"`` blocks of ``split_blocks(seed)``.
        seed: split seed (the one used in training).
        batch_size: parcels per model call.
        unseen: parcels of classes the model does not have: ``"error"`` (a ``DatasetError``
            naming them) or ``"drop"`` (left out; their counts are in ``left_out``).

    Returns:
        ``scores`` (see ``metrics.scores``) plus ``confusion_matrix`` (K x K list),
        ``classes`` and ``left_out`` (``{class: parcels}`` not scored).
    """
    classes = tuple(bundle.classes)
    left_out: dict[str, int] = {}
    for ps in datasets:
        for c, n in ps.class_counts().items():
            if n and c not in classes:
                left_out[c] = left_out.get(c, 0) + n
    datasets = align_classes(datasets, classes, unseen=unseen)
    for ps in datasets:
        settings, model_gdd = gdd_settings([ps]), dict(bundle.config.gdd)
        # Which settings shape the model's positions: none without PE, the season start for
        # the calendar, all of them for thermal time.
        matter = {"no_pe": (), "calendar": ("season_start",), "shiftaug": ("season_start",)}.get(
            bundle.config.variant, tuple(settings))
        if any(settings[k] != model_gdd.get(k) for k in matter):
            raise DatasetError(
                f"{ps.name} was extracted with GDD settings {settings} but the "
                f"model was trained with {model_gdd}; extract it again with the model's settings.")
    level_warning = dataset_level_mismatch(bundle, datasets)
    if level_warning:
        log.warning("%s", level_warning)
    k = len(classes)
    if split == "test":
        chosen = [t for _, _, t in split_blocks(datasets, k, seed)]
    elif split == "all":
        chosen = [usable_parcels(ps, k) for ps in datasets]
    else:
        raise ValueError(f"unknown split {split!r}; use 'all' or 'test'")
    cm = np.zeros((k, k), dtype=np.int64)
    for ps, rows in zip(datasets, chosen):
        if len(rows) == 0:
            continue
        probs = bundle.predict(ps.subset(np.sort(rows)), batch_size=batch_size)
        truth = np.asarray(ps.labels)[np.sort(rows)].astype(np.int64)
        cm += confusion_matrix(truth, probs.argmax(axis=1), k)
    if cm.sum() == 0:
        raise DatasetError("No labelled parcels with status 'ok' to evaluate on.")
    result = scores(cm, classes)
    result["confusion_matrix"] = cm.tolist()
    result["classes"] = list(classes)
    result["warnings"] = [level_warning] if level_warning else []
    result["left_out"] = dict(sorted(left_out.items()))
    return result


def dataset_level_mismatch(bundle: ModelBundle, datasets: Sequence[PixelSets]) -> Optional[str]:
    """The processing-level warning of classification (``core.classify.level_mismatch``) for
    datasets: the levels their scenes had (``dataset.json``) against the model's."""
    from types import SimpleNamespace

    from ..core.classify import level_mismatch

    levels = {lv for ps in datasets for lv in (ps.meta or {}).get("levels", [])}
    return level_mismatch(bundle, [SimpleNamespace(level=lv) for lv in sorted(levels)])
