"""Reading STAC assets by window from loopback servers: the same pixels as local files, a cache
that makes a second run silent, retried faults, left-out dates, signed and S3 assets."""

from __future__ import annotations

import logging

import numpy as np
import pystac
import pytest
from loopback import Fault, write_band_folder

from thermocrop.core.extract import extract_pixel_sets, scene_threads
from thermocrop.core.scenes.local import find_scenes
from thermocrop.core.scenes.stac import Catalog, reader_for, scenes_from_items
from thermocrop.core.settings import ExtractionSettings, PixelSampling

ES = dict(dates=6, cloud_cover=(5, 70, 20, 90, 10, 40))


@pytest.fixture(scope="module")
def local_scenes(tiny_region, tmp_path_factory):
    """The same first six scenes as local per-band GeoTIFFs on the region's own (smaller) grid."""
    folder = tmp_path_factory.mktemp("bands")
    for scene in sorted(p for p in (tiny_region / "scenes").glob("*.tif") if not p.stem.endswith("_SCL"))[:6]:
        write_band_folder(scene, folder)
    return find_scenes(folder)


def _forget_gdal_cache():
    """GDAL keeps what it downloaded in memory for the process; tests of what goes over the
    network start from an empty one, as a new process would."""
    from osgeo import gdal

    gdal.VSICurlClearCache()


def _remote(items, cache, **options):
    _forget_gdal_cache()
    collection = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items])
    return scenes_from_items(collection, reader=reader_for(collection, cache_dir=cache, retry_delay=0.05, **options))


def _extract(region, scenes):
    _forget_gdal_cache()
    return extract_pixel_sets(region / "parcels.gpkg", scenes, region / "weather.nc",
                              settings=ExtractionSettings(sampling=PixelSampling(max_pixels=16)))


@pytest.fixture(scope="module")
def local_pixels(tiny_region, local_scenes):
    return _extract(tiny_region, local_scenes)


def test_remote_pixels_equal_local_ones_and_a_second_run_reads_nothing(published, tiny_region, local_scenes,
                                                                        local_pixels, tmp_path):
    server, items = published("earth-search", **ES)
    scenes = _remote(items, tmp_path / "cache")
    # The remote grid is the whole (padded) tile: 20 m bands resampled from blocks, pixels
    # drawn on the same lattice, so the pixel sets are those of the local clip exactly.
    assert scenes[0].products[0].grid.width > 240
    assert scene_threads(scenes) == 1  # one reader's cache: scenes read one after the other
    # Extraction asks each product whether its blocks are fetched before it is read.
    assert all(p.fetch_first for sc in scenes for p in sc.products)
    assert not any(p.fetch_first for sc in local_scenes for p in sc.products)
    remote = _extract(tiny_region, scenes)
    np.testing.assert_array_equal(remote.dates, local_pixels.dates)
    np.testing.assert_array_equal(remote.pixel_mask, local_pixels.pixel_mask)
    np.testing.assert_array_equal(remote.pixels, local_pixels.pixels)
    np.testing.assert_array_equal(remote.status, local_pixels.status)
    first = server.counters.total_bytes("/files/")
    assert first > 0

    server.reset_counters()
    again = _extract(tiny_region, _remote(items, tmp_path / "cache"))
    assert server.counters.total_requests("/files/") == 0  # not even a HEAD
    np.testing.assert_array_equal(again.pixels, remote.pixels)


def test_classification_labels_do_not_depend_on_where_the_pixels_come_from(published, tiny_region,
                                                                           local_scenes, tmp_path):
    from thermocrop.core.classify import classify_parcels

    _, items = published("earth-search", **ES)
    here = classify_parcels(tiny_region / "parcels.gpkg", local_scenes, tiny_region / "weather.nc")
    there = classify_parcels(tiny_region / "parcels.gpkg", _remote(items, tmp_path / "cache"),
                             tiny_region / "weather.nc")
    np.testing.assert_array_equal(there.labels, here.labels)
    np.testing.assert_allclose(there.probabilities, here.probabilities, atol=1e-6)


def test_503s_and_dropped_connections_are_retried(published, tiny_region, local_pixels, tmp_path):
    server, items = published("earth-search", **ES)
    scenes = _remote(items, tmp_path / "cache")  # headers read cleanly
    server.reset_counters()
    server.faults += [Fault("/files/*/B04.tif", "503", times=3), Fault("/files/*/B11.tif", "drop", times=2),
                      Fault("/files/*/SCL.tif", "drop", times=1, skip=2)]
    remote = _extract(tiny_region, scenes)
    assert server.counters.faults == 6
    assert sum(1 for *_, status in server.counters.log if status == 503) == 3
    np.testing.assert_array_equal(remote.pixels, local_pixels.pixels)
    np.testing.assert_array_equal(remote.pixel_mask, local_pixels.pixel_mask)


def test_a_missing_asset_drops_its_date_with_a_warning_naming_it(published, tiny_region, local_pixels, tmp_path,
                                                                  caplog):
    server, items = published("earth-search", **ES)
    lost = items[2]["assets"]["swir16"]["href"]
    server.faults.append(Fault(lost.split(server.url)[1], "404", times=None, methods=("HEAD", "GET")))
    with caplog.at_level(logging.WARNING):
        scenes = _remote(items, tmp_path / "cache")
    assert lost in caplog.text and str(local_pixels.dates[2]) in caplog.text
    remote = _extract(tiny_region, scenes)
    keep = np.array([0, 1, 3, 4, 5])
    np.testing.assert_array_equal(remote.dates, local_pixels.dates[keep])
    np.testing.assert_array_equal(remote.pixels, local_pixels.pixels[:, keep])


def test_an_asset_that_keeps_failing_is_never_half_used(published, tiny_region, local_pixels, tmp_path, caplog):
    server, items = published("earth-search", **ES)
    scenes = _remote(items, tmp_path / "cache")  # every header fine, then B8A of date 4 breaks for good
    bad = items[4]["assets"]["nir08"]["href"].split(server.url)[1]
    server.reset_counters()
    server.faults.append(Fault(bad, "drop", times=None))
    with caplog.at_level(logging.WARNING):
        remote = _extract(tiny_region, scenes)
    assert items[4]["id"] in caplog.text and "nir08" not in caplog.text or bad in caplog.text
    # Nothing of date 4 is used (its other nine bands were fetched whole); the rest is untouched.
    assert not remote.pixel_mask[:, 4].any() and not remote.date_mask[:, 4].any()
    others = np.array([0, 1, 2, 3, 5])
    np.testing.assert_array_equal(remote.pixels[:, others], local_pixels.pixels[:, others])
    assert sum(1 for m, p, r, s in server.counters.log if p == bad and s < 0) > 1  # retried before giving up


def test_planetary_computer_assets_are_signed_and_the_saved_hrefs_are_not(published, tiny_region, local_pixels,
                                                                           tmp_path):
    server, items = published("planetary-computer", dates=6)
    collection = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items])
    # The loopback stands in for Planetary Computer as a catalogue the caller configures: its
    # token service, and its own host as the one whose hrefs are signed.
    configured = Catalog("loopback-pc", server.url + "/stac", signing="planetary-computer",
                         token_url=server.url + "/api/sas/v1/token", signed_hosts=(server.host,))
    scenes = scenes_from_items(collection, reader=reader_for(collection, cache_dir=tmp_path / "c", catalog=configured))
    remote = _extract(tiny_region, scenes)
    np.testing.assert_array_equal(remote.pixels, local_pixels.pixels)
    assert server.counters.total_requests("/api/sas/v1/token/sentinel-2-l2a") == 1
    assert not any(s == 403 for *_, s in server.counters.log)
    assert all("sig=" not in f for f in scenes[0].files)

    # Without the token service the server refuses, and the items are left out by name.
    bare = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items])
    from thermocrop.core.errors import SceneError

    with pytest.raises(SceneError, match="None of the STAC items"):
        scenes_from_items(bare, reader=reader_for(bare, cache_dir=tmp_path / "d", retries=0))


def test_cdse_jpeg2000_in_s3_with_keys_from_the_environment(published, tiny_region, local_pixels, tmp_path,
                                                            monkeypatch):
    server, items = published("cdse", dates=6)
    monkeypatch.setenv("AWS_S3_ENDPOINT", server.host)
    monkeypatch.setenv("AWS_HTTPS", "NO")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    collection = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items])
    from thermocrop.core.errors import SceneError

    with pytest.raises(SceneError, match="AWS_ACCESS_KEY_ID"):
        reader_for(collection, cache_dir=tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "TESTKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-in-any-file")
    remote = _extract(tiny_region, scenes_from_items(collection, reader=reader_for(collection, cache_dir=tmp_path)))
    np.testing.assert_array_equal(remote.pixels, local_pixels.pixels)
    assert server.counters.total_bytes("/eodata/") > 0 and not any(s == 403 for *_, s in server.counters.log)


def test_s3_keys_given_to_the_reader_reach_only_gdal_not_the_environment(published, tiny_region, local_pixels,
                                                                         tmp_path, monkeypatch):
    """Keys from QGIS's authentication manager come as ``credentials``: the S3 bucket's requests
    are signed with them while the environment stays without keys."""
    import os

    from osgeo import gdal

    server, items = published("cdse", dates=6)
    monkeypatch.setenv("AWS_S3_ENDPOINT", server.host)
    monkeypatch.setenv("AWS_HTTPS", "NO")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key, raising=False)
    collection = pystac.ItemCollection([pystac.Item.from_dict(i) for i in items])
    from thermocrop.core.errors import InputError

    with pytest.raises(InputError, match="Unknown credentials password"):
        reader_for(collection, cache_dir=tmp_path, credentials={"password": "x"})
    try:
        reader = reader_for(collection, cache_dir=tmp_path, credentials={"AWS_ACCESS_KEY_ID": "TESTKEY",
                                                                         "AWS_SECRET_ACCESS_KEY": "from-the-auth-db"})
        remote = _extract(tiny_region, scenes_from_items(collection, reader=reader))
    finally:
        gdal.ClearPathSpecificOptions("/vsis3/eodata")
    np.testing.assert_array_equal(remote.pixels, local_pixels.pixels)
    assert "AWS_ACCESS_KEY_ID" not in os.environ
    assert server.counters.total_bytes("/eodata/") > 0 and not any(s == 403 for *_, s in server.counters.log)


def test_every_gdal_request_of_the_process_gets_an_end(tmp_path, monkeypatch):
    """A thread that never saw a reader's settings (GDAL closing or describing a dataset there)
    still has timeouts once a reader exists; what the user set stays."""
    import threading

    from osgeo import gdal

    from thermocrop.core.scenes.remote import STALL_OPTIONS, RemoteReader

    saved = {k: gdal.GetConfigOption(k) for k in STALL_OPTIONS}
    monkeypatch.setenv("GDAL_HTTP_CONNECTTIMEOUT", "7")
    try:
        for key in STALL_OPTIONS:
            gdal.SetConfigOption(key, None)
        RemoteReader(tmp_path / "cache", timeout=12.0)
        seen = {}
        thread = threading.Thread(target=lambda: seen.update({k: gdal.GetConfigOption(k) for k in STALL_OPTIONS}))
        thread.start()
        thread.join()
        assert seen == {"GDAL_HTTP_TIMEOUT": "12", "GDAL_HTTP_CONNECTTIMEOUT": "7", "GDAL_HTTP_LOW_SPEED_TIME": "12",
                        "GDAL_HTTP_LOW_SPEED_LIMIT": "1"}
    finally:
        for key, value in saved.items():
            gdal.SetConfigOption(key, value)
