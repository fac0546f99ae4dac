"""Calibration and prediction sets of a model on the real Bavarian parcels: the expected
calibration error (10 bins) of its raw probabilities, of its own calibration, and of a calibration
fitted on one half (west or east of the median longitude) by each method of
``thermocrop calibrate --method`` and measured on the other; and the coverage and mean size of its
prediction sets there. ``scripts/calibration_methods_study.py`` compares more methods.

Usage: python scripts/calibration_study.py [--model resources/models/default_fast.tcm]
                                           [--work runs/realdata] [--coverage 0.9]
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np

from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.model.calibration import CALIBRATION_METHODS, expected_calibration_error, prediction_sets
from thermocrop.training.calibrate import calibrate_on_datasets, dataset_labels, raw_probabilities
from thermocrop.training.realdata import bavaria_dataset, bavaria_halves

ROOT = Path(__file__).resolve().parent.parent


def _row(name: str, probabilities: np.ndarray, labels: np.ndarray, sets: np.ndarray = None) -> str:
    keep = labels >= 0
    p, y = probabilities[keep], labels[keep]
    accuracy = float((p.argmax(axis=1) == y).mean())
    cells = [name, str(len(y)), f"{100 * accuracy:.1f}", f"{100 * p.max(axis=1).mean():.1f}",
             f"{expected_calibration_error(p, y):.3f}"]
    if sets is not None:
        s = sets[keep]
        cells += [f"{100 * s[np.arange(len(y)), y].mean():.1f}", f"{s.sum(axis=1).mean():.2f}"]
    else:
        cells += ["", ""]
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "resources" / "models" / "default_fast.tcm")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "realdata")
    parser.add_argument("--realdata", type=Path)
    parser.add_argument("--coverage", type=float, default=0.9)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    bundle = load_bundle(args.model)
    halves = bavaria_halves(bavaria_dataset(args.work / "bavaria", args.realdata), args.realdata)
    raw = {h: raw_probabilities(bundle, ps) for h, ps in halves.items()}
    labels = {h: dataset_labels(bundle, ps) for h, ps in halves.items()}
    lines = [f"Model {args.model.name}; prediction sets for {100 * args.coverage:.0f} % coverage.", "",
             "| probabilities, scored on | parcels | OA % | mean confidence % | ECE | set coverage % | mean set size |",
             "|---|---|---|---|---|---|---|"]
    for half in ("east", "west"):
        lines.append(_row(f"raw, {half}", raw[half], labels[half]))
    if bundle.calibration is not None:
        own = bundle.calibration
        for half in ("east", "west"):
            p = own.apply(raw[half])
            lines.append(_row(f"its own calibration ({own.source}, T {own.temperature:.2f}), {half}", p, labels[half],
                              prediction_sets(p, own.threshold(args.coverage))))
    for method in CALIBRATION_METHODS:
        for fit, test in (("west", "east"), ("east", "west")):
            cal = calibrate_on_datasets(bundle, [halves[fit]], f"the {fit} half", method=method)
            p = cal.apply(raw[test])
            lines.append(_row(f"{method} fitted on the {fit} half ({cal.parcels} parcels, T {cal.temperature:.2f}), "
                              f"{test}", p, labels[test], prediction_sets(p, cal.threshold(args.coverage))))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
