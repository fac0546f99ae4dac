"""``app.resolve_scenes`` on saved STAC items and ``app.resolve_weather`` on a weather service,
both against loopback servers speaking the real protocols."""

from __future__ import annotations

import datetime as dt
import json

import geopandas as gpd
import numpy as np
import pystac
import pytest
from loopback import LoopbackServer, open_meteo_temperature

from thermocrop.app import ScenesSpec, WeatherSpec, resolve_scenes, resolve_weather, scene_dates
from thermocrop.core.scenes.stac import save_items
from thermocrop.core.thermal.gdd import SeasonStart
from thermocrop.core.thermal.weather import read_daily_temperature


def test_saved_items_become_scenes_of_their_dates(published, tmp_path):
    _, items = published("earth-search")
    path = save_items(pystac.ItemCollection([pystac.Item.from_dict(i) for i in items]), tmp_path / "items.json")
    # Independently: the dates the saved file's items carry.
    expected = sorted({f["properties"]["datetime"][:10] for f in json.loads(path.read_text())["features"]})
    spec = ScenesSpec(items=(str(path),), cache=str(tmp_path / "cache"))
    assert [str(d) for d in scene_dates(spec)] == expected
    scenes = resolve_scenes(spec)
    assert [str(s.date) for s in scenes] == expected
    assert scenes[0].products[0].grid.crs.to_epsg() == 32631


def test_a_weather_service_becomes_a_cached_file(tiny_region, tmp_path, monkeypatch):
    parcels = gpd.read_file(tiny_region / "parcels.gpkg")
    dates = [np.datetime64("2017-03-01"), np.datetime64("2017-04-15")]
    with LoopbackServer() as server:
        monkeypatch.setenv("THERMOCROP_OPEN_METEO_URL", server.url + "/v1/archive")
        spec = WeatherSpec(service="open-meteo", cache=str(tmp_path / "cache"))
        path = resolve_weather(spec, parcels.geometry, dates, SeasonStart())
        assert str(tmp_path / "cache") in path and len(server.open_meteo_requests) >= 1
        asked = len(server.open_meteo_requests)
        assert resolve_weather(spec, parcels.geometry, dates, SeasonStart()) == path  # from the cache
        assert len(server.open_meteo_requests) == asked
    # The file holds the service's temperatures from 1 January to the last date.
    point = parcels.geometry.iloc[:1].representative_point().to_crs("EPSG:4326")
    lon, lat = float(point.x.iloc[0]), float(point.y.iloc[0])
    weather = read_daily_temperature(path, [lon], [lat], "EPSG:4326", "2017-01-01", "2017-04-15")
    served_lat = round(round((np.floor(lat / 0.1) + 0.5) * 0.1, 4) / 0.1) * 0.1
    served_lon = round(round((np.floor(lon / 0.1) + 0.5) * 0.1, 4) / 0.1) * 0.1
    day = dt.date(2017, 2, 14)
    i = (day - dt.date(2017, 1, 1)).days
    assert weather.tmin[0, i] == pytest.approx(open_meteo_temperature(served_lat, served_lon, day)[0], abs=1e-4)
