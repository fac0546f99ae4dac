"""``thermocrop evaluate``: scores of a model bundle on labelled datasets."""

from __future__ import annotations

import argparse

from ._options import bounded

HELP = "score a model bundle on labelled datasets (OA, macro F1, kappa, per class, confusion)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model bundle (.tcm)")
    parser.add_argument("--data", required=True, nargs="+", help="labelled dataset folder(s)")
    parser.add_argument("--split", choices=("all", "test"), default="all",
                        help="all usable parcels (default) or the test blocks of the training "
                             "split (same datasets and --seed as in training)")
    parser.add_argument("--seed", type=bounded("seed"), default=0, help="split seed used in training")
    parser.add_argument("--json", help="also write the scores to this JSON file")


def run(args: argparse.Namespace) -> int:
    import json

    from ...core.bundle import load_bundle
    from ...core.dataset import open_dataset
    from ..evaluate import evaluate_bundle

    bundle = load_bundle(args.model)
    result = evaluate_bundle(bundle, [open_dataset(p) for p in args.data], split=args.split,
                             seed=args.seed)
    print(f"parcels {result['n']}  OA {result['overall_accuracy']:.4f}  "
          f"macro F1 {result['macro_f1']:.4f}  kappa {result['kappa']:.4f}")
    print(f"{'class':<18}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>9}")
    for name, c in result["per_class"].items():
        print(f"{name:<18}{c['precision']:>10.3f}{c['recall']:>10.3f}{c['f1']:>10.3f}"
              f"{c['support']:>9d}")
    print("confusion matrix (rows = reference, columns = predicted):")
    for name, row in zip(result["classes"], result["confusion_matrix"]):
        print(f"{name:<18}" + "".join(f"{v:>6d}" for v in row))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0
