"""The package layout rules (``tests/layout_rules.py`` reads the map): dependencies point one way
(``cli``, ``plugin`` -> ``app`` -> ``training`` -> ``core``; ``synth`` -> ``core``), no import
cycles, no private names imported across modules, no module over 800 lines, no function over 12
parameters, no module name used in two packages, no QGIS or Qt where the code runs without QGIS,
the console entry point in ``thermocrop.cli``, relative imports inside the package and no
``sys.path`` edits.

Each rule is also tried on a small tree written here, to show that it catches what it forbids.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import layout_rules as rules
import pytest

ROOT = rules.ROOT


def _tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative path -> source) under ``root``, with the packages' ``__init__.py``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for folder in path.relative_to(root).parents:
            if str(folder) != ".":
                (root / folder / "__init__.py").touch()
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _python_files(*folders: str) -> list[Path]:
    return rules.python_files(ROOT, folders)


# -- dependency direction ----------------------------------------------------------------------


def test_packages_depend_in_one_direction():
    upward = rules.direction_violations(rules.read_map())
    assert not upward, [f"{i.source} -> {i.target} (line {i.line})" for i in upward]


def test_direction_rule_catches_core_importing_training_and_synth_importing_cli(tmp_path):
    _tree(tmp_path, {
        "core/reader.py": "def read():\n    from ..training import loop\n",
        "training/loop.py": "from ..core import reader\n",
        "synth/make.py": "from ..cli.main import main\n",
        "cli/main.py": "from ..synth import make\nfrom ..app import run\n",
        "app/run.py": "from ..training.loop import reader\n",
    })
    upward = {(i.source, i.target) for i in rules.direction_violations(rules.read_map(tmp_path))}
    assert upward == {("thermocrop.core.reader", "thermocrop.training.loop"),
                      ("thermocrop.synth.make", "thermocrop.cli.main")}


# -- cycles ----------------------------------------------------------------------------------


def test_no_import_cycles():
    loops = rules.import_cycles()
    assert not loops, [" <-> ".join(c) for c in loops]


def test_cycle_rule_catches_a_circle_closed_inside_a_function(tmp_path):
    _tree(tmp_path, {
        "core/a.py": "from .b import f\n",
        "core/b.py": "def f():\n    from .c import g\n    return g\n",
        "core/c.py": "from . import a\n",
        "core/d.py": "from .a import f\n",
    })
    assert rules.import_cycles(tmp_path) == [["thermocrop.core.a", "thermocrop.core.b", "thermocrop.core.c"]]


# -- private names ---------------------------------------------------------------------------


def test_no_private_names_imported_across_modules():
    private = rules.private_imports(rules.read_map())
    assert not private, [f"{i.source} <- {i.target} {i.names}" for i in private]


def test_private_rule_catches_a_private_name_and_a_private_module(tmp_path):
    _tree(tmp_path, {
        "core/a.py": "def _helper():\n    pass\n\n\ndef public():\n    pass\n",
        "core/_inner.py": "X = 1\n",
        "core/model/_local.py": "Y = 1\n",
        "core/model/user.py": "from ._local import Y\n",
        "training/b.py": "from ..core.a import _helper, public\nfrom ..core import _inner\n",
    })
    private = {(i.source, i.target) for i in rules.private_imports(rules.read_map(tmp_path))}
    # A private module used inside its own package is allowed.
    assert private == {("thermocrop.training.b", "thermocrop.core.a"),
                       ("thermocrop.training.b", "thermocrop.core._inner")}


# -- sizes -----------------------------------------------------------------------------------


def test_no_module_over_800_lines():
    assert not rules.long_modules(), rules.long_modules()


def test_size_rule_catches_a_long_module(tmp_path):
    _tree(tmp_path, {"core/short.py": "x = 1\n" * 800, "core/long.py": "x = 1\n" * 801})
    assert rules.long_modules(tmp_path) == {str(Path("core/long.py")): 801}


def test_no_function_over_12_parameters():
    assert not rules.wide_functions(), rules.wide_functions()


def test_parameter_rule_counts_keywords_and_skips_self(tmp_path):
    twelve = ", ".join(f"a{i}" for i in range(11))
    _tree(tmp_path, {"core/f.py": f"""
        def fits(self, {twelve}, *, k=1):
            pass


        class Reader:
            def wide(self, {twelve}, *, k=1, extra=2):
                pass
        """})
    assert rules.wide_functions(tmp_path) == {str(Path("core/f.py")) + ":Reader.wide": 13}


# -- names -----------------------------------------------------------------------------------


def test_no_module_name_in_two_packages():
    assert not rules.homonyms(), rules.homonyms()


def test_name_rule_catches_a_module_name_used_twice(tmp_path):
    _tree(tmp_path, {"core/runs/cluster.py": "", "training/cluster.py": "", "core/other.py": ""})
    found = rules.homonyms(tmp_path)
    assert list(found) == ["cluster"] and sorted(found["cluster"]) == [
        str(Path("core/runs/cluster.py")), str(Path("training/cluster.py"))]


def test_console_entry_point_is_in_the_cli_package():
    assert rules.console_entry_point() is None


@pytest.mark.parametrize(("script", "problem"), [
    ("thermocrop.training.cli:main", "outside thermocrop.cli"),
    ("thermocrop.cli.missing:main", "has no file"),
    ("thermocrop.cli.main:start", "is not defined"),
])
def test_entry_point_rule_catches_a_script_outside_cli_or_missing(tmp_path, script, problem):
    _tree(tmp_path, {"cli/main.py": "def main():\n    return 0\n", "training/cli.py": "def main():\n    pass\n"})
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\n\n[project.scripts]\nthermocrop = "{script}"\n')
    assert problem in rules.console_entry_point(tmp_path)


# -- QGIS and Qt -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", _python_files(*rules.QT_FREE_FOLDERS), ids=lambda p: str(p.relative_to(ROOT)))
def test_packages_without_qgis_do_not_import_qgis_or_qt(path):
    bad = [f"line {n}: {m}" for n, m in rules.imported_modules(path) if m.split(".")[0] in rules.QT_MODULES]
    assert not bad, f"{path.relative_to(ROOT)} imports QGIS/Qt: {bad}"


def test_guardrail_detects_a_qgis_import(tmp_path):
    _tree(tmp_path, {
        "core/a.py": "import numpy\nfrom qgis.core import QgsVectorLayer\n",
        "app/b.py": "def f():\n    import importlib\n    return importlib.import_module('PyQt5.QtCore')\n",
        "plugin/c.py": "from qgis.core import QgsProject\n",
    })
    assert rules.qt_imports(tmp_path) == {str(Path("core/a.py")): ["line 2: qgis.core"],
                                          str(Path("app/b.py")): ["line 3: PyQt5.QtCore"]}


# -- imports ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", _python_files(*rules.SOURCE_FOLDERS, "tests"), ids=lambda p: str(p.relative_to(ROOT))
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


@pytest.mark.parametrize("path", _python_files(*rules.SOURCE_FOLDERS), ids=lambda p: str(p.relative_to(ROOT)))
def test_package_imports_itself_relatively(path):
    absolute = [f"line {n}: {m}" for n, m in rules.imported_modules(path) if m.split(".")[0] == "thermocrop"]
    assert not absolute, f"{path.relative_to(ROOT)} imports the package absolutely: {absolute}"


def test_top_level_layout():
    for name in ("metadata.txt", "__init__.py", "plugin", "core", "training", "cli", "synth", "resources", "tests",
                 "README.md"):
        assert (ROOT / name).exists(), name


def test_package_init_imports_only_the_standard_library():
    """QGIS imports the package to load the plugin: nothing heavy may come with it."""
    tree = ast.parse((ROOT / "__init__.py").read_text(encoding="utf-8"))
    top_level = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    modules = [a.name for n in top_level if isinstance(n, ast.Import) for a in n.names]
    modules += [n.module for n in top_level if isinstance(n, ast.ImportFrom) and n.module]
    assert all(not isinstance(n, ast.ImportFrom) or n.level == 0 for n in top_level)
    assert [m for m in modules if m.split(".")[0] not in sys.stdlib_module_names] == []
