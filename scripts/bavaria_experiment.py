"""Calendar PE against thermal PE on real parcels: the Bavarian LPIS parcels (imported once
from the shared real data) cross-validated by spatial blocks; writes results.json and table.md.

Usage: python scripts/bavaria_experiment.py [--work runs/bavaria] [--variants calendar tpe_sinusoidal]
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import torch

from thermocrop.training.realdata import bavaria_dataset, cross_validate
from thermocrop.training.train import TrainingConfig

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "bavaria")
    parser.add_argument("--realdata", type=Path, help="folder holding bavaria2018/ and duernast-weather/")
    parser.add_argument("--variants", nargs="+", default=["calendar", "tpe_sinusoidal"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--steps-per-epoch", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sample-dates", type=int, default=14)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    dataset = bavaria_dataset(args.work / "dataset", args.realdata)
    config = TrainingConfig(epochs=args.epochs, steps_per_epoch=args.steps_per_epoch, batch_size=args.batch_size,
                            sample_pixels=1, sample_dates=args.sample_dates, device="cpu")
    data = cross_validate(dataset, args.variants, args.work / "results", config, n_folds=args.folds,
                          seeds=args.seeds)
    print((args.work / "results" / "table.md").read_text())
    return 0 if data["runs"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
