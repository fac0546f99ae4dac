"""The statistics of an accuracy assessment: the confusion matrix, the scores of the reference
sample, and the stratified estimators of area-adjusted accuracy and class areas with their
standard errors (Olofsson et al. 2014, "Good practices for estimating area and assessing
accuracy of land change", Remote Sensing of Environment 148, 42-57; equation numbers below are
theirs). Rows of a matrix are map classes, columns reference classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence, Union

import numpy as np

Z_95 = 1.96
"""Normal quantile of a two-sided 95 % interval, as the paper uses it (eq. 13)."""


def confusion_matrix(mapped: Sequence[str], reference: Sequence[str],
                     classes: Sequence[str]) -> np.ndarray:
    """``(K, K)`` int64 sample counts ``n_ij``: rows = map class i, columns = reference class j.

    Args:
        mapped: ``(N,)`` map (predicted) class names of the reference units.
        reference: ``(N,)`` reference class names.
        classes: the K class names; every name above must be among them.
    """
    index = {name: i for i, name in enumerate(classes)}
    k = len(classes)
    matrix = np.zeros((k, k), dtype=np.int64)
    for m, r in zip(mapped, reference):
        matrix[index[m], index[r]] += 1
    return matrix


@dataclass(frozen=True)
class SampleScores:
    """Scores of the sample counts, each unit weighted equally (no area adjustment).

    Attributes:
        n: reference units.
        overall_accuracy: correct / n.
        kappa: Cohen's kappa of the count matrix.
        users_accuracy: ``(K,)`` n_ii / n_i. (1 - commission error); NaN for a class never mapped.
        producers_accuracy: ``(K,)`` n_jj / n_.j (1 - omission error); NaN for a class absent
            from the reference.
        f1: ``(K,)`` harmonic mean of the two (0 when both are 0; NaN when either is NaN).
        macro_f1: mean F1 over the classes present in the map or the reference sample.
    """

    n: int
    overall_accuracy: float
    kappa: float
    users_accuracy: np.ndarray
    producers_accuracy: np.ndarray
    f1: np.ndarray
    macro_f1: float


def _f1(users: np.ndarray, producers: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        total = users + producers
        f1 = np.where(total > 0, 2.0 * users * producers / np.where(total > 0, total, 1.0), 0.0)
    return np.where(np.isnan(users) | np.isnan(producers), np.nan, f1)


def sample_scores(matrix: np.ndarray) -> SampleScores:
    """Overall accuracy, kappa and per-class user's / producer's accuracy and F1 of counts.

    Args:
        matrix: ``(K, K)`` counts, rows = map, columns = reference.
    """
    counts = np.asarray(matrix, dtype=np.float64)
    n = counts.sum()
    diagonal = np.diag(counts)
    rows, cols = counts.sum(axis=1), counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        users = np.where(rows > 0, diagonal / np.where(rows > 0, rows, 1.0), np.nan)
        producers = np.where(cols > 0, diagonal / np.where(cols > 0, cols, 1.0), np.nan)
    f1 = _f1(users, producers)
    oa = float(diagonal.sum() / n) if n else float("nan")
    chance = float((rows * cols).sum() / n ** 2) if n else float("nan")
    kappa = (oa - chance) / (1.0 - chance) if n and chance < 1.0 else float("nan")
    present = (rows > 0) | (cols > 0)
    f1_present = np.nan_to_num(f1[present], nan=0.0)
    return SampleScores(int(n), oa, float(kappa), users, producers, f1,
                        float(f1_present.mean()) if present.any() else float("nan"))


@dataclass(frozen=True)
class StratifiedEstimates:
    """Area-adjusted accuracy and class areas of a stratified sample (strata = map classes).

    Standard errors are NaN where a term needs a stratum of one unit (n_i. - 1 = 0).

    Attributes:
        weights: ``(K,)`` W_i, the share of the map in map class i (0 for a class the map
            does not have).
        proportions: ``(K, K)`` p_ij = W_i n_ij / n_i., the estimated error matrix in
            proportions of area (eq. 4).
        overall_accuracy, overall_accuracy_se: eq. 1 and the root of eq. 5.
        users_accuracy, users_accuracy_se: ``(K,)`` eq. 2 and the root of eq. 6.
        producers_accuracy, producers_accuracy_se: ``(K,)`` eq. 3 and the root of eq. 7.
        f1: ``(K,)`` harmonic mean of the estimated user's and producer's accuracies.
        area_proportion, area_proportion_se: ``(K,)`` p_.k (eq. 9) and its standard error
            (eq. 10).
        total_area: the map's total area (or parcel count) the weights came from.
        area, area_se: ``(K,)`` total_area x the two above (eqs. 11 and 12).
    """

    weights: np.ndarray
    proportions: np.ndarray
    overall_accuracy: float
    overall_accuracy_se: float
    users_accuracy: np.ndarray
    users_accuracy_se: np.ndarray
    producers_accuracy: np.ndarray
    producers_accuracy_se: np.ndarray
    f1: np.ndarray
    area_proportion: np.ndarray
    area_proportion_se: np.ndarray
    total_area: float
    area: np.ndarray
    area_se: np.ndarray

    @staticmethod
    def ci(se: Union[float, np.ndarray]) -> Union[float, np.ndarray]:
        """Half-width of the 95 % confidence interval of an estimate with standard error ``se``."""
        return Z_95 * se


def stratified_estimates(matrix: np.ndarray, map_area: Sequence[float]) -> StratifiedEstimates:
    """Olofsson et al. (2014) estimators for a stratified random sample whose strata are the map
    classes (also valid, as post-stratified estimators, for simple random or systematic samples).

    Args:
        matrix: ``(K, K)`` sample counts n_ij, rows = map class (stratum), columns = reference.
        map_area: ``(K,)`` A_m,i, the map's area of each class (any unit: hectares, pixels,
            parcels); 0 for a class only the reference has.

    Raises:
        ValueError: shapes differ, an area is negative or all are zero, or a class the map
            covers has no reference unit (its stratum cannot be estimated).
    """
    n_ij = np.asarray(matrix, dtype=np.float64)
    a_m = np.asarray(map_area, dtype=np.float64)
    k = n_ij.shape[0]
    if n_ij.shape != (k, k) or a_m.shape != (k,):
        raise ValueError(f"matrix {n_ij.shape} and map areas {a_m.shape} do not fit")
    if (a_m < 0).any() or not a_m.sum() > 0:
        raise ValueError("map areas must be non-negative and not all zero")
    n_i = n_ij.sum(axis=1)
    if ((a_m > 0) & (n_i == 0)).any():
        raise ValueError("every map class with area needs at least one reference unit")
    total = float(a_m.sum())
    w = a_m / total
    mapped = a_m > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(n_i[:, None] > 0, n_ij / np.where(n_i > 0, n_i, 1.0)[:, None], 0.0)
        # 1 / (n_i. - 1): a stratum of one unit has no variance estimate (NaN spreads to every
        # figure it enters).
        inv_dof = np.where(n_i > 1, 1.0 / np.where(n_i > 1, n_i - 1.0, 1.0), np.nan)
    # Per stratum and reference class: (n_ij / n_i.)(1 - n_ij / n_i.) / (n_i. - 1), zero for
    # classes the map does not have (no stratum).
    spread = np.where(mapped[:, None], share * (1.0 - share) * inv_dof[:, None], 0.0)
    p = w[:, None] * share                                     # eq. 4
    oa = float(np.trace(p))                                    # eq. 1
    diag_share = np.diag(share)
    diag_spread = np.diag(spread)
    users = np.where(mapped, diag_share, np.nan)               # eq. 2: p_ii / p_i. = n_ii / n_i.
    var_users = np.where(mapped, diag_spread, np.nan)          # eq. 6
    var_oa = float((w ** 2 * diag_spread).sum())               # eq. 5
    p_col = p.sum(axis=0)                                      # eq. 9
    var_col = (w[:, None] ** 2 * spread).sum(axis=0)           # eq. 10
    with np.errstate(invalid="ignore", divide="ignore"):
        producers = np.where(p_col > 0, np.diag(p) / np.where(p_col > 0, p_col, 1.0), np.nan)
        # eq. 7, with N_i. the map area of stratum i and N^_.j = sum_i N_i. / n_i. * n_ij the
        # estimated reference area of class j.
        n_ref = (a_m[:, None] * share).sum(axis=0)
        own = a_m ** 2 * (1.0 - producers) ** 2 * diag_spread
        others = np.where(np.eye(k, dtype=bool), 0.0, a_m[:, None] ** 2 * spread).sum(axis=0)
        var_producers = np.where(n_ref > 0, (own + producers ** 2 * others)
                                 / np.where(n_ref > 0, n_ref, 1.0) ** 2, np.nan)
    return StratifiedEstimates(
        weights=w, proportions=p,
        overall_accuracy=oa, overall_accuracy_se=math.sqrt(var_oa),
        users_accuracy=users, users_accuracy_se=np.sqrt(var_users),
        producers_accuracy=producers, producers_accuracy_se=np.sqrt(var_producers),
        f1=_f1(users, producers),
        area_proportion=p_col, area_proportion_se=np.sqrt(var_col),
        total_area=total, area=total * p_col, area_se=total * np.sqrt(var_col))


@dataclass
class Reliability:
    """How far a map's confidence can be read as a probability: per confidence bin (``bins``
    equal widths of 0-1) the units, their mean confidence and the share of them that is right.

    Attributes:
        bins: one dict per bin: ``low``, ``high``, ``parcels``, ``confidence`` and ``accuracy``
            (NaN for an empty bin).
        ece: the expected calibration error: the unit-weighted mean of ``|accuracy - confidence|``
            over the bins (0 without units).
        units: how many units the table holds.
    """

    bins: list
    ece: float
    units: int


def reliability(confidence: Sequence[float], correct: Sequence[bool], bins: int = 10) -> Reliability:
    """The :class:`Reliability` of ``(N,)`` confidences and whether each unit's class is right;
    units without a finite confidence are left out. A confidence of exactly 1 is in the last bin."""
    conf = np.asarray(confidence, dtype=np.float64).reshape(-1)
    right = np.asarray(correct, dtype=bool).reshape(-1)
    keep = np.isfinite(conf)
    conf, right = np.clip(conf[keep], 0.0, 1.0), right[keep]
    index = np.minimum((conf * bins).astype(int), bins - 1)
    table = []
    for b in range(bins):
        inside = index == b
        n = int(inside.sum())
        table.append({"low": b / bins, "high": (b + 1) / bins, "parcels": n,
                      "confidence": float(conf[inside].mean()) if n else math.nan,
                      "accuracy": float(right[inside].mean()) if n else math.nan})
    total = len(conf)
    ece = sum(row["parcels"] * abs(row["accuracy"] - row["confidence"]) for row in table if row["parcels"])
    return Reliability(table, float(ece / total) if total else 0.0, total)
