"""Fine-tuning on few labels, measured on the real Bavarian parcels: recipes fine-tuned from a
model bundle on a quarter of the parcels against training from scratch on the same parcels with
the same budget.

The parcels are cut into halves by the median longitude of their centroids (as for the shipped
model's card). For each seed, whole spatial blocks of the west half are drawn until they hold a
quarter of all parcels: those labels train (``thermocrop train --init`` on them, its own
validation blocks among them). The rest of the west half scores the recipes and chooses one; the
east half, never used to choose, gives the figures. Scores are over the classes with at least 5
parcels (parcels of rarer classes left out).

Usage: python scripts/finetune_study.py [--model resources/models/default.tcm] [--work runs/finetune]
       [--seeds 0 1] [--recipes default lr1e-3 ...] [--one-member] [--jobs 2]

The recipe of ``training.finetune.FEW_LABEL_RECIPE`` was chosen with ``--one-member --seeds 0 1``
(every recipe, the first member of the shipped ensemble alone) by the mean of OA and macro F1 on
the rest of the west half; ``--recipes default --seeds 0 1 2`` gives the figures with every member.
"""

from __future__ import annotations

import argparse
import json
import logging
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from thermocrop.core.model.bundle import load_bundle
from thermocrop.core.pixel_sets import PixelSets, open_dataset
from thermocrop.training.finetune import FEW_LABEL_RECIPE, SAMPLING_KEPT, training_config
from thermocrop.training.realdata import BAVARIA_LAYER, MIN_SUPPORT, bavaria_dataset, find_realdata
from thermocrop.training.train import train_model

ROOT = Path(__file__).resolve().parent.parent

RECIPES = {
    "default": {},
    "lr3e-4, no anchor": {"init_anchor": 0.0},
    "lr1e-3": {"lr": 1e-3, "init_anchor": 0.0},
    "lr1e-3, test blocks held out": {"lr": 1e-3, "init_anchor": 0.0, "test_split": True},
    "lr1e-4": {"lr": 1e-4, "init_anchor": 0.0},
    "lr3e-5": {"lr": 3e-5, "init_anchor": 0.0},
    "lr1e-4, frozen PSE": {"lr": 1e-4, "init_anchor": 0.0, "freeze_pixel_encoder": True},
}
"""Fine-tuning recipes tried: ``default`` is ``FEW_LABEL_RECIPE`` as shipped, the others change it."""

DATA_OPTIONS = {"sample_pixels": 1}
"""Given to every run: the parcels are means, one pixel each, so drawing more repeats it."""


def halves(ps: PixelSets, realdata: Path) -> np.ndarray:
    """True for the parcels west of the median longitude of the parcel centroids."""
    import geopandas as gpd

    layer = gpd.read_file(realdata / BAVARIA_LAYER)
    lon = layer.geometry.to_crs(32632).centroid.to_crs(4326).x.to_numpy()
    rows = np.array([int(i) for i in ps.parcel_ids])  # imported joined by row: id = feature number
    return lon[rows] < np.median(lon)


def quarter(ps: PixelSets, west: np.ndarray, seed: int) -> np.ndarray:
    """Rows of west parcels in whole blocks drawn at random until they hold a quarter of all parcels."""
    labelled = np.asarray(ps.labels) >= 0
    blocks = np.asarray(ps.blocks)
    ids = np.unique(blocks[west & labelled])
    order = np.random.default_rng(seed).permutation(ids)
    want, taken = round(labelled.sum() / 4), np.zeros(len(ps), dtype=bool)
    for block in order:
        if taken.sum() >= want:
            break
        taken |= west & labelled & (blocks == block)
    return np.flatnonzero(taken)


def labelled_only(ps: PixelSets, rows: np.ndarray) -> PixelSets:
    """The pixel sets with labels kept only on ``rows``."""
    keep = np.zeros(len(ps), dtype=bool)
    keep[rows] = True
    return replace(ps, labels=np.where(keep, np.asarray(ps.labels), -1).astype(np.int16))


def score(probabilities: np.ndarray, ps: PixelSets, rows: np.ndarray, kept: list[int]) -> dict:
    """OA and macro F1 on ``rows`` over the classes ``kept`` (parcels of other classes left out;
    a prediction of a left-out class counts as wrong)."""
    labels = np.asarray(ps.labels)[rows]
    pred = np.nanargmax(probabilities[rows], axis=1)
    use = np.isin(labels, kept)
    labels, pred = labels[use], pred[use]
    f1 = []
    for c in kept:
        tp = np.sum((pred == c) & (labels == c))
        denom = np.sum(pred == c) + np.sum(labels == c)
        f1.append(2 * tp / denom if denom else 0.0)
    return {"n": int(use.sum()), "oa": float(np.mean(pred == labels)), "macro_f1": float(np.mean(f1))}


def study_setup(args: argparse.Namespace) -> dict:
    """The dataset, its halves, the classes scored and the runs' settings by name."""
    realdata = args.realdata or find_realdata(ROOT)
    ps = open_dataset(bavaria_dataset(args.work / "bavaria", realdata), mmap=False)
    cached = args.work / "west_parcels.json"  # the halves, so that a copy of the work folder suffices
    if cached.is_file():
        west = np.isin(np.asarray(ps.parcel_ids).astype(str), json.loads(cached.read_text()))
    else:
        west = halves(ps, realdata)
        cached.write_text(json.dumps([str(i) for i in np.asarray(ps.parcel_ids)[west]]))
    labels = np.asarray(ps.labels)
    counts = np.bincount(labels[labels >= 0], minlength=len(ps.classes))
    bundle = load_bundle(args.model)
    trained = bundle.config.provenance.get("training") or {}
    # From scratch: the bundle's own recipe, variant and members on the same parcels and budget.
    scratch = training_config({**{k: trained[k] for k in SAMPLING_KEPT if k in trained},
                               "variant": bundle.config.variant, "members": bundle.config.model_config().members,
                               "model_settings": {k: v for k, v in bundle.config.hyperparameters.items()
                                                  if k != "members"},
                               **{k: FEW_LABEL_RECIPE[k] for k in ("epochs", "steps_per_epoch", "batch_size",
                                                                  "test_split")}, **DATA_OPTIONS})
    runs = {name: training_config({**RECIPES[name], **DATA_OPTIONS}, init=str(args.model)) for name in args.recipes}
    runs["from scratch"] = scratch
    if args.one_member:  # the first member alone: a fifth of the time, for choosing
        runs = {name: replace(c, members=1, init_member=0 if c.init else None) for name, c in runs.items()}
    return {"ps": ps, "west": west, "kept": [int(c) for c in np.flatnonzero(counts >= MIN_SUPPORT)],
            "east_rows": np.flatnonzero(~west & (labels >= 0)), "runs": runs, "bundle": bundle}


def run_one(args: argparse.Namespace, seed: int, name: str) -> dict:
    """Train one recipe on seed ``seed``'s quarter (or read its finished scores) and score it."""
    torch.set_num_threads(args.threads)
    setup = study_setup(args)
    ps, west, kept, east_rows = setup["ps"], setup["west"], setup["kept"], setup["east_rows"]
    labels = np.asarray(ps.labels)
    train_rows = quarter(ps, west, seed)
    select_rows = np.flatnonzero(west & (labels >= 0) & ~np.isin(np.arange(len(ps)), train_rows))
    tag = "one_member" if args.one_member else "all_members"
    run_dir = args.work / "study" / tag / f"seed{seed}" / name.replace(" ", "_").replace(",", "")
    done = run_dir / "scores.json"
    if done.is_file():
        return json.loads(done.read_text())
    if name == "shipped, no fine-tuning":
        p = setup["bundle"].predict(ps)
    else:
        config = replace(setup["runs"][name], seed=seed, device="cpu")
        result = train_model([labelled_only(ps, train_rows)], run_dir / "model.tcm", config, show_progress=False,
                             provenance={"finetune_study": {"seed": seed}})
        p = load_bundle(result.bundle_path).predict(ps)
    record = {"train_parcels": int(len(train_rows)), "west": score(p, ps, select_rows, kept),
              "east": score(p, ps, east_rows, kept)}
    run_dir.mkdir(parents=True, exist_ok=True)
    done.write_text(json.dumps(record, indent=1))
    print(f"seed {seed} {name}: {len(train_rows)} training parcels, west OA {record['west']['oa']:.3f} "
          f"F1 {record['west']['macro_f1']:.3f}, east OA {record['east']['oa']:.3f} "
          f"F1 {record['east']['macro_f1']:.3f}", flush=True)
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "resources" / "models" / "default.tcm")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "finetune")
    parser.add_argument("--realdata", type=Path, help="folder holding bavaria2018/ and duernast-weather/")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="draws of the quarter (default 0 1)")
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    parser.add_argument("--one-member", action="store_true",
                        help="fine-tune the first member of an ensemble alone, and train one model from scratch "
                             "(for choosing a recipe in a fifth of the time)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once, one process each (default 1)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    setup = study_setup(args)
    names = ["shipped, no fine-tuning", *setup["runs"]]
    tasks = [(seed, name) for seed in args.seeds for name in names]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            records = list(pool.map(run_one, [args] * len(tasks), *zip(*tasks)))
    else:
        records = [run_one(args, seed, name) for seed, name in tasks]
    table: dict[str, dict[int, dict]] = {}
    for (seed, name), record in zip(tasks, records):
        table.setdefault(name, {})[seed] = record
    print(f"\n{'The first member alone' if args.one_member else 'Every member'} of {args.model.name}; seeds "
          f"{args.seeds}; {table['from scratch'][args.seeds[0]]['east']['n']} east parcels scored; training parcels per seed "
          f"{[table['from scratch'][s]['train_parcels'] for s in args.seeds]}; classes scored "
          f"{[setup['ps'].classes[c] for c in setup['kept']]}\n")
    print("| recipe | west rest OA / macro F1 % (choosing) | east half OA / macro F1 % | east OA per seed % |")
    print("|---|---|---|---|")
    mean = {}
    for name, by_seed in table.items():
        def m(half, key, rows=by_seed):
            return 100 * float(np.mean([r[half][key] for r in rows.values()]))
        mean[name] = (m("west", "oa") + m("west", "macro_f1")) / 2
        per_seed = ", ".join(f"{100 * r['east']['oa']:.1f}" for r in by_seed.values())
        print(f"| {name} | {m('west', 'oa'):.1f} / {m('west', 'macro_f1'):.1f} | {m('east', 'oa'):.1f} / "
              f"{m('east', 'macro_f1'):.1f} | {per_seed} |")
    tuned = [n for n in args.recipes if n in mean]
    if tuned:
        best = max(tuned, key=mean.get)
        print(f"\nBest fine-tuning recipe on the west half (mean of OA and macro F1): {best}"
              f"{' (the shipped default)' if best == 'default' else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
