"""Training recipes for partial seasons compared on the real Bavarian parcels: one model of each
recipe, with the shipped model's budget and data, scored as of each acquisition of 2018.

Usage: python scripts/inseason_recipe.py train RECIPE [--epochs 30] [--work runs/experiment] [--out runs/inseason-recipe]
       python scripts/inseason_recipe.py score [--work ...] [--out ...]

``train`` trains one model of ``RECIPE`` (:data:`RECIPES`) on the four synthetic regions made as
``scripts/default_model.py`` makes them (re-used from ``--work``) with the shipped recipe's settings
and budget (or ``--epochs`` of it), one member (so two recipes can train side by side, one process each). ``score`` scores
every trained recipe and the shipped model on the real Bavarian parcels (``training.realdata``,
imported into ``--out``) as of each acquisition and writes ``scores.csv`` and ``table.md``.
"""

from __future__ import annotations

import argparse
import csv
import io
import logging
import time
from pathlib import Path

import numpy as np

from thermocrop.core.model.bundle import default_bundle_path, load_bundle
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.training.experiment import REGIONS, prepare_regions
from thermocrop.training.realdata import bavaria_dataset
from thermocrop.training.season_accuracy import accuracy_through_season
from thermocrop.training.train import TrainingConfig, train_model

ROOT = Path(__file__).resolve().parent.parent

SHIPPED = dict(variant="tpe_sinusoidal", epochs=30, steps_per_epoch=25, batch_size=64, sample_pixels=16,
               sample_dates=24, mean_pixel_share=1.0, members=1, seed=0, device="cpu")
"""The shipped model's settings (``scripts/default_model.py``), one member."""

RECIPES = {
    "shipped": ("half the samples cut, windows ending in the second half of the dates (today's)",
                {"season_window_share": 0.5, "season_window_end": 0.5}),
    "early": ("three quarters of the samples cut, windows ending from a quarter of the dates on",
              {"season_window_share": 0.75, "season_window_end": 0.25}),
}
"""Recipe name -> (what, its season-window settings)."""

AS_OF = ("2018-05-30", "2018-06-30", "2018-08-30")
"""The dates of the table: the issue's targets and the whole season."""


def train(recipe: str, work: Path, out: Path, epochs: int) -> None:
    paths = prepare_regions(work, 500, 0, 32, "L1C")
    config = TrainingConfig(**{**SHIPPED, "epochs": epochs}, **RECIPES[recipe][1])
    started = time.perf_counter()
    train_model([open_dataset(p) for p in paths], out / recipe / "model.tcm", config, show_progress=False,
                provenance={"train_regions": list(REGIONS), "data": "synthetic"})
    logging.getLogger("inseason_recipe").info("%s trained in %.0f s", recipe, time.perf_counter() - started)


def score(out: Path) -> None:
    real = open_dataset(bavaria_dataset(out / "bavaria"))
    models = {"shipped ensemble (5 members)": default_bundle_path("L1C")}
    models.update({f"{name}: {what}": out / name / "model.tcm" for name, (what, _) in RECIPES.items()
                   if (out / name / "model.tcm").exists()})
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    writer.writerow(["model", "date", "gdd", "overall_accuracy", "macro_f1"])
    table = ["| model | OA 30 May | OA 30 June | OA whole season | macro F1 30 May / 30 June / whole |",
             "|---|---:|---:|---:|---|"]
    for name, path in models.items():
        season = accuracy_through_season(load_bundle(path), real, unseen="drop")
        for t, day in enumerate(season.dates):
            writer.writerow([name, str(day), f"{season.gdd[t]:.0f}", f"{season.overall_accuracy[t]:.4f}",
                             f"{season.macro_f1[t]:.4f}"])
        at = [int(np.flatnonzero(season.dates <= np.datetime64(d))[-1]) for d in AS_OF]
        table.append(f"| {name} | " + " | ".join(f"{season.overall_accuracy[i]:.3f}" for i in at)
                     + " | " + " / ".join(f"{season.macro_f1[i]:.3f}" for i in at) + " |")
        print(table[-1], flush=True)
    (out / "scores.csv").write_text(rows.getvalue())
    (out / "table.md").write_text("\n".join(table) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=("train", "score"))
    parser.add_argument("recipe", nargs="?", choices=tuple(RECIPES))
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "experiment")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "inseason-recipe")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=SHIPPED["epochs"],
                        help="epochs of 25 steps (default 30, the shipped budget)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import torch

    torch.set_num_threads(args.threads)
    if args.task == "train":
        if not args.recipe:
            parser.error("train needs a recipe: " + ", ".join(RECIPES))
        train(args.recipe, args.work, args.out, args.epochs)
    else:
        score(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
