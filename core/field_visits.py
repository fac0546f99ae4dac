"""The field-visit list of a classified layer: the parcels whose label is in doubt (a prediction
set of more than one class, or a confidence below a threshold), most doubtful first, with a
point to drive to, written as a CSV table."""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from .errors import InputError
from .io.csv_cells import inert_text
from .io.output import check_output, write_text
from .result_columns import SET_FIELD, SET_SIZE_FIELD

FIELD_VISIT_COLUMNS = ("parcel_id", "predicted", "confidence", "crop_set", "crop_set_size", "lon", "lat")
"""The columns of the CSV (and of the layer the dock makes of it)."""


@dataclass(frozen=True)
class FieldVisit:
    """One parcel to check in the field.

    Attributes:
        parcel_id: the parcel's id as the layer gives it.
        predicted: the class the model gave; confidence: its calibrated probability.
        classes: the prediction set (``crop_set``, classes joined by ``|``), or "" without one.
        set_size: how many classes the set holds (0 without a set).
        lon, lat: a point inside the parcel (WGS 84 degrees).
    """

    parcel_id: str
    predicted: str
    confidence: float
    classes: str
    set_size: int
    lon: float
    lat: float

    def row(self) -> list:
        return [self.parcel_id, self.predicted, self.confidence, self.classes, self.set_size, self.lon, self.lat]


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


def _inside_points_lonlat(frame: Any) -> np.ndarray:
    """``(N, 2)`` longitude and latitude of a point inside each parcel (NaN for no geometry)."""
    if frame.crs is None:
        raise InputError("The classified layer has no CRS, so its parcels cannot be placed for a field visit; "
                         "assign its CRS first.")
    points = frame.geometry.representative_point().to_crs("EPSG:4326")
    return np.asarray([(p.x, p.y) if p is not None and not p.is_empty else (math.nan, math.nan) for p in points],
                      dtype=np.float64).reshape(-1, 2)


def field_visits(frame: Any, *, label_field: str = "crop_pred", conf_field: str = "crop_conf",
                 id_field: Optional[str] = None, below: Optional[float] = None) -> list[FieldVisit]:
    """The parcels of a classified layer to check in the field, most doubtful first.

    A parcel is listed when its prediction set (:data:`SET_SIZE_FIELD`) holds more than one
    class, or when ``below`` is given and its confidence is below it. The list is ranked by set
    size (largest first), then confidence (lowest first). Parcels without a class (not
    classified) are left out.

    Args:
        frame: a GeoDataFrame of the classified layer with ``label_field``, ``conf_field`` and,
            where the run made sets, :data:`SET_FIELD` and :data:`SET_SIZE_FIELD`.
        id_field: the field of parcel ids (None: the frame's index).
        below: also list parcels whose confidence is below this.

    Raises:
        InputError: a field is missing, or neither sets nor a threshold say what is in doubt.
    """
    has_sets = SET_SIZE_FIELD in frame.columns and SET_FIELD in frame.columns
    needed = [label_field, conf_field] + ([id_field] if id_field else [])
    missing = [name for name in needed if name not in frame.columns]
    if missing:
        fields = ", ".join(c for c in frame.columns if c != "geometry")
        raise InputError(f"The classified layer has no field {', '.join(missing)}; its fields are {fields}.")
    if not has_sets and below is None:
        raise InputError(f"The classified layer has no prediction sets ({SET_FIELD}, {SET_SIZE_FIELD}); classify "
                         "with a calibrated model and prediction sets, or list the parcels below a confidence.")
    lonlat = _inside_points_lonlat(frame)
    ids = frame[id_field] if id_field else frame.index
    sizes = frame[SET_SIZE_FIELD] if has_sets else [None] * len(frame)
    sets = frame[SET_FIELD] if has_sets else [None] * len(frame)
    visits = []
    for parcel, label, conf, members, size, (lon, lat) in zip(ids, frame[label_field], frame[conf_field], sets,
                                                              sizes, lonlat):
        if label is None or (isinstance(label, float) and math.isnan(label)) or str(label) == "":
            continue
        confidence = _number(conf)
        count = _number(size)
        count = int(count) if math.isfinite(count) else 0
        doubtful = count > 1 or (below is not None and math.isfinite(confidence) and confidence < below)
        if doubtful:
            visits.append(FieldVisit(str(parcel), str(label), confidence, "" if members is None else str(members),
                                     count, float(lon), float(lat)))
    visits.sort(key=lambda v: (-v.set_size, v.confidence if math.isfinite(v.confidence) else -1.0))
    return visits


def field_visits_csv(visits: Sequence[FieldVisit]) -> str:
    """The list as CSV text (columns :data:`FIELD_VISIT_COLUMNS`; text cells inert for spreadsheets)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(FIELD_VISIT_COLUMNS)
    for visit in visits:
        writer.writerow([inert_text(visit.parcel_id), inert_text(visit.predicted), f"{visit.confidence:.4f}",
                         inert_text(visit.classes), visit.set_size, f"{visit.lon:.6f}", f"{visit.lat:.6f}"])
    return buffer.getvalue()


def write_field_visits(visits: Sequence[FieldVisit], path: Union[str, os.PathLike], *, overwrite: bool = False,
                       inputs: Sequence[Union[str, os.PathLike, None]] = ()) -> Path:
    """Write :func:`field_visits_csv` to ``path`` (a ``.csv``; checked first, written atomically).

    Raises:
        OutputError: ``path`` exists without ``overwrite``, is one of ``inputs``, or cannot be written.
    """
    target = check_output(path, what="field-visit list", suffixes=(".csv",), overwrite=overwrite,
                          inputs=[p for p in inputs if p])
    return write_text(target, field_visits_csv(visits), overwrite=overwrite, what="field-visit list")
