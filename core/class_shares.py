"""Known class shares: the parcels' probabilities brought to the share of each crop in the area.

A model trained on synthetic regions expects crops in the shares it was trained on; a user's
fields hold them in other shares (two parcels in five were meadow on the Bavarian parcels), and
early in the season, when several crops still look alike, that expectation decides many labels.
Where the user knows the shares (last year's declarations, the agricultural statistics of the
district), each class's probabilities are scaled by one factor per class, the same for every
parcel, until the layer's mean probability of each class is its share, and each parcel's
probabilities are normalised again (the class-share adjustment of a classifier, with the
layer's own mean probabilities in the place of the training data's shares). Labels, confidences
and prediction sets then come from the adjusted probabilities.
"""

from __future__ import annotations

import csv
import logging
import math
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .errors import InputError

log = logging.getLogger(__name__)

SHARE_FLOOR = 1e-3
"""The least share of any class, so that a class listed at 0 (or not listed) is named less often,
never ruled out."""
MIN_PARCELS = 50
"""Fewer classified parcels than this hold their crops in shares too far from the area's to be
brought to them: the run warns."""
MAX_STEPS = 100
TOLERANCE = 1e-3
"""The layer's mean probability of each class is brought within this of its share."""


def read_class_shares(path: str | Path, classes: Sequence[str]) -> np.ndarray:
    """The shares of ``classes`` in the CSV file ``path``: a header ``class,share``, then one row
    per class, by the model's class names, the share as any non-negative number proportional to
    the number of parcels (a fraction, a percentage, a count). Classes not listed have share 0.
    The shares returned sum to 1, each at least :data:`SHARE_FLOOR` before that.

    Raises:
        InputError: the file is missing or unreadable, lacks the two columns, names a class the
            model does not know (or one twice), holds a share that is not a non-negative number,
            or no share above 0.
    """
    path = Path(path)
    known = {name: i for i, name in enumerate(classes)}
    hint = (f"Write a CSV file with the header 'class,share' and one row per class of the model "
            f"({', '.join(classes)}).")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except FileNotFoundError:
        raise InputError(f"Class shares file {path} does not exist. {hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"Class shares file {path} cannot be read ({exc}). {hint}") from None
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    header = [cell.strip().lower() for cell in rows[0]] if rows else []
    if "class" not in header or "share" not in header:
        raise InputError(f"Class shares file {path} has no columns 'class' and 'share' in its first line. {hint}")
    at_class, at_share = header.index("class"), header.index("share")
    shares = np.zeros(len(classes))
    seen: set[str] = set()
    for line, row in enumerate(rows[1:], start=2):
        name = row[at_class].strip() if at_class < len(row) else ""
        text = row[at_share].strip() if at_share < len(row) else ""
        if name not in known:
            raise InputError(f"Class shares file {path}, line {line}: the model has no class {name!r}. {hint}")
        if name in seen:
            raise InputError(f"Class shares file {path}, line {line}: class {name!r} is listed twice.")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise InputError(f"Class shares file {path}, line {line}: the share {text!r} of {name!r} is not a "
                             "number of 0 or more.")
        seen.add(name)
        shares[known[name]] = value
    if shares.sum() <= 0:
        raise InputError(f"Class shares file {path} gives no class a share above 0. {hint}")
    shares = np.maximum(shares / shares.sum(), SHARE_FLOOR)
    return shares / shares.sum()


def share_factors(probabilities: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """``(K,)`` one factor per class, the same for every parcel, that bring the mean probability
    of each class over the classified parcels of ``probabilities (P, K)`` (rows NaN where not
    classified) to ``shares`` within :data:`TOLERANCE` (:func:`apply_share_factors`); scaled so
    that the largest is 1. All ones where no parcel is classified."""
    p = np.asarray(probabilities, dtype=np.float64)
    q = p[np.isfinite(p).all(axis=1)]
    factors = np.ones(p.shape[1])
    if not len(q):
        return factors
    for _ in range(MAX_STEPS):
        mean = q.mean(axis=0)
        if np.abs(mean - shares).max() <= TOLERANCE:
            break
        step = shares / np.maximum(mean, 1e-12)
        factors *= step
        q = q * step
        q /= q.sum(axis=1, keepdims=True)
    return factors / factors.max()


def apply_share_factors(probabilities: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """``probabilities (..., K)`` times ``factors (K,)``, each row normalised again (float32; NaN
    rows stay NaN)."""
    q = np.asarray(probabilities, dtype=np.float64) * np.asarray(factors, dtype=np.float64)
    return (q / q.sum(axis=-1, keepdims=True)).astype(np.float32)


def match_class_shares(probabilities: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """``probabilities (P, K)`` (rows of parcels not classified NaN, left so) with one factor per
    class, the same for every parcel, so that the mean of each class over the classified parcels
    is ``shares`` (within :data:`TOLERANCE`), each row normalised again."""
    return apply_share_factors(probabilities, share_factors(probabilities, shares))


def prefix_share_factors(prefixes: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """``(T, K)``: :func:`share_factors` of ``prefixes (P, T, K)`` as of each date (the parcels
    with a prediction then), so that a map as of any date holds the shares."""
    return np.stack([share_factors(prefixes[:, t], shares) for t in range(prefixes.shape[1])]) \
        if prefixes.shape[1] else np.ones((0, prefixes.shape[2]))


def few_parcels_note(classified: int) -> Optional[str]:
    """A warning where fewer than :data:`MIN_PARCELS` parcels were brought to the shares."""
    if classified >= MIN_PARCELS:
        return None
    return (f"Only {classified} parcels were classified: so few hold their crops in shares that may be far from "
            f"the area's, and bringing them to the class shares given can make their labels worse (at least "
            f"{MIN_PARCELS} are advised).")
