"""A hostile user's campaign, rerunnable: new inputs of every class of fault the reliability page
promises to handle, tried the way users meet them (the ``thermocrop`` command, in this process or
in a subprocess, and the library calls the command and the plugin share), with hostile servers on
127.0.0.1 only.

Each case asserts the guarantee of its class: no code runs, no credential reaches another host,
no data is lost, nothing hangs past its deadline, a named error (exit code 3, 5 or 6) instead of
a traceback, and a message that points at the cause. Cases known to fail are marked
``xfail(strict=True)`` with the reason, so the list stays honest.

Classes (numbers as in ``docs/reliability.md``'s campaign section): 1 data files that run code,
2 where credentials go, 3 local files reached through hrefs, 4 paths and text escaping into
interpreters, 5 secrets in logs, 6 outputs equal to inputs, 7 other programs' SQLite
transactions, 8 cleanup, 9 resume with changed inputs, 11 missing pieces and values out of
range, 12 bad weather answers cached, 13 deadlines, 14 memory bombs, 15 named errors,
16 messages that point at the cause.
"""

from __future__ import annotations

import html
import json
import logging
import os
import signal
import sqlite3
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import pytest

from thermocrop.cli.main import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OUTPUT, main
from thermocrop.core.errors import InputError, ThermoCropError
from thermocrop.core.settings import ExtractionSettings, PixelSampling

ogr = pytest.importorskip("osgeo.ogr")
osr = pytest.importorskip("osgeo.osr")

REPO = Path(__file__).resolve().parents[2]
NAMED = (3, 5, 6)
X0, Y0 = 400000.0, 4840000.0  # UTM 31N, near Toulouse
STAC_CONFORMANCE = ["https://api.stacspec.org/v1.0.0/core", "https://api.stacspec.org/v1.0.0/item-search",
                    "https://api.stacspec.org/v1.0.0/item-search#query"]
KEY = "campaign-subscription-key-5f3a9c"
SECRET = "campaign-secret-pw-77d1"


# --------------------------------------------------------------------------------------------
# How the cases are driven and judged


def cli(*args: str, timeout: float = 120, env: Optional[dict] = None, cwd=None) -> tuple[int, str]:
    """``thermocrop ARGS`` in a subprocess, as a user runs it: (exit code, stdout + stderr)."""
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO.parent), os.environ.get("PYTHONPATH", "")]))
    full.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "thermocrop.cli.main", *args], capture_output=True,
                          text=True, timeout=timeout, env=full, cwd=cwd)
    return proc.returncode, proc.stdout + proc.stderr


def run(capsys, *args: str) -> tuple[int, str]:
    """``thermocrop ARGS`` in this process: (exit code, what it printed)."""
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # usage errors
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def answered_well(code: int, text: str, codes=NAMED, *words: str) -> None:
    """A named error (one of ``codes``), no traceback, and every word of the cause in the text."""
    assert "Traceback" not in text, text[-2000:]
    assert code in codes, f"exit code {code}: {text[-1500:]}"
    for word in words:
        assert word.lower() in text.lower(), f"{word!r} not in: {text[-1500:]}"


def named(call: Callable[[], Any], *words: str, error=ThermoCropError) -> str:
    """The message of the named error ``call`` raises (any other exception fails the case)."""
    with pytest.raises(error) as caught:
        call()
    text = str(caught.value)
    for word in words:
        assert word.lower() in text.lower(), f"{word!r} not in: {text}"
    return text


def digest(path: Path) -> bytes:
    return path.read_bytes()


class Server:
    """An HTTP server on 127.0.0.1 whose every answer comes from ``answer(request) -> (status,
    headers, body)``; ``body`` bytes, or a callable given the socket file to write slowly. It keeps
    every request (method, path with query, headers, body) it saw."""

    def __init__(self, answer: Callable[[dict], tuple]) -> None:
        self.answer = answer
        self.requests: list[dict] = []
        self.stop = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = {"method": self.command, "path": self.path, "headers": dict(self.headers),
                           "body": body.decode("utf-8", "replace")}
                owner.requests.append(request)
                status, headers, content = owner.answer(request)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    if callable(content):
                        self.send_header("Connection", "close")
                        self.end_headers()
                        content(self.wfile, owner.stop)
                        return
                    self.send_header("Content-Length", str(len(content)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(content)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_HEAD = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.netloc = f"127.0.0.1:{self.httpd.server_address[1]}"
        self.url = f"http://{self.netloc}"

    def __enter__(self) -> "Server":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def saw(self, text: str) -> bool:
        return any(text in json.dumps(r) for r in self.requests)


def as_json(data: Any, status: int = 200, **headers: str) -> tuple:
    return status, {"Content-Type": "application/json", **headers}, json.dumps(data).encode()


def stall(wfile, stop) -> None:
    stop.wait(60)


def drip(wfile, stop) -> None:
    """A body that takes 20 s: one byte every 0.2 s (each read succeeds, so no read time-out)."""
    wfile.write(b'{"type": "FeatureCollection", "features": [')
    wfile.flush()
    for _ in range(100):
        if stop.wait(0.2):
            return
        try:
            wfile.write(b" ")
            wfile.flush()
        except OSError:
            return


# --------------------------------------------------------------------------------------------
# Files


def write_parcels(path: Path, ids: list[str], *, field: str = "parcel_id", layer: str = "parcels",
                  more: Optional[dict] = None, epsg: int = 32631) -> Path:
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    drv = {".gpkg": "GPKG", ".shp": "ESRI Shapefile", ".geojson": "GeoJSON"}[path.suffix]
    ds = ogr.GetDriverByName(drv).CreateDataSource(str(path))
    lyr = ds.CreateLayer(layer, srs, ogr.wkbPolygon)
    lyr.CreateField(ogr.FieldDefn(field, ogr.OFTString))
    for name in (more or {}):
        lyr.CreateField(ogr.FieldDefn(name, ogr.OFTString))
    for i, pid in enumerate(ids):
        x, y = X0 + i * 50.0, Y0
        f = ogr.Feature(lyr.GetLayerDefn())
        f.SetField(field, pid)
        for name, values in (more or {}).items():
            f.SetField(name, values[i])
        ring = f"{x} {y},{x + 40} {y},{x + 40} {y + 40},{x} {y + 40},{x} {y}"
        f.SetGeometry(ogr.CreateGeometryFromWkt(f"POLYGON (({ring}))"))
        lyr.CreateFeature(f)
    ds = None
    return path


def weather_csv(path: Path, *, start="2023-01-01", end="2024-01-01", prefix: str = "", newline: str = "\n",
                sep: str = ",", rows: Optional[Callable[[list], list]] = None) -> Path:
    days = [str(d) for d in np.arange(np.datetime64(start), np.datetime64(end))]
    lines = [[d, "2.0", "12.0"] for d in days]
    if rows:
        lines = rows(lines)
    path.write_text(prefix + f"date{sep}tmin{sep}tmax" + newline + "".join(sep.join(r) + newline for r in lines),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("campaign")
    write_parcels(root / "parcels.gpkg", [f"p{i}" for i in range(6)])
    weather_csv(root / "weather.csv")
    return root


def gdd(parcels: Path, weather: Path, out, *more) -> list[str]:
    return ["gdd", "--parcels", str(parcels), "--weather", str(weather), "--dates", "2023-05-01", "--out", str(out),
            *map(str, more)]


@pytest.fixture
def work(base, tmp_path) -> Path:
    """A fresh copy of the parcels and weather in a folder of the test's own."""
    for name in ("parcels.gpkg", "weather.csv"):
        (tmp_path / name).write_bytes((base / name).read_bytes())
    return tmp_path


# ============================================================================================
# 1. Data files never run code


def _zarr_store(folder: Path, **changes) -> Path:
    import zarr

    store = folder / "0.zarr"
    zarr.open(str(store), mode="w", shape=(2, 10, 3), dtype=np.uint16)[...] = 7
    meta = json.loads((store / ".zarray").read_text())
    meta.update(changes)
    (store / ".zarray").write_text(json.dumps(meta))
    return store


ZARRAY_CASES = {
    "filter-dict-delta-to-objects": {"filters": [{"id": "delta", "dtype": "<u2", "astype": "|O"}]},
    "filter-id-is-a-dict": {"filters": [{"id": {"id": "pickle"}}]},
    "compressor-id-is-a-list": {"compressor": {"id": ["pickle"]}},
    "filter-as-nested-list": {"filters": [["pickle"]]},
    "filters-as-a-dict": {"filters": {"id": "pickle"}},
    "compressor-as-text": {"compressor": "pickle"},
    "dtype-float-of-one-byte": {"dtype": "<f1"},
    "dtype-bool-of-eight-bytes": {"dtype": "|b8"},
    "shuffle-elementsize-true": {"filters": [{"id": "shuffle", "elementsize": True}]},
    "shape-negative": {"shape": [-2, 10, 3]},
}


@pytest.mark.parametrize("case", list(ZARRAY_CASES))
def test_c01_zarr_metadata_outside_the_lists_is_a_named_refusal(case, tmp_path):
    from thermocrop.core.io.zarr_read import ZarrError, read_zarr_array

    store = _zarr_store(tmp_path, **ZARRAY_CASES[case])
    named(lambda: read_zarr_array(store, what="parcel 0", max_bytes=1 << 20), "parcel 0", error=ZarrError)


def _reduce_pickle(marker: Path, module: str = "os", name: str = "system") -> bytes:
    """A protocol-0 pickle that calls ``module.name("touch marker")`` when loaded."""
    return f"c{module}\n{name}\n(S'touch {marker}'\ntR.".encode()


@pytest.mark.parametrize("module, name", [("os", "system"), ("subprocess", "getoutput"), ("builtins", "eval"),
                                          ("numpy.core.multiarray", "_reconstruct.__globals__"),
                                          ("numpy", "load"), ("pickle", "loads")])
def test_c01_pickles_naming_callables_run_nothing(module, name, tmp_path):
    from thermocrop.training.importers.safe_pickle import safe_load

    marker = tmp_path / "ran"
    path = tmp_path / "metadata.pkl"
    path.write_bytes(_reduce_pickle(marker, module, name))
    named(lambda: safe_load(path), "metadata.pkl", error=InputError)
    assert not marker.exists()


def test_c01_an_object_array_built_from_a_raw_buffer_is_refused_or_inert(tmp_path):
    # numpy.core.numeric._frombuffer(b"...", dtype('O'), (2,), 'C'): object pointers from bytes.
    data = (b"\x80\x02cnumpy.core.numeric\n_frombuffer\nq\x00C\x10" + b"\x41" * 16 +
            b"cnumpy\ndtype\nq\x01X\x02\x00\x00\x00O8q\x02K\x00K\x01\x87q\x03Rq\x04K\x02\x85q\x05"
            b"X\x01\x00\x00\x00Cq\x06\x86q\x07R.")
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from thermocrop.training.importers.safe_pickle import safe_loads\n"
            "from thermocrop.core.errors import InputError\n"
            "try:\n    safe_loads(%r)\nexcept InputError as e:\n    print('named', e)\n") % (str(REPO.parent), data)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "named" in proc.stdout, proc.stdout + proc.stderr


def _npy_with_header(path: Path, header: str, payload: bytes = b"") -> Path:
    text = header + " " * (118 - len(header) - 10 - 1) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1") + payload)
    return path


@pytest.mark.parametrize("header, words", [
    ("{'descr': [('a', '<u2'), ('b', '|O')], 'fortran_order': False, 'shape': (1,), }", ["object"]),
    ("{'descr': '<u2', 'fortran_order': False, 'shape': (10**12,), }", []),
    ("{'descr': '<u2', 'fortran_order': False, 'shape': (-4,), }", []),
    ("{'descr': __import__('os').getcwd(), 'fortran_order': False, 'shape': (1,), }", []),
])
def test_c01_npy_headers_run_nothing_and_allocate_nothing(header, words, tmp_path):
    from thermocrop.core.io.safe_read import load_npy

    path = _npy_with_header(tmp_path / "x.npy", header, b"\x00" * 16)
    named(lambda: load_npy(path), "x.npy", *words, error=InputError)


def test_c01_an_object_npy_whose_pickle_would_run_code_runs_nothing(tmp_path):
    from thermocrop.core.io.safe_read import load_npy

    marker = tmp_path / "ran"

    class Boom:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "labels.npy"
    np.save(path, np.array([Boom()], dtype=object), allow_pickle=True)
    named(lambda: load_npy(path), "labels.npy", "objects", error=InputError)
    assert not marker.exists()


@pytest.mark.parametrize("text", [
    "winter_wheat: !!python/object/apply:os.system ['touch {m}']\n",
    "? !!python/name:os.system\n: [BTH]\n",
    "base: &b [BTH]\nwinter_wheat:\n  <<: *b\n",
    "winter_wheat: !!binary dG91Y2gge219\n",
])
def test_c01_yaml_class_maps_build_no_object(text, tmp_path):
    from thermocrop.core.classmap import ClassMap

    marker = tmp_path / "ran"
    path = tmp_path / "map.yaml"
    path.write_text(text.replace("{m}", str(marker)))
    try:
        cmap = ClassMap.load(path)
    except InputError as exc:
        assert "map.yaml" in str(exc)
    else:
        assert all(isinstance(c, str) for c in cmap.classes)
    assert not marker.exists()


def _zip(path: Path, members: list[tuple[str, bytes]], link: Optional[str] = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members:
            zf.writestr(name, data)
        if link:
            info = zipfile.ZipInfo("data.nc")
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, link)
    return path


@pytest.mark.parametrize("members", [
    [("./../escaped.nc", b"x")],
    [("a/b/../../../escaped.nc", b"x")],
    [("C:escaped.nc", b"x")],
    [("ok.nc", b"x"), ("ok.nc", b"yy")],
    [("nul\x00/../../escaped.nc", b"x")],
    [("..\\escaped.nc", b"x")],
])
def test_c04_archive_members_stay_in_their_folder(members, tmp_path):
    from thermocrop.core.io.safe_read import extract_members

    into = tmp_path / "a" / "b"
    into.mkdir(parents=True)
    archive = _zip(tmp_path / "download.zip", members)
    try:
        written = extract_members(archive, into, what="CDS download")
    except InputError as exc:
        assert "download.zip" in str(exc)
    else:
        assert all(into in p.resolve().parents for p in written)
    assert not (tmp_path / "escaped.nc").exists() and not (tmp_path / "a" / "escaped.nc").exists()


def test_c01_netcdf_calendar_attribute_is_read_as_text(work, capsys):
    import netCDF4

    marker = work / "ran"
    path = work / "tmin.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", 365)
        ds.createDimension("lat", 2)
        ds.createDimension("lon", 2)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2023-01-01"
        t.calendar = f"__import__('os').system('touch {marker}')"
        t[:] = np.arange(365)
        ds.createVariable("lat", "f4", ("lat",))[:] = [43.0, 44.0]
        ds.createVariable("lon", "f4", ("lon",))[:] = [1.0, 2.0]
        for name, v in (("tmin", 2.0), ("tmax", 12.0)):
            var = ds.createVariable(name, "f4", ("time", "lat", "lon"))
            var.units = "degC"
            var[:] = np.full((365, 2, 2), v)
    code, text = run(capsys, *gdd(work / "parcels.gpkg", path, work / "o.csv"))
    assert not marker.exists()
    answered_well(code, text, (0, 3), )
    if code:
        assert "calendar" in text.lower()


# ============================================================================================
# 2. Where credentials go is never decided by a data file


@pytest.fixture
def token_service():
    """Planetary Computer's token endpoint, configured by the user; the token is a signature."""
    def answer(request):
        return as_json({"token": "sv=2021&sig=campaign-token-sig", "msft:expiry": "2099-01-01T00:00:00Z"})

    with Server(answer) as server:
        yield server


@pytest.mark.parametrize("template", [
    "http://{H}\\@{S}/B04.tif",
    "http://{H}#@{S}/B04.tif",
    "http://{H}?@{S}/B04.tif",
    "http://{S}@{H}/B04.tif",
    "http://{H}%2F@{S}/B04.tif",
    "http://{S}.{H}/B04.tif",
])
def test_c02_a_token_goes_only_to_the_host_the_request_reaches(template, token_service):
    from osgeo import gdal

    from thermocrop.core.scenes.remote import PlanetaryComputerSigner

    with Server(lambda r: (404, {}, b"")) as hostile:
        signer = PlanetaryComputerSigner(token_service.url + "/api/sas/v1/token", subscription_key=KEY,
                                         hosts=(token_service.netloc,))
        href = template.format(H=hostile.netloc, S=token_service.netloc)
        signed = signer.sign(href, "sentinel-2-l2a")
        gdal.VSICurlClearCache()
        options = {"GDAL_HTTP_MAX_RETRY": "0", "GDAL_HTTP_TIMEOUT": "3"}
        for k, v in options.items():
            gdal.SetConfigOption(k, v)
        try:
            gdal.VSIStatL("/vsicurl/" + signed)
        finally:
            for k in options:
                gdal.SetConfigOption(k, None)
        assert not hostile.saw("campaign-token-sig") and not hostile.saw(KEY)


def _collection(items: list, catalog: Any = None, *, item_field: Any = None):
    import pystac

    dicts = json.loads(json.dumps(items))
    if item_field is not None:
        for d in dicts:
            d["properties"]["thermocrop:catalog"] = item_field
    extra = {"thermocrop:catalog": catalog} if catalog is not None else {}
    return pystac.ItemCollection([pystac.Item.from_dict(d) for d in dicts], extra_fields=extra)


def _item(i: int, href: str, date: str = "2017-05-01") -> dict:
    return {"type": "Feature", "stac_version": "1.0.0", "id": f"S2A_31TCJ_{date.replace('-', '')}_{i}",
            "geometry": {"type": "Polygon", "coordinates": [[[0, 40], [3, 40], [3, 46], [0, 46], [0, 40]]]},
            "bbox": [0, 40, 3, 46], "properties": {"datetime": f"{date}T10:00:00Z", "eo:cloud_cover": 5.0},
            "links": [], "assets": {"red": {"href": href, "type": "image/tiff; application=geotiff"}}}


CATALOG_FIELDS = {
    "token-url-nested-in-signing": lambda H: ({"name": "planetary-computer",
                                              "signing": {"token_url": H + "/token", "hosts": [H[7:]]}}, None),
    "token-url-in-each-item": lambda H: (None, {"name": "planetary-computer", "token_url": H + "/token",
                                                "signed_hosts": [H[7:]]}),
    "signed-hosts-widened": lambda H: ({"name": "planetary-computer", "signed_hosts": [H[7:], "127.0.0.1"]}, None),
    "name-not-text": lambda H: ({"name": {"planetary-computer": True}, "token_url": H + "/token"}, None),
    "field-as-list": lambda H: ([{"name": "planetary-computer", "token_url": H + "/token"}], None),
    "unknown-name-with-url": lambda H: ({"name": "mirror", "url": H + "/stac", "signing": "planetary-computer",
                                         "token_url": H + "/token", "signed_hosts": [H[7:]]}, None),
}


@pytest.mark.parametrize("case", list(CATALOG_FIELDS))
def test_c02_an_item_collection_cannot_choose_where_the_key_goes(case, monkeypatch, tmp_path):
    from thermocrop.core.scenes.stac import reader_for

    monkeypatch.setenv("PC_SDK_SUBSCRIPTION_KEY", KEY)
    with Server(lambda r: as_json({"token": "sig=stolen", "msft:expiry": "2099-01-01T00:00:00Z"})) as hostile:
        catalog, item_field = CATALOG_FIELDS[case](hostile.url)
        href = hostile.url + "/B04.tif"
        collection = _collection([_item(0, href)], catalog, item_field=item_field)
        reader = reader_for(collection, cache_dir=tmp_path / "cache")
        signer = getattr(reader, "signer", None)
        if signer is not None:
            assert signer.sign(href, "sentinel-2-l2a") == href
            assert hostile.netloc not in signer.token_url
        assert not hostile.saw(KEY) and hostile.requests == []


def test_c02_a_nested_s3_endpoint_is_ignored(monkeypatch, tmp_path):
    from osgeo import gdal

    from thermocrop.core.scenes.stac import CATALOGS, reader_for

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "CAMPAIGNKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("AWS_S3_ENDPOINT", raising=False)
    try:
        collection = _collection([_item(0, "s3://eodata/Sentinel-2/B04.jp2")],
                                 {"name": "cdse", "s3": {"endpoint": "127.0.0.1:9"},
                                  "gdal": {"AWS_S3_ENDPOINT": "127.0.0.1:9"}},
                                 item_field={"s3_endpoint": "127.0.0.1:9"})
        options = reader_for(collection, cache_dir=tmp_path).gdal_options()
        assert options.get("AWS_S3_ENDPOINT") == CATALOGS["cdse"].s3_endpoint
    finally:
        gdal.ClearPathSpecificOptions("/vsis3/eodata")


# ============================================================================================
# 3. Hrefs a catalogue controls reach no local file outside its folder


def _items_file(folder: Path, href: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "items.json"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [_item(0, href)]}))
    return path


@pytest.mark.parametrize("href", [
    "file:///%2e%2e/%2e%2e/etc/hosts",
    "FILE:///etc/hosts",
    "file://localhost/etc/hosts",
    "file:/etc/hosts",
    " /vsicurl/http://127.0.0.1:9/B04.tif",
    "/VSIZIP//tmp/x.zip/B04.tif",
    "\\vsicurl\\http://127.0.0.1:9/B04.tif",
    "https:///etc/hosts",
    "gs://bucket/B04.tif",
    "sub/../../../../../../etc/hosts",
    "ok.tif\x00/../../../etc/hosts",
    "link.tif",
])
def test_c03_hrefs_outside_the_folder_are_refused_by_name(href, tmp_path, capsys):
    from thermocrop.core.scenes.stac import load_items

    folder = tmp_path / "collection"
    folder.mkdir()
    (folder / "link.tif").symlink_to("/etc/hosts")
    path = _items_file(folder, href)
    try:
        collection = load_items(path)
    except InputError as exc:
        assert "refused" in str(exc) and "S2A_31TCJ" in str(exc)
        code, text = run(capsys, "scenes", "show", path)
        answered_well(code, text, (EXIT_INPUT,), "refused")
    else:
        resolved = next(iter(collection)).assets["red"].href
        assert resolved.startswith(str(folder.resolve()) + os.sep) or resolved.strip().startswith(("http", "s3"))
        assert "etc/hosts" not in resolved or resolved.startswith(str(folder.resolve()))


def test_c03_a_vrt_inside_the_folder_reads_no_file_or_host_outside_it(tmp_path, capsys):
    """A local VRT the item collection names lies inside the folder, but its sources can be
    anywhere: another user's file, or a host that then sees the request."""
    from rasterio.windows import Window

    from thermocrop.core.scenes.stac import scenes_from_files

    with Server(lambda r: (404, {}, b"")) as hostile:
        folder = tmp_path / "collection"
        folder.mkdir()
        vrt = (f'<VRTDataset rasterXSize="100" rasterYSize="100"><SRS>EPSG:32631</SRS>'
               f'<GeoTransform>300000,10,0,4900020,0,-10</GeoTransform>'
               f'<VRTRasterBand dataType="UInt16" band="1"><SimpleSource>'
               f'<SourceFilename relativeToVRT="0">/vsicurl/{hostile.url}/secret.tif</SourceFilename>'
               f'<SourceBand>1</SourceBand></SimpleSource></VRTRasterBand></VRTDataset>')
        (folder / "B04.vrt").write_text(vrt)
        item = _item(0, "B04.vrt")
        item["assets"] = {b: {"href": "B04.vrt", "type": "image/tiff"} for b in
                          ("blue", "green", "red", "nir", "rededge1", "rededge2", "rededge3", "nir08", "swir16",
                           "swir22", "scl")}
        path = folder / "items.json"
        path.write_text(json.dumps({"type": "FeatureCollection", "features": [item]}))
        try:
            scenes = scenes_from_files([path])
            for scene in scenes:
                for product in scene.products:
                    with product.open() as reader:
                        reader.read(Window(0, 0, 10, 10))
        except ThermoCropError:
            pass
        except Exception as exc:  # noqa: BLE001 - a crash is also an answer, judged below
            pytest.fail(f"{type(exc).__name__}: {exc}")
        assert hostile.requests == []


# ============================================================================================
# 4. Text from data is inert where it lands (CSV, HTML)


FORMULAS = ["\t=1+1", "\r=cmd", "=HYPERLINK(\"http://x\")", "+1+cmd", "-2+3", "@SUM(A1)", "\n=1+2"]


def test_c04_gdd_csv_cells_and_header_are_inert(work, capsys):
    import csv

    parcels = write_parcels(work / "hostile.gpkg", FORMULAS, field="=cmd|x")
    code, text = run(capsys, *gdd(parcels, work / "weather.csv", work / "g.csv", "--id-field", "=cmd|x"))
    answered_well(code, text, (0,))
    with open(work / "g.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    cells = [c for r in rows for c in r if not c.replace(".", "").isdigit()]
    assert all(not c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells), cells


HTML_HOSTILE = "<script>alert(1)</script>"


@pytest.fixture
def accuracy_layer(tmp_path) -> Path:
    pred = [HTML_HOSTILE, HTML_HOSTILE, "\"><img src=x onerror=alert(2)>", "wheat", "wheat", HTML_HOSTILE]
    ref = [HTML_HOSTILE, "wheat", "\"><img src=x onerror=alert(2)>", "wheat", HTML_HOSTILE, HTML_HOSTILE]
    return write_parcels(tmp_path / "acc.gpkg", [f"p{i}" for i in range(6)],
                         more={"<b>pred</b>": pred, "ref<svg onload=alert(3)>": ref})


def _no_live_markup(page: str) -> None:
    assert "<script>alert" not in page and "<img src=x" not in page and "<svg onload" not in page
    assert "<b>pred</b>" not in page


@pytest.mark.parametrize("unit", ["ha", "<i onmouseover=alert(4)>ha</i>"])
def test_c04_the_html_report_escapes_class_and_field_names(accuracy_layer, unit, tmp_path, capsys):
    out = tmp_path / "report.html"
    code, text = run(capsys, "accuracy", "--layer", accuracy_layer, "--predicted", "<b>pred</b>", "--reference",
                     "ref<svg onload=alert(3)>", "--weighting", "count", "--area-unit", unit, "--html", out,
                     "--csv", tmp_path / "r.csv")
    if code == 0:
        page = out.read_text()
        _no_live_markup(page)
        assert "<i onmouseover" not in page
        assert html.escape(HTML_HOSTILE) in page or "&lt;script&gt;" in page
    else:
        answered_well(code, text, (2, 3), "unit")


def test_c04_the_html_report_escapes_the_layer_name(tmp_path, capsys):
    folder = tmp_path / "<img src=x onerror=alert(5)>"
    folder.mkdir()
    layer = write_parcels(folder / "a.gpkg", ["a", "b", "c"], more={"pred": ["x", "y", "x"],
                                                                    "ref": ["x", "<script>alert(6)</script>", "y"]})
    out = tmp_path / "r.html"
    code, text = run(capsys, "accuracy", "--layer", layer, "--predicted", "pred", "--reference", "ref",
                     "--weighting", "count", "--html", out)
    answered_well(code, text, (0,))
    page = out.read_text()
    assert "<script>alert(6)" not in page and "<img src=x" not in page


# ============================================================================================
# 5. No secret in what is printed or logged, at any verbosity


@pytest.mark.parametrize("url", [
    "http://user:{pw}@{H}/stac",
    "http://{H}/stac?subscription-key={pw}",
    "http://{H}/stac?apikey={pw}",
])
def test_c05_a_catalogue_url_with_a_secret_is_never_echoed(url, work, capsys, caplog):
    with Server(lambda r: (500, {"Content-Type": "text/plain"}, f"error for {r['path']}".encode())) as server:
        catalog = url.format(pw=SECRET, H=server.netloc)
        with caplog.at_level(logging.DEBUG):
            code, text = run(capsys, "-v", "scenes", "search", "--parcels", work / "parcels.gpkg", "--catalog",
                             catalog, "--season", "2023", "--out", work / "items.json")
        answered_well(code, text, NAMED, server.netloc)
        assert SECRET not in text and SECRET not in caplog.text


def test_c05_s3_keys_and_the_subscription_key_stay_out_of_debug_logs(tmp_path, monkeypatch, capfd):
    """Every key in the environment, a run at -v that fails while reading remote assets."""
    items = tmp_path / "items.json"
    items.write_text(json.dumps({"type": "FeatureCollection", "features": [_item(0, "s3://eodata/x/B04.jp2")],
                                 "thermocrop:catalog": {"name": "cdse"}}))
    parcels = write_parcels(tmp_path / "p.gpkg", ["a"])
    weather_csv(tmp_path / "w.csv", start="2017-01-01", end="2018-01-01")
    env = {"AWS_ACCESS_KEY_ID": "CAMPAIGNKEYID", "AWS_SECRET_ACCESS_KEY": SECRET, "PC_SDK_SUBSCRIPTION_KEY": KEY,
           "AWS_S3_ENDPOINT": "127.0.0.1:9", "AWS_HTTPS": "NO", "CDSAPI_KEY": "cds-" + SECRET,
           "CPL_DEBUG": "ON", "CPL_CURL_VERBOSE": "YES", "THERMOCROP_NETWORK_DEADLINE": "10"}
    code, text = cli("-v", "gdd", "--parcels", str(parcels), "--weather", str(tmp_path / "w.csv"), "--stac",
                     str(items), "--out", str(tmp_path / "g.csv"), env=env, timeout=120)
    assert SECRET not in text and KEY not in text
    assert "Traceback" not in text


# ============================================================================================
# 6. An output is never one of the inputs, under any name


def _outputs_equal_to_inputs(work: Path) -> dict[str, tuple[list, Path]]:
    w, p = work / "weather.csv", work / "parcels.gpkg"
    (work / "sub").mkdir(exist_ok=True)
    return {
        "weather-by-hard-link": (lambda: os.link(w, work / "hard.csv"), gdd(p, w, work / "hard.csv", "--overwrite"), w),
        "weather-through-a-linked-folder": (lambda: os.symlink(work, work / "linked"),
                                            gdd(p, w, work / "linked" / "weather.csv", "--overwrite"), w),
        "weather-with-double-slashes": (None, gdd(p, w, str(work) + "//sub/..//weather.csv", "--overwrite"), w),
        "weather-through-proc-cwd": (None, gdd(p, w, "/proc/self/cwd/weather.csv", "--overwrite"), w),
        "tmax-file-by-symlink": (lambda: os.symlink(w, work / "tmax-link.csv"),
                                 gdd(p, w, work / "tmax-link.csv", "--overwrite", "--tmax-file", w), w),
        "parcels-as-csv-by-hard-link": (lambda: os.link(p, work / "p.csv"),
                                        gdd(p, w, work / "p.csv", "--overwrite"), p),
        "weather-by-relative-name": (None, gdd("parcels.gpkg", "./weather.csv", "weather.csv", "--overwrite"), w),
    }


@pytest.mark.parametrize("case", ["weather-by-hard-link", "weather-through-a-linked-folder",
                                  "weather-with-double-slashes", "weather-through-proc-cwd", "tmax-file-by-symlink",
                                  "parcels-as-csv-by-hard-link", "weather-by-relative-name"])
def test_c06_gdd_never_writes_over_an_input(case, work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    prepare, args, victim = _outputs_equal_to_inputs(work)[case]
    if prepare:
        prepare()
    before = digest(victim)
    code, text = run(capsys, *args)
    assert digest(victim) == before
    answered_well(code, text, (EXIT_OUTPUT,))


def test_c06_accuracy_json_over_the_class_area_table_by_hard_link(tmp_path, capsys):
    layer = write_parcels(tmp_path / "a.gpkg", ["a", "b", "c"], more={"pred": ["x", "y", "x"], "ref": ["x", "y", "y"]})
    areas = tmp_path / "areas.csv"
    areas.write_text("class,area\nx,10\ny,20\n")
    os.link(areas, tmp_path / "scores.json")
    before = digest(areas)
    code, text = run(capsys, "accuracy", "--layer", layer, "--predicted", "pred", "--reference", "ref",
                     "--class-areas", areas, "--html", tmp_path / "r.html", "--json", tmp_path / "scores.json",
                     "--overwrite")
    assert digest(areas) == before
    answered_well(code, text, (EXIT_OUTPUT,))


def test_c06_accuracy_csv_over_the_layer_through_a_linked_folder(tmp_path, capsys):
    layer = write_parcels(tmp_path / "a.gpkg", ["a", "b", "c"], more={"pred": ["x", "y", "x"], "ref": ["x", "y", "y"]})
    os.symlink(tmp_path, tmp_path / "again")
    before = digest(layer)
    code, text = run(capsys, "accuracy", "--layer", layer, "--predicted", "pred", "--reference", "ref",
                     "--html", tmp_path / "r.html", "--matrix-csv", tmp_path / "again" / "a.gpkg", "--overwrite")
    assert digest(layer) == before
    answered_well(code, text, (EXIT_OUTPUT,))


def _table(path: Path) -> Path:
    rows = ["parcel_id,date,B02,B03,B04,B05,B06,B07,B08,B8A,B11,B12,label"]
    for i in range(4):
        for d in ("2023-04-01", "2023-05-01", "2023-06-01"):
            bands = ",".join(str(500 + 10 * k + i) for k in range(10))
            rows.append(f"p{i},{d},{bands},{['wheat', 'corn'][i % 2]}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("where", ["folder-holding-the-table", "parent-of-the-table"])
def test_c06_a_dataset_output_over_the_folder_of_its_input(where, tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    table = _table(folder / "t.csv")
    out = folder if where == "folder-holding-the-table" else tmp_path
    before = digest(table)
    code, text = run(capsys, "import", "table", table, "--label-column", "label", "--weather",
                     weather_csv(tmp_path / "w.csv"), "--out", out, "--overwrite")
    assert table.exists() and digest(table) == before
    answered_well(code, text, (EXIT_OUTPUT, EXIT_INPUT))


# ============================================================================================
# 7. Another program's open SQLite transaction or WAL writer


HOLD = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
mode = sys.argv[2]
if mode == "exclusive":
    con.execute("BEGIN EXCLUSIVE"); con.execute("CREATE TABLE other_program(x)")
elif mode == "wal-reader":
    con.execute("PRAGMA journal_mode=WAL"); con.execute("BEGIN")
    con.execute("SELECT count(*) FROM sqlite_master").fetchall()
elif mode == "wal-unsaved":
    con.execute("PRAGMA journal_mode=WAL"); con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("CREATE TABLE other_program(x)"); con.execute("INSERT INTO other_program VALUES (42)")
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("mode", ["exclusive", "wal-reader"])
def test_c07_another_programs_hold_on_the_output_geopackage_stops_the_run(mode, work, capsys):
    out = write_parcels(work / "out.gpkg", ["x"], layer="mine")
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out), mode], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        code, text = run(capsys, *gdd(work / "parcels.gpkg", work / "weather.csv", out, "--overwrite"))
        answered_well(code, text, (EXIT_OUTPUT,), "in use")
    finally:
        proc.kill()
        proc.wait()


def test_c07_committed_rows_left_in_a_wal_by_a_killed_program_survive(work, capsys):
    out = write_parcels(work / "out.gpkg", ["x"], layer="mine")
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out), "wal-unsaved"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.kill()  # dies with its commit in the -wal only
    proc.wait()
    code, text = run(capsys, *gdd(work / "parcels.gpkg", work / "weather.csv", out, "--overwrite",
                                  "--out-layer", "gdd"))
    assert code in (0, EXIT_OUTPUT) and "Traceback" not in text
    con = sqlite3.connect(out)
    try:
        assert con.execute("SELECT x FROM other_program").fetchall() == [(42,)]
    finally:
        con.close()


# ============================================================================================
# 8. Cleanup removes only what a run made


def test_c08_a_link_named_like_a_dead_runs_staging_is_not_followed(work, capsys):
    import socket

    target = work / "precious"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    token = "0123456789abcdef"
    (target / ".thermocrop-staging").write_text(token)
    name = f".thermocrop-partial.999999.1.{token}.{socket.gethostname()}"
    os.symlink(target, work / name)
    code, text = run(capsys, *gdd(work / "parcels.gpkg", work / "weather.csv", work / "g.csv"))
    answered_well(code, text, (0,))
    assert (target / "notes.txt").read_text() == "mine" and (work / name).is_symlink()


def test_c08_a_staging_marker_that_is_a_link_does_not_count(work, capsys):
    import socket

    token = "fedcba9876543210"
    elsewhere = work / "elsewhere.txt"
    elsewhere.write_text(token)
    folder = work / f".thermocrop-partial.999998.1.{token}.{socket.gethostname()}"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    os.symlink(elsewhere, folder / ".thermocrop-staging")
    code, text = run(capsys, *gdd(work / "parcels.gpkg", work / "weather.csv", work / "g.csv"))
    answered_well(code, text, (0,))
    assert (folder / "notes.txt").read_text() == "mine" and elsewhere.read_text() == token


def test_c08_a_run_folder_that_holds_the_users_files_keeps_them(work, capsys):
    run_folder = work / "mine"
    run_folder.mkdir()
    (run_folder / "notes.txt").write_text("mine")
    (run_folder / "part-00000-draft.csv").write_text("mine too")
    code, text = run(capsys, *gdd(work / "parcels.gpkg", work / "weather.csv", work / "g.csv", "--run-folder",
                                  run_folder, "--chunk-size", "2"))
    assert "Traceback" not in text and code in (0, EXIT_OUTPUT)
    assert (run_folder / "notes.txt").read_text() == "mine"
    assert (run_folder / "part-00000-draft.csv").read_text() == "mine too"


def test_c08_overwriting_a_dataset_keeps_the_users_other_files_or_refuses(tmp_path, capsys):
    table = _table(tmp_path / "t.csv")
    weather = weather_csv(tmp_path / "w.csv")
    out = tmp_path / "ds"
    code, text = run(capsys, "import", "table", table, "--label-column", "label", "--weather", weather, "--out", out)
    answered_well(code, text, (0,))
    (out / "my-notes.txt").write_text("field notes")
    code, text = run(capsys, "import", "table", table, "--label-column", "label", "--weather", weather, "--out", out,
                     "--overwrite")
    assert "Traceback" not in text
    assert (out / "my-notes.txt").read_text() == "field notes"
    answered_well(code, text, (0, EXIT_OUTPUT), *(("not a ThermoCrop",) if code else ()))


# ============================================================================================
# 9. --resume with changed inputs


def _interrupted_gdd_run(work: Path, n: int = 3000) -> tuple[Path, list[str]]:
    parcels = write_parcels(work / "many.gpkg", [f"p{i}" for i in range(n)])
    run_folder = work / "run"
    args = gdd(parcels, work / "weather.csv", work / "g.csv", "--run-folder", run_folder, "--chunk-size", "50")
    env = dict(os.environ, PYTHONPATH=str(REPO.parent))
    proc = subprocess.Popen([sys.executable, "-m", "thermocrop.cli.main", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(run_folder.glob("part-*")) and proc.poll() is None:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    if not list(run_folder.glob("part-*")):
        pytest.skip("the run ended before a partition was written")
    return run_folder, args


@pytest.mark.slow
@pytest.mark.parametrize("change", ["weather-same-size-and-time", "t-base-option"])
def test_c09_resume_refuses_what_changed(change, work, capsys):
    run_folder, args = _interrupted_gdd_run(work)
    w = work / "weather.csv"
    if change == "weather-same-size-and-time":
        st = w.stat()
        w.write_text(w.read_text().replace(",12.0\n", ",13.0\n", 1))
        os.utime(w, ns=(st.st_atime_ns, st.st_mtime_ns))
        args = args + ["--resume"]
    else:
        args = args + ["--resume", "--t-base", "8"]
    code, text = run(capsys, *args)
    assert not (work / "g.csv").exists()
    answered_well(code, text, (EXIT_OUTPUT, EXIT_INPUT, 2), "resum")


# ============================================================================================
# 11. Missing pieces, values out of range: named, never zeros, never clipped silently


@pytest.mark.parametrize("damage", ["drop-an-array", "truncate-an-array", "dataset-json-more-parcels",
                                    "dataset-json-not-json"])
def test_c11_a_damaged_dataset_is_named(damage, tmp_path, capsys):
    from thermocrop.core.pixel_sets import open_dataset

    out = tmp_path / "ds"
    code, text = run(capsys, "import", "table", _table(tmp_path / "t.csv"), "--label-column", "label", "--weather",
                     weather_csv(tmp_path / "w.csv"), "--out", out)
    answered_well(code, text, (0,))
    arrays = sorted(out.glob("*.npy"))
    if damage == "drop-an-array":
        arrays[0].unlink()
    elif damage == "truncate-an-array":
        data = arrays[0].read_bytes()
        arrays[0].write_bytes(data[: len(data) - 8])
    elif damage == "dataset-json-more-parcels":
        meta = json.loads((out / "dataset.json").read_text())
        for key in ("n_parcels", "parcels"):
            if isinstance(meta.get(key), int):
                meta[key] = meta[key] + 5
        (out / "dataset.json").write_text(json.dumps(meta))
        if json.loads((out / "dataset.json").read_text()) == json.loads(json.dumps(meta)) and "n_parcels" not in meta \
                and "parcels" not in meta:
            pytest.skip("dataset.json names no parcel count")
    else:
        (out / "dataset.json").write_text("{not json")
    named(lambda: open_dataset(out).pixels.sum(), "ds", error=InputError)


@pytest.mark.parametrize("cell, words", [("nan", []), ("", []), ("1e400", ["inf"]), ("-inf", ["inf"]), ("75", ["75"]),
                                         ("-273.15", [])])
def test_c11_a_weather_cell_out_of_range_or_missing_is_named_or_counted(cell, words, work, capsys, caplog):
    def rows(lines):
        lines[100][2] = cell
        return lines

    weather_csv(work / "weather.csv", rows=rows)
    with caplog.at_level(logging.WARNING):
        code, text = run(capsys, *gdd(work / "parcels.gpkg", work / "weather.csv", work / "g.csv"))
    said = text + caplog.text
    if code == 0:
        assert "2023-04-11" in said or "1 day" in said or "missing" in said.lower(), said[-1500:]
    else:
        answered_well(code, said, (EXIT_INPUT,), "weather.csv", *words)


# ============================================================================================
# 12. Bad weather answers are never cached for good


def _open_meteo(mutate: Callable[[dict, dict], Any]):
    def answer(request):
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(request["path"]).query)
        lats = [float(v) for v in q["latitude"][0].split(",")]
        lons = [float(v) for v in q["longitude"][0].split(",")]
        start = np.datetime64(q["start_date"][0])
        end = np.datetime64(q["end_date"][0])
        days = [str(d) for d in np.arange(start, end + 1)]
        answers = [{"latitude": round(la, 1), "longitude": round(lo, 1), "elevation": 100.0,
                    "daily_units": {"time": "iso8601", "temperature_2m_min": "°C", "temperature_2m_max": "°C"},
                    "daily": {"time": list(days), "temperature_2m_min": [2.0] * len(days),
                              "temperature_2m_max": [12.0] * len(days)}} for la, lo in zip(lats, lons)]
        result = mutate(answers[0], q) if len(answers) == 1 else [mutate(a, q) for a in answers][0:len(answers)]
        if isinstance(result, tuple):
            return result
        return as_json(answers if len(answers) > 1 else answers[0])

    return answer


def _drop_last_days(a, q):
    for k in a["daily"]:
        a["daily"][k] = a["daily"][k][:-5]


def _repeat_a_day(a, q):
    a["daily"]["time"][3] = a["daily"]["time"][2]


def _far_away(a, q):
    a["latitude"] += 12.0


def _web_page(a, q):
    return 200, {"Content-Type": "text/html"}, b"<html><body>Maintenance</body></html>"


def _absurd(a, q):
    a["daily"]["temperature_2m_max"][4] = 999.0


def _no_daily(a, q):
    del a["daily"]


def _us_dates(a, q):
    a["daily"]["time"] = [f"{d[5:7]}/{d[8:10]}/{d[:4]}" for d in a["daily"]["time"]]


def _lon_not_a_number(a, q):
    a["longitude"] = "east"


@pytest.mark.parametrize("mutate", [_drop_last_days, _repeat_a_day, _far_away, _lon_not_a_number, _web_page, _absurd,
                                    _no_daily, _us_dates], ids=lambda f: f.__name__.strip("_"))
def test_c12_a_bad_weather_answer_is_refused_and_asked_again(mutate, tmp_path):
    from thermocrop.core.errors import WeatherError
    from thermocrop.core.thermal.weather_services import fetch_open_meteo

    lon, lat = np.array([1.2]), np.array([43.7])
    with Server(_open_meteo(mutate)) as server:
        for attempt in (1, 2):
            named(lambda: fetch_open_meteo(lon, lat, "2024-01-01", "2024-01-31", cache_dir=tmp_path,
                                           url=server.url + "/v1/archive", deadline=20),
                  "Open-Meteo", error=WeatherError)
            assert len(server.requests) >= attempt  # the refused answer was not reused


# ============================================================================================
# 13. Deadlines: no search, download or wait runs past its deadline


def _stac(pages: Callable[[int, str], tuple]):
    """A STAC API whose search page ``n`` (token ``n``, 0 first) is ``pages(n, base)``."""
    holder: dict = {}

    def answer(request):
        base = holder["url"]
        parts = urllib.parse.urlsplit(request["path"])
        if parts.path in ("/stac", "/stac/"):
            return as_json({"type": "Catalog", "id": "c", "description": "c", "stac_version": "1.0.0",
                            "conformsTo": STAC_CONFORMANCE,
                            "links": [{"rel": "self", "href": base + "/stac"}, {"rel": "root", "href": base + "/stac"},
                                      {"rel": "search", "href": base + "/stac/search", "method": "GET",
                                       "type": "application/geo+json"},
                                      {"rel": "search", "href": base + "/stac/search", "method": "POST",
                                       "type": "application/geo+json"}]})
        if parts.path == "/stac/search":
            q = urllib.parse.parse_qs(parts.query)
            token = q.get("token", [None])[0]
            if token is None and request["body"]:
                token = json.loads(request["body"]).get("token")
            return pages(int(token or 0), base)
        return 404, {}, b""

    return holder, answer


def _page(features: list, next_token: Optional[int], base: str) -> tuple:
    links = []
    if next_token is not None:
        links.append({"rel": "next", "href": f"{base}/stac/search?token={next_token}", "method": "GET"})
    return as_json({"type": "FeatureCollection", "features": features, "links": links})


PAGINGS = {
    "next-cycles-between-two-pages": lambda n, b: _page([_item(n % 2, "https://x/B04.tif")], (n + 1) % 2, b),
    "next-cycles-through-three-pages": lambda n, b: _page([_item(n % 3, "https://x/B04.tif")], (n + 1) % 3, b),
    "empty-pages-to-themselves": lambda n, b: _page([], n, b),
    "empty-pages-without-end": lambda n, b: _page([], n + 1, b),
    "same-item-on-every-new-page": lambda n, b: _page([_item(0, "https://x/B04.tif")], n + 1, b),
}


@pytest.mark.parametrize("case", list(PAGINGS))
def test_c13_broken_paging_ends_with_a_named_error_in_time(case, monkeypatch):
    from thermocrop.core.scenes.stac import search_items

    monkeypatch.setenv("THERMOCROP_NETWORK_DEADLINE", "4")
    holder, answer = _stac(PAGINGS[case])
    with Server(answer) as server:
        holder["url"] = server.url
        began = time.monotonic()
        try:
            found = search_items((0.0, 40.0, 3.0, 46.0), season=2017, catalog=server.url + "/stac",
                                 max_cloud=100, method="GET", page_size=1, deadline=4)
        except InputError as exc:
            assert server.netloc in str(exc)
        else:  # an empty page ends the search: no item is made up
            assert len(found) <= 3
        assert time.monotonic() - began < 8


@pytest.mark.parametrize("value", ["-5", "1e308", "99999999999999999999999", "Wed, 21 Oct 2099 07:28:00 GMT",
                                   "soon", "0x10"])
def test_c13_odd_retry_after_values_are_capped(value, monkeypatch):
    from thermocrop.core.scenes.stac import search_items

    monkeypatch.setenv("THERMOCROP_MAX_RETRY_WAIT", "0.3")
    state = {"n": 0}

    def page(n, base):
        state["n"] += 1
        if state["n"] == 1:
            return 503, {"Retry-After": value, "Content-Type": "text/plain"}, b"busy"
        return _page([_item(0, "https://x/B04.tif")], None, base)

    holder, answer = _stac(page)
    with Server(answer) as server:
        holder["url"] = server.url
        began = time.monotonic()
        try:
            found = search_items((0.0, 40.0, 3.0, 46.0), season=2017, catalog=server.url + "/stac",
                                 max_cloud=100, method="GET", deadline=10)
        except InputError as exc:  # refusing the header is an answer too, if it says which
            assert "Retry-After" in str(exc) and server.netloc in str(exc)
        else:
            assert len(found) == 1
        assert time.monotonic() - began < 8


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="a search page whose body arrives one byte at a time never trips the "
                   "per-read time-out, and the deadline is checked only between pages: 'scenes search' with "
                   "THERMOCROP_NETWORK_DEADLINE=3 ran 22 s, until the server stopped (core/scenes/stac.py, "
                   "core/io/http_session.py: bound the whole response read by the deadline)")
def test_c13_a_search_answer_that_drips_forever_stops_at_the_deadline(work):
    holder, answer = _stac(lambda n, b: (200, {"Content-Type": "application/geo+json"}, drip))
    with Server(answer) as server:
        holder["url"] = server.url
        began = time.monotonic()
        code, text = cli("scenes", "search", "--parcels", str(work / "parcels.gpkg"), "--catalog",
                         server.url + "/stac", "--season", "2023", "--out", str(work / "items.json"),
                         env={"THERMOCROP_NETWORK_DEADLINE": "3"}, timeout=40)
        took = time.monotonic() - began
        answered_well(code, text, NAMED, server.netloc)
        assert took < 15, f"took {took:.0f} s with a deadline of 3 s"


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="an Open-Meteo answer dripping one byte at a time runs past deadline=3 "
                   "until the server stops (20 s): the deadline is not applied to reading the body "
                   "(core/thermal/weather_services.py, core/io/http_session.py)")
def test_c13_a_weather_answer_that_drips_forever_stops_at_the_deadline(tmp_path):
    from thermocrop.core.errors import WeatherError
    from thermocrop.core.thermal.weather_services import fetch_open_meteo

    with Server(lambda r: (200, {"Content-Type": "application/json"}, drip)) as server:
        began = time.monotonic()
        named(lambda: fetch_open_meteo(np.array([1.2]), np.array([43.7]), "2024-01-01", "2024-01-31",
                                       cache_dir=tmp_path, url=server.url + "/v1/archive", timeout=1, deadline=3),
              server.netloc, error=WeatherError)
        assert time.monotonic() - began < 8


def test_c13_ctrl_c_during_a_stalled_search_stops_within_two_seconds(work):
    holder, answer = _stac(lambda n, b: (200, {"Content-Type": "application/geo+json"}, stall))
    with Server(answer) as server:
        holder["url"] = server.url
        env = dict(os.environ, PYTHONPATH=str(REPO.parent))
        proc = subprocess.Popen([sys.executable, "-m", "thermocrop.cli.main", "scenes", "search", "--parcels",
                                 str(work / "parcels.gpkg"), "--catalog", server.url + "/stac", "--season", "2023",
                                 "--out", str(work / "items.json")], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("search" in r["path"] for r in server.requests):
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        began = time.monotonic()
        try:
            out, _ = proc.communicate(timeout=10)
        finally:
            proc.kill()
        assert time.monotonic() - began < 2.5
        assert proc.returncode == EXIT_INTERRUPTED and "Traceback" not in out


# ============================================================================================
# 14. Sizes are checked before anything is allocated


def _bundle_with_header(path: Path, header: dict, data: bytes = b"") -> Path:
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path


TCM_HEADERS = {
    "negative-offset": ({"__metadata__": {"thermocrop": "{}"}, "w": {"dtype": "F32", "shape": [2],
                                                                       "data_offsets": [-8, 0]}}, b"\x00" * 8),
    "offsets-reversed": ({"__metadata__": {"thermocrop": "{}"}, "w": {"dtype": "F32", "shape": [0],
                                                                        "data_offsets": [8, 8]}}, b"\x00" * 8),
    "shape-of-exabytes": ({"__metadata__": {"thermocrop": "{}"}, "w": {"dtype": "F32", "shape": [2 ** 31, 2 ** 31],
                                                                         "data_offsets": [0, 8]}}, b"\x00" * 8),
    "float-offsets": ({"__metadata__": {"thermocrop": "{}"}, "w": {"dtype": "F32", "shape": [2],
                                                                     "data_offsets": [0.0, 8.0]}}, b"\x00" * 8),
    "metadata-not-text": ({"__metadata__": {"thermocrop": {"nested": [1] * 10}}}, b""),
    "huge-header-length": (None, b""),
}


@pytest.mark.parametrize("case", list(TCM_HEADERS))
def test_c14_hostile_bundle_headers_are_refused_without_reading(case, tmp_path, capsys, base):
    header, data = TCM_HEADERS[case]
    path = tmp_path / "model.tcm"
    if header is None:
        path.write_bytes(struct.pack("<Q", 2 ** 63) + b"{}")
    else:
        _bundle_with_header(path, header, data)
    from thermocrop.core.errors import BundleError
    from thermocrop.core.model.bundle import load_bundle

    named(lambda: load_bundle(path), "model.tcm", error=BundleError)


def test_c14_a_tcm_with_duplicate_tensor_names_is_refused(tmp_path, capsys, base):
    text = ('{"__metadata__": {"thermocrop": "{}"}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
            '"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}').encode()
    path = tmp_path / "model.tcm"
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"\x00" * 8)
    from thermocrop.core.errors import BundleError
    from thermocrop.core.model.bundle import load_bundle

    named(lambda: load_bundle(path), "model.tcm", error=BundleError)


def test_c14_a_pickle_asking_for_a_terabyte_is_refused(tmp_path):
    from thermocrop.training.importers.safe_pickle import safe_loads

    # bytearray(10**12): a few bytes that ask for a terabyte.
    data = b"\x80\x02c__builtin__\nbytearray\nq\x00\x8a\x06\x00\x10\xa5\xd4\xe8\x00\x85q\x01Rq\x02."
    named(lambda: safe_loads(data, "weather_data.pkl"), "weather_data.pkl", error=InputError)


def test_c14_an_items_file_nested_ten_thousand_deep_is_named(tmp_path, capsys):
    path = tmp_path / "items.json"
    path.write_text('{"type": "FeatureCollection", "features": [' + "[" * 10000 + "]" * 10000 + "]}")
    code, text = run(capsys, "scenes", "show", path)
    answered_well(code, text, (EXIT_INPUT,), "items.json")


# ============================================================================================
# 15. Named errors, not tracebacks


ITEMS_DAMAGE = {
    "top-level-list": "[]",
    "features-null": '{"type": "FeatureCollection", "features": null}',
    "feature-a-number": '{"type": "FeatureCollection", "features": [1]}',
    "feature-without-id": '{"type": "FeatureCollection", "features": [{"type": "Feature"}]}',
    "href-a-number": json.dumps({"type": "FeatureCollection", "features": [_item(0, 12)]}),
    "datetime-not-a-date": json.dumps({"type": "FeatureCollection", "features": [
        dict(_item(0, "https://x/B04.tif"), properties={"datetime": "yesterday"})]}),
    "bbox-text": json.dumps({"type": "FeatureCollection", "features": [
        dict(_item(0, "https://x/B04.tif"), bbox="0,40,3,46")]}),
    "infinite-cloud": '{"type": "FeatureCollection", "features": [' + json.dumps(_item(0, "https://x/B04.tif")).replace(
        '"eo:cloud_cover": 5.0', '"eo:cloud_cover": 1e999') + "]}",
    "invalid-utf8": None,
    "empty-file": "",
    "assets-a-list": json.dumps({"type": "FeatureCollection", "features": [
        dict(_item(0, "https://x/B04.tif"), assets=[{"href": "https://x/B04.tif"}])]}),
}


@pytest.mark.parametrize("case", list(ITEMS_DAMAGE))
def test_c15_a_malformed_item_collection_is_a_named_error(case, tmp_path, capsys):
    path = tmp_path / "items.json"
    if ITEMS_DAMAGE[case] is None:
        path.write_bytes(b'{"type": "FeatureCollection", "features": [\xff\xfe]}')
    else:
        path.write_text(ITEMS_DAMAGE[case])
    code, text = run(capsys, "scenes", "show", path)
    answered_well(code, text, (EXIT_INPUT, 0), ("cloud" if case == "infinite-cloud" else "items.json") if code else "")


def test_c15_a_block_cache_that_is_a_file_is_named(tmp_path, capsys, base):
    items = _items_file(tmp_path / "c", "https://127.0.0.1:9/B04.tif")
    (tmp_path / "cache").write_text("a file, not a folder")
    code, text = run(capsys, "gdd", "--parcels", base / "parcels.gpkg", "--weather", base / "weather.csv", "--stac",
                     items, "--cache", tmp_path / "cache", "--out", tmp_path / "g.csv")
    answered_well(code, text, NAMED)


@pytest.mark.parametrize("target", ["/dev/full", "over-long", "parent-is-a-file"])
def test_c15_reports_that_cannot_be_written_are_named(target, tmp_path, capsys):
    layer = write_parcels(tmp_path / "a.gpkg", ["a", "b", "c"], more={"pred": ["x", "y", "x"], "ref": ["x", "y", "y"]})
    (tmp_path / "file").write_text("x")
    html_out = {"/dev/full": Path("/dev/full"), "over-long": tmp_path / ("r" * 300 + ".html"),
                "parent-is-a-file": tmp_path / "file" / "r.html"}[target]
    code, text = run(capsys, "accuracy", "--layer", layer, "--predicted", "pred", "--reference", "ref",
                     "--html", html_out, "--overwrite")
    answered_well(code, text, (EXIT_OUTPUT,))


def test_c15_an_over_long_out_layer_is_named(work, capsys):
    code, text = run(capsys, *gdd(work / "parcels.gpkg", work / "weather.csv", work / "o.gpkg",
                                  "--out-layer", "l" * 5000))
    answered_well(code, text, (0, EXIT_OUTPUT, 2))
    if code == 0:  # SQLite holds such a name: then it is there, whole
        ds = ogr.Open(str(work / "o.gpkg"))
        assert ds.GetLayerByName("l" * 5000).GetFeatureCount() == 6


def test_c15_a_parcel_layer_nested_deep_is_named(tmp_path, capsys, base):
    path = tmp_path / "deep.geojson"
    coords = "[" * 5000 + "]" * 5000
    path.write_text('{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {"parcel_id": "a"},'
                    ' "geometry": {"type": "Polygon", "coordinates": ' + coords + "}}]}")
    code, text = run(capsys, *gdd(path, base / "weather.csv", tmp_path / "g.csv"))
    answered_well(code, text, (EXIT_INPUT, 4), "deep.geojson")


# ============================================================================================
# 16. Messages point at the real cause


@pytest.mark.parametrize("landing, words", [
    ((403, {"Content-Type": "application/json"}, b'{"message": "Forbidden"}'), ["Forbidden"]),
    ((200, {"Content-Type": "text/plain"}, b"OK"), ["STAC"]),
    ((200, {"Content-Type": "application/json"}, b'{"type": "Feature"}'), ["STAC"]),
])
def test_c16_something_that_is_not_a_stac_api_is_named(landing, words, work, capsys):
    with Server(lambda r: landing) as server:
        code, text = run(capsys, "scenes", "search", "--parcels", work / "parcels.gpkg", "--catalog",
                         server.url + "/stac", "--season", "2023", "--out", work / "items.json")
        answered_well(code, text, (EXIT_INPUT,), server.netloc, *words)


def test_c16_a_search_endpoint_that_answers_a_web_page_is_named(work, capsys):
    holder, answer = _stac(lambda n, b: (200, {"Content-Type": "text/html"}, b"<html><body>Log in</body></html>"))
    with Server(answer) as server:
        holder["url"] = server.url
        code, text = run(capsys, "scenes", "search", "--parcels", work / "parcels.gpkg", "--catalog",
                         server.url + "/stac", "--season", "2023", "--out", work / "items.json")
        answered_well(code, text, (EXIT_INPUT,), server.netloc, "not STAC")


@pytest.mark.parametrize("case, words", [
    ("missing-parcel-file", ["parcles.gpkg"]),
    ("empty-layer", ["no feature"]),
    ("weather-with-bom", []),
    ("weather-crlf", []),
    ("weather-semicolons", []),  # a decimal-comma spreadsheet's CSV: read
    ("weather-days-repeated-alike", []),
    ("weather-day-missing-in-season", ["2023-03"]),
    ("weather-dates-day-first", ["weather.csv"]),
])
def test_c16_input_problems_name_their_cause(case, words, work, capsys):
    parcels, weather = work / "parcels.gpkg", work / "weather.csv"
    if case == "missing-parcel-file":
        parcels = work / "parcles.gpkg"
    elif case == "empty-layer":
        parcels = write_parcels(work / "empty.gpkg", [])
    elif case == "weather-with-bom":
        weather_csv(weather, prefix="\ufeff")
    elif case == "weather-crlf":
        weather_csv(weather, newline="\r\n")
    elif case == "weather-semicolons":
        weather_csv(weather, sep=";")
    elif case == "weather-days-repeated-alike":
        weather_csv(weather, rows=lambda rows: rows[:50] + rows[49:])
    elif case == "weather-day-missing-in-season":
        weather_csv(weather, rows=lambda rows: rows[:70] + rows[80:])
    elif case == "weather-dates-day-first":
        weather_csv(weather, rows=lambda rows: [[f"{r[0][8:10]}/{r[0][5:7]}/{r[0][:4]}", *r[1:]] for r in rows])
    code, text = run(capsys, *gdd(parcels, weather, work / "g.csv"))
    if case in ("weather-with-bom", "weather-crlf", "weather-semicolons", "weather-days-repeated-alike"):
        answered_well(code, text, (0,))
    else:
        answered_well(code, text, (EXIT_INPUT, 4), *words)


def test_c16_a_360_day_calendar_is_named(work, capsys):
    import netCDF4

    path = work / "t360.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", 360)
        ds.createDimension("lat", 2)
        ds.createDimension("lon", 2)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2023-01-01"
        t.calendar = "360_day"
        t[:] = np.arange(360)
        ds.createVariable("lat", "f4", ("lat",))[:] = [43.0, 44.0]
        ds.createVariable("lon", "f4", ("lon",))[:] = [1.0, 2.0]
        for name, v in (("tmin", 2.0), ("tmax", 12.0)):
            var = ds.createVariable(name, "f4", ("time", "lat", "lon"))
            var.units = "degC"
            var[:] = np.full((360, 2, 2), v)
    code, text = run(capsys, *gdd(work / "parcels.gpkg", path, work / "g.csv"))
    answered_well(code, text, (EXIT_INPUT,), "360")


# ============================================================================================
# 10. Overlapping parcels are found, whatever the geometry says


def _square(x: float, y: float, size: float, *, reverse: bool = False):
    from shapely.geometry import Polygon

    ring = [(x, y), (x + size, y), (x + size, y + size), (x, y + size)]
    return Polygon(ring[::-1] if reverse else ring)


def _overlap_cases():
    from shapely.geometry import MultiPolygon, Polygon

    donut = Polygon([(0, 0), (60, 0), (60, 60), (0, 60)], [[(10, 10), (50, 10), (50, 50), (10, 50)]])
    return {
        "same-field-twice": [_square(0, 0, 40), _square(0, 0, 40)],
        "inside-touching-the-edge": [_square(0, 0, 40), _square(0, 0, 20)],
        "island-in-a-hole": [donut, _square(15, 15, 20), _square(200, 0, 10)],
        "multipolygon-part-overlaps": [MultiPolygon([_square(0, 0, 10), _square(100, 0, 10)]), _square(105, 5, 10)],
        "touching-only": [_square(0, 0, 10), _square(10, 0, 10)],
        "reversed-vertex-order": [_square(0, 0, 30), _square(0, 0, 30, reverse=True)],
        "covered-by-two-others": [_square(0, 0, 20), _square(-5, -5, 15), _square(10, -5, 15)],
    }


@pytest.mark.parametrize("case", ["same-field-twice", "inside-touching-the-edge", "island-in-a-hole",
                                  "multipolygon-part-overlaps", "touching-only", "reversed-vertex-order",
                                  "covered-by-two-others"])
def test_c10_overlapping_parcels_each_get_the_pixels_they_cover(case, work):
    # The fields (metres from a corner 10 m pixels start at) on one L1C tile: each parcel's
    # pixels are those of its own polygon rasterised alone (rasterio's geometry_mask), whatever
    # the others cover.
    import geopandas as gpd
    import rasterio
    from rasterio.features import geometry_mask
    from rasterio.transform import from_origin
    from shapely.affinity import translate

    from thermocrop.core.extract import extract_pixel_sets

    size, x0, y0 = 32, 600000.0, 5000000.0
    cube = np.random.default_rng(10).integers(1100, 9000, size=(10, size, size), dtype=np.uint16)
    transform = from_origin(x0, y0, 10.0, 10.0)
    scenes = work / "scenes"
    scenes.mkdir()
    with rasterio.open(scenes / "S2A_MSIL1C_20230601T103031_N0205_R108_T31TCJ_20230601T1.tif", "w", driver="GTiff",
                       width=size, height=size, count=10, dtype="uint16", crs="EPSG:32631", transform=transform,
                       nodata=0) as ds:
        ds.write(cube)
        ds.descriptions = ("B02", "B03", "B04", "B05", "B06", "B07", "B08", "B8A", "B11", "B12")
    # Shifted by a third of a pixel so that no pixel centre lies on an edge.
    geoms = [translate(g, x0 + 3.3, y0 - 300.0 + 3.3) for g in _overlap_cases()[case]]
    parcels = gpd.GeoDataFrame({"parcel_id": [f"f{i}" for i in range(len(geoms))]}, geometry=geoms,
                               crs="EPSG:32631")
    ps = extract_pixel_sets(parcels, scenes, work / "weather.csv",
                            settings=ExtractionSettings(sampling=PixelSampling(max_pixels=1024)))
    for i, geom in enumerate(geoms):
        inside = geometry_mask([geom], out_shape=(size, size), transform=transform, invert=True)
        expected = sorted(map(tuple, cube[:, inside].T.tolist()))
        got = sorted(map(tuple, ps.pixels[i, 0][:, ps.pixel_mask[i, 0]].T.tolist()))
        assert got == expected, (case, i)


# ============================================================================================
# Processing, as the Toolbox runs it headless


@pytest.mark.slow
@pytest.mark.qgis
def test_c06_qgis_process_never_writes_over_the_weather_file_by_a_hard_link(work, tmp_path_factory):
    from thermocrop.plugin.headless import enable_plugin, qgis_process_env, qgis_process_program

    profile = tmp_path_factory.mktemp("profile")
    enable_plugin(profile)
    os.link(work / "weather.csv", work / "hard.csv")
    before = digest(work / "weather.csv")
    proc = subprocess.run([qgis_process_program(), "run", "thermocrop:parcelgdd", "--",
                           f"INPUT={work / 'parcels.gpkg'}", f"WEATHER={work / 'weather.csv'}", "DATES=2023-05-01",
                           f"OUTPUT={work / 'hard.csv'}"], capture_output=True, text=True, timeout=300,
                          env=qgis_process_env(profile))
    assert proc.returncode != 0 and digest(work / "weather.csv") == before
    assert "Traceback" not in proc.stdout + proc.stderr
