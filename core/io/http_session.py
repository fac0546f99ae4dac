"""HTTP sessions for the web services ThermoCrop talks to: ``requests`` with urllib3's retries,
bounded by an overall deadline and a cap on the waits a server may ask for.

Every network operation (a catalogue search, a token request, a weather download) starts a
:class:`Deadline`; the retries of its requests stop once it has passed, naming the host, and a
``Retry-After`` longer than :func:`max_retry_wait` is shortened to it, with a warning saying so.
"""

from __future__ import annotations

import logging
import os
import time
import urllib.parse
from typing import Any, Optional

from urllib3.util.retry import Retry

from ..errors import InputError

log = logging.getLogger(__name__)

RETRY_STATUSES = (429, 500, 502, 503, 504)

DEFAULT_DEADLINE_S = 600.0
"""Longest a network operation may take, retries and waits included
(``THERMOCROP_NETWORK_DEADLINE`` in seconds changes it)."""

DEFAULT_MAX_RETRY_WAIT_S = 30.0
"""Longest wait between two tries, whatever a server's ``Retry-After`` asks
(``THERMOCROP_MAX_RETRY_WAIT`` in seconds changes it)."""


class NetworkDeadlineError(InputError):
    """A network operation ran past its deadline or a host stopped answering."""


def _seconds_from_env(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{name}={text!r} is not a number of seconds.") from None
    if not value > 0:
        raise InputError(f"{name} must be above 0 seconds, got {text}.")
    return value


def network_deadline() -> float:
    """Seconds a network operation may take in all (:data:`DEFAULT_DEADLINE_S`)."""
    return _seconds_from_env("THERMOCROP_NETWORK_DEADLINE", DEFAULT_DEADLINE_S)


def max_retry_wait() -> float:
    """Seconds of the longest wait between tries (:data:`DEFAULT_MAX_RETRY_WAIT_S`)."""
    return _seconds_from_env("THERMOCROP_MAX_RETRY_WAIT", DEFAULT_MAX_RETRY_WAIT_S)


def host_of(url: str) -> str:
    """``host:port`` (or ``host``) of a URL, for messages."""
    parts = urllib.parse.urlsplit(url)
    return parts.netloc.rsplit("@", 1)[-1] or url


class Deadline:
    """The moment an operation must be over, and what it is, for the error that says so."""

    def __init__(self, seconds: Optional[float] = None, what: str = "the request") -> None:
        self.seconds = float(seconds) if seconds is not None else network_deadline()
        self.what = what
        self.ends = time.monotonic() + self.seconds

    def left(self) -> float:
        return self.ends - time.monotonic()

    def expired(self) -> bool:
        return self.left() <= 0

    def error(self, host: str, cause: str = "") -> NetworkDeadlineError:
        detail = f" ({cause})" if cause else ""
        return NetworkDeadlineError(
            f"{self.what.capitalize()} timed out: {host} did not finish within the deadline of "
            f"{self.seconds:g} s{detail}. Try again later, or allow more time with "
            "THERMOCROP_NETWORK_DEADLINE (seconds).")

    def check(self, host: str, cause: str = "") -> None:
        if self.expired():
            raise self.error(host, cause)


class DeadlineRetry(Retry):
    """urllib3's ``Retry`` that never waits longer than ``max_wait`` seconds between tries
    (a longer ``Retry-After`` is shortened, with a warning) and gives up, naming the host,
    once ``deadline`` has passed or the next wait would end after it."""

    def __init__(self, *args: Any, deadline: Optional[Deadline] = None, max_wait: Optional[float] = None,
                 **kwargs: Any) -> None:
        self.deadline = deadline
        self.max_wait = max_wait if max_wait is not None else max_retry_wait()
        self._host = ""
        super().__init__(*args, **kwargs)

    def new(self, **kw: Any) -> "DeadlineRetry":
        kw.setdefault("deadline", self.deadline)
        kw.setdefault("max_wait", self.max_wait)
        retry = super().new(**kw)
        retry._host = self._host
        return retry

    def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
        host = f"{_pool.host}:{_pool.port}" if _pool is not None else self._host
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        retry._host = host
        if self.deadline is not None and self.deadline.expired():
            cause = type(error).__name__ if error is not None else f"HTTP {getattr(response, 'status', '?')}"
            raise self.deadline.error(host, cause)
        return retry

    def get_retry_after(self, response) -> Optional[float]:
        asked = super().get_retry_after(response)
        if asked is not None and asked > self.max_wait:
            log.warning("%s asked to wait %.0f s before trying again (Retry-After); waiting %.3g s, the most "
                        "ThermoCrop waits (THERMOCROP_MAX_RETRY_WAIT).", self._host or "the server", asked,
                        self.max_wait)
            return self.max_wait
        return asked

    def get_backoff_time(self) -> float:
        return min(super().get_backoff_time(), self.max_wait)

    def sleep(self, response=None) -> None:
        if self.deadline is not None:
            asked = (super().get_retry_after(response) if response is not None and self.respect_retry_after_header
                     else None)
            wait = self.get_backoff_time() if asked is None else min(asked, self.max_wait)
            if wait >= self.deadline.left():
                raise self.deadline.error(self._host or "the server", f"a wait of {wait:.0f} s would pass it")
        super().sleep(response)


def retry_policy(retries: int = 5, backoff: float = 0.5, deadline: Optional[Deadline] = None) -> DeadlineRetry:
    """The urllib3 retry policy of :func:`session_with_retries`, for clients that take one:
    connection errors and 429/5xx answers (any method) retried, waits doubling from
    ``backoff`` seconds, ``Retry-After`` honoured up to :func:`max_retry_wait`, nothing
    retried once ``deadline`` has passed."""
    return DeadlineRetry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=backoff,
                         status_forcelist=RETRY_STATUSES, allowed_methods=None, raise_on_status=False,
                         respect_retry_after_header=True, deadline=deadline)


def session_with_retries(retries: int = 5, backoff: float = 0.5, headers: dict | None = None,
                         deadline: Optional[Deadline] = None) -> Any:
    """A ``requests.Session`` whose requests follow :func:`retry_policy`."""
    import requests
    from requests.adapters import HTTPAdapter

    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry_policy(retries, backoff, deadline))
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = "ThermoCrop"
    session.headers.update(headers or {})
    return session


def deadline_in(exc: BaseException) -> Optional[NetworkDeadlineError]:
    """The :class:`NetworkDeadlineError` behind ``exc`` (clients such as pystac-client wrap
    what the retries raise), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, NetworkDeadlineError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def timed_out_in(exc: BaseException) -> bool:
    """True when ``exc`` (or what it wraps) is a connect or read timeout."""
    import requests

    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, (requests.Timeout, TimeoutError)) or "timed out" in str(exc).lower():
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False
