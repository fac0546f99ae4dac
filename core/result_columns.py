"""A classification result as the attribute columns every writer stores: the class, its
confidence, the status, the prediction set where the result has sets and, on request, the class
probabilities, margin and entropy.

The command line's file writer, the Toolbox's feature sink and the dock's in-place editor all
take their values from :func:`result_columns`, so the three outputs say the same thing in the
same words."""

from __future__ import annotations

from typing import Any, Collection, Optional

import numpy as np

from .model.uncertainty import ENTROPY_FIELD, MARGIN_FIELD, probability_field_names, uncertainty_fields
from .parcels import STATUSES
from .pixel_sets import STATUS_OK

SET_FIELD = "crop_set"
"""The prediction set: its classes joined by :data:`SET_SEPARATOR`, most probable first."""
SET_SIZE_FIELD = "crop_set_size"
"""How many classes the prediction set holds (1: the label is sure at the chosen coverage)."""
SET_SEPARATOR = "|"
DECIDED_FIELD = "crop_decided"
"""The acquisition from which the label was decided, as ``YYYY-MM-DD`` text (NULL: never)."""
DECIDED_GDD_FIELD = "crop_decided_gdd"
"""The parcel's growing degree days on that acquisition (NULL: never decided)."""

NOT_SELECTED = "not_selected"
"""The status of a feature the run was not asked to classify (outside the selection)."""


def result_columns(result: Any, rows: int, *, label_field: str = "crop_pred", conf_field: str = "crop_conf",
                   status_field: Optional[str] = "crop_status", probabilities: bool = False,
                   empty: Collection[str] = ()) -> dict[str, np.ndarray]:
    """The columns of ``result`` for a layer of ``rows`` features, in writing order.

    Args:
        result: a ``core.classify.ClassificationResult`` whose ``rows`` index the layer.
        rows: how many features the layer has.
        label_field, conf_field, status_field: the columns' names (``status_field`` None: no
            status column).
        probabilities: also the columns of ``uncertainty_fields`` (``p_<class>``, margin,
            entropy).
        empty: names of :func:`earlier_run_fields` (columns an earlier run wrote into the input
            and this one does not make): they follow, empty (:func:`empty_columns`), so that no
            value of another run is left beside this run's.

    Returns:
        Column name -> ``(rows,)`` array: the class (object, None where the status is not
        ``ok``), the confidence (float64, NaN where not ``ok``), the status (object:
        ``result.status``, :data:`NOT_SELECTED` for a feature without a result), where
        ``result.sets`` is given :data:`SET_FIELD` (object, None where not ``ok``) and
        :data:`SET_SIZE_FIELD` (object: whole numbers, None where not ``ok``), where
        ``result.decided`` is given :data:`DECIDED_FIELD` (object: ``YYYY-MM-DD``, None where never
        decided) and :data:`DECIDED_GDD_FIELD` (float64, NaN where never), then the probability,
        margin and entropy columns (float32, NaN where not ``ok``).
    """
    ok = np.asarray(result.status) == STATUS_OK
    labels = np.full(rows, None, dtype=object)
    confidence = np.full(rows, np.nan)
    labels[result.rows] = np.where(ok, np.asarray(result.labels).astype(object), None)
    confidence[result.rows] = np.where(ok, result.confidence, np.nan)
    columns = {label_field: labels, conf_field: confidence}
    if status_field:
        status = np.full(rows, NOT_SELECTED, dtype=object)
        status[result.rows] = result.status
        columns[status_field] = status
    if getattr(result, "sets", None) is not None:
        columns.update(set_columns(result, rows))
    if getattr(result, "decided", None) is not None:
        columns.update(decided_columns(result, rows))
    if probabilities:
        full = np.full((rows, len(result.classes)), np.nan, dtype=np.float32)
        full[result.rows] = result.probabilities
        columns.update(uncertainty_fields(full, result.classes))
    columns.update(empty_columns(empty, rows))
    return columns


def empty_columns(names: Collection[str], rows: int) -> dict[str, np.ndarray]:
    """Columns of no value (NaN for the real ones, None for the others) for the optional result
    columns ``names`` (:func:`earlier_run_fields`)."""
    probability = set(names) - set(OPTIONAL_FIELDS)
    return {name: np.full(rows, np.nan) if name in REAL_OPTIONAL or name in probability
            else np.full(rows, None, dtype=object) for name in names}


OPTIONAL_FIELDS = (SET_FIELD, SET_SIZE_FIELD, DECIDED_FIELD, DECIDED_GDD_FIELD, MARGIN_FIELD, ENTROPY_FIELD)
"""The result's columns that a run writes only on request (besides ``p_<class>``)."""
REAL_OPTIONAL = (DECIDED_GDD_FIELD, MARGIN_FIELD, ENTROPY_FIELD)
"""Those of :data:`OPTIONAL_FIELDS` that hold real numbers (as the class probabilities do)."""


def earlier_run_fields(existing: Collection[str], columns: Collection[str], classes: Any) -> list[str]:
    """The optional result columns (:data:`OPTIONAL_FIELDS`, ``p_<class>`` of ``classes``) among the
    ``existing`` field names of an input (case aside) that ``columns`` do not hold: an earlier run
    wrote them and this one does not, so their values would no longer match the class written
    beside them. Named as :func:`result_columns` names them."""
    present = {name.lower() for name in existing}
    written = {name.lower() for name in columns}
    return [name for name in (*OPTIONAL_FIELDS, *probability_field_names(classes))
            if name.lower() in present and name.lower() not in written]


def column_kinds(columns: dict[str, np.ndarray]) -> dict[str, str]:
    """How each of the columns :func:`result_columns` made (of any number of rows, none
    included) is stored: numbers as real, :data:`SET_SIZE_FIELD` as integer, the rest as text.
    This is what ``field_batches.field_kind`` finds in the columns of a result with a parcel
    classified (the size of an empty set is NULL), which every written result has."""
    return {name: ("real" if np.asarray(values).dtype.kind == "f"
                   else "integer" if name == SET_SIZE_FIELD or np.asarray(values).dtype.kind in "iub" else "string")
            for name, values in columns.items()}


def widest_texts(classes: Any, *, label_field: str = "crop_pred", status_field: Optional[str] = "crop_status",
                 **_: Any) -> dict[str, int]:
    """The most UTF-8 bytes a value of each text column of :func:`result_columns` can have, for a
    model of ``classes`` (the column names as given to it)."""
    names = [len(str(c).encode("utf-8")) for c in classes]
    widths = {label_field: max(names, default=0), SET_FIELD: sum(names) + max(len(names) - 1, 0),
              DECIDED_FIELD: len("YYYY-MM-DD")}
    if status_field:
        widths[status_field] = max(len(s.encode("utf-8")) for s in (*STATUSES, NOT_SELECTED))
    return widths


def set_texts(sets: np.ndarray, probabilities: np.ndarray, classes: Any) -> list[Optional[str]]:
    """Each row's set as text: its classes most probable first, joined by :data:`SET_SEPARATOR`;
    None for an empty set (a parcel without a result)."""
    names = np.asarray(classes, dtype=object)
    order = np.argsort(-np.nan_to_num(np.asarray(probabilities, dtype=np.float64), nan=-1.0), axis=1, kind="stable")
    texts: list[Optional[str]] = []
    for row_set, row_order in zip(np.asarray(sets, dtype=bool), order):
        members = [names[k] for k in row_order if row_set[k]]
        texts.append(SET_SEPARATOR.join(members) if members else None)
    return texts


def set_columns(result: Any, rows: int) -> dict[str, np.ndarray]:
    """:data:`SET_FIELD` and :data:`SET_SIZE_FIELD` of ``result`` for a layer of ``rows`` features."""
    ok = np.asarray(result.status) == STATUS_OK
    texts = np.full(rows, None, dtype=object)
    sizes = np.full(rows, None, dtype=object)
    inside = set_texts(result.sets, result.probabilities, result.classes)
    counts = np.asarray(result.sets, dtype=bool).sum(axis=1)
    texts[result.rows] = np.where(ok, np.asarray(inside, dtype=object), None)
    sizes[result.rows] = [int(c) if good else None for c, good in zip(counts, ok)]
    return {SET_FIELD: texts, SET_SIZE_FIELD: sizes}


def decided_columns(result: Any, rows: int) -> dict[str, np.ndarray]:
    """:data:`DECIDED_FIELD` and :data:`DECIDED_GDD_FIELD` of ``result`` for a layer of ``rows`` features."""
    days = np.asarray(result.decided, dtype="datetime64[D]")
    texts = np.full(rows, None, dtype=object)
    gdd = np.full(rows, np.nan)
    texts[result.rows] = [None if np.isnat(d) else str(d) for d in days]
    gdd[result.rows] = np.round(np.asarray(result.decided_gdd, dtype=np.float64), 1)
    return {DECIDED_FIELD: texts, DECIDED_GDD_FIELD: gdd}
