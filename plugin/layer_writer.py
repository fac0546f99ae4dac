"""Classification results into QGIS layers: the attribute values of a result, written into the
parcel layer's own fields as one undoable edit, and the checks of a new layer file or of the
fields a run would replace."""

from __future__ import annotations

import math
from numbers import Integral
from pathlib import Path
from typing import Callable, Optional, Sequence

from qgis.core import QgsField, QgsProject, QgsVectorDataProvider, QgsVectorLayer
from qgis.PyQt.QtCore import QVariant

from ..app import result_columns
from ..core.result_columns import DECIDED_FIELD, SET_FIELD, SET_SIZE_FIELD, earlier_run_fields, empty_columns
from .i18n import tr


def layer_is_writable(layer: QgsVectorLayer) -> bool:
    """True when fields can be added and values changed in ``layer``."""
    needed = QgsVectorDataProvider.AddAttributes | QgsVectorDataProvider.ChangeAttributeValues
    caps = layer.dataProvider().capabilities()
    return not layer.readOnly() and (caps & needed) == needed


def result_values(result, fids: list, label_field: str, conf_field: str, status_field: Optional[str] = None,
                  probabilities: bool = False, existing: Sequence[str] = ()) -> dict:
    """The fields to write for the features that have a result, as ``{name: (QVariant type,
    {fid: value})}`` in writing order (``core.result_columns``; NaN becomes NULL). Optional result
    fields among the layer's ``existing`` fields that this result does not make (an earlier run's)
    are written empty."""
    columns = result_columns(result, len(fids), label_field=label_field, conf_field=conf_field,
                             status_field=status_field, probabilities=probabilities)
    columns.update(empty_columns(earlier_run_fields(existing, columns, result.classes), len(fids)))
    rows = [int(row) for row in result.rows]
    return {name: (QVARIANT_KINDS[column_kind(name, label_field, status_field)],
                   {fids[row]: qgis_value(values[row]) for row in rows})
            for name, values in columns.items()}


QVARIANT_KINDS = {"string": QVariant.String, "real": QVariant.Double, "integer": QVariant.Int}
"""The QGIS field type of each kind ``core.io.vector`` names."""


def column_kind(name: str, label_field: str, status_field: Optional[str]) -> str:
    """The kind of a result column (``core.result_columns``): text for the class, status,
    prediction set and decision date, a whole number for the set's size, a real number for the rest."""
    if name in (label_field, status_field, SET_FIELD, DECIDED_FIELD):
        return "string"
    return "integer" if name == SET_SIZE_FIELD else "real"


def qgis_value(value):
    """A column value as a QGIS attribute: NaN and None are NULL, whole numbers int, other numbers
    plain floats, text str."""
    if value is None:
        return None
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Integral) and not isinstance(value, bool):
        return int(value)
    number = float(value)
    return None if math.isnan(number) else number


SHAPEFILE_NAME_LENGTH = 10


def field_name_problems(layer: QgsVectorLayer, names: list, probabilities: bool) -> list:
    """Field names ``layer``'s format would cut short (a shapefile keeps 10 characters)."""
    if layer.dataProvider().storageType() != "ESRI Shapefile":
        return []
    problems = [tr("{field} is longer than a shapefile field name may be ({n} characters)").format(
        field=name, n=SHAPEFILE_NAME_LENGTH) for name in names if len(name) > SHAPEFILE_NAME_LENGTH]
    if probabilities:
        problems.append(tr("the probability fields (p_<class>, crop_margin, crop_entropy) do not fit shapefile "
                           "field names"))
    return problems


def write_result_to_layer(layer: QgsVectorLayer, fids: list, result, label_field: str, conf_field: str,
                          confirm_overwrite: Callable[[list], bool], status_field: Optional[str] = None,
                          probabilities: bool = False) -> Optional[QgsVectorLayer]:
    """Write the result into ``layer``'s fields as one edit command.

    A layer that was not being edited is saved at once and left out of edit mode; in a layer the
    user is editing, the result is one more undoable edit of that session. Existing fields are
    overwritten only when ``confirm_overwrite(names)`` returns True.

    Returns:
        ``layer``, or None when the user declined to overwrite.

    Raises:
        ValueError: the layer cannot be edited, or saving it failed (the edit is rolled back).
    """
    if not layer_is_writable(layer):
        raise ValueError(tr("{layer} cannot be edited; write a new layer file instead.").format(layer=layer.name()))
    fields = result_values(result, fids, label_field, conf_field, status_field, probabilities,
                           existing=layer.fields().names())
    existing = [n for n in fields if layer.fields().indexOf(n) >= 0]
    if existing and not confirm_overwrite(existing):
        return None
    was_editing = layer.isEditable()
    if not was_editing:
        layer.startEditing()
    layer.beginEditCommand(tr("ThermoCrop classification"))
    try:
        for name, (kind, _) in fields.items():
            if layer.fields().indexOf(name) < 0:
                layer.addAttribute(QgsField(name, kind, len=(254 if name == SET_FIELD else 40)
                                            if kind == QVariant.String else 0))
        indexes = {name: layer.fields().indexOf(name) for name in fields}
        for fid in fields[label_field][1]:
            layer.changeAttributeValues(fid, {indexes[name]: values[fid] for name, (_, values) in fields.items()})
    except Exception:
        layer.destroyEditCommand()
        if not was_editing:
            layer.rollBack()
        raise
    layer.endEditCommand()
    if not was_editing and not layer.commitChanges():
        errors = "; ".join(layer.commitErrors())
        layer.rollBack()
        raise ValueError(tr("Saving {layer} failed: {errors}").format(layer=layer.name(), errors=errors))
    return layer


def default_output_path(layer: QgsVectorLayer) -> Optional[str]:
    """``<parcel file>_classified.gpkg`` beside a file layer (``_2``, ``_3``... if taken), else None."""
    if layer is None or layer.providerType() != "ogr":
        return None
    source = Path(layer.source().split("|")[0])
    if not source.is_file():
        return None
    for n in range(1, 1000):
        path = source.with_name(f"{source.stem}_classified{'' if n == 1 else f'_{n}'}.gpkg")
        if not path.exists():
            return str(path)
    return None


def check_new_layer_file(path: str, layer: QgsVectorLayer, inputs: list, kinds: dict):
    """Preflight of a new layer file (milliseconds, nothing written): ``core.io.vector``'s checks.

    The extension names a format, the folder exists and a file can be created in it, the path
    is no folder, device or system path and none of the run's ``inputs`` (under any name), and
    no field of ``layer`` (copied into the file) has a name of ``kinds`` with another kind.

    Returns:
        The checked ``core.io.vector.VectorTarget`` (an existing file is allowed; the dock asks).

    Raises:
        OutputError: what is wrong, naming the path or field.
    """
    from ..core.io.vector import check_vector_output, replaced_fields
    from .staged_sinks import field_kinds

    target = check_vector_output(path, overwrite=True, inputs=[p for p in inputs if p], fields=list(kinds))
    replaced_fields(field_kinds(layer.fields()), target, kinds,
                    source=tr("The parcel layer {layer}").format(layer=layer.name()))
    return target


def check_layer_fields(layer: QgsVectorLayer, kinds: dict) -> None:
    """Existing fields of ``layer`` named as in ``kinds`` must hold that kind (``core.io.vector``).

    Raises:
        OutputError: a field of the same name and another type, naming it.
    """
    from ..core.io.vector import VectorTarget, output_field_names, replaced_fields
    from .staged_sinks import field_kinds

    driver = layer.dataProvider().storageType() or "Memory"
    target = VectorTarget(path=Path(), driver=driver, layer=layer.name(),
                          fields=output_field_names(driver, list(kinds)))
    replaced_fields(field_kinds(layer.fields()), target, kinds,
                    source=tr("The parcel layer {layer}").format(layer=layer.name()))


def layer_alive(layer) -> bool:
    """False when ``layer`` was deleted (removed from the project) behind Python's back."""
    if layer is None:
        return False
    try:
        layer.id()
    except RuntimeError:  # the wrapped C++ layer is gone
        return False
    return True


def unique_layer_name(name: str) -> str:
    """``name``, or ``name 2``, ``name 3``... when the project has a layer of that name (re-runs)."""
    taken = {layer.name() for layer in QgsProject.instance().mapLayers().values()}
    if name not in taken:
        return name
    stem, close = (name[:-1], ")") if name.endswith(")") else (name, "")
    return next(f"{stem} {n}{close}" for n in range(2, 10_000) if f"{stem} {n}{close}" not in taken)
