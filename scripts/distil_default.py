"""Distil a shipped ensemble into one model and score the ensemble, each of its members alone
and the distilled model side by side: on the real Bavarian parcels (as the model card scores
them; L1C only, no real L2A parcels are at hand) and on the held-out test blocks of the synthetic
regions it was trained on, with each model's agreement with the ensemble.

Usage: python scripts/distil_default.py [--level L1C|L2A] [--teacher resources/models/default.tcm]
                                        [--work runs/experiment]
                                        [--out WORK/distil/student.tcm] [--epochs 60] [--steps-per-epoch 25]
                                        [--sample-pixels 4] [--temperature 2] [--hard-weight 0] [--noise 0]
                                        [--architecture NAME=WIDTH ...] [--threads 1] [--score-only] [--without-members]

``--level L1C`` (the default) distils ``default.tcm`` on the regions in ``runs/experiment``;
``--level L2A`` distils ``default_l2a.tcm`` on the regions synthesised as L2A in
``runs/experiment-l2a``. The regions are synthesised and extracted as ``scripts/default_model.py``
does (same seeds, the same parcels; re-used when present in WORK); the student trains on the same
split as the ensemble's members, so its test blocks are theirs. Scores go to
``<out stem>.scores.json``.
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
from thermocrop.core.model.calibration import expected_calibration_error, prediction_sets
from thermocrop.core.pixel_sets import PixelSets, open_dataset
from thermocrop.training.datasets import align_classes, split_blocks
from thermocrop.training.distil import distillation_config
from thermocrop.training.evaluate import evaluate_bundle
from thermocrop.training.experiment import REGIONS, prepare_regions
from thermocrop.training.metrics import scores
from thermocrop.training.realdata import MIN_SUPPORT, bavaria_dataset, bavaria_halves, score_confusion
from thermocrop.training.train import train_model

ROOT = Path(__file__).resolve().parent.parent
LEVELS = {"L1C": ("default.tcm", "runs/experiment"), "L2A": ("default_l2a.tcm", "runs/experiment-l2a")}
"""The teacher and the work folder of each processing level (``scripts/default_model.py``'s)."""


def teacher_record(path: Path) -> str:
    """The teacher's path as training reads it and the student's record keeps it: relative to the
    working folder when it is inside it (run from the repository root, the shipped bundle then
    names no folder of the machine it was built on)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


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


def calibration_scores(bundle: ModelBundle, test: list[PixelSets], coverage: float = 0.9) -> dict[str, Any]:
    """On the test blocks: the expected calibration error (10 bins) of the raw and of the calibrated
    probabilities, the temperature, and how often the prediction sets for ``coverage`` hold the true
    class and how many classes they hold."""
    raw = np.concatenate([bundle.predict(ps, calibrated=False) for ps in test])
    labels = np.concatenate([ps.labels for ps in test]).astype(np.int64)
    ok = np.isfinite(raw).all(axis=1) & (labels >= 0)
    calibrated = bundle.calibration.apply(raw[ok])
    sets = prediction_sets(calibrated, bundle.calibration.threshold(coverage))
    return {"n": int(ok.sum()), "temperature": bundle.calibration.temperature,
            "ece_raw": expected_calibration_error(raw[ok], labels[ok]),
            "ece_calibrated": expected_calibration_error(calibrated, labels[ok]), "coverage": coverage,
            "set_coverage": float(sets[np.arange(len(sets)), labels[ok]].mean()),
            "mean_set_size": float(sets.sum(axis=1).mean())}


def score_all(models: dict[str, ModelBundle], synthetic: list[PixelSets], real: dict[str, PixelSets],
              seed: int) -> dict[str, Any]:
    """Every model on the real parcels (all, west, east; none when ``real`` is empty), the
    synthetic test blocks, and its agreement with the ``"ensemble"`` model's classes on both."""
    teacher = models["ensemble"]
    classes = list(teacher.classes)
    aligned = align_classes(synthetic, tuple(classes), unseen="drop")
    test = [ps.subset(np.sort(t)) for ps, (_, _, t) in zip(aligned, split_blocks(aligned, len(classes), seed))]
    reference = {"synthetic": [labels_of(teacher, ps) for ps in test]}
    if real:
        reference["real"] = [labels_of(teacher, real["all"])]
    out: dict[str, Any] = {}
    for name, bundle in models.items():
        row: dict[str, Any] = {}
        for half, ps in real.items():
            cm = np.array(evaluate_bundle(bundle, [ps], split="all")["confusion_matrix"])
            row[f"real_{half}"] = card_scores(cm, classes)
        syn = evaluate_bundle(bundle, synthetic, split="test", seed=seed)
        row["synthetic_test"] = {"n": syn["n"], "oa": syn["overall_accuracy"], "macro_f1": syn["macro_f1"]}
        if bundle.calibration is not None:
            row["calibration_synthetic_test"] = calibration_scores(bundle, test)
        for where, sets in (("synthetic", test), ("real", [real["all"]] if real else [])):
            if where not in reference:
                continue
            mine = [labels_of(bundle, ps) for ps in sets]
            same = np.concatenate([(a == b) & (b >= 0) for a, b in zip(mine, reference[where])])
            valid = np.concatenate([b >= 0 for b in reference[where]])
            row[f"agreement_{where}"] = float(same.sum() / max(valid.sum(), 1))
        out[name] = row
        log_row(name, row)
    return out


def log_row(name: str, row: dict[str, Any]) -> None:
    line = f"{name:12s} "
    if "real_all" in row:
        a, e = row["real_all"], row["real_east"]
        line += (f"real all OA {100 * a['oa']:5.1f} F1 {100 * a['macro_f1']:5.1f} (card classes: OA "
                 f"{100 * a['kept_oa']:5.1f} F1 {100 * a['kept_macro_f1']:5.1f}) | east OA {100 * e['oa']:5.1f} "
                 f"F1 {100 * e['macro_f1']:5.1f} | ")
    line += (f"synthetic test OA {100 * row['synthetic_test']['oa']:5.1f} F1 "
             f"{100 * row['synthetic_test']['macro_f1']:5.1f} | agreement synthetic "
             f"{100 * row['agreement_synthetic']:5.1f}")
    if "agreement_real" in row:
        line += f" real {100 * row['agreement_real']:5.1f}"
    if "calibration_synthetic_test" in row:
        c = row["calibration_synthetic_test"]
        line += (f" | ECE {c['ece_raw']:.3f} -> {c['ece_calibrated']:.3f} (T {c['temperature']:.3f}), "
                 f"{100 * c['coverage']:.0f} % sets hold {100 * c['set_coverage']:.1f} %, size {c['mean_set_size']:.2f}")
    print(line, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", choices=tuple(LEVELS), default="L1C",
                        help="processing level of the synthetic regions: L1C distils default.tcm, L2A "
                             "default_l2a.tcm (no real parcels of that level: synthetic scores only)")
    parser.add_argument("--teacher", type=Path, help="the ensemble (default: the level's shipped model)")
    parser.add_argument("--work", type=Path,
                        help="folder of the regions and datasets (scripts/default_model.py's), re-used when "
                             "present (default runs/experiment for L1C, runs/experiment-l2a for L2A)")
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
    teacher_name, work_name = LEVELS[args.level]
    args.teacher = args.teacher or ROOT / "resources" / "models" / teacher_name
    args.work = args.work or ROOT / work_name
    out = args.out or args.work / "distil" / "student.tcm"
    paths = prepare_regions(args.work, args.parcels, args.seed, 32, args.level)
    datasets = [open_dataset(p) for p in paths]
    teacher = load_bundle(args.teacher)
    if not args.score_only:
        config = distillation_config({"epochs": args.epochs, "steps_per_epoch": args.steps_per_epoch,
                                      "batch_size": args.batch_size, "sample_pixels": args.sample_pixels,
                                      "distil_temperature": args.temperature, "distil_hard_weight": args.hard_weight,
                                      "distil_noise": args.noise, "model_settings": dict(args.architecture),
                                      "seed": args.student_seed, "split_seed": args.seed, "device": "cpu"},
                                     teacher_record(args.teacher))
        t0 = time.perf_counter()
        train_model(datasets, out, config, show_progress=False,
                    provenance={"train_regions": list(REGIONS), "data": "synthetic"})
        print(f"trained {out} in {time.perf_counter() - t0:.0f} s on {args.threads} thread(s)", flush=True)
    real: dict[str, PixelSets] = {}
    if args.level == "L1C":
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
