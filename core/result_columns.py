"""A classification result as the attribute columns every writer stores: the class, its
confidence, the status and, on request, the class probabilities, margin and entropy.

The command line's file writer, the Toolbox's feature sink and the dock's in-place editor all
take their values from :func:`result_columns`, so the three outputs say the same thing in the
same words."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .model.uncertainty import uncertainty_fields
from .pixel_sets import STATUS_OK

NOT_SELECTED = "not_selected"
"""The status of a feature the run was not asked to classify (outside the selection)."""


def result_columns(result: Any, rows: int, *, label_field: str = "crop_pred", conf_field: str = "crop_conf",
                   status_field: Optional[str] = "crop_status", probabilities: bool = False) -> dict[str, np.ndarray]:
    """The columns of ``result`` for a layer of ``rows`` features, in writing order.

    Args:
        result: a ``core.classify.ClassificationResult`` whose ``rows`` index the layer.
        rows: how many features the layer has.
        label_field, conf_field, status_field: the columns' names (``status_field`` None: no
            status column).
        probabilities: also the columns of ``uncertainty_fields`` (``p_<class>``, margin,
            entropy).

    Returns:
        Column name -> ``(rows,)`` array: the class (object, None where the status is not
        ``ok``), the confidence (float64, NaN where not ``ok``), the status (object:
        ``result.status``, :data:`NOT_SELECTED` for a feature without a result), then the
        probability, margin and entropy columns (float32, NaN where not ``ok``).
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
    if probabilities:
        full = np.full((rows, len(result.classes)), np.nan, dtype=np.float32)
        full[result.rows] = result.probabilities
        columns.update(uncertainty_fields(full, result.classes))
    return columns
