"""How a door follows a run of ``app.runs``: progress and stop requests, lines for the user and
the moments a door may show in its own words. Light to import (no torch), so that QGIS can load
the plugin before the heavy packages are installed."""

from __future__ import annotations

import contextlib
import logging
from typing import Any, ContextManager, Optional

from ..core.preflight import Preflight
from ..core.progress import Progress

log = logging.getLogger(__name__)


class RunProgress:
    """How a door follows a run: the fraction done and the stop request (``progress``), lines
    for the user (``report``) and the moments a door may show in its own words. The command
    line shows bars, QGIS its progress bar and log; by default a run only logs."""

    reserve_cores = 0
    """CPUs a one-process run leaves to the door (``core.threads.thread_budget``): QGIS keeps one
    for its interface."""

    def __init__(self, progress: Optional[Progress] = None, report=None) -> None:
        self.progress = progress or Progress()
        self.report = report or log.info

    def bar(self, what: str) -> ContextManager[Progress]:
        """The progress of the work of a one-process run (``what``: classify, extract, gdd)."""
        return contextlib.nullcontext(self.progress)

    def partitions(self, what: str) -> ContextManager[Any]:
        """The ``core.runs.cluster.PartitionListener`` of a partitioned run, or None."""
        return contextlib.nullcontext(None)

    def inputs_checked(self, checked: Preflight) -> None:
        """The inputs passed the preflight (``checked.scenes``, ``checked.bundle``...)."""
        log.info("%d dates from %d products (inputs checked in %.1f s)", len(checked.scenes or ()),
                 sum(len(s.products) for s in checked.scenes or ()), checked.seconds)

    def partitions_done(self, summary: Any, wall_s: float) -> None:
        """A partitioned run's summary (``core.runs.cluster.RunSummary``) and its wall time."""
        log.info("%d partitions in %.1f s", summary.partitions, wall_s)

    def weather_fetched(self, service: str, path: str) -> None:
        """A weather service's temperatures are in the file ``path``."""
        log.info("Temperatures from %s: %s", service, path)

    def on_stats(self, stats: Any) -> None:
        """The bytes and dates fetched so far from a catalogue."""
