"""The project's module map read from its source: imports between its own modules (also those made
inside functions), cycles, private names imported across modules, module sizes and parameter
counts. ``tests/test_layout.py`` keeps the rules; ``python tests/layout_rules.py`` prints the
numbers."""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "thermocrop"
SOURCE_FOLDERS = ("app", "cli", "core", "plugin", "synth", "training")


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


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PACKAGE, *parts])


def python_files(folders=SOURCE_FOLDERS) -> list[Path]:
    return sorted(p for f in folders if (ROOT / f).is_dir() for p in (ROOT / f).rglob("*.py"))


def _function_lines(tree: ast.AST) -> set[int]:
    """Ids of the import nodes that sit inside a function body."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    inside.add(id(sub))
    return inside


def read_map(folders=SOURCE_FOLDERS) -> ModuleMap:
    found = ModuleMap()
    paths = python_files(folders)
    for path in paths:
        found.files[module_name(path)] = path
    known = set(found.files) | {PACKAGE}
    for path in paths:
        source = module_name(path)
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        inside = _function_lines(tree)
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


def private_imports(found: ModuleMap) -> list[Import]:
    """Names starting with an underscore taken from another module (a private module counts too)."""
    bad = []
    for imp in found.imports:
        private_name = any(n.startswith("_") and not n.startswith("__") for n in imp.names if n)
        private_module = imp.target.rsplit(".", 1)[-1].startswith("_") and not imp.target.endswith("__init__")
        if private_name or (private_module and imp.target.rsplit(".", 1)[0] != imp.source.rsplit(".", 1)[0]):
            bad.append(imp)
    return bad


def long_modules(limit: int = 800, folders=SOURCE_FOLDERS) -> dict[str, int]:
    sizes = {}
    for path in python_files(folders):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            sizes[str(path.relative_to(ROOT))] = lines
    return sizes


def parameter_counts(folders=SOURCE_FOLDERS) -> dict[str, int]:
    """Parameters of every function and method (self and cls not counted), keyed file:qualname."""
    counts = {}
    for path in python_files(folders):
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    a = child.args
                    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
                    names = [n for n in names if n not in ("self", "cls")]
                    counts[f"{path.relative_to(ROOT)}:{prefix}{child.name}"] = len(names)
                    visit(child, f"{prefix}{child.name}.")
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")

        visit(tree, "")
    return counts


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def report() -> str:
    found = read_map()
    graph = found.edges()
    loops = cycles(graph)
    private = private_imports(found)
    inside = [i for i in found.imports if i.in_function]
    params = parameter_counts()
    wide = {k: v for k, v in params.items() if v > 12}
    lines = [
        f"modules: {len(found.files)}",
        f"imports between the project's modules: {len(found.imports)} "
        f"({len(inside)} inside functions)",
        f"import cycles: {len(loops)}",
        *[f"  {' <-> '.join(c)}" for c in loops],
        f"private names imported across modules: {len(private)}",
        *[f"  {i.source} <- {i.target} {','.join(n for n in i.names if n)} (line {i.line})" for i in private],
        f"modules over 800 lines: {len(long_modules())}",
        *[f"  {k}: {v}" for k, v in sorted(long_modules().items(), key=lambda kv: -kv[1])],
        f"functions over 12 parameters: {len(wide)}",
        *[f"  {k}: {v}" for k, v in sorted(wide.items(), key=lambda kv: -kv[1])],
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(report() + "\n")
