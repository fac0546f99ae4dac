"""How the shipped models' confidence and 90 % prediction sets hold on the real Bavarian parcels
as of each acquisition: calibrated with the whole-season temperature alone, and with the season
stages the models carry (``core.model.season_stages``, fitted on synthetic validation blocks).

Every one of the 301 parcels counts; one not yet seen on a date is wrong and outside any set.

With ``--halves``, as ``thermocrop calibrate --reference`` would calibrate each model on one half
of the parcels (west or east of their median longitude) and score it on the other: the model's own
calibration, the whole-season calibration fitted on the half alone, and that with the season stages
fitted on the half's parcels as of each date. ``--method vector`` fits them as ``calibrate
--method vector`` does: the whole season and each stage with a temperature and class biases, which
can change labels, so the overall accuracy (all parcels counted) is printed with the model's own
calibration and with the half's.

Usage: python scripts/season_stages_real.py [--work runs/bavaria] [--halves [--method vector]] [MODEL ...]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.model.calibration import expected_calibration_error, fit_calibration, prediction_sets
from thermocrop.core.model.season_stages import prefix_gdd
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.training.calibrate import dataset_labels, fit_season_stages
from thermocrop.training.realdata import bavaria_dataset, bavaria_halves

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("default_fast.tcm", "inseason.tcm")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=[str(ROOT / "resources" / "models" / m) for m in MODELS])
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "bavaria")
    parser.add_argument("--coverage", type=float, default=0.9)
    parser.add_argument("--halves", action="store_true", help="calibrate on one half, score on the other")
    parser.add_argument("--method", choices=("temperature", "vector"), default="temperature",
                        help="how the halves' calibrations are fitted")
    args = parser.parse_args()
    if args.halves:
        for path in args.models:
            cross_halves(load_bundle(path), Path(path).name, args.work, args.coverage, args.method)
        return 0
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


def cross_halves(bundle, name: str, work: Path, coverage: float, method: str = "temperature") -> None:
    """Calibrate ``bundle`` on each Bavarian half (whole season, then with stages) and print how
    each calibration holds on the other half as of each acquisition."""
    halves = {}
    for half, ps in bavaria_halves(bavaria_dataset(work)).items():
        halves[half] = (bundle.predict_prefixes(ps, calibrated=False), dataset_labels(bundle, ps),
                        prefix_gdd(ps.gdd, ps.date_mask), ps.dates)
    for fitted, scored in (("west", "east"), ("east", "west")):
        raw, labels, gdd, _ = halves[fitted]
        n, t, k = raw.shape
        whole = fit_calibration(raw[:, -1], labels, fitted, method=method)
        staged = replace(whole, stages=fit_season_stages(raw.reshape(n * t, k), np.repeat(labels, t), gdd.ravel(),
                                                         np.repeat(np.arange(n), t), method=method))
        print(f"{name}: {method} fitted on the {fitted} half ({whole.parcels} parcels), scored on the {scored}: "
              f"as of | GDD | OA own -> half, staged | ECE own -> half, whole-season -> half, staged "
              f"| {100 * coverage:g} % sets cover, the same three | mean size, staged")
        raw, labels, gdd, dates = halves[scored]
        for i, day in enumerate(dates):
            seen = ~np.isnan(raw[:, i]).any(axis=1) & (labels >= 0)
            p, y, g = raw[seen, i], labels[seen], gdd[seen, i]
            median, rows = float(np.median(g)), np.arange(len(y))
            eces, covers, right = [], [], []
            for calibration in (bundle.calibration, whole, staged):
                q = calibration.apply(p, g)
                sets = prediction_sets(q, calibration.threshold(coverage, median))
                eces.append(f"{expected_calibration_error(q, y):.3f}")
                covers.append(f"{sets[rows, y].sum() / len(labels):.3f}")
                right.append(f"{(q.argmax(1) == y).sum() / len(labels):.3f}")
            print(f"| {day} | {median:,.0f} | {right[0]} -> {right[2]} | {' -> '.join(eces)} | {' -> '.join(covers)} "
                  f"| {sets.sum(1).mean():.2f} |")


if __name__ == "__main__":
    raise SystemExit(main())
