"""How sure a classification is, per parcel: the margin between the two likeliest classes and the
normalised entropy of the class probabilities, and the optional fields that carry them."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

MARGIN_FIELD = "crop_margin"
ENTROPY_FIELD = "crop_entropy"
PROBABILITY_PREFIX = "p_"


def probability_margin(probabilities: np.ndarray) -> np.ndarray:
    """Largest minus second-largest class probability, ``(P,)``; NaN for rows holding NaN.

    Args:
        probabilities: ``(P, K)`` class probabilities (rows sum to 1), NaN rows for parcels
            that were not classified.

    Returns:
        ``(P,)`` float32 in [0, 1]: 1 is a certain decision, 0 a tie.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if p.shape[1] < 2:
        return np.where(np.isnan(p).any(axis=1), np.nan, 1.0).astype(np.float32)
    top2 = -np.sort(-np.nan_to_num(p, nan=0.0), axis=1)[:, :2]
    margin = top2[:, 0] - top2[:, 1]
    return np.where(np.isnan(p).any(axis=1), np.nan, margin).astype(np.float32)


def normalised_entropy(probabilities: np.ndarray) -> np.ndarray:
    """Shannon entropy of each row divided by ``ln K``, ``(P,)``; NaN for rows holding NaN.

    0 means all probability on one class, 1 the same probability for every class.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    k = p.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    entropy = terms.sum(axis=1) / (math.log(k) if k > 1 else 1.0)
    return np.where(np.isnan(p).any(axis=1), np.nan, np.clip(entropy, 0.0, 1.0)).astype(np.float32)


def probability_field_names(classes: Sequence[str], prefix: str = PROBABILITY_PREFIX) -> list[str]:
    """One field name per class, ``p_<class>``, in class order."""
    return [f"{prefix}{name}" for name in classes]


def uncertainty_fields(probabilities: np.ndarray, classes: Sequence[str], *,
                       margin_field: str = MARGIN_FIELD, entropy_field: str = ENTROPY_FIELD,
                       prefix: str = PROBABILITY_PREFIX) -> dict[str, np.ndarray]:
    """The optional output fields: one probability per class, the margin and the entropy.

    Args:
        probabilities: ``(P, K)`` class probabilities, NaN rows where not classified.
        classes: the K class names.

    Returns:
        Field name -> ``(P,)`` float values (NaN where the parcel was not classified), probability
        fields first in class order, then margin and entropy.
    """
    p = np.asarray(probabilities, dtype=np.float32)
    if p.ndim != 2 or p.shape[1] != len(classes):
        raise ValueError(f"probabilities of shape {p.shape} do not match {len(classes)} classes")
    fields = {name: p[:, k] for k, name in enumerate(probability_field_names(classes, prefix))}
    fields[margin_field] = probability_margin(p)
    fields[entropy_field] = normalised_entropy(p)
    return fields
