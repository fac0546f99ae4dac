"""The catalogue search as a ``QgsTask`` for the dock: the items over the parcels found and saved
off the main thread, under the cache folder in a file named after the search."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .i18n import tr
from .task import ThermoCropTask


@dataclass
class SearchParameters:
    """What the dock hands to :class:`CatalogSearchTask`.

    Attributes:
        parcels: the dock's ``LayerSnapshot`` of the parcel layer (read in the task).
        catalog: a catalogue name of ``core.scenes.stac.CATALOGS`` or a STAC API URL.
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
    (``core.scenes.stac.ItemSummary``) and ``path`` is the saved collection, or ``error`` says what went
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
    from ..core.scenes.remote import default_cache_dir

    key = hashlib.sha1(f"{catalog}|{season}|{max_cloud}|{layer_id}".encode()).hexdigest()[:12]
    return (Path(cache_dir) if cache_dir else default_cache_dir()) / "searches" / f"items-{season}-{key}.json"
