"""The project's module map read from its source: imports between its own modules (also those made
inside functions), cycles, the direction of dependencies between packages, private names imported
across modules, QGIS or Qt imports where none belong, module sizes, parameter counts, module names
used twice and the console entry point.

Every function takes the root folder of a source tree (the repository root by default), so the
rules can be tried on a small tree a test writes. ``tests/test_layout.py`` keeps the rules;
``python tests/layout_rules.py`` prints the numbers.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "thermocrop"
SOURCE_FOLDERS = ("app", "cli", "core", "plugin", "synth", "training")

ALLOWED_DEPENDENCIES = {
    "core": {"core"},
    "training": {"training", "core"},
    "app": {"app", "training", "core"},
    "synth": {"synth", "core"},
    "cli": {"cli", "app", "training", "core", "synth"},
    "plugin": {"plugin", "app", "training", "core"},
}
"""The packages each package may import: ``cli`` and ``plugin`` -> ``app`` -> ``training`` ->
``core``; ``synth`` -> ``core``; the command line may also run the synthetic generator."""

QT_FREE_FOLDERS = ("core", "training", "app", "synth", "cli")
"""Packages that run without QGIS: they import neither QGIS nor Qt."""

QT_MODULES = ("qgis", "PyQt5", "PyQt6", "PySide2", "PySide6", "sip")

MAX_MODULE_LINES = 800
MAX_PARAMETERS = 12
ENTRY_PACKAGE = f"{PACKAGE}.cli"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module of the project, dotted
    names: tuple[str, ...]  # names taken from it ("" for the module itself)
    line: int
    in_function: bool


@dataclass
class ModuleMap:
    files: dict[str, Path] = field(default_factory=dict)  # dotted module -> file
    imports: list[Import] = field(default_factory=list)

    def edges(self) -> dict[str, set[str]]:
        graph: dict[str, set[str]] = {m: set() for m in self.files}
        for imp in self.imports:
            if imp.target != imp.source:
                graph[imp.source].add(imp.target)
        return graph


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PACKAGE, *parts])


def python_files(root: Path = ROOT, folders: Sequence[str] = SOURCE_FOLDERS) -> list[Path]:
    return sorted(p for f in folders if (root / f).is_dir() for p in (root / f).rglob("*.py"))


def _imports_in_functions(tree: ast.AST) -> set[int]:
    """Ids of the import nodes that sit inside a function body."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    inside.add(id(sub))
    return inside


def read_map(root: Path = ROOT, folders: Sequence[str] = SOURCE_FOLDERS) -> ModuleMap:
    """Every module under ``folders`` of ``root`` and every import between them."""
    found = ModuleMap()
    paths = python_files(root, folders)
    for path in paths:
        found.files[module_name(path, root)] = path
    known = set(found.files) | {PACKAGE}
    for path in paths:
        source = module_name(path, root)
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        inside = _imports_in_functions(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = source.split(".")
                    base = base if is_package else base[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                elif node.module and node.module.split(".")[0] == PACKAGE:
                    module = node.module
                else:
                    continue
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    if sub in known:
                        found.imports.append(Import(source, sub, ("",), node.lineno, id(node) in inside))
                    elif module in known:
                        found.imports.append(Import(source, module, (alias.name,), node.lineno, id(node) in inside))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == PACKAGE and alias.name in known:
                        found.imports.append(Import(source, alias.name, ("",), node.lineno, id(node) in inside))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    """The import cycles of the tree at ``root`` (imports inside functions count)."""
    return cycles(read_map(root).edges())


def private_imports(found: ModuleMap) -> list[Import]:
    """Names starting with an underscore taken from another module (a private module counts too)."""
    bad = []
    for imp in found.imports:
        private_name = any(n.startswith("_") and not n.startswith("__") for n in imp.names if n)
        private_module = imp.target.rsplit(".", 1)[-1].startswith("_") and not imp.target.endswith("__init__")
        if private_name or (private_module and imp.target.rsplit(".", 1)[0] != imp.source.rsplit(".", 1)[0]):
            bad.append(imp)
    return bad


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def direction_violations(found: ModuleMap) -> list[Import]:
    """Imports from a package into one it may not depend on (:data:`ALLOWED_DEPENDENCIES`)."""
    bad = []
    for imp in found.imports:
        source, target = package_of(imp.source), package_of(imp.target)
        if source in ALLOWED_DEPENDENCIES and target not in ALLOWED_DEPENDENCIES[source]:
            bad.append(imp)
    return bad


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every absolute import in ``path``, ``import_module("...")`` and
    ``__import__("...")`` calls included."""
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


def qt_imports(root: Path = ROOT, folders: Sequence[str] = QT_FREE_FOLDERS) -> dict[str, list[str]]:
    """Files under ``folders`` that import QGIS or Qt: file -> ``line N: module``."""
    bad = {}
    for path in python_files(root, folders):
        lines = [f"line {n}: {m}" for n, m in imported_modules(path) if m.split(".")[0] in QT_MODULES]
        if lines:
            bad[str(path.relative_to(root))] = lines
    return bad


def long_modules(root: Path = ROOT, limit: int = MAX_MODULE_LINES,
                 folders: Sequence[str] = SOURCE_FOLDERS) -> dict[str, int]:
    sizes = {}
    for path in python_files(root, folders):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            sizes[str(path.relative_to(root))] = lines
    return sizes


def parameter_counts(root: Path = ROOT, folders: Sequence[str] = SOURCE_FOLDERS) -> dict[str, int]:
    """Parameters of every function and method (self and cls not counted), keyed file:qualname."""
    counts = {}
    for path in python_files(root, folders):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = str(path.relative_to(root))

        def visit(node, prefix, name=name):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    a = child.args
                    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
                    names = [n for n in names if n not in ("self", "cls")]
                    counts[f"{name}:{prefix}{child.name}"] = len(names)
                    visit(child, f"{prefix}{child.name}.")
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")

        visit(tree, "")
    return counts


def wide_functions(root: Path = ROOT, limit: int = MAX_PARAMETERS) -> dict[str, int]:
    """Functions with more than ``limit`` parameters: file:qualname -> count."""
    return {k: v for k, v in parameter_counts(root).items() if v > limit}


def homonyms(root: Path = ROOT, folders: Sequence[str] = SOURCE_FOLDERS) -> dict[str, list[str]]:
    """Module names (``__init__`` aside) found in more than one package: name -> files."""
    seen: dict[str, list[str]] = {}
    for path in python_files(root, folders):
        if path.stem != "__init__":
            seen.setdefault(path.stem, []).append(str(path.relative_to(root)))
    return {name: files for name, files in seen.items() if len(files) > 1}


def console_entry_point(root: Path = ROOT) -> Optional[str]:
    """What is wrong with the ``thermocrop`` console script of ``root/pyproject.toml``, or None:
    it must name a function of a module of the ``thermocrop.cli`` package that exists."""
    scripts = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {}).get(
        "scripts", {})
    target = scripts.get(PACKAGE)
    if not target:
        return f"pyproject.toml declares no [project.scripts] {PACKAGE}"
    module, _, function = target.partition(":")
    if module != ENTRY_PACKAGE and not module.startswith(ENTRY_PACKAGE + "."):
        return f"the console script {target} is outside {ENTRY_PACKAGE}"
    path = root.joinpath(*module.split(".")[1:]).with_suffix(".py")
    if not path.is_file():
        return f"the console script's module {module} has no file {path.relative_to(root)}"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if not re.fullmatch(r"[A-Za-z_]\w*", function) or function not in defined:
        return f"the console script's function {function!r} is not defined in {path.relative_to(root)}"
    return None


def report(root: Path = ROOT) -> str:
    found = read_map(root)
    loops = cycles(found.edges())
    private = private_imports(found)
    upward = direction_violations(found)
    inside = [i for i in found.imports if i.in_function]
    wide = wide_functions(root)
    long = long_modules(root)
    twice = homonyms(root)
    qt = qt_imports(root)
    entry = console_entry_point(root)
    lines = [
        f"modules: {len(found.files)}",
        f"imports between the project's modules: {len(found.imports)} "
        f"({len(inside)} inside functions)",
        f"import cycles: {len(loops)}",
        *[f"  {' <-> '.join(c)}" for c in loops],
        f"imports against the direction of packages: {len(upward)}",
        *[f"  {i.source} -> {i.target} (line {i.line})" for i in upward],
        f"private names imported across modules: {len(private)}",
        *[f"  {i.source} <- {i.target} {','.join(n for n in i.names if n)} (line {i.line})" for i in private],
        f"modules over {MAX_MODULE_LINES} lines: {len(long)}",
        *[f"  {k}: {v}" for k, v in sorted(long.items(), key=lambda kv: -kv[1])],
        f"functions over {MAX_PARAMETERS} parameters: {len(wide)}",
        *[f"  {k}: {v}" for k, v in sorted(wide.items(), key=lambda kv: -kv[1])],
        f"module names used in several packages: {len(twice)}",
        *[f"  {k}: {', '.join(v)}" for k, v in sorted(twice.items())],
        f"files without QGIS that import QGIS or Qt: {len(qt)}",
        *[f"  {k}: {'; '.join(v)}" for k, v in sorted(qt.items())],
        f"console entry point: {entry or 'in ' + ENTRY_PACKAGE}",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(report() + "\n")
