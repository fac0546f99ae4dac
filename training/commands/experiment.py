"""``thermocrop experiment``: the paper's leave-one-region-out table over variants."""

from __future__ import annotations

import argparse

from ._options import bounded
from .train import VARIANT_CHOICES, add_training_flags

HELP = "leave-one-region-out over regions x variants (table.md like the paper's Table 1)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--regions", required=True, nargs="+",
                        help="one labelled dataset folder per region (folder name = region)")
    parser.add_argument("--variants", nargs="+", default=["all"], choices=VARIANT_CHOICES + ("all",),
                        metavar="VARIANT",
                        help=f"variants or 'all' ({', '.join(VARIANT_CHOICES)})")
    parser.add_argument("--out", required=True,
                        help="output folder; finished runs found there are skipped")
    parser.add_argument("--jobs", type=bounded("jobs"), default=1, help="runs trained at once (default 1)")
    add_training_flags(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...core.output import check_output
    from ..experiment import run_experiment
    from .train import config_from_args

    variants = list(VARIANT_CHOICES) if args.variants == ["all"] else args.variants
    bad = [v for v in variants if v not in VARIANT_CHOICES]
    if bad:
        raise SystemExit(f"thermocrop experiment: unknown variants {bad}; "
                         f"choose from {', '.join(VARIANT_CHOICES)} or 'all'")
    # Finished runs in an existing folder are kept and skipped, so an existing folder is fine.
    check_output(args.out, what="results folder", kind="folder", overwrite=True,
                 replaceable_folder=lambda folder: True)
    out = Path(args.out)
    run_experiment([Path(r) for r in args.regions], variants, out,
                   config_from_args(args, variants[0]), jobs=args.jobs)
    print((out / "table.md").read_text())
    return 0
