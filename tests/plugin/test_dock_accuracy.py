"""The dock's Accuracy tab: a filtered layer says what it assessed, reference crop codes go through a
code table, the report's wide tables scroll instead of wrapping."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.qgis

PRED = ["winter_wheat", "winter_wheat", "corn", "corn", "meadow", "corn", "winter_wheat", "meadow"]
TRUTH = ["winter_wheat", "corn", "corn", "corn", "meadow", None, "winter_wheat", "winter_wheat"]
CONF = [0.9, 0.3, 0.8, 0.5, 0.95, 0.7, 0.4, 0.55]


@pytest.fixture
def rpg_layer(qgis_app, tmp_path):
    """Eight squares: a map class, a confidence, and the reference as French RPG crop codes."""
    import geopandas as gpd
    from qgis.core import QgsProject, QgsVectorLayer
    from shapely.geometry import box

    from thermocrop.core.classmap import ClassMap

    codes = {}
    for entry in ClassMap.load("france").entries:
        codes.setdefault(entry.cls, entry.code)
    frame = gpd.GeoDataFrame({"crop_pred": PRED, "crop_conf": CONF,
                              "CODE_CULTU": [codes[t] if t else None for t in TRUTH]},
                             geometry=[box(200 * i, 0, 200 * i + 100, 100) for i in range(len(PRED))],
                             crs="EPSG:32631")
    frame.to_file(tmp_path / "rpg.gpkg")
    layer = QgsVectorLayer(str(tmp_path / "rpg.gpkg"), "rpg", "ogr")
    QgsProject.instance().addMapLayer(layer)
    yield layer
    QgsProject.instance().removeAllMapLayers()


@pytest.fixture
def widget(qgis_app):
    from thermocrop.plugin.accuracy_widget import AccuracyWidget

    w = AccuracyWidget()
    yield w
    w.shutdown()
    w.deleteLater()


def _assess(widget):
    from qgis.core import QgsApplication

    widget.report = None
    assert widget.assess() is not None, widget.status.text()
    end = time.monotonic() + 60
    while widget.task is not None:
        QgsApplication.processEvents()
        time.sleep(0.01)
        assert time.monotonic() < end
    assert widget.report is not None, widget.status.text()
    return widget.report


def test_crop_codes_go_through_the_code_table(widget, rpg_layer):
    widget.set_layer(rpg_layer)
    assert widget.predicted_combo.currentField() == "crop_pred"
    assert widget.reference_combo.currentField() == "CODE_CULTU"
    assert widget.codes_combo.currentData() == "france"
    report = _assess(widget)
    pairs = [(p, t) for p, t in zip(PRED, TRUTH) if t is not None]
    assert report.sample.n == len(pairs) == 7
    assert report.sample.overall_accuracy == pytest.approx(sum(p == t for p, t in pairs) / len(pairs))
    assert set(report.classes) == {"winter_wheat", "corn", "meadow"}
    # Without the table the codes are classes of their own, which the map does not know.
    widget.codes_combo.setCurrentIndex(widget.codes_combo.findData(""))
    failures = []
    widget.failed.connect(failures.append)
    widget.report = None
    widget.assess()
    end = time.monotonic() + 60
    while widget.task is not None and time.monotonic() < end:
        from qgis.core import QgsApplication

        QgsApplication.processEvents()
        time.sleep(0.01)
    assert widget.report is None and len(failures) == 1 and "share no name" in failures[0]


def test_a_filtered_layer_says_which_features_were_assessed(widget, rpg_layer):
    rpg_layer.setSubsetString('"crop_conf" < 0.6')
    widget.set_layer(rpg_layer)
    report = _assess(widget)
    below = [(p, t) for p, t, c in zip(PRED, TRUTH, CONF) if c < 0.6 and t is not None]
    assert report.sample.n == len(below) == 4
    text = widget.status.text()
    assert "Only the 4 features the layer's filter shows were assessed" in text and '"crop_conf" < 0.6' in text
    assert '"crop_conf" < 0.6' in report.title
    rpg_layer.setSubsetString("")
    assert _assess(widget).sample.n == 7 and "filter" not in widget.status.text()


def test_the_report_scrolls_sideways_instead_of_wrapping(widget, rpg_layer):
    from qgis.PyQt.QtWidgets import QTextEdit

    assert widget.browser.lineWrapMode() == QTextEdit.FixedPixelWidth
    widget.resize(360, 600)  # a narrow dock
    widget.set_layer(rpg_layer)
    _assess(widget)
    widget.show()
    document = widget.browser.document()
    # Laid out wider than the dock: the matrix keeps its width and the browser scrolls sideways.
    assert document.size().width() >= widget.browser.lineWrapColumnOrWidth() > widget.browser.viewport().width()
    assert widget.browser.horizontalScrollBar().maximum() > 0
    # Class ids in the headers read as words, so narrow columns wrap between words.
    page = widget.browser.toPlainText()
    assert "winter wheat" in page
    widget.hide()


def test_headers_become_words_and_nothing_else_changes():
    from thermocrop.plugin.accuracy_widget import readable_headers

    page = '<tr><th class="name">winter_wheat</th><th>spring_barley</th><td>crop_pred_x</td></tr>'
    assert readable_headers(page) == ('<tr><th class="name">winter wheat</th><th>spring barley</th>'
                                      '<td>crop_pred_x</td></tr>')
