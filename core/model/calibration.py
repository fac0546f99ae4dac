"""Calibrated class probabilities and prediction sets.

A network's softmax output ranks classes well but its highest value is not the chance that the
label is right. A :class:`Calibration` fitted on labelled parcels the model did not train on
turns it into one and says which classes to keep to hold the true one with a chosen chance:

- **Temperature scaling**: the log-probabilities divided by one number ``T`` before the softmax
  (``T`` > 1 softens over-confident output, ``T`` < 1 sharpens under-confident output). ``T`` is
  the value that gives the held-out labels the highest likelihood; the ranking of the classes,
  and so every label, is unchanged.
- **Split-conformal prediction sets**: with ``s_i = 1 - p_i(y_i)`` the calibrated probability
  that the ``n`` held-out parcels give to their true class missed, and ``q`` the
  ``ceil((n + 1) * coverage)``-th smallest of them, the set ``{k : p(k) >= 1 - q}`` of a new parcel
  holds its true class with probability at least ``coverage`` whenever it is exchangeable with the
  held-out parcels (same kind of fields, scenes and season). The scores are stored, so the
  coverage is chosen when classifying.

The expected calibration error and the reliability table measure how far confidence and
accuracy are apart.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..accuracy_stats import reliability
from ..errors import InputError

log = logging.getLogger(__name__)

__all__ = [
    "MIN_CALIBRATION_PARCELS",
    "DEFAULT_COVERAGE",
    "Calibration",
    "fit_temperature",
    "apply_temperature",
    "fit_calibration",
    "conformal_threshold",
    "prediction_sets",
    "reliability_table",
    "expected_calibration_error",
]

MIN_CALIBRATION_PARCELS = 50
"""Fewer labelled parcels than this give neither a trustworthy temperature nor a set threshold
(with 50 parcels a 90 % set is built from the 46th smallest score): refused."""

DEFAULT_COVERAGE = 0.9
"""The chance that a parcel's prediction set holds its true class, unless the user picks another."""

TEMPERATURE_RANGE = (0.02, 50.0)
"""The temperatures searched and accepted from a bundle."""

MAX_SCORES = 100_000
"""Conformal scores stored in a bundle at most (a bundle config is read whole)."""

_EPS = 1e-12


@dataclass(frozen=True)
class Calibration:
    """How a model's probabilities are calibrated, stored in its bundle.

    Attributes:
        temperature: the divisor of the log-probabilities (1.0: unchanged).
        scores: sorted conformal scores ``1 - p(true class)`` of the calibration parcels, under the
            calibrated probabilities.
        parcels: how many labelled parcels the calibration was fitted on.
        source: what they were (``"validation blocks of the training data"``, a layer's name, ...).
        ece_before, ece_after: the expected calibration error on those parcels before and after.
    """

    temperature: float = 1.0
    scores: tuple[float, ...] = field(default_factory=tuple)
    parcels: int = 0
    source: str = ""
    ece_before: Optional[float] = None
    ece_after: Optional[float] = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in ``BundleConfig.calibration``."""
        return {"method": "temperature", "temperature": float(self.temperature),
                "scores": [round(float(s), 6) for s in self.scores], "parcels": int(self.parcels),
                "source": self.source, "ece_before": self.ece_before, "ece_after": self.ece_after}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Optional["Calibration"]:
        """The calibration of a bundle's ``calibration`` record; None for an empty one (a bundle
        written before calibrations existed, or never calibrated)."""
        if not data:
            return None
        check_calibration_data(data)
        return cls(temperature=float(data["temperature"]), scores=tuple(float(s) for s in data["scores"]),
                   parcels=int(data["parcels"]), source=str(data["source"]),
                   ece_before=data.get("ece_before"), ece_after=data.get("ece_after"))

    def apply(self, probabilities: np.ndarray) -> np.ndarray:
        """``probabilities (P, K)`` calibrated; NaN rows stay NaN."""
        return apply_temperature(probabilities, self.temperature)

    def threshold(self, coverage: float) -> float:
        """The set threshold ``q`` for ``coverage`` (see :func:`conformal_threshold`)."""
        return conformal_threshold(np.asarray(self.scores), coverage)


def check_calibration_data(data: Any) -> None:
    """Check a bundle's ``calibration`` record field by field.

    Raises:
        ValueError: naming the first entry that is missing, of the wrong type or out of range.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"calibration must be a mapping, not {type(data).__name__}")
    known = {"method", "temperature", "scores", "parcels", "source", "ece_before", "ece_after"}
    missing = sorted({"method", "temperature", "scores", "parcels", "source"} - set(data))
    if missing:
        raise ValueError(f"calibration lacks {', '.join(missing)}")
    extra = sorted(set(data) - known)
    if extra:
        raise ValueError(f"calibration has unknown entries {', '.join(map(str, extra))}")
    if data["method"] != "temperature":
        raise ValueError(f"calibration.method is {data['method']!r}; this ThermoCrop knows 'temperature'")
    t = data["temperature"]
    if not _finite(t) or not TEMPERATURE_RANGE[0] <= t <= TEMPERATURE_RANGE[1]:
        raise ValueError(f"calibration.temperature must be a number from {TEMPERATURE_RANGE[0]:g} to "
                         f"{TEMPERATURE_RANGE[1]:g}, not {t!r}")
    scores = data["scores"]
    if not isinstance(scores, (list, tuple)) or len(scores) > MAX_SCORES:
        raise ValueError(f"calibration.scores must be a list of at most {MAX_SCORES:,} numbers")
    if any(not _finite(s) or not 0.0 <= s <= 1.0 for s in scores):
        raise ValueError("calibration.scores must hold numbers from 0 to 1")
    parcels = data["parcels"]
    if not isinstance(parcels, int) or isinstance(parcels, bool) or parcels < 0:
        raise ValueError(f"calibration.parcels must be a whole number, not {parcels!r}")
    if not isinstance(data["source"], str) or len(data["source"]) > 1000:
        raise ValueError("calibration.source must be a text of at most 1000 characters")
    for key in ("ece_before", "ece_after"):
        value = data.get(key)
        if value is not None and (not _finite(value) or not 0.0 <= value <= 1.0):
            raise ValueError(f"calibration.{key} must be a number from 0 to 1 or null, not {value!r}")


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def apply_temperature(probabilities: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(log(p) / T)`` row by row, float32; NaN rows stay NaN."""
    p = np.asarray(probabilities, dtype=np.float64)
    if temperature == 1.0 or p.size == 0:
        return p.astype(np.float32)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p).all(axis=-1)
    z = np.log(np.clip(p[ok], _EPS, 1.0)) / temperature
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    out[ok] = e / e.sum(axis=-1, keepdims=True)
    return out.astype(np.float32)


def _nll(log_p: np.ndarray, labels: np.ndarray, temperature: float) -> float:
    z = log_p / temperature
    z = z - z.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(z).sum(axis=1))
    return float(np.mean(log_norm - z[np.arange(len(labels)), labels]))


def fit_temperature(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """The temperature that maximises the likelihood of ``labels (n,)`` (class indices) under
    ``softmax(log(probabilities) / T)``.

    The negative log-likelihood is convex in ``1 / T``, so a golden-section search over
    ``log T`` in :data:`TEMPERATURE_RANGE` finds its minimum.
    """
    log_p = np.log(np.clip(np.asarray(probabilities, dtype=np.float64), _EPS, 1.0))
    labels = np.asarray(labels, dtype=np.int64)
    lo, hi = math.log(TEMPERATURE_RANGE[0]), math.log(TEMPERATURE_RANGE[1])
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = _nll(log_p, labels, math.exp(a)), _nll(log_p, labels, math.exp(b))
    for _ in range(80):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = _nll(log_p, labels, math.exp(a))
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = _nll(log_p, labels, math.exp(b))
    return float(math.exp((lo + hi) / 2.0))


def fit_calibration(probabilities: np.ndarray, labels: np.ndarray, source: str,
                    min_parcels: int = MIN_CALIBRATION_PARCELS) -> Calibration:
    """A :class:`Calibration` from the model's raw probabilities on labelled parcels it did not
    train on.

    Args:
        probabilities: ``(n, K)`` raw probabilities; rows with NaN (parcels without a result)
            are left out.
        labels: ``(n,)`` class indices into the model's classes; negative values (unlabelled,
            or a class the model does not know) are left out.
        source: what the parcels were, stored with the calibration and named in messages.
        min_parcels: the fewest usable parcels accepted.

    Raises:
        InputError: fewer than ``min_parcels`` usable parcels, with the counts.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    usable = (y >= 0) & (y < p.shape[1]) & np.isfinite(p).all(axis=1)
    if usable.sum() < min_parcels:
        raise InputError(
            f"{source}: {int(usable.sum())} parcels can calibrate the model ({len(y)} given, "
            f"{int((y < 0).sum())} without a label the model knows, {int((~np.isfinite(p).all(axis=1)).sum())} "
            f"without a result); at least {min_parcels} are needed. Give more labelled parcels.")
    p, y = p[usable], y[usable]
    temperature = fit_temperature(p, y)
    calibrated = apply_temperature(p, temperature).astype(np.float64)
    scores = np.sort(1.0 - calibrated[np.arange(len(y)), y])
    if len(scores) > MAX_SCORES:  # evenly spaced order statistics keep the quantiles
        scores = scores[np.linspace(0, len(scores) - 1, MAX_SCORES).round().astype(int)]
    before = expected_calibration_error(p, y)
    after = expected_calibration_error(calibrated, y)
    log.info("Calibration on %s: %d parcels, temperature %.3f, expected calibration error %.3f -> %.3f",
             source, len(y), temperature, before, after)
    return Calibration(temperature=temperature, scores=tuple(float(s) for s in scores), parcels=int(len(y)),
                       source=source, ece_before=round(before, 6), ece_after=round(after, 6))


def conformal_threshold(scores: np.ndarray, coverage: float) -> float:
    """The split-conformal threshold ``q`` for ``coverage``: the ``ceil((n + 1) * coverage)``-th
    smallest score, or 1.0 (every class) where ``n`` is too small for that coverage."""
    if not 0.0 < coverage < 1.0:
        raise InputError(f"The coverage of prediction sets must be above 0 and below 1 (e.g. 0.9), not {coverage}.")
    s = np.sort(np.asarray(scores, dtype=np.float64))
    rank = math.ceil((len(s) + 1) * coverage)
    if rank > len(s):
        return 1.0
    return float(s[rank - 1])


def prediction_sets(probabilities: np.ndarray, threshold: float) -> np.ndarray:
    """``(P, K)`` bool: the classes whose calibrated probability is at least ``1 - threshold``,
    and always the most probable class; all False on NaN rows."""
    p = np.asarray(probabilities, dtype=np.float64)
    ok = np.isfinite(p).all(axis=1)
    safe = np.where(ok[:, None], p, 0.0)
    sets = safe >= 1.0 - threshold - 1e-9
    sets[np.arange(len(p)), safe.argmax(axis=1)] = True
    sets &= ok[:, None]
    return sets


def _confidence_and_correct(probabilities: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The highest probability of each usable row and whether its class is ``labels``'; rows with
    NaN or a negative label are left out."""
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    keep = (y >= 0) & np.isfinite(p).all(axis=1)
    p, y = p[keep], y[keep]
    if not len(p):
        return np.zeros(0), np.zeros(0, dtype=bool)
    return p.max(axis=1), p.argmax(axis=1) == y


def reliability_table(probabilities: np.ndarray, labels: np.ndarray, bins: int = 10) -> list[dict[str, float]]:
    """Per confidence bin (``bins`` equal widths of the highest probability): parcels, mean
    confidence and accuracy (NaN for an empty bin). Rows with NaN or a negative label are left out."""
    return reliability(*_confidence_and_correct(probabilities, labels), bins).bins


def expected_calibration_error(probabilities: np.ndarray, labels: np.ndarray, bins: int = 10) -> float:
    """The parcel-weighted mean gap between confidence and accuracy over ``bins`` equal-width
    confidence bins (0 for no usable parcel)."""
    return reliability(*_confidence_and_correct(probabilities, labels), bins).ece


def class_indices(labels: Sequence[str], classes: Sequence[str]) -> np.ndarray:
    """Class names -> indices into ``classes``; -1 for names the model does not know."""
    position = {c: i for i, c in enumerate(classes)}
    return np.asarray([position.get(str(label), -1) for label in labels], dtype=np.int64)
