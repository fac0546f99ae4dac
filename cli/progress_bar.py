"""A tqdm progress bar behind core's two progress callables, and a logging handler that keeps
log lines and progress bars apart, for the command line."""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import IO, Any, Iterator, Optional

from ..core.errors import CancelledError
from ..core.progress import Progress
from .interrupts import interrupted

LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


class TqdmLoggingHandler(logging.Handler):
    """Writes each record with ``tqdm.write``: a progress bar on the same stream is cleared, the
    line written on a line of its own, and the bar drawn again below it, so a log line never lands
    in the middle of a bar (``classify:  12%|##  INFO numexpr.utils: ...``)."""

    def __init__(self, stream: Optional[IO[str]] = None) -> None:
        super().__init__()
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm

            tqdm.write(self.format(record), file=self.stream or sys.stderr)
        except Exception:  # logging must never raise into the program
            self.handleError(record)


def log_handler(level: int = logging.INFO, stream: Optional[IO[str]] = None) -> logging.Handler:
    """The command line's log handler: ThermoCrop's line format beside the progress bars; other
    libraries' notes (numexpr's thread count, GDAL's raw errors that ThermoCrop turns into its own
    message) only at ``DEBUG`` (``--verbose``), their warnings always."""
    handler = TqdmLoggingHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    if level > logging.DEBUG:
        handler.addFilter(lambda r: r.levelno >= logging.WARNING or r.name.split(".")[0] == "thermocrop")
    return handler


def configure_logging(level: int = logging.INFO, stream: Optional[IO[str]] = None) -> None:
    """``logging.basicConfig`` with :func:`log_handler` (like basicConfig, it leaves a root logger
    that already has handlers alone)."""
    logging.basicConfig(level=level, handlers=[log_handler(level, stream)])
    if level > logging.DEBUG:  # torch's own notes (its caches' statistics at exit) are not the user's
        logging.getLogger("torch").setLevel(logging.WARNING)


@contextlib.contextmanager
def progress_bar(description: str, unit: str = "%") -> Iterator[Progress]:
    """Yield a :class:`Progress` whose reports move a tqdm bar from 0 to 100 %.

    Redraws are rate-limited (every 15 s when stderr is a log file rather than a terminal),
    so a job's log holds a few progress lines, not thousands.
    """
    from tqdm import tqdm

    interval = 0.2 if sys.stderr.isatty() else 15.0
    with tqdm(total=100, desc=description, unit=unit, mininterval=interval,
              bar_format="{l_bar}{bar}| {elapsed}<{remaining}") as bar:
        def report(fraction: float) -> None:
            target = round(100 * fraction, 1)
            if target > bar.n:
                bar.update(target - bar.n)

        yield Progress(report=report, cancelled=interrupted)
        if bar.n < 100:
            bar.update(100 - bar.n)


@contextlib.contextmanager
def partition_bar(description: str) -> Iterator[Any]:
    """A tqdm bar counting the partitions of a partitioned run (``core.runs.cluster``)."""
    from tqdm import tqdm

    from ..core.runs.partitions import PartitionListener

    interval = 0.2 if sys.stderr.isatty() else 15.0

    class PartitionBar(PartitionListener):
        def __init__(self) -> None:
            self.bar = tqdm(total=0, desc=description, unit="partition", mininterval=interval)

        def started(self, total: int, done: int, dashboard) -> None:
            if dashboard:
                print(f"Dask dashboard: {dashboard}", flush=True)
            if done:
                print(f"resuming: {done} of {total} partitions already written", flush=True)
            self.bar.reset(total=total)
            self.bar.update(done)
            self.check()

        def finished(self, index: int) -> None:
            self.bar.update(1)
            self.check()

        @staticmethod
        def check() -> None:
            # as a one-process run's progress does: an interrupt a library lost stops the run here
            if interrupted():
                raise CancelledError("Cancelled by the user.")

    listener = PartitionBar()
    try:
        yield listener
    finally:
        listener.bar.close()
