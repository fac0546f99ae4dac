"""``thermocrop gdd``: growing degree days of every parcel at given dates, scene dates, or the
end of the weather record, written as a CSV table or as the layer with one field per date."""

from __future__ import annotations

import argparse
from typing import Optional

from ... import app
from ...app import GddRequest, ParcelsSpec
from ...app.requests import as_tuple
from ...core.settings import ThermalTime
from ...core.thermal.gdd import season_bounds
from ..options import (
    CliProgress,
    add_cluster_options,
    add_season_option,
    add_stac_options,
    add_weather_options,
    bounded,
    cluster_spec,
    date,
    scenes_spec,
    season_start,
    weather_of,
)

HELP = "growing degree days per parcel (and per date) from daily temperatures, to CSV or a vector file"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parcels", required=True, help="parcel layer (any OGR format, any CRS)")
    parser.add_argument("--weather", required=True,
                        help="daily temperatures: E-OBS / CF NetCDF (tn_/tx_ files find each other) or station CSV, "
                             "or a service: open-meteo, cds:e-obs, cds:era5-land (then give the dates)")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--dates", nargs="+", type=date, metavar="YYYY-MM-DD", help="dates to give GDD at")
    when.add_argument("--scenes", nargs="+",
                      help="Sentinel-2 scene folder(s), glob(s) or files whose acquisition dates are used")
    parser.add_argument("--out", required=True,
                        help="output: .csv (a table: parcel id and one gdd_YYYYMMDD column per date) or a "
                             "vector file (.gpkg, .shp, ...: the parcels with those fields; gYYYYMMDD in a "
                             "shapefile, whose field names keep 10 characters)")
    parser.add_argument("--out-layer", help="output layer name in a GeoPackage (default: the parcel layer's name "
                                            "when writing into the parcel file, else the output file's name)")
    parser.add_argument("--season-start", type=season_start, default="01-01",
                        help="season start MM-DD, '/-1' for the previous year, e.g. 09-01/-1 (default 01-01)")
    parser.add_argument("--t-base", type=bounded("t_base"), default=0.0, help="base temperature in deg C (default 0)")
    parser.add_argument("--t-cap", type=bounded("t_cap"), default=30.0, help="cap temperature in deg C (default 30)")
    parser.add_argument("--method", choices=("paper", "average"), default="paper",
                        help="paper: clip min/max then average; average: average then clip (McMaster & "
                             "Wilhelm method 1)")
    parser.add_argument("--id-field", help="field holding parcel ids (default: parcel_id, else row number)")
    add_season_option(parser)
    add_weather_options(parser)
    add_stac_options(parser)
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing output (even the parcel file; in a GeoPackage only the written "
                             "layer is replaced)")
    parser.add_argument("--chunk-size", type=bounded("chunk_size"), default=20000,
                        help="parcels per partition of a partitioned run (--workers, --scheduler)")
    add_cluster_options(parser)


def check_args(args: argparse.Namespace) -> Optional[str]:
    """A problem between options that their types alone cannot see (a usage error)."""
    if args.t_cap <= args.t_base:
        return f"--t-cap ({args.t_cap:g}) must be above --t-base ({args.t_base:g})"
    return None


def run(args: argparse.Namespace) -> int:
    scenes = scenes_spec(args, required=False)
    request = GddRequest(
        parcels=ParcelsSpec(args.parcels, id_field=args.id_field), weather=weather_of(args),
        dates=as_tuple(args.dates) or None, scenes=scenes if scenes.sources() else None,
        thermal=ThermalTime(season_start=args.season_start, t_base=args.t_base, t_cap=args.t_cap,
                            method=args.method),
        out=args.out, out_layer=args.out_layer, overwrite=args.overwrite, chunk_size=args.chunk_size,
        cluster=cluster_spec(args))
    run = app.run_gdd(request, CliProgress())
    dates, names = run.dates, run.names
    missing = int(run.missing.sum())
    start, _ = season_bounds(dates, request.thermal.season_start)
    print(f"wrote {run.written}: {len(run.table)} parcels x {len(dates)} dates ({dates.min()} to {dates.max()}, "
          f"GDD since {start}), fields {names[0]}{' ...' if len(names) > 1 else ''}"
          + (f"; {missing} parcels without usable temperatures" if missing else ""))
    return 0
