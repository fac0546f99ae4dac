"""How the shipped models' confidence and 90 % prediction sets hold on the real Bavarian parcels
as of each acquisition: calibrated with the whole-season temperature alone, and with the season
stages the models carry (``core.model.season_stages``, fitted on synthetic validation blocks).

Every one of the 301 parcels counts; one not yet seen on a date is wrong and outside any set.

Usage: python scripts/season_stages_real.py [--work runs/bavaria] [MODEL ...]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.model.calibration import expected_calibration_error, prediction_sets
from thermocrop.core.model.season_stages import prefix_gdd
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.training.calibrate import dataset_labels
from thermocrop.training.realdata import bavaria_dataset

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("default_fast.tcm", "inseason.tcm")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=[str(ROOT / "resources" / "models" / m) for m in MODELS])
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "bavaria")
    parser.add_argument("--coverage", type=float, default=0.9)
    args = parser.parse_args()
    real = open_dataset(bavaria_dataset(args.work))
    for path in args.models:
        bundle = load_bundle(path)
        calibration = bundle.calibration
        if calibration is None:
            raise SystemExit(f"{path} carries no calibration")
        raw = bundle.predict_prefixes(real, calibrated=False)
        labels = dataset_labels(bundle, real)
        gdd = prefix_gdd(real.gdd, real.date_mask)
        print(f"{Path(path).name}: as of | GDD | OA | ECE whole-season -> staged | {100 * args.coverage:g} % sets "
              "cover, whole-season -> staged | mean size")
        whole = replace(calibration, stages=())
        for t, day in enumerate(real.dates):
            seen = ~np.isnan(raw[:, t]).any(axis=1) & (labels >= 0)
            p, y, g = raw[seen, t], labels[seen], gdd[seen, t]
            before, after = whole.apply(p), calibration.apply(p, g)
            median = float(np.median(g))
            sets_before = prediction_sets(before, calibration.threshold(args.coverage))
            sets_after = prediction_sets(after, calibration.threshold(args.coverage, median))
            rows = np.arange(len(y))
            print(f"| {day} | {median:,.0f} | {(before.argmax(1) == y).sum() / len(real):.3f} | "
                  f"{expected_calibration_error(before, y):.3f} -> {expected_calibration_error(after, y):.3f} | "
                  f"{sets_before[rows, y].sum() / len(real):.3f} -> {sets_after[rows, y].sum() / len(real):.3f} | "
                  f"{sets_before.sum(1).mean():.2f} -> {sets_after.sum(1).mean():.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
