"""``thermocrop classify``: predict the crop of every parcel and write the layer with the result."""

from __future__ import annotations

import argparse

from ..options import add_cluster_options, add_season_option, add_stac_options, bounded
from .extract_command import add_missing_scl_option

HELP = "classify parcels with a model bundle and write them with crop_pred, crop_conf and crop_status"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parcels", required=True, help="parcel layer (any OGR format, any CRS)")
    parser.add_argument("--scenes", nargs="+",
                        help="scene folder(s), glob(s) or files: multi-band GeoTIFFs, per-band files or .SAFE "
                             "(or give --stac / --catalog below)")
    parser.add_argument("--weather", required=True, help="daily temperatures: E-OBS / CF NetCDF or station CSV, "
                                                         "or a service: open-meteo, cds:e-obs, cds:era5-land")
    parser.add_argument("--model", help="model bundle (default: the shipped model)")
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
    parser.add_argument("--min-pixels", type=bounded("min_pixels"), default=1,
                        help="parcels covering fewer pixels get status too_small (default 1: classify every parcel)")
    parser.add_argument("--chunk-size", type=bounded("chunk_size"), default=20000, help="parcels held in memory at once")
    parser.add_argument("--level", choices=("L1C", "L2A"), help="use only products of this level")
    add_season_option(parser)
    parser.add_argument("--band-order", help="comma-separated band order of multi-band files without descriptions")
    parser.add_argument("--offset", type=bounded("offset"), help="DN offset overriding the processing baseline (e.g. -1000)")
    add_cluster_options(parser)
    add_stac_options(parser)
    add_missing_scl_option(parser)


def run(args: argparse.Namespace) -> int:
    import time

    from ...core.classify import classify_parcels, write_classification
    from ...core.parcels import require_usable
    from ...core.preflight import check_inputs
    from ...core.settings import PixelSampling
    from ...core.io.vector import check_vector_output, replaced_fields, source_field_kinds
    from ...core.thermal.weather_services import is_weather_service
    from ..progress_bar import partition_bar, progress_bar
    from ..options import cluster_options, print_run_summary, resolve_scenes, resolve_weather
    from .extract_command import scene_options

    # Everything about the output is checked before any scene is read.
    service = is_weather_service(args.weather)
    inputs = [args.parcels, None if service else args.weather, args.model]
    target = check_vector_output(args.out, overwrite=args.overwrite, inputs=inputs, replaceable=[args.parcels],
                                 layer=args.out_layer,
                                 fields=[args.label_field, args.conf_field, args.status_field])
    replaced_fields(source_field_kinds(args.parcels), target,
                    {args.label_field: "string", args.conf_field: "real", args.status_field: "string"},
                    source=f"The parcel layer {args.parcels}")
    cluster = cluster_options(args)
    checked = check_inputs(parcels=args.parcels, fields={"id": args.id_field},
                           scenes=resolve_scenes(args, args.parcels, **scene_options(args)), season=args.season,
                           weather=None if service else args.weather, bundle=args.model, need_bundle=True)
    scenes = checked.scenes
    print(f"{len(scenes)} dates from {sum(len(s.products) for s in scenes)} products "
          f"(inputs checked in {checked.seconds:.1f} s)")
    weather = args.weather
    if service:
        from ...core.parcels import load_parcels

        weather = resolve_weather(args, load_parcels(args.parcels, id_field=args.id_field, block_field=None),
                                  [s.date for s in scenes], checked.season_start)
    sampling = PixelSampling(min_pixels=args.min_pixels, missing_scl=args.missing_scl)
    if cluster is None:
        with progress_bar("classify") as progress:
            result = classify_parcels(args.parcels, scenes, weather, checked.bundle, chunk_size=args.chunk_size,
                                      id_field=args.id_field, sampling=sampling, progress=progress)
    else:
        from ...core.runs.folder import default_run_folder
        from ...core.runs.partitions import classify_partitioned

        start = time.perf_counter()
        # Workers load the model from its file (once each); a checksum of it guards --resume.
        with partition_bar("classify") as bar:
            result, summary, folder = classify_partitioned(
                args.parcels, scenes, weather, args.model, cluster=cluster, resume=args.resume,
                run_folder=args.run_folder or default_run_folder(target.path), chunk_size=args.chunk_size,
                listener=bar, inputs=inputs, id_field=args.id_field, sampling=sampling)
        print_run_summary(summary, time.perf_counter() - start)
    require_usable(result.status, "classified", args.parcels)
    out = write_classification(args.parcels, result, args.out, label_field=args.label_field,
                               conf_field=args.conf_field, status_field=args.status_field,
                               overwrite=args.overwrite, out_layer=args.out_layer, inputs=inputs,
                               probabilities=args.probabilities)
    if cluster is not None:
        from ...core.runs.folder import remove_run_folder

        remove_run_folder(folder)
    names = target.fields
    print(f"wrote {out}{f' (layer {target.layer})' if target.container else ''}: {len(result)} parcels, fields "
          f"{names[args.label_field]}, {names[args.conf_field]}, {names[args.status_field]}")
    for key, count in sorted(result.counts().items()):
        print(f"  {key}: {count}")
    return 0
