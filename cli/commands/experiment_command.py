"""``thermocrop experiment``: the paper's leave-one-region-out table over variants."""

from __future__ import annotations

import argparse

from ..options import bounded
from .train_command import VARIANT_CHOICES, add_training_flags

HELP = ("leave-one-region-out over regions x variants, or the paper's protocol on the TimeMatch data "
        "(table.md like the paper's Table 1)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--protocol", choices=("regions", "paper"), default="regions",
                        help="regions: leave one of --regions out (default); paper: the paper's Table 1 "
                             "protocol on the TimeMatch data in --data-root")
    parser.add_argument("--regions", nargs="+",
                        help="one labelled dataset folder per region (folder name = region)")
    paper = parser.add_argument_group("paper protocol")
    paper.add_argument("--data-root", help="TimeMatch folder with its weather extension (dataset_split.json, "
                                           "austria/, denmark/, france/)")
    paper.add_argument("--fold", type=bounded("seed"), default=0, help="fold of dataset_split.json (default 0)")
    paper.add_argument("--class-map", action="append", default=[], metavar="COUNTRY=FILE",
                       help="class map of a country's crop codes instead of its preset (repeatable)")
    paper.add_argument("--max-pixels", type=bounded("max_pixels"), default=64,
                       help="pixels kept per parcel when importing the tiles (default 64)")
    parser.add_argument("--variants", nargs="+", default=["all"], choices=VARIANT_CHOICES + ("all",),
                        metavar="VARIANT",
                        help=f"variants or 'all' ({', '.join(VARIANT_CHOICES)})")
    parser.add_argument("--out", required=True,
                        help="output folder; finished runs found there are skipped")
    parser.add_argument("--jobs", type=bounded("jobs"), default=1, help="runs trained at once (default 1)")
    parser.add_argument("--devices", type=bounded("devices"), default=1,
                        help="train each run data-parallel in N processes on this machine, as 'train "
                             "--devices' (one per GPU with CUDA, else a share of the CPU cores each); the "
                             "runs then go one at a time (default 1; --protocol regions)")
    parser.add_argument("--estimate", action="store_true",
                        help="only measure the speed here and say how long the runs still to do would take")
    parser.add_argument("--as-of-steps", type=bounded("as_of_steps"), metavar="N",
                        help="also score each run on its held-out region as of N evenly spaced shares of the "
                             "region's season GDD (as_of.csv, as_of_reached.csv, as_of.md, as_of.png)")
    add_training_flags(parser)


def check_args(args: argparse.Namespace) -> str:
    """A contradiction among the options, or ''."""
    if args.devices > 1 and args.jobs > 1:
        return "--devices trains one run at a time on several processes: give --jobs or --devices, not both"
    if args.devices > 1 and args.protocol == "paper":
        return "--devices applies to --protocol regions; the paper protocol trains in one process per run"
    return ""


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...core.io.output import check_output
    from ...training.experiment import run_experiment
    from .train_command import config_from_args

    variants = list(VARIANT_CHOICES) if args.variants == ["all"] else args.variants
    bad = [v for v in variants if v not in VARIANT_CHOICES]
    if bad:
        raise SystemExit(f"thermocrop experiment: unknown variants {bad}; "
                         f"choose from {', '.join(VARIANT_CHOICES)} or 'all'")
    # Finished runs in an existing folder are kept and skipped, so an existing folder is fine.
    check_output(args.out, what="results folder", kind="folder", overwrite=True,
                 replaceable_folder=lambda folder: True)
    out = Path(args.out)
    if args.protocol == "paper":
        from ...core.errors import InputError
        from ...training.experiment import run_paper_protocol

        if not args.data_root or args.regions:
            raise InputError("--protocol paper takes --data-root (the TimeMatch folder), not --regions")
        if args.as_of_steps:
            raise InputError("--as-of-steps scores held-out regions (--protocol regions), not the paper protocol")
        try:
            maps = dict(item.split("=", 1) for item in args.class_map)
        except ValueError:
            raise InputError("--class-map takes COUNTRY=FILE, e.g. denmark=dk.csv") from None
        run_paper_protocol(Path(args.data_root), variants, out, config_from_args(args, variants[0]),
                           fold=args.fold, jobs=args.jobs, class_maps=maps or None, max_pixels=args.max_pixels)
        print((out / "table.md").read_text())
        return 0
    if not args.regions:
        raise SystemExit("thermocrop experiment: --regions is required (or --protocol paper --data-root ROOT)")
    from ..progress_bar import progress_bar

    regions = [Path(r) for r in args.regions]
    config = config_from_args(args, variants[0])
    if args.estimate:
        run_experiment(regions, variants, out, config, jobs=args.jobs, estimate_only=True, devices=args.devices)
        return 0
    with progress_bar("experiment") as progress:
        records = run_experiment(regions, variants, out, config, jobs=args.jobs, progress=progress,
                                 devices=args.devices)
    print((out / "table.md").read_text())
    if args.as_of_steps:
        from ...training.experiment_as_of import score_runs_as_of, write_as_of

        paths = write_as_of(score_runs_as_of(records, regions, out, args.as_of_steps, config.classes), variants, out)
        print(paths["summary"].read_text())
    return 0
