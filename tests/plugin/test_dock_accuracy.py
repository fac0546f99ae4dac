"""The dock's Accuracy tab: a filtered layer says what it assessed, reference crop codes go through a
code table, the matrices' columns are numbered so that they fit the dock, and a table wider than the
dock scrolls instead of wrapping."""

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


def test_codes_the_table_does_not_map_are_said(widget, rpg_layer):
    """They count as the reference class 'unknown', as in the other doors; the Accuracy tab said
    nothing of them."""
    idx = rpg_layer.fields().indexOf("CODE_CULTU")
    rpg_layer.startEditing()
    for feature in list(rpg_layer.getFeatures())[:2]:
        rpg_layer.changeAttributeValue(feature.id(), idx, "XXX")
    assert rpg_layer.commitChanges()
    widget.set_layer(rpg_layer)
    report = _assess(widget)
    said = [w for w in report.warnings if "does not map" in w]
    assert len(said) == 1 and "2 reference units have 1 codes" in said[0] and "XXX (2)" in said[0]
    assert "XXX (2)" in widget.status.text()


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


def _matrix_headers(browser) -> list:
    """The header row of the report's first confusion matrix."""
    from qgis.PyQt.QtGui import QTextTable

    for frame in browser.document().rootFrame().childFrames():
        if isinstance(frame, QTextTable) and frame.cellAt(0, 0).firstCursorPosition().block().text().startswith("map"):
            return [frame.cellAt(0, j).firstCursorPosition().block().text() for j in range(frame.columns())]
    return []


def test_the_report_scrolls_sideways_only_when_a_table_is_wider_than_the_dock(widget, rpg_layer):
    from qgis.PyQt.QtTest import QTest
    from qgis.PyQt.QtWidgets import QTextEdit

    assert widget.browser.lineWrapMode() == QTextEdit.FixedPixelWidth
    widget.resize(360, 600)  # a narrow dock
    widget.set_layer(rpg_layer)
    _assess(widget)
    widget.show()
    QTest.qWait(50)
    # Laid out as wide as the browser, or wider when a table needs it (then it scrolls sideways).
    browser = widget.browser
    assert browser.document().size().width() <= browser.viewport().width() or \
        browser.horizontalScrollBar().maximum() > 0
    # Class ids in the headers read as words, so narrow columns wrap between words.
    assert "winter wheat" in widget.browser.toPlainText()
    # Too narrow for the matrix: laid out as wide as the tables need and scrolled sideways.
    browser.setFixedWidth(150)
    QTest.qWait(50)
    assert browser.lineWrapColumnOrWidth() > browser.viewport().width()
    assert browser.document().size().width() <= browser.lineWrapColumnOrWidth() + 8
    assert browser.horizontalScrollBar().maximum() > 0
    widget.hide()


def test_the_matrices_of_all_classes_fit_the_default_dock_width(qgis_app, tmp_path):
    """Every ThermoCrop class mapped and referenced: the matrices' columns are numbered, their
    rows say number and name, and they fit the dock at its width on a 1366x768 screen."""
    import geopandas as gpd
    import numpy as np
    from qgis.core import QgsProject, QgsVectorLayer
    from qgis.PyQt.QtTest import QTest
    from shapely.geometry import box

    from thermocrop.core.crops import CROP_CLASSES
    from thermocrop.plugin.dock import ThermoCropDock

    rng = np.random.default_rng(0)
    truth = rng.choice(CROP_CLASSES, 400)
    mapped = np.where(rng.random(400) < 0.7, truth, rng.choice(CROP_CLASSES, 400))
    gpd.GeoDataFrame({"crop_pred": mapped, "crop": truth},
                     geometry=[box(200 * i, 0, 200 * i + 100 + i, 100) for i in range(400)],
                     crs="EPSG:32631").to_file(tmp_path / "all.gpkg")
    layer = QgsVectorLayer(str(tmp_path / "all.gpkg"), "all", "ogr")
    QgsProject.instance().addMapLayer(layer)
    dock = ThermoCropDock(restore=False)
    try:
        dock.resize(400, 700)  # what the dock gets beside the map at 1366x768
        dock.show()
        widget = dock.accuracy_widget
        dock.tabs.setCurrentIndex(dock.tabs.indexOf(widget.parentWidget().parentWidget()))
        widget.set_layer(layer, "crop_pred", "crop")
        _assess(widget)
        QTest.qWait(50)
        classes = widget.report.classes
        assert len(classes) == len(CROP_CLASSES)
        plain = widget.browser.toPlainText()
        for k, name in enumerate(classes, 1):  # the rows are the legend of the numbered columns
            assert f"{k} {name.replace('_', ' ')}" in plain
        matrix = _matrix_headers(widget.browser)
        assert matrix == ["map \\ reference", *map(str, range(1, len(classes) + 1)), "total"]
        # Nothing wider than the dock: the report is laid out at the browser's width, unscrolled.
        browser = widget.browser
        assert browser.lineWrapColumnOrWidth() < browser.viewport().width()
        assert browser.document().size().width() <= browser.viewport().width(), (
            browser.lineWrapColumnOrWidth(), browser.viewport().width(), browser.document().size().width())
        assert browser.horizontalScrollBar().maximum() == 0
    finally:
        dock.shutdown()
        dock.deleteLater()
        QgsProject.instance().removeAllMapLayers()


def test_headers_become_words_and_nothing_else_changes():
    from thermocrop.plugin.accuracy_widget import readable_headers

    page = '<tr><th class="name">winter_wheat</th><th>spring_barley</th><td>crop_pred_x</td></tr>'
    assert readable_headers(page) == ('<tr><th class="name">winter wheat</th><th>spring barley</th>'
                                      '<td>crop_pred_x</td></tr>')
