"""A partitioned classification's result read from its run folder in parcel order, batch by
batch, without merging it whole on the client.

Each partition's table holds its parcels in parcel order (their positions, sorted) and is
written in row groups of :data:`PART_ROW_GROUP` rows. The parcels of a batch (consecutive
positions) are a run of consecutive rows of each partition that holds some, so a batch reads
only the row groups of each partition that it needs, and the last row group read of each
partition is kept for the next batch: a partition's rows are read about once however the
partitions cut the layer, whichever partition finished first. The output's fields are made from
these batches as the writer copies the layer (:meth:`PartitionedResult.columns`).

The output can be written while the partitions still run: a batch then waits until every
partition holding its parcels has finished (:class:`FinishedPartitions`), so the output grows in
parcel order as they finish, whatever their order. The parcels are counted by class and status
as the batches are made, and the output is published only once they were all counted and found
usable.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from ..classify import ClassificationResult, labelled_result, unknown_warning
from ..crops import UNKNOWN_CLASS
from ..errors import CancelledError, OutputError
from ..io.field_batches import FieldBatches
from ..model.calibration import prediction_sets
from ..pixel_sets import STATUS_OK
from ..result_columns import column_kinds, result_columns, widest_texts
from .folder import RunFolder, check_partition

log = logging.getLogger(__name__)

PART_ROW_GROUP = 1024
"""Rows per row group of a classification partition's table: what a batch reads of it at least,
and what is kept of each partition between batches."""
OUTPUT_BATCH = 4096
"""Features of the output whose fields are made at a time (well under the smallest layers the
client is measured on, so that its memory is the same for every layer)."""


class FinishedPartitions:
    """Which partitions of a run have finished, told by the thread that runs them and waited on
    by the thread that writes the output; once the run stopped, a wait raises. The output is
    published only once the run has ended well (:meth:`wait_end`), so a run cancelled as its last
    partition finished publishes nothing either."""

    def __init__(self, finished: Sequence[int] = ()) -> None:
        self._finished = set(int(i) for i in finished)
        self._stopped: Optional[str] = None
        self._ended = False
        self._changed = threading.Condition()

    def finish(self, i: int) -> None:
        """Partition ``i`` is written in the run folder."""
        with self._changed:
            self._finished.add(int(i))
            self._changed.notify_all()

    def stop(self, why: str) -> None:
        """The run stopped (failed or cancelled): no other partition will finish."""
        with self._changed:
            self._stopped = why
            self._changed.notify_all()

    def end(self) -> None:
        """The run ended well: every partition is written."""
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait_end(self) -> None:
        """Return once the run has ended well.

        Raises:
            CancelledError: it stopped instead.
        """
        self._wait_until(lambda: self._ended)

    def wait(self, i: int) -> None:
        """Return once partition ``i`` has finished.

        Raises:
            CancelledError: the run stopped before it finished.
        """
        self._wait_until(lambda: int(i) in self._finished)

    def _wait_until(self, done: Callable[[], bool]) -> None:
        """Return once ``done()`` holds (asked under the lock); raise once the run stopped."""
        with self._changed:
            while not done():
                if self._stopped is not None:
                    raise CancelledError(f"The output was not written: {self._stopped}")
                self._changed.wait()


class PartitionRows:
    """Rows of a run folder's partition tables, read a row group at a time. The group a batch
    stopped in is kept, as read (Arrow), until its last row is asked for: the next batch's rows
    of that partition follow. A run of many partitions thus keeps a few compact groups, not
    one group of every partition made Python objects."""

    def __init__(self, folder: RunFolder, columns: Sequence[str]) -> None:
        self.folder = folder
        self.columns = list(columns)
        self._starts: dict[int, np.ndarray] = {}
        self._kept: dict[int, tuple[int, int, Any]] = {}

    def _file(self, i: int) -> Any:
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(str(self.folder.part(i)))
        except Exception as exc:  # pyarrow's own errors
            raise OutputError(f"The partition {self.folder.part(i)} cannot be read ({exc}); remove it and run again "
                              "with --resume.") from None

    def _group(self, i: int, row: int) -> tuple[int, int, Any]:
        kept = self._kept.get(i)
        if kept is not None and kept[0] <= row < kept[1]:
            return kept
        file = self._file(i)
        if i not in self._starts:
            sizes = [file.metadata.row_group(g).num_rows for g in range(file.num_row_groups)]
            self._starts[i] = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        starts = self._starts[i]
        g = int(np.searchsorted(starts, row, side="right")) - 1
        if not 0 <= g < len(starts) - 1:
            raise OutputError(f"The partition {self.folder.part(i)} holds fewer parcels than the run's plan; remove "
                              "it and run again with --resume.")
        try:
            table = file.read_row_group(g, columns=self.columns)
        except Exception as exc:  # pyarrow's own errors
            raise OutputError(f"The partition {self.folder.part(i)} cannot be read ({exc}); remove it and run again "
                              "with --resume.") from None
        self._kept[i] = (int(starts[g]), int(starts[g + 1]), table)
        return self._kept[i]

    def rows(self, i: int, lo: int, hi: int) -> dict[str, np.ndarray]:
        """Rows ``lo:hi`` of partition ``i``, by column."""
        pieces = []
        row = lo
        while row < hi:
            first, stop, table = self._group(i, row)
            end = min(hi, stop)
            part = table.slice(row - first, end - row)
            pieces.append({name: part.column(name).to_numpy(zero_copy_only=False) for name in self.columns})
            if end == stop:  # the group is used up
                del self._kept[i]
            row = end
        if len(pieces) == 1:
            return pieces[0]
        return {name: np.concatenate([p[name] for p in pieces]) for name in self.columns}


class PartitionedResult:
    """The result of a partitioned classification, held in its run folder.

    Its parcels are those of the run's plan in parcel order (``rows``: their positions in the
    layer, increasing). :meth:`read` gives a :class:`ClassificationResult` of some consecutive
    parcels, :meth:`columns` the output's fields batch by batch, :meth:`merged` the whole result
    (which the client then holds); a writer that takes :meth:`columns` never holds more than a
    batch. The counts are known once :meth:`tally` has read the partitions, or the output's
    fields were all made, and stay when the run folder is removed.

    With ``finished`` (a :class:`FinishedPartitions`), a read waits for the partitions it needs:
    the output is then made while the run goes on.

    Attributes:
        folder: the run folder; ``chunks``: each partition's parcels (positions, sorted).
        rows: ``(P,)`` int64 position of each parcel in the layer.
        classes, warnings: as a ``ClassificationResult``.
        decided_threshold: the confidence a decided label keeps, or None when not asked.
        coverage, set_threshold: prediction sets for ``coverage``, made with the calibration's
            score ``set_threshold`` (None: no sets).
        require: asked with the parcels counted by status once the output's fields were all made,
            before the output is published (it refuses the output by raising; None: no check).
        written: the output file written from the run folder (None: none yet).
    """

    def __init__(self, folder: RunFolder, chunks: Sequence[np.ndarray], rows: np.ndarray, classes: Sequence[str],
                 warnings: Sequence[str] = (), decided_threshold: Optional[float] = None) -> None:
        self.folder = folder
        self.chunks = list(chunks)
        self.rows = np.asarray(rows, dtype=np.int64)
        self.classes = tuple(classes)
        self.warnings = tuple(warnings)
        self.decided_threshold = decided_threshold
        self.coverage: Optional[float] = None
        self.set_threshold: Optional[float] = None
        self.require: Optional[Callable[[dict[str, int]], None]] = None
        self.written: Any = None
        self.finished: Optional[FinishedPartitions] = None
        self._counts: Optional[dict[str, int]] = None
        self._status_counts: Optional[dict[str, int]] = None

    def __len__(self) -> int:
        return len(self.rows)

    def _columns(self, ids: bool) -> list[str]:
        columns = ["row", *(["parcel_id"] if ids else []), "status", *(f"p{k}" for k in range(len(self.classes)))]
        return columns + (["decided_day", "decided_gdd"] if self.decided_threshold is not None else [])

    def read(self, start: int, stop: int, *, ids: bool = False,
             reader: Optional[PartitionRows] = None) -> ClassificationResult:
        """The parcels at positions ``start:stop`` (``rows`` as in the layer; parcel ids only
        with ``ids``, else empty texts), read from the partitions that hold them."""
        reader = reader or PartitionRows(self.folder, self._columns(ids))
        n, k = stop - start, len(self.classes)
        status = np.empty(n, dtype=object)
        probabilities = np.full((n, k), np.nan, dtype=np.float32)
        parcel_ids = np.full(n, "", dtype=object)
        decided = self.decided_threshold is not None
        days = np.full(n, np.nan)
        gdd = np.full(n, np.nan, dtype=np.float32)
        for i, idx in enumerate(self.chunks):
            lo, hi = (int(v) for v in np.searchsorted(idx, [start, stop]))
            if lo == hi:
                continue
            if self.finished is not None:
                self.finished.wait(i)
            part = reader.rows(i, lo, hi)
            check_partition(self.folder, i, idx[lo:hi], part["row"])
            at = idx[lo:hi] - start
            status[at] = part["status"]
            if ids:
                parcel_ids[at] = part["parcel_id"]
            if k:
                probabilities[at] = np.stack([part[f"p{c}"] for c in range(k)], axis=1)
            if decided:
                days[at], gdd[at] = part["decided_day"], part["decided_gdd"]
        kept = None
        if decided:
            when = np.where(np.isnan(days), np.datetime64("NaT"),
                            np.nan_to_num(days).astype(np.int64).astype("datetime64[D]"))
            kept = (when, gdd, self.decided_threshold)
        return labelled_result(self.classes, parcel_ids, self.rows[start:stop], status, probabilities, kept)

    def batches(self, size: Optional[int] = None, *, ids: bool = False) -> Iterator[ClassificationResult]:
        """The result ``size`` parcels at a time (default :data:`OUTPUT_BATCH`), in parcel order."""
        reader = PartitionRows(self.folder, self._columns(ids))
        size = size or OUTPUT_BATCH
        for start in range(0, len(self), size):
            yield self.read(start, min(start + size, len(self)), ids=ids, reader=reader)

    def tally(self) -> None:
        """Count the parcels by class and status (one pass over the partitions), log the counts and
        warn where too many came out "unknown"."""
        counts: dict[str, int] = {}
        statuses: dict[str, int] = {}
        for batch in self.batches():
            _add_counts(batch, counts, statuses)
        self._tallied(counts, statuses)

    def _tallied(self, counts: dict[str, int], statuses: dict[str, int]) -> None:
        """The counts of every parcel are known: keep, log and judge them."""
        self._counts, self._status_counts = counts, statuses
        unknown = unknown_warning(statuses.get(STATUS_OK, 0), counts.get(UNKNOWN_CLASS, 0))
        if unknown:
            log.warning(unknown)
            self.warnings = (*self.warnings, unknown)
        log.info("Classified %d parcels: %s", len(self), counts)

    def counts(self) -> dict[str, int]:
        """Parcels per predicted class, plus one entry per non-ok status (as ``ClassificationResult.counts``)."""
        if self._counts is None:
            self.tally()
        return dict(self._counts or {})

    def status_counts(self) -> dict[str, int]:
        """Parcels per status."""
        if self._status_counts is None:
            self.tally()
        return dict(self._status_counts or {})

    def merged(self) -> ClassificationResult:
        """The whole result in memory, as ``core.classify.assemble_result`` gives it."""
        result = self.read(0, len(self), ids=True)
        result.warnings = self.warnings
        unknown = unknown_warning(int((result.status == STATUS_OK).sum()),
                                  int((result.labels[result.status == STATUS_OK] == UNKNOWN_CLASS).sum()))
        if unknown:
            log.warning(unknown)
            result.warnings = (*result.warnings, unknown)
        log.info("Classified %d parcels: %s", len(result), result.counts())
        return result

    def columns(self, features: int, **names: Any) -> FieldBatches:
        """The output's fields for a layer of ``features`` features (``names``: the field names
        and ``probabilities`` of ``core.result_columns.result_columns``), made batch by batch
        from the run folder as they are asked for."""
        reader = PartitionRows(self.folder, self._columns(False))
        empty = self._batch_columns(0, 0, names, reader)
        # The parcels are counted as their batches are made, once each, in layer order.
        counts: dict[str, int] = {}
        statuses: dict[str, int] = {}
        counted = [0]  # layer rows counted so far

        def make(first: int, stop: int) -> dict[str, np.ndarray]:
            tally = first == counted[0] and stop > first
            columns = self._batch_columns(first, stop, names, reader, (counts, statuses) if tally else None)
            if tally:
                counted[0] = stop
            return columns

        def complete() -> None:
            if self.finished is not None:
                self.finished.wait_end()
            if counted[0] == features:
                self._tallied(counts, statuses)
            if self.require is not None:
                self.require(self.status_counts())

        return FieldBatches(list(empty), features, make, batch_rows=OUTPUT_BATCH, kinds=column_kinds(empty),
                            widths=widest_texts(self.classes, **names), complete=complete)

    def _batch_columns(self, first: int, stop: int, names: dict, reader: PartitionRows,
                       tally: Optional[tuple[dict, dict]] = None) -> dict[str, np.ndarray]:
        """The fields of layer rows ``first:stop`` (their parcels counted into ``tally``, the
        counts by class and by status, where given)."""
        lo, hi = (int(v) for v in np.searchsorted(self.rows, [first, stop]))
        batch = self.read(lo, hi, reader=reader)
        if tally is not None:
            _add_counts(batch, *tally)
        batch.rows = batch.rows - first
        if self.set_threshold is not None:
            sets = prediction_sets(batch.probabilities, self.set_threshold)
            sets[batch.status != STATUS_OK] = False
            batch.sets, batch.coverage = sets, self.coverage
        return result_columns(batch, stop - first, **names)


def _add_counts(batch: ClassificationResult, counts: dict[str, int], statuses: dict[str, int]) -> None:
    """Add the parcels of ``batch`` to the counts by class and by status."""
    for key, count in batch.counts().items():
        counts[key] = counts.get(key, 0) + count
    names, numbers = np.unique(batch.status, return_counts=True)
    for name, count in zip(names.tolist(), numbers.tolist()):
        statuses[name] = statuses.get(name, 0) + count
