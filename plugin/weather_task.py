"""Daily temperatures for the dock from a weather service (``core.thermal.weather_services``), fetched in a
``QgsTask`` for the parcels' cells from the season start to the last scene date.

The Toolbox and the command line do the same through ``app.run_*``; all call
``app.resolve_weather``, whose service fetch keeps the answer in the cache so that a second
run over the same parcels and season reads nothing over the network.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from ..app import WeatherSpec, resolve_weather
from .i18n import tr
from .task import LayerSnapshot, ThermoCropTask


def scene_dates(scenes: Sequence[Any]) -> list:
    """The acquisition dates of ``scenes``: ``Scene`` objects (``.date``) or saved STAC item
    collections (the dates of their items)."""
    from ..core.scenes.stac import is_item_collection_file, load_items, summarize

    dates = []
    for scene in scenes:
        if hasattr(scene, "date"):
            dates.append(scene.date)
        elif is_item_collection_file(scene):
            dates.extend(s.date for s in summarize(load_items(scene)))
    return dates


class WeatherTask(ThermoCropTask):
    """Fetches the temperatures of the parcels of ``snapshot`` from ``service``.

    After it ends, ``path`` holds the temperature file (a CF NetCDF in the cache), or ``error``
    says what went wrong (``cancelled`` tells a user stop from a failure).
    """

    WHAT = "Weather service"

    def __init__(self, snapshot: LayerSnapshot, service: str, dates: Sequence[Any], season_start: Any,
                 on_done: Optional[Callable[["WeatherTask"], None]], cache_dir=None):
        super().__init__(tr("ThermoCrop: temperatures from {service}").format(service=service), on_done)
        self.snapshot, self.service, self.dates = snapshot, service, list(dates)
        self.season_start, self.cache_dir = season_start, cache_dir
        self.path: Optional[str] = None

    def work(self, progress) -> None:
        from ..core.errors import WeatherError

        if not self.dates:
            raise WeatherError(tr("No scene dates to fetch temperatures for; choose the scenes first."))
        frame, _ = self.snapshot.read()
        progress(0.05)
        spec = WeatherSpec(service=self.service, cache=None if self.cache_dir is None else str(self.cache_dir))
        self.path = resolve_weather(spec, frame.geometry, self.dates, self.season_start,
                                    progress=progress.sub(0.05, 1.0))
        progress(1.0)
