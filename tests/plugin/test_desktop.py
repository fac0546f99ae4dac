"""The dock in the real QGIS desktop under Xvfb, at the screen sizes analysts work at: the status
(buttons, progress, message, install button, class counts) is on screen without scrolling, and a
failure reaches the message bar and the message log."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.qgis, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

CODE = r'''
import json, os, time, traceback
from qgis.core import Qgis, QgsApplication
from qgis.PyQt.QtCore import QPoint, QTimer
from qgis.PyQt.QtWidgets import QApplication, QScrollArea
from qgis.utils import iface, plugins

OUT = os.environ["THERMOCROP_CHECK"]


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
def test_status_is_visible_without_scrolling_in_qgis(size, tmp_path):
    if shutil.which("xvfb-run") is None or shutil.which("qgis") is None:
        pytest.fail("the QGIS desktop and xvfb are missing; make setup installs them")
    width, height = size.split("x")
    ini = tmp_path / "profiles" / "profiles" / "default" / "QGIS" / "QGIS3.ini"
    ini.parent.mkdir(parents=True)
    ini.write_text("[PythonPlugins]\nthermocrop=true\n\n[qgis]\nshowTips=false\ncheckVersion=false\n")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "thermocrop").symlink_to(ROOT)
    code = tmp_path / "check.py"
    code.write_text(CODE)
    out = tmp_path / "report.json"
    site = next((ROOT / ".venv" / "lib").glob("python3*/site-packages"), None)
    env = dict(os.environ, THERMOCROP_CHECK=str(out), QGIS_PLUGINPATH=str(tmp_path / "plugins"),
               QT_QPA_PLATFORM="xcb", PROJ_DATA="/usr/share/proj",
               XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp/runtime-thermocrop"))
    if site is not None:
        env["PYTHONPATH"] = str(site)
    Path(env["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, exist_ok=True)
    subprocess.run(["xvfb-run", "-a", "-s", f"-screen 0 {width}x{height}x24", "qgis", "--nologo",
                    "--noversioncheck", "--profiles-path", str(tmp_path / "profiles"), "--code", str(code)],
                   env=env, timeout=240, capture_output=True)
    assert out.is_file(), "QGIS did not run the check"
    report = json.loads(out.read_text())
    assert "error" not in report, report.get("error")
    for name, state in report["shown"].items():
        assert state == {"visible": True, "scrolled": False, "inside": True, "on_screen": True}, (size, name, state)
    assert report["counts_rows_visible"], size
    assert report["bar_items"] == 1 and report["bar_text"].startswith("Classification failed")
    assert any(m.startswith("Classification failed") for m in report["logged"])
