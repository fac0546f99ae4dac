"""QGIS features to GeoDataFrames: attribute values and types survive the trip to a new file."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.qgis


def test_attributes_keep_their_types_and_nulls_in_a_written_file(qgis_app, tmp_path):
    from qgis.core import QgsFeature, QgsGeometry, QgsVectorLayer
    from qgis.PyQt.QtCore import QDate

    from thermocrop.core.vector import write_with_fields
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
