"""``thermocrop evaluate``: scores of a model bundle on labelled datasets."""

from __future__ import annotations

import argparse

from ..options import bounded

HELP = "score a model bundle on labelled datasets (OA, macro F1, kappa, per class, confusion)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model bundle (.tcm)")
    parser.add_argument("--data", required=True, nargs="+", help="labelled dataset folder(s)")
    parser.add_argument("--split", choices=("all", "test"), default="all",
                        help="all usable parcels (default) or the test blocks of the training "
                             "split (same datasets and --seed as in training)")
    parser.add_argument("--seed", type=bounded("seed"), default=0, help="split seed used in training")
    parser.add_argument("--drop-unseen-classes", action="store_true",
                        help="leave out parcels of classes the model does not have (default: refuse them, "
                             "naming the classes)")
    parser.add_argument("--json", help="also write the scores to this JSON file")


def run(args: argparse.Namespace) -> int:
    import json

    from ...core.io.output import check_output, write_text
    from ...core.model.bundle import load_bundle
    from ...core.pixel_sets import open_dataset
    from ...training.evaluate import evaluate_bundle

    if args.json:
        check_output(args.json, what="scores file", overwrite=True, inputs=[args.model, *args.data])
    bundle = load_bundle(args.model)
    result = evaluate_bundle(bundle, [open_dataset(p) for p in args.data], split=args.split,
                             seed=args.seed, unseen="drop" if args.drop_unseen_classes else "error")
    print(f"parcels {result['n']}  OA {result['overall_accuracy']:.4f}  "
          f"macro F1 {result['macro_f1']:.4f}  kappa {result['kappa']:.4f}")
    if result["left_out"]:
        print("left out (classes the model does not have): "
              + ", ".join(f"{c} {n}" for c, n in result["left_out"].items()))
    width = max(18, 2 + max(len(c) for c in result["classes"]))
    print(f"{'class':<{width}}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>9}")
    for name, c in result["per_class"].items():
        print(f"{name:<{width}}{c['precision']:>10.3f}{c['recall']:>10.3f}{c['f1']:>10.3f}"
              f"{c['support']:>9d}")
    print("confusion matrix (rows = reference, columns = predicted; columns in the order above):")
    cell = max(6, 1 + len(str(max((max(r) for r in result["confusion_matrix"]), default=0))))
    for name, row in zip(result["classes"], result["confusion_matrix"]):
        print(f"{name:<{width}}" + "".join(f"{v:>{cell}d}" for v in row))
    if args.json:
        write_text(args.json, json.dumps(result, indent=2), what="scores file")
    return 0
