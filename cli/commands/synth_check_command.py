"""``thermocrop synth-check``: how close synthetic regions come to real parcels, per class and
band, in thermal time (numbers and a figure)."""

from __future__ import annotations

import argparse

NAME = "synth-check"
HELP = ("compare synthetic regions with real parcels: per class and band, quartiles of the "
        "parcel-mean reflectance against GDD, a distance each, and a figure")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--real", required=True, nargs="+",
                        help="labelled real dataset folder(s), e.g. from 'thermocrop import table'")
    parser.add_argument("--synthetic", required=True, nargs="+",
                        help="labelled synthetic dataset folder(s) of the same processing level "
                             "('thermocrop synth' then 'thermocrop extract --label-field crop')")
    parser.add_argument("--out", required=True, help="folder for realism.json and realism.md")
    parser.add_argument("--plot", help="also draw the figure to this PNG (e.g. docs/img/realism.png)")
    parser.add_argument("--min-parcels", type=int, default=5,
                        help="compare classes with at least this many real parcels (default 5)")
    parser.add_argument("--title", default="", help="title of the figure")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...core.pixel_sets import open_dataset
    from ...synth.realism import compare, format_table, parcel_observations, plot_realism, write_report

    real = parcel_observations([open_dataset(p) for p in args.real])
    synthetic = parcel_observations([open_dataset(p) for p in args.synthetic])
    result = compare(real, synthetic, min_parcels=args.min_parcels)
    paths = write_report(result, Path(args.out))
    print(f"real: {result.real_info['observations']} observations "
          f"({100 * result.real_info['cloud_screened']:.1f} % screened as cloud); synthetic: "
          f"{result.synthetic_info['observations']} ({100 * result.synthetic_info['cloud_screened']:.1f} %)")
    print("distance per class and feature (x 100), mean over "
          f"{len(result.edges) - 1} GDD bins of the quartile differences:")
    print(format_table(result))
    print(f"report: {paths['json']}, {paths['table']}")
    if args.plot:
        print(f"figure: {plot_realism(result, Path(args.plot), args.title)}")
    return 0
