"""Translations: every widget text goes through tr(), the .ts template is current, and a .qm built
with lrelease is loaded for the user's language and changes what the dock and Toolbox show."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.qgis

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "i18n" / "thermocrop.ts"

# Calls whose string arguments a user reads.
_SHOWN = {"QLabel", "QPushButton", "QCheckBox", "QRadioButton", "QGroupBox", "QAction", "setText",
          "setToolTip", "setPlaceholderText", "addTab", "addRow", "setHeaderLabels", "addItems", "say",
          "pushMessage", "setWindowTitle", "QgsProcessingException", "setTitle",
          # Runtime messages of the Processing algorithms and the installer.
          "pushInfo", "pushWarning", "reportError", "setProgressText", "DependencyError"}


def _literal_texts(node):
    """Plain string literals (with letters) among a call's arguments, lists included."""
    for arg in node.args:
        items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, str) and re.search("[A-Za-z]", item.value):
                yield item.value
            if isinstance(item, ast.JoinedStr):
                # Only the literal parts count, less markup: "<b>{name}</b>: {tr('x')}" is fine.
                words = re.sub(r"<[^>]*>", "", "".join(v.value for v in item.values if isinstance(v, ast.Constant)))
                if re.search("[A-Za-z]", words):
                    yield ast.unparse(item)


def _checked_files() -> list:
    names = ("qgis_plugin.py", "widgets.py", "task.py", "layers.py", "dependencies.py", "dependency_install.py",
             "python_interpreter.py", "catalog.py", "catalog_widget.py")
    return [ROOT / "plugin" / name for name in names] + sorted((ROOT / "plugin" / "dock").glob("*.py")) \
        + sorted((ROOT / "plugin" / "algorithms").glob("*.py"))


def test_widget_texts_and_runtime_messages_of_the_plugin_go_through_tr():
    untranslated = []
    for path in _checked_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and len(node.value.elts) == 2 \
                    and isinstance(node.value.elts[0], ast.Constant) and node.value.elts[0].value is False:
                # checkParameterValues / canExecute answers: (False, message)
                node = ast.Call(func=ast.Name(id="say"), args=[node.value.elts[1]], keywords=[], lineno=node.lineno)
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in _SHOWN:
                untranslated += [f"{path.relative_to(ROOT)}:{node.lineno} {text!r}" for text in _literal_texts(node)
                                 if text not in ("ThermoCrop",)]
    assert untranslated == []


def _sources(ts: Path) -> set:
    return set(re.findall(r"<source>(.*?)</source>", ts.read_text(encoding="utf-8"), re.S))


def test_the_template_holds_every_current_text(qgis_app, tmp_path):
    if shutil.which("pylupdate5") is None:
        pytest.fail("pylupdate5 is missing; make setup installs pyqt5-dev-tools")
    strings = tmp_path / "algorithm_strings.py"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "i18n_strings.py"), str(strings)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    fresh = tmp_path / "fresh.ts"
    files = sorted(str(p) for p in (ROOT / "plugin").rglob("*.py")) + [str(strings)]
    subprocess.run(["pylupdate5", "-noobsolete", *files, "-ts", str(fresh)], check=True, capture_output=True)
    current = _sources(fresh)
    assert "Install missing packages" in current and "Classify parcels" in current
    assert current == _sources(TEMPLATE), "run make translations to update i18n/thermocrop.ts"
    assert "<name>ThermoCrop</name>" in TEMPLATE.read_text() and "@default" not in TEMPLATE.read_text()


def _translate(template: Path, out: Path, translations: dict) -> None:
    text = template.read_text(encoding="utf-8")
    for source, target in translations.items():
        text = text.replace(f"<source>{source}</source>\n        <translation type=\"unfinished\"></translation>",
                            f"<source>{source}</source>\n        <translation>{target}</translation>")
    out.write_text(text.replace('<TS version="2.1">', '<TS version="2.1" language="de_DE">'), encoding="utf-8")


def test_a_translation_is_loaded_for_the_user_language(qgis_app, provider, tmp_path):
    if shutil.which("lrelease") is None:
        pytest.fail("lrelease is missing; make setup installs qttools5-dev-tools")
    from qgis.core import QgsSettings
    from qgis.PyQt.QtCore import QCoreApplication

    from thermocrop.plugin.dock import ThermoCropDock
    from thermocrop.plugin.i18n import install_translator, tr

    ts = tmp_path / "thermocrop_de.ts"
    _translate(TEMPLATE, ts, {"Classify": "Klassifizieren", "Install missing packages": "Fehlende Pakete installieren",
                              "Classify parcels": "Parzellen klassifizieren"})
    subprocess.run(["lrelease", "-silent", str(ts)], check=True, capture_output=True)
    assert (tmp_path / "thermocrop_de.qm").is_file()

    settings = QgsSettings()
    before = settings.value("locale/userLocale", None)
    settings.setValue("locale/userLocale", "de_DE")  # QGIS's own setting, as the Options dialog sets it
    translator = install_translator(folder=tmp_path)
    try:
        assert translator is not None
        assert tr("Install missing packages") == "Fehlende Pakete installieren"
        dock = ThermoCropDock(restore=False)
        assert dock.run_button.text() == "Klassifizieren"
        assert dock.install_button.text() == "Fehlende Pakete installieren"
        assert provider.algorithm("classifyparcels").displayName() == "Parzellen klassifizieren"
        dock.shutdown()
        # No file for a language: nothing installed, English stays.
        assert install_translator("xx_YY", folder=tmp_path) is None
    finally:
        QCoreApplication.removeTranslator(translator)
        if before is None:
            settings.remove("locale/userLocale")
        else:
            settings.setValue("locale/userLocale", before)
    assert tr("Install missing packages") == "Install missing packages"
