"""Command-line options shared by several commands."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Callable

from ..app import ClusterSpec, RunProgress, ScenesSpec, WeatherSpec, weather_spec
from ..app.requests import DEFAULT_MAX_DISTANCE_KM, as_tuple
from ..core.errors import InputError
from ..core.limits import LIMITS
from ..core.model.architecture import ARCHITECTURE_SETTINGS
from .progress_bar import partition_bar, progress_bar


def bounded(name: str) -> Callable[[str], float]:
    """An argparse ``type`` reading a number within ``core.limits.LIMITS[name]``.

    A value out of range (or NaN, or text) is a usage error when the command line is parsed,
    before anything is read or written.
    """
    limit = LIMITS[name]

    def parse(text: str):
        try:
            value = int(text) if limit.integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {limit.describe()}, not {text!r}") from None
        problem = limit.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = name  # argparse names the type in some messages
    return parse


def architecture_setting(text: str) -> tuple[str, object]:
    """An argparse ``type`` reading one ``NAME=WIDTH`` (``mlp2=64``) or ``NAME=W1,W2`` (``mlp1=16,32``;
    ``mlp4=`` for no hidden decoder layer) of ``core.model.architecture.ARCHITECTURE_SETTINGS``, each width
    within ``LIMITS["layer_width"]``; gives ``(name, value)``, lists as tuples."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or name not in ARCHITECTURE_SETTINGS:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=WIDTH with NAME one of {', '.join(ARCHITECTURE_SETTINGS)}")
    parse = bounded("layer_width")
    items = [v for v in (v.strip() for v in value.split(",")) if v]
    if name in ("mlp1", "mlp4"):
        if name == "mlp1" and not items:
            raise argparse.ArgumentTypeError("mlp1 needs at least one width, e.g. mlp1=32 or mlp1=16,32")
        return name, tuple(parse(v) for v in items)
    if len(items) != 1:
        raise argparse.ArgumentTypeError(f"{name} takes one width, not {value!r}")
    return name, parse(items[0])


def season_start(text: str):
    """An argparse ``type`` for ``--season-start`` (``MM-DD`` or ``MM-DD/-1``)."""
    from ..core.thermal.gdd import SeasonStart

    try:
        return SeasonStart.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def date(text: str):
    """An argparse ``type`` for a day written ``YYYY-MM-DD``."""
    import numpy as np

    try:
        day = np.datetime64(text.strip(), "D")
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date written YYYY-MM-DD") from None
    if str(day) != text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not a date written YYYY-MM-DD")
    return day


def add_weather_options(parser: argparse.ArgumentParser) -> None:
    """Options of the weather reader beyond the file itself."""
    group = parser.add_argument_group("weather file")
    group.add_argument("--tmin-var", help="NetCDF variable / CSV column of the daily minimum (default: tn, "
                                          "tasmin, ... or CF standard_name with 'time: minimum')")
    group.add_argument("--tmax-var", help="NetCDF variable / CSV column of the daily maximum")
    group.add_argument("--date-var", help="CSV column of a station's dates (default: date; YYYY-MM-DD or "
                                          "ISO date-times such as 2018-01-01T00:00:00)")
    group.add_argument("--tmax-file", help="second NetCDF file holding the daily maximum (an E-OBS tn_ file "
                                           "finds its tx_ companion by itself)")
    group.add_argument("--max-distance-km", type=bounded("max_distance_km"), default=DEFAULT_MAX_DISTANCE_KM,
                       help="how far a parcel may be from the grid cell it takes temperatures from "
                            f"(default {DEFAULT_MAX_DISTANCE_KM:g})")


def add_season_option(parser: argparse.ArgumentParser) -> None:
    """``--season``: which season to use when the scenes hold several."""
    parser.add_argument("--season", type=bounded("season"), metavar="YEAR",
                        help="use only the scenes of this season (named by its harvest year) when the "
                             "scenes hold several; without it scenes of several seasons are refused (with "
                             "--catalog, also the year searched)")


def weather_options(args: argparse.Namespace) -> dict:
    """Keyword arguments of ``core.thermal.weather.read_daily_temperature`` from the options above."""
    return {"tmin_var": args.tmin_var, "tmax_var": args.tmax_var, "tmax_path": args.tmax_file,
            "max_distance_m": args.max_distance_km * 1000.0, "date_var": args.date_var}


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """Options of partitioned runs on a Dask cluster (``core.runs.cluster``)."""
    group = parser.add_argument_group("partitioned runs (Dask)")
    where = group.add_mutually_exclusive_group()
    where.add_argument("--workers", type=bounded("workers"), default=1,
                       help="worker processes of a Dask LocalCluster on this machine (default 1: one process, "
                            "no Dask)")
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                       help="run the partitions on this Dask scheduler's cluster (dask-jobqueue, Kubernetes, ...); "
                            "the run folder and the input files must be on a file system every worker sees")
    group.add_argument("--run-folder",
                       help="where the partitions are written (default: the output's name + .parts, beside it); "
                            "removed once the output is written")
    group.add_argument("--resume", action="store_true",
                       help="continue an interrupted run from the partitions its run folder holds")


def print_run_summary(summary, wall_s: float) -> None:
    """What a partitioned run computed and what it cost (the cost model's figures for this run)."""
    cost = summary.cost()
    line = (f"{summary.partitions} partitions ({summary.computed} computed now, {summary.resumed} from the interrupted "
            f"run) in {wall_s:.1f} s; partitions took {cost['cpu_s']:.1f} CPU s in all")
    if cost["windows"]:
        line += (f": {cost['windows']:.0f} scene windows ({cost['window_pixels'] / 1e6:.1f} Mpx per band) decoded in "
                 f"{cost['read_cpu_s']:.1f} CPU s, {cost['parcel_dates']:.0f} parcel-dates")
    print(line)
# --------------------------------------------------------------------------------------------
# Scenes from STAC catalogues and temperatures from weather services


def add_stac_options(parser: argparse.ArgumentParser) -> None:
    """Options that take scenes from a STAC catalogue instead of files (``--scenes``). The
    command's ``--season`` (``add_season_option``) is also the year searched."""
    group = parser.add_argument_group("scenes from a STAC catalogue (instead of --scenes)")
    group.add_argument("--stac", nargs="+", metavar="ITEMS_JSON",
                       help="STAC item collection(s) saved by 'thermocrop scenes search'")
    add_search_options(group, season=False)
    group.add_argument("--cache", help="folder for fetched blocks and weather files (default: $THERMOCROP_CACHE "
                                       "or ~/.cache/thermocrop)")
    group.add_argument("--max-requests", type=bounded("max_requests"), default=8,
                       help="assets read at the same time (default 8)")
    group.add_argument("--refresh-weather", action="store_true",
                       help="with --weather open-meteo / cds:...: ask the service again instead of reusing the "
                            "cached temperatures (THERMOCROP_WEATHER_CACHE=off does it for every run)")


def add_search_options(group, season: bool = True) -> None:
    """The search's options; ``season=False`` where the command already has ``--season``."""
    group.add_argument("--catalog", help="search this catalogue: earth-search, planetary-computer, cdse or the URL "
                                         "of a STAC API")
    group.add_argument("--collection", help="collection id (default: the catalogue's Sentinel-2 L2A collection)")
    if season:
        group.add_argument("--season", type=bounded("season"), help="year to search (1 January to 31 December)")
    group.add_argument("--start", help="first day to search, YYYY-MM-DD (narrows or replaces --season)")
    group.add_argument("--end", help="last day to search, YYYY-MM-DD")
    group.add_argument("--max-cloud", type=bounded("max_cloud"), default=60.0, help="largest eo:cloud_cover kept, percent (default 60)")


def _stats_printer():
    """A callback printing the fetch progress (bytes and dates) every few seconds."""
    last = [0.0]

    def show(stats) -> None:
        now = time.monotonic()
        if now - last[0] >= 5.0:
            last[0] = now
            from tqdm import tqdm

            tqdm.write(f"  {stats.describe()}", file=sys.stderr)

    return show


def add_missing_scl_option(parser: argparse.ArgumentParser) -> None:
    """``--missing-scl``: what to do with L2A products that have no SCL raster to mask clouds with."""
    parser.add_argument("--missing-scl", choices=("refuse", "warn", "bands"), default="refuse",
                        help="L2A products without an SCL raster: refuse them (default), use them unmasked with "
                             "a warning (warn), or mask thick clouds and snow by a brightness test (bands)")


def scenes_spec(args: argparse.Namespace, required: bool = True) -> ScenesSpec:
    """The scenes of ``--scenes``, ``--stac`` or the search options (exactly one of them where
    ``required``), with the scene and cache options."""
    scenes, stac, catalog = (getattr(args, name, None) for name in ("scenes", "stac", "catalog"))
    given = [name for name, value in (("--scenes", scenes), ("--stac", stac), ("--catalog", catalog)) if value]
    if required and len(given) != 1:
        raise InputError("Give exactly one of --scenes (files), --stac (saved STAC items) or --catalog (a STAC "
                         f"search){'; got ' + ' and '.join(given) if given else ''}.")
    band_order = getattr(args, "band_order", None)
    return ScenesSpec(files=as_tuple(scenes), items=as_tuple(stac), catalog=catalog,
                      season=getattr(args, "season", None), collection=getattr(args, "collection", None), start=getattr(args, "start", None),
                      end=getattr(args, "end", None), max_cloud=getattr(args, "max_cloud", 60.0),
                      band_order=tuple(band_order.split(",")) if band_order else None,
                      level=getattr(args, "level", None), offset=getattr(args, "offset", None),
                      cache=getattr(args, "cache", None), max_requests=getattr(args, "max_requests", 8))


def weather_of(args: argparse.Namespace) -> WeatherSpec:
    """``--weather`` (a file or a service) with the cache and, where the command has them, the
    weather file's options."""
    return weather_spec(args.weather, cache=getattr(args, "cache", None),
                        refresh=bool(getattr(args, "refresh_weather", False)),
                        tmin_var=getattr(args, "tmin_var", None), tmax_var=getattr(args, "tmax_var", None),
                        date_var=getattr(args, "date_var", None), tmax_path=getattr(args, "tmax_file", None),
                        max_distance_km=getattr(args, "max_distance_km", DEFAULT_MAX_DISTANCE_KM))


def cluster_spec(args: argparse.Namespace) -> ClusterSpec:
    """Where the run goes: ``--workers``, ``--scheduler``, ``--run-folder``, ``--resume``."""
    return ClusterSpec(workers=args.workers, scheduler=args.scheduler, run_folder=args.run_folder,
                       resume=args.resume)


class CliProgress(RunProgress):
    """A run on the terminal: lines printed, a bar for one process, a partition bar for a cluster."""

    def __init__(self) -> None:
        super().__init__(report=print)
        self.on_stats = _stats_printer()

    def bar(self, what: str):
        return progress_bar(what)

    def partitions(self, what: str):
        return partition_bar(what)

    def inputs_checked(self, checked) -> None:
        scenes = checked.scenes
        print(f"{len(scenes)} dates from {sum(len(s.products) for s in scenes)} products "
              f"(inputs checked in {checked.seconds:.1f} s)")
        if checked.model_choice:
            print(checked.model_choice)

    def weather_fetched(self, service: str, path: str) -> None:
        print(f"temperatures from {service}: {path}")

    def partitions_done(self, summary, wall_s: float) -> None:
        print_run_summary(summary, wall_s)
