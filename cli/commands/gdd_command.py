"""``thermocrop gdd``: growing degree days of every parcel at given dates, scene dates, or the
end of the weather record, written as a CSV table or as the layer with one field per date."""

from __future__ import annotations

import argparse
from typing import Optional

from ..options import (
    add_cluster_options,
    add_season_option,
    add_stac_options,
    add_weather_options,
    bounded,
    date,
    season_start,
    weather_options,
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


def _dates(args: argparse.Namespace, options: dict, scenes):
    import numpy as np

    from ...core.thermal.weather import record_period

    if args.dates:
        return np.unique(np.array(args.dates, dtype="datetime64[D]"))
    if scenes:
        return np.unique(np.array([s.date for s in scenes], dtype="datetime64[D]"))
    if getattr(args, "stac", None) or getattr(args, "catalog", None):
        from ..options import scene_dates

        return scene_dates(args, args.parcels)
    from ...core.errors import InputError
    from ...core.thermal.weather_services import is_weather_service

    if is_weather_service(args.weather):
        raise InputError(f"--weather {args.weather} needs the dates: give --dates, --scenes, --stac or --catalog.")
    _, last = record_period(args.weather, tmin_var=options["tmin_var"], date_var=options["date_var"])
    print(f"no --dates or --scenes: GDD at the end of the weather record, {last}")
    return np.array([last])


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ...core.io.csv_cells import inert_frame
    from ...core.errors import NoUsableParcelsError
    from ...core.parcels import load_parcels
    from ...core.thermal.gdd import gdd_at_points, season_bounds
    from ...core.io.output import check_output, write_text
    from ...core.preflight import check_inputs
    from ..options import cluster_options
    from ...core.io.vector import (
        check_vector_output,
        date_field_names,
        output_field_names,
        replaced_fields,
        source_field_kinds,
        write_with_fields,
    )

    from ...core.thermal.weather_services import is_weather_service

    # The output is checked before any file is read.
    service = is_weather_service(args.weather)
    table_out = str(args.out).lower().endswith(".csv")
    inputs = [args.parcels, None if service else args.weather, args.tmax_file]
    if table_out:
        out = check_output(args.out, what="GDD table", overwrite=args.overwrite, inputs=inputs)
    else:
        target = check_vector_output(args.out, overwrite=args.overwrite, inputs=inputs, replaceable=[args.parcels],
                                     layer=args.out_layer)
        out = target.path
    season_start = args.season_start
    options = weather_options(args)
    checked = check_inputs(parcels=args.parcels, fields={"id": args.id_field}, scenes=args.scenes, season=args.season,
                           season_start=season_start, dates=args.dates, weather=None if service else args.weather,
                           weather_options=options)
    dates = _dates(args, options, checked.scenes)
    names = date_field_names(dates, None if table_out else target.driver)
    if not table_out:
        target.fields = output_field_names(target.driver, names)
        replaced_fields(source_field_kinds(args.parcels), target, dict.fromkeys(names, "real"),
                        source=f"The parcel layer {args.parcels}")
    cluster = cluster_options(args)
    table = load_parcels(args.parcels, id_field=args.id_field)
    from ..options import resolve_weather

    weather = resolve_weather(args, table, dates, season_start)
    if cluster is None:
        usable = np.array([g is not None for g in table.geometry])
        points = table.geometry[usable].representative_point()
        xs = np.full(len(table), np.nan)
        ys = np.full(len(table), np.nan)
        xs[usable], ys[usable] = points.x.to_numpy(), points.y.to_numpy()
        gdd = gdd_at_points(weather, xs, ys, table.geometry.crs, dates, season_start=season_start,
                            t_base=args.t_base, t_cap=args.t_cap, method=args.method,
                            parcel_ids=list(table.parcel_ids), **options)
    else:
        import time

        from ...core.runs.folder import default_run_folder
        from ...core.runs.partitions import gdd_partitioned
        from ..progress_bar import partition_bar
        from ..options import print_run_summary

        start = time.perf_counter()
        with partition_bar("gdd") as bar:
            gdd, summary, folder = gdd_partitioned(
                table, weather, dates, cluster=cluster, resume=args.resume,
                run_folder=args.run_folder or default_run_folder(out), chunk_size=args.chunk_size, listener=bar,
                inputs=inputs, season_start=season_start, t_base=args.t_base, t_cap=args.t_cap,
                method=args.method, **options)
        print_run_summary(summary, time.perf_counter() - start)
    if not np.isfinite(gdd).all(axis=1).any():
        raise NoUsableParcelsError(
            f"No parcel of {args.parcels} has usable temperatures in {args.weather} (no cell with data "
            f"within {args.max_distance_km:g} km, or gaps of more than 3 days); check the parcels' CRS "
            "and that the file covers them. Nothing was written.")
    if table_out:
        import pandas as pd

        frame = pd.DataFrame(np.round(gdd, 2), columns=names)
        frame.insert(0, args.id_field or "parcel_id", table.parcel_ids)
        # CRLF rows (RFC 4180): pandas then quotes a cell holding a carriage return, which a
        # spreadsheet would otherwise take for a new row (whose first cell could be a formula).
        text = inert_frame(frame).to_csv(index=False, float_format="%.2f", lineterminator="\r\n")
        write_text(out, text, overwrite=args.overwrite, what="GDD table")
    else:
        write_with_fields(args.parcels, {n: np.round(gdd[:, i], 2) for i, n in enumerate(names)}, out,
                          overwrite=args.overwrite, out_layer=args.out_layer, inputs=inputs)
    if cluster is not None:
        from ...core.runs.folder import remove_run_folder

        remove_run_folder(folder)
    missing = int((~np.isfinite(gdd).all(axis=1)).sum())
    start, _ = season_bounds(dates, season_start)
    print(f"wrote {out}: {len(table)} parcels x {len(dates)} dates ({dates.min()} to {dates.max()}, "
          f"GDD since {start}), fields {names[0]}{' ...' if len(names) > 1 else ''}"
          + (f"; {missing} parcels without usable temperatures" if missing else ""))
    return 0
