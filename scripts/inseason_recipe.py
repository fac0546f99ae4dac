"""Training recipes for partial seasons compared on the real Bavarian parcels: models of each
recipe, with the shipped model's budget and data, scored as of each acquisition of 2018.

Usage: python scripts/inseason_recipe.py train RECIPE [--member M] [--epochs 30] [--work runs/experiment] [--out runs/inseason-recipe]
       python scripts/inseason_recipe.py ensemble RECIPE [--work ...] [--out ...]
       python scripts/inseason_recipe.py score [--work ...] [--out ...]

``train`` trains one model of ``RECIPE`` (:data:`RECIPES`) on the four synthetic regions made as
``scripts/default_model.py`` makes them (re-used from ``--work``; a recipe of several synthetic
seasons, :data:`SEASONS`, adds the regions of seeds 1, 2, ... from ``WORK-season1``, ... and makes
them there when missing) with the shipped recipe's settings
and budget (or ``--epochs`` of it), one member (so two runs can train side by side, one process
each); with ``--member M``, member M of the recipe's ensemble of :data:`MEMBERS` (seed M on the
split of seed 0, as the shipped ensemble's members). ``ensemble`` writes the ensemble bundle of the
members trained (member 0 is the single model of seed 0). ``score`` scores every model found (the
recipes' single models, members and ensembles, the shipped ensemble and distilled model) on the
real Bavarian parcels (``training.realdata``, imported into ``--out``) as of each acquisition and
writes ``scores.csv`` and ``table.md``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import numpy as np

from thermocrop.core.model.bundle import default_bundle_path, ensemble_bundle_path, load_bundle
from thermocrop.core.pixel_sets import open_dataset
from thermocrop.training.config import TrainingResult, output_paths
from thermocrop.training.ensemble import member_configs, member_paths, train_ensemble
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
    "early3": ("as early, on three synthetic seasons of the four regions (seeds 0, 1, 2)",
               {"season_window_share": 0.75, "season_window_end": 0.25}),
    "shipped3": ("the shipped recipe on three synthetic seasons of the four regions (seeds 0, 1, 2)",
                 {"season_window_share": 0.5, "season_window_end": 0.5}),
    "early5": ("as early, on five synthetic seasons of the four regions (seeds 0 to 4)",
               {"season_window_share": 0.75, "season_window_end": 0.25}),
    "early3rec": ("as early3, with the recurrent thermal encoding (TPE-Recurrent) instead of the sinusoidal one",
                  {"season_window_share": 0.75, "season_window_end": 0.25, "variant": "tpe_recurrent"}),
    "early3floor": ("as early3, each sample's acquisitions below 350 GDD left out (inseason.tcm's floor)",
                    {"season_window_share": 0.75, "season_window_end": 0.25, "gdd_floor": 350.0}),
}
"""Recipe name -> (what, its season-window settings)."""

SEASONS = {"early3": 3, "early3floor": 3, "shipped3": 3, "early5": 5, "early3rec": 3}
"""Recipe name -> synthetic seasons it trains on (1 where not named): each season is the four
regions synthesised with another seed, so other weather, acquisition dates, sowing and parcels."""

MEMBERS = 5
"""Members of a recipe's ensemble, as many as the shipped ensemble's."""

AS_OF = ("2018-05-30", "2018-06-30", "2018-08-30")
"""The dates of the table: the issue's targets and the whole season."""


def season_regions(work: Path, seasons: int) -> list[Path]:
    """The extracted regions of ``seasons`` synthetic seasons: season 0 (seed 0) in ``work`` as
    ``scripts/default_model.py`` makes it, season ``s`` (seed ``s``) beside it in
    ``WORK-season{s}``; made where missing."""
    paths = prepare_regions(work, 500, 0, 32, "L1C")
    for seed in range(1, seasons):
        paths += prepare_regions(work.with_name(f"{work.name}-season{seed}"), 500, seed, 32, "L1C")
    return paths


def recipe_provenance(recipe: str) -> dict:
    """What a model of ``recipe`` records of its training data."""
    found = {"train_regions": list(REGIONS), "data": "synthetic"}
    if SEASONS.get(recipe, 1) > 1:
        found["synthetic_seasons"] = list(range(SEASONS[recipe]))
    return found


def recipe_config(recipe: str, epochs: int, members: int = 1) -> TrainingConfig:
    """The shipped settings with ``recipe``'s season windows, ``epochs`` and ``members``."""
    return TrainingConfig(**{**SHIPPED, "epochs": epochs, "members": members, **RECIPES[recipe][1]})


def train(recipe: str, work: Path, out: Path, epochs: int, member: Optional[int] = None) -> None:
    """One model of ``recipe`` at ``OUT/RECIPE/model.tcm``; with ``member``, member ``member`` of
    its ensemble of :data:`MEMBERS` instead, exactly as ``training.ensemble`` trains it (seed
    ``member``, the split of seed 0) at its place beside ``OUT/RECIPE/ensemble.tcm``."""
    paths = season_regions(work, SEASONS.get(recipe, 1))
    config, target = recipe_config(recipe, epochs), out / recipe / "model.tcm"
    if member is not None:
        config = member_configs(recipe_config(recipe, epochs, MEMBERS))[member]
        target = member_paths(out / recipe / "ensemble.tcm", MEMBERS)[member]
    started = time.perf_counter()
    train_model([open_dataset(p) for p in paths], target, config, show_progress=False,
                provenance=recipe_provenance(recipe))
    logging.getLogger("inseason_recipe").info("%s (seed %d) trained in %.0f s", recipe, config.seed,
                                              time.perf_counter() - started)


def assemble(recipe: str, work: Path, out: Path, epochs: int) -> None:
    """The ensemble bundle ``OUT/RECIPE/ensemble.tcm`` of the members trained with ``--member``,
    as ``training.ensemble`` writes it. Member 0 (seed 0 on the split of seed 0) is the recipe's
    single model ``OUT/RECIPE/model.tcm`` where that was trained with the same settings: it is
    copied, not trained again."""
    config = recipe_config(recipe, epochs, MEMBERS)
    single = output_paths(out / recipe / "model.tcm")

    def member_from_single(datasets, path, member, **_) -> TrainingResult:
        stored = json.loads(single["metrics"].read_text())["config"] if single["metrics"].exists() else None
        same = stored is not None and {**stored, "split_seed": 0, "device": None} == {
            **asdict(member), "device": None}
        if member.seed != 0 or not same:
            raise SystemExit(f"member {member.seed} of {recipe} is not trained: run `train {recipe} "
                             f"--member {member.seed}` first")
        target = output_paths(path)
        for role in ("bundle", "metrics"):
            shutil.copyfile(single[role], target[role])
        return TrainingResult(path, json.loads(target["metrics"].read_text()))

    paths = season_regions(work, SEASONS.get(recipe, 1))
    train_ensemble([open_dataset(p) for p in paths], out / recipe / "ensemble.tcm", config, member_from_single,
                   resume=True, show_progress=False, provenance=recipe_provenance(recipe))


def score(out: Path) -> None:
    real = open_dataset(bavaria_dataset(out / "bavaria"))
    models = {"shipped ensemble (default.tcm, 5 members)": ensemble_bundle_path("L1C"),
              "shipped distilled model (default_fast.tcm)": default_bundle_path("L1C")}
    for name, (what, _) in RECIPES.items():
        found = {f"{name}: {what}": out / name / "model.tcm"}
        found.update({f"{name}, ensemble of {MEMBERS}": out / name / "ensemble.tcm"})
        found.update({f"{name}, member {m} alone": path
                      for m, path in enumerate(member_paths(out / name / "ensemble.tcm", MEMBERS))})
        models.update({label: path for label, path in found.items() if path.exists()})
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
    parser.add_argument("task", choices=("train", "ensemble", "score"))
    parser.add_argument("recipe", nargs="?", choices=tuple(RECIPES))
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "experiment")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "inseason-recipe")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--member", type=int, choices=range(MEMBERS),
                        help="train this member of the recipe's ensemble (its seed) rather than one model")
    parser.add_argument("--epochs", type=int, default=SHIPPED["epochs"],
                        help="epochs of 25 steps (default 30, the shipped budget)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import torch

    torch.set_num_threads(args.threads)
    if args.task == "train":
        if not args.recipe:
            parser.error("train needs a recipe: " + ", ".join(RECIPES))
        train(args.recipe, args.work, args.out, args.epochs, args.member)
    elif args.task == "ensemble":
        if not args.recipe:
            parser.error("ensemble needs a recipe: " + ", ".join(RECIPES))
        assemble(args.recipe, args.work, args.out, args.epochs)
    else:
        score(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
