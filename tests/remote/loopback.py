"""Servers on 127.0.0.1 that speak the protocols ThermoCrop fetches data through, for tests
and benchmarks without the internet.

One ``LoopbackServer`` answers, on one port:

- files under ``/files/...`` (COG assets) and ``/eodata/...`` (an S3-style bucket) with HTTP
  ``Range`` support (RFC 9110: single ranges answered ``206`` with ``Content-Range``; a
  multi-range request is answered whole with ``200``, as the RFC allows), ``HEAD``, and a
  count of the bytes served per path;
- a STAC API (``/stac``): landing page, conformance, collections, ``/search`` by ``GET`` and
  ``POST`` with ``collections``, ``bbox``, ``datetime`` (instants and ``..``-open intervals),
  the query extension (``eo:cloud_cover`` and other numeric properties) and paging through
  ``next`` links (a ``token`` query parameter for GET, a ``body`` for POST), as the STAC API
  Item Search specification (v1.0.0) describes them;
- Planetary Computer's SAS token endpoint (``/api/sas/v1/token/{collection}``);
- Open-Meteo's historical weather API (``/v1/archive``) answering in its documented JSON
  shape: one object per location (a list for several), ``daily.time`` and the asked
  ``daily`` variables, ``{"error": true, "reason": ...}`` with status 400 on bad input.

Faults are injected per path pattern: ``503`` answers, connections dropped half-way through a
body, permanent ``404``s, and the answers of hostile or broken servers: ``503`` with
``Retry-After: 3600``, a request never answered (``stall``), and a web page (``html``) where
JSON was expected. The server keeps the headers of every request it saw (``requests_seen``),
so tests can assert that no credential reached it.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import fnmatch
import json
import math
import re
import socket
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

STAC_CONFORMANCE = [
    "https://api.stacspec.org/v1.0.0/core",
    "https://api.stacspec.org/v1.0.0/item-search",
    "https://api.stacspec.org/v1.0.0/item-search#query",
    "https://api.stacspec.org/v1.0.0/ogcapi-features",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
]

SAS_TOKEN = "st=2024-01-01T00%3A00%3A00Z&se=2099-01-01T00%3A00%3A00Z&sp=rl&sv=2021-06-08&sr=c&sig=bG9vcGJhY2s%3D"


@dataclass
class Fault:
    """A fault injected into requests whose path matches ``pattern`` (fnmatch).

    Attributes:
        pattern: path pattern, e.g. ``/files/*/B04.tif``.
        kind: ``"503"`` (service unavailable), ``"drop"`` (headers and half the body, then
            the connection is closed), ``"404"`` (the file does not exist), ``"retry-after"``
            (503 asking to wait an hour), ``"stall"`` (nothing answered until the server stops)
            or ``"html"`` (a web page).
        times: how many matching requests get the fault; None for every one.
        methods: the request methods it applies to.
        skip: matching requests let through before the fault starts.
    """

    pattern: str
    kind: str
    times: Optional[int] = 1
    methods: tuple[str, ...] = ("GET",)
    skip: int = 0
    hits: int = 0

    def applies(self, method: str, path: str) -> bool:
        if method not in self.methods or not fnmatch.fnmatch(path, self.pattern):
            return False
        if self.skip > 0:
            self.skip -= 1
            return False
        if self.times is not None and self.hits >= self.times:
            return False
        self.hits += 1
        return True


@dataclass
class Counters:
    """What the server saw: requests and body bytes, per path and in all."""

    requests: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    ranges: int = 0
    multirange: int = 0
    faults: int = 0
    log: list[tuple[str, str, str, int]] = field(default_factory=list)  # method, path, range, status

    def total_bytes(self, prefix: str = "") -> int:
        return sum(v for k, v in self.bytes.items() if k.startswith(prefix))

    def total_requests(self, prefix: str = "") -> int:
        return sum(v for k, v in self.requests.items() if k.startswith(prefix))


def _parse_datetime(text: str) -> Optional[dt.datetime]:
    if text in ("", ".."):
        return None
    text = text.replace("Z", "+00:00")
    value = dt.datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


def _interval(text: Optional[str]) -> tuple[Optional[dt.datetime], Optional[dt.datetime]]:
    if not text:
        return None, None
    if "/" in text:
        a, b = text.split("/", 1)
        return _parse_datetime(a), _parse_datetime(b)
    t = _parse_datetime(text)
    return t, t


_QUERY_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda a, b: a == b, "neq": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b, "gt": lambda a, b: a > b, "gte": lambda a, b: a >= b,
    "in": lambda a, b: a in b,
}


class StacCatalog:
    """Items served by the STAC API part of the server."""

    def __init__(self, items: list[dict], collection: str = "sentinel-2-l2a", page_size: int = 10,
                 next_to_itself: bool = False) -> None:
        self.items = list(items)
        self.collection = collection
        self.page_size = page_size
        self.next_to_itself = next_to_itself  # a broken API whose 'next' link is the page itself
        self.searches: list[dict] = []

    def matches(self, item: dict, params: dict) -> bool:
        collections = params.get("collections")
        if collections and item.get("collection") not in collections:
            return False
        bbox = params.get("bbox")
        if bbox:
            ib = item["bbox"]
            if ib[2] < bbox[0] or ib[0] > bbox[2] or ib[3] < bbox[1] or ib[1] > bbox[3]:
                return False
        start, end = _interval(params.get("datetime"))
        when = _parse_datetime(item["properties"]["datetime"])
        if (start and when < start) or (end and when > end):
            return False
        for name, ops in (params.get("query") or {}).items():
            value = item["properties"].get(name)
            if value is None:
                return False
            for op, operand in ops.items():
                if not _QUERY_OPS[op](value, operand):
                    return False
        return True

    def search(self, params: dict, base: str, method: str) -> dict:
        self.searches.append({"method": method, **params})
        found = [i for i in self.items if self.matches(i, params)]
        found.sort(key=lambda i: (i["properties"]["datetime"], i["id"]))
        limit = int(params.get("limit") or self.page_size)
        start = int(params.get("token") or 0)
        page = found[start:start + limit]
        links = [{"rel": "root", "href": f"{base}/stac/", "type": "application/json"}]
        if start + limit < len(found) or self.next_to_itself:
            token = str(start if self.next_to_itself else start + limit)
            if method == "POST":
                body = {k: v for k, v in params.items() if k != "token"}
                body["token"] = token
                links.append({"rel": "next", "href": f"{base}/stac/search", "method": "POST", "body": body,
                              "type": "application/geo+json"})
            else:
                query = {k: (json.dumps(v) if k == "query" else ",".join(map(str, v)) if isinstance(v, list) else v)
                         for k, v in params.items() if k != "token"}
                query["token"] = token
                links.append({"rel": "next", "href": f"{base}/stac/search?{urllib.parse.urlencode(query)}",
                              "method": "GET", "type": "application/geo+json"})
        return {"type": "FeatureCollection", "features": page, "links": links,
                "numberMatched": len(found), "numberReturned": len(page)}


def open_meteo_temperature(lat: float, lon: float, day: dt.date) -> tuple[float, float]:
    """The daily (Tmin, Tmax) the loopback Open-Meteo serves at a point: a smooth annual cycle
    that cools northwards, so tests can compute the expected values by themselves."""
    doy = day.timetuple().tm_yday
    mean = 11.0 - 0.6 * (lat - 45.0) + 0.05 * lon + 9.0 * math.sin(2 * math.pi * (doy - 105) / 365.0)
    return round(mean - 5.0, 1), round(mean + 5.0, 1)


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 (see the module docstring). Use as a context manager.

    Args:
        root: folder whose files are served under ``/files/`` (and ``/eodata/`` from
            ``root/eodata``).
        catalog: the STAC items, or None.
        s3_key_id: when set, ``/eodata/`` asks for an AWS Signature V4 ``Authorization``
            header naming this access key (as GDAL's /vsis3/ sends it).
        require_sas: when True, ``/files/`` answers 403 to requests without the SAS token.
        open_meteo_gaps: days answered as ``null`` by the weather endpoint.
        cds_key: the key the Climate Data Store part asks for (``PRIVATE-TOKEN`` header).
        eobs_area, eobs_period: extent (south, north, west, east) and days of the E-OBS files
            it serves (Europe-wide and 75 years in the real service).
    """

    def __init__(self, root: Optional[Path] = None, catalog: Optional[StacCatalog] = None, *,
                 s3_key_id: Optional[str] = None, require_sas: bool = False,
                 open_meteo_gaps: tuple[str, ...] = (), open_meteo_units: str = "°C",
                 cds_key: Optional[str] = None, cds_failure: Optional[str] = None,
                 eobs_area: tuple[float, float, float, float] = (43.0, 44.5, 0.5, 2.0),
                 eobs_period: tuple[str, str] = ("2016-01-01", "2018-12-31")) -> None:
        self.root = Path(root) if root else None
        self.catalog = catalog
        self.s3_key_id = s3_key_id
        self.require_sas = require_sas
        self.open_meteo_gaps = set(open_meteo_gaps)
        self.open_meteo_units = open_meteo_units
        self.cds_failure = cds_failure  # the reason a CDS job fails with, or None
        self.requests_seen: list[tuple[str, str, dict]] = []  # method, full path with query, headers
        self.stalls_released = threading.Event()  # set: stalled requests end (closed unanswered)
        self.faults: list[Fault] = []
        self.counters = Counters()
        self.open_meteo_requests: list[dict] = []
        self.cds_key = cds_key
        self.eobs_area = eobs_area  # south, north, west, east of the E-OBS grid served
        self.eobs_period = eobs_period
        self.cds_jobs: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    # -- life cycle ---------------------------------------------------------------------
    def __enter__(self) -> "LoopbackServer":
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stalls_released.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def host(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{host}:{port}"

    def reset_counters(self) -> None:
        with self._lock:
            self.counters = Counters()

    def count(self, method: str, path: str, nbytes: int, range_header: str, status: int) -> None:
        with self._lock:
            c = self.counters
            c.requests[path] = c.requests.get(path, 0) + 1
            c.bytes[path] = c.bytes.get(path, 0) + nbytes
            c.log.append((method, path, range_header, status))
            if range_header:
                c.ranges += 1
                if "," in range_header:
                    c.multirange += 1

    def release_stalls(self) -> None:
        """End the stalled requests (their connections close unanswered) and stall no more."""
        self.faults[:] = [f for f in self.faults if f.kind != "stall"]
        self.stalls_released.set()
        self.stalls_released = threading.Event()

    def saw(self, text: str) -> bool:
        """True when ``text`` was in any request this server received (path, query or header)."""
        with self._lock:
            return any(text in path or any(text in f"{k}: {v}" for k, v in headers.items())
                       for _, path, headers in self.requests_seen)

    def fault_for(self, method: str, path: str) -> Optional[str]:
        with self._lock:
            for f in self.faults:
                if f.applies(method, path):
                    self.counters.faults += 1
                    return f.kind
        return None


class _Handler(BaseHTTPRequestHandler):
    owner: LoopbackServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - quiet test output
        pass

    # -- helpers ------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str, headers: Optional[dict] = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any, content_type: str = "application/json") -> None:
        self._send(status, json.dumps(data).encode(), content_type)

    def _error(self, status: int, text: str) -> None:
        self._send(status, text.encode(), "text/plain")

    # -- routing ------------------------------------------------------------------------
    def do_HEAD(self) -> None:  # noqa: N802
        self._route()

    def do_GET(self) -> None:  # noqa: N802
        self._route()

    def do_POST(self) -> None:  # noqa: N802
        self._route()

    def _route(self) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(parsed.path)
        query = urllib.parse.parse_qs(parsed.query)
        with self.owner._lock:
            self.owner.requests_seen.append((self.command, self.path, dict(self.headers.items())))
        fault = self.owner.fault_for(self.command, path)
        if fault in ("retry-after", "html", "503", "404") and self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))  # the connection stays usable
        if fault == "stall":
            self.owner.count(self.command, path, 0, self.headers.get("Range", ""), 0)
            self.owner.stalls_released.wait(60)
            self.close_connection = True
            return
        if fault == "retry-after":
            self.owner.count(self.command, path, 0, self.headers.get("Range", ""), 503)
            self._send(503, b"busy", "text/plain", {"Retry-After": "3600"})
            return
        if fault == "html":
            self.owner.count(self.command, path, 0, "", 200)
            self._send(200, b"<!DOCTYPE html><html><head><title>Welcome</title></head><body><h1>Our data portal"
                            b"</h1></body></html>", "text/html; charset=utf-8")
            return
        if fault == "503":
            self.owner.count(self.command, path, 0, self.headers.get("Range", ""), 503)
            self._send(503, b"busy", "text/plain", {"Retry-After": "0"})
            return
        if fault == "404":
            self.owner.count(self.command, path, 0, self.headers.get("Range", ""), 404)
            self._error(404, "no such file")
            return
        if path.startswith("/files/") or path.startswith("/eodata/"):
            self._file(path, query, drop=fault == "drop")
        elif path == "/stac" or path.startswith("/stac/"):
            self._stac(path[len("/stac"):].strip("/"), query)
        elif path.startswith("/api/sas/v1/token/"):
            expiry = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            self.owner.count(self.command, path, 0, "", 200)
            self._json(200, {"msft:expiry": expiry, "token": SAS_TOKEN})
        elif path == "/v1/archive":
            self._open_meteo(query)
        elif path == "/api/catalogue/v1/messages":
            self._json(200, {"messages": []})
        elif path.startswith("/api/retrieve/v1/") or path.startswith("/cds-download/"):
            self._cds(path, query)
        else:
            self._error(404, f"nothing at {path}")

    # -- files with Range ---------------------------------------------------------------
    def _file(self, path: str, query: dict, drop: bool) -> None:
        owner = self.owner
        range_header = self.headers.get("Range", "")
        if path.startswith("/eodata/") and owner.s3_key_id is not None:
            auth = self.headers.get("Authorization", "")
            if not auth.startswith(f"AWS4-HMAC-SHA256 Credential={owner.s3_key_id}/"):
                owner.count(self.command, path, 0, range_header, 403)
                self._send(403, b"<Error><Code>AccessDenied</Code></Error>", "application/xml")
                return
        if path.startswith("/files/") and owner.require_sas and "sig" not in query:
            owner.count(self.command, path, 0, range_header, 403)
            self._send(403, b"AuthenticationFailed: no signature", "text/plain")
            return
        relative = path[len("/files/"):] if path.startswith("/files/") else "eodata/" + path[len("/eodata/"):]
        file = (owner.root / relative) if owner.root else None
        if file is None or not file.is_file() or ".." in Path(relative).parts:
            owner.count(self.command, path, 0, range_header, 404)
            self._error(404, "no such file")
            return
        data = file.read_bytes()
        size = len(data)
        status, start, end = 200, 0, size - 1
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", range_header.strip()) if range_header else None
        if m and (m.group(1) or m.group(2)):
            if m.group(1):
                start = int(m.group(1))
                end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            else:
                start, end = max(size - int(m.group(2)), 0), size - 1
            if start >= size:
                owner.count(self.command, path, 0, range_header, 416)
                self._send(416, b"", "text/plain", {"Content-Range": f"bytes */{size}"})
                return
            status = 206
        body = data[start:end + 1]
        headers = {"Accept-Ranges": "bytes", "ETag": f'"{size:x}-{int(file.stat().st_mtime):x}"',
                   "Last-Modified": email.utils.formatdate(file.stat().st_mtime, usegmt=True)}
        if status == 206:
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        self.send_response(status)
        self.send_header("Content-Type", "image/tiff")
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            owner.count(self.command, path, 0, range_header, status)
            return
        if drop:
            half = body[: len(body) // 2]
            owner.count(self.command, path, len(half), range_header, -status)
            self.wfile.write(half)
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        # Counted before sending, so that a client that has its answer finds it counted.
        owner.count(self.command, path, len(body), range_header, status)
        self.wfile.write(body)

    # -- STAC API -----------------------------------------------------------------------
    def _stac(self, sub: str, query: dict) -> None:
        owner, base = self.owner, self.owner.url
        catalog = owner.catalog
        owner.count(self.command, "/stac/" + sub, 0, "", 200)
        if catalog is None:
            self._error(404, "no catalogue")
            return
        if sub == "":
            links = [
                {"rel": "self", "href": f"{base}/stac/", "type": "application/json"},
                {"rel": "root", "href": f"{base}/stac/", "type": "application/json"},
                {"rel": "conformance", "href": f"{base}/stac/conformance", "type": "application/json"},
                {"rel": "data", "href": f"{base}/stac/collections", "type": "application/json"},
                {"rel": "search", "href": f"{base}/stac/search", "type": "application/geo+json", "method": "GET"},
                {"rel": "search", "href": f"{base}/stac/search", "type": "application/geo+json", "method": "POST"},
                {"rel": "child", "href": f"{base}/stac/collections/{catalog.collection}", "type": "application/json"},
            ]
            self._json(200, {"type": "Catalog", "id": "loopback", "title": "Loopback STAC API",
                             "description": "STAC API on 127.0.0.1 for tests", "stac_version": "1.0.0",
                             "conformsTo": STAC_CONFORMANCE, "links": links})
        elif sub == "conformance":
            self._json(200, {"conformsTo": STAC_CONFORMANCE})
        elif sub in ("collections", f"collections/{catalog.collection}"):
            collection = {
                "type": "Collection", "id": catalog.collection, "stac_version": "1.0.0",
                "description": "Sentinel-2 L2A", "license": "proprietary",
                "extent": {"spatial": {"bbox": [[-180, -90, 180, 90]]},
                           "temporal": {"interval": [["2015-06-27T00:00:00Z", None]]}},
                "links": [{"rel": "self", "href": f"{base}/stac/collections/{catalog.collection}"},
                          {"rel": "items", "href": f"{base}/stac/collections/{catalog.collection}/items"}],
            }
            if sub == "collections":
                self._json(200, {"collections": [collection], "links": []})
            else:
                self._json(200, collection)
        elif sub == "search":
            if self.command == "POST":
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    params = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._json(400, {"code": "BadRequest", "description": "body is not JSON"})
                    return
            else:
                params = {}
                for key, values in query.items():
                    value = values[0]
                    if key == "bbox":
                        params[key] = [float(v) for v in value.split(",")]
                    elif key == "collections":
                        params[key] = value.split(",")
                    elif key in ("query", "intersects"):
                        params[key] = json.loads(value)
                    else:
                        params[key] = value
            if "bbox" in params and isinstance(params["bbox"], str):
                params["bbox"] = [float(v) for v in params["bbox"].split(",")]
            try:
                page = catalog.search(params, base, self.command)
            except (KeyError, ValueError) as exc:
                self._json(400, {"code": "BadRequest", "description": str(exc)})
                return
            self._json(200, page, "application/geo+json")
        else:
            self._json(404, {"code": "NotFound", "description": f"no {sub}"})

    def _cds(self, path: str, query: dict) -> None:
        _cds_route(self, path, query)

    # -- Open-Meteo ---------------------------------------------------------------------
    def _open_meteo(self, query: dict) -> None:
        owner = self.owner
        owner.count(self.command, "/v1/archive", 0, "", 200)

        def bad(reason: str) -> None:
            self._json(400, {"error": True, "reason": reason})

        try:
            lats = [float(v) for v in query["latitude"][0].split(",")]
            lons = [float(v) for v in query["longitude"][0].split(",")]
            start = dt.date.fromisoformat(query["start_date"][0])
            end = dt.date.fromisoformat(query["end_date"][0])
        except (KeyError, ValueError) as exc:
            bad(f"Parameter {exc} is missing or invalid")
            return
        if len(lats) != len(lons):
            bad("Parameter 'latitude' and 'longitude' must have the same number of elements")
            return
        if end < start:
            bad("Parameter 'start_date' must be before 'end_date'")
            return
        daily = query.get("daily", [""])[0].split(",")
        known = {"temperature_2m_max", "temperature_2m_min"}
        if not daily or not set(daily) <= known:
            bad(f"Cannot initialize WeatherVariable from invalid String value {daily}")
            return
        with owner._lock:
            owner.open_meteo_requests.append({k: v[0] for k, v in query.items()})
        days = [start + dt.timedelta(days=i) for i in range((end - start).days + 1)]
        answers = []
        for lat, lon in zip(lats, lons):
            # Open-Meteo answers with the grid point it used, not the coordinates asked for.
            glat, glon = round(lat / 0.1) * 0.1, round(lon / 0.1) * 0.1
            values = {"time": [d.isoformat() for d in days]}
            tmin_tmax = [open_meteo_temperature(glat, glon, d) for d in days]
            if owner.open_meteo_units == "°F":
                tmin_tmax = [(round(a * 1.8 + 32, 1), round(b * 1.8 + 32, 1)) for a, b in tmin_tmax]
            for name, k in (("temperature_2m_min", 0), ("temperature_2m_max", 1)):
                if name in daily:
                    values[name] = [None if d.isoformat() in owner.open_meteo_gaps else t[k]
                                    for d, t in zip(days, tmin_tmax)]
            answers.append({
                "latitude": round(glat, 4), "longitude": round(glon, 4), "generationtime_ms": 0.5,
                "utc_offset_seconds": 0, "timezone": query.get("timezone", ["GMT"])[0],
                "timezone_abbreviation": "GMT", "elevation": 120.0,
                "daily_units": {"time": "iso8601", **{n: owner.open_meteo_units for n in daily}},
                "daily": values,
            })
        self._json(200, answers if len(answers) > 1 else answers[0])


# --------------------------------------------------------------------------------------------
# Publishing a synthetic region as a catalogue: per-band COGs and items in real layouts

BAND_RES = {"B02": 10, "B03": 10, "B04": 10, "B08": 10, "B05": 20, "B06": 20, "B07": 20, "B8A": 20,
            "B11": 20, "B12": 20, "SCL": 20}
EARTH_SEARCH_NAMES = {"B02": "blue", "B03": "green", "B04": "red", "B05": "rededge1", "B06": "rededge2",
                      "B07": "rededge3", "B08": "nir", "B8A": "nir08", "B11": "swir16", "B12": "swir22",
                      "SCL": "scl"}
COG_TYPE = "image/tiff; application=geotiff; profile=cloud-optimized"


def write_raster(path: Path, array, transform, crs, *, driver: str = "COG", blocksize: int = 256,
                 nodata: Optional[float] = 0) -> Path:
    """Write ``array (H, W)`` as a tiled COG (deflate), GeoTIFF or JPEG 2000 (lossless)."""
    import rasterio
    import rasterio.shutil
    from rasterio.io import MemoryFile

    path.parent.mkdir(parents=True, exist_ok=True)
    profile = dict(driver="GTiff", width=array.shape[1], height=array.shape[0], count=1, dtype=array.dtype.name,
                   crs=crs, transform=transform, nodata=nodata, tiled=True, blockxsize=blocksize,
                   blockysize=blocksize)
    if driver == "GTiff":
        with rasterio.open(path, "w", **profile) as ds:
            ds.write(array, 1)
        return path
    with MemoryFile() as mem:
        with mem.open(**profile) as ds:
            ds.write(array, 1)
            if driver == "COG":
                rasterio.shutil.copy(ds, str(path), driver="COG", BLOCKSIZE=blocksize, COMPRESS="DEFLATE",
                                     PREDICTOR=2, OVERVIEWS="AUTO")
            else:
                rasterio.shutil.copy(ds, str(path), driver="JP2OpenJPEG", QUALITY=100, REVERSIBLE="YES",
                                     BLOCKXSIZE=blocksize, BLOCKYSIZE=blocksize, RESOLUTIONS=1)
    return path


def region_bands(scene_path: Path) -> dict[str, Any]:
    """The 10 m bands of a synthetic multi-band scene as they are, the 20 m bands and SCL as a
    20 m product holds them (means of 2 x 2 pixels; SCL by the top-left pixel of each 2 x 2)."""
    import numpy as np
    import rasterio

    with rasterio.open(scene_path) as ds:
        data = ds.read()
        names = list(ds.descriptions)
    out: dict[str, Any] = {}
    for i, name in enumerate(names):
        if BAND_RES[name] == 10:
            out[name] = data[i]
        else:
            a = data[i].astype(np.float64)
            out[name] = np.round((a[0::2, 0::2] + a[1::2, 0::2] + a[0::2, 1::2] + a[1::2, 1::2]) / 4).astype(np.uint16)
    scl = scene_path.with_name(scene_path.stem + "_SCL.tif")
    if scl.exists():
        with rasterio.open(scl) as ds:
            out["SCL"] = ds.read(1)[0::2, 0::2]
    return out


def write_band_folder(scene_path: Path, folder: Path) -> Path:
    """The scene as local per-band GeoTIFFs (10 m and 20 m files, ``SCL.tif``), the layout
    ``find_scenes`` reads from a product folder."""
    import rasterio
    from affine import Affine

    with rasterio.open(scene_path) as ds:
        transform, crs = ds.transform, ds.crs
    product = folder / scene_path.stem
    for band, array in region_bands(scene_path).items():
        t = transform if BAND_RES[band] == 10 else transform * Affine.scale(2)
        write_raster(product / f"{band}.tif", array, t, crs, driver="GTiff")
    return product


def publish_region(region: Path, root: Path, base_url: str, *, layout: str = "earth-search", dates: int = 6,
                   pad: tuple[int, int] = (64, 32), blocksize: int = 256, baseline: str = "02.05",
                   boa_offset_applied: Optional[bool] = None, dn_shift: int = 0,
                   proj_key: str = "proj:epsg", cloud_cover: Optional[Sequence[float]] = None) -> list[dict]:
    """Publish the first ``dates`` scenes of a synthetic region as remote assets and STAC items.

    Each band becomes one file per scene on a grid ``pad`` = (columns, rows) 10 m pixels
    larger to the west and north than the region's (same pixel lattice), the rest no data:
    COGs for ``earth-search`` and ``planetary-computer`` (under ``/files/``), lossless JPEG
    2000 in an S3-style ``/eodata/`` bucket for ``cdse``. ``dn_shift`` is added to the
    reflectance bands' values (e.g. 1000 for a baseline-04.00 product). Items follow the
    catalogue's real layout (asset names, ``eo``/``raster``/``proj`` fields, properties).
    """
    import numpy as np
    import rasterio
    from affine import Affine

    scenes = sorted(p for p in (region / "scenes").glob("*.tif") if not p.stem.endswith("_SCL"))[:dates]
    items = []
    for k, scene in enumerate(scenes):
        with rasterio.open(scene) as ds:
            transform, crs, width, height = ds.transform, ds.crs, ds.width, ds.height
            date = dt.date.fromisoformat(ds.tags()["ACQUISITION_DATE"])
        epsg = crs.to_epsg()
        tile = re.search(r"_T(\d{2}[A-Z]{3})_", scene.name).group(1)
        bands = region_bands(scene)
        big_t = Affine(10, 0, transform.c - 10 * pad[0], 0, -10, transform.f + 10 * pad[1])
        big_w, big_h = width + pad[0] + 40, height + pad[1] + 20
        stamp = date.strftime("%Y%m%d")
        safe = f"S2A_MSIL2A_{stamp}T105031_N{baseline.replace('.', '')}_R051_T{tile}_{stamp}T105031"
        if layout == "earth-search":
            item_id, folder = f"S2A_{tile}_{stamp}_0_L2A", f"sentinel-s2-l2a-cogs/{tile[:2]}/{tile[2]}/{tile[3:]}/{date.year}/{date.month}/S2A_{tile}_{stamp}_0_L2A"
        elif layout == "planetary-computer":
            item_id, folder = f"S2A_MSIL2A_{stamp}T105031_R051_T{tile}_{stamp}T120000", f"sentinel2-l2/{tile[:2]}/{tile[2]}/{tile[3:]}/{date:%Y/%m/%d}/{safe}.SAFE/GRANULE/L2A_T{tile}/IMG_DATA"
        else:
            item_id, folder = safe, f"Sentinel-2/MSI/L2A/{date:%Y/%m/%d}/{safe}.SAFE/GRANULE/L2A_T{tile}/IMG_DATA"
        assets: dict[str, dict] = {}
        for band, array in bands.items():
            res = BAND_RES[band]
            scale = res // 10
            big = np.zeros((big_h // scale, big_w // scale), dtype=array.dtype)
            r0, c0 = pad[1] // scale, pad[0] // scale
            values = array
            if dn_shift and band != "SCL":
                values = np.where(array > 0, array.astype(np.int32) + dn_shift, 0).astype(np.uint16)
            big[r0:r0 + array.shape[0], c0:c0 + array.shape[1]] = values
            t = big_t if res == 10 else big_t * Affine.scale(2)
            shape = [int(big.shape[0]), int(big.shape[1])]
            tr = [t.a, t.b, t.c, t.d, t.e, t.f]
            if layout == "earth-search":
                rel = f"{folder}/{band}.tif"
                write_raster(root / rel, big, t, crs, blocksize=blocksize)
                key = EARTH_SEARCH_NAMES[band]
                entry = {"href": f"{base_url}/files/{rel}", "type": COG_TYPE, "title": f"{key} - {res}m",
                         "proj:shape": shape, "proj:transform": tr, "roles": ["data", "reflectance"]}
                if band == "SCL":
                    entry["raster:bands"] = [{"nodata": 0, "data_type": "uint8", "spatial_resolution": res}]
                else:
                    entry["eo:bands"] = [{"name": key, "common_name": key, "description": f"{key} ({band})"}]
                    entry["gsd"] = res
                    entry["raster:bands"] = [{"nodata": 0, "data_type": "uint16", "bits_per_sample": 15,
                                              "spatial_resolution": res, "scale": 0.0001,
                                              "offset": -0.1 if baseline >= "04.00" else 0}]
                assets[key] = entry
                if band in ("B04", "B08"):  # Earth Search keeps the JPEG 2000 originals beside
                    assets[f"{key}-jp2"] = {**entry, "href": f"{base_url}/files/{folder}/{band}.jp2",
                                            "type": "image/jp2"}
            elif layout == "planetary-computer":
                rel = f"{folder}/R{res}m/T{tile}_{stamp}T105031_{band}_{res}m.tif"
                write_raster(root / rel, big, t, crs, blocksize=blocksize)
                entry = {"href": f"{base_url}/files/{rel}", "type": COG_TYPE, "title": f"Band {band} - {res}m",
                         "gsd": res, "proj:shape": shape, "proj:transform": tr, "roles": ["data"]}
                if band != "SCL":
                    entry["eo:bands"] = [{"name": band, "common_name": EARTH_SEARCH_NAMES[band],
                                          "description": f"Band {band}"}]
                assets[band] = entry
            else:
                rel = f"{folder}/R{res}m/T{tile}_{stamp}T105031_{band}_{res}m.jp2"
                write_raster(root / "eodata" / rel, big, t, crs, driver="JP2OpenJPEG", blocksize=blocksize)
                entry = {"href": f"s3://eodata/{rel}", "type": "image/jp2", "title": f"{band} - {res}m",
                         "gsd": res, "proj:code": f"EPSG:{epsg}", "proj:shape": shape, "proj:transform": tr,
                         "nodata": 0, "data_type": "uint8" if band == "SCL" else "uint16",
                         "roles": ["data", "reflectance", f"gsd:{res}m"], "auth:refs": ["s3"],
                         "alternate": {"https": {"href": f"https://download.dataspace.copernicus.eu/odata/v1/{rel}",
                                                 "auth:refs": ["oidc"]}}}
                if band != "SCL":
                    entry["bands"] = [{"name": band, "eo:common_name": EARTH_SEARCH_NAMES[band]}]
                    entry["raster:scale"] = 0.0001
                    entry["raster:offset"] = -0.1 if baseline >= "04.00" else 0.0
                assets[f"{band}_{res}m"] = entry
                if res == 10:  # CDSE also lists each 10 m band at 20 m
                    assets[f"{band}_20m"] = {**entry, "href": f"s3://eodata/{folder}/R20m/{band}_20m.jp2",
                                             "gsd": 20, "roles": ["data", "reflectance", "gsd:20m"]}
        assets["thumbnail"] = {"href": f"{base_url}/files/{folder}/preview.jpg", "type": "image/jpeg",
                               "roles": ["thumbnail"]}
        assets["visual"] = {"href": f"{base_url}/files/{folder}/TCI.tif", "type": COG_TYPE, "roles": ["visual"],
                            "eo:bands": [{"name": "red"}, {"name": "green"}, {"name": "blue"}]}
        from pyproj import Transformer

        to_ll = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
        xs = [big_t.c, big_t.c + 10 * big_w]
        ys = [big_t.f - 10 * big_h, big_t.f]
        lon, lat = to_ll.transform([xs[0], xs[1], xs[1], xs[0]], [ys[0], ys[0], ys[1], ys[1]])
        bbox = [min(lon), min(lat), max(lon), max(lat)]
        cloud = float(cloud_cover[k]) if cloud_cover is not None else float(5 + 7 * k % 50)
        props: dict[str, Any] = {"datetime": f"{date.isoformat()}T10:50:31.024000Z", "eo:cloud_cover": cloud,
                                 "constellation": "sentinel-2", "instruments": ["msi"]}
        if layout == "earth-search":
            props.update({"platform": "sentinel-2a", proj_key: epsg if proj_key == "proj:epsg" else f"EPSG:{epsg}",
                          "mgrs:utm_zone": int(tile[:2]), "mgrs:latitude_band": tile[2],
                          "mgrs:grid_square": tile[3:], "grid:code": f"MGRS-{tile}",
                          "s2:processing_baseline": baseline, "s2:product_type": "S2MSI2A",
                          "s2:product_uri": f"{safe}.SAFE"})
            if boa_offset_applied is not None:
                props["earthsearch:boa_offset_applied"] = boa_offset_applied
        elif layout == "planetary-computer":
            props.update({"platform": "Sentinel-2A", proj_key: epsg if proj_key == "proj:epsg" else f"EPSG:{epsg}",
                          "s2:mgrs_tile": tile, "s2:processing_baseline": baseline,
                          "s2:product_type": "S2MSI2A", "s2:product_uri": f"{safe}.SAFE"})
        else:
            props.update({"platform": "sentinel-2a", "proj:code": f"EPSG:{epsg}", "grid:code": f"MGRS-{tile}",
                          "processing:version": baseline, "product:type": "S2MSI2A", "processing:level": "L2"})
        items.append({
            "type": "Feature", "stac_version": "1.1.0" if layout == "cdse" else "1.0.0",
            "id": item_id, "collection": "sentinel-2-l2a", "bbox": bbox,
            "geometry": {"type": "Polygon", "coordinates": [[[bbox[0], bbox[1]], [bbox[2], bbox[1]],
                                                             [bbox[2], bbox[3]], [bbox[0], bbox[3]],
                                                             [bbox[0], bbox[1]]]]},
            "properties": props, "assets": assets,
            "links": [{"rel": "self", "href": f"{base_url}/stac/collections/sentinel-2-l2a/items/{item_id}"}],
        })
    return items


# --------------------------------------------------------------------------------------------
# The Copernicus Climate Data Store's retrieve API (OGC API Processes, as cdsapi >= 0.7 speaks it)


def _cds_netcdf(request: dict, dataset: str, area, period) -> tuple[bytes, str]:
    """The file the CDS would deliver for a request: E-OBS ``tn``/``tx`` NetCDFs in a zip
    (packed int16, scale 0.01, _FillValue -9999), or ERA5-Land ``t2m`` daily statistics in K."""
    import io
    import os
    import tempfile
    import zipfile

    import numpy as np
    import xarray as xr

    def grid(south, north, west, east):
        lat = np.round(np.arange(round(south / 0.1) * 0.1 + 0.05, north, 0.1), 2)
        lon = np.round(np.arange(round(west / 0.1) * 0.1 + 0.05, east, 0.1), 2)
        return lat, lon

    def values(lat, lon, days, k):
        out = np.empty((len(days), len(lat), len(lon)), dtype=np.float64)
        for i, d in enumerate(days):
            for j, la in enumerate(lat):
                for m, lo in enumerate(lon):
                    out[i, j, m] = open_meteo_temperature(float(la), float(lo), d)[k]
        return out

    with tempfile.TemporaryDirectory() as tmp:
        if dataset == "insitu-gridded-observations-europe":
            lat, lon = grid(*area)
            start, end = (dt.date.fromisoformat(v) for v in period)
            days = [start + dt.timedelta(days=i) for i in range((end - start).days + 1)]
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as zf:
                for name, k in (("tn", 0), ("tx", 1)):
                    ds = xr.Dataset({name: (("time", "latitude", "longitude"), values(lat, lon, days, k),
                                            {"units": "Celsius", "standard_name": "air_temperature"})},
                                    coords={"time": np.array(days, dtype="datetime64[ns]"), "latitude": lat,
                                            "longitude": lon})
                    path = os.path.join(tmp, f"{name}_ens_mean_0.1deg_reg_v31.0e.nc")
                    ds.to_netcdf(path, encoding={name: {"dtype": "int16", "scale_factor": 0.01,
                                                        "_FillValue": -9999}})
                    zf.write(path, os.path.basename(path))
            return buffer.getvalue(), "application/zip"
        north, west, south, east = request["area"]
        lat, lon = grid(south, north, west, east)
        lat = lat[::-1]  # ERA5 files run north to south
        year = int(request["year"])
        days = [dt.date(year, int(m), int(d)) for m in request["month"] for d in request["day"]
                if int(d) <= [31, 29 if year % 4 == 0 else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][int(m) - 1]]
        k = 0 if request["daily_statistic"] == "daily_minimum" else 1
        ds = xr.Dataset({"t2m": (("valid_time", "latitude", "longitude"), values(lat, lon, days, k) + 273.15,
                                 {"units": "K", "long_name": "2 metre temperature"})},
                        coords={"valid_time": np.array(days, dtype="datetime64[ns]"), "latitude": lat,
                                "longitude": lon})
        path = os.path.join(tmp, "era5.nc")
        ds.to_netcdf(path)
        with open(path, "rb") as handle:
            return handle.read(), "application/netcdf"


def _cds_route(handler: "_Handler", path: str, query: dict) -> None:
    owner = handler.owner
    base = f"{owner.url}/api/retrieve/v1"
    owner.count(handler.command, path, 0, "", 200)
    if path.startswith("/cds-download/"):
        job = owner.cds_jobs.get(path.rsplit("/", 1)[1].split(".")[0])
        if job is None:
            handler._error(404, "no such result")
            return
        handler._send(200, job["data"], job["type"])
        return
    if handler.headers.get("PRIVATE-TOKEN") != owner.cds_key:
        handler._json(401, {"type": "unauthorized", "title": "Authentication failed",
                            "detail": "operation requires a valid API key"})
        return
    parts = path[len("/api/retrieve/v1/"):].strip("/").split("/")
    if parts[0] == "processes" and len(parts) == 2 and handler.command == "GET":
        handler._json(200, {"id": parts[1], "title": parts[1], "links": [
            {"rel": "self", "href": f"{base}/processes/{parts[1]}"}]})
    elif parts[0] == "processes" and len(parts) == 3 and parts[2] == "execution" and handler.command == "POST":
        length = int(handler.headers.get("Content-Length") or 0)
        request = json.loads(handler.rfile.read(length) or b"{}").get("inputs", {})
        job_id = f"job{len(owner.cds_jobs) + 1}"
        data, media = _cds_netcdf(request, parts[1], owner.eobs_area, owner.eobs_period)
        owner.cds_jobs[job_id] = {"process": parts[1], "request": request, "data": data, "type": media}
        handler._json(201, {"jobID": job_id, "status": "accepted", "processID": parts[1], "links": [
            {"rel": "monitor", "href": f"{base}/jobs/{job_id}"}]})
    elif parts[0] == "jobs" and len(parts) == 2:
        job = owner.cds_jobs.get(parts[1])
        if job is None:
            handler._json(404, {"title": "job not found"})
            return
        now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        handler._json(200, {"jobID": parts[1], "status": "failed" if owner.cds_failure else "successful", "processID": job["process"],
                            "created": now, "updated": now, "metadata": {"request": {"ids": job["request"]}},
                            "links": [{"rel": "self", "href": f"{base}/jobs/{parts[1]}"},
                                      {"rel": "results", "href": f"{base}/jobs/{parts[1]}/results"}]})
    elif parts[0] == "jobs" and len(parts) == 3 and parts[2] == "results":
        job = owner.cds_jobs[parts[1]]
        if owner.cds_failure:  # as the CDS answers for a failed job
            handler._json(400, {"type": "job results failed", "title": "The job has failed",
                                "traceback": owner.cds_failure})
            return
        suffix = "zip" if job["type"] == "application/zip" else "nc"
        handler._json(200, {"asset": {"value": {"href": f"{owner.url}/cds-download/{parts[1]}.{suffix}",
                                                "file:size": len(job["data"]), "type": job["type"]}}})
    else:
        handler._json(404, {"title": f"nothing at {path}"})
