"""HTTP sessions for the web services ThermoCrop talks to: ``requests`` with urllib3's retries."""

from __future__ import annotations

from typing import Any

RETRY_STATUSES = (429, 500, 502, 503, 504)


def session_with_retries(retries: int = 5, backoff: float = 0.5, headers: dict | None = None) -> Any:
    """A ``requests.Session`` that retries connection errors and 429/5xx answers (any method),
    waiting ``backoff * 2**n`` seconds between tries and honouring ``Retry-After``."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    retry = Retry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=backoff,
                  status_forcelist=RETRY_STATUSES, allowed_methods=None, raise_on_status=False,
                  respect_retry_after_header=True)
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = "ThermoCrop"
    session.headers.update(headers or {})
    return session


def retry_policy(retries: int = 5, backoff: float = 0.5) -> Any:
    """The urllib3 ``Retry`` used by :func:`session_with_retries`, for clients that take one."""
    from urllib3.util.retry import Retry

    return Retry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=backoff,
                 status_forcelist=RETRY_STATUSES, allowed_methods=None, raise_on_status=False,
                 respect_retry_after_header=True)
