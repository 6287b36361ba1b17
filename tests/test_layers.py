"""The package's import structure: arrows point down the layers, packages meet at their
``__init__``, and no import circle spans more than two modules.

Every ``import`` statement of ``dagster_ds`` is read with `ast`, deferred ones (inside
functions) included. The layer order is DESIGN.md's, bottom to top; a package may
import only packages of lower layers, and only the names their ``__init__`` exports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dagster_ds"

# Bottom to top. A package imports only packages of a lower layer; packages of one
# layer never import each other. ``dagster_ds`` is the root package's re-exports.
# ``hub.server`` stands apart: it uses the Hub's naming rules, and only the top layers
# (the embedded Hub of orchestration, the CLI, the test fixtures) start it.
# ``streaming`` sits below ``arrow``: a stream needs nothing of the map-style
# `Dataset`, whose ``to_iterable_dataset`` is the one conversion between them.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "progress", "exports"),
    ("fingerprint", "features", "formats", "cache"),
    ("formatting",),
    ("parallel",),
    ("hub",),
    ("hub.server", "streaming"),
    ("arrow",),
    ("load", "combine"),
    ("dagster_ds",),
    ("distributed",),
    ("orchestration",),
    ("cli", "testing"),
)


@dataclass(frozen=True)
class Import:
    """One imported module: who imports it, where, and whether only for type checking."""

    importer: str
    target: str
    line: int
    typing_only: bool


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(root: Path) -> list[Import]:
    """Every import of a module of the package by a module of it, deferred ones included."""
    known = modules(root)
    found: list[Import] = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        typing_only = _typing_only_lines(tree)
        for node in ast.walk(tree):
            for target in _targets(name, path, node, known):
                line = getattr(node, "lineno", 0)
                found.append(Import(name, target, line, line in typing_only))
    return found


def package_of(module: str) -> str:
    """The unit of layering a module belongs to: ``arrow``, ``hub.server``, ``cli``..."""
    parts = module.split(".")[1:]
    if not parts:
        return "dagster_ds"
    if parts[:2] == ["hub", "server"]:
        return "hub.server"
    return parts[0]


def is_private(module: str) -> bool:
    """Whether ``module`` is a package's private module (a part of its dotted name is ``_x``)."""
    return any(part.startswith("_") and part != "__init__" for part in module.split("."))


def upward_arrows(found: list[Import]) -> list[str]:
    """Imports of a package of the same or a higher layer (or of an undeclared package)."""
    layer = {package: rank for rank, tier in enumerate(LAYERS) for package in tier}
    problems = []
    for item in found:
        low, high = package_of(item.target), package_of(item.importer)
        if low == high:
            continue
        if low not in layer or high not in layer:
            problems.append(f"{item.importer}:{item.line}: undeclared package in {LAYERS}")
        elif layer[low] >= layer[high]:
            problems.append(f"{item.importer}:{item.line} imports {item.target} (not below)")
    return problems


def private_imports(found: list[Import]) -> list[str]:
    """Imports of another package's private module (its ``__init__`` is its interface)."""
    return [
        f"{item.importer}:{item.line} imports {item.target}"
        for item in found
        if package_of(item.target) != package_of(item.importer) and is_private(item.target)
    ]


def circles(found: list[Import]) -> list[list[str]]:
    """Import circles (run time imports) of more than two modules, each sorted."""
    graph: dict[str, set[str]] = {}
    for item in found:
        if not item.typing_only and item.target != item.importer:
            graph.setdefault(item.importer, set()).add(item.target)
    return sorted(sorted(group) for group in _strongly_connected(graph) if len(group) > 2)


def _targets(name: str, path: Path, node: ast.AST, known: Mapping[str, Path]) -> Iterator[str]:
    """The package modules ``node`` imports (a name imported from a package: its module)."""
    if isinstance(node, ast.Import):
        candidates = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = name.split(".")
            if path.name != "__init__.py":
                package.pop()
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, *([node.module] if node.module else [])])
        candidates = [
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
            for alias in node.names
        ]
    else:
        return
    root = name.split(".")[0]
    for candidate in candidates:
        if candidate.split(".")[0] != root:
            continue
        while candidate not in known and "." in candidate:
            candidate = candidate.rsplit(".", 1)[0]
        yield candidate


def _typing_only_lines(tree: ast.Module) -> set[int]:
    """Lines of the imports under ``if TYPE_CHECKING:``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(
                    getattr(child, "lineno", 0)
                    for child in ast.walk(inner)
                    if isinstance(child, ast.Import | ast.ImportFrom)
                )
    return lines


def _strongly_connected(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups


@pytest.fixture(scope="module")
def package_imports() -> list[Import]:
    return imports(PACKAGE)


def test_imports_point_down_the_layers(package_imports: list[Import]) -> None:
    assert upward_arrows(package_imports) == []


def test_packages_import_each_other_only_through_their_init(
    package_imports: list[Import],
) -> None:
    assert private_imports(package_imports) == []


def test_internal_names_are_apart_from_the_public_api() -> None:
    """A package's ``__internal__`` names (for the other packages) are not in its ``__all__``."""
    import importlib

    for name in sorted(modules(PACKAGE)):
        if is_private(name):
            continue
        module = importlib.import_module(name)
        internal = set(getattr(module, "__internal__", ()))
        assert not internal & set(getattr(module, "__all__", ())), name
        assert all(hasattr(module, item) for item in internal), name


def test_no_import_circle_spans_more_than_two_modules(package_imports: list[Import]) -> None:
    assert circles(package_imports) == []


def test_the_checks_catch_each_kind_of_mistake(tmp_path: Path) -> None:
    """A small package with one of each mistake, deferred imports among them."""
    root = tmp_path / "dagster_ds"
    files = {
        "__init__.py": "",
        "errors.py": "",
        "cache/__init__.py": "from dagster_ds.cache._a import A\n",
        # an arrow up, deferred: cache is below arrow
        "cache/_a.py": "def f():\n    from dagster_ds.arrow import Dataset\n",
        "arrow/__init__.py": "",
        # a private module of another package
        "arrow/_x.py": "from dagster_ds.cache._a import A\nfrom . import _y\n",
        # a circle of three modules: _x -> _y -> _z -> _x
        "arrow/_y.py": "from dagster_ds.arrow import _z\n",
        "arrow/_z.py": "def g():\n    from dagster_ds.arrow._x import X\n",
        # a pair importing each other is allowed, and so is an import for type checking
        "arrow/_p.py": "from dagster_ds.arrow._q import Q\n",
        "arrow/_q.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from dagster_ds.arrow._p import P\n    from dagster_ds.arrow._x import X\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    found = imports(root)
    assert upward_arrows(found) == ["dagster_ds.cache._a:2 imports dagster_ds.arrow (not below)"]
    assert private_imports(found) == ["dagster_ds.arrow._x:1 imports dagster_ds.cache._a"]
    assert circles(found) == [["dagster_ds.arrow._x", "dagster_ds.arrow._y", "dagster_ds.arrow._z"]]
