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


def _dialogs_answered():
    """A timer that rejects any modal dialog QGIS opens (nobody answers one in a test) and the list
    of the dialogs' texts it met; a run that asked a question then fails instead of waiting."""
    from qgis.PyQt.QtCore import QTimer
    from qgis.PyQt.QtWidgets import QApplication

    met: list = []

    def reject_modal():
        dialog = QApplication.activeModalWidget()
        if dialog is not None:
            met.append(getattr(dialog, "text", lambda: type(dialog).__name__)())
            dialog.reject()

    timer = QTimer()
    timer.timeout.connect(reject_modal)
    timer.start(200)
    return timer, met


def _stored_styles(path):
    import sqlite3

    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT f_table_name, styleName, useAsDefault, styleQML FROM layer_styles "
                          "ORDER BY id").fetchall()


@pytest.mark.qgis
def test_saving_the_style_again_replaces_it_without_a_question(qgis_app, tmp_path):
    import geopandas as gpd
    from qgis.core import QgsVectorLayer
    from shapely.geometry import box

    from thermocrop.plugin.styles import STYLE_NAME, apply_class_style, save_style_beside

    path = tmp_path / "out.gpkg"
    frame = gpd.GeoDataFrame({"crop_pred": ["corn", "meadow"]}, geometry=[box(0, 0, 1, 1), box(1, 0, 2, 1)],
                             crs="EPSG:32631")
    frame.to_file(path, layer="out", driver="GPKG")
    frame.to_file(path, layer="other", driver="GPKG")
    other = QgsVectorLayer(f"{path}|layername=other", "other", "ogr")
    assert other.saveStyleToDatabase(STYLE_NAME, "another layer's", False, "") == ""
    del other

    timer, met = _dialogs_answered()
    # Three runs, each with other classes: the stored style must be the last one's.
    for classes in (["corn", "meadow"], ["corn", "meadow", "winter_wheat"], ["horsebeans", "meadow"]):
        layer = QgsVectorLayer(f"{path}|layername=out", "out", "ogr")
        apply_class_style(layer, "crop_pred", classes)
        assert save_style_beside(layer, layer.source()) == tmp_path / "out.qml"
        del layer
        assert met == []
    timer.stop()

    styles = _stored_styles(path)
    mine = [row for row in styles if row[0] == "out"]
    assert [(table, name, default) for table, name, default, _ in mine] == [("out", STYLE_NAME, 1)]
    assert 'value="horsebeans"' in mine[0][3] and 'value="winter_wheat"' not in mine[0][3]
    assert [(table, name) for table, name, _, _ in styles if table == "other"] == [("other", STYLE_NAME)]
    reopened = QgsVectorLayer(f"{path}|layername=out", "out", "ogr")
    reopened.loadDefaultStyle()
    assert [c.value() for c in reopened.renderer().categories()] == ["horsebeans", "meadow", ""]
