"""``thermocrop inseason``: a model's accuracy on a labelled dataset as of each acquisition."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("accuracy through the season: OA, macro F1 and per-class F1 as of each acquisition of a labelled "
        "dataset, against date and GDD (CSV and figure)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", required=True, help="labelled dataset folder (thermocrop extract --label-field, "
                                                      "or thermocrop import)")
    parser.add_argument("--model", help="model bundle (default: the shipped model)")
    parser.add_argument("--out", required=True, help="folder for inseason.csv, inseason_classes.csv and inseason.png")
    parser.add_argument("--overwrite", action="store_true", help="replace the files of an earlier run in --out")
    parser.add_argument("--drop-unseen-classes", action="store_true",
                        help="leave out parcels of classes the model does not have (default: refuse them)")


def run(args: argparse.Namespace) -> int:
    from ...core.io.output import check_output
    from ...core.model.bundle import default_bundle_path, load_bundle
    from ...core.pixel_sets import open_dataset
    from ...training.season_accuracy import (
        REACHED_SHARE,
        accuracy_through_season,
        season_accuracy_paths,
        write_season_accuracy,
    )

    model = args.model or default_bundle_path()
    if Path(args.out).is_dir():
        for path in season_accuracy_paths(args.out).values():
            check_output(path, what="in-season output", overwrite=args.overwrite, inputs=[args.data, model])
    else:
        check_output(args.out, what="in-season folder", kind="folder", inputs=[args.data, model])
    bundle = load_bundle(model)
    accuracy = accuracy_through_season(bundle, open_dataset(args.data),
                                       unseen="drop" if args.drop_unseen_classes else "error")
    paths = write_season_accuracy(accuracy, args.out, overwrite=args.overwrite)
    print(f"{accuracy.parcels} parcels, {len(accuracy.dates)} acquisitions")
    print(f"{'as of':<12}{'GDD':>8}{'OA':>8}{'macro F1':>10}")
    for t, day in enumerate(accuracy.dates):
        print(f"{str(day):<12}{accuracy.gdd[t]:>8.0f}{accuracy.overall_accuracy[t]:>8.3f}{accuracy.macro_f1[t]:>10.3f}")
    print(f"GDD at which each class's F1 first reaches {100 * REACHED_SHARE:.0f} % of its whole-season F1:")
    for name, gdd in accuracy.reached().items():
        if gdd is not None:
            print(f"  {name}: {gdd:.0f}")
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
