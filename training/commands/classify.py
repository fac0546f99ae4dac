"""``thermocrop classify``: predict the crop of every parcel and write the layer with the result."""

from __future__ import annotations

import argparse

from .extract import add_missing_scl_option

HELP = "classify parcels with a model bundle and write them with crop_pred, crop_conf and crop_status"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parcels", required=True, help="parcel layer (any OGR format, any CRS)")
    parser.add_argument("--scenes", required=True, nargs="+",
                        help="scene folder(s), glob(s) or files: multi-band GeoTIFFs, per-band files or .SAFE")
    parser.add_argument("--weather", required=True, help="daily temperatures: E-OBS / CF NetCDF or station CSV")
    parser.add_argument("--model", help="model bundle (default: the shipped model)")
    parser.add_argument("--out", required=True, help="output vector file; the format follows the extension")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output (even the input)")
    parser.add_argument("--id-field", help="field holding parcel ids (default: parcel_id, else row number)")
    parser.add_argument("--label-field", default="crop_pred", help="output field for the class (default crop_pred)")
    parser.add_argument("--conf-field", default="crop_conf", help="output field for the confidence (default crop_conf)")
    parser.add_argument("--status-field", default="crop_status",
                        help="output field for the status (default crop_status)")
    parser.add_argument("--min-pixels", type=int, default=1,
                        help="parcels covering fewer pixels get status too_small (default 1: classify every parcel)")
    parser.add_argument("--chunk-size", type=int, default=20000, help="parcels held in memory at once")
    parser.add_argument("--level", choices=("L1C", "L2A"), help="use only products of this level")
    parser.add_argument("--band-order", help="comma-separated band order of multi-band files without descriptions")
    parser.add_argument("--offset", type=int, help="DN offset overriding the processing baseline (e.g. -1000)")
    add_missing_scl_option(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...core.classify import classify_parcels, write_classification
    from ...core.errors import InputError
    from ...core.scenes import find_scenes
    from ..progress_bar import progress_bar
    from .extract import scene_options

    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise InputError(f"{out} already exists; choose another output or pass --overwrite.")
    scenes = find_scenes(args.scenes, **scene_options(args))
    print(f"{len(scenes)} dates from {sum(len(s.products) for s in scenes)} products")
    with progress_bar("classify") as progress:
        result = classify_parcels(args.parcels, scenes, args.weather, args.model, chunk_size=args.chunk_size,
                                  id_field=args.id_field, min_pixels=args.min_pixels,
                                  missing_scl=args.missing_scl, progress=progress)
    write_classification(args.parcels, result, out, label_field=args.label_field, conf_field=args.conf_field,
                         status_field=args.status_field, overwrite=args.overwrite)
    print(f"wrote {out}: {len(result)} parcels")
    for key, count in sorted(result.counts().items()):
        print(f"  {key}: {count}")
    return 0
