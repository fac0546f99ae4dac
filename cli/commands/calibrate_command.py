"""``thermocrop calibrate``: fit a model's calibration (confidence that is a probability, and
prediction sets) on labelled reference parcels and write the model with it as a new bundle."""

from __future__ import annotations

import argparse

from ... import app
from ...app import CalibrateRequest, ParcelsSpec
from ...core.errors import InputError
from ...core.model.calibration import CALIBRATION_METHODS
from ...core.settings import PixelSampling
from ..options import (
    CliProgress,
    add_missing_scl_option,
    add_season_option,
    add_stac_options,
    add_weather_options,
    scenes_spec,
    weather_of,
)

HELP = "calibrate a model's confidence and prediction sets on labelled reference parcels"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", nargs="?", help="model bundle to calibrate (default: the shipped model)")
    parser.add_argument("--out", required=True, help="the calibrated model bundle to write (.tcm)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    parser.add_argument("--reference", help="labelled reference parcels (any OGR format); they are classified "
                                            "from --scenes and --weather")
    parser.add_argument("--label-field", help="the reference layer's label field (class names, or crop codes with "
                                              "--class-map)")
    parser.add_argument("--class-map", help="crop codes -> classes: a preset (france, denmark, austria, bavaria, ...) "
                                            "or a CSV / YAML class map")
    parser.add_argument("--id-field", help="the reference layer's parcel id field")
    parser.add_argument("--dataset", nargs="+", help="instead of --reference: labelled dataset folder(s) written by "
                                                     "'thermocrop extract' or 'thermocrop import'")
    parser.add_argument("--scenes", nargs="+", help="scene folder(s), glob(s) or files (or --stac / --catalog)")
    parser.add_argument("--weather", help="daily temperatures (file) or a service: open-meteo, cds:e-obs, ...")
    parser.add_argument("--level", choices=("L1C", "L2A"), help="use only products of this level")
    parser.add_argument("--method", choices=CALIBRATION_METHODS, default="temperature",
                        help="temperature: one divisor of the log-probabilities, labels unchanged (default); vector: "
                             "a divisor and one bias per class, for the whole season and each season stage, which can change "
                             "labels, most early in the season (see docs/calibration.md)")
    parser.add_argument("--gdd-floor", type=float, metavar="GDD",
                        help="give the calibrated model this GDD floor, with which the calibration is fitted: each "
                             "parcel's acquisitions before it are left out where it has one from then on (0: none; "
                             "default: the model's own; see docs/in-season.md)")
    add_season_option(parser)
    add_weather_options(parser)
    add_stac_options(parser)
    add_missing_scl_option(parser)


def _from_datasets(args: argparse.Namespace) -> int:
    from ...app.calibration_run import check_gdd_floor
    from ...core.io.output import check_output
    from ...core.model.bundle import calibrated_bundle, default_bundle_for_levels, load_bundle, with_gdd_floor
    from ...core.model.shipped import refuse_shipped_model_output
    from ...core.pixel_sets import open_dataset
    from ...training.calibrate import calibrate_on_datasets

    refuse_shipped_model_output(args.out)  # before anything is read, as with --reference
    check_gdd_floor(args.gdd_floor)
    check_output(args.out, overwrite=args.overwrite, what="calibrated model", suffixes=(".tcm",),
                 inputs=[p for p in (args.model, *args.dataset) if p])
    datasets = [open_dataset(d) for d in args.dataset]
    levels = [level for ps in datasets for level in (ps.meta or {}).get("levels", [])]
    bundle = load_bundle(args.model or default_bundle_for_levels(levels))
    if args.gdd_floor is not None:
        bundle = with_gdd_floor(bundle, args.gdd_floor)
    # Extracted parcels hold every date: the season stages are fitted on them cut at each.
    calibration = calibrate_on_datasets(bundle, datasets, ", ".join(args.dataset), method=args.method, stages=True)
    calibrated_bundle(bundle, calibration, args.out, overwrite=args.overwrite)
    _print(args.out, calibration)
    return 0


def _print(out, calibration) -> None:
    biases = (", class biases " + " ".join(f"{b:+.2f}" for b in calibration.bias)) if calibration.bias else ""
    print(f"wrote {out}: calibrated on {calibration.parcels} parcels by {calibration.method} scaling, temperature "
          f"{calibration.temperature:.3f}{biases}, expected calibration error {calibration.ece_before:.3f} -> "
          f"{calibration.ece_after:.3f}")


def run(args: argparse.Namespace) -> int:
    if args.dataset:
        if args.reference:
            raise InputError("Give either --reference (a layer) or --dataset (extracted parcels), not both.")
        return _from_datasets(args)
    missing = [name for name, value in (("--reference", args.reference), ("--label-field", args.label_field),
                                        ("--weather", args.weather)) if not value]
    if missing:
        raise InputError(f"Calibrating on a reference layer needs {', '.join(missing)} (or give --dataset).")
    request = CalibrateRequest(
        reference=ParcelsSpec(args.reference, id_field=args.id_field), label_field=args.label_field,
        scenes=scenes_spec(args), weather=weather_of(args), out=args.out, model=args.model,
        class_map=args.class_map, overwrite=args.overwrite, sampling=PixelSampling(missing_scl=args.missing_scl),
        method=args.method, gdd_floor=args.gdd_floor)
    run = app.run_calibration(request, CliProgress())
    _print(run.path, run.calibration)
    if run.current is not None:
        print(f"  the model's own calibration gave {run.current:.3f} on these parcels "
              f"({run.calibration.ece_before:.3f} is that of its uncalibrated probabilities)")
    print("  reference parcels by class: " + ", ".join(f"{c} {n}" for c, n in sorted(run.counts.items())))
    if run.skipped:
        print("  left out (classes the model does not know): "
              + ", ".join(f"{c} {n}" for c, n in sorted(run.skipped.items())))
    return 0
