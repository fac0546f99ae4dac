"""Class styles: the renderer and the shipped .qml colour classes as core.crops.class_colours does."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from thermocrop.core.crops import CROP_CLASSES, NOT_CLASSIFIED_COLOUR, class_colours

QML = Path(__file__).resolve().parents[2] / "resources" / "styles" / "crop_classes.qml"


def _hex(rgba: str) -> str:
    r, g, b, _ = (int(v) for v in rgba.split(","))
    return f"#{r:02x}{g:02x}{b:02x}"


def test_shipped_style_has_the_class_colours():
    root = ET.parse(QML).getroot()
    categories = {c.get("symbol"): c.get("value") for c in root.iter("category")}
    colours = {}
    for symbol in root.iter("symbol"):
        if symbol.get("name") in categories:
            layer_props = symbol.find("layer").find("Option")
            value = next(o.get("value") for o in layer_props.iter("Option") if o.get("name") == "color")
            colours[categories[symbol.get("name")]] = _hex(value)
    assert colours == {**class_colours(CROP_CLASSES), "": NOT_CLASSIFIED_COLOUR}


@pytest.mark.qgis
def test_renderer_for_any_number_of_classes(qgis_app):
    from thermocrop.plugin.styles import NOT_CLASSIFIED_LABEL, class_renderer

    classes = [f"crop_{i}" for i in range(25)] + ["unknown"]
    renderer = class_renderer("crop_pred", classes)
    got = [(c.value(), c.label(), c.symbol().color().name()) for c in renderer.categories()]
    expected = class_colours(classes)
    # Legends name the classes as words ("crop 3", "Unknown"); the values stay the class ids.
    assert got[:-1] == [(name, name.replace("_", " ").capitalize(), expected[name]) for name in classes]
    assert got[-1] == ("", NOT_CLASSIFIED_LABEL, NOT_CLASSIFIED_COLOUR)
    assert len({colour for _, _, colour in got}) == len(got)
