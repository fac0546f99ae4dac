"""QGIS features to GeoDataFrames: attribute values and types survive the trip to a new file."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.qgis


def test_attributes_keep_their_types_and_nulls_in_a_written_file(qgis_app, tmp_path):
    from qgis.core import QgsFeature, QgsGeometry, QgsVectorLayer
    from qgis.PyQt.QtCore import QDate

    from thermocrop.core.io.vector import write_with_fields
    from thermocrop.plugin.layers import features_to_frame

    layer = QgsVectorLayer("Polygon?crs=EPSG:32631&field=name:string&field=n:integer&field=x:double"
                           "&field=d:date&field=b:boolean", "x", "memory")
    features = []
    for i in range(3):
        f = QgsFeature(layer.fields())
        f.setGeometry(QgsGeometry.fromWkt(f"POLYGON(({i} 0, {i + 1} 0, {i + 1} 1, {i} 0))"))
        f.setAttributes([None if i == 2 else f"p{i}", None if i == 1 else 10 * i, 0.5 * i,
                         None if i == 0 else QDate(2017, 1, i + 1), i == 1])
        features.append(f)
    layer.dataProvider().addFeatures(features)
    frame, fids = features_to_frame(layer.getFeatures(), layer.crs(), attributes=["name", "n", "x", "d", "b"])
    assert fids == [f.id() for f in layer.getFeatures()]
    out = write_with_fields(frame, {}, tmp_path / "out.gpkg")
    back = QgsVectorLayer(str(out), "back", "ogr")
    types = {f.name(): f.typeName() for f in back.fields()}
    assert types["n"].startswith("Integer") and types["x"] == "Real" and types["b"] == "Boolean"
    rows = [f.attributes()[1:] for f in back.getFeatures()]
    assert [r[0] for r in rows][:2] == ["p0", "p1"] and str(rows[2][0]) == "NULL"
    assert rows[0][1] == 0 and str(rows[1][1]) == "NULL" and rows[2][1] == 20
    assert [r[2] for r in rows] == [0.0, 0.5, 1.0] and [r[4] for r in rows] == [False, True, False]
    assert str(rows[0][3]) == "NULL" and rows[1][3].date() == QDate(2017, 1, 2)


def _luminance(hex_colour: str) -> float:
    """Relative luminance (WCAG 2.x) of ``#rrggbb``."""
    def channel(c):
        c /= 255.0
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def _deuteranope(hex_colour: str) -> tuple:
    """``#rrggbb`` as a deuteranope sees it (Machado et al. 2009, severity 1, on linear RGB)."""
    import numpy as np

    m = np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                  [-0.011820, 0.042940, 0.968881]])
    rgb = np.array([int(hex_colour[i:i + 2], 16) / 255.0 for i in (1, 3, 5)])
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return tuple(np.clip(m @ linear, 0, 1))


def test_the_confidence_ramp_reads_without_red_and_green(qgis_app):
    import numpy as np

    from thermocrop.core.crops import CLASS_COLOURS
    from thermocrop.plugin.styles import CONFIDENCE_BREAKS, confidence_renderer

    colours = [colour for _, _, colour in CONFIDENCE_BREAKS]
    # Brighter with confidence: the order reads from lightness alone.
    luminance = [_luminance(c) for c in colours]
    assert all(a < b for a, b in zip(luminance, luminance[1:])), luminance
    # Still distinct for a deuteranope: neighbouring steps differ clearly after simulation.
    seen = [np.array(_deuteranope(c)) for c in colours]
    assert min(np.abs(a - b).max() for a, b in zip(seen, seen[1:])) > 0.08
    # No step is a class colour (the old top step was meadow's green).
    assert not {c.lower() for c in colours} & {c.lower() for c in CLASS_COLOURS.values()}
    renderer = confidence_renderer("crop_conf")
    drawn = [rule.symbol().color().name() for rule in renderer.rootRule().children()[:len(colours)]]
    assert drawn == [c.lower() for c in colours]


def test_legends_name_classes_in_words(qgis_app):
    from thermocrop.plugin.styles import NOT_CLASSIFIED_LABEL, class_label, class_renderer

    assert class_label("winter_wheat") == "Winter wheat"
    assert class_label("unknown") == "Unknown" and class_label("corn") == "Corn"
    renderer = class_renderer("crop_pred", ["winter_wheat", "spring_barley", "unknown"])
    assert [(c.value(), c.label()) for c in renderer.categories()] == [
        ("winter_wheat", "Winter wheat"), ("spring_barley", "Spring barley"), ("unknown", "Unknown"),
        ("", NOT_CLASSIFIED_LABEL)]


def test_block_field_is_copied_for_training(qgis_app):
    from qgis.core import QgsFeature, QgsGeometry, QgsVectorLayer

    from thermocrop.plugin.layers import features_to_frame

    layer = QgsVectorLayer("Polygon?crs=EPSG:32631&field=crop:string&field=block:integer", "x", "memory")
    features = []
    for i, (crop, block) in enumerate((("corn", 4), ("meadow", 7), (None, 4))):
        f = QgsFeature(layer.fields())
        f.setGeometry(QgsGeometry.fromWkt(f"POLYGON(({i} 0, {i + 1} 0, {i + 1} 1, {i} 0))"))
        f.setAttributes([crop, block])
        features.append(f)
    layer.dataProvider().addFeatures(features)
    frame, _ = features_to_frame(layer.getFeatures(), layer.crs(), label_field="crop", block_field="block")
    assert list(frame["block"]) == [4, 7, 4] and list(frame["crop"]) == ["corn", "meadow", None]
    assert list(frame["parcel_id"]) == [str(f.id()) for f in layer.getFeatures()]
