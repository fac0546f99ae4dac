"""The dock in the real QGIS desktop under Xvfb, at the screen sizes analysts work at: the status
(buttons, progress, message, install button, class counts) is on screen without scrolling, and a
failure reaches the message bar and the message log. The plugin is the zip installed into a
profile with its packages (tests/plugin/installed_qgis.py), QGIS started without the test
environment's path."""

from __future__ import annotations

import pytest
from installed_qgis import analyst_environment, run_qgis

pytestmark = [pytest.mark.qgis, pytest.mark.slow]

CODE = r'''
import json, os, time, traceback
from qgis.core import Qgis, QgsApplication
from qgis.PyQt.QtCore import QPoint, QTimer
from qgis.PyQt.QtWidgets import QApplication, QScrollArea
from qgis.utils import iface, plugins

OUT = os.environ["THERMOCROP_REPORT"]


def settle(seconds=0.8):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QgsApplication.processEvents()
        time.sleep(0.02)


def check():
    report = {}
    try:
        window = iface.mainWindow()
        screen = QApplication.primaryScreen().availableGeometry()
        window.setGeometry(screen)
        plugin = plugins["thermocrop"]
        plugin.action.setChecked(True)
        dock = plugin.dock
        logged = []
        QgsApplication.messageLog().messageReceived.connect(
            lambda message, tag, level: logged.append((tag, message)))
        bar_before = len(iface.messageBar().items())
        # A finished run's status: many classes and statuses, a long failure text, the installer.
        counts = {c: 10 + i for i, c in enumerate(("corn", "horsebeans", "meadow", "spring_barley", "unknown",
                                                   "winter_barley", "winter_rapeseed", "winter_triticale",
                                                   "winter_wheat", "(too_small)"))}
        dock.show_counts(counts, {})
        dock.last_result = object()
        dock._tab_changed(0)
        dock.install_button.setVisible(True)
        dock.say("Classification failed: the weather file does not cover the season; its record runs "
                 "2015-01-01 to 2015-12-30 and the scenes need 2017-01-01 to 2017-12-29. Use a weather "
                 "file covering the whole season.", Qgis.Critical, bar=True)
        settle()
        report["bar_items"] = len(iface.messageBar().items()) - bar_before
        report["bar_text"] = iface.messageBar().currentItem().text() if iface.messageBar().currentItem() else ""
        report["logged"] = [m for t, m in logged if t == "ThermoCrop"]
        report["dock"] = [dock.width(), dock.height()]
        shown = {}
        for name in ("run_button", "cancel_button", "progress", "message", "install_button", "counts",
                     "colour_by", "low_confidence"):
            widget = getattr(dock, name)
            top = widget.mapTo(dock, QPoint(0, 0))
            parent, scrolled = widget.parentWidget(), False
            while parent is not None and parent is not dock:
                scrolled = scrolled or isinstance(parent, QScrollArea)
                parent = parent.parentWidget()
            shown[name] = {"visible": widget.isVisible(), "scrolled": scrolled,
                           "inside": top.y() >= 0 and top.y() + widget.height() <= dock.height(),
                           "on_screen": widget.mapToGlobal(QPoint(0, widget.height())).y() <= screen.bottom() + 1}
        report["shown"] = shown
        rows = [dock.counts.visualItemRect(dock.counts.topLevelItem(i)) for i in range(len(counts))]
        report["counts_rows_visible"] = all(r.bottom() <= dock.counts.viewport().height() for r in rows)
    except Exception:
        report["error"] = traceback.format_exc()
    with open(OUT, "w") as f:
        json.dump(report, f)
    # QGIS 3.22 may hang or crash on a scripted exit; the report is written, so leave at once.
    os._exit(0)


QTimer.singleShot(1500, check)
'''


@pytest.mark.parametrize("size", ["1366x768", "1280x800"])
def test_status_is_visible_without_scrolling_in_qgis(size, installed_profile, tmp_path):
    report = run_qgis(installed_profile.profiles, CODE, analyst_environment(), tmp_path, timeout=240, size=size)
    for name, state in report["shown"].items():
        # The results (class counts, their colouring and filter) head the Classify page, which
        # scrolls as a whole so that the form keeps its height after a run: they are on screen at
        # the top of the page, inside its scroll area.
        scrolled = name in ("counts", "colour_by", "low_confidence")
        assert state == {"visible": True, "scrolled": scrolled, "inside": True, "on_screen": True}, (size, name, state)
    assert report["counts_rows_visible"], size
    assert report["bar_items"] == 1 and report["bar_text"].startswith("Classification failed")
    assert any(m.startswith("Classification failed") for m in report["logged"])
