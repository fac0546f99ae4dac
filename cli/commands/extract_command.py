"""``thermocrop extract``: parcels + Sentinel-2 scenes + weather -> a pixel-set dataset folder."""

from __future__ import annotations

import argparse

from ..options import add_cluster_options, add_season_option, add_stac_options, bounded, season_start

HELP = "extract per-parcel pixel sets (for training or inspection) into a dataset folder"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parcels", required=True, help="parcel layer (any OGR format, any CRS)")
    parser.add_argument("--scenes", nargs="+",
                        help="scene folder(s), glob(s) or files: multi-band GeoTIFFs, per-band files or .SAFE "
                             "(or give --stac / --catalog below)")
    parser.add_argument("--weather", required=True, help="daily temperatures: E-OBS / CF NetCDF or station CSV, "
                                                         "or a service: open-meteo, cds:e-obs, cds:era5-land")
    parser.add_argument("--out", required=True, help="dataset folder to create")
    parser.add_argument("--label-field",
                        help="field holding the crop labels (for training data): class names or crop codes, any values")
    parser.add_argument("--class-map",
                        help="map codes or names to classes: france, denmark or austria (the paper's LPIS code "
                             "tables), or a CSV (code,class) or YAML file; codes not in it become 'unknown'")
    parser.add_argument("--min-parcels", type=bounded("min_parcels"), default=0,
                        help="classes with fewer labelled parcels become 'unknown' (default 0: keep every class)")
    parser.add_argument("--id-field", help="field holding parcel ids (default: parcel_id, else row number)")
    parser.add_argument("--block-field", default="block", help="field holding spatial split blocks (default: block)")
    parser.add_argument("--block-size-km", type=bounded("block_size_km"),
                        help="spatial split blocks from a square grid of cells of this size (km) over the parcel "
                             "centroids, instead of --block-field (e.g. 10)")
    parser.add_argument("--max-pixels", type=bounded("max_pixels"), default=64, help="pixels kept per parcel and date (default 64)")
    parser.add_argument("--seed", type=bounded("seed"), default=0, help="seed of the pixel sampling (default 0)")
    parser.add_argument("--season-start", type=season_start, default="01-01",
                        help="GDD season start MM-DD, '/-1' for the previous year, e.g. 09-01/-1 (default 01-01)")
    parser.add_argument("--min-valid-fraction", type=bounded("min_valid_fraction"), default=0.5,
                        help="keep a date for a parcel when at least this fraction of its pixels is clear")
    parser.add_argument("--min-pixels", type=bounded("min_pixels"), default=1,
                        help="parcels covering fewer pixels get status too_small (default 1: keep every parcel)")
    parser.add_argument("--chunk-size", type=bounded("chunk_size"), default=20000, help="parcels held in memory at once")
    parser.add_argument("--level", choices=("L1C", "L2A"), help="use only products of this level")
    add_season_option(parser)
    parser.add_argument("--band-order", help="comma-separated band order of multi-band files without descriptions")
    parser.add_argument("--offset", type=bounded("offset"), help="DN offset overriding the processing baseline (e.g. -1000)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing dataset folder (only a dataset folder is ever replaced)")
    add_cluster_options(parser)
    add_stac_options(parser)
    add_missing_scl_option(parser)


def add_missing_scl_option(parser: argparse.ArgumentParser) -> None:
    """``--missing-scl``: what to do with L2A products that have no SCL raster to mask clouds with."""
    parser.add_argument("--missing-scl", choices=("refuse", "warn", "bands"), default="refuse",
                        help="L2A products without an SCL raster: refuse them (default), use them unmasked with "
                             "a warning (warn), or mask thick clouds and snow by a brightness test (bands)")


def scene_options(args: argparse.Namespace) -> dict:
    """Keyword arguments of ``find_scenes`` from the shared scene options."""
    return {
        "band_order": args.band_order.split(",") if getattr(args, "band_order", None) else None,
        "level": getattr(args, "level", None),
        "offset": getattr(args, "offset", None),
    }


def grid_block_table(args: argparse.Namespace):
    """The parcels as a ``ParcelTable`` whose blocks are the cells of a ``--block-size-km`` grid."""
    import logging
    from dataclasses import replace

    import numpy as np

    from ...core.parcels import load_parcels
    from ...training.importers.common import grid_blocks, locations_from_geometries

    table = load_parcels(args.parcels, id_field=args.id_field, label_field=args.label_field, block_field=None,
                         class_map=args.class_map, min_parcels=args.min_parcels)
    blocks = grid_blocks(locations_from_geometries(table.geometry), args.block_size_km * 1000.0)
    logging.getLogger("thermocrop.extract").info(
        "%s: %d spatial blocks from a %g km grid", table.source, len(np.unique(blocks[blocks >= 0])),
        args.block_size_km)
    return replace(table, blocks=blocks)


def run(args: argparse.Namespace) -> int:
    import time

    import numpy as np

    from ...core.pixel_sets import is_dataset_folder, open_dataset
    from ...core.extract import extract_to_dataset
    from ...core.io.output import check_output
    from ...core.parcels import ParcelFields
    from ...core.settings import ExtractionSettings, PixelSampling, ThermalTime
    from ...core.preflight import check_inputs
    from ...core.thermal.weather_services import is_weather_service
    from ..progress_bar import partition_bar, progress_bar
    from ..options import cluster_options, print_run_summary, resolve_scenes, resolve_weather

    # The output is checked before any scene is read.
    service = is_weather_service(args.weather)
    check_output(args.out, what="dataset folder", kind="folder", overwrite=args.overwrite,
                 inputs=[args.parcels, None if service else args.weather, *(args.scenes or [])],
                 replaceable_folder=is_dataset_folder)
    cluster = cluster_options(args)
    checked = check_inputs(parcels=args.parcels, fields={"id": args.id_field, "label": args.label_field},
                           scenes=resolve_scenes(args, args.parcels, **scene_options(args)), season=args.season,
                           season_start=args.season_start, weather=None if service else args.weather)
    scenes = checked.scenes
    print(f"{len(scenes)} dates from {sum(len(s.products) for s in scenes)} products "
          f"(inputs checked in {checked.seconds:.1f} s)")
    parcels = grid_block_table(args) if args.block_size_km else args.parcels
    weather = args.weather
    if service:
        from ...core.parcels import load_parcels

        weather = resolve_weather(args, load_parcels(args.parcels, id_field=args.id_field, block_field=None),
                                  [s.date for s in scenes], args.season_start)
    sampling = PixelSampling(max_pixels=args.max_pixels, seed=args.seed, min_valid_fraction=args.min_valid_fraction,
                             min_pixels=args.min_pixels, missing_scl=args.missing_scl)
    options = dict(settings=ExtractionSettings(sampling=sampling, thermal=ThermalTime(season_start=args.season_start)),
                   fields=ParcelFields(id_field=args.id_field, label_field=args.label_field, class_map=args.class_map,
                                       min_parcels=args.min_parcels, block_field=args.block_field))
    if cluster is None:
        with progress_bar("extract") as progress:
            out = extract_to_dataset(parcels, scenes, weather, args.out, chunk_size=args.chunk_size,
                                     overwrite=args.overwrite, progress=progress, **options)
    else:
        from ...core.runs.folder import default_run_folder, remove_run_folder
        from ...core.runs.partitions import extract_partitioned

        start = time.perf_counter()
        with partition_bar("extract") as bar:
            out, summary, folder = extract_partitioned(
                parcels, scenes, weather, args.out, cluster=cluster, resume=args.resume,
                run_folder=args.run_folder or default_run_folder(args.out), chunk_size=args.chunk_size,
                overwrite=args.overwrite, listener=bar, inputs=[args.parcels, None if service else args.weather],
                **options)
        print_run_summary(summary, time.perf_counter() - start)
        remove_run_folder(folder)
    ps = open_dataset(out)
    statuses, counts = np.unique(ps.status, return_counts=True)
    print(f"wrote {out}: {len(ps)} parcels x {ps.n_dates} dates")
    for s, c in zip(statuses, counts):
        print(f"  {s}: {c}")
    if ps.classes:
        print(f"{len(ps.classes)} classes (labelled parcels with status ok):")
        width = max(len(c) for c in ps.classes)
        for name, n in ps.class_counts().items():
            print(f"  {name:<{width}} {n}")
    return 0
