"""Class probabilities of a model (in training, not yet a bundle) on chosen parcels, from every
date and pixel slot, and the confusion matrix they give: used by validation during training and
by evaluation."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..core.model.bundle import InputScaling
from ..core.pixel_sets import PixelSets
from .metrics import confusion_matrix, scores
from .sampling import full_batches


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


def score_rows(model: torch.nn.Module, scaling: InputScaling, datasets: Sequence[PixelSets],
               rows: Sequence[np.ndarray], device: str, num_classes: int) -> tuple[float, np.ndarray]:
    """Macro F1 and the ``(K, K)`` confusion matrix of ``model`` on ``rows`` of each dataset
    (labels must already index the model's classes)."""
    cm = np.zeros((num_classes, num_classes), dtype=np.int64)
    for ps, r in zip(datasets, rows):
        if len(r) == 0:
            continue
        probs = predict_rows(model, scaling, ps, r, device=str(device))
        cm += confusion_matrix(np.asarray(ps.labels)[np.sort(r)], probs.argmax(axis=1), num_classes)
    return scores(cm)["macro_f1"], cm
