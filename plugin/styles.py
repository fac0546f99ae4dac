"""Categorized styles in the class colours of ``core.crops.class_colours``, applied to layers and
saved beside outputs: one category per class, one for parcels that were not classified."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional, Sequence

from qgis.core import (
    QgsCategorizedSymbolRenderer,
    QgsFillSymbol,
    QgsRendererCategory,
    QgsVectorLayer,
)
from qgis.PyQt.QtGui import QColor

from ..core.crops import NOT_CLASSIFIED_COLOUR, class_colours

log = logging.getLogger(__name__)

UNCLASSIFIED_COLOUR = NOT_CLASSIFIED_COLOUR
NOT_CLASSIFIED_LABEL = "not classified"
STYLE_NAME = "thermocrop"
"""The name of the style stored in GeoPackage outputs (their ``layer_styles`` table)."""


def class_label(name: str) -> str:
    """A class id as legends show it: ``winter_wheat`` -> ``Winter wheat`` (the value stays the id)."""
    text = str(name).replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def class_renderer(field: str, classes: Sequence[str]) -> QgsCategorizedSymbolRenderer:
    """A categorized renderer on ``field``: one category per class, in the classes' order and
    colours (``class_colours``), plus one for parcels without a class (an empty value)."""
    colours = class_colours(classes)
    categories = []
    for name in list(colours) + [""]:
        symbol = QgsFillSymbol.createSimple({"outline_color": "#404040", "outline_width": "0.2"})
        symbol.setColor(QColor(colours[name] if name else NOT_CLASSIFIED_COLOUR))
        categories.append(QgsRendererCategory(name, symbol, class_label(name) if name else NOT_CLASSIFIED_LABEL))
    return QgsCategorizedSymbolRenderer(field, categories)


def apply_class_style(layer: QgsVectorLayer, field: str, classes: Sequence[str]) -> None:
    """Give ``layer`` the class renderer of ``classes`` and repaint it."""
    layer.setRenderer(class_renderer(field, classes))
    layer.triggerRepaint()


def save_style_beside(layer: QgsVectorLayer, path: str) -> Optional[Path]:
    """Save the layer's style as ``<file>.qml`` beside a file output, and into a GeoPackage.

    QGIS loads a same-named .qml, or the default style stored in a GeoPackage, when the file is
    opened, so outputs of headless runs open styled.

    Returns:
        The .qml path, or None when ``path`` is not a file.
    """
    file_path = Path(path.split("|")[0])
    if not file_path.is_file():
        return None
    from ..core.errors import OutputError
    from ..core.io.output import staged_file

    qml = file_path.with_suffix(".qml")
    try:
        with staged_file(qml, what="style") as tmp:  # never half a style file beside the output
            message, ok = layer.saveNamedStyle(str(tmp))
            if not ok:
                raise OutputError(message)
    except OutputError as exc:
        log.warning("Could not save the style beside %s: %s", file_path, exc)
    if file_path.suffix.lower() == ".gpkg":
        error = store_style(layer)
        if error:
            log.warning("Could not store the style in %s: %s", file_path, error)
    return qml


def store_style(layer: QgsVectorLayer) -> str:
    """Store the layer's style in its GeoPackage as the default style ``STYLE_NAME``, replacing
    the one an earlier run stored there.

    QGIS asks in a modal dialog before it overwrites a style of the same name, in
    ``qgis_process`` too, where nobody can answer and the run waits for ever; so the earlier
    style is deleted first and the save never meets one.

    Returns:
        What went wrong, or "" when the style was stored.
    """
    related, ids, names, _, _ = layer.listStylesInDatabase()
    # The styles of this layer come first in the lists; those of other layers follow.
    for style_id, name in list(zip(ids, names))[:max(related, 0)]:
        if name == STYLE_NAME:
            deleted, error = layer.deleteStyleFromDatabase(style_id)
            if not deleted:
                return error or f"the earlier style {style_id} could not be replaced"
    return layer.saveStyleToDatabase(STYLE_NAME, "ThermoCrop classes", True, "")


CONFIDENCE_BREAKS = ((0.0, 0.4, "#440154"), (0.4, 0.6, "#31688e"), (0.6, 0.8, "#35b779"), (0.8, 1.0, "#fde725"))
"""Confidence ranges and their colours from the viridis ramp (purple: unsure .. yellow: sure): read
alike by colour-blind eyes, brighter with confidence, saturated enough to stand out on a grey
scene, and none of them a class colour."""


def confidence_renderer(field: str, labels: Sequence[str] = ()):
    """A rule-based renderer colouring parcels by the value of the confidence ``field``.

    One rule per range of ``CONFIDENCE_BREAKS`` (the last one includes 1.0) and a grey ELSE rule
    for parcels without a confidence. ``labels`` overrides the legend texts, one per range.
    """
    from qgis.core import QgsExpression, QgsRuleBasedRenderer

    column = QgsExpression.quotedColumnRef(field)
    root = QgsRuleBasedRenderer.Rule(None)
    for i, (low, high, colour) in enumerate(CONFIDENCE_BREAKS):
        symbol = QgsFillSymbol.createSimple({"outline_color": "#404040", "outline_width": "0.2"})
        symbol.setColor(QColor(colour))
        upper = "<=" if i == len(CONFIDENCE_BREAKS) - 1 else "<"
        label = labels[i] if i < len(labels) else f"{low:.1f} – {high:.1f}"
        root.appendChild(QgsRuleBasedRenderer.Rule(symbol, 0, 0, f"{column} >= {low} AND {column} {upper} {high}",
                                                   label))
    symbol = QgsFillSymbol.createSimple({"outline_color": "#404040", "outline_width": "0.2"})
    symbol.setColor(QColor(UNCLASSIFIED_COLOUR))
    else_rule = QgsRuleBasedRenderer.Rule(symbol, 0, 0, "ELSE", labels[len(CONFIDENCE_BREAKS)]
                                          if len(labels) > len(CONFIDENCE_BREAKS) else "not classified")
    root.appendChild(else_rule)
    return QgsRuleBasedRenderer(root)
