"""Hostile and broken servers and files: an item collection that tries to send credentials to
its own host, hrefs that lead out of their folder, a catalogue whose pages never end, servers
that ask to wait an hour, stall or answer web pages, weather answers that must not be cached,
malformed item collections and a cache that cannot be written."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pystac
import pytest
from loopback import SAS_TOKEN, Fault, LoopbackServer, StacCatalog

from thermocrop.cli.main import EXIT_INPUT, EXIT_INTERRUPTED, main
from thermocrop.core.errors import InputError, SceneError, WeatherError
from thermocrop.core.io.http_session import NetworkDeadlineError
from thermocrop.core.scenes.remote import BlockCacheError
from thermocrop.core.scenes.stac import (
    CATALOGS,
    Catalog,
    load_item_files,
    load_items,
    reader_for,
    scenes_from_files,
    scenes_from_items,
    search_items,
)
from thermocrop.core.settings import ExtractionSettings, PixelSampling
from thermocrop.core.thermal.weather_services import fetch_cds, fetch_open_meteo

ES = dict(dates=6, cloud_cover=(5, 70, 20, 90, 10, 40))
PC_KEY = "pc-subscription-key-0123456789"
LON = np.array([1.201, 1.315])
LAT = np.array([43.741, 43.738])


def _write_items(path: Path, items: list, catalog: dict | None = None) -> Path:
    data = {"type": "FeatureCollection", "features": items}
    if catalog is not None:
        data["thermocrop:catalog"] = catalog
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _forget_gdal_cache():
    from osgeo import gdal

    gdal.VSICurlClearCache()


# --------------------------------------------------------------------------------------------
# 1. Credentials go only where they were configured


def test_an_item_collection_cannot_send_the_subscription_key_to_its_own_token_url(published, tiny_region, tmp_path,
                                                                                  monkeypatch, capsys, caplog):
    server, items = published("planetary-computer", dates=3)
    monkeypatch.setenv("PC_SDK_SUBSCRIPTION_KEY", PC_KEY)
    monkeypatch.setenv("THERMOCROP_CACHE", str(tmp_path / "cache"))
    with LoopbackServer() as hostile:
        claims = {"name": "planetary-computer", "url": server.url + "/stac", "signing": "planetary-computer",
                  "token_url": hostile.url + "/api/sas/v1/token", "signed_hosts": [server.host, hostile.host]}
        path = _write_items(tmp_path / "shared" / "items.json", items, claims)
        _forget_gdal_cache()
        with caplog.at_level(logging.WARNING):
            code = main(["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--stac", str(path),
                         "--weather", str(tiny_region / "weather.nc"), "--out", str(tmp_path / "out.gpkg")])
        err = capsys.readouterr().err
        # Planetary Computer signs its blob storage only: these hrefs get no token, the server
        # refuses them, and the run says the downloads failed. The file's host heard nothing.
        assert code == EXIT_INPUT and "every download failed" in err and server.host in err
        assert "token_url" in caplog.text and "ignored" in caplog.text
        assert hostile.requests_seen == []
        assert not server.saw(PC_KEY) and not server.saw("sig=")
        assert not (tmp_path / "out.gpkg").exists()

        # A catalogue the user configures (here through the Python API) gets the key at its own
        # token service, and its hrefs the token; the file's host still hears nothing.
        configured = Catalog("mirror", server.url + "/stac", signing="planetary-computer",
                             token_url=server.url + "/api/sas/v1/token", signed_hosts=(server.host,))
        collection = load_items(path)
        _forget_gdal_cache()
        scenes = scenes_from_items(collection, reader=reader_for(collection, cache_dir=tmp_path / "c2",
                                                                 catalog=configured))
        assert len(scenes) == 3 and hostile.requests_seen == []
        token_requests = [h for m, p, h in server.requests_seen if p.startswith("/api/sas/v1/token/")]
        assert len(token_requests) == 1 and token_requests[0].get("Ocp-Apim-Subscription-Key") == PC_KEY


def test_an_item_collection_cannot_send_s3_signatures_to_its_own_endpoint(published, tmp_path, monkeypatch, caplog):
    from osgeo import gdal

    server, items = published("cdse", dates=2)
    monkeypatch.setenv("AWS_S3_ENDPOINT", server.host)  # what the user configured
    monkeypatch.setenv("AWS_HTTPS", "NO")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    with LoopbackServer() as hostile:
        path = _write_items(tmp_path / "items.json", items, {"name": "cdse", "url": "https://x/stac",
                                                             "s3_endpoint": hostile.host})
        collection, folders = load_item_files([path])
        _forget_gdal_cache()
        try:
            with caplog.at_level(logging.WARNING):
                reader = reader_for(collection, cache_dir=tmp_path / "c",
                                    credentials={"AWS_ACCESS_KEY_ID": "TESTKEY", "AWS_SECRET_ACCESS_KEY": "s3-secret"})
                scenes = scenes_from_items(collection, reader=reader, folders=folders)
        finally:
            gdal.ClearPathSpecificOptions("/vsis3/eodata")
        assert len(scenes) == 2 and "s3_endpoint" in caplog.text and "ignored" in caplog.text
        assert hostile.requests_seen == []
        assert server.saw("Credential=TESTKEY/") and not server.saw("s3-secret")

    # A collection naming no known catalogue: its endpoint is ignored too (no request made here).
    monkeypatch.delenv("AWS_S3_ENDPOINT")
    monkeypatch.setenv("AWS_NO_SIGN_REQUEST", "YES")
    other = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items],
                                  extra_fields={"thermocrop:catalog": {"name": "url", "url": "https://x",
                                                                       "s3_endpoint": "evil.example:9000"}})
    options = reader_for(other, cache_dir=tmp_path / "d").gdal_options()
    assert options["AWS_S3_ENDPOINT"] == CATALOGS["cdse"].s3_endpoint


def test_tokens_go_to_the_parsed_host_only():
    from thermocrop.core.scenes.remote import PlanetaryComputerSigner, host_matches

    hosts = ("blob.core.windows.net",)
    assert host_matches("https://sentinel2l2a01.blob.core.windows.net/a/b.tif", hosts)
    assert not host_matches("https://evil.example/sentinel2l2a01.blob.core.windows.net/b.tif", hosts)
    assert not host_matches("https://blob.core.windows.net.evil.example/b.tif", hosts)
    assert not host_matches("https://evil.example/b.tif?x=.blob.core.windows.net", hosts)
    assert not host_matches("https://xblob.core.windows.net/b.tif", hosts)
    assert host_matches("http://127.0.0.1:8080/b.tif", ("127.0.0.1:8080",))
    assert not host_matches("http://127.0.0.1:8081/b.tif", ("127.0.0.1:8080",))
    # The signer leaves other hosts' hrefs alone, so it never even asks for a token for them.
    signer = PlanetaryComputerSigner("http://127.0.0.1:1/token", subscription_key=PC_KEY)
    href = "https://evil.example/sentinel2l2a01.blob.core.windows.net/b.tif"
    assert signer.sign(href, "sentinel-2-l2a") == href


@pytest.mark.qgis
def test_the_plugin_reads_items_with_the_endpoint_configured_not_the_files(published, tmp_path, monkeypatch):
    from osgeo import gdal

    from thermocrop.plugin.catalog import stac_scenes

    server, items = published("cdse", dates=2)
    monkeypatch.setenv("AWS_S3_ENDPOINT", server.host)
    monkeypatch.setenv("AWS_HTTPS", "NO")
    with LoopbackServer() as hostile:
        path = _write_items(tmp_path / "items.json", items, {"name": "cdse", "s3_endpoint": hostile.host,
                                                             "url": hostile.url})
        _forget_gdal_cache()
        try:
            scenes = stac_scenes([str(path)], cache_dir=tmp_path / "c",
                                 credentials={"AWS_ACCESS_KEY_ID": "TESTKEY", "AWS_SECRET_ACCESS_KEY": "qgis-secret"})
        finally:
            gdal.ClearPathSpecificOptions("/vsis3/eodata")
        assert len(scenes) == 2 and hostile.requests_seen == [] and server.saw("Credential=TESTKEY/")


# --------------------------------------------------------------------------------------------
# 2. Local hrefs stay inside the item collection's folder


def _one_band_hrefs(items: list, href: str, key: str = "red") -> list:
    changed = json.loads(json.dumps(items))
    changed[0]["assets"][key]["href"] = href
    return changed


@pytest.mark.parametrize("href", ["../outside/B04.tif", "/etc/hosts", "/vsicurl/http://127.0.0.1:1/B04.tif",
                                  "file:///etc/hosts", "ftp://example.org/B04.tif", "sub/../../B04.tif",
                                  "link/B04.tif"])
def test_hrefs_that_leave_the_folder_are_refused_naming_item_and_href(published, tmp_path, href, capsys):
    server, items = published("earth-search", **ES)
    folder = tmp_path / "collection"
    folder.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "B04.tif").write_bytes(b"not for reading")
    (folder / "link").symlink_to(tmp_path / "outside")  # a link inside that leads out
    path = _write_items(folder / "items.json", _one_band_hrefs(items, href))
    with pytest.raises(InputError) as caught:
        load_items(path)
    message = str(caught.value)
    assert items[0]["id"] in message and href in message and "refused" in message
    assert main(["scenes", "show", str(path)]) == EXIT_INPUT
    assert href in capsys.readouterr().err


def test_local_hrefs_inside_the_folder_resolve_against_it_not_the_working_folder(published, tmp_path, monkeypatch):
    server, items = published("earth-search", **ES)
    root = Path(server.root)
    local = json.loads(json.dumps(items[:2]))
    for item in local:
        for asset in item["assets"].values():
            asset["href"] = asset["href"].split("/files/", 1)[1]  # relative to the served folder
    path = _write_items(root / "local-items.json", local)
    monkeypatch.chdir(tmp_path)  # a working folder where none of these files is
    scenes = scenes_from_files([path])
    red = scenes[0].products[0].assets["B04"].href
    assert red == str((root / local[0]["assets"]["red"]["href"]).resolve())

    # Items that come from a search (no file, no folder) are never read from local paths.
    found = pystac.ItemCollection([pystac.Item.from_dict(i) for i in _one_band_hrefs(items, str(root / "x.tif"))])
    with pytest.raises(InputError, match="refused"):
        scenes_from_items(found, reader=reader_for(found, cache_dir=tmp_path / "c"))


# --------------------------------------------------------------------------------------------
# 5. Deadlines, capped waits, repeated pages


@pytest.fixture
def catalogue(published):
    server, items = published("earth-search", **ES)
    with LoopbackServer(catalog=StacCatalog(items, page_size=2)) as api:
        yield api, items


def test_a_next_link_to_itself_stops_the_search_with_a_clear_error(catalogue):
    api, items = catalogue
    api.catalog.next_to_itself = True
    for method in ("POST", "GET"):
        api.catalog.searches.clear()
        with pytest.raises(InputError, match="already read|same items as an earlier page"):
            search_items((0.0, 40.0, 3.0, 46.0), season=2017, catalog=api.url + "/stac", max_cloud=100,
                         method=method, page_size=2)
        assert len(api.catalog.searches) <= 3


def test_retry_after_an_hour_is_capped_and_said(catalogue, monkeypatch, caplog):
    api, items = catalogue
    monkeypatch.setenv("THERMOCROP_MAX_RETRY_WAIT", "0.2")
    api.faults.append(Fault("/stac/search", "retry-after", times=1, methods=("POST",)))
    with caplog.at_level(logging.WARNING):
        found = search_items((0.0, 40.0, 3.0, 46.0), season=2017, catalog=api.url + "/stac", max_cloud=100)
    assert len(found) == len(items) and api.counters.faults == 1
    assert "asked to wait 3600 s" in caplog.text and api.host in caplog.text

    # A wait that would end after the deadline is not begun: the host is named at once.
    monkeypatch.setenv("THERMOCROP_MAX_RETRY_WAIT", "30")
    api.faults.append(Fault("/stac/search", "retry-after", times=None, methods=("POST",)))
    with pytest.raises(NetworkDeadlineError, match=api.host.replace(".", r"\.")):
        search_items((0.0, 40.0, 3.0, 46.0), season=2017, catalog=api.url + "/stac", max_cloud=100, deadline=3)


def test_a_stalled_server_times_out_naming_the_host(catalogue, tmp_path, monkeypatch):
    api, items = catalogue
    api.faults.append(Fault("/stac/search", "stall", times=None, methods=("POST",)))
    with pytest.raises(NetworkDeadlineError, match=f"timed out.*{api.host}|{api.host}.*timed out"):
        search_items((0.0, 40.0, 3.0, 46.0), season=2017, catalog=api.url + "/stac", timeout=0.5, deadline=2)
    api.faults.append(Fault("/v1/archive", "stall", times=None))
    with pytest.raises(WeatherError, match=api.host.replace(".", r"\.")):
        fetch_open_meteo(LON, LAT, "2024-01-01", "2024-01-31", cache_dir=tmp_path, url=api.url + "/v1/archive",
                         timeout=0.5, deadline=2)


def test_remote_reads_of_a_stalled_server_time_out_naming_the_host(published, tmp_path):
    server, items = published("earth-search", **ES)
    server.faults.append(Fault("/files/*", "stall", times=None, methods=("HEAD", "GET")))
    collection = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items[:1]])
    _forget_gdal_cache()
    reader = reader_for(collection, cache_dir=tmp_path, timeout=1, retries=0, deadline=3)
    try:
        with pytest.raises(SceneError, match=f"timed out.*{server.host}|{server.host}.*timed out"):
            scenes_from_items(collection, reader=reader)
    finally:
        server.release_stalls()


def test_a_web_page_instead_of_a_stac_api_is_named(catalogue):
    api, _ = catalogue
    api.faults.append(Fault("/stac", "html", times=None))
    with pytest.raises(InputError, match="answered with a web page, not a STAC API"):
        search_items((0.0, 40.0, 3.0, 46.0), season=2017, catalog=api.url + "/stac")


# --------------------------------------------------------------------------------------------
# 4. Weather answers: only complete, valid ones are cached; the CDS's own reason


def test_weather_answers_in_other_units_are_refused_and_never_cached(tmp_path):
    with LoopbackServer(open_meteo_units="°F") as server:
        with pytest.raises(WeatherError, match="not degrees Celsius"):
            fetch_open_meteo(LON, LAT, "2024-01-01", "2024-01-31", cache_dir=tmp_path, url=server.url + "/v1/archive")
        server.open_meteo_units = "°C"
        fetch_open_meteo(LON, LAT, "2024-01-01", "2024-01-31", cache_dir=tmp_path, url=server.url + "/v1/archive")
        assert len(server.open_meteo_requests) == 2  # the refused answer was not reused


def test_null_days_are_not_cached_and_the_cli_can_refresh(tmp_path, tiny_region, monkeypatch, capsys, caplog):
    with LoopbackServer(open_meteo_gaps=("2017-12-20", "2017-12-21")) as server:
        monkeypatch.setenv("THERMOCROP_OPEN_METEO_URL", server.url + "/v1/archive")
        args = ["gdd", "--parcels", str(tiny_region / "parcels.gpkg"), "--weather", "open-meteo", "--dates",
                "2017-06-01", "2017-12-31", "--cache", str(tmp_path / "c")]
        with caplog.at_level(logging.INFO):
            assert main(args + ["--out", str(tmp_path / "a.csv")]) == 0
        assert "no temperature for 2 of" in caplog.text and "will not be reused" in caplog.text
        first = len(server.open_meteo_requests)
        assert main(args + ["--out", str(tmp_path / "b.csv")]) == 0
        second = len(server.open_meteo_requests)
        assert second == 2 * first  # asked again
        server.open_meteo_gaps.clear()
        assert main(args + ["--out", str(tmp_path / "c.csv")]) == 0
        assert main(args + ["--out", str(tmp_path / "d.csv")]) == 0
        assert len(server.open_meteo_requests) == 3 * first  # complete: cached once, then reused
        assert main(args + ["--out", str(tmp_path / "e.csv"), "--refresh-weather"]) == 0
        assert len(server.open_meteo_requests) == 4 * first


def test_the_cds_failure_reason_is_passed_through(tmp_path, monkeypatch):
    reason = "None of the data you have requested is available yet, please revise the period requested."
    with LoopbackServer(cds_key="abcd-1234", cds_failure=reason) as server:
        monkeypatch.setenv("CDSAPI_URL", server.url + "/api")
        monkeypatch.setenv("CDSAPI_KEY", "abcd-1234")
        monkeypatch.setenv("CDSAPI_RC", str(tmp_path / "no-rc-file"))
        with pytest.raises(WeatherError) as caught:
            fetch_cds("era5-land", LON, LAT, "2017-12-20", "2018-01-10", cache_dir=tmp_path)
    assert reason in str(caught.value)


# --------------------------------------------------------------------------------------------
# 6. Malformed item collections and caches that cannot be written: named errors


@pytest.mark.parametrize("damage, expect", [
    ("cloud", "eo:cloud_cover"), ("nesting", "Cannot read STAC items"), ("features", "not a list"),
    ("transform", "is malformed"),
])
def test_malformed_item_collections_end_with_a_named_error(published, tiny_region, tmp_path, capsys, damage, expect):
    server, items = published("earth-search", **ES)
    path = tmp_path / "items.json"
    if damage == "nesting":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif damage == "features":
        path.write_text(json.dumps({"type": "FeatureCollection", "features": {"0": items[0]}}))
    else:
        broken = json.loads(json.dumps(items))
        if damage == "cloud":
            broken[1]["properties"]["eo:cloud_cover"] = "cloudy"
        else:
            for asset in broken[0]["assets"].values():
                asset["proj:transform"] = "10,0,300000"
        _write_items(path, broken)
    command = (["scenes", "show", str(path)] if damage != "transform" else
               ["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--stac", str(path), "--weather",
                str(tiny_region / "weather.nc"), "--out", str(tmp_path / "o.gpkg"), "--cache", str(tmp_path / "c")])
    assert main(command) == EXIT_INPUT
    err = capsys.readouterr().err
    assert expect in err and "Traceback" not in err


def test_a_cache_that_cannot_be_written_is_named(published, tmp_path):
    server, items = published("earth-search", **ES)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    collection = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items[:1]])
    _forget_gdal_cache()
    with pytest.raises(BlockCacheError, match="block cache .* cannot be written"):
        scenes_from_items(collection, reader=reader_for(collection, cache_dir=blocker / "cache"))


def test_a_full_disk_under_the_block_cache_is_named(published, tiny_region, tmp_path):
    """A subprocess whose writes fail past 1 kB (``RLIMIT_FSIZE``, as on a full disk)."""
    server, items = published("earth-search", **ES)
    path = _write_items(tmp_path / "items.json", items[:2])
    script = ("import resource, signal, sys\n"
              "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))\n"
              "from thermocrop.cli.main import main\n"
              f"sys.exit(main(['classify', '--parcels', {str(tiny_region / 'parcels.gpkg')!r}, '--stac', "
              f"{str(path)!r}, '--weather', {str(tiny_region / 'weather.nc')!r}, '--out', "
              f"{str(tmp_path / 'o.gpkg')!r}, '--cache', {str(tmp_path / 'cache')!r}]))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == EXIT_INPUT, run.stderr[-2000:]
    assert "block cache" in run.stderr and "cannot be written" in run.stderr and "Traceback" not in run.stderr


def test_when_every_download_fails_the_message_says_so(published, tiny_region, tmp_path):
    from thermocrop.core.extract import extract_pixel_sets

    server, items = published("earth-search", **ES)
    collection = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items])
    _forget_gdal_cache()
    scenes = scenes_from_items(collection, reader=reader_for(collection, cache_dir=tmp_path, retry_delay=0.05))
    server.faults.append(Fault("/files/*", "404", times=None, methods=("HEAD", "GET")))
    _forget_gdal_cache()
    with pytest.raises(SceneError) as caught:
        extract_pixel_sets(tiny_region / "parcels.gpkg", scenes, tiny_region / "weather.nc",
                           settings=ExtractionSettings(sampling=PixelSampling(max_pixels=16)))
    message = str(caught.value)
    assert "Every download failed" in message and server.host in message and "cloud mask" not in message


# --------------------------------------------------------------------------------------------
# 3. Secrets in logs; Ctrl+C


def test_log_records_of_any_logger_are_redacted_at_debug_level(caplog):
    from thermocrop.core.redact import install_redaction

    install_redaction()
    signed = "https://acct.blob.core.windows.net/c/B04.tif?st=2024&se=2099&sp=rl&sig=c2VjcmV0%3D"
    lines = [("rasterio._env", "CPLE_None in VSICURL: GetFileSize(%s)", (signed,)),
             ("urllib3.connectionpool", "%s \"GET %s HTTP/1.1\" 200", ("https://acct", signed)),
             ("pystac_client.stac_api_io", "GET x Headers: %s", ({"Ocp-Apim-Subscription-Key": PC_KEY},)),
             ("somewhere.else", "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/x, "
                                "Signature=fe5f80f77d5fa3beca038a248ff027", ())]
    with caplog.at_level(logging.DEBUG):
        for name, message, args in lines:
            logging.getLogger(name).debug(message, *args)
        try:
            raise OSError(f"reading {signed} failed")
        except OSError:
            logging.getLogger("thermocrop.test").exception("with a traceback")
    text = caplog.text + "".join(r.exc_text or "" for r in caplog.records)
    assert len(caplog.records) == 5 and "acct.blob.core.windows.net/c/B04.tif?<redacted>" in text
    for secret in ("c2VjcmV0", PC_KEY, "AKIDEXAMPLE", "fe5f80f77d5fa3beca038a248ff027"):
        assert secret not in text


def _cli(args: list, env: dict, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "thermocrop.cli.main", *args], env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_no_token_in_the_log_at_debug_level(published, tiny_region, tmp_path):
    server, items = published("planetary-computer", dates=2)
    signed = json.loads(json.dumps(items))
    for item in signed:  # hrefs signed beforehand, as Planetary Computer's own tools save them
        for asset in item["assets"].values():
            asset["href"] += "?" + SAS_TOKEN
    path = _write_items(tmp_path / "items.json", signed)
    secret = SAS_TOKEN.split("sig=")[1]
    run = _cli(["-v", "classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--stac", str(path), "--weather",
                str(tiny_region / "weather.nc"), "--out", str(tmp_path / "o.gpkg"), "--cache", str(tmp_path / "c")],
               {"CPL_DEBUG": "ON", "PC_SDK_SUBSCRIPTION_KEY": PC_KEY})
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-3000:]
    assert server.counters.total_requests("/files/") > 0 and "sig=" in " ".join(p for _, p, _ in server.requests_seen)
    assert "/files/" in err and "DEBUG" in err  # the reads were logged...
    assert secret not in err + out and PC_KEY not in err + out  # ...without their token


def test_ctrl_c_during_stalled_remote_reads_stops_the_run(published, tiny_region, tmp_path):
    server, items = published("earth-search", **ES)
    path = _write_items(tmp_path / "items.json", items)
    server.faults.append(Fault("/files/*", "stall", times=None, methods=("HEAD", "GET")))
    run = _cli(["classify", "--parcels", str(tiny_region / "parcels.gpkg"), "--stac", str(path), "--weather",
                str(tiny_region / "weather.nc"), "--out", str(tmp_path / "o.gpkg"), "--cache", str(tmp_path / "c")],
               {"THERMOCROP_NETWORK_DEADLINE": "300"})
    try:
        for _ in range(600):  # until the run is waiting on the stalled server
            if server.counters.total_requests("/files/") > 0:
                break
            time.sleep(0.1)
        assert server.counters.total_requests("/files/") > 0
        time.sleep(0.5)
        sent = time.monotonic()
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=30)  # a hang (the stall lasts 60 s) fails here
        took = time.monotonic() - sent
    finally:
        if run.poll() is None:
            run.kill()
        server.release_stalls()
    print(f"Ctrl+C to exit: {took:.2f} s")
    assert run.returncode == EXIT_INTERRUPTED, err[-2000:]
    assert "interrupted" in err and not (tmp_path / "o.gpkg").exists()
