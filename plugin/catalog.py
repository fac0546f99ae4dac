"""Sentinel-2 from STAC catalogues in QGIS: the catalogue and weather choices the Toolbox and the
dock offer, credentials from QGIS's authentication manager, the search as a ``QgsTask`` and
saved item collections turned into scenes.

Credentials come from the environment (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``,
``PC_SDK_SUBSCRIPTION_KEY``) or from a configuration of QGIS's authentication manager chosen by
its id; they are never read from or written to project files or item collections.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from qgis.core import QgsApplication, QgsAuthMethodConfig

from ..app import ScenesSpec, resolve_scenes
from .i18n import tr
from .task import ThermoCropTask


CATALOGS = ("earth-search", "planetary-computer", "cdse", "url")
"""The catalogue choices, in the order the Toolbox and the dock list them (``url``: a STAC API
given by its address)."""
CATALOG_LABELS = ("Earth Search (AWS, public)", "Planetary Computer (Microsoft)",
                  "Copernicus Data Space (S3 keys)", "Another STAC API (its URL)")

WEATHER_SERVICES = ("", "open-meteo", "cds:e-obs", "cds:era5-land")
"""The weather choices: a file (``""``) or a service ``core.weather_services`` fetches."""
WEATHER_LABELS = ("The daily temperature file", "Open-Meteo (no key)", "Copernicus CDS: E-OBS (CDSAPI_KEY)",
                  "Copernicus CDS: ERA5-Land (CDSAPI_KEY)")


def catalog_spec(choice: str, url: str = "") -> str:
    """What ``core.stac.search_items`` takes as ``catalog``: a name, or the URL for ``url``.

    Raises:
        ValueError: ``url`` chosen without an http(s) address.
    """
    if choice != "url":
        return choice
    url = (url or "").strip()
    if not url.lower().startswith(("http://", "https://")):
        raise ValueError(tr("Give the address of the STAC API (http:// or https://) for 'Another STAC API'."))
    return url


def auth_credentials(config_id: str, catalog: str) -> dict:
    """Credentials for reading ``catalog``'s assets from a configuration of QGIS's authentication
    manager (*Settings > Options > Authentication*), by its id.

    A *Basic* configuration holds, for the Copernicus Data Space (or any catalogue whose assets
    are in S3), the S3 access key as user name and the secret key as password; for Planetary
    Computer, the subscription key as password. Nothing is copied into the environment.

    Returns:
        ``{}`` for an empty id, else the keys ``core.stac.reader_for`` takes.

    Raises:
        ValueError: the configuration cannot be loaded (unknown id, locked database) or is not
            of the *Basic* method.
    """
    if not config_id:
        return {}
    manager = QgsApplication.authManager()
    config = QgsAuthMethodConfig()
    if not manager.loadAuthenticationConfig(config_id, config, True) or not config.isValid(True):
        raise ValueError(tr("The authentication configuration {id} cannot be loaded; choose another one in QGIS's "
                            "authentication manager (Settings > Options > Authentication).").format(id=config_id))
    if config.method() != "Basic":
        raise ValueError(tr("The authentication configuration {name} is of the {method} method; use a Basic one "
                            "(user name and password).").format(name=config.name(), method=config.method()))
    user, password = config.config("username"), config.config("password")
    if catalog == "planetary-computer":
        return {"PC_SDK_SUBSCRIPTION_KEY": password or user}
    return {"AWS_ACCESS_KEY_ID": user, "AWS_SECRET_ACCESS_KEY": password}


def describe_summary(summary) -> str:
    """``"2017-03-14  31TCJ  cloud 5.0 %"``: one found item as the dock and the log list it."""
    cloud = tr("cloud ?") if summary.cloud_cover is None else tr("cloud {c:.1f} %").format(c=summary.cloud_cover)
    return f"{summary.date}  {summary.tile or '?'}  {cloud}"


def describe_search(summaries: Sequence) -> str:
    """``"4 items on 4 dates, tiles 31TCJ"``."""
    dates = sorted({s.date for s in summaries})
    tiles = sorted({s.tile for s in summaries if s.tile})
    return tr("{items} items on {dates} dates, tiles {tiles}").format(
        items=len(summaries), dates=len(dates), tiles=", ".join(tiles) or tr("unknown"))


def stac_scenes(paths: Sequence[str], *, credentials: Optional[dict] = None, cache_dir=None, progress=None,
                on_stats: Optional[Callable] = None) -> list:
    """Scenes of saved item collections, read with ``credentials`` (see :func:`auth_credentials`)."""
    spec = ScenesSpec(items=tuple(str(p) for p in paths), credentials=dict(credentials or {}),
                      cache=None if cache_dir is None else str(cache_dir))
    return resolve_scenes(spec, progress=progress, on_stats=on_stats)


@dataclass
class SearchParameters:
    """What the dock hands to :class:`CatalogSearchTask`.

    Attributes:
        parcels: the dock's ``LayerSnapshot`` of the parcel layer (read in the task).
        catalog: a catalogue name of ``core.stac.CATALOGS`` or a STAC API URL.
        season: calendar year searched.
        max_cloud: largest cloud cover kept, percent.
        out: where the item collection is saved.
    """

    parcels: Any
    catalog: str
    season: int
    max_cloud: float
    out: str
    start: Optional[str] = None
    end: Optional[str] = None
    extra: dict = field(default_factory=dict)


class CatalogSearchTask(ThermoCropTask):
    """Searches a catalogue for the items over the parcels and saves them, off the main thread.

    ``on_done(task)`` runs in the main thread; then ``summaries`` lists the items found
    (``core.stac.ItemSummary``) and ``path`` is the saved collection, or ``error`` says what went
    wrong (``cancelled`` tells a user stop from a failure).
    """

    WHAT = "Catalogue search"

    def __init__(self, params: SearchParameters, on_done: Callable[["CatalogSearchTask"], None]):
        super().__init__(tr("ThermoCrop: search a catalogue"), on_done)
        self.params = params
        self.summaries: list = []
        self.path: Optional[str] = None

    def work(self, progress) -> None:
        from ..core.scenes.stac import save_items, search_items, summarize

        p = self.params
        frame = p.parcels.read()[0] if hasattr(p.parcels, "read") else p.parcels
        progress(0.1)
        items = search_items(frame, season=p.season, start=p.start, end=p.end, catalog=p.catalog,
                             max_cloud=p.max_cloud, progress=progress.sub(0.1, 0.9), **p.extra)
        progress.check()
        self.summaries = summarize(items)
        if self.summaries:
            self.path = str(save_items(items, p.out, overwrite=True))
        progress(1.0)


def search_file(cache_dir: Optional[Path], catalog: str, season: int, max_cloud: float, layer_id: str) -> Path:
    """Where the dock keeps the items of a search: under the cache folder, named after the search."""
    import hashlib

    from ..core.scenes.remote import default_cache_dir

    key = hashlib.sha1(f"{catalog}|{season}|{max_cloud}|{layer_id}".encode()).hexdigest()[:12]
    return (Path(cache_dir) if cache_dir else default_cache_dir()) / "searches" / f"items-{season}-{key}.json"
