"""Progress and cancellation as two small callables, so that core stays UI-agnostic.

The CLI adapts them to a tqdm bar, the plugin to ``QgsFeedback`` / ``QgsTask``.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from .errors import CancelledError

ProgressCallback = Callable[[float], None]
"""Receives the fraction of the work done, from 0.0 to 1.0."""

CancelCallback = Callable[[], bool]
"""Returns True when the user asked to stop."""


class Progress:
    """Reports a sub-range of the overall progress and checks for cancellation.

    Args:
        report: called with the overall fraction done, or None.
        cancelled: asked whether to stop, or None.
        start: overall fraction at which this piece of work starts.
        stop: overall fraction at which it ends.
    """

    def __init__(
        self,
        report: Optional[ProgressCallback] = None,
        cancelled: Optional[CancelCallback] = None,
        start: float = 0.0,
        stop: float = 1.0,
    ) -> None:
        self._report = report
        self._cancelled = cancelled
        self.start = start
        self.stop = stop

    def __call__(self, fraction: float) -> None:
        """Report ``fraction`` (0..1) of this piece of work, then check for cancellation."""
        if self._report is not None:
            fraction = min(max(fraction, 0.0), 1.0)
            self._report(self.start + (self.stop - self.start) * fraction)
        self.check()

    def check(self) -> None:
        """Raise :class:`CancelledError` if the user asked to stop."""
        if self._cancelled is not None and self._cancelled():
            raise CancelledError("Cancelled by the user.")

    def sub(self, start: float, stop: float) -> "Progress":
        """A Progress for the part ``start..stop`` (fractions of this one's range)."""
        span = self.stop - self.start
        return Progress(
            self._report, self._cancelled, self.start + span * start, self.start + span * stop
        )

    def parts(self, costs: Sequence[float]) -> list["Progress"]:
        """Progresses for consecutive parts of this one's range, each as wide as its share of
        ``costs`` (estimated seconds, or any unit common to all), so that the bar moves with the
        work rather than with the count of steps. Parts of no cost take no width (all parts
        share it equally when none has a cost)."""
        total = float(sum(costs))
        if total <= 0:
            costs, total = [1.0] * len(costs), float(len(costs))
        bounds, done = [], 0.0
        for cost in costs:
            bounds.append((done / total, (done + cost) / total))
            done += cost
        return [self.sub(start, stop) for start, stop in bounds]
