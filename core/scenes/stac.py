"""Sentinel-2 from STAC catalogues: search (pystac-client), item collections saved as JSON,
and items turned into scenes whose bands are read remotely by window (``core.scenes.remote``,
``core.scenes.remote_product``).

What an item's fields say is read by ``core.scenes.item_fields``. Asset naming differs between
catalogues (Earth Search ``red`` / ``scl``, Planetary Computer ``B04`` / ``SCL``, the
Copernicus Data Space ``B04_10m`` / ``SCL_20m``); bands are recognised from the ``eo``
extension's band names (``eo:bands``, STAC 1.1 ``bands``), then the asset key, and the finest
resolution of each band is used. The digital-number offset comes from
``earthsearch:boa_offset_applied``, else the ``raster`` extension's scale/offset, else the
processing baseline; projections from ``proj:epsg`` or ``proj:code`` (pystac 1.15 rewrites
the first into the second when it saves items).

An item collection is data, not configuration: where credentials go (the token service, the S3
endpoint, the hosts that get SAS tokens) comes from :data:`CATALOGS` or from the caller, and
local hrefs are read only inside the collection's own folder (:func:`load_items`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..errors import InputError, SceneError
from ..io.http_session import Deadline, NetworkDeadlineError, deadline_in, host_of, retry_policy, timed_out_in
from ..io.output import write_text
from ..progress import Progress
from ..redact import install_redaction, redact
from .bands import S2_BANDS
from .item_fields import (
    asset_band,
    asset_resolution,
    cloud_cover,
    dn_offset,
    grid_of_asset,
    is_cog,
    item_date,
    item_level,
    item_tile,
)
from .product import BandSource, Scene, one_level
from .remote import (
    PC_SIGNED_HOSTS,
    PC_TOKEN_URL,
    AssetRef,
    PlanetaryComputerSigner,
    RemoteReader,
    host_matches,
    is_remote,
    strip_signature,
)
from .remote_product import RemoteProduct

log = logging.getLogger(__name__)

CATALOG_KEY = "thermocrop:catalog"
"""Field of a saved item collection that records the catalogue it came from. Only its ``name``
is used, to pick a catalogue of :data:`CATALOGS`; endpoints and signing written there are
ignored (with a warning) since a shared file must not decide where credentials go."""

TRUSTED_FIELDS = ("signing", "token_url", "s3_endpoint", "signed_hosts")
"""Fields of a :class:`Catalog` that decide where credentials go."""


@dataclass(frozen=True)
class Catalog:
    """A STAC API serving Sentinel-2 L2A, and how its assets are reached.

    Attributes:
        name: short name (``earth-search``, ``planetary-computer``, ``cdse``, or ``url``).
        url: the STAC API root.
        collection: the Sentinel-2 L2A collection id.
        signing: ``"planetary-computer"`` when asset hrefs need a SAS token.
        token_url: the SAS token service (the only host the subscription key is sent to).
        s3_endpoint: the S3 endpoint of ``s3://`` hrefs (the Copernicus Data Space).
        signed_hosts: hosts (and their subdomains; ``host:port`` for one port) whose hrefs get
            the SAS tokens.
    """

    name: str
    url: str
    collection: str = "sentinel-2-l2a"
    signing: Optional[str] = None
    token_url: Optional[str] = None
    s3_endpoint: Optional[str] = None
    signed_hosts: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items() if v not in (None, ())}


CATALOGS: dict[str, Catalog] = {
    "earth-search": Catalog("earth-search", "https://earth-search.aws.element84.com/v1"),
    "planetary-computer": Catalog("planetary-computer", "https://planetarycomputer.microsoft.com/api/stac/v1",
                                  signing="planetary-computer", token_url=PC_TOKEN_URL,
                                  signed_hosts=PC_SIGNED_HOSTS),
    "cdse": Catalog("cdse", "https://stac.dataspace.copernicus.eu/v1", s3_endpoint="eodata.dataspace.copernicus.eu"),
}


def resolve_catalog(spec: Union[str, Catalog], collection: Optional[str] = None) -> Catalog:
    """A :class:`Catalog` from a name in :data:`CATALOGS` or the URL of any STAC API."""
    if isinstance(spec, Catalog):
        catalog = spec
    elif spec in CATALOGS:
        catalog = CATALOGS[spec]
    elif re.match(r"^https?://", spec or ""):
        catalog = Catalog("url", spec.rstrip("/"))
    else:
        raise InputError(f"Unknown catalogue {spec!r}: use {', '.join(CATALOGS)} or the URL of a STAC API.")
    if collection:
        catalog = Catalog(**{**catalog.__dict__, "collection": collection})
    return catalog


@dataclass
class ItemSummary:
    """What a user needs to see of a found item."""

    id: str
    date: np.datetime64
    tile: str
    cloud_cover: Optional[float]
    platform: str
    level: Optional[str]


# --------------------------------------------------------------------------------------------
# Search


def parcels_bbox(parcels: Any) -> tuple[float, float, float, float]:
    """Longitude/latitude bounding box of a parcel layer (path, GeoDataFrame or ParcelTable),
    or a ``(west, south, east, north)`` tuple passed through."""
    if isinstance(parcels, (tuple, list)) and len(parcels) == 4:
        return tuple(float(v) for v in parcels)  # type: ignore[return-value]
    geometry = getattr(parcels, "geometry", None)
    if geometry is None or isinstance(parcels, (str, os.PathLike)):
        from ..parcels import load_parcels

        geometry = load_parcels(parcels, block_field=None).geometry
    usable = geometry[geometry.notna()]
    if len(usable) == 0:
        raise InputError("The parcel layer holds no usable geometry to search a catalogue with.")
    west, south, east, north = usable.to_crs("EPSG:4326").total_bounds
    return float(west), float(south), float(east), float(north)


def season_period(season: Optional[int] = None, start: Optional[str] = None, end: Optional[str] = None
                  ) -> tuple[np.datetime64, np.datetime64]:
    """First and last day to search: a calendar year ``season``, narrowed or replaced by
    ``start`` / ``end`` (``YYYY-MM-DD``)."""
    try:
        first = np.datetime64(start, "D") if start else (np.datetime64(f"{season:04d}-01-01") if season else None)
        last = np.datetime64(end, "D") if end else (np.datetime64(f"{season:04d}-12-31") if season else None)
    except ValueError as exc:
        raise InputError(f"Dates must be written YYYY-MM-DD ({exc}).") from None
    if first is None or last is None:
        raise InputError("Give a season (e.g. 2024) or both a start and an end date.")
    if last < first:
        raise InputError(f"The search period ends ({last}) before it starts ({first}).")
    return first, last


def _conforms(client: Any, name: str) -> bool:
    from pystac_client.conformance import ConformanceClasses

    try:
        return bool(client.conforms_to(getattr(ConformanceClasses, name)))
    except Exception:  # conformance missing or malformed: treat as not supported
        return False


def search_items(
    parcels: Any,
    *,
    season: Optional[int] = None,
    start: Optional[str] = None,
    end: Optional[str] = None,
    catalog: Union[str, Catalog] = "earth-search",
    max_cloud: float = 60.0,
    max_items: Optional[int] = None,
    timeout: float = 60.0,
    deadline: Optional[float] = None,
    method: str = "POST",
    page_size: int = 100,
    progress: Optional[Progress] = None,
):
    """Find the Sentinel-2 L2A items over the parcels in a season.

    Args:
        parcels: a parcel layer (path, GeoDataFrame, ``ParcelTable``) or a lon/lat bbox.
        season: calendar year to search; ``start`` / ``end`` (``YYYY-MM-DD``) narrow or replace it.
        catalog: a name of :data:`CATALOGS`, a STAC API URL or a :class:`Catalog`; for a
            collection other than the catalogue's Sentinel-2 L2A one, a :class:`Catalog` from
            :func:`resolve_catalog` with that collection.
        max_cloud: largest ``eo:cloud_cover`` (percent) kept.
        max_items: stop after this many items.
        timeout: seconds per HTTP request (requests are retried on 429/5xx with backoff).
        deadline: seconds the whole search may take, retries and waits included (default
            ``THERMOCROP_NETWORK_DEADLINE`` or 600).
        method: ``"POST"`` or ``"GET"`` searches (pages follow the API's ``next`` links).
        page_size: items asked per page.
        progress: progress and cancellation (checked between result pages).

    Returns:
        A ``pystac.ItemCollection`` sorted by date, recording the catalogue and the search in
        its ``thermocrop:catalog`` / ``thermocrop:search`` fields.

    Raises:
        InputError: bad arguments, or the catalogue cannot be reached, answers with an error or
            something that is not a STAC API, or repeats its pages.
        NetworkDeadlineError: the search ran past its deadline (the message names the host).
    """
    import pystac
    from pystac_client import Client
    from pystac_client.stac_api_io import StacApiIO

    install_redaction()
    progress = progress or Progress()
    cat = resolve_catalog(catalog)
    first, last = season_period(season, start, end)
    if not 0 <= max_cloud <= 100:
        raise InputError(f"The cloud limit must lie in 0..100 percent, got {max_cloud}.")
    bbox = parcels_bbox(parcels)
    datetime = f"{first}T00:00:00Z/{last}T23:59:59Z"
    limit = Deadline(deadline, f"searching {cat.url}")
    stac_io = StacApiIO(timeout=timeout, max_retries=retry_policy(deadline=limit))
    items: list[Any] = []
    try:
        client = Client.open(cat.url, stac_io=stac_io, timeout=timeout)
        kwargs: dict[str, Any] = {}
        if _conforms(client, "QUERY"):
            kwargs["query"] = {"eo:cloud_cover": {"lte": max_cloud}}
        elif _conforms(client, "FILTER"):
            kwargs["filter"] = {"op": "<=", "args": [{"property": "eo:cloud_cover"}, max_cloud]}
            kwargs["filter_lang"] = "cql2-json"
        search = client.search(collections=[cat.collection], bbox=bbox, datetime=datetime, method=method,
                               max_items=max_items, limit=page_size, **kwargs)
        seen_links: set[str] = set()
        seen_pages: set[tuple] = set()
        for number, page in enumerate(search.pages_as_dicts(), start=1):
            items.extend(_page_items(page, cat.url, number, seen_pages))
            link = _next_link(page)
            if link is not None:
                if link in seen_links:
                    raise InputError(
                        f"{cat.url} sent page {number} of the search with a 'next' link to a page already read "
                        f"({json.loads(link)[0]}); the search was stopped there. The catalogue's paging is broken: "
                        "try again later or narrow the search (--start/--end).")
                seen_links.add(link)
            limit.check(host_of(cat.url), f"{number} pages read")
            progress.check()
    except InputError:
        raise
    except Exception as exc:  # pystac-client raises APIError, requests its own, pystac STACError
        raise _search_error(exc, cat, stac_io, timeout) from None
    kept, unknown = [], 0
    for item in items:
        cloud = cloud_cover(item)
        if cloud is None:
            unknown += 1
            kept.append(item)
        elif cloud <= max_cloud:
            kept.append(item)
    if unknown:
        log.warning("%d items of %s give no eo:cloud_cover; they are kept.", unknown, cat.url)
    kept.sort(key=lambda i: (item_date(i), i.id))
    found = pystac.ItemCollection(kept, extra_fields={
        CATALOG_KEY: cat.as_dict(),
        "thermocrop:search": {"bbox": list(bbox), "datetime": datetime, "max_cloud": max_cloud,
                              "collection": cat.collection},
    })
    progress(1.0)
    log.info("Found %d items in %s from %s to %s", len(kept), cat.url, first, last)
    return found


def _page_items(page: Any, url: str, number: int, seen_pages: set) -> list[Any]:
    """The items of one search page; a malformed page, or one that repeats an earlier page
    item for item, is an :class:`InputError` naming the catalogue."""
    import pystac

    features = page.get("features") if isinstance(page, dict) else None
    if not isinstance(features, list) or not all(isinstance(f, dict) for f in features):
        raise InputError(f"{url} answered page {number} of the search with 'features' that are not a list of "
                         "items; it does not speak the STAC API.")
    ids = tuple(str(f.get("id")) for f in features)
    if ids and ids in seen_pages:
        raise InputError(f"{url} sent page {number} of the search with the same items as an earlier page; the "
                         "search was stopped there. The catalogue's paging is broken: try again later.")
    seen_pages.add(ids)
    try:
        return [pystac.Item.from_dict(f, preserve_dict=False) for f in features]
    except Exception as exc:  # pystac raises several classes for malformed items
        raise InputError(f"{url} answered page {number} of the search with an item that is not STAC: "
                         f"{_short(exc)}") from None


def _next_link(page: dict) -> Optional[str]:
    """The page's ``next`` link as a comparable text (href, method, body), or None."""
    links = page.get("links") if isinstance(page, dict) else None
    for link in links if isinstance(links, list) else []:
        if isinstance(link, dict) and link.get("rel") == "next":
            return json.dumps([link.get("href"), str(link.get("method") or "GET").upper(), link.get("body")],
                              sort_keys=True, default=str)
    return None


def _short(exc: BaseException, size: int = 300) -> str:
    text = redact(str(exc))
    return text if len(text) <= size else text[:size] + "..."


def _search_error(exc: BaseException, cat: Catalog, stac_io: Any, timeout: float) -> InputError:
    """The error to raise for a failed search: a passed deadline, a timeout, a web page where a
    STAC API was expected, or the catalogue's own error."""
    late = deadline_in(exc)
    if late is not None:
        return late
    host = host_of(cat.url)
    if timed_out_in(exc):
        return NetworkDeadlineError(f"Searching {cat.url} timed out: {host} did not answer within {timeout:g} s. "
                                    "Try again later, or check the address.")
    if isinstance(exc, (ValueError, RecursionError)) or "JSON" in type(exc).__name__ or "Expecting value" in str(exc):
        try:
            text = stac_io.read_text(cat.url)
        except Exception:  # the first failure is what matters
            text = ""
        if text.lstrip()[:1] == "<":
            return InputError(f"{cat.url}: this address answered with a web page, not a STAC API. Give the "
                              "address of the API itself (its landing page answers JSON with 'conformsTo').")
        return InputError(f"{cat.url} answered something that is not STAC JSON ({_short(exc)}); give the address "
                          "of a STAC API.")
    return InputError(f"Searching {cat.url} (collection {cat.collection}) failed: {_short(exc)}")


def summarize(items: Any) -> list[ItemSummary]:
    """Date, tile and cloud cover of every item, in date order."""
    out = [ItemSummary(item.id, item_date(item), item_tile(item), cloud_cover(item),
                       str(item.properties.get("platform") or ""), item_level(item)) for item in items]
    return sorted(out, key=lambda s: (s.date, s.id))


def items_json(items: Any) -> str:
    """The text :func:`save_items` writes for ``items``."""
    return json.dumps(items.to_dict(transform_hrefs=False), indent=1)


def save_items(items: Any, path: Union[str, os.PathLike], overwrite: bool = False) -> Path:
    """Write an item collection as GeoJSON, through ``core.io.output`` (staged beside, checked,
    then renamed: the file is never seen half-written)."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise InputError(f"{path} already exists; choose another name or allow overwriting.")
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, items_json(items), overwrite=overwrite, what="item collection")


def is_item_collection_file(path: Union[str, os.PathLike]) -> bool:
    """True for a JSON file holding a STAC ItemCollection (or a single STAC Item)."""
    path = Path(path)
    if path.suffix.lower() not in (".json", ".geojson") or not path.is_file():
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).decode("utf-8", "ignore")
    except OSError:
        return False
    return '"FeatureCollection"' in head or '"Feature"' in head or '"stac_version"' in head


def load_items(path: Union[str, os.PathLike]):
    """Read an item collection (or one item) saved by :func:`save_items` or any STAC tool.

    Asset hrefs must be ``http(s)://`` or ``s3://`` addresses, or local paths inside the
    file's own folder: a relative path is resolved against that folder (not the working
    folder) and replaced by the absolute path; a path that leaves the folder (``..``, an
    absolute path elsewhere, a symbolic link out of it), a ``file://`` URI elsewhere, a GDAL
    ``/vsi...`` path or any other scheme is refused, naming the item and the href.

    Raises:
        InputError: the file cannot be read, is not a STAC ItemCollection, or an href is refused.
    """
    import pystac

    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(f"Cannot read STAC items from {path}: {_short(exc)}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a STAC ItemCollection: it holds a JSON {type(data).__name__}, not an object.")
    if data.get("type") != "Feature" and not isinstance(data.get("features"), list):
        raise InputError(f"{path} is not a STAC ItemCollection: its 'features' is not a list of items.")
    try:
        if data.get("type") == "Feature":
            collection = pystac.ItemCollection([pystac.Item.from_dict(data)])
        else:
            collection = pystac.ItemCollection.from_dict(data, preserve_dict=False)
    except Exception as exc:  # pystac raises several classes for malformed items (and RecursionError)
        raise InputError(f"{path} is not a STAC ItemCollection: {_short(exc)}") from None
    folder = path.resolve().parent
    for item in collection:
        for key, asset in item.assets.items():
            asset.href = checked_href(asset.href, folder, item.id, key, path)
    return collection


def checked_href(href: Any, folder: Optional[Path], item_id: str, key: str = "", source: Any = None) -> str:
    """``href`` if ThermoCrop may read it: an ``http(s)://`` or ``s3://`` address, or a local
    path inside ``folder`` (returned resolved, absolute). ``folder`` None refuses every local path.

    Raises:
        InputError: naming the item, the asset, the href and why it is refused.
    """
    where = f"{source}: " if source else ""

    def refuse(why: str) -> InputError:
        return InputError(f"{where}STAC item {item_id} asset {key or '?'} has the href {redact(str(href))[:200]!r}, "
                          f"which is refused: {why}. Only http(s):// and s3:// addresses and files inside the item "
                          "collection's own folder are read.")

    if not isinstance(href, str) or not href.strip() or "\x00" in href:
        raise refuse("it is not a text (or holds a NUL character)")
    if href.lower().startswith("/vsi"):
        raise refuse("GDAL /vsi paths are not accepted")
    parts = urllib.parse.urlsplit(href)
    scheme = parts.scheme.lower()
    if scheme in ("http", "https", "s3"):
        if not parts.netloc:
            raise refuse("the address names no host")
        return href
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise refuse("file:// URIs of other machines are not accepted")
        local = urllib.request.url2pathname(parts.path)
    elif len(scheme) > 1:
        raise refuse(f"the scheme {scheme}:// is not accepted")
    else:
        local = href
    if folder is None:
        raise refuse("local paths are read only from an item collection file, inside its folder")
    root = os.path.realpath(folder)
    target = os.path.realpath(os.path.join(root, local))
    if os.path.commonpath([root, target]) != root:
        raise refuse(f"it leads outside the folder {root}")
    return target


def load_item_files(paths: Sequence[Union[str, os.PathLike]]) -> tuple[Any, list[Path]]:
    """The items of several saved collections as one ``ItemCollection`` (the first one's extra
    fields), and the folders whose files their local hrefs may name."""
    import pystac

    items: list[Any] = []
    extra: dict[str, Any] = {}
    folders: list[Path] = []
    for path in paths:
        collection = load_items(path)
        items.extend(collection)
        extra = extra or dict(collection.extra_fields)
        folders.append(Path(path).resolve().parent)
    return pystac.ItemCollection(items, extra_fields=extra, clone_items=False), folders


# --------------------------------------------------------------------------------------------
# Items -> scenes

def _catalog_of(items: Any, configured: Union[None, str, Catalog] = None) -> Optional[Catalog]:
    """The catalogue whose endpoints and signing the items are read with: ``configured`` (the
    caller's, from the user's options or settings), else the catalogue of :data:`CATALOGS`
    the collection names in its ``thermocrop:catalog`` field, else None. Endpoints and signing
    the field gives otherwise are ignored, with a warning."""
    info = (getattr(items, "extra_fields", None) or {}).get(CATALOG_KEY)
    trusted = resolve_catalog(configured) if configured is not None else None
    if info is None:
        return trusted
    if not isinstance(info, dict):
        log.warning("The item collection's %s field is not an object; it is ignored.", CATALOG_KEY)
        return trusted
    name = info.get("name")
    if trusted is None and isinstance(name, str) and name in CATALOGS:
        trusted = CATALOGS[name]
    for key in TRUSTED_FIELDS:
        given = info.get(key)
        if given in (None, "", []):
            continue
        own = getattr(trusted, key) if trusted is not None else None
        if given != (list(own) if isinstance(own, tuple) else own):
            log.warning("The item collection gives %s %s = %r; it is ignored: where credentials go comes from "
                        "ThermoCrop's catalogue definitions (%s) or your settings, never from a data file.",
                        CATALOG_KEY, key, redact(str(given))[:200],
                        trusted.name if trusted is not None else "none named by this file")
    return trusted


def _set_s3_credentials(hrefs: Sequence[str], keys: dict[str, str]) -> None:
    """Give GDAL S3 keys for the buckets of ``hrefs`` only (GDAL's path-specific options: rasterio
    refuses AWS keys among its configuration options, and the environment is left alone)."""
    from osgeo import gdal

    buckets = sorted({h[5:].split("/", 1)[0] for h in hrefs if h.lower().startswith("s3://")})
    for bucket in buckets:
        for key, value in keys.items():
            gdal.SetPathSpecificOption(f"/vsis3/{bucket}", key, value)


CREDENTIAL_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "PC_SDK_SUBSCRIPTION_KEY")
"""Names of the credentials :func:`reader_for` takes besides the environment's variables."""


def reader_for(items: Any, cache_dir=None, credentials: Optional[dict] = None,
               catalog: Union[None, str, Catalog] = None, **options: Any) -> RemoteReader:
    """A :class:`RemoteReader` set up for the catalogue the items came from (Planetary Computer
    signing, the Copernicus Data Space's S3 endpoint); ``options`` go to the reader.

    Where credentials go is decided by ``catalog`` (a name of :data:`CATALOGS` or a
    :class:`Catalog` the caller configured), else by the catalogue of :data:`CATALOGS` the
    collection names; never by endpoints written in the collection. SAS tokens are added only
    to hrefs whose parsed host is one the catalogue signs (Planetary Computer: its Azure blob
    storage hosts), the subscription key is sent only to the catalogue's token service, and the
    S3 endpoint is the catalogue's, else ``AWS_S3_ENDPOINT`` from the environment.

    ``credentials`` (names of :data:`CREDENTIAL_KEYS`) are used instead of the environment's
    variables of the same names (the QGIS plugin takes them from QGIS's authentication
    manager): the subscription key goes to this reader's signer, S3 keys to GDAL for the items'
    buckets only (path-specific options, held in memory for the rest of the process). They are
    never written anywhere and the environment is left as it is.
    """
    install_redaction()
    credentials = {k: v for k, v in (credentials or {}).items() if v}
    unknown = sorted(set(credentials) - set(CREDENTIAL_KEYS))
    if unknown:
        raise InputError(f"Unknown credentials {', '.join(unknown)}: use {', '.join(CREDENTIAL_KEYS)}.")
    trusted = _catalog_of(items, catalog)
    hrefs = [a.href for item in items for a in item.assets.values()]
    signer = options.pop("signer", None)
    if signer is None:
        if trusted is not None and trusted.signing == "planetary-computer":
            hosts = trusted.signed_hosts or PC_SIGNED_HOSTS
            token_url = trusted.token_url or PC_TOKEN_URL
        else:
            hosts, token_url = PC_SIGNED_HOSTS, PC_TOKEN_URL
        if any(host_matches(h, hosts) for h in hrefs):
            signer = PlanetaryComputerSigner(token_url, subscription_key=credentials.get("PC_SDK_SUBSCRIPTION_KEY"),
                                             hosts=hosts)
            log.debug("Asset hrefs of %s are signed with tokens from %s", ", ".join(hosts), host_of(token_url))
    gdal_options = dict(options.pop("gdal_options", None) or {})
    s3_keys = {k: credentials[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
               if k in credentials}
    if s3_keys:
        _set_s3_credentials(hrefs, s3_keys)

    def given(key: str) -> bool:
        return bool(credentials.get(key) or os.environ.get(key))

    if any(h.lower().startswith("s3://") for h in hrefs):
        endpoint = (trusted.s3_endpoint if trusted else None) or (
            CATALOGS["cdse"].s3_endpoint if any(h.startswith("s3://eodata/") for h in hrefs) else None)
        defaults = {"AWS_S3_ENDPOINT": endpoint, "AWS_VIRTUAL_HOSTING": "FALSE", "AWS_HTTPS": "YES"}
        for key, value in defaults.items():
            if value and not os.environ.get(key):
                gdal_options.setdefault(key, value)
        if not (given("AWS_ACCESS_KEY_ID") and given("AWS_SECRET_ACCESS_KEY")) and \
                os.environ.get("AWS_NO_SIGN_REQUEST", "").upper() not in ("YES", "TRUE", "1"):
            raise SceneError(
                "These items' assets are in S3 (s3://...), which needs credentials: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY in the environment (for the Copernicus Data Space, S3 keys made at "
                "https://eodata-s3keysmanager.dataspace.copernicus.eu), or AWS_NO_SIGN_REQUEST=YES for a "
                "public bucket.")
    return RemoteReader(cache_dir, signer=signer, gdal_options=gdal_options, **options)


def _readable_href(href: Any, folders: Sequence[Path], item_id: str, key: str) -> str:
    """``href`` checked by :func:`checked_href` against the folders local files may be in."""
    if isinstance(href, str) and is_remote(href) and not href.lower().startswith("/vsi"):
        return checked_href(href, None, item_id, key)
    refusal: Optional[InputError] = None
    for folder in folders:
        try:
            return checked_href(href, folder, item_id, key)
        except InputError as exc:
            refusal = refusal or exc
    if refusal is not None:
        raise refusal
    return checked_href(href, None, item_id, key)


def _product_of(item: Any, reader: RemoteReader, offset_override: Optional[int],
                folders: Sequence[Path] = ()) -> Optional[RemoteProduct]:
    chosen: dict[str, tuple[tuple, str, dict]] = {}
    for key, asset in item.assets.items():
        data = asset.to_dict()
        band = asset_band(key, data)
        if band is None:
            continue
        rank = (asset_resolution(key, data), 0 if is_cog(data) else 1, key)
        if band not in chosen or rank < chosen[band][0]:
            chosen[band] = (rank, key, data)
    missing = [b for b in S2_BANDS if b not in chosen]
    if missing:
        log.warning("Leaving out STAC item %s: it has no assets for bands %s.", item.id, ", ".join(missing))
        return None
    props = item.properties
    refs: dict[str, AssetRef] = {}
    for band, (_, key, data) in chosen.items():
        raster = (data.get("raster:bands") or [{}])[0] or {}
        nodata = raster.get("nodata", data.get("nodata"))
        refs[band] = AssetRef(href=_readable_href(data.get("href"), folders, item.id, key), band=band,
                              collection=item.collection_id,
                              nodata=None if nodata is None else float(nodata),
                              grid=grid_of_asset(data, props))
    offset, why = dn_offset(item, {b: chosen[b][2] for b in S2_BANDS})
    if offset_override is not None:
        offset, why = offset_override, "given"
    log.debug("%s: DN offset %d (%s)", item.id, offset, why)
    date = item_date(item)
    level = item_level(item)
    scl = refs.pop("SCL", None)
    if level is None and scl is not None:
        level = "L2A"
    return RemoteProduct(
        name=item.id, date=date, level=level,
        bands={b: BandSource(refs[b].href, 1) for b in S2_BANDS},
        scl=BandSource(scl.href, 1) if scl else None, offset=int(offset), grid=None,  # type: ignore[arg-type]
        files=tuple(strip_signature(refs[b].href) for b in S2_BANDS) + ((strip_signature(scl.href),) if scl else ()),
        assets={b: refs[b] for b in S2_BANDS}, scl_asset=scl, reader=reader, item_id=item.id,
    )


def scenes_from_items(
    items: Any,
    *,
    reader: Optional[RemoteReader] = None,
    level: Optional[str] = None,
    offset: Optional[int] = None,
    prefer_level: Optional[str] = None,
    check: bool = True,
    progress: Optional[Progress] = None,
    folders: Sequence[Union[str, os.PathLike]] = (),
) -> list[Scene]:
    """Scenes (one per date) whose products read the items' assets remotely.

    Args:
        items: a ``pystac.ItemCollection`` (or list of items), e.g. from :func:`search_items`
            or :func:`load_items`.
        reader: the reader to fetch through (default: :func:`reader_for` the items).
        level: ``"L1C"`` / ``"L2A"`` to keep only that level; by default ``prefer_level`` (the
            level of the model given), else L2A, wins where both are (``product.one_level``).
        offset: DN offset for every product instead of the one read from the items.
        prefer_level: the level kept where both are found and ``level`` is None.
        check: open every asset once (its header, or its description in the cache) to learn
            its grid and block size; an item with an asset that cannot be opened is left out
            with a warning naming it, and so is a date left with no item.
        progress: progress and cancellation.
        folders: the folders of the item collection files the items came from (see
            :func:`load_item_files`); a local href is read only inside one of them, so items
            of a search, which have none, are read from http(s):// and s3:// only.

    Raises:
        SceneError: no usable item, or an item whose fields are malformed (named).
        InputError: an href that is refused (see :func:`checked_href`).
    """
    progress = progress or Progress()
    if not len(items):
        raise SceneError("The STAC search found no items; widen the season or the cloud limit.")
    reader = reader or reader_for(items)
    items = list(items)
    roots = [Path(f) for f in folders]
    products: list[RemoteProduct] = []
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            continue
        seen.add(item.id)
        try:
            product = _product_of(item, reader, offset, roots)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError) as exc:
            raise SceneError(f"STAC item {item.id} is malformed ({_short(exc, 200)}); the item collection is damaged "
                             "or was not written by a STAC tool.") from None
        if product is not None:
            products.append(product)
    if level is not None:
        products = [p for p in products if p.level in (level.upper(), None)]
    else:
        products, note = one_level(products, prefer_level, "items")
        if note:
            log.warning(note)

    assets = [a for p in products for a in p.all_assets() if check or a.grid is None]
    failures = reader.check(assets, progress.sub(0.0, 0.95)) if assets else {}
    usable: list[RemoteProduct] = []
    for product in products:
        bad = [a for a in product.all_assets() if a.key in failures]
        if bad:
            reader.stats.failed.append(strip_signature(bad[0].href))
            log.warning("Leaving out %s of %s: %s", product.name, product.date, failures[bad[0].key])
            continue
        grids = {}
        for band, asset in product.assets.items():
            grid = reader.info(asset).grid if (check or asset.grid is None) else asset.grid
            if check and asset.grid is not None and asset.grid != grid:
                log.warning("%s: the projection metadata of asset %s disagree with the file; using the file's "
                            "grid.", product.name, strip_signature(asset.href))
            grids[band] = grid
        finest = min(grids.values(), key=lambda g: g.resolution)
        if any(str(g.crs) != str(finest.crs) for g in grids.values()):
            log.warning("Leaving out %s: its bands are in different coordinate systems.", product.name)
            continue
        product.grid = finest
        usable.append(product)
    dropped = sorted({p.date for p in products} - {p.date for p in usable})
    if dropped:
        log.warning("Dates left out because no item of them could be read: %s", ", ".join(map(str, dropped)))
    if not usable:
        if failures:
            first = next(iter(failures.values()))
            raise SceneError(f"None of the STAC items could be used: every download failed ({len(failures)} assets); "
                             f"the first error came from {host_of(first.href)}: {first}")
        raise SceneError("None of the STAC items could be used; see the warnings above.")
    scenes: dict[np.datetime64, Scene] = {}
    for p in sorted(usable, key=lambda p: (p.date, p.name)):
        scenes.setdefault(p.date, Scene(p.date)).products.append(p)
    progress(1.0)
    result = [scenes[d] for d in sorted(scenes)]
    log.info("%d STAC items on %d dates", len(usable), len(result))
    return result


def scenes_from_files(paths: Sequence[Union[str, os.PathLike]], *, level: Optional[str] = None,
                      offset: Optional[int] = None, reader: Optional[RemoteReader] = None) -> list[Scene]:
    """Scenes of one or more saved item collections (see :func:`scenes_from_items`)."""
    items, folders = load_item_files(paths)
    return scenes_from_items(items, reader=reader, level=level, offset=offset, folders=folders)
