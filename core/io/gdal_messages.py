"""GDAL's error messages collected during a call instead of printed, and said in one line for
the error a user reads."""

from __future__ import annotations

import contextlib
import logging
from typing import Iterator, Sequence

log = logging.getLogger(__name__)


@contextlib.contextmanager
def gdal_messages() -> Iterator[list[str]]:
    """Collect GDAL's error messages (thread-local handler) instead of letting them print."""
    from osgeo import gdal

    failures: list[str] = []

    def handler(level, code, message):
        if level >= gdal.CE_Failure:
            failures.append(str(message).strip())
        else:
            log.debug("GDAL: %s", message)

    gdal.PushErrorHandler(handler)
    try:
        yield failures
    finally:
        gdal.PopErrorHandler()


def said(messages: Sequence[str]) -> str:
    """The first three distinct messages, or a note that GDAL gave none."""
    unique = list(dict.fromkeys(m for m in messages if m))
    return "; ".join(unique[:3]) or "no message from GDAL"
