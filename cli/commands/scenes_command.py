"""``thermocrop scenes``: find Sentinel-2 L2A items in a STAC catalogue and save them, or show
what a saved item collection holds."""

from __future__ import annotations

import argparse

from ..options import add_search_options, bounded

HELP = "search a STAC catalogue for the Sentinel-2 scenes over a parcel layer, or show saved items"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    search = sub.add_parser("search", help="find the L2A items covering the parcels and save them as a STAC "
                                           "ItemCollection", description="find the L2A items covering the parcels "
                                           "in a season and save them as a STAC ItemCollection (items.json)")
    search.add_argument("--parcels", required=True, help="parcel layer (any OGR format, any CRS)")
    add_search_options(search)
    search.add_argument("--max-items", type=bounded("max_items"), help="stop after this many items")
    search.add_argument("--out", required=True, help="item collection to write (.json)")
    search.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    show = sub.add_parser("show", help="list the dates, tiles and cloud cover of saved items")
    show.add_argument("items", nargs="+", help="item collection(s) (.json)")


def _print_table(summaries) -> None:
    print(f"{'date':<11} {'tile':<6} {'cloud %':>7}  item")
    for s in summaries:
        cloud = "" if s.cloud_cover is None else f"{s.cloud_cover:7.1f}"
        print(f"{str(s.date):<11} {s.tile:<6} {cloud:>7}  {s.id}")
    dates = sorted({s.date for s in summaries})
    tiles = sorted({s.tile for s in summaries if s.tile})
    print(f"{len(summaries)} items on {len(dates)} dates, tiles {', '.join(tiles) or 'unknown'}")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...core.errors import InputError
    from ...core.scenes.stac import load_items, resolve_catalog, save_items, search_items, summarize

    if args.action == "show":
        summaries = [s for path in args.items for s in summarize(load_items(path))]
        _print_table(sorted(summaries, key=lambda s: (s.date, s.id)))
        return 0
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise InputError(f"{out} already exists; choose another output or pass --overwrite.")
    if not args.catalog:
        args.catalog = "earth-search"
    if args.season is None and not (args.start and args.end):
        raise InputError("Give --season YEAR, or --start and --end.")
    items = search_items(args.parcels, season=args.season, start=args.start, end=args.end,
                         catalog=resolve_catalog(args.catalog, args.collection), max_cloud=args.max_cloud,
                         max_items=args.max_items)
    _print_table(summarize(items))
    save_items(items, out, overwrite=args.overwrite)
    print(f"wrote {out}")
    return 0
