"""``thermocrop import table|timematch|psetae``: other formats -> a ThermoCrop dataset folder."""

from __future__ import annotations

import argparse

from ..options import add_weather_options, bounded, season_start, weather_options

NAME = "import"
HELP = "import a crop-type dataset of another format (parcel tables, TimeMatch, PSE-TAE) as a dataset folder"


def _add_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="dataset folder to create")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing dataset folder")


def _add_classes(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("classes")
    group.add_argument("--class-map", help="CSV file of 'code,class' rows, or a preset name "
                                           "(e.g. bavaria); codes it lacks become 'unknown'")
    group.add_argument("--classes", help="comma-separated class list (default: the classes that occur, sorted)")


def _add_gdd(parser: argparse.ArgumentParser, weather_required: bool = True) -> None:
    group = parser.add_argument_group("thermal time")
    group.add_argument("--weather", required=weather_required,
                       help="daily temperatures: E-OBS / CF NetCDF or station CSV")
    group.add_argument("--season-start", type=season_start, default="01-01",
                       help="GDD season start MM-DD, '/-1' for the previous year (default 01-01)")
    group.add_argument("--t-base", type=bounded("t_base"), default=0.0, help="GDD base temperature, C (default 0)")
    group.add_argument("--t-cap", type=bounded("t_cap"), default=30.0, help="GDD upper cap, C (default 30)")
    group.add_argument("--gdd-method", choices=("paper", "average"), default="paper",
                       help="paper (clip, then average; default) or average (McMaster & Wilhelm method 1)")
    add_weather_options(parser)


def _weather(args: argparse.Namespace):
    """The importers' ``ImportWeather`` from the weather and thermal time options."""
    from ...core.settings import ThermalTime
    from ...training.importers.common import ImportWeather

    thermal = ThermalTime(season_start=args.season_start, t_base=args.t_base, t_cap=args.t_cap, method=args.gdd_method)
    return ImportWeather(args.weather, thermal, weather_options(args))


def _classes(args: argparse.Namespace):
    return [c.strip() for c in args.classes.split(",") if c.strip()] if args.classes else None


def _configure_table(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tables", nargs="+", metavar="TABLE",
                        help="CSV, Parquet or Excel file(s) of per-parcel band values per date")
    _add_output(parser)
    shape = parser.add_argument_group("table layout")
    shape.add_argument("--layout", choices=("auto", "long", "wide"), default="auto",
                       help="long: a row per parcel and date; wide: a row per parcel, a column per band "
                            "and date (default auto: long when there is a date column)")
    shape.add_argument("--sheet", help="Excel sheet (default: the first)")
    shape.add_argument("--id-column", help="parcel id column (default: parcel_id, id, field_id or fid)")
    shape.add_argument("--date-column", help="date column (default: date, time, acquisition_date or "
                                             "system:time_start)")
    shape.add_argument("--date-format", help="strftime format of text dates that are not YYYY-MM-DD, e.g. %%d.%%m.%%Y")
    shape.add_argument("--band-columns", help="band=column pairs for columns not recognised by name, "
                                              "e.g. B02=blue,B03=green")
    shape.add_argument("--value-scale", type=bounded("value_scale"),
                       help="the value a reflectance of 1 is written as: 10000 (digital numbers) or 1 "
                            "(default: guessed from the largest value)")
    shape.add_argument("--offset", type=bounded("value_offset"), default=0.0,
                       help="added to the band values first, e.g. -1000 for raw digital numbers of "
                            "processing baseline 04.00 and later (default 0)")
    shape.add_argument("--level", choices=("L1C", "L2A"), help="processing level of the reflectances (recorded)")
    attrs = parser.add_argument_group("labels, blocks and locations")
    attrs.add_argument("--label-column", help="table column of the crop code or class")
    attrs.add_argument("--block-column", help="table column of the spatial block")
    attrs.add_argument("--lon-column", help="table column of the parcel longitude (WGS 84)")
    attrs.add_argument("--lat-column", help="table column of the parcel latitude (WGS 84)")
    attrs.add_argument("--parcels", help="parcel layer (any OGR format) for locations, labels and blocks")
    attrs.add_argument("--parcels-layer", help="layer name inside --parcels")
    attrs.add_argument("--join-field", help="field of --parcels holding the table's parcel ids")
    attrs.add_argument("--join-by-row", action="store_true",
                       help="the table's parcel ids are 0-based feature numbers of --parcels")
    attrs.add_argument("--label-field", help="field of --parcels holding the crop code or class")
    attrs.add_argument("--block-field", help="field of --parcels holding the spatial block")
    attrs.add_argument("--block-size-km", type=bounded("block_size_km"),
                       help="spatial blocks from a square grid of this size over the parcel locations")
    _add_classes(parser)
    _add_gdd(parser)


def _run_table(args: argparse.Namespace) -> str:
    from ...core.errors import InputError
    from ...training.importers.common import ClassesAndBlocks, ParcelLayer
    from ...training.importers.table import TableColumns, import_table

    bands = None
    if args.band_columns:
        try:
            bands = dict(pair.split("=", 1) for pair in args.band_columns.split(","))
        except ValueError:
            raise InputError(f"--band-columns {args.band_columns!r}: write band=column pairs separated "
                             "by commas") from None
    columns = TableColumns(layout=args.layout, sheet=args.sheet, id_column=args.id_column,
                           date_column=args.date_column, date_format=args.date_format, band_columns=bands,
                           label_column=args.label_column, block_column=args.block_column,
                           lon_column=args.lon_column, lat_column=args.lat_column, value_scale=args.value_scale,
                           offset=args.offset, level=args.level)
    layer = ParcelLayer(path=args.parcels, layer=args.parcels_layer, join_field=args.join_field,
                        join_by_row=args.join_by_row, label_field=args.label_field, block_field=args.block_field)
    grouping = ClassesAndBlocks(class_map=args.class_map, classes=_classes(args),
                                block_size_m=args.block_size_km * 1000.0 if args.block_size_km else None)
    return import_table(args.tables, args.out, overwrite=args.overwrite, weather=_weather(args), columns=columns,
                        layer=layer, grouping=grouping)


def _configure_timematch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", metavar="ROOT",
                        help="TimeMatch folder (holding dataset_split.json and <country>/<tile>/<year>/)")
    parser.add_argument("--tile", required=True,
                        help="country/tile/year, e.g. denmark/32VNH/2017, or the paper's name AT1, DK1, FR1, FR2")
    _add_output(parser)
    parser.add_argument("--max-pixels", type=bounded("max_pixels"), default=64,
                        help="pixels kept per parcel, a seeded random subset of larger parcels (default 64)")
    parser.add_argument("--seed", type=bounded("seed"), default=0, help="seed of the pixel subsets (default 0)")
    group = parser.add_argument_group("classes")
    group.add_argument("--class-map", help="CSV of 'code,class' rows or a preset name (default: the preset "
                                           "named after the tile's country, e.g. denmark)")
    group.add_argument("--classes", help="comma-separated class list, or 'tile' for the tile's list in "
                                         "dataset_classes.json (default: the paper's nine classes); parcels "
                                         "of other classes stay unlabelled, as in the reference")


def _run_timematch(args: argparse.Namespace) -> str:
    from ...training.importers.timematch import import_timematch
    from ..progress_bar import progress_bar

    classes = "tile" if args.classes == "tile" else _classes(args)
    with progress_bar("import") as progress:
        return import_timematch(args.root, args.tile, args.out, class_map=args.class_map, classes=classes,
                                max_pixels=args.max_pixels, seed=args.seed, overwrite=args.overwrite,
                                progress=progress)


def _configure_psetae(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", metavar="FOLDER", help="folder holding DATA/<id>.npy and META/labels.json, dates.json")
    _add_output(parser)
    parser.add_argument("--nomenclature", help="labelling of META/labels.json to use (needed when it has several)")
    parser.add_argument("--band-order", default=",".join(("B02", "B03", "B04", "B05", "B06", "B07", "B08", "B8A",
                                                          "B11", "B12")),
                        help="bands of the arrays' channel axis in order (default B02,...,B08,B8A,B11,B12)")
    parser.add_argument("--value-scale", type=bounded("value_scale"), default=10000.0,
                        help="the value a reflectance of 1 is written as (default 10000)")
    parser.add_argument("--level", choices=("L1C", "L2A"), help="processing level of the source (recorded)")
    parser.add_argument("--max-pixels", type=bounded("max_pixels"), default=64,
                        help="pixels kept per parcel, a seeded random subset of larger parcels (default 64)")
    parser.add_argument("--seed", type=bounded("seed"), default=0, help="seed of the pixel subsets (default 0)")
    where = parser.add_argument_group("locations and blocks")
    where.add_argument("--parcels", help="parcel layer whose --join-field holds the ids (locations, blocks)")
    where.add_argument("--parcels-layer", help="layer name inside --parcels")
    where.add_argument("--join-field", help="field of --parcels holding the parcel ids")
    where.add_argument("--point", nargs=2, type=float, metavar=("LON", "LAT"),
                       help="one location (WGS 84) for every parcel, for gridded weather without a layer")
    where.add_argument("--block-field", help="field of --parcels holding the spatial block")
    where.add_argument("--block-size-km", type=bounded("block_size_km"), help="spatial blocks from a grid of this size")
    _add_classes(parser)
    _add_gdd(parser)


def _run_psetae(args: argparse.Namespace) -> str:
    from ...core.settings import PixelSampling
    from ...training.importers.common import ClassesAndBlocks, ParcelLayer
    from ...training.importers.psetae import PsetaeFormat, import_psetae
    from ..progress_bar import progress_bar

    with progress_bar("import") as progress:
        return import_psetae(
            args.folder, args.out, weather=_weather(args),
            source=PsetaeFormat(nomenclature=args.nomenclature, band_order=args.band_order.split(","),
                                value_scale=args.value_scale, level=args.level),
            layer=ParcelLayer(path=args.parcels, layer=args.parcels_layer, join_field=args.join_field,
                              block_field=args.block_field, point=tuple(args.point) if args.point else None),
            grouping=ClassesAndBlocks(class_map=args.class_map, classes=_classes(args),
                                      block_size_m=args.block_size_km * 1000.0 if args.block_size_km else None),
            sampling=PixelSampling(max_pixels=args.max_pixels, seed=args.seed), overwrite=args.overwrite,
            progress=progress)


FORMATS = {
    "table": ("per-parcel band values per date (CSV, Parquet, Excel; long or wide) as S = 1 pixel sets",
              _configure_table, _run_table),
    "timematch": ("a tile of the TimeMatch dataset with its weather extension (the thermal positional "
                  "encoding paper's data)", _configure_timematch, _run_timematch),
    "psetae": ("a PSE-TAE pixel-set folder (DATA/<id>.npy, META/labels.json, META/dates.json)",
               _configure_psetae, _run_psetae),
}


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="format", metavar="FORMAT", required=True)
    for name, (help_text, configure_format, run_format) in FORMATS.items():
        fmt = sub.add_parser(name, help=help_text, description=help_text)
        configure_format(fmt)
        fmt.set_defaults(_import=run_format)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ...core.io.output import check_output
    from ...core.pixel_sets import is_dataset_folder, open_dataset

    # The output is checked before any table is read.
    check_output(args.out, what="dataset folder", kind="folder", overwrite=args.overwrite,
                 inputs=list(getattr(args, "tables", None) or []), replaceable_folder=is_dataset_folder)
    out = args._import(args)
    ps = open_dataset(out)
    print(f"wrote {out}: {len(ps)} parcels x {ps.n_dates} dates x {ps.pixels.shape[3]} pixel slots")
    statuses, counts = np.unique(ps.status, return_counts=True)
    for s, c in zip(statuses, counts):
        print(f"  {s}: {c}")
    labels = np.asarray(ps.labels)
    for i, name in enumerate(ps.classes):
        print(f"  class {name}: {int((labels == i).sum())}")
    unlabelled = int((labels < 0).sum())
    if unlabelled:
        print(f"  unlabelled: {unlabelled}")
    return 0
