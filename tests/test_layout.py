"""The package layout rules: core and training never import QGIS or Qt; no sys.path edits."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("qgis", "PyQt5", "PyQt6", "PySide2", "PySide6", "sip")


def _python_files(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


@pytest.mark.parametrize("path", _python_files("core", "training"), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_and_training_do_not_import_qgis_or_qt(path):
    bad = [f"line {n}: {m}" for n, m in _imported_modules(path) if m.split(".")[0] in FORBIDDEN]
    assert not bad, f"{path.relative_to(ROOT)} imports QGIS/Qt: {bad}"


def test_guardrail_detects_a_qgis_import(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import numpy\nfrom qgis.core import QgsVectorLayer\n", encoding="utf-8")
    assert (2, "qgis.core") in _imported_modules(sample)


@pytest.mark.parametrize(
    "path", _python_files("core", "training", "plugin", "tests"), ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_sys_path_edits(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        target = node.func.value
        if (
            node.func.attr in ("insert", "append", "extend")
            and isinstance(target, ast.Attribute)
            and target.attr == "path"
            and isinstance(target.value, ast.Name)
            and target.value.id == "sys"
        ):
            pytest.fail(f"{path.relative_to(ROOT)} line {node.lineno} edits sys.path")


@pytest.mark.parametrize("path", _python_files("core", "training", "plugin"), ids=lambda p: str(p.relative_to(ROOT)))
def test_package_imports_itself_relatively(path):
    absolute = [f"line {n}: {m}" for n, m in _imported_modules(path) if m.split(".")[0] == "thermocrop"]
    assert not absolute, f"{path.relative_to(ROOT)} imports the package absolutely: {absolute}"


def test_top_level_layout():
    for name in ("metadata.txt", "__init__.py", "plugin", "core", "training", "resources", "tests", "README.md"):
        assert (ROOT / name).exists(), name


def test_package_init_imports_nothing_heavy():
    tree = ast.parse((ROOT / "__init__.py").read_text(encoding="utf-8"))
    top_level_imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not top_level_imports
