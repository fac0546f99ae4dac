"""``thermocrop synth``: write a synthetic region (parcels, scenes, weather) and its phenology plot."""

from __future__ import annotations

import argparse

from ..options import bounded

HELP = "generate a synthetic region (parcels.gpkg, scenes/, weather.nc, truth.json) for tests and demos"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--region", required=True, nargs="+", choices=("AT1", "DK1", "FR1", "FR2"),
                        help="region(s) to generate; several go to DIR/<region>")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--parcels", type=bounded("parcels"), default=100, help="number of parcels (default 100)")
    parser.add_argument("--size", type=bounded("size"), help="scene side in 10 m pixels (default: fits the parcels)")
    parser.add_argument("--seed", type=bounded("seed"), default=0, help="random seed; same seed, same bytes (default 0)")
    parser.add_argument("--level", choices=("L1C", "L2A"), default="L1C",
                        help="L1C top-of-atmosphere (as the paper) or L2A surface reflectance with SCL")
    parser.add_argument("--year", type=bounded("year"), default=2017, help="season year (default 2017)")
    parser.add_argument("--baseline", help="processing baseline, e.g. N0205 (default) or N0400 (+1000 DN)")
    parser.add_argument("--plot", action="store_true",
                        help="also draw median NDVI per class against date and GDD (DIR/phenology.png)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...synth import generate_region, plot_phenology
    from ..progress_bar import progress_bar

    out = Path(args.out)
    folders = []
    for region in args.region:
        target = out / region if len(args.region) > 1 else out
        with progress_bar(f"synth {region}") as progress:
            manifest = generate_region(
                region, target, parcels=args.parcels, size=args.size, seed=args.seed, level=args.level,
                year=args.year, baseline=args.baseline, progress=progress,
            )
        folders.append(target)
        print(f"{region}: {len(manifest['parcels'])} parcels, {len(manifest['dates'])} scenes, "
              f"{manifest['size']} px square -> {target}")
    if args.plot:
        png = out / "phenology.png"
        plot_phenology(folders, png)
        print(f"phenology plot -> {png}")
    return 0
