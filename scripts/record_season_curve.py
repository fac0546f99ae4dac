"""Record a shipped model's accuracy through the season into a new bundle, as training records it
today: OA and macro F1 on the validation blocks of its own training split as of every 1/N of the
season's GDD, the level (90 % of its whole-season OA unless given) and the part of the season its
training cut samples to. For models trained before training recorded it.

Usage: python scripts/record_season_curve.py --model resources/models/default.tcm --out NEW.tcm
           [--work runs/experiment | --datasets D ...] [--level L1C|L2A] [--cuts 20] [--season-level OA]
           [--overwrite]

The regions' datasets are made (or re-used) in ``--work`` exactly as ``scripts/default_model.py``
makes them (``runs/experiment`` for L1C, ``runs/experiment-l2a`` for L2A; 500 parcels, seed 0,
32 pixels), and the split is the one the bundle's stored training settings give. The model file
itself is never rewritten: copy ``NEW.tcm`` over it once checked.
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import fields
from pathlib import Path

from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.model.season_curve import DEFAULT_CUTS
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.training.config import TrainingConfig, stored_config, training_split
from thermocrop.training.experiment import prepare_regions
from thermocrop.training.season_record import recorded_bundle, season_curve, trained_part

ROOT = Path(__file__).resolve().parent.parent
WORK = {"L1C": ROOT / "runs" / "experiment", "L2A": ROOT / "runs" / "experiment-l2a"}
"""Level -> the work folder ``scripts/default_model.py`` uses by default."""


def stored_training(bundle) -> TrainingConfig:
    """The training settings a bundle's provenance stores, as the ``TrainingConfig`` that split its data."""
    stored = stored_config((bundle.config.provenance or {}).get("training") or {})
    known = {f.name for f in fields(TrainingConfig)}
    settings = {k: v for k, v in stored.items() if k in known}
    if settings.get("classes") is not None:
        settings["classes"] = tuple(settings["classes"])
    return TrainingConfig(**settings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="the bundle to record (it is not changed)")
    parser.add_argument("--out", type=Path, required=True, help="the new bundle to write")
    parser.add_argument("--level", choices=tuple(WORK), default=None,
                        help="processing level of its training regions (default: the bundle's scene level)")
    parser.add_argument("--work", type=Path, default=None, help="folder of the regions and datasets")
    parser.add_argument("--datasets", type=Path, nargs="+", default=None,
                        help="the extracted regions it was trained on, in its training's order, in place of "
                        "--work (a model trained on several synthetic seasons)")
    parser.add_argument("--parcels", type=int, default=500)
    parser.add_argument("--cuts", type=int, default=DEFAULT_CUTS)
    parser.add_argument("--season-level", type=float, default=None,
                        help="the OA to record as the level (default 90 %% of the whole-season OA)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    bundle = load_bundle(args.model)
    level = args.level or bundle.config.scene_level or "L1C"
    config = stored_training(bundle)
    paths = args.datasets or prepare_regions(args.work or WORK[level], args.parcels, config.seed, 32, level)
    started = time.perf_counter()
    split = training_split([open_dataset(p) for p in paths], config)
    if tuple(split.classes) != tuple(bundle.classes):
        raise SystemExit(f"The datasets give the classes {split.classes}, the model has {bundle.classes}: "
                         "not the data it was trained on.")
    curve = season_curve(bundle, split.val_sets, split.val_rows, source="the validation blocks of the training data",
                         cuts=args.cuts, level=args.season_level,
                         trained_on=trained_part((bundle.config.provenance or {}).get("training") or {}))
    recorded_bundle(bundle, curve, args.out, overwrite=args.overwrite, inputs=[args.model])
    first = curve.reached()
    print(f"{args.out}: {curve.parcels} validation parcels, OA "
          + " ".join(f"{v:.2f}" for v in curve.overall_accuracy)
          + f"; level {curve.level:.3f} ({curve.level_rule}) "
          + (f"reached from {100 * curve.fractions[first]:.0f} % of the season's GDD" if first is not None
             else "not reached")
          + f"; {time.perf_counter() - started:.0f} s (datasets ready)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
