"""The shape of src/jobtable: no two modules import each other, and no module grows too long.

Imports are read with ``ast``, those inside functions and under
``TYPE_CHECKING`` included: a circle hidden in either still ties the
modules together. The generated package ``jobtable.db`` is left out.
"""

import ast
import pathlib

import jobtable

PACKAGE = pathlib.Path(jobtable.__file__).parent
MAX_LINES = 400


def modules() -> dict[str, pathlib.Path]:
    """jobtable's hand-written modules by name (``_runner``), the package itself as ``jobtable``."""
    found = {path.stem: path for path in PACKAGE.glob("*.py")}
    found["jobtable"] = found.pop("__init__")
    return found


def imports(path: pathlib.Path, known: set[str]) -> set[str]:
    """The modules of known that path imports, in any form."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module or ""
            elif node.level == 0 and (node.module or "").startswith("jobtable."):
                base = (node.module or "").split(".")[1]
            elif node.level == 0 and node.module == "jobtable":
                base = ""
            else:
                continue
            if base:
                names.add(base)
            else:
                names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "jobtable" and len(parts) > 1:
                    names.add(parts[1])
    return names & known


def import_graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(path, known) - {name} for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of modules that reach each other through imports (Tarjan's components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_modules_import_each_other() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_circle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_import_reader_sees_imports_inside_functions_and_type_checking(
    tmp_path: pathlib.Path,
) -> None:
    source = tmp_path / "_x.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from ._store import Store\n"
        "if TYPE_CHECKING:\n"
        "    from ._runner import Runner\n"
        "def f():\n"
        "    from jobtable._postgres import PostgresEngine\n"
        "    import jobtable._sqlite\n",
        encoding="utf-8",
    )
    known = {"_store", "_runner", "_postgres", "_sqlite", "_kind"}
    assert imports(source, known) == {"_store", "_runner", "_postgres", "_sqlite"}


def test_no_hand_written_module_is_over_400_lines() -> None:
    lengths = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()
    }
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}
