"""When each parcel's label was decided, found from the end of its season backwards.

A parcel's label is decided at the earliest date from which every prefix of its season (the
dates up to that date, then up to each later one) has the whole season's label with a
confidence of at least a threshold (``core.inseason.decided_index``). Only the prefixes from
that date on, and the one before it, are needed to find it. So :func:`suffix_decisions` pools
every prefix once (``prefixes.prefix_pools``: the per-date work is shared), decodes each parcel's
last prefix, then decodes earlier prefixes in blocks of 4, 8, 16 ... only for the parcels whose
prefixes have all held so far, until one does not. A parcel never decided costs one prefix; one
decided early in the season costs about all of them, as a pass over every prefix would.
:func:`decide` adds a bundle's GDD floor. This module needs torch: ``core.classify`` imports it
when a run predicts, not when the plugin loads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Optional

import numpy as np
import torch

from ..progress import Progress
from .prefixes import decode_prefixes, prefix_pools
from .season_floor import at_or_above_floor, gdd_floor, say_floor

__all__ = ["decide", "suffix_decisions", "earliest_holding"]

FIRST_BLOCK = 4
"""Prefixes decoded per parcel in the first block before its last one; each block doubles."""


def decide(model: Any, ps: Any, threshold: float, batch_size: int = 256,
           progress: Optional[Progress] = None) -> tuple[np.ndarray, np.ndarray]:
    """The whole season's probabilities and when each label was decided: what
    ``model.predict_prefixes`` and ``core.inseason.decided_index`` give, with only the prefixes
    a decision needs decoded (:func:`suffix_decisions`).

    With a GDD floor (``core.model.season_floor``), a whole-season run leaves out the acquisitions
    below the floor, and so does the first pass here. The prefixes of the dates below it (a second
    pass) can move a decision only for the parcels that have no acquisition above the floor and
    those whose every prefix above it holds; only theirs are computed. ``tests/core/test_prefixes.py``
    checks both against every prefix.

    Args:
        model: a ``ModelBundle``.
        ps: the pixel sets.
        threshold: the confidence a decided label keeps.
        batch_size: parcels per model call.
        progress: progress and cancellation.

    Returns:
        ``(P, K)`` float32 probabilities of the whole season (NaN without a valid date) and
        ``(P,)`` int64 the date index of each decision, -1 where never decided.
    """
    progress = progress or Progress()
    floor = gdd_floor(model.config.gdd)
    if floor <= 0:
        return suffix_decisions(model, ps, threshold, batch_size=batch_size, progress=progress)
    mask = np.asarray(ps.date_mask, dtype=bool)
    above = at_or_above_floor(mask, ps.gdd, floor)
    below = mask & ~above
    late_part, early_part = progress.sub(0.0, 0.9), progress.sub(0.9, 1.0)
    probabilities, index = suffix_decisions(model, replace(ps, date_mask=above), threshold, batch_size=batch_size,
                                            progress=late_part)
    has_above = above.any(axis=1)
    say_floor(model.path, floor, bool(below[has_above].any()))
    first_above = np.where(has_above, above.argmax(axis=1), -1)
    need = below.any(axis=1) & (~has_above | (index == first_above))
    if need.any():
        rows = np.flatnonzero(need)
        own = ~has_above[rows]  # seen below the floor only: the whole season is those dates
        targets = np.where(own, -1, np.nan_to_num(probabilities[rows], nan=-1.0).argmax(axis=1))
        early, early_index = suffix_decisions(model, replace(ps.subset(rows), date_mask=below[rows]), threshold,
                                              targets, batch_size=batch_size, progress=early_part)
        probabilities[rows[own]] = early[own]
        index[rows] = np.where(early_index >= 0, early_index, np.where(own, -1, index[rows]))
    progress(1.0)
    return probabilities, index


def suffix_decisions(bundle: Any, ps: Any, threshold: float, targets: Optional[np.ndarray] = None,
                     batch_size: int = 256, progress: Optional[Progress] = None) -> tuple[np.ndarray, np.ndarray]:
    """The whole season's probabilities and the date from which each parcel's prefixes all hold.

    A prefix holds when its label (the argmax of its calibrated probabilities) is the parcel's
    target and its largest probability is at least ``threshold``. The date mask of ``ps`` is used
    as it is (a GDD floor is :func:`decide`'s).

    Args:
        bundle: a ``ModelBundle``.
        ps: the pixel sets.
        threshold: the confidence a prefix must keep.
        targets: ``(P,)`` int, the class each parcel's prefixes must have; -1 (or no ``targets``):
            the label of its whole season.
        batch_size: parcels per model call.
        progress: progress and cancellation.

    Returns:
        ``(P, K)`` float32 probabilities of the whole season (calibrated where the bundle carries
        a calibration, as ``bundle.predict_prefixes(ps)[:, -1]``; NaN without a valid date) and
        ``(P,)`` int64 the index of the earliest date from which every prefix holds (a valid
        date of the parcel), -1 where the whole season's prefix does not hold or there is no
        valid date.
    """
    progress = progress or Progress()
    mask = np.asarray(ps.date_mask, dtype=bool)
    n, k = len(ps), len(bundle.config.classes)
    probabilities = np.full((n, k), np.nan, dtype=np.float32)
    first = np.full(n, -1, dtype=np.int64)
    wanted = np.full(n, -1, dtype=np.int64) if targets is None else np.asarray(targets, dtype=np.int64)
    model = bundle.fast_model()
    for rows, inputs, done in bundle.model_batches(ps, batch_size):
        with torch.inference_mode():
            pools = prefix_pools(model, *inputs)
            decoder = _PrefixDecoder(bundle, pools, inputs[4].cpu().numpy())
            valid = mask[rows].sum(axis=1)
            last = decoder(np.arange(len(rows)), valid - 1)
            label = np.where(wanted[rows] >= 0, wanted[rows], last.argmax(axis=1))
            earliest = earliest_holding(decoder, last, label, valid, threshold)
        dates = np.argsort(~mask[rows], axis=1, kind="stable")  # [:, j]: the parcel's j-th valid date
        first[rows] = np.where(earliest >= 0, dates[np.arange(len(rows)), np.maximum(earliest, 0)], -1)
        probabilities[rows] = last
        progress(done)
    progress(1.0)
    return probabilities, first


class _PrefixDecoder:
    """Calibrated probabilities of chosen prefixes of one batch."""

    def __init__(self, bundle: Any, pools: list, gdd: np.ndarray) -> None:
        self.bundle, self.pools, self.gdd = bundle, pools, gdd
        self.device = pools[0][1].device

    def __call__(self, parcels: np.ndarray, prefixes: np.ndarray) -> np.ndarray:
        """``(N, K)`` float32 for the prefixes ``(parcels[i], prefixes[i])`` (batch row, index among
        the parcel's valid dates)."""
        log_p = decode_prefixes(self.pools, torch.from_numpy(parcels).to(self.device),
                                torch.from_numpy(prefixes).to(self.device))
        p = torch.softmax(log_p.double(), dim=-1).float().cpu().numpy()
        calibration = self.bundle.calibration
        if calibration is not None:  # by the GDD of each prefix's last date, as predict_prefixes
            p = calibration.apply(p, self.gdd[parcels, prefixes])
        return p


def _holds(p: np.ndarray, label: np.ndarray, threshold: float) -> np.ndarray:
    return (p.argmax(axis=1) == label) & (p.max(axis=1) >= threshold)


def earliest_holding(decode: Callable[[np.ndarray, np.ndarray], np.ndarray], last: np.ndarray, label: np.ndarray,
                     valid: np.ndarray, threshold: float) -> np.ndarray:
    """The earliest prefix of each parcel from which every prefix holds, searched from the end in
    blocks of :data:`FIRST_BLOCK`, then twice as many each time, prefixes before it.

    Args:
        decode: ``(parcels (N,), prefixes (N,)) -> (N, K)`` probabilities of those prefixes
            (indices among a parcel's valid dates).
        last: ``(B, K)`` probabilities of each parcel's last prefix.
        label: ``(B,)`` the class a prefix must have to hold.
        valid: ``(B,)`` each parcel's number of valid dates, at least 1.
        threshold: the confidence a prefix must have to hold.

    Returns:
        ``(B,)`` int64 prefix index, -1 where the last prefix does not hold.
    """
    earliest = np.where(_holds(last, label, threshold), valid - 1, -1)
    searching = earliest > 0
    block = FIRST_BLOCK
    while searching.any():
        parcels = np.flatnonzero(searching)
        start = np.maximum(earliest[parcels] - block, 0)
        span = earliest[parcels] - start
        rows = np.repeat(parcels, span)
        prefixes = np.repeat(start, span) + np.arange(span.sum()) - np.repeat(np.cumsum(span) - span, span)
        failed = np.where(_holds(decode(rows, prefixes), label[rows], threshold), -1, prefixes)
        latest_failure = np.full(len(earliest), -1, dtype=np.int64)
        np.maximum.at(latest_failure, rows, failed)
        broke = latest_failure[parcels] >= 0
        earliest[parcels] = np.where(broke, latest_failure[parcels] + 1, start)
        searching[parcels] = ~broke & (start > 0)
        block *= 2
    return earliest
