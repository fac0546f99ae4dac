"""How a door follows a run of ``app.runs``: progress and stop requests, lines for the user and
the moments a door may show in its own words. Light to import (no torch), so that QGIS can load
the plugin before the heavy packages are installed."""

from __future__ import annotations

import contextlib
import copy
import logging
from typing import Any, Callable, ContextManager, Iterator, Optional

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

    def share(self, start: float, stop: float) -> "RunProgress":
        """This door's follower for a step of a run that takes ``start..stop`` of its progress (a
        door that shows one bar for the whole run, as QGIS does, moves it forward through the
        steps; the command line's bars are each step's own)."""
        part = copy.copy(self)
        part.progress = self.progress.sub(start, stop)
        return part

    @contextlib.contextmanager
    def partitions(self, what: str) -> Iterator[Any]:
        """The ``core.runs.partitions.PartitionListener`` of a partitioned run: by default one
        that moves the progress of :meth:`bar` partition by partition, and so stops the run
        between partitions when asked to (:class:`PartitionProgress`)."""
        with self.bar(what) as progress:
            yield PartitionProgress(progress, self.partitions_started)

    def partitions_started(self, total: int, done: int, dashboard: Optional[str]) -> None:
        """A partitioned run has ``total`` partitions, ``done`` of them written by an interrupted
        run, and the Dask ``dashboard`` (None: none)."""
        if dashboard:
            self.report(f"Dask dashboard: {dashboard}")
        if done:
            self.report(f"resuming: {done} of {total} partitions already written")

    def inputs_checked(self, checked: Preflight) -> None:
        """The inputs passed the preflight (``checked.scenes``, ``checked.bundle``...)."""
        log.info("%d dates from %d products (inputs checked in %.1f s)", len(checked.scenes or ()),
                 sum(len(s.products) for s in checked.scenes or ()), checked.seconds)
        if checked.model_choice:
            log.log(logging.WARNING if "not installed" in checked.model_choice else logging.INFO, checked.model_choice)

    def partitions_done(self, summary: Any, wall_s: float) -> None:
        """A partitioned run's summary (``core.runs.cluster.RunSummary``) and its wall time."""
        log.info("%d partitions in %.1f s", summary.partitions, wall_s)

    def weather_fetched(self, service: str, path: str) -> None:
        """A weather service's temperatures are in the file ``path``."""
        log.info("Temperatures from %s: %s", service, path)

    def on_stats(self, stats: Any) -> None:
        """The bytes and dates fetched so far from a catalogue."""


class PartitionProgress:
    """Tells a ``Progress`` how a partitioned run goes, as a ``core.runs.partitions.PartitionListener``:
    the fraction of partitions written (those an interrupted run left count at once).

    Every report asks the ``Progress`` whether to stop, as between scene windows in one process,
    so a cancel raises ``CancelledError`` as a partition ends: the partitions written so far stay
    in the run folder for a resumed run, and nothing else is written.

    Args:
        progress: the part of the door's progress the partitions move through.
        started: told ``(total, done, dashboard)`` as the run starts.
    """

    def __init__(self, progress: Progress, started: Optional[Callable[[int, int, Optional[str]], None]] = None) -> None:
        self.progress = progress
        self.on_started = started
        self.total = 0
        self.done = 0

    def started(self, total: int, done: int, dashboard: Optional[str]) -> None:
        self.total, self.done = total, done
        if self.on_started is not None:
            self.on_started(total, done, dashboard)
        self.progress(done / total if total else 0.0)

    def finished(self, index: int) -> None:
        self.done += 1
        self.progress(self.done / self.total if self.total else 1.0)
