"""ThermoCrop's warnings in QGIS's message log.

The core says what a user should know but that does not stop a run (codes a class map does not
map, a model without a calibration, parcels left out) through Python's ``logging``, which the
command line prints and QGIS never shows. In the desktop, records of the ``thermocrop`` loggers at
WARNING and above also go to the message log under the plugin's tag. The Toolbox's algorithms say
their warnings in their own log and are left out of this (``qgis_process`` prints the message log
too, so each would be said twice).
"""

from __future__ import annotations

import logging

from qgis.core import Qgis, QgsMessageLog

LOG_TAG = "ThermoCrop"
LOGGER = "thermocrop"


class MessageLogHandler(logging.Handler):
    """Passes records to ``QgsMessageLog`` (thread-safe: tasks log from their own threads)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = Qgis.Critical if record.levelno >= logging.ERROR else Qgis.Warning
            QgsMessageLog.logMessage(self.format(record), LOG_TAG, level)
        except Exception:  # a log line must never break a run
            self.handleError(record)


def forward_warnings() -> MessageLogHandler:
    """Attach a :class:`MessageLogHandler` to the ``thermocrop`` logger; returns it for removal."""
    handler = MessageLogHandler()
    logging.getLogger(LOGGER).addHandler(handler)
    return handler


def stop_forwarding(handler: MessageLogHandler) -> None:
    """Detach a handler of :func:`forward_warnings`."""
    logging.getLogger(LOGGER).removeHandler(handler)
