"""``thermocrop inseason``: a model's accuracy as of each acquisition, on a labelled dataset or on a
labelled reference layer classified from scenes and weather."""

from __future__ import annotations

import argparse
from pathlib import Path

from ... import app
from ...app import ParcelsSpec, SeasonAccuracyRequest
from ...core.errors import InputError
from ...core.model.season_curve import DEFAULT_CUTS
from ...core.model.shipped import refuse_shipped_model_output
from ...core.settings import PixelSampling
from ..options import (
    CliProgress,
    add_missing_scl_option,
    add_season_option,
    add_stac_options,
    add_weather_options,
    bounded,
    scenes_spec,
    weather_of,
)

HELP = ("accuracy through the season: OA, macro F1 and per-class F1 as of each acquisition of a labelled "
        "dataset or reference layer, against date and GDD (CSV and figure)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", help="labelled dataset folder (thermocrop extract --label-field, or thermocrop "
                                       "import)")
    parser.add_argument("--reference", help="instead of --data: labelled reference parcels (any OGR format), "
                                            "classified from --scenes and --weather")
    parser.add_argument("--label-field", help="the reference layer's label field (class names, or crop codes with "
                                              "--class-map)")
    parser.add_argument("--class-map", help="crop codes -> classes: a preset (france, denmark, austria, bavaria, ...) "
                                            "or a CSV / YAML class map")
    parser.add_argument("--id-field", help="the reference layer's parcel id field")
    parser.add_argument("--scenes", nargs="+", help="scene folder(s), glob(s) or files (or --stac / --catalog)")
    parser.add_argument("--weather", help="daily temperatures (file) or a service: open-meteo, cds:e-obs, ...")
    parser.add_argument("--level", choices=("L1C", "L2A"), help="use only products of this level")
    parser.add_argument("--model", help="model bundle (default: the shipped model; with --reference the one for "
                                        "the scenes' level)")
    parser.add_argument("--out", required=True, help="folder for inseason.csv, inseason_classes.csv and inseason.png")
    parser.add_argument("--overwrite", action="store_true", help="replace the files of an earlier run in --out")
    parser.add_argument("--record", metavar="NEW_MODEL",
                        help="with --data: also write the model to this new bundle (.tcm) with its accuracy through "
                             "the season recorded, which classify --as-of then warns with (the model itself is never "
                             "rewritten)")
    parser.add_argument("--record-cuts", type=bounded("season_cuts"), default=DEFAULT_CUTS,
                        help=f"with --record: cuts through the season, every 1/N of its GDD (default {DEFAULT_CUTS})")
    parser.add_argument("--record-level", type=bounded("season_level"),
                        help="with --record: the overall accuracy to record as the model's level (default: 90 %% of "
                             "its whole-season OA on the dataset)")
    parser.add_argument("--drop-unseen-classes", action="store_true",
                        help="with --data: leave out parcels of classes the model does not have (default: refuse "
                             "them; a reference layer's are always left out, and counted)")
    add_season_option(parser)
    add_weather_options(parser)
    add_stac_options(parser)
    add_missing_scl_option(parser)


def _from_dataset(args: argparse.Namespace):
    from ...core.io.output import check_output
    from ...core.model.bundle import default_bundle_for_levels, load_bundle
    from ...core.pixel_sets import open_dataset
    from ...training.datasets import check_model_gdd
    from ...training.season_accuracy import (
        accuracy_through_season,
        check_season_accuracy_out,
        write_season_accuracy,
    )
    from ...training.season_record import record_on_datasets, recorded_bundle

    if args.record:  # before the dataset is read
        refuse_shipped_model_output(args.record)
    dataset = open_dataset(args.data)
    model = args.model or default_bundle_for_levels((dataset.meta or {}).get("levels", []))
    check_season_accuracy_out(args.out, overwrite=args.overwrite, inputs=[args.data, model])
    if args.record:
        check_output(args.record, what="model bundle", suffixes=(".tcm",), overwrite=args.overwrite,
                     inputs=[args.data, model])
    bundle = load_bundle(model)
    check_model_gdd(bundle, [dataset], Path(model).name)
    unseen = "drop" if args.drop_unseen_classes else "error"
    accuracy = accuracy_through_season(bundle, dataset, unseen=unseen)
    paths = write_season_accuracy(accuracy, args.out, overwrite=args.overwrite)
    if args.record:
        curve = record_on_datasets(bundle, [dataset], f"the dataset {Path(args.data).name}", cuts=args.record_cuts,
                                   level=args.record_level, unseen=unseen)
        recorded_bundle(bundle, curve, args.record, overwrite=args.overwrite, inputs=[args.data, model])
        first = curve.reached()
        print(f"recorded in {args.record}: OA " + " ".join(f"{v:.2f}" for v in curve.overall_accuracy)
              + f" as of every {100 / len(curve.fractions):.0f} % of the season's GDD; level {curve.level:.3f} "
              f"({curve.level_rule}), " + (f"reached from {100 * curve.fractions[first]:.0f} %" if first is not None
                                           else "not reached"))
        paths = {**paths, "model": Path(args.record)}
    return accuracy, paths


def _from_reference(args: argparse.Namespace):
    missing = [name for name, value in (("--label-field", args.label_field), ("--weather", args.weather)) if not value]
    if missing:
        raise InputError(f"Scoring a reference layer through the season needs {', '.join(missing)}.")
    request = SeasonAccuracyRequest(
        reference=ParcelsSpec(args.reference, id_field=args.id_field), label_field=args.label_field,
        scenes=scenes_spec(args), weather=weather_of(args), out=args.out, model=args.model,
        class_map=args.class_map, overwrite=args.overwrite, sampling=PixelSampling(missing_scl=args.missing_scl))
    run = app.run_season_accuracy(request, CliProgress())
    return run.accuracy, run.paths


def run(args: argparse.Namespace) -> int:
    from ...training.season_accuracy import REACHED_SHARE

    if bool(args.data) == bool(args.reference):
        raise InputError("Give either --data (a labelled dataset folder) or --reference (a labelled layer with "
                         "--scenes and --weather).")
    if args.record is None and (args.record_level is not None or args.record_cuts != DEFAULT_CUTS):
        raise InputError("--record-cuts and --record-level say how to record the accuracy in a new bundle: give "
                         "--record NEW_MODEL.tcm too.")
    if args.record and args.reference:
        raise InputError("--record records the accuracy measured on a labelled dataset: give --data (thermocrop "
                         "extract --label-field, or thermocrop import) instead of --reference.")
    accuracy, paths = _from_dataset(args) if args.data else _from_reference(args)
    print(f"{accuracy.parcels} parcels, {len(accuracy.dates)} acquisitions")
    print(f"{'as of':<12}{'GDD':>8}{'OA':>8}{'macro F1':>10}")
    for t, day in enumerate(accuracy.dates):
        print(f"{str(day):<12}{accuracy.gdd[t]:>8.0f}{accuracy.overall_accuracy[t]:>8.3f}{accuracy.macro_f1[t]:>10.3f}")
    print(f"GDD at which each class's F1 first reaches {100 * REACHED_SHARE:.0f} % of its whole-season F1:")
    never = accuracy.never_right()
    for name, gdd in accuracy.reached().items():
        if gdd is not None:
            print(f"  {name}: {gdd:.0f}")
        elif name in never:
            print(f"  {name}: never right on the whole season (F1 0)")
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
