"""Give a shipped model the calibration its training would have given it: fitted on the
validation blocks of its synthetic training regions (the block split its training used, taken
from the bundle's record of its training settings), never on real parcels; with its season
stages, fitted on the same parcels cut at every date (``core.model.season_stages``).

Usage: python scripts/calibrate_shipped.py --datasets WORK/datasets/AT1 ... [--model resources/models/default.tcm]
                                           [--out resources/models/default.tcm]

The datasets are the regions the model was trained on, in the order it was trained on them
(``scripts/default_model.py`` extracts them into ``WORK/datasets``).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from thermocrop.core.model.bundle import calibrated_bundle, load_bundle
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.training.calibrate import calibrate_on_datasets
from thermocrop.training.config import TrainingConfig, training_split

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "resources" / "models" / "default.tcm")
    parser.add_argument("--datasets", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, help="the calibrated bundle (default: replace --model)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    bundle = load_bundle(args.model)
    record = dict(bundle.config.provenance.get("training") or {})
    if not record:
        raise SystemExit(f"{args.model} does not record its training settings; its validation blocks are unknown.")
    config = TrainingConfig(**record)
    datasets = [open_dataset(p) for p in args.datasets]
    split = training_split(datasets, config)
    if tuple(split.classes) != tuple(bundle.classes):
        raise SystemExit(f"The datasets give the classes {split.classes}, the model has {bundle.classes}: "
                         "not the data it was trained on.")
    calibration = calibrate_on_datasets(bundle, split.val_sets, "the validation blocks of the synthetic training "
                                        "regions (" + ", ".join(p.name for p in args.datasets) + ")",
                                        rows=split.val_rows, stages=True)
    calibrated_bundle(bundle, calibration, args.out or args.model, overwrite=True)
    print(f"wrote {args.out or args.model}: temperature {calibration.temperature:.3f} from {calibration.parcels} "
          f"parcels, expected calibration error {calibration.ece_before:.3f} -> {calibration.ece_after:.3f}; season "
          "stages: " + ", ".join(f"below {s.below_gdd:,.0f} GDD {s.temperature:.3f}" for s in calibration.stages))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
