"""Command-line options shared by several commands."""

from __future__ import annotations

import argparse


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
    group.add_argument("--max-distance-km", type=float, default=25.0,
                       help="how far a parcel may be from the grid cell it takes temperatures from (default 25)")


def weather_options(args: argparse.Namespace) -> dict:
    """Keyword arguments of ``core.weather.read_daily_temperature`` from the options above."""
    return {"tmin_var": args.tmin_var, "tmax_var": args.tmax_var, "tmax_path": args.tmax_file,
            "max_distance_m": args.max_distance_km * 1000.0, "date_var": args.date_var}
