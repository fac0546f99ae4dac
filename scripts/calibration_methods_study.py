"""Calibration and prediction-set methods compared by cross-fitting on the real Bavarian parcels:
each method is fitted on one half (west or east of the median longitude) and scored on the other,
both ways, so nothing is tuned on the half it is scored on; the same on the synthetic validation
and test blocks of the training regions (fitted on one, scored on the other) when their datasets
are given.

For each method and direction: overall accuracy (vector scaling and the binnings can change labels),
the expected calibration error (10 bins) with a 90 % bootstrap interval and its noise floor (the
mean error of labels drawn as the calibrated confidences promise: what a perfect calibration would
show on that many parcels), and for each set method the coverage and mean size of the sets.

Usage: python scripts/calibration_methods_study.py [--model resources/models/default_fast.tcm]
           [--datasets WORK/datasets/AT1 ... (the model's training regions)] [--coverage 0.9]
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path
from typing import Callable

import numpy as np

from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.model.calibration import (
    apply_scaling,
    conformal_threshold,
    expected_calibration_error,
    fit_temperature,
    fit_vector_scaling,
    prediction_sets,
)
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.training.calibrate import dataset_labels, raw_probabilities
from thermocrop.training.config import TrainingConfig, training_split
from thermocrop.training.realdata import bavaria_dataset, bavaria_halves

ROOT = Path(__file__).resolve().parent.parent
EPS = 1e-12

Calibrator = Callable[[np.ndarray], np.ndarray]


# --------------------------------------------------------------------------------------------
# Calibration methods: fitted on (probabilities, labels), they map raw probabilities to calibrated ones


def by_temperature(p: np.ndarray, y: np.ndarray) -> Calibrator:
    temperature = fit_temperature(p, y)
    return lambda q: apply_scaling(q, temperature).astype(np.float64)


def by_temperature_loss(loss: str) -> Callable[[np.ndarray, np.ndarray], Calibrator]:
    """Temperature chosen on a log grid by the Brier score or by the expected calibration error."""
    def fit(p: np.ndarray, y: np.ndarray) -> Calibrator:
        onehot = np.eye(p.shape[1])[y]

        def score(t: float) -> float:
            q = apply_scaling(p, t).astype(np.float64)
            return float(((q - onehot) ** 2).sum(axis=1).mean()) if loss == "brier" else expected_calibration_error(q, y)

        grid = np.exp(np.linspace(math.log(0.05), math.log(5.0), 400))
        temperature = float(grid[int(np.argmin([score(t) for t in grid]))])
        return lambda q: apply_scaling(q, temperature).astype(np.float64)
    return fit


def by_vector(p: np.ndarray, y: np.ndarray) -> Calibrator:
    temperature, bias, _ = fit_vector_scaling(p, y)
    return lambda q: apply_scaling(q, temperature, bias).astype(np.float64)


def _with_confidence(q: np.ndarray, confidence: np.ndarray) -> np.ndarray:
    """``q`` with its highest probability replaced by ``confidence``, the others scaled to sum to 1."""
    top, k = q.max(axis=1), q.argmax(axis=1)
    out = q * ((1.0 - confidence) / np.maximum(1.0 - top, EPS))[:, None]
    out[np.arange(len(q)), k] = confidence
    return out


def by_temperature_and_bins(p: np.ndarray, y: np.ndarray, bins: int = 5) -> Calibrator:
    """Temperature, then the confidence replaced by the accuracy of its equal-mass bin (with one
    pseudo-parcel at the bin's mean confidence)."""
    t = by_temperature(p, y)
    q = t(p)
    c, right = q.max(axis=1), (q.argmax(axis=1) == y).astype(float)
    edges = np.quantile(c, np.linspace(0.0, 1.0, bins + 1))
    edges[0], edges[-1] = 0.0, 1.0
    index = np.clip(np.searchsorted(edges, c, side="right") - 1, 0, bins - 1)
    accuracy = np.array([(right[index == b].sum() + c[index == b].mean()) / ((index == b).sum() + 1)
                         if (index == b).any() else np.nan for b in range(bins)])

    def apply(raw: np.ndarray) -> np.ndarray:
        q2 = t(raw)
        i = np.clip(np.searchsorted(edges, q2.max(axis=1), side="right") - 1, 0, bins - 1)
        return _with_confidence(q2, np.maximum(accuracy[i], 1.0 / q2.shape[1]))
    return apply


def by_temperature_and_isotonic(p: np.ndarray, y: np.ndarray) -> Calibrator:
    """Temperature, then the confidence mapped by the isotonic regression (pool adjacent violators)
    of right labels on it."""
    t = by_temperature(p, y)
    q = t(p)
    order = np.argsort(q.max(axis=1))
    xs, right = q.max(axis=1)[order], (q.argmax(axis=1) == y).astype(float)[order]
    blocks: list[list[float]] = []  # [mean, weight, first, last]
    for i, value in enumerate(right):
        blocks.append([value, 1.0, i, i])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            last, before = blocks.pop(), blocks.pop()
            weight = last[1] + before[1]
            blocks.append([(last[0] * last[1] + before[0] * before[1]) / weight, weight, before[2], last[3]])
    fitted = np.empty(len(xs))
    for value, _, first, last in blocks:
        fitted[int(first):int(last) + 1] = value

    def apply(raw: np.ndarray) -> np.ndarray:
        q2 = t(raw)
        return _with_confidence(q2, np.maximum(np.interp(q2.max(axis=1), xs, fitted), 1.0 / q2.shape[1]))
    return apply


CALIBRATIONS = {
    "raw": lambda p, y: (lambda q: q.astype(np.float64)),
    "temperature (likelihood; shipped default)": by_temperature,
    "temperature (Brier score)": by_temperature_loss("brier"),
    "temperature (calibration error)": by_temperature_loss("ece"),
    "vector scaling, cross-validated penalty (--method vector)": by_vector,
    "temperature + 5 equal-mass bins": by_temperature_and_bins,
    "temperature + isotonic": by_temperature_and_isotonic,
}


# --------------------------------------------------------------------------------------------
# Set methods: fitted on calibrated (probabilities, labels), they give each parcel's set


def threshold_sets(q: np.ndarray, y: np.ndarray, coverage: float) -> Callable[[np.ndarray], np.ndarray]:
    """Split conformal on 1 - p(true class), rank ceil((n + 1) coverage) (what classify does)."""
    threshold = conformal_threshold(1.0 - q[np.arange(len(y)), y], coverage)
    return lambda new: prediction_sets(new, threshold)


def adaptive_sets(randomised: bool) -> Callable:
    """Adaptive prediction sets: the score is the probability mass of the classes ranked down to the
    true one (randomised: less a uniform share of the true class's own)."""
    def fit(q: np.ndarray, y: np.ndarray, coverage: float) -> Callable[[np.ndarray], np.ndarray]:
        order = np.argsort(-q, axis=1)
        ranked = np.take_along_axis(q, order, axis=1)
        rank = np.argmax(order == y[:, None], axis=1)
        scores = np.cumsum(ranked, axis=1)[np.arange(len(y)), rank]
        if randomised:
            scores = scores - np.random.default_rng(1).random(len(y)) * ranked[np.arange(len(y)), rank]
        threshold = conformal_threshold(scores, coverage)

        def sets(new: np.ndarray) -> np.ndarray:
            order_new = np.argsort(-new, axis=1)
            ranked_new = np.take_along_axis(new, order_new, axis=1)
            mass = np.cumsum(ranked_new, axis=1)
            if randomised:
                keep = mass - np.random.default_rng(2).random(len(new))[:, None] * ranked_new <= threshold + 1e-9
            else:
                keep = mass - ranked_new < threshold + 1e-12
            keep[:, 0] = True
            out = np.zeros_like(keep)
            np.put_along_axis(out, order_new, keep, axis=1)
            return out
        return sets
    return fit


def class_conditional_sets(min_parcels: int) -> Callable:
    """A threshold per true class with at least ``min_parcels`` calibration parcels, the common one
    for the others."""
    def fit(q: np.ndarray, y: np.ndarray, coverage: float) -> Callable[[np.ndarray], np.ndarray]:
        scores = 1.0 - q[np.arange(len(y)), y]
        common = conformal_threshold(scores, coverage)
        thresholds = np.array([conformal_threshold(scores[y == k], coverage) if (y == k).sum() >= min_parcels
                               else common for k in range(q.shape[1])])

        def sets(new: np.ndarray) -> np.ndarray:
            out = new >= 1.0 - thresholds[None, :] - 1e-9
            out[np.arange(len(new)), new.argmax(axis=1)] = True
            return out
        return sets
    return fit


SETS = {"threshold": threshold_sets, "APS": adaptive_sets(False), "randomised APS": adaptive_sets(True),
        "class-conditional (>= 10 parcels)": class_conditional_sets(10)}


# --------------------------------------------------------------------------------------------
# Scores


def noise_floor(q: np.ndarray, y: np.ndarray, draws: int = 1000) -> tuple[float, float, float]:
    """The mean calibration error of labels right with the probability the confidence says
    (a perfect calibration on this many parcels), and a 90 % bootstrap interval of the error."""
    rng = np.random.default_rng(0)
    best = q.argmax(axis=1)
    floor, boot = [], []
    for _ in range(draws):
        right = rng.random(len(q)) < q.max(axis=1)
        floor.append(expected_calibration_error(q, np.where(right, best, (best + 1) % q.shape[1])))
        i = rng.integers(0, len(y), len(y))
        boot.append(expected_calibration_error(q[i], y[i]))
    low, high = np.percentile(boot, [5, 95])
    return float(np.mean(floor)), float(low), float(high)


def study(parts: dict[str, tuple[np.ndarray, np.ndarray]], coverage: float) -> list[str]:
    names = list(parts)
    lines = ["| calibration | fitted on -> scored on (parcels) | OA % | ECE [90 % bootstrap] | ECE floor | "
             + " | ".join(f"{s}: coverage % / size" for s in SETS) + " |",
             "|---" * (5 + len(SETS)) + "|"]
    for label, calibrate in CALIBRATIONS.items():
        for fit, test in ((names[0], names[1]), (names[1], names[0])):
            (pf, yf), (pt, yt) = parts[fit], parts[test]
            calibrator = calibrate(pf, yf)
            qf, qt = calibrator(pf), calibrator(pt)
            ece = expected_calibration_error(qt, yt)
            floor, low, high = noise_floor(qt, yt)
            cells = [label, f"{fit} ({len(yf)}) -> {test} ({len(yt)})", f"{100 * (qt.argmax(axis=1) == yt).mean():.1f}",
                     f"{ece:.3f} [{low:.3f}, {high:.3f}]", f"{floor:.3f}"]
            for make in SETS.values():
                s = make(qf, yf, coverage)(qt)
                cells.append(f"{100 * s[np.arange(len(yt)), yt].mean():.1f} / {s.sum(axis=1).mean():.2f}")
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _usable(p: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = (y >= 0) & np.isfinite(p).all(axis=1)
    return p[keep].astype(np.float64), y[keep]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "resources" / "models" / "default_fast.tcm")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "realdata")
    parser.add_argument("--realdata", type=Path)
    parser.add_argument("--datasets", type=Path, nargs="*", help="the model's training regions, in training order")
    parser.add_argument("--coverage", type=float, default=0.9)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    bundle = load_bundle(args.model)
    halves = bavaria_halves(bavaria_dataset(args.work / "bavaria", args.realdata), args.realdata)
    real = {h: _usable(raw_probabilities(bundle, halves[h]), dataset_labels(bundle, halves[h]))
            for h in ("west", "east")}
    print(f"Model {args.model.name}; sets for {100 * args.coverage:.0f} % coverage.\n\nReal Bavarian parcels:\n")
    print("\n".join(study(real, args.coverage)))
    if args.datasets:
        datasets = [open_dataset(p) for p in args.datasets]
        split = training_split(datasets, TrainingConfig(**dict(bundle.config.provenance["training"])))
        synthetic = {}
        for name, sets, rows in (("validation", split.val_sets, split.val_rows),
                                 ("test", split.test_sets, split.test_rows)):
            parts = [ps.subset(np.asarray(r)) for ps, r in zip(sets, rows)]
            synthetic[name] = _usable(np.concatenate([raw_probabilities(bundle, ps) for ps in parts]),
                                      np.concatenate([dataset_labels(bundle, ps) for ps in parts]))
        print("\nSynthetic validation and test blocks of the training regions:\n")
        print("\n".join(study(synthetic, args.coverage)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
