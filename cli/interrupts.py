"""Ctrl-C on the command line: raised as ``KeyboardInterrupt`` where it lands, and remembered.

Some libraries lose an exception raised inside them: numpy 1.x turns one inside an object-array
comparison into a warning and a ``False``, and an interrupt that lands while GDAL's Python module
is being imported can vanish the same way. The run then went on to the end and wrote its output
as if nothing had been asked. Remembered, the interrupt stops the run at the next progress report
(``interrupted`` is the ``cancelled`` callable of the command line's progress), before any output
takes its name.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

_seen = threading.Event()


def interrupted() -> bool:
    """Whether Ctrl-C was pressed during this run."""
    return _seen.is_set()


def _on_interrupt(signum, frame) -> None:
    _seen.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def taken() -> Iterator[None]:
    """Take Ctrl-C (SIGINT) for a run, the handler of before restored after it (from the main
    thread; elsewhere nothing changes)."""
    _seen.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, _on_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
