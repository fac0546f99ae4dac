"""Leaving out the warnings of a read that the same run makes again.

A run may read a layer twice: once to check its labels before any scene is read, and again
inside the extraction. Each read would log the same warnings (codes a class map does not map,
unusable geometries). :func:`quietly` drops the warnings of the loggers that :data:`QUIET`
filters, for the thread that runs it and while it runs; other threads (another task of the
desktop) log as ever.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from typing import Iterator


class ThreadQuiet(logging.Filter):
    """Drops records of warning level and below logged by a thread inside :func:`quietly`."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    @property
    def active(self) -> bool:
        return getattr(self._local, "depth", 0) > 0

    def enter(self) -> None:
        self._local.depth = getattr(self._local, "depth", 0) + 1

    def leave(self) -> None:
        self._local.depth -= 1

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.WARNING or not self.active


QUIET = ThreadQuiet()
"""The filter of the loggers whose warnings a repeated read leaves out."""


@contextmanager
def quietly() -> Iterator[None]:
    """Leave out, in this thread, the warnings of the loggers :data:`QUIET` filters (errors still
    pass): for a read whose warnings the run gives again when it reads the same data."""
    QUIET.enter()
    try:
        yield
    finally:
        QUIET.leave()
