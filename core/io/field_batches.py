"""Fields added to a layer, given to the writers batch by batch in layer order.

A writer copies the layer feature by feature (or record batch by record batch) and asks
:class:`FieldBatches` for the added values of the rows it has reached, so the fields need not be
held whole: a partitioned run makes each batch from its run folder as it is asked for, while its
partitions still run. Fields already held as arrays are one batch.

How a field is stored (its kind, and a shapefile's text width) is fixed before the first row is
written. Fields held whole are scanned for it; a source whose batches may not all exist yet
declares its kinds and the widest text each field can hold, and the widest text it actually
made is known once every row was made (:meth:`FieldBatches.longest`), when a writer narrows
the field to it.
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
        kinds: the ``field_kind`` of each field, declared: no pass over the batches is made
            before writing (``widths`` then bounds the text fields; the longest text is
            measured in the batches as they are made).
        widths: the most UTF-8 bytes a value of each text field can have (with ``kinds``;
            a field left out: 254, a shapefile's widest).
        complete: called by a writer once every row was made, before its output is published;
            it may refuse the output by raising.
    """

    def __init__(self, names: Sequence[str], length: int, make: Callable[[int, int], Mapping[str, np.ndarray]],
                 batch_rows: int = BATCH_ROWS, *, kinds: Optional[Mapping[str, str]] = None,
                 widths: Optional[Mapping[str, int]] = None, complete: Optional[Callable[[], None]] = None) -> None:
        self.names = list(names)
        self.length = int(length)
        self.batch_rows = max(1, int(batch_rows))
        self._make = make
        self._scanned: Optional[tuple[dict, dict]] = None
        self._lengths = {name: self.length for name in self.names}
        self._declared = None if kinds is None else {name: kinds[name] for name in self.names}
        self._widths = dict(widths or {})
        self._complete = complete
        self._made_longest = {name: 0 for name in self.names}

    @classmethod
    def of(cls, fields: Union[Mapping[str, np.ndarray], "FieldBatches"], kinds: Optional[Mapping[str, str]] = None,
           widths: Optional[Mapping[str, int]] = None) -> "FieldBatches":
        """``fields`` as batches: arrays held whole are one batch (their lengths must agree);
        ``kinds`` and ``widths`` declare them as the constructor's do (a field of no value has
        no kind of its own)."""
        if isinstance(fields, FieldBatches):
            return fields
        arrays = {name: np.asarray(values) for name, values in fields.items()}
        length = len(next(iter(arrays.values()))) if arrays else 0
        batches = cls(list(arrays), length, lambda start, stop: {k: v[start:stop] for k, v in arrays.items()},
                      batch_rows=max(length, 1), kinds=kinds, widths=widths)
        batches._lengths = {name: len(values) for name, values in arrays.items()}
        return batches

    def lengths(self) -> dict[str, int]:
        """Values per field (arrays held whole may disagree with ``length``: the writers check)."""
        return dict(self._lengths)

    @property
    def declared(self) -> bool:
        """Whether the kinds were declared (the batches are made once, as they are written)."""
        return self._declared is not None

    def widest(self, name: str) -> int:
        """The most UTF-8 bytes a value of the declared text field ``name`` can have."""
        return int(self._widths.get(name, 254))

    def complete(self) -> None:
        """Every row was made: the source checks what it made (writers call this before publishing)."""
        if self._complete is not None:
            self._complete()

    def slice(self, start: int, stop: int) -> dict[str, np.ndarray]:
        """The values of rows ``start:stop``."""
        batch = dict(self._make(start, stop))
        if self._declared is not None:
            for name in self.names:
                if self._declared[name] == "string":
                    self._made_longest[name] = max(self._made_longest[name], _longest_text(batch[name]))
        return batch

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
        if self._declared is not None:
            return {}, self._made_longest
        if self._scanned is None:
            self._scanned = self._scan()
        return self._scanned

    def kinds(self) -> dict[str, str]:
        """Field name -> ``field_kind`` of the whole field (declared, or one pass over the
        batches, kept)."""
        if self._declared is not None:
            return dict(self._declared)
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
        """The longest value of field ``name`` as text, in UTF-8 bytes (NULLs aside; 0 without any);
        with declared kinds, of the text fields' values made so far."""
        return self._stats()[1][name]


def _longest_text(values: np.ndarray) -> int:
    """The longest of ``values`` as text in UTF-8 bytes, NULLs aside (0 without any)."""
    return max((len(str(v).encode("utf-8")) for v in np.asarray(values).tolist() if not _is_null(v)), default=0)


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
