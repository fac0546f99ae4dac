"""``thermocrop classify``: predict the crop of every parcel and write the layer with the result."""

from __future__ import annotations

import argparse
import logging

from ... import app
from ...app import ClassificationOutput, ClassifyRequest, ParcelsSpec, ResultFields
from ...core.inseason import DEFAULT_DECIDED_THRESHOLD
from ...core.model.calibration import DEFAULT_COVERAGE
from ...core.model.uncertainty import ENTROPY_FIELD, MARGIN_FIELD
from ...core.result_columns import DECIDED_FIELD, DECIDED_GDD_FIELD, SET_FIELD, SET_SIZE_FIELD
from ...core.settings import PixelSampling
from ..options import (
    CliProgress,
    add_cluster_options,
    add_missing_scl_option,
    add_season_option,
    add_stac_options,
    add_weather_options,
    bounded,
    cluster_spec,
    date,
    scenes_spec,
    weather_of,
)

HELP = "classify parcels with a model bundle and write them with crop_pred, crop_conf and crop_status"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parcels", required=True, help="parcel layer (any OGR format, any CRS)")
    parser.add_argument("--scenes", nargs="+",
                        help="scene folder(s), glob(s) or files: multi-band GeoTIFFs, per-band files or .SAFE "
                             "(or give --stac / --catalog below)")
    parser.add_argument("--weather", required=True, help="daily temperatures: E-OBS / CF NetCDF or station CSV, "
                                                         "or a service: open-meteo, cds:e-obs, cds:era5-land")
    parser.add_argument("--model", help="model bundle (default: the shipped model for the scenes' level, "
                        "default_fast_l2a.tcm for L2A scenes, default_fast.tcm for L1C or mixed ones; the "
                        "ensembles default_l2a.tcm and default.tcm by path)")
    parser.add_argument("--out", required=True, help="output vector file; the format follows the extension")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing output (even the parcel file; in a GeoPackage only the "
                             "written layer is replaced, its other layers stay)")
    parser.add_argument("--out-layer", help="output layer name in a GeoPackage (default: the parcel layer's name "
                                            "when writing into the parcel file, else the output file's name)")
    parser.add_argument("--id-field", help="field holding parcel ids (default: parcel_id, else row number)")
    parser.add_argument("--label-field", default="crop_pred", help="output field for the class (default crop_pred)")
    parser.add_argument("--conf-field", default="crop_conf", help="output field for the confidence (default crop_conf)")
    parser.add_argument("--status-field", default="crop_status",
                        help="output field for the status (default crop_status)")
    parser.add_argument("--probabilities", action="store_true",
                        help="also write each class's probability (p_<class>), the margin between the two likeliest "
                             "classes (crop_margin) and the normalised entropy (crop_entropy, 0 sure .. 1 undecided)")
    parser.add_argument("--coverage", type=bounded("coverage"), default=DEFAULT_COVERAGE,
                        help="the chance that a parcel's prediction set (crop_set, crop_set_size) holds its true class "
                             f"(default {DEFAULT_COVERAGE:g}); needs a calibrated model")
    parser.add_argument("--no-sets", action="store_true", help="write no prediction sets (crop_set, crop_set_size)")
    parser.add_argument("--as-of", type=date, metavar="YYYY-MM-DD",
                        help="classify as of this date: scenes acquired after it are left out, and the season's "
                             "status on it (acquisitions, GDD) is reported (default: every scene); without "
                             "--model, on L1C scenes, a date whose last scene kept has fewer than 2,000 GDD is "
                             "classified by the shipped in-season model inseason.tcm")
    parser.add_argument("--decided", action="store_true",
                        help="also write when each label was decided: crop_decided (the acquisition from which it no "
                             "longer changes and keeps its confidence) and crop_decided_gdd (the parcel's GDD then)")
    parser.add_argument("--decided-threshold", type=bounded("decided_threshold"), default=DEFAULT_DECIDED_THRESHOLD,
                        help="the confidence (calibrated where the model carries a calibration) a decided label keeps "
                             f"up to the last acquisition (default {DEFAULT_DECIDED_THRESHOLD:g}; with --decided)")
    parser.add_argument("--class-shares", metavar="CSV",
                        help="the crops' shares of the parcels in the area, known from elsewhere (last year's "
                             "declarations, agricultural statistics): a CSV file 'class,share' by the model's class "
                             "names; the probabilities are brought to these shares before labels and sets are made "
                             "(docs/class-shares.md; not with a partitioned run)")
    parser.add_argument("--min-pixels", type=bounded("min_pixels"), default=1,
                        help="parcels covering fewer pixels get status too_small (default 1: classify every parcel)")
    parser.add_argument("--chunk-size", type=bounded("chunk_size"), default=20000, help="parcels held in memory at once")
    parser.add_argument("--level", choices=("L1C", "L2A"), help="use only products of this level")
    add_season_option(parser)
    add_weather_options(parser)
    parser.add_argument("--band-order", help="comma-separated band order of multi-band files without descriptions")
    parser.add_argument("--offset", type=bounded("offset"), help="DN offset overriding the processing baseline (e.g. -1000)")
    add_cluster_options(parser)
    add_stac_options(parser)
    add_missing_scl_option(parser)


def run(args: argparse.Namespace) -> int:
    if args.decided_threshold != DEFAULT_DECIDED_THRESHOLD and not args.decided:
        logging.getLogger("thermocrop.classify").warning(
            "--decided-threshold is used only with --decided: no decision fields are written")
    weather = weather_of(args)
    request = ClassifyRequest(
        parcels=ParcelsSpec(args.parcels, id_field=args.id_field), scenes=scenes_spec(args), weather=weather,
        model=args.model,
        fields=ResultFields(args.label_field, args.conf_field, args.status_field, args.probabilities,
                            coverage=None if args.no_sets else args.coverage,
                            decided=args.decided_threshold if args.decided else None),
        sampling=PixelSampling(min_pixels=args.min_pixels, missing_scl=args.missing_scl),
        chunk_size=args.chunk_size, cluster=cluster_spec(args),
        output=ClassificationOutput(args.out, layer=args.out_layer, overwrite=args.overwrite,
                                    inputs=(args.parcels, *weather.local_files(), args.model, args.class_shares)),
        as_of=None if args.as_of is None else args.as_of.astype(object), class_shares=args.class_shares)
    run = app.run_classification(request, CliProgress())
    result, target = run.result, run.target
    names = target.fields
    sets = (f", {names.get(SET_FIELD, SET_FIELD)}, {names.get(SET_SIZE_FIELD, SET_SIZE_FIELD)} "
            f"({100 * result.coverage:g} % sets)" if result.coverage is not None else "")
    if result.decided_threshold is not None:
        sets += f", {names.get(DECIDED_FIELD, DECIDED_FIELD)}, {names.get(DECIDED_GDD_FIELD, DECIDED_GDD_FIELD)}"
    if args.probabilities:
        sets += f", p_<class> ({len(result.classes)}), {names.get(MARGIN_FIELD, MARGIN_FIELD)}, " \
                f"{names.get(ENTROPY_FIELD, ENTROPY_FIELD)}"
    print(f"wrote {run.written}{f' (layer {target.layer})' if target.container else ''}: {len(result)} parcels, "
          f"fields {names[args.label_field]}, {names[args.conf_field]}, {names[args.status_field]}{sets}")
    for key, count in sorted(result.counts().items()):
        print(f"  {key}: {count}")
    return 0
