"""Calibrated class probabilities and prediction sets.

A network's softmax output ranks classes well but its highest value is not the chance that the
label is right. A :class:`Calibration` fitted on labelled parcels the model did not train on
turns it into one and says which classes to keep to hold the true one with a chosen chance:

- **Temperature scaling**: the log-probabilities divided by one number ``T`` before the softmax
  (``T`` > 1 softens over-confident output, ``T`` < 1 sharpens under-confident output). ``T`` is
  the value that gives the held-out labels the highest likelihood; the ranking of the classes,
  and so every label, is unchanged.
- **Vector scaling** (a choice, ``method="vector"``): the same divisor and one added bias per
  class, ``softmax(log(p) / T + b)``, fitted by the same likelihood with an L2 penalty
  ``lam * |b|^2`` whose weight is chosen by 5-fold cross-validation on the calibration parcels
  themselves. The biases correct how often the model names each class on the user's fields, so a
  few labels can change.
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
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from ..accuracy_stats import reliability
from ..errors import InputError
from .season_stages import MAX_STAGE_SCORES, MAX_STAGES, SeasonStage, stage_of

log = logging.getLogger(__name__)

__all__ = [
    "MIN_CALIBRATION_PARCELS",
    "DEFAULT_COVERAGE",
    "Calibration",
    "CALIBRATION_METHODS",
    "fit_temperature",
    "fit_vector_scaling",
    "apply_temperature",
    "apply_scaling",
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

CALIBRATION_METHODS = ("temperature", "vector")
"""How a calibration turns raw probabilities into calibrated ones (see the module's text)."""

BIAS_LIMIT = 50.0
"""The largest class bias accepted from a bundle (a bias of 50 multiplies a probability by e^50)."""

VECTOR_PENALTIES = (0.001, 0.01, 0.03, 0.1, 0.3, 1.0, 10.0)
"""The weights of the bias penalty that vector scaling's cross-validation chooses from."""

VECTOR_FOLDS = 5

MAX_SCORES = 100_000
"""Conformal scores stored in a bundle at most (a bundle config is read whole)."""

_EPS = 1e-12


@dataclass(frozen=True)
class Calibration:
    """How a model's probabilities are calibrated, stored in its bundle.

    Attributes:
        temperature: the divisor of the log-probabilities (1.0: unchanged).
        bias: one number per class added to the divided log-probabilities (vector scaling), or
            empty (temperature scaling).
        scores: sorted conformal scores ``1 - p(true class)`` of the calibration parcels, under the
            calibrated probabilities.
        parcels: how many labelled parcels the calibration was fitted on.
        source: what they were (``"validation blocks of the training data"``, a layer's name, ...).
        ece_before, ece_after: the expected calibration error on those parcels before and after.
        stages: the calibration of predictions made early in the season (``season_stages``); empty:
            the whole-season calibration holds for every prediction.
    """

    temperature: float = 1.0
    scores: tuple[float, ...] = field(default_factory=tuple)
    parcels: int = 0
    source: str = ""
    ece_before: Optional[float] = None
    ece_after: Optional[float] = None
    bias: tuple[float, ...] = field(default_factory=tuple)
    stages: tuple[SeasonStage, ...] = field(default_factory=tuple)

    @property
    def method(self) -> str:
        """``"temperature"`` or ``"vector"`` (:data:`CALIBRATION_METHODS`)."""
        return "vector" if self.bias else "temperature"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in ``BundleConfig.calibration``."""
        data = {"method": self.method, "temperature": float(self.temperature),
                "scores": [round(float(s), 6) for s in self.scores], "parcels": int(self.parcels),
                "source": self.source, "ece_before": self.ece_before, "ece_after": self.ece_after}
        if self.bias:
            data["bias"] = [float(b) for b in self.bias]
        if self.stages:
            data["stages"] = [stage.to_dict() for stage in self.stages]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Optional["Calibration"]:
        """The calibration of a bundle's ``calibration`` record; None for an empty one (a bundle
        written before calibrations existed, or never calibrated)."""
        if not data:
            return None
        check_calibration_data(data)
        return cls(temperature=float(data["temperature"]), scores=tuple(float(s) for s in data["scores"]),
                   parcels=int(data["parcels"]), source=str(data["source"]),
                   ece_before=data.get("ece_before"), ece_after=data.get("ece_after"),
                   bias=tuple(float(b) for b in data.get("bias", ())),
                   stages=tuple(SeasonStage.from_dict(stage) for stage in data.get("stages", ())))

    def apply(self, probabilities: np.ndarray, gdd: Optional[np.ndarray] = None) -> np.ndarray:
        """``probabilities (P, K)`` calibrated; NaN rows stay NaN. With ``gdd (P,)``, the GDD of
        each row's last date, rows early in the season take their stage's temperature."""
        out = apply_scaling(probabilities, self.temperature, self.bias)
        for k, rows in self._stage_rows(gdd):
            stage = self.stages[k]
            out[rows] = apply_scaling(np.asarray(probabilities)[rows], stage.temperature, stage.bias)
        return out

    def undo(self, probabilities: np.ndarray, gdd: Optional[np.ndarray] = None) -> np.ndarray:
        """The raw probabilities ``(P, K)`` that :meth:`apply` (with the same ``gdd``) turned into
        ``probabilities``: ``softmax(T * (log(q) - b))`` (what ``T`` and ``b`` added cancels in
        the softmax)."""
        q = np.asarray(probabilities, dtype=np.float64)
        staged = self._stage_rows(gdd)
        if self.bias:
            q = apply_scaling(q, 1.0, -np.asarray(self.bias))
        out = apply_temperature(q, 1.0 / self.temperature)
        for k, rows in staged:
            stage = self.stages[k]
            q = np.asarray(probabilities, dtype=np.float64)[rows]
            if stage.bias:
                q = apply_scaling(q, 1.0, -np.asarray(stage.bias))
            out[rows] = apply_temperature(q, 1.0 / stage.temperature)
        return out

    def threshold(self, coverage: float, gdd: Optional[float] = None) -> float:
        """The set threshold ``q`` for ``coverage`` (see :func:`conformal_threshold`); with
        ``gdd``, that of the stage of predictions made at that GDD."""
        stage = self.stage_at(gdd)
        return conformal_threshold(np.asarray(self.scores if stage is None else stage.scores), coverage)

    def stage_at(self, gdd: Optional[float]) -> Optional[SeasonStage]:
        """The stage calibrating predictions at ``gdd``; None for the whole-season calibration."""
        if gdd is None or not self.stages:
            return None
        index = int(stage_of(self.stages, np.array([gdd], dtype=np.float64))[0])
        return self.stages[index] if index >= 0 else None

    def _stage_rows(self, gdd: Optional[np.ndarray]) -> list[tuple[int, np.ndarray]]:
        if gdd is None or not self.stages:
            return []
        index = stage_of(self.stages, gdd)
        return [(k, np.flatnonzero(index == k)) for k in range(len(self.stages)) if (index == k).any()]


def check_calibration_data(data: Any, classes: Optional[int] = None) -> None:
    """Check a bundle's ``calibration`` record field by field (``classes``: the model's number of
    classes, which the vector scaling biases must match; None: not checked).

    Raises:
        ValueError: naming the first entry that is missing, of the wrong type or out of range.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"calibration must be a mapping, not {type(data).__name__}")
    known = {"method", "temperature", "scores", "parcels", "source", "ece_before", "ece_after", "bias", "stages"}
    missing = sorted({"method", "temperature", "scores", "parcels", "source"} - set(data))
    if missing:
        raise ValueError(f"calibration lacks {', '.join(missing)}")
    extra = sorted(set(data) - known)
    if extra:
        raise ValueError(f"calibration has unknown entries {', '.join(map(str, extra))}")
    if data["method"] not in CALIBRATION_METHODS:
        raise ValueError(f"calibration.method is {data['method']!r}; this ThermoCrop knows "
                         + " and ".join(repr(m) for m in CALIBRATION_METHODS))
    bias = data.get("bias")
    if (data["method"] == "vector") != (bias is not None):
        raise ValueError("calibration.bias must be given with method 'vector', and only then")
    if bias is not None and (not isinstance(bias, (list, tuple)) or not bias
                             or any(not _finite(b) or abs(b) > BIAS_LIMIT for b in bias)):
        raise ValueError(f"calibration.bias must be a list of numbers from {-BIAS_LIMIT:g} to {BIAS_LIMIT:g}, "
                         "one per class")
    if bias is not None and classes is not None and len(bias) != classes:
        raise ValueError(f"calibration.bias must hold one number per class ({classes}), not {len(bias)}")
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
    if "stages" in data:
        check_stages(data["stages"], classes)
        if data["method"] != "vector" and any(isinstance(st, Mapping) and "bias" in st for st in data["stages"]):
            raise ValueError("calibration.stages may hold a bias with method 'vector' only")


def check_stages(data: Any, classes: Optional[int] = None) -> None:
    """Check a calibration's ``stages`` record (a list of :meth:`SeasonStage.to_dict` mappings
    with rising bounds; ``classes`` as :func:`check_calibration_data`).

    Raises:
        ValueError: naming the first entry that is missing, of the wrong type or out of range.
    """
    if not isinstance(data, (list, tuple)) or len(data) > MAX_STAGES:
        raise ValueError(f"calibration.stages must be a list of at most {MAX_STAGES} stages")
    previous = -math.inf
    for i, stage in enumerate(data):
        name = f"calibration.stages[{i}]"
        if (not isinstance(stage, Mapping)
                or set(stage) - {"bias"} != {"below_gdd", "temperature", "scores", "parcels"}):
            raise ValueError(f"{name} must hold below_gdd, temperature, scores and parcels (and bias), "
                             "and nothing else")
        bound, t, scores, parcels = stage["below_gdd"], stage["temperature"], stage["scores"], stage["parcels"]
        if not _finite(bound) or not previous < bound <= 100_000:
            raise ValueError(f"{name}.below_gdd must be a number above the stage before and at most 100,000")
        previous = bound
        if not _finite(t) or not TEMPERATURE_RANGE[0] <= t <= TEMPERATURE_RANGE[1]:
            raise ValueError(f"{name}.temperature must be a number from {TEMPERATURE_RANGE[0]:g} to "
                             f"{TEMPERATURE_RANGE[1]:g}")
        if (not isinstance(scores, (list, tuple)) or not scores or len(scores) > MAX_STAGE_SCORES
                or any(not _finite(s) or not 0.0 <= s <= 1.0 for s in scores)):
            raise ValueError(f"{name}.scores must be a list of 1 to {MAX_STAGE_SCORES:,} numbers from 0 to 1")
        if not isinstance(parcels, int) or isinstance(parcels, bool) or parcels < 0:
            raise ValueError(f"{name}.parcels must be a whole number")
        bias = stage.get("bias")
        if "bias" in stage and (not isinstance(bias, (list, tuple)) or not bias
                                 or any(not _finite(b) or abs(b) > BIAS_LIMIT for b in bias)
                                 or (classes is not None and len(bias) != classes)):
            raise ValueError(f"{name}.bias must be a list of numbers from {-BIAS_LIMIT:g} to {BIAS_LIMIT:g}, "
                             "one per class")


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def apply_temperature(probabilities: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(log(p) / T)`` row by row, float32; NaN rows stay NaN."""
    return apply_scaling(probabilities, temperature)


def apply_scaling(probabilities: np.ndarray, temperature: float, bias: Sequence[float] = ()) -> np.ndarray:
    """``softmax(log(p) / T + b)`` row by row, float32, with ``bias (K,)`` (empty: none); NaN
    rows stay NaN."""
    p = np.asarray(probabilities, dtype=np.float64)
    if (temperature == 1.0 and not len(bias)) or p.size == 0:
        return p.astype(np.float32)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p).all(axis=-1)
    z = np.log(np.clip(p[ok], _EPS, 1.0)) / temperature
    if len(bias):
        z = z + np.asarray(bias, dtype=np.float64)
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


def _vector_objective(log_p: np.ndarray, labels: np.ndarray, w: np.ndarray,
                      penalty: float) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean negative log-likelihood of ``labels`` under ``softmax(w[0] * log_p + w[1:])`` plus
    ``penalty * |w[1:]|^2``, with its gradient and Hessian in ``w``."""
    n, k = log_p.shape
    z = w[0] * log_p + w[1:]
    z = z - z.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(z).sum(axis=1))
    prob = np.exp(z - log_norm[:, None])
    rows = np.arange(n)
    value = float(np.mean(log_norm - z[rows, labels])) + penalty * float(w[1:] @ w[1:])
    residual = prob.copy()
    residual[rows, labels] -= 1.0
    gradient = np.concatenate([[np.sum(residual * log_p)], residual.sum(axis=0)]) / n
    gradient[1:] += 2.0 * penalty * w[1:]
    # d z_ik / d w: log_p_ik for the slope, the unit vector of class k for the biases
    jac = np.concatenate([log_p[:, :, None], np.broadcast_to(np.eye(k), (n, k, k))], axis=2)
    weighted = prob[:, :, None] * jac
    mean_jac = weighted.sum(axis=1)
    hessian = (np.einsum("nki,nkj->ij", weighted, jac) - mean_jac.T @ mean_jac) / n
    hessian[1:, 1:] += 2.0 * penalty * np.eye(k)
    return value, gradient, hessian


def _fit_vector(log_p: np.ndarray, labels: np.ndarray, penalty: float) -> np.ndarray:
    """``w = (1 / T, b_1..b_K)`` minimising :func:`_vector_objective`: Newton steps, halved until
    the objective falls (it is convex in ``w``, strictly so for ``penalty`` > 0)."""
    w = np.concatenate([[1.0], np.zeros(log_p.shape[1])])
    value, gradient, hessian = _vector_objective(log_p, labels, w, penalty)
    for _ in range(100):
        step = np.linalg.solve(hessian + 1e-9 * np.eye(len(w)), gradient)
        size = 1.0
        while size > 1e-8:
            trial = w - size * step
            trial_value, trial_gradient, trial_hessian = _vector_objective(log_p, labels, trial, penalty)
            if trial_value <= value:
                break
            size /= 2.0
        else:
            break
        converged = value - trial_value < 1e-12
        w, value, gradient, hessian = trial, trial_value, trial_gradient, trial_hessian
        if converged or np.abs(gradient).max() < 1e-10:
            break
    return w


def fit_vector_scaling(probabilities: np.ndarray, labels: np.ndarray,
                       groups: Optional[np.ndarray] = None) -> tuple[float, np.ndarray, float]:
    """Temperature ``T``, class biases ``b (K,)`` and penalty weight of vector scaling
    (``softmax(log(p) / T + b)``) on ``labels (n,)``.

    The penalty weight is the one of :data:`VECTOR_PENALTIES` whose fits on four fifths of the
    parcels give the held-out fifth the highest likelihood (folds drawn with a fixed seed), and the
    biases are then fitted on all parcels with it. ``T`` is kept inside :data:`TEMPERATURE_RANGE`.
    With ``groups (n,)`` (the parcel of each row, where a parcel gives several rows), the folds
    hold whole groups, so that no parcel is both fitted on and held out. With fewer parcels (or
    groups) than folds, the strongest penalty is taken.
    """
    log_p = np.log(np.clip(np.asarray(probabilities, dtype=np.float64), _EPS, 1.0))
    labels = np.asarray(labels, dtype=np.int64)
    if groups is None:
        folds = np.array_split(np.random.default_rng(0).permutation(len(labels)), VECTOR_FOLDS)
    else:
        names, which = np.unique(np.asarray(groups), return_inverse=True)
        parts = np.array_split(np.random.default_rng(0).permutation(len(names)), VECTOR_FOLDS)
        folds = [np.flatnonzero(np.isin(which, part)) for part in parts]
    # Fewer parcels than folds leave a fold empty and cannot choose a penalty: the strongest is taken.
    enough = all(len(f) for f in folds)
    best = (math.inf, VECTOR_PENALTIES[0] if enough else VECTOR_PENALTIES[-1])
    for penalty in VECTOR_PENALTIES if enough else ():
        loss = 0.0
        for i, held in enumerate(folds):
            fit = np.concatenate([f for j, f in enumerate(folds) if j != i])
            w = _fit_vector(log_p[fit], labels[fit], penalty)
            z = w[0] * log_p[held] + w[1:]
            z = z - z.max(axis=1, keepdims=True)
            loss += float(np.sum(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(held)), labels[held]]))
        if loss < best[0]:
            best = (loss, penalty)
    w = _fit_vector(log_p, labels, best[1])
    temperature = float(np.clip(1.0 / w[0], *TEMPERATURE_RANGE)) if w[0] > 0 else TEMPERATURE_RANGE[1]
    return temperature, np.clip(w[1:], -BIAS_LIMIT, BIAS_LIMIT), best[1]


def check_label_variety(labels: np.ndarray, classes: Sequence[str], source: str) -> None:
    """Refuse labels (``(n,)`` indices into ``classes``; negative: left out) of a single class.

    Fitted on one class, a calibration learns only to raise that class's probability: on the
    tester's parcels, all meadow, the temperature went to 3.2 and the 90 % sets held nearly every
    class, more of them late in the season than early.

    Raises:
        InputError: naming the class and the count.
    """
    used = np.asarray(labels)[np.asarray(labels) >= 0]
    found = np.unique(used)
    if len(found) == 1:
        raise InputError(f"{source}: all {len(used)} parcels that can calibrate the model are labelled "
                         f"{classes[int(found[0])]}; a calibration needs parcels of at least two classes to learn "
                         "how often the model is right. Give reference parcels of the crops you will classify.")


def fit_calibration(probabilities: np.ndarray, labels: np.ndarray, source: str,
                    min_parcels: int = MIN_CALIBRATION_PARCELS, method: str = "temperature",
                    say: Optional[Callable[[str], None]] = None) -> Calibration:
    """A :class:`Calibration` from the model's raw probabilities on labelled parcels it did not
    train on.

    Args:
        probabilities: ``(n, K)`` raw probabilities; rows with NaN (parcels without a result)
            are left out.
        labels: ``(n,)`` class indices into the model's classes; negative values (unlabelled,
            or a class the model does not know) are left out.
        source: what the parcels were, stored with the calibration and named in messages.
        min_parcels: the fewest usable parcels accepted.
        method: ``"temperature"`` or ``"vector"`` (:data:`CALIBRATION_METHODS`).
        say: where a temperature that reached a limit of :data:`TEMPERATURE_RANGE` is said (a
            run's report); None: the log, as a warning.

    Raises:
        InputError: fewer than ``min_parcels`` usable parcels, with the counts, or an unknown
            ``method``.
    """
    if method not in CALIBRATION_METHODS:
        raise InputError(f"The calibration method {method!r} is not known; choose "
                         + " or ".join(CALIBRATION_METHODS) + ".")
    p = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    usable = (y >= 0) & (y < p.shape[1]) & np.isfinite(p).all(axis=1)
    if usable.sum() < min_parcels:
        raise InputError(
            f"{source}: {int(usable.sum())} parcels can calibrate the model ({len(y)} given, "
            f"{int((y < 0).sum())} without a label the model knows, {int((~np.isfinite(p).all(axis=1)).sum())} "
            f"without a result); at least {min_parcels} are needed. Give more labelled parcels.")
    p, y = p[usable], y[usable]
    if method == "vector":
        temperature, bias, penalty = fit_vector_scaling(p, y)
        bias = np.round(bias, 6)  # as stored
        log.info("Vector scaling on %s: bias penalty %g chosen by cross-validation", source, penalty)
    else:
        temperature, bias = fit_temperature(p, y), np.zeros(0)
    calibrated = apply_scaling(p, temperature, bias).astype(np.float64)
    scores = np.sort(1.0 - calibrated[np.arange(len(y)), y])
    if len(scores) > MAX_SCORES:  # evenly spaced order statistics keep the quantiles
        scores = scores[np.linspace(0, len(scores) - 1, MAX_SCORES).round().astype(int)]
    before = expected_calibration_error(p, y)
    after = expected_calibration_error(calibrated, y)
    say = say or log.warning
    if temperature >= 0.999 * TEMPERATURE_RANGE[1]:
        say(f"The calibration on {source} reached the highest temperature ({TEMPERATURE_RANGE[1]:g}): on these "
            "parcels the model's probabilities say next to nothing about the labels, so the calibrated confidences "
            "say little about each parcel. Check the labels, the class map, and that the parcels are of the model's "
            "processing level and season.")
    if temperature <= 1.001 * TEMPERATURE_RANGE[0]:
        say(f"The calibration on {source} reached the lowest temperature ({TEMPERATURE_RANGE[0]:g}): on these "
            "parcels the model's ranking separates the labels almost perfectly, so the calibrated confidences are "
            f"near certain ({len(np.unique(y))} of the model's {p.shape[1]} classes among the labels). Other crops, "
            "and fields unlike these, would be given a certainty they have not earned: give reference parcels of "
            "every crop you will classify.")
    log.info("Calibration (%s) on %s: %d parcels, temperature %.3f, expected calibration error %.3f -> %.3f",
             method, source, len(y), temperature, before, after)
    return Calibration(temperature=temperature, scores=tuple(float(s) for s in scores), parcels=int(len(y)),
                       source=source, ece_before=round(before, 6), ece_after=round(after, 6),
                       bias=tuple(float(b) for b in bias))


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
