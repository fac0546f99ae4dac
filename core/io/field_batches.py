"""Fields added to a layer, given to the writers batch by batch in layer order.

A writer copies the layer feature by feature (or record batch by record batch) and asks
:class:`FieldBatches` for the added values of the rows it has reached, so the fields need not be
held whole: a partitioned run makes each batch from its run folder as it is asked for. Fields
already held as arrays are one batch.
"""

from __future__ import annotations

from typing import Callable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

BATCH_ROWS = 65536
"""Rows made at a time by a field source that is not held whole."""


def field_kind(values: np.ndarray) -> str:
    """``"string"``, ``"real"`` or ``"integer"``: how values of this array are stored."""
    array = np.asarray(values)
    kind = array.dtype.kind
    if kind == "f":
        return "real"
    if kind in "iub":
        return "integer"
    if kind == "O":  # whole numbers with None for NULL, as a nullable integer column is held
        present = [v for v in array.tolist() if v is not None]
        if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            return "integer"
    return "string"


def _is_null(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)


class FieldBatches:
    """Fields to add to a layer of ``length`` features, made batch by batch in layer order.

    Args:
        names: the fields, in writing order.
        length: the layer's number of features (every field has one value per feature).
        make: ``make(start, stop)`` -> field name -> ``(stop - start,)`` values of rows
            ``start:stop`` (each field of one dtype in every batch; None / NaN: NULL).
        batch_rows: rows asked of ``make`` at a time.
    """

    def __init__(self, names: Sequence[str], length: int, make: Callable[[int, int], Mapping[str, np.ndarray]],
                 batch_rows: int = BATCH_ROWS) -> None:
        self.names = list(names)
        self.length = int(length)
        self.batch_rows = max(1, int(batch_rows))
        self._make = make
        self._scanned: Optional[tuple[dict, dict]] = None
        self._lengths = {name: self.length for name in self.names}

    @classmethod
    def of(cls, fields: Union[Mapping[str, np.ndarray], "FieldBatches"]) -> "FieldBatches":
        """``fields`` as batches: arrays held whole are one batch (their lengths must agree)."""
        if isinstance(fields, FieldBatches):
            return fields
        arrays = {name: np.asarray(values) for name, values in fields.items()}
        length = len(next(iter(arrays.values()))) if arrays else 0
        batches = cls(list(arrays), length, lambda start, stop: {k: v[start:stop] for k, v in arrays.items()},
                      batch_rows=max(length, 1))
        batches._lengths = {name: len(values) for name, values in arrays.items()}
        return batches

    def lengths(self) -> dict[str, int]:
        """Values per field (arrays held whole may disagree with ``length``: the writers check)."""
        return dict(self._lengths)

    def slice(self, start: int, stop: int) -> dict[str, np.ndarray]:
        """The values of rows ``start:stop``."""
        return dict(self._make(start, stop))

    def __iter__(self) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """``(first row, values)`` batch after batch, in layer order."""
        for start in range(0, self.length, self.batch_rows):
            yield start, self.slice(start, min(start + self.batch_rows, self.length))

    def _scan(self) -> tuple[dict, dict]:
        """One pass: whether every present value of an object field is a whole number (and one
        is present), and each field's longest text in UTF-8 bytes."""
        whole: dict[str, Optional[bool]] = {name: None for name in self.names}
        longest: dict[str, int] = {name: 0 for name in self.names}
        for _, batch in self:
            for name in self.names:
                array = np.asarray(batch[name])
                if array.dtype.kind != "O":
                    if array.dtype.kind in "US":
                        longest[name] = max(longest[name], max((len(str(v).encode("utf-8")) for v in array.tolist()),
                                                               default=0))
                    continue
                values = array.tolist()
                present = [v for v in values if v is not None]
                if present:
                    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in present)
                    whole[name] = ints if whole[name] is None else (whole[name] and ints)
                longest[name] = max(longest[name], max((len(str(v).encode("utf-8")) for v in values
                                                        if not _is_null(v)), default=0))
        return whole, longest

    def _stats(self) -> tuple[dict, dict]:
        if self._scanned is None:
            self._scanned = self._scan()
        return self._scanned

    def kinds(self) -> dict[str, str]:
        """Field name -> ``field_kind`` of the whole field (one pass over the batches, kept)."""
        whole, _ = self._stats()
        dtypes = self.dtype_kinds()
        out = {}
        for name in self.names:
            kind = dtypes[name]
            out[name] = ("real" if kind == "f" else "integer" if kind in "iub"
                         else "integer" if kind == "O" and whole[name] else "string")
        return out

    def dtype_kinds(self) -> dict[str, str]:
        """Field name -> numpy dtype kind of its values (``f``, ``i``, ``O``, ...), from an empty batch."""
        empty = self.slice(0, 0)
        return {name: np.asarray(empty[name]).dtype.kind for name in self.names}

    def longest(self, name: str) -> int:
        """The longest value of field ``name`` as text, in UTF-8 bytes (NULLs aside; 0 without any)."""
        return self._stats()[1][name]


class RowValues:
    """The added values of one row after another, in layer order, a batch held at a time."""

    def __init__(self, fields: FieldBatches) -> None:
        self.fields = fields
        self._start = self._stop = 0
        self._batch: dict[str, list] = {}

    def row(self, row: int) -> dict[str, object]:
        """Field name -> value of ``row`` (rows asked in increasing order)."""
        if not self._start <= row < self._stop:
            self._start = row
            self._stop = min(row + self.fields.batch_rows, self.fields.length)
            batch = self.fields.slice(self._start, self._stop)
            # Python values per row as a one-process write takes them (``.item()`` of numbers).
            self._batch = {name: np.asarray(batch[name]) for name in self.fields.names}
        i = row - self._start
        out = {}
        for name, array in self._batch.items():
            out[name] = array[i] if array.dtype.kind == "O" else array[i].item()
        return out
