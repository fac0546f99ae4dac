"""Windowed reads of remote raster assets (HTTP(S), S3) through GDAL's range reads.

Only the internal blocks (COG / JPEG 2000 tiles) under the windows that hold parcels are
fetched, a bounded number of assets at a time (on daemon threads), with GDAL's own
retries for HTTP 429/5xx (``GDAL_HTTP_MAX_RETRY`` / ``GDAL_HTTP_RETRY_DELAY``) and a retry
with exponential backoff around each asset for what GDAL does not retry (a connection dropped
half-way through a body). Every fetched block is kept on disk, decoded and compressed, and is
written under its final name only once complete, so a second run reads nothing over the
network and nothing half-read is ever used.

Credentials come from the environment or the caller, never from a data file: GDAL reads
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` for S3 itself, Planetary Computer's optional
``PC_SDK_SUBSCRIPTION_KEY`` goes with its SAS token requests to the configured token service
only, and the SAS tokens only to the hosts configured for them (:func:`host_matches`).

The assets are read on daemon threads while the calling thread waits in short steps, so that
Ctrl+C (or a cancellation) ends a run at once, whatever a slow server is doing.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import queue
import random
import re
import tempfile
import threading
import time
import urllib.parse
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..errors import CancelledError, InputError, SceneError
from ..io.http_session import Deadline, host_of, max_retry_wait, session_with_retries
from ..progress import Progress
from .product import Grid
from .raster_files import open_remote_asset, open_scene_file

log = logging.getLogger(__name__)

DEFAULT_MAX_REQUESTS = 8
"""Assets read at the same time (each holds one HTTP connection at a time)."""

DEFAULT_RETRIES = 4
"""Retries of an asset after an error GDAL did not retry itself (dropped connection...)."""

PC_TOKEN_URL = "https://planetarycomputer.microsoft.com/api/sas/v1/token"
PC_SIGNED_HOSTS = ("blob.core.windows.net",)
"""Hosts (and their subdomains) whose hrefs get Planetary Computer SAS tokens."""

# Messages of GDAL errors that mean a host did not answer in time.
_TIMED_OUT = re.compile(r"timed? ?out|Timeout was reached", re.IGNORECASE)

# Messages of GDAL errors that no retry will cure.
_PERMANENT = re.compile(r"HTTP response code: (400|401|403|404|410)|does not exist|No such file|"
                        r"not recognized as a supported file format|Access Denied|AccessDenied", re.IGNORECASE)


class RemoteAssetError(SceneError):
    """A remote asset could not be opened or read (after retries where retrying made sense)."""

    def __init__(self, message: str, href: str, permanent: bool) -> None:
        super().__init__(message)
        self.href = href
        self.permanent = permanent


_reader_thread = threading.local()
"""``stop``: the event of the ``RemoteReader._in_parallel`` call a reader thread works for."""


class BlockCacheError(InputError):
    """The block cache cannot be written (a full or read-only disk, no permission)."""


def host_matches(href: str, hosts: Sequence[str]) -> bool:
    """True when the parsed host of ``href`` is one of ``hosts`` or a subdomain of one
    (``x.blob.core.windows.net`` for ``blob.core.windows.net``); an entry with a port
    (``127.0.0.1:8080``) needs that exact host and port. Never a substring test: neither
    ``https://evil.example/a.blob.core.windows.net/`` nor ``blob.core.windows.net.evil.example``
    matches."""
    try:
        parts = urllib.parse.urlsplit(href or "")
        host, port = (parts.hostname or "").lower().rstrip("."), parts.port
    except ValueError:  # a malformed port
        return False
    if not host or parts.scheme.lower() not in ("http", "https"):
        return False
    port = port or (443 if parts.scheme.lower() == "https" else 80)
    for entry in hosts:
        name, _, want = entry.lower().rstrip(".").rpartition(":") if entry.count(":") == 1 else (entry.lower(), "", "")
        if want:
            if host == name and str(port) == want:
                return True
        elif host == name or host.endswith("." + name):
            return True
    return False


def default_cache_dir() -> Path:
    """``$THERMOCROP_CACHE``, else ``$XDG_CACHE_HOME/thermocrop``, else ``~/.cache/thermocrop``."""
    if os.environ.get("THERMOCROP_CACHE"):
        return Path(os.environ["THERMOCROP_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "thermocrop"


def is_remote(href: str) -> bool:
    """True for ``http(s)://``, ``s3://`` and GDAL ``/vsicurl/`` or ``/vsis3/`` paths."""
    return bool(re.match(r"^(https?|s3)://|^/vsi(curl|s3)/", href or "", re.IGNORECASE))


def strip_signature(href: str) -> str:
    """The href without its query string (where signed URLs keep their tokens)."""
    parts = urllib.parse.urlsplit(href)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def asset_key(href: str) -> str:
    """A stable cache key for an asset: a hash of its unsigned href."""
    return hashlib.sha256(strip_signature(href).encode()).hexdigest()[:40]


@dataclass(frozen=True)
class AssetRef:
    """One band of a remote raster asset.

    Attributes:
        href: the asset's href as the catalogue gives it (unsigned).
        band: the Sentinel-2 band it holds (``"B04"``, ``"SCL"``).
        index: 1-based band index inside the file.
        collection: the STAC collection (Planetary Computer signs per collection).
        nodata: the no-data value the catalogue declares, if any.
        grid: the asset's grid from the item's projection metadata, when complete.
    """

    href: str
    band: str
    index: int = 1
    collection: Optional[str] = None
    nodata: Optional[float] = None
    grid: Optional[Grid] = None

    @property
    def key(self) -> str:
        return asset_key(self.href)


@dataclass
class AssetInfo:
    """What opening an asset told: its grid, data type and internal block size."""

    width: int
    height: int
    count: int
    dtype: str
    block_width: int
    block_height: int
    crs: str
    transform: tuple[float, ...]
    nodata: Optional[float]

    @property
    def grid(self) -> Grid:
        from affine import Affine
        from rasterio.crs import CRS

        return Grid(CRS.from_wkt(self.crs), Affine(*self.transform[:6]), self.width, self.height)

    def block_shape(self, row: int, col: int) -> tuple[int, int]:
        return (min(self.block_height, self.height - row * self.block_height),
                min(self.block_width, self.width - col * self.block_width))

    def blocks_of(self, window) -> list[tuple[int, int]]:
        """Blocks ``(row, col)`` that a window (already inside the raster) touches."""
        r0, c0 = int(window.row_off), int(window.col_off)
        r1, c1 = r0 + int(window.height) - 1, c0 + int(window.width) - 1
        return [(r, c) for r in range(r0 // self.block_height, r1 // self.block_height + 1)
                for c in range(c0 // self.block_width, c1 // self.block_width + 1)]


@dataclass
class FetchStats:
    """What a reader has done so far, for progress reports."""

    bytes_fetched: int = 0
    blocks_fetched: int = 0
    blocks_cached: int = 0
    assets_opened: int = 0
    dates_done: int = 0
    dates_total: int = 0
    failed: list[str] = field(default_factory=list)

    def describe(self) -> str:
        text = (f"{self.bytes_fetched / 1e6:.1f} MB fetched in {self.blocks_fetched} blocks, "
                f"{self.blocks_cached} blocks from the cache")
        if self.dates_total:
            text += f", {self.dates_done} of {self.dates_total} dates"
        return text


class BlockCache:
    """Decoded blocks of remote assets on disk: ``<root>/blocks/<key>/b<band>_<row>_<col>.z``
    (zlib-compressed raw values) beside ``info.json``. Files appear only once complete."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def folder(self, key: str) -> Path:
        return self.root / "blocks" / key[:2] / key

    def _write(self, path: Path, data: bytes) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        except OSError as exc:
            raise self._unwritable(exc) from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if isinstance(exc, OSError):
                raise self._unwritable(exc) from None
            raise

    def _unwritable(self, exc: OSError) -> BlockCacheError:
        why = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
               errno.EROFS: "the disk is read-only", errno.EACCES: "permission denied",
               errno.EPERM: "permission denied"}.get(exc.errno, exc.strerror or str(exc))
        return BlockCacheError(f"The block cache {self.root} cannot be written ({why}): free some space, or "
                               "choose another cache folder (--cache, THERMOCROP_CACHE, or the plugin's cache "
                               "setting).")

    def load_info(self, key: str) -> Optional[AssetInfo]:
        path = self.folder(key) / "info.json"
        try:
            return AssetInfo(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def store_info(self, key: str, href: str, info: AssetInfo) -> None:
        data = dict(info.__dict__)
        data["transform"] = list(info.transform)
        self._write(self.folder(key) / "info.json", json.dumps(data).encode())
        self._write(self.folder(key) / "href.txt", strip_signature(href).encode())

    def block_path(self, key: str, index: int, row: int, col: int) -> Path:
        return self.folder(key) / f"b{index}_{row}_{col}.z"

    def has(self, key: str, index: int, row: int, col: int) -> bool:
        return self.block_path(key, index, row, col).exists()

    def load(self, key: str, index: int, row: int, col: int, shape: tuple[int, int],
             dtype: str) -> Optional[np.ndarray]:
        try:
            raw = zlib.decompress(self.block_path(key, index, row, col).read_bytes())
        except (OSError, zlib.error):
            return None
        if len(raw) != shape[0] * shape[1] * np.dtype(dtype).itemsize:
            return None
        return np.frombuffer(raw, dtype=dtype).reshape(shape)

    def store(self, key: str, index: int, row: int, col: int, block: np.ndarray) -> None:
        self._write(self.block_path(key, index, row, col), zlib.compress(np.ascontiguousarray(block).tobytes(), 1))


class PlanetaryComputerSigner:
    """Appends Planetary Computer SAS tokens to the hrefs of ``hosts`` (others are left
    unsigned), one token per collection, renewed before it expires. The subscription key
    (``PC_SDK_SUBSCRIPTION_KEY`` from the environment unless given) goes to ``token_url`` only;
    both come from ThermoCrop's catalogue definitions or the user's settings, never a data file."""

    def __init__(self, token_url: str = PC_TOKEN_URL, subscription_key: Optional[str] = None,
                 timeout: float = 30.0, hosts: Sequence[str] = PC_SIGNED_HOSTS) -> None:
        self.token_url = token_url.rstrip("/")
        self.hosts = tuple(hosts)
        self.subscription_key = subscription_key if subscription_key is not None else os.environ.get(
            "PC_SDK_SUBSCRIPTION_KEY")
        self.timeout = timeout
        self._tokens: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def _token(self, collection: str) -> str:
        with self._lock:
            token, expires = self._tokens.get(collection, ("", 0.0))
            if token and expires - time.time() > 300:
                return token
            headers = {"Ocp-Apim-Subscription-Key": self.subscription_key} if self.subscription_key else {}
            url = f"{self.token_url}/{collection}"
            session = session_with_retries(deadline=Deadline(what=f"the SAS token request to {host_of(url)}"))
            try:
                response = session.get(url, headers=headers, timeout=self.timeout)
                response.raise_for_status()
                answer = response.json()
                token = answer["token"]
            except InputError:
                raise
            except Exception as exc:  # requests' and JSON errors alike
                raise SceneError(f"Could not get a Planetary Computer SAS token from {url}: "
                                 f"{strip_signature(str(exc))}") from None
            finally:
                session.close()
            expiry = answer.get("msft:expiry")
            try:
                import datetime as dt

                expires = dt.datetime.fromisoformat(str(expiry).replace("Z", "+00:00")).timestamp()
            except ValueError:
                expires = time.time() + 1800
            self._tokens[collection] = (token, expires)
            return token

    def forget(self) -> None:
        """Drop the tokens held, so that the next href is signed with a fresh one."""
        with self._lock:
            self._tokens.clear()

    def sign(self, href: str, collection: Optional[str]) -> str:
        if not host_matches(href, self.hosts) or "sig=" in href:
            return href
        token = self._token(collection or "sentinel-2-l2a")
        return f"{href}{'&' if '?' in href else '?'}{token}"


def _gdal_network_bytes() -> int:
    from osgeo import gdal

    try:
        stats = json.loads(gdal.NetworkStatsGetAsSerializedJSON() or "{}")
    except ValueError:
        return 0
    return int(sum(m.get("downloaded_bytes", 0) for m in (stats.get("methods") or {}).values()))


STALL_OPTIONS = ("GDAL_HTTP_TIMEOUT", "GDAL_HTTP_CONNECTTIMEOUT", "GDAL_HTTP_LOW_SPEED_TIME",
                 "GDAL_HTTP_LOW_SPEED_LIMIT")
"""GDAL's settings that end a stalled request (see :func:`bound_every_request`)."""


def bound_every_request(timeout: float) -> None:
    """Give every GDAL request of the process an end, where the user set none.

    A reader's threads carry its timeouts as thread-local settings, but GDAL may also fetch on
    threads that never saw them (a dataset closed or described on another thread), and one that
    waits on a silent server without a timeout waits for ever, holding the interpreter while
    rasterio opens the file. So GDAL's own defaults for the whole process become this reader's
    timeouts; whatever the user set (in the environment or GDAL's configuration) stays.
    """
    from osgeo import gdal

    values = {"GDAL_HTTP_TIMEOUT": max(int(timeout), 1), "GDAL_HTTP_CONNECTTIMEOUT": max(int(min(timeout, 30)), 1),
              "GDAL_HTTP_LOW_SPEED_TIME": max(int(timeout), 1), "GDAL_HTTP_LOW_SPEED_LIMIT": 1}
    # What the process as a whole has (its global settings and environment), without this
    # thread's own: asked on a thread of its own (GDAL 3.6 has no GetGlobalConfigOption).
    unset: list[str] = []
    probe = threading.Thread(target=lambda: unset.extend(k for k in STALL_OPTIONS if gdal.GetConfigOption(k) is None),
                             name="thermocrop-gdal-settings")
    probe.start()
    probe.join()
    for key in unset:
        gdal.SetConfigOption(key, str(values[key]))


class RemoteReader:
    """Reads blocks of remote raster assets through GDAL, caching every block on disk.

    Args:
        cache_dir: where fetched blocks and asset descriptions are kept
            (default :func:`default_cache_dir`).
        max_requests: assets read at the same time.
        retries: retries of an asset after an error GDAL did not retry itself; the waits
            double from ``retry_delay`` seconds (with jitter).
        retry_delay: first wait, and GDAL's ``GDAL_HTTP_RETRY_DELAY``.
        timeout: seconds before GDAL gives up on a stalled request (``GDAL_HTTP_TIMEOUT``).
        deadline: seconds all the tries of one asset may take (default
            ``THERMOCROP_NETWORK_DEADLINE`` or 600).
        signer: adds access tokens to hrefs (e.g. :class:`PlanetaryComputerSigner`).
        gdal_options: extra GDAL configuration options (e.g. ``AWS_S3_ENDPOINT``).
        on_stats: called with :class:`FetchStats` as blocks arrive (progress in bytes and dates).
    """

    def __init__(self, cache_dir=None, *, max_requests: int = DEFAULT_MAX_REQUESTS,
                 retries: int = DEFAULT_RETRIES, retry_delay: float = 0.5, timeout: float = 60.0,
                 signer: Optional[PlanetaryComputerSigner] = None, gdal_options: Optional[dict] = None,
                 on_stats: Optional[Callable[[FetchStats], None]] = None, deadline: Optional[float] = None) -> None:
        if max_requests < 1:
            raise SceneError(f"max_requests must be at least 1, got {max_requests}.")
        self.cache = BlockCache(Path(cache_dir) if cache_dir else default_cache_dir())
        self.max_requests = max_requests
        self.retries = retries
        self.retry_delay = retry_delay
        self.timeout = timeout
        self.deadline = deadline
        self.signer = signer
        self.extra_options = dict(gdal_options or {})
        self.on_stats = on_stats
        self.stats = FetchStats()
        self._lock = threading.Lock()
        self._infos: dict[str, AssetInfo] = {}
        self._stop = threading.Event()  # stops the reads on the calling thread (none by default)
        bound_every_request(timeout)

    # -- GDAL set-up ---------------------------------------------------------------------
    def gdal_options(self) -> dict[str, Any]:
        options = {
            "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
            "GDAL_HTTP_MAX_RETRY": str(max(self.retries, 1)),
            "GDAL_HTTP_RETRY_DELAY": str(self.retry_delay),
            "GDAL_HTTP_TIMEOUT": str(max(int(self.timeout), 1)),
            "GDAL_HTTP_CONNECTTIMEOUT": str(max(int(min(self.timeout, 30)), 1)),
            # A transfer slower than 1 byte/s for that long is a stall, whatever the total time.
            "GDAL_HTTP_LOW_SPEED_TIME": str(max(int(self.timeout), 1)),
            "GDAL_HTTP_LOW_SPEED_LIMIT": "1",
            "GDAL_HTTP_USERAGENT": "ThermoCrop",
            "CPL_VSIL_CURL_USE_HEAD": "YES",
            # No probing for side-car files (.aux.xml, .msk, .ovr): one request each, per asset.
            "CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".tif,.tiff,.TIF,.TIFF,.jp2,.JP2",
            "GDAL_PAM_ENABLED": "NO",
            "CPL_VSIL_NETWORK_STATS_ENABLED": "YES",
            # Headers and blocks of many assets stay in GDAL's in-process cache across handles.
            "CPL_VSIL_CURL_CACHE_SIZE": str(128 * 1024 * 1024),
        }
        options.update(self.extra_options)
        return options

    def gdal_path(self, asset: AssetRef) -> str:
        href = asset.href
        if href.startswith("/vsi"):
            return href
        if href.lower().startswith("s3://"):
            return "/vsis3/" + href[len("s3://"):]
        if href.lower().startswith(("http://", "https://")):
            if self.signer is not None:
                href = self.signer.sign(href, asset.collection)
            return "/vsicurl/" + href
        return href

    def _report(self) -> None:
        if self.on_stats is not None:
            try:
                self.on_stats(self.stats)
            except Exception:  # a progress display must not stop the reading
                log.debug("progress callback failed", exc_info=True)

    def _clear_gdal_cache(self, path: str) -> None:
        from osgeo import gdal

        try:
            gdal.VSICurlPartialClearCache(path)  # what GDAL kept of a broken transfer must go
        except Exception:  # older bindings: nothing to clear
            pass

    def _attempts(self, asset: AssetRef, work: Callable[[Any], Any], what: str) -> Any:
        """Open the asset and run ``work(dataset)``, retrying with backoff on transient errors."""
        import rasterio

        delay = self.retry_delay
        last: Optional[Exception] = None
        deadline = Deadline(self.deadline, f"{what.lower()} {strip_signature(asset.href)}")
        for attempt in range(self.retries + 1):
            if self._stop_event().is_set():
                raise CancelledError("Reading the remote assets was stopped.")
            path = self.gdal_path(asset)
            try:
                # A remote asset is a GeoTIFF or JPEG 2000 (a remote VRT could name any file or
                # host); a local one goes through the scene files' check.
                opened = open_scene_file(path) if os.path.isfile(path) else open_remote_asset(path)
                with opened as ds:
                    return work(ds)
            except (rasterio.errors.RasterioError, rasterio.errors.RasterioIOError) as exc:
                last = exc
                message = str(exc)
                if _PERMANENT.search(message):
                    if "403" in message and self.signer is not None and attempt == 0:
                        self.signer.forget()  # an expired token: ask for a new one once
                    else:
                        raise RemoteAssetError(f"{what} {strip_signature(asset.href)} failed: "
                                               f"{strip_signature(message)}", asset.href, True) from None
                self._clear_gdal_cache(path)
                if attempt < self.retries:
                    wait = min(delay * (1.0 + 0.25 * random.random()), max_retry_wait())
                    if wait >= deadline.left():
                        break
                    log.info("Reading %s failed (%s); retrying in %.1f s", strip_signature(asset.href),
                             strip_signature(message), wait)
                    if self._stop_event().wait(wait):
                        raise CancelledError("Reading the remote assets was stopped.") from None
                    delay *= 2
        cause = strip_signature(str(last))
        if last is not None and _TIMED_OUT.search(str(last)):
            raise RemoteAssetError(f"{what} {strip_signature(asset.href)} timed out: {host_of(asset.href)} did not "
                                   f"answer within {self.timeout:g} s ({cause})", asset.href, False)
        raise RemoteAssetError(f"{what} {strip_signature(asset.href)} failed after {attempt + 1} attempts: "
                               f"{cause}", asset.href, False)

    def _stop_event(self) -> threading.Event:
        """The event that stops the reads of this thread: its ``_in_parallel`` call's."""
        return getattr(_reader_thread, "stop", None) or self._stop

    # -- asset descriptions ----------------------------------------------------------------
    def info(self, asset: AssetRef) -> AssetInfo:
        """The asset's grid, type and block size: from the cache, else by opening it."""
        key = asset.key
        info = self._infos.get(key) or self.cache.load_info(key)
        if info is None:
            def describe(ds) -> AssetInfo:
                bh, bw = ds.block_shapes[0]
                return AssetInfo(ds.width, ds.height, ds.count, ds.dtypes[0], int(bw), int(bh),
                                 ds.crs.to_wkt() if ds.crs else "", tuple(ds.transform)[:6], ds.nodata)

            info = self._attempts(asset, describe, "Opening")
            if not info.crs:
                raise RemoteAssetError(f"{strip_signature(asset.href)} has no coordinate reference system.",
                                       asset.href, True)
            if asset.index > info.count:
                raise RemoteAssetError(f"{strip_signature(asset.href)} has {info.count} bands, not "
                                       f"band {asset.index}.", asset.href, True)
            self.cache.store_info(key, asset.href, info)
            with self._lock:
                self.stats.assets_opened += 1
        self._infos[key] = info
        return info

    def check(self, assets: Sequence[AssetRef], progress: Optional[Progress] = None
              ) -> dict[str, RemoteAssetError]:
        """Open every asset not yet described in the cache, in parallel.

        Returns:
            Asset key -> the error, for the assets that could not be opened.
        """
        progress = progress or Progress()
        unique = list({a.key: a for a in assets}.values())
        todo = [a for a in unique if a.key not in self._infos and self.cache.load_info(a.key) is None]
        for a in unique:
            if a not in todo:
                self.info(a)
        if not todo:
            progress(1.0)
            return {}
        return self._in_parallel([(a, self.info, (a,), None) for a in todo], progress)

    def _in_parallel(self, calls: Sequence[tuple[AssetRef, Callable[..., Any], tuple, Any]], progress: Progress,
                     finished: Optional[Callable[[Any], None]] = None) -> dict[str, RemoteAssetError]:
        """Run ``work(*args)`` for every ``(asset, work, args, tag)`` of ``calls`` on at most
        ``max_requests`` daemon threads inside this reader's GDAL settings, with the statistics
        and the progress updated after each and ``finished(tag)`` called.

        The calling thread waits in steps of a quarter of a second, so that Ctrl+C or a
        cancellation stops the run at once: the calls not yet started are dropped, the threads
        are given 1 s to finish the request they are in, and one still waiting on a server is
        left to end with GDAL's timeout, in the background, without holding the program.

        Returns:
            Asset key -> the error, for the calls whose asset failed.
        """
        import rasterio

        failures: dict[str, RemoteAssetError] = {}
        todo: queue.SimpleQueue = queue.SimpleQueue()
        results: queue.SimpleQueue = queue.SimpleQueue()
        for index in range(len(calls)):
            todo.put(index)
        stop = threading.Event()

        def worker() -> None:
            from osgeo import gdal

            # rasterio logs GDAL's messages while it works on this thread, but what GDAL says
            # outside it (closing a dataset) goes to stderr, signed URL and all: warnings are
            # silenced here, and CPL_DEBUG output, which even GDAL's quiet handler prints, is off.
            gdal.PushErrorHandler("CPLQuietErrorHandler")
            gdal.SetThreadLocalConfigOption("CPL_DEBUG", "OFF")
            # The timeouts stay with the thread even if the caller, stopped, leaves its
            # environment while this thread still waits on a server.
            for key, value in options.items():
                gdal.SetThreadLocalConfigOption(key, str(value))
            _reader_thread.stop = stop
            try:
                while not stop.is_set():
                    try:
                        index = todo.get_nowait()
                    except queue.Empty:
                        return
                    _, work, args, _ = calls[index]
                    try:
                        work(*args)
                        results.put((index, None))
                    except BaseException as exc:  # handed to the waiting thread, which decides
                        results.put((index, exc))
            finally:
                for key in options:
                    gdal.SetThreadLocalConfigOption(key, None)
                gdal.SetThreadLocalConfigOption("CPL_DEBUG", None)
                gdal.PopErrorHandler()

        options = self.gdal_options()
        with rasterio.Env(**options):
            from osgeo import gdal

            gdal.NetworkStatsReset()
            base = self.stats.bytes_fetched
            threads = [threading.Thread(target=worker, name=f"thermocrop-fetch-{k}", daemon=True)
                       for k in range(min(self.max_requests, len(calls)))]
            for thread in threads:
                thread.start()
            try:
                for done in range(1, len(calls) + 1):
                    while True:
                        try:
                            index, error = results.get(timeout=0.25)
                            break
                        except queue.Empty:
                            progress.check()
                    asset, _, _, tag = calls[index]
                    if isinstance(error, RemoteAssetError):
                        failures[asset.key] = error
                    elif error is not None:
                        raise error
                    if finished is not None:
                        finished(tag)
                    self.stats.bytes_fetched = base + _gdal_network_bytes()
                    self._report()
                    progress(done / len(calls))
            except BaseException:
                stop.set()
                # A moment for the threads to finish the request they are in, so that the
                # program rarely ends while GDAL works on one of them; a stalled one is left.
                ends = time.monotonic() + 1.0
                for thread in threads:
                    thread.join(max(ends - time.monotonic(), 0.0))
                raise
        return failures

    # -- blocks ----------------------------------------------------------------------------
    def _fetch_blocks(self, asset: AssetRef, blocks: Sequence[tuple[int, int]]) -> None:
        info = self.info(asset)
        todo = [b for b in blocks if not self.cache.has(asset.key, asset.index, *b)]
        with self._lock:
            self.stats.blocks_cached += len(blocks) - len(todo)
        if not todo:
            return

        def read(ds) -> None:
            from rasterio.windows import Window

            for row, col in todo:
                if self._stop_event().is_set():
                    raise CancelledError("Reading the remote assets was stopped.")
                if self.cache.has(asset.key, asset.index, row, col):
                    continue
                h, w = info.block_shape(row, col)
                data = ds.read(asset.index, window=Window(col * info.block_width, row * info.block_height, w, h))
                self.cache.store(asset.key, asset.index, row, col, data)
                with self._lock:
                    self.stats.blocks_fetched += 1

        self._attempts(asset, read, "Reading")

    def fetch(self, requests: Sequence[tuple[AssetRef, Sequence[tuple[int, int]], Any]],
              progress: Optional[Progress] = None) -> dict[str, RemoteAssetError]:
        """Fetch blocks into the cache, a bounded number of assets at a time.

        Args:
            requests: ``(asset, blocks, group)``; a group (e.g. an acquisition date) counts as
                done in the statistics once all its requests are.
            progress: progress and cancellation (checked between assets).

        Returns:
            Asset key -> the error, for assets that could not be read.
        """
        progress = progress or Progress()
        if not requests:
            progress(1.0)
            return {}
        pending: dict[Any, int] = {}
        for _, _, group in requests:
            pending[group] = pending.get(group, 0) + 1
        self.stats.dates_total, self.stats.dates_done = len(pending), 0

        def finished(group) -> None:
            pending[group] -= 1
            if pending[group] == 0:
                self.stats.dates_done += 1

        return self._in_parallel([(a, self._fetch_blocks, (a, list(b)), g) for a, b, g in requests], progress,
                                 finished)

    def read(self, asset: AssetRef, window) -> np.ndarray:
        """The asset's values in ``window`` (on its own grid, inside it), from cached blocks;
        missing blocks are fetched first."""
        info = self.info(asset)
        blocks = info.blocks_of(window)
        if any(not self.cache.has(asset.key, asset.index, *b) for b in blocks):
            # On a reader thread, so that the calling thread stays responsive to Ctrl+C.
            failures = self._in_parallel([(asset, self._fetch_blocks, (asset, blocks), None)], Progress())
            if failures:
                raise failures[asset.key]
        r0, c0 = int(window.row_off), int(window.col_off)
        h, w = int(window.height), int(window.width)
        out = np.zeros((h, w), dtype=info.dtype)
        for row, col in blocks:
            shape = info.block_shape(row, col)
            block = self.cache.load(asset.key, asset.index, row, col, shape, info.dtype)
            if block is None:
                raise RemoteAssetError(f"The cached block {row},{col} of {strip_signature(asset.href)} is "
                                       f"damaged; delete {self.cache.folder(asset.key)} and run again.",
                                       asset.href, False)
            br0, bc0 = row * info.block_height, col * info.block_width
            ys, ye = max(r0, br0), min(r0 + h, br0 + shape[0])
            xs, xe = max(c0, bc0), min(c0 + w, bc0 + shape[1])
            out[ys - r0:ye - r0, xs - c0:xe - c0] = block[ys - br0:ye - br0, xs - bc0:xe - bc0]
        return out
