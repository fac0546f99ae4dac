"""Credentials out of log lines: signed URLs (SAS tokens, ``X-Amz-Signature``), subscription
keys and ``Authorization`` headers are replaced by ``<redacted>`` in every record.

:func:`install_redaction` puts :class:`RedactingFilter` on the loggers that see URLs
(rasterio and GDAL's messages routed through it, urllib3, requests, pystac-client,
ThermoCrop's own) and wraps the log record factory, so that a record of any other logger
is redacted too before a handler formats it. GDAL's own messages reach python logging through
rasterio's handler while rasterio works; outside it, the threads that read remote assets
silence GDAL's default handler (``core.scenes.remote``), which would print them, URLs and all, to
stderr.
"""

from __future__ import annotations

import logging
import re
import threading

REDACTED = "<redacted>"

LOGGERS = ("rasterio", "rasterio._env", "rasterio._base", "rasterio._io", "rasterio._filepath", "rasterio.env",
           "rasterio.session", "urllib3", "urllib3.connectionpool", "urllib3.util.retry", "requests",
           "pystac_client", "pystac_client.stac_api_io", "thermocrop", "GDAL")
"""Loggers that get :class:`RedactingFilter` (GDAL's CPL messages reach python logging
through ``rasterio._env``)."""

_PATTERNS = (
    # The query string of any URL: SAS tokens, S3 pre-signed parameters, keys in queries.
    (re.compile(r"((?:https?|s3|ftp)://[^\s?#'\"<>]*)\?[^\s#'\"<>]*", re.IGNORECASE), r"\1?" + REDACTED),
    # A password in an address (``https://user:password@host``).
    (re.compile(r"((?:https?|s3|ftp)://[^\s/?#@:'\"<>]*:)[^\s/?#@'\"<>]*@", re.IGNORECASE),
     r"\1" + REDACTED + "@"),
    # Parameters that carry credentials, wherever they stand.
    (re.compile(r"\b(sig|skoid|sktid|X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|access_token|"
                r"subscription[-_]key|apikey|api_key|password)=[^&\s'\"]+", re.IGNORECASE), r"\1=" + REDACTED),
    # Headers (as requests, urllib3 and GDAL print them).
    (re.compile(r"((?:Ocp-Apim-Subscription-Key|Authorization|X-Amz-Security-Token|PRIVATE-TOKEN|"
                r"x-api-key)['\"]?\s*[:=]\s*['\"]?)[^'\"}\r\n]+", re.IGNORECASE), r"\1" + REDACTED),
    (re.compile(r"(AWS4-HMAC-SHA256\s+)[^'\"\r\n]+"), r"\1" + REDACTED),
    (re.compile(r"\b(Signature=)[0-9a-fA-F]+"), r"\1" + REDACTED),
    (re.compile(r"\b(AWS_SECRET_ACCESS_KEY|AWS_SESSION_TOKEN|PC_SDK_SUBSCRIPTION_KEY|CDSAPI_KEY)(['\"]?\s*[:=]\s*['\"]?)"
                r"[^'\"\s,}]+"), r"\1\2" + REDACTED),
)


def redact(text: str) -> str:
    """``text`` with every signed query string, token and credential header replaced."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _redact_record(record: logging.LogRecord) -> None:
    if getattr(record, "_thermocrop_redacted", False):
        return
    try:
        message = record.getMessage()
    except Exception:  # a record whose arguments do not fit its format: leave it to logging
        return
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and not record.exc_text:
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
    record._thermocrop_redacted = True


class RedactingFilter(logging.Filter):
    """A filter that redacts a record's message (and traceback) and lets it through."""

    def filter(self, record: logging.LogRecord) -> bool:
        _redact_record(record)
        return True


_installed = False
_lock = threading.Lock()


def install_redaction() -> None:
    """Redact every log record of the process from now on (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        flt = RedactingFilter()
        for name in LOGGERS:
            logging.getLogger(name).addFilter(flt)
        previous = logging.getLogRecordFactory()

        def factory(*args, **kwargs) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            _redact_record(record)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True

