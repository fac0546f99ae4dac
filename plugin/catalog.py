"""Sentinel-2 from STAC catalogues in QGIS: the catalogue and weather choices the Toolbox and the
dock offer, credentials from QGIS's authentication manager and saved item collections turned
into scenes (the dock's search task is in ``catalog_search.py``).

Credentials come from the environment (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``,
``PC_SDK_SUBSCRIPTION_KEY``) or from a configuration of QGIS's authentication manager chosen by
its id; they are never read from or written to project files or item collections.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from qgis.core import QgsApplication, QgsAuthMethodConfig

from ..app import ScenesSpec, resolve_scenes
from .i18n import tr

CATALOGS = ("earth-search", "planetary-computer", "cdse", "url")
"""The catalogue choices, in the order the Toolbox and the dock list them (``url``: a STAC API
given by its address)."""
CATALOG_LABELS = ("Earth Search (AWS, public)", "Planetary Computer (Microsoft)",
                  "Copernicus Data Space (S3 keys)", "Another STAC API (its URL)")

WEATHER_SERVICES = ("", "open-meteo", "cds:e-obs", "cds:era5-land")
"""The weather choices: a file (``""``) or a service ``core.thermal.weather_services`` fetches."""
WEATHER_LABELS = ("The daily temperature file", "Open-Meteo (no key)", "Copernicus CDS: E-OBS (CDSAPI_KEY)",
                  "Copernicus CDS: ERA5-Land (CDSAPI_KEY)")


def catalog_spec(choice: str, url: str = "") -> str:
    """What ``core.scenes.stac.search_items`` takes as ``catalog``: a name, or the URL for ``url``.

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
        ``{}`` for an empty id, else the keys ``core.scenes.stac.reader_for`` takes.

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

