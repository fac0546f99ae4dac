"""Evaluation: class probabilities of a model on every date and pixel of a dataset, spatial
block splits, and the scores and confusion matrix of a model bundle on labelled data."""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

import numpy as np
import torch

from ..core.bundle import InputScaling, ModelBundle
from ..core.dataset import PixelSets
from ..core.errors import DatasetError
from .metrics import confusion_matrix, scores
from .sampling import full_batches, usable_parcels

log = logging.getLogger(__name__)

SPLIT_FRACTIONS = (0.7, 0.1, 0.2)


def split_blocks(datasets: Sequence[PixelSets], num_classes: int, seed: int = 0,
                 fractions: tuple[float, float, float] = SPLIT_FRACTIONS
                 ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Train / validation / test rows by spatial block, deterministic for a seed.

    The (dataset, block) pairs are shuffled with ``seed`` and cut by ``fractions`` (at least
    one block each for validation and test); parcels without a block (-1) train. With fewer
    than three blocks the parcels themselves are split, and a warning says so.

    Returns:
        Per dataset, ``(train_rows, val_rows, test_rows)`` of usable parcels.
    """
    usable = [usable_parcels(ps, num_classes) for ps in datasets]
    keys = sorted({(d, int(b)) for d, ps in enumerate(datasets)
                   for b in np.unique(np.asarray(ps.blocks)[usable[d]]) if b >= 0})
    rng = np.random.default_rng(seed)
    out = []
    if len(keys) >= 3:
        order = [keys[i] for i in rng.permutation(len(keys))]
        n_val = max(1, round(fractions[1] * len(keys)))
        n_test = max(1, round(fractions[2] * len(keys)))
        val, test = set(order[:n_val]), set(order[n_val:n_val + n_test])
        for d, ps in enumerate(datasets):
            rows = usable[d]
            blocks = np.asarray(ps.blocks)[rows]
            in_val = np.array([(d, int(b)) in val for b in blocks], dtype=bool)
            in_test = np.array([(d, int(b)) in test for b in blocks], dtype=bool)
            out.append((rows[~in_val & ~in_test], rows[in_val], rows[in_test]))
        return out
    names = ", ".join(sorted({ps.name for ps in datasets}))
    log.warning("%s: %d spatial block(s), fewer than three, so parcels are split into training, validation and "
                "test at random; neighbouring parcels then fall on both sides and the scores come out "
                "optimistic. Give the parcels blocks when extracting: a field of block numbers (thermocrop "
                "extract --block-field FIELD; in QGIS a field named 'block') or a grid (thermocrop extract "
                "--block-size-km 10 for 10 km cells).", names, len(keys))
    for rows in usable:
        perm = rows[rng.permutation(len(rows))]
        a = int(round(fractions[0] * len(rows)))
        b = a + max(1, int(round(fractions[1] * len(rows))))
        out.append((np.sort(perm[:a]), np.sort(perm[a:b]), np.sort(perm[b:])))
    return out


@torch.no_grad()
def predict_rows(model: torch.nn.Module, scaling: InputScaling, ps: PixelSets, rows: np.ndarray,
                 device: str = "cpu", batch_size: int = 128) -> np.ndarray:
    """Class probabilities ``(len(rows), K)`` (rows in ascending order) from every date and
    pixel slot of the parcels; the model is put in eval mode for the call."""
    was_training = model.training
    model.eval()
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    probs = []
    for _, b in full_batches(ps, rows, scaling, batch_size):
        logits = model(*(torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in
                         (b.pixels, b.pixel_mask, b.date_mask, b.day_of_season, b.gdd)))
        probs.append(torch.softmax(logits.double(), dim=1).float().cpu().numpy())
    model.train(was_training)
    k = model.config.num_classes
    return np.concatenate(probs) if probs else np.zeros((0, k), dtype=np.float32)


def evaluate_bundle(bundle: ModelBundle, datasets: Sequence[PixelSets], split: str = "all",
                    seed: int = 0, batch_size: int = 256) -> dict[str, Any]:
    """Scores of a bundle on labelled datasets.

    Args:
        bundle: the model bundle.
        datasets: labelled pixel sets (their class names must be the bundle's).
        split: ``"all"`` usable parcels or the ``"test"`` blocks of ``split_blocks(seed)``.
        seed: split seed (the one used in training).
        batch_size: parcels per model call.

    Returns:
        ``scores`` (see ``metrics.scores``) plus ``confusion_matrix`` (K x K list) and
        ``classes``.
    """
    from .train import gdd_settings

    classes = tuple(bundle.classes)
    for ps in datasets:
        if tuple(ps.classes) != classes:
            raise DatasetError(
                f"The dataset's classes {list(ps.classes)} differ from the model's "
                f"{list(classes)}; extract the labels with the model's class list.")
        settings, model_gdd = gdd_settings([ps]), dict(bundle.config.gdd)
        # Which settings shape the model's positions: none without PE, the season start for
        # the calendar, all of them for thermal time.
        matter = {"no_pe": (), "calendar": ("season_start",), "shiftaug": ("season_start",)}.get(
            bundle.config.variant, tuple(settings))
        if any(settings[k] != model_gdd.get(k) for k in matter):
            raise DatasetError(
                f"{ps.meta.get('source', 'The dataset')} was extracted with GDD settings {settings} but the "
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
    return result


def dataset_level_mismatch(bundle: ModelBundle, datasets: Sequence[PixelSets]) -> Optional[str]:
    """The processing-level warning of classification (``core.classify.level_mismatch``) for
    datasets: the levels their scenes had (``dataset.json``) against the model's."""
    from types import SimpleNamespace

    from ..core.classify import level_mismatch

    levels = {lv for ps in datasets for lv in (ps.meta or {}).get("levels", [])}
    return level_mismatch(bundle, [SimpleNamespace(level=lv) for lv in sorted(levels)])
