"""``thermocrop experiment``: the paper's leave-one-region-out table over variants."""

from __future__ import annotations

import argparse

from .train import VARIANT_CHOICES, add_training_flags

HELP = "leave-one-region-out over regions x variants (table.md like the paper's Table 1)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--regions", required=True, nargs="+",
                        help="one labelled dataset folder per region (folder name = region)")
    parser.add_argument("--variants", nargs="+", default=["all"],
                        help=f"variants or 'all' ({', '.join(VARIANT_CHOICES)})")
    parser.add_argument("--out", required=True,
                        help="output folder; finished runs found there are skipped")
    parser.add_argument("--jobs", type=int, default=1, help="runs trained at once (default 1)")
    parser.add_argument("--estimate", action="store_true",
                        help="only measure the speed here and say how long the runs still to do would take")
    add_training_flags(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..experiment import run_experiment
    from .train import config_from_args

    variants = list(VARIANT_CHOICES) if args.variants == ["all"] else args.variants
    bad = [v for v in variants if v not in VARIANT_CHOICES]
    if bad:
        raise SystemExit(f"thermocrop experiment: unknown variants {bad}; "
                         f"choose from {', '.join(VARIANT_CHOICES)} or 'all'")
    from ..progress_bar import progress_bar

    out = Path(args.out)
    regions = [Path(r) for r in args.regions]
    config = config_from_args(args, variants[0])
    if args.estimate:
        run_experiment(regions, variants, out, config, jobs=args.jobs, estimate_only=True)
        return 0
    with progress_bar("experiment") as progress:
        run_experiment(regions, variants, out, config, jobs=args.jobs, progress=progress)
    print((out / "table.md").read_text())
    return 0
