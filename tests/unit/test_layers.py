"""The import structure of the product: no import circles, and no import upward in the layer table.

The imports of every module under ``src/schemadoc`` (the shipped conformance suite too: it sits with the
commands, on top, as it builds a server in process for its own runs) are read from the source with ``ast``, at module
level, inside functions and under ``if TYPE_CHECKING:`` alike: an import that only names a type still
ties the two modules together for a reader and for the type checker, so it may not close a circle or
point upward either. ``from package import name`` counts as an import of the submodule
``package.name`` when there is one, else of the package.

The layers are read from the table "Layers" in ``docs/architecture.md``: a module may import its
own layer (without a circle) and the layers below it, never one above. A new module or package
outside every row of the table fails until the table places it. The two doors (``interfaces/mcp_door/``
and ``interfaces/rest/``) share a row and never import each other; no module or package is named like a
library imported beside it or inside it (``interfaces/mcp.py`` beside ``from mcp import ...`` was one).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "schemadoc"

ARCHITECTURE = SRC.parent / "docs" / "architecture.md"


def _layer_table(page: str) -> list[tuple[str, ...]]:
    """The "Layers" table of the architecture page, lowest first: each row's modules (``x.py``) and
    packages (``x/``, with everything below them) as dotted names; ``__init__.py`` is the package itself."""
    section = page.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if re.match(r"\|\s*\d+\s*\|", line)]
    table = []
    for row in sorted(rows, key=lambda cells: int(cells[1])):
        names = re.findall(r"`([\w/.]+)`", row[2])
        table.append(tuple("schemadoc" if name == "__init__.py" else
                           "schemadoc." + name.removesuffix(".py").removesuffix("/").replace("/", ".")
                           for name in names))
    return table


LAYERS = _layer_table(ARCHITECTURE.read_text(encoding="utf-8"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST, *, type_checking: bool = True) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement; with ``type_checking=False`` only those that can run (the body of
    ``if TYPE_CHECKING:`` left out, its ``else`` kept)."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif not type_checking and isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def _known(name: str) -> str | None:
    """The product module ``name`` or its nearest enclosing one, or None outside the product."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(name: str, path: Path) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, *([node.module] if node.module else [])])
        for alias in node.names:
            targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return {known for target in targets
            if (known := _known(target)) is not None and known != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(name: str, layers: list[tuple[str, ...]] = LAYERS) -> int:
    """The row that places ``name`` (the most specific one), or -1. The package itself (``__init__.py``) is a row
    of its own: it places no module below it, so a module outside every other row has no layer."""
    best, level = -1, -1
    for index, members in enumerate(layers):
        for member in members:
            below = member != "schemadoc" and name.startswith(member + ".")
            if (name == member or below) and len(member) > best:
                best, level = len(member), index
    return level


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
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
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_scan_sees_the_product() -> None:
    assert {"schemadoc.service", "schemadoc.service.core", "schemadoc.validation.incremental",
            "schemadoc.storage.files", "schemadoc.interfaces.app",
            "schemadoc.conformance.suite.doors"} <= MODULES.keys()
    assert "schemadoc.service.core" in GRAPH["schemadoc.service.nodes"] | GRAPH["schemadoc.service.history"]
    assert GRAPH["schemadoc.validation"] >= {"schemadoc.validation.violations", "schemadoc.validation.suggestions"}


def test_every_product_module_has_a_layer() -> None:
    assert [name for name in MODULES if _layer(name) < 0] == []


def test_no_import_circle_between_product_modules() -> None:
    assert _cycles(GRAPH) == []


def test_no_module_imports_a_higher_layer() -> None:
    upward = sorted(f"{name} ({_layer(name)}) imports {target} ({_layer(target)})"
                    for name, targets in GRAPH.items() for target in targets if _layer(target) > _layer(name))
    assert upward == []


def _package(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def test_the_doors_never_import_each_other() -> None:
    doors = ("schemadoc.interfaces.mcp_door", "schemadoc.interfaces.rest")

    def door(name: str) -> str | None:
        return next((top for top in doors if name == top or name.startswith(top + ".")), None)

    crossing = sorted(f"{name} imports {target}" for name, targets in GRAPH.items() for target in targets
                      if door(name) and door(target) and door(name) != door(target))
    assert crossing == []
    assert _layer("schemadoc.interfaces.mcp_door.server") == _layer("schemadoc.interfaces.rest.routes")


def _libraries(path: Path) -> set[str]:
    """The top-level names of the libraries (not ours) a module imports, under ``TYPE_CHECKING`` too."""
    names: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif not node.level and node.module:
            names.add(node.module.partition(".")[0])
    return names - {"schemadoc", "__future__"}


def _name_clashes(libraries: dict[str, set[str]], packages: set[str]) -> list[str]:
    """The modules and packages named like a library imported beside them or inside them.

    ``libraries``: the libraries each module imports, by its dotted name; ``packages``: the names that are
    packages (their ``__init__.py`` counts inside them). A module ``x.py`` beside an import of ``x`` reads, to a
    person or a tool resolving names, as an import of itself; so does every ``import x`` inside a package ``x/``
    (ruff then sorts it as first-party), or beside it."""
    inside: dict[str, set[str]] = {}
    for name, imported in libraries.items():
        inside.setdefault(name if name in packages else name.rpartition(".")[0], set()).update(imported)
    clashes = []
    for name in libraries:
        parent, _, stem = name.rpartition(".")
        if stem in inside.get(parent, set()):
            clashes.append(f"{name}{' (a package)' if name in packages else ''} beside an import of the library {stem}")
        if name in packages and stem in inside.get(name, set()):
            clashes.append(f"{name} (a package) holds an import of the library {stem}")
    return sorted(clashes)


def test_no_module_is_named_like_a_library_imported_beside_it_or_inside_it() -> None:
    packages = {name for name, path in MODULES.items() if path.name == "__init__.py"}
    assert _name_clashes({name: _libraries(path) for name, path in MODULES.items()}, packages) == []


def test_the_layer_table_is_read_from_the_architecture_page() -> None:
    assert LAYERS[0] == ("schemadoc", "schemadoc.errors")
    assert ("schemadoc.service",) in LAYERS
    assert "schemadoc.interfaces.cli" in LAYERS[-1]
    assert len({name for members in LAYERS for name in members}) == sum(map(len, LAYERS))


# -- the checks themselves find what they are for -------------------------------------------------------

@pytest.mark.parametrize(("graph", "expected"), [
    ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_circles_are_found(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert _cycles(graph) == expected


def test_a_module_named_like_a_library_beside_it_or_inside_it_is_found() -> None:
    flat = {"p.interfaces.mcp": {"anyio"}, "p.interfaces.mcp_prompts": {"mcp", "pydantic"}}
    assert _name_clashes(flat, set()) == ["p.interfaces.mcp beside an import of the library mcp"]
    named = {"p.interfaces.mcp": set(), "p.interfaces.mcp.server": {"mcp"}, "p.interfaces.app": {"fastapi"}}
    assert _name_clashes(named, {"p.interfaces.mcp"}) == ["p.interfaces.mcp (a package) holds an import of the "
                                                          "library mcp"]
    assert _name_clashes({**named, "p.interfaces.mcp.server": set(), "p.interfaces.app": {"mcp"}},
                         {"p.interfaces.mcp"}) == ["p.interfaces.mcp (a package) beside an import of the library mcp"]
    door = {"p.interfaces.mcp_door": set(), "p.interfaces.mcp_door.server": {"mcp"}, "p.interfaces.app": {"mcp"}}
    assert _name_clashes(door, {"p.interfaces.mcp_door"}) == []


def test_type_checking_imports_and_function_imports_are_counted() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from schemadoc.service import DocumentService\n"
        "else:\n    from schemadoc import errors\n"
        "def f():\n    from schemadoc.interfaces import app\n")
    every = {node.module for node in _import_nodes(tree) if isinstance(node, ast.ImportFrom)}
    assert every == {"typing", "schemadoc.service", "schemadoc", "schemadoc.interfaces"}
    running = {node.module for node in _import_nodes(tree, type_checking=False) if isinstance(node, ast.ImportFrom)}
    assert running == {"typing", "schemadoc", "schemadoc.interfaces"}


def test_a_module_outside_every_row_has_no_layer() -> None:
    table = [("schemadoc", "schemadoc.errors"), ("schemadoc.storage", "schemadoc.config")]
    assert _layer("schemadoc", table) == 0
    assert _layer("schemadoc.storage.files", table) == _layer("schemadoc.config", table) == 1
    assert _layer("schemadoc.helpers", table) == _layer("schemadoc.errorsx", table) == -1


def test_a_module_is_placed_in_the_most_specific_layer() -> None:
    assert _layer("schemadoc.storage.files") == _layer("schemadoc.storage")
    assert _layer("schemadoc.errors") < _layer("schemadoc.pointer") < _layer("schemadoc.service.core")
    doors = _layer("schemadoc.interfaces.rest.routes")
    assert _layer("schemadoc.config") < _layer("schemadoc.interfaces.http.guards") < doors
    assert doors == _layer("schemadoc.interfaces.mcp_door") < _layer("schemadoc.interfaces.app")
    assert _layer("schemadoc.interfaces.app") < _layer("schemadoc.interfaces.cli.command") == len(LAYERS) - 1
    assert _layer("schemadoc.conformance.suite.doors") == len(LAYERS) - 1
