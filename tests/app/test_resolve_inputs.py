"""Scenes and dates of a request's ``ScenesSpec`` from local files, and the weather of a file."""

from __future__ import annotations

import re

import numpy as np
import pytest

from thermocrop.app import ScenesSpec, WeatherSpec, resolve_scenes, resolve_weather, scene_dates, weather_spec
from thermocrop.core.errors import InputError

DATE = re.compile(r"_(\d{8})T\d{6}_N")


def _dates_in_names(folder) -> list[str]:
    """The acquisition dates written in the products' file names (YYYYMMDD after MSIL2A_)."""
    days = {DATE.search(p.name).group(1) for p in folder.glob("S2*_MSIL2A_*.tif")}
    return sorted(f"{d[:4]}-{d[4:6]}-{d[6:]}" for d in days)


def test_scene_files_give_one_scene_per_date(tiny_region):
    scenes = resolve_scenes(ScenesSpec(files=(str(tiny_region / "scenes"),)))
    assert [str(s.date) for s in scenes] == _dates_in_names(tiny_region / "scenes")
    assert all(len(s.products) == 1 for s in scenes)
    # Scenes a preflight listed pass as they are.
    assert resolve_scenes(ScenesSpec(found=tuple(scenes))) == scenes
    dates = scene_dates(ScenesSpec(files=(str(tiny_region / "scenes"),)))
    assert dates.dtype == np.dtype("datetime64[D]") and [str(d) for d in dates] == _dates_in_names(
        tiny_region / "scenes")


def test_one_source_of_scenes_is_required(tiny_region, tmp_path):
    with pytest.raises(InputError, match="exactly one source of scenes"):
        resolve_scenes(ScenesSpec())
    with pytest.raises(InputError, match="files and items"):
        resolve_scenes(ScenesSpec(files=(str(tiny_region / "scenes"),), items=(str(tmp_path / "items.json"),)))
    with pytest.raises(InputError, match="needs the parcels"):
        resolve_scenes(ScenesSpec(catalog="earth-search", season=2017))


def test_a_weather_file_is_itself_and_service_names_are_told_apart(tiny_region):
    path = str(tiny_region / "weather.nc")
    assert resolve_weather(WeatherSpec(path=path), None, [], None) == path
    assert weather_spec(path) == WeatherSpec(path=path)
    assert weather_spec("open-meteo", cache="c") == WeatherSpec(service="open-meteo", cache="c")
    assert weather_spec("cds:era5-land").service == "cds:era5-land"
    options = WeatherSpec(path=path, tmin_var="tn", max_distance_km=7.5).reader_options()
    assert options == {"tmin_var": "tn", "tmax_var": None, "tmax_path": None, "max_distance_m": 7500.0,
                       "date_var": None}
