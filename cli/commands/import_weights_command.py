"""``thermocrop import-weights``: a reference PSE+LTAE checkpoint -> a model bundle."""

from __future__ import annotations

import argparse

NAME = "import-weights"
HELP = "turn weights trained with the reference PSE+LTAE code (a PyTorch state dict) into a model bundle"

VARIANT_CHOICES = ("calendar", "no_pe", "shiftaug", "tpe_sinusoidal", "tpe_concat", "tpe_fourier",
                   "tpe_recurrent")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", metavar="CKPT", help="state dict saved by the reference code (torch.save)")
    parser.add_argument("--out", required=True, help="bundle to write, e.g. model.tcm")
    parser.add_argument("--variant", choices=VARIANT_CHOICES,
                        help="the variant it was trained as (default: read from its layers; calendar and "
                             "shiftaug share layers, so give shiftaug for a ShiftAug model)")
    parser.add_argument("--classes", help="comma-separated class names in the model's output order (default: "
                                          "the paper's nine, sorted as the reference sorts them)")
    parser.add_argument("--level", choices=("L1C", "L2A"), default="L1C",
                        help="processing level of its training scenes (default L1C, as TimeMatch)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing bundle")


def run(args: argparse.Namespace) -> int:
    from ...training.importers.weights import import_weights

    classes = [c.strip() for c in args.classes.split(",") if c.strip()] if args.classes else None
    config = import_weights(args.checkpoint, args.out, variant=args.variant, classes=classes, level=args.level,
                            overwrite=args.overwrite)
    print(f"wrote {args.out}: {config.variant}, {len(config.classes)} classes ({', '.join(config.classes)}), "
          f"inputs = digital numbers / {config.scaling.quantification:g}")
    return 0
