"""Writers for the generated region: GeoTIFF scenes, E-OBS NetCDF, GeoPackage, truth JSON.

Every writer is deterministic: the same inputs give the same bytes (no timestamps, fixed
metadata), so a seed fully identifies a region.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..core.io.output import staged_file, write_text
from ..core.scenes.bands import S2_BANDS
from .climate import WeatherGrid

# Fixed modification date written into the GeoPackage metadata tables.
_GPKG_DATE = "2017-12-31T00:00:00.000Z"

SCL_SUFFIX = "_SCL"
"""L2A scene classification sidecar: ``<product name>_SCL.tif`` next to the 10-band file."""


def product_name(
    satellite: str, level: str, date: np.datetime64, sensing_time: str, baseline: str,
    orbit: int, tile: str,
) -> str:
    """A Sentinel-2 product name, e.g. ``S2A_MSIL2A_20170615T101031_N0205_R022_T33UVP_20170615T101031``."""
    day = str(np.datetime64(date, "D")).replace("-", "")
    stamp = f"{day}T{sensing_time}"
    return f"{satellite}_MSI{level}_{stamp}_{baseline}_R{orbit:03d}_T{tile}_{stamp}"


def scene_profile(width: int, height: int, crs: str, transform, count: int) -> dict:
    """GeoTIFF creation options of the scenes: uint16, nodata 0, 256 px tiles, DEFLATE."""
    return {
        "driver": "GTiff", "width": width, "height": height, "count": count, "dtype": "uint16",
        "crs": crs, "transform": transform, "nodata": 0, "tiled": True, "blockxsize": 256,
        "blockysize": 256, "compress": "deflate", "predictor": 2, "zlevel": 6, "interleave": "pixel",
    }


def write_weather(path: Path, grid: WeatherGrid, source: str) -> None:
    """Write ``grid`` as an E-OBS style NetCDF-4 file with variables ``tn`` and ``tx``.

    Layout: dims ``time, latitude, longitude``; time as days since 1950-01-01; values packed
    as int16 with scale_factor 0.01 and _FillValue -9999; sea cells missing.
    """
    import netCDF4

    days = (grid.dates - np.datetime64("1950-01-01")).astype(np.int64).astype(np.float64)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.setncattr("Conventions", "CF-1.4")
        nc.setncattr("title", "Synthetic daily temperature on the E-OBS 0.1 degree grid")
        nc.setncattr("source", source)
        nc.createDimension("time", len(days))
        nc.createDimension("latitude", len(grid.latitude))
        nc.createDimension("longitude", len(grid.longitude))
        t = nc.createVariable("time", "f8", ("time",))
        t.standard_name = "time"
        t.long_name = "Time in days"
        t.units = "days since 1950-01-01 00:00"
        t.calendar = "standard"
        t[:] = days
        lat = nc.createVariable("latitude", "f8", ("latitude",))
        lat.units = "degrees_north"
        lat.long_name = "Latitude values"
        lat.standard_name = "latitude"
        lat[:] = grid.latitude
        lon = nc.createVariable("longitude", "f8", ("longitude",))
        lon.units = "degrees_east"
        lon.long_name = "Longitude values"
        lon.standard_name = "longitude"
        lon[:] = grid.longitude
        for name, long_name, values in (("tn", "minimum temperature", grid.tmin),
                                        ("tx", "maximum temperature", grid.tmax)):
            v = nc.createVariable(name, "i2", ("time", "latitude", "longitude"), fill_value=-9999,
                                  zlib=True, complevel=4, chunksizes=(min(len(days), 365), len(grid.latitude),
                                                                      len(grid.longitude)))
            v.units = "Celsius"
            v.long_name = long_name
            v.standard_name = "air_temperature"
            v.scale_factor = np.float32(0.01)
            v.add_offset = np.float32(0.0)
            v.set_auto_maskandscale(False)
            packed = np.where(np.isnan(values), -9999, np.round(np.nan_to_num(values) * 100.0))
            v[:] = packed.astype(np.int16)


def write_parcels(path: Path, gdf) -> None:
    """Write the parcel GeoDataFrame to a GeoPackage layer ``parcels`` with a fixed date."""
    import fiona

    with staged_file(path, what="parcel layer") as tmp, fiona.Env(OGR_CURRENT_DATE=_GPKG_DATE):
        gdf.to_file(tmp, layer="parcels", driver="GPKG")


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as sorted, indented JSON."""
    write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n", what="JSON file")


def set_band_descriptions(ds, level: str, offset: int, date: np.datetime64, baseline: str) -> None:
    """Band descriptions B02..B12 and the product metadata readers look for."""
    for i, b in enumerate(S2_BANDS, start=1):
        ds.set_band_description(i, b)
    key = "BOA_ADD_OFFSET" if level == "L2A" else "RADIO_ADD_OFFSET"
    ds.update_tags(
        PROCESSING_LEVEL="Level-2A" if level == "L2A" else "Level-1C",
        PROCESSING_BASELINE=f"{baseline[1:3]}.{baseline[3:5]}",
        ACQUISITION_DATE=str(np.datetime64(date, "D")),
        QUANTIFICATION_VALUE="10000",
        **{key: str(offset)},
    )
