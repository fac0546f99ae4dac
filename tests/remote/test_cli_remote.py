"""The command line on a loopback catalogue and weather service: scenes search / show,
classify --stac with --weather open-meteo, gdd from a catalogue search."""

from __future__ import annotations

import json

import geopandas as gpd
import numpy as np

from thermocrop.cli.main import EXIT_INPUT, main
from thermocrop.core.model.bundle import default_bundle_path

ES = dict(dates=6, cloud_cover=(5, 70, 20, 90, 10, 40))


def test_search_show_then_classify_from_items_with_open_meteo(published, tiny_region, tmp_path, monkeypatch,
                                                              capsys, caplog):
    from osgeo import gdal

    server, items = published("earth-search", **ES)
    monkeypatch.setenv("THERMOCROP_OPEN_METEO_URL", server.url + "/v1/archive")
    monkeypatch.setenv("THERMOCROP_CACHE", str(tmp_path / "cache"))
    parcels = tiny_region / "parcels.gpkg"
    out = tmp_path / "items.json"
    assert main(["scenes", "search", "--parcels", str(parcels), "--season", "2017", "--catalog",
                 server.url + "/stac", "--max-cloud", "60", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "4 items on 4 dates, tiles 31TCJ" in printed
    saved = json.loads(out.read_text())
    assert len(saved["features"]) == 4 and saved["thermocrop:catalog"]["url"] == server.url + "/stac"
    assert main(["scenes", "show", str(out)]) == 0
    assert " 20.0  S2A_31TCJ_" in capsys.readouterr().out

    gdal.VSICurlClearCache()
    classified = tmp_path / "classified.gpkg"
    with caplog.at_level("INFO", logger="thermocrop"):
        assert main(["classify", "--parcels", str(parcels), "--stac", str(out), "--weather", "open-meteo",
                     "--out", str(classified)]) == 0
    # The catalogue's items are L2A: without --model the shipped L2A model classifies them, unwarned.
    printed = capsys.readouterr().out
    assert f"L2A scenes: using the shipped L2A model {default_bundle_path('L2A').name}" in printed.splitlines()
    assert "reflectance differ" not in caplog.text
    assert "4 dates from 4 products" in printed
    weather_file = next((tmp_path / "cache" / "weather").glob("open-meteo_*.nc"))
    assert f"temperatures from open-meteo: {weather_file}" in printed
    result = gpd.read_file(classified)
    assert len(result) == 100 and (result["crop_status"] == "ok").sum() > 90

    # Again: blocks, asset descriptions and temperatures all come from the cache.
    gdal.VSICurlClearCache()
    server.reset_counters()
    requests_before = len(server.open_meteo_requests)
    again = tmp_path / "again.gpkg"
    assert main(["classify", "--parcels", str(parcels), "--stac", str(out), "--weather", "open-meteo",
                 "--out", str(again)]) == 0
    assert server.counters.total_requests("/files/") == 0 and len(server.open_meteo_requests) == requests_before
    np.testing.assert_array_equal(gpd.read_file(again)["crop_pred"], result["crop_pred"])


def test_gdd_at_the_dates_of_a_catalogue_search_and_a_clear_error_without_scenes(published, tiny_region, tmp_path,
                                                                                monkeypatch, capsys):
    server, items = published("earth-search", **ES)
    monkeypatch.setenv("THERMOCROP_OPEN_METEO_URL", server.url + "/v1/archive")
    parcels = tiny_region / "parcels.gpkg"
    out = tmp_path / "gdd.csv"
    assert main(["gdd", "--parcels", str(parcels), "--weather", "open-meteo", "--catalog", server.url + "/stac",
                 "--season", "2017", "--max-cloud", "100", "--cache", str(tmp_path / "c"), "--out", str(out)]) == 0
    header = out.read_text().splitlines()[0].split(",")
    assert header[1:] == [f"gdd_{i['properties']['datetime'][:10].replace('-', '')}" for i in items]
    assert main(["gdd", "--parcels", str(parcels), "--weather", "open-meteo", "--out", str(tmp_path / "x.csv")]) == EXIT_INPUT
    assert "needs the dates" in capsys.readouterr().err
    assert main(["classify", "--parcels", str(parcels), "--weather", "w.nc", "--out", str(tmp_path / "y.gpkg")]) == EXIT_INPUT
    assert "exactly one of --scenes" in capsys.readouterr().err
