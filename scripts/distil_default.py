"""Distil the shipped ensemble into one model and score the ensemble, each of its members alone
and the distilled model side by side: on the real Bavarian parcels (as the model card scores
them) and on the held-out test blocks of the synthetic regions it was trained on, with each
model's agreement with the ensemble.

Usage: python scripts/distil_default.py [--teacher resources/models/default.tcm] [--work runs/experiment]
                                        [--out WORK/distil/student.tcm] [--epochs 60] [--steps-per-epoch 25]
                                        [--sample-pixels 4] [--temperature 2] [--hard-weight 0] [--noise 0]
                                        [--architecture NAME=WIDTH ...] [--threads 1] [--score-only] [--without-members]

The regions are synthesised and extracted as ``scripts/default_model.py`` does (same seeds, the
same parcels; re-used when present in WORK); the student trains on the same split as the
ensemble's members, so its test blocks are theirs. Scores go to ``<out stem>.scores.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from thermocrop.cli.options import architecture_setting
from thermocrop.core.model.architecture import architecture_problem
from thermocrop.core.model.bundle import ModelBundle, load_bundle
from thermocrop.core.pixel_sets import PixelSets, open_dataset
from thermocrop.training.datasets import align_classes, split_blocks
from thermocrop.training.distil import distillation_config
from thermocrop.training.evaluate import evaluate_bundle
from thermocrop.training.experiment import REGIONS, prepare_regions
from thermocrop.training.metrics import scores
from thermocrop.training.realdata import MIN_SUPPORT, bavaria_dataset, bavaria_halves, score_confusion
from thermocrop.training.train import train_model

ROOT = Path(__file__).resolve().parent.parent


def members_of(bundle: ModelBundle) -> list[ModelBundle]:
    """Each member of an ensemble bundle as a bundle of its own (uncalibrated)."""
    hp = {**bundle.config.hyperparameters, "members": 1}
    config = replace(bundle.config, hyperparameters=hp, calibration={})
    return [ModelBundle(m, config) for m in bundle.model.members]


def card_scores(cm: np.ndarray, classes: list[str]) -> dict[str, Any]:
    """The real-data scores both model cards give: over every parcel with macro F1 over the
    classes with at least ``MIN_SUPPORT`` parcels (``scripts/real_data_card.py``), and over the
    parcels of those classes alone (``MODEL_CARD.md``, ``scripts/default_model.py``)."""
    s = score_confusion(cm, classes)
    keep = np.asarray(cm).sum(axis=1) >= MIN_SUPPORT
    kept = scores(np.where(keep[:, None], cm, 0), classes)
    f1 = [kept["per_class"][c]["f1"] for c, k in zip(classes, keep) if k]
    return {"n": s["n"], "oa": s["overall_accuracy"], "macro_f1": s["macro_f1_min_support"],
            "kept_n": kept["n"], "kept_oa": kept["overall_accuracy"], "kept_macro_f1": float(np.mean(f1))}


def labels_of(bundle: ModelBundle, ps: PixelSets) -> np.ndarray:
    """The class index each parcel is given (-1 where none)."""
    p = bundle.predict(ps, calibrated=False)
    ok = ~np.isnan(p[:, 0])
    return np.where(ok, np.nan_to_num(p).argmax(axis=1), -1)


def score_all(models: dict[str, ModelBundle], synthetic: list[PixelSets], real: dict[str, PixelSets],
              seed: int) -> dict[str, Any]:
    """Every model on the real parcels (all, west, east), the synthetic test blocks, and its
    agreement with the ``"ensemble"`` model's classes on both."""
    teacher = models["ensemble"]
    classes = list(teacher.classes)
    aligned = align_classes(synthetic, tuple(classes), unseen="drop")
    test = [ps.subset(np.sort(t)) for ps, (_, _, t) in zip(aligned, split_blocks(aligned, len(classes), seed))]
    reference = {"synthetic": [labels_of(teacher, ps) for ps in test],
                 "real": [labels_of(teacher, real["all"])]}
    out: dict[str, Any] = {}
    for name, bundle in models.items():
        row: dict[str, Any] = {}
        for half, ps in real.items():
            cm = np.array(evaluate_bundle(bundle, [ps], split="all")["confusion_matrix"])
            row[f"real_{half}"] = card_scores(cm, classes)
        syn = evaluate_bundle(bundle, synthetic, split="test", seed=seed)
        row["synthetic_test"] = {"n": syn["n"], "oa": syn["overall_accuracy"], "macro_f1": syn["macro_f1"]}
        for where, sets in (("synthetic", test), ("real", [real["all"]])):
            mine = [labels_of(bundle, ps) for ps in sets]
            same = np.concatenate([(a == b) & (b >= 0) for a, b in zip(mine, reference[where])])
            valid = np.concatenate([b >= 0 for b in reference[where]])
            row[f"agreement_{where}"] = float(same.sum() / max(valid.sum(), 1))
        out[name] = row
        log_row(name, row)
    return out


def log_row(name: str, row: dict[str, Any]) -> None:
    a, e = row["real_all"], row["real_east"]
    print(f"{name:12s} real all OA {100 * a['oa']:5.1f} F1 {100 * a['macro_f1']:5.1f} "
          f"(card classes: OA {100 * a['kept_oa']:5.1f} F1 {100 * a['kept_macro_f1']:5.1f}) | east OA "
          f"{100 * e['oa']:5.1f} F1 {100 * e['macro_f1']:5.1f} | synthetic test OA "
          f"{100 * row['synthetic_test']['oa']:5.1f} F1 {100 * row['synthetic_test']['macro_f1']:5.1f} | agreement "
          f"synthetic {100 * row['agreement_synthetic']:5.1f} real {100 * row['agreement_real']:5.1f}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", type=Path, default=ROOT / "resources" / "models" / "default.tcm")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "experiment",
                        help="folder of the regions and datasets (scripts/default_model.py's), re-used when present")
    parser.add_argument("--out", type=Path, help="the student bundle (default WORK/distil/student.tcm)")
    parser.add_argument("--parcels", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--steps-per-epoch", type=int, default=25)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--sample-pixels", type=int, default=4,
                        help="pixels per sample (the teacher's training made every sample a parcel mean, so "
                             "fewer copies of it carry the same information)")
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--hard-weight", type=float, default=0.0)
    parser.add_argument("--noise", type=float, default=0.0, help="distil_noise (training.distil)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the regions and of the teacher's split")
    parser.add_argument("--student-seed", type=int, default=0, help="seed of the student's weights and sampling")
    parser.add_argument("--architecture", nargs="+", type=architecture_setting, default=[], metavar="NAME=WIDTH",
                        help="the student's layer sizes where they differ from the teacher's (thermocrop train "
                             "--architecture), e.g. mlp1=32 mlp2=64 d_model=64 n_head=8")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--score-only", action="store_true", help="score an already trained --out")
    parser.add_argument("--without-members", action="store_true",
                        help="score the ensemble and the student alone, not each member")
    parser.add_argument("--real-work", type=Path, default=ROOT / "runs" / "realdata",
                        help="where the real Bavarian parcels are imported (once)")
    args = parser.parse_args()
    if architecture_problem(dict(args.architecture)):
        parser.error(f"--architecture: {architecture_problem(dict(args.architecture))}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import torch

    torch.set_num_threads(args.threads)
    out = args.out or args.work / "distil" / "student.tcm"
    paths = prepare_regions(args.work, args.parcels, args.seed, 32, "L1C")
    datasets = [open_dataset(p) for p in paths]
    teacher = load_bundle(args.teacher)
    if not args.score_only:
        config = distillation_config({"epochs": args.epochs, "steps_per_epoch": args.steps_per_epoch,
                                      "batch_size": args.batch_size, "sample_pixels": args.sample_pixels,
                                      "distil_temperature": args.temperature, "distil_hard_weight": args.hard_weight,
                                      "distil_noise": args.noise, "model_settings": dict(args.architecture),
                                      "seed": args.student_seed, "split_seed": args.seed, "device": "cpu"},
                                     str(args.teacher))
        t0 = time.perf_counter()
        train_model(datasets, out, config, show_progress=False,
                    provenance={"train_regions": list(REGIONS), "data": "synthetic"})
        print(f"trained {out} in {time.perf_counter() - t0:.0f} s on {args.threads} thread(s)", flush=True)
    real_all = bavaria_dataset(args.real_work / "bavaria")
    real = {"all": open_dataset(real_all, mmap=False), **bavaria_halves(real_all)}
    members = {} if args.without_members else {f"member-{i}": m for i, m in enumerate(members_of(teacher))}
    models = {"ensemble": teacher, **members, "student": load_bundle(out)}
    result = score_all(models, datasets, real, args.seed)
    target = out.with_suffix(".scores.json")
    target.write_text(json.dumps(result, indent=1))
    print(f"scores: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
