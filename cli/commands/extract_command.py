"""``thermocrop extract``: parcels + Sentinel-2 scenes + weather -> a pixel-set dataset folder."""

from __future__ import annotations

import argparse

import numpy as np

from ... import app
from ...app import ExtractRequest, ParcelsSpec
from ...core.pixel_sets import open_dataset
from ...core.settings import ExtractionSettings, PixelSampling, ThermalTime
from ..options import (
    CliProgress,
    add_cluster_options,
    add_missing_scl_option,
    add_season_option,
    add_stac_options,
    add_weather_options,
    bounded,
    cluster_spec,
    scenes_spec,
    season_start,
    weather_of,
)

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
    add_weather_options(parser)
    parser.add_argument("--band-order", help="comma-separated band order of multi-band files without descriptions")
    parser.add_argument("--offset", type=bounded("offset"), help="DN offset overriding the processing baseline (e.g. -1000)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing dataset folder (only a dataset folder is ever replaced)")
    add_cluster_options(parser)
    add_stac_options(parser)
    add_missing_scl_option(parser)


def run(args: argparse.Namespace) -> int:
    sampling = PixelSampling(max_pixels=args.max_pixels, seed=args.seed, min_valid_fraction=args.min_valid_fraction,
                             min_pixels=args.min_pixels, missing_scl=args.missing_scl)
    request = ExtractRequest(
        parcels=ParcelsSpec(args.parcels, id_field=args.id_field), scenes=scenes_spec(args), weather=weather_of(args),
        out=args.out, label_field=args.label_field, class_map=args.class_map, min_parcels=args.min_parcels,
        block_field=args.block_field, block_size_km=args.block_size_km,
        settings=ExtractionSettings(sampling=sampling, thermal=ThermalTime(season_start=args.season_start)),
        chunk_size=args.chunk_size, overwrite=args.overwrite, cluster=cluster_spec(args))
    out = app.run_extraction(request, CliProgress()).path
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
