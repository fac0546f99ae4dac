"""Temperatures from Open-Meteo and the Copernicus CDS, fetched from loopback servers that
answer in the services' own shapes, cached as NetCDF and read back by the weather reader."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest
from loopback import Fault, LoopbackServer, open_meteo_temperature

from thermocrop.core.errors import WeatherError
from thermocrop.core.thermal.weather import read_daily_temperature
from thermocrop.core.thermal.weather_services import cells_of, fetch_cds, fetch_open_meteo

# Five points in four 0.1-degree cells (the first two share one).
LON = np.array([1.201, 1.207, 1.315, 1.452, 1.109])
LAT = np.array([43.741, 43.749, 43.738, 43.861, 43.744])


def expected(lat, lon, day, k, snapped=True):
    """The value the loopback serves for the centre of the cell holding (lat, lon): asked for
    with four decimals, Open-Meteo answers for its nearest grid point (``snapped``); the CDS
    files hold the cell centres themselves."""
    centre_lat = round((math.floor(lat / 0.1) + 0.5) * 0.1, 4)
    centre_lon = round((math.floor(lon / 0.1) + 0.5) * 0.1, 4)
    if not snapped:
        return open_meteo_temperature(centre_lat, centre_lon, day)[k]
    return open_meteo_temperature(round(centre_lat / 0.1) * 0.1, round(centre_lon / 0.1) * 0.1, day)[k]


def test_open_meteo_one_request_per_cell_group_cached_and_read_back(tmp_path):
    with LoopbackServer(open_meteo_gaps=("2024-03-02",)) as server:
        server.faults.append(Fault("/v1/archive", "503", times=1))
        path = fetch_open_meteo(LON, LAT, "2024-01-01", "2024-04-30", cache_dir=tmp_path,
                                url=server.url + "/v1/archive", cells_per_request=3)
        cells = cells_of(LON, LAT)
        assert len(cells) == 4
        asked = server.open_meteo_requests
        assert len(asked) == 2  # 4 cells, 3 a request (the 503 was retried, not counted here)
        assert server.counters.faults == 1
        assert sum(len(r["latitude"].split(",")) for r in asked) == 4

        weather = read_daily_temperature(path, LON, LAT, "EPSG:4326", "2024-01-01", "2024-04-30")
        day = dt.date(2024, 2, 14)
        i = (day - dt.date(2024, 1, 1)).days
        for p in range(len(LON)):
            assert weather.tmin[p, i] == pytest.approx(expected(LAT[p], LON[p], day, 0), abs=1e-4)
            assert weather.tmax[p, i] == pytest.approx(expected(LAT[p], LON[p], day, 1), abs=1e-4)
        gap = (dt.date(2024, 3, 2) - dt.date(2024, 1, 1)).days
        assert np.isnan(weather.tmin[:, gap]).all()  # a null day stays a gap (filled later by GDD)

        # The answer had a null day: it served this run but is not reused, the next run asks again.
        fetch_open_meteo(LON[:2], LAT[:2], "2024-02-01", "2024-03-31", cache_dir=tmp_path,
                         url=server.url + "/v1/archive")
        assert len(server.open_meteo_requests) == 3

        # Once the service answers every day, that answer is cached and reused without a request.
        server.open_meteo_gaps.clear()
        complete = fetch_open_meteo(LON, LAT, "2024-01-01", "2024-04-30", cache_dir=tmp_path,
                                    url=server.url + "/v1/archive", cells_per_request=3)
        assert len(server.open_meteo_requests) == 5
        again = fetch_open_meteo(LON[:2], LAT[:2], "2024-02-01", "2024-03-31", cache_dir=tmp_path,
                                 url=server.url + "/v1/archive")
        assert again == complete and len(server.open_meteo_requests) == 5
        refreshed = fetch_open_meteo(LON[:2], LAT[:2], "2024-02-01", "2024-03-31", cache_dir=tmp_path,
                                     url=server.url + "/v1/archive", refresh=True)
        assert len(server.open_meteo_requests) == 6 and refreshed != complete


def test_open_meteo_refusals_are_named(tmp_path):
    with LoopbackServer() as server:
        with pytest.raises(WeatherError, match="before it starts"):
            fetch_open_meteo(LON, LAT, "2024-04-30", "2024-01-01", cache_dir=tmp_path, url=server.url + "/v1/archive")
        with pytest.raises(WeatherError, match="HTTP 404"):
            fetch_open_meteo(LON, LAT, "2024-01-01", "2024-01-31", cache_dir=tmp_path, url=server.url + "/v2/nothing")
        server.faults.append(Fault("/v1/archive", "503", times=None))
        with pytest.raises(WeatherError, match="503|cannot be reached"):
            fetch_open_meteo(LON, LAT, "2024-01-01", "2024-01-31", cache_dir=tmp_path,
                             url=server.url + "/v1/archive", timeout=5)
    assert not list((tmp_path / "weather").glob("*.nc"))  # nothing half-written


@pytest.mark.parametrize("dataset", ["e-obs", "era5-land"])
def test_cds_datasets_through_cdsapi_with_the_key_from_the_environment(dataset, tmp_path, monkeypatch):
    import cdsapi

    with LoopbackServer(cds_key="abcd-1234") as server:
        monkeypatch.setenv("CDSAPI_URL", server.url + "/api")
        monkeypatch.setenv("CDSAPI_KEY", "wrong-key")
        monkeypatch.setenv("CDSAPI_RC", str(tmp_path / "no-rc-file"))
        with pytest.raises(WeatherError, match="Climate Data Store"):
            fetch_cds(dataset, LON, LAT, "2017-12-20", "2018-01-10", cache_dir=tmp_path,
                      client=cdsapi.Client(quiet=True, progress=False, retry_max=1))
        monkeypatch.setenv("CDSAPI_KEY", "abcd-1234")
        path = fetch_cds(dataset, LON, LAT, "2017-12-20", "2018-01-10", cache_dir=tmp_path)
        jobs = list(server.cds_jobs.values())
        assert len(jobs) == (1 if dataset == "e-obs" else 4)  # ERA5-Land: 2 years x min/max
        if dataset == "era5-land":
            north, west, south, east = jobs[0]["request"]["area"]
            assert south < LAT.min() < LAT.max() < north and west < LON.min() < LON.max() < east
        weather = read_daily_temperature(path, LON, LAT, "EPSG:4326", "2017-12-20", "2018-01-10")
        for day in (dt.date(2017, 12, 20), dt.date(2018, 1, 3)):
            i = (day - dt.date(2017, 12, 20)).days
            for p in range(len(LON)):
                # E-OBS stores hundredths of a degree; ERA5-Land Kelvin, converted by the reader.
                assert weather.tmin[p, i] == pytest.approx(expected(LAT[p], LON[p], day, 0, False), abs=0.011)
                assert weather.tmax[p, i] == pytest.approx(expected(LAT[p], LON[p], day, 1, False), abs=0.011)
        assert fetch_cds(dataset, LON, LAT, "2017-12-25", "2018-01-05", cache_dir=tmp_path) == path
        assert len(server.cds_jobs) == len(jobs)
