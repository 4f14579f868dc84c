"""The shape of the source: floors that import downwards only, no circles, short functions.

Every guard here walks the whole tree (``tests/source_tree.py``): the
package at every depth, the query generator and the benchmark, read with
``ast``. The generated package ``jobtable.db`` is left out.
"""

import pathlib

import pytest
import source_tree
from source_tree import PACKAGE, ROOT, body_lines, functions, hand_written_files, imports, modules

MAX_LINES = 800
MAX_FUNCTION_LINES = 60
LONG_MARK = "# longer than 60 lines:"
"""A comment on the line above a function that must be long, saying why."""

FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "jobtable._errors",
        "jobtable._values",
        "jobtable._backoff",
        "jobtable._secrets",
        "jobtable._typeddict",
        "jobtable._codec",
    ),
    ("jobtable._engines",),
    (
        "jobtable._job",
        "jobtable._operations",
        "jobtable._options",
        "jobtable._unique",
        "jobtable._debounce",
        "jobtable._flow",
        "jobtable._transaction",
        "jobtable._telemetry",
        "jobtable._store",
        "jobtable._signal",
        "jobtable._enqueue",
        "jobtable._kind",
        "jobtable._batch",
        "jobtable._wait",
        "jobtable._workflow",
        "jobtable._labels",
        "jobtable._operator",
    ),
    ("jobtable._runner", "jobtable._otel_metrics", "jobtable._dashboard"),
    ("jobtable",),
    ("jobtable.otel", "jobtable.testing", "jobtable.contrib", "jobtable._cli", "jobtable.__main__"),
)
"""The architecture, bottom up: a module imports only from its own floor or those below.

The ground holds plain values and errors; then the engines behind their
seam; then the core that enqueuers and readers use; then the runner and the
dashboard; then the package's face; at the top, what builds on the public
package (telemetry, testing, Django, the command line).
"""


def room(module: str) -> str:
    """The longest FLOORS entry that module is, or is inside of."""
    rooms = [r for floor in FLOORS for r in floor if module == r or module.startswith(r + ".")]
    if not rooms:
        raise AssertionError(f"{module} is on no floor: add it to FLOORS")
    return max(rooms, key=len)


def floor(module: str) -> int:
    """The number of the floor module stands on, from 0 at the ground."""
    name = room(module)
    return next(i for i, rooms in enumerate(FLOORS) if name in rooms)


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
        for nxt in sorted(graph.get(node, ())):
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


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a module on a higher floor than the importer's."""
    return [
        f"{module} (floor {floor(module)}) imports {target} (floor {floor(target)})"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if floor(target) > floor(module)
    ]


def test_the_walk_reaches_every_folder() -> None:
    folders = {p.relative_to(PACKAGE).parts[0] for p in modules().values() if p.parent != PACKAGE}
    assert {"_engines", "_runner", "_cli", "_dashboard", "_operator", "testing"} <= folders
    assert "jobtable._engines.sqlite.writer" in modules()


def test_no_two_modules_import_each_other() -> None:
    assert cycles(import_graph()) == []


def test_no_module_imports_from_a_higher_floor() -> None:
    assert upward_imports(import_graph()) == []


def test_every_module_stands_on_a_floor() -> None:
    for module in modules():
        floor(module)


def test_the_floor_check_finds_an_upward_import() -> None:
    graph = {"jobtable._engines.sqlite.engine": {"jobtable._runner.runner"}}
    assert upward_imports(graph) == [
        "jobtable._engines.sqlite.engine (floor 1) imports jobtable._runner.runner (floor 3)"
    ]


def test_the_cycle_check_finds_a_circle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_import_reader_sees_every_form(tmp_path: pathlib.Path) -> None:
    package = tmp_path / "jobtable"
    (package / "_engines" / "sqlite").mkdir(parents=True)
    source = package / "_engines" / "x.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from .. import _store\n"
        "if TYPE_CHECKING:\n"
        "    from jobtable._runner.runner import Runner\n"
        "def f():\n"
        "    from .sqlite.engine import SQLiteEngine\n"
        "    import jobtable._kind\n"
        "    from jobtable.db.sqlite import jobs\n",
        encoding="utf-8",
    )
    known = {"jobtable", "jobtable._store", "jobtable._runner.runner", "jobtable._kind"}
    known |= {"jobtable._engines.sqlite.engine"}
    assert imports(source, known, package) == known - {"jobtable"}


def test_the_library_imports_its_own_modules_one_way() -> None:
    relative = {
        str(path.relative_to(ROOT)): lines
        for path in PACKAGE.rglob("*.py")
        if "db" not in path.relative_to(PACKAGE).parts[:1]
        and (lines := source_tree.relative_imports(path))
    }
    assert relative == {}, "jobtable imports its own modules absolutely: from jobtable.x import y"


LONG_MODULE_MARK = "# longer than 800 lines:"
"""A comment among a module's first lines that says why it must be long."""


def long_modules(paths: list[pathlib.Path], root: pathlib.Path = ROOT) -> dict[str, int]:
    """The modules of paths over MAX_LINES lines whose first 40 lines do not say why."""
    found = {}
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        marked = any(line.startswith(LONG_MODULE_MARK) for line in lines[:40])
        if len(lines) > MAX_LINES and not marked:
            found[str(path.relative_to(root))] = len(lines)
    return found


def test_no_hand_written_module_is_over_800_lines_unless_it_says_why() -> None:
    assert long_modules(list(hand_written_files())) == {}


def test_the_module_check_finds_a_long_module_unless_it_says_why(tmp_path: pathlib.Path) -> None:
    long = tmp_path / "long.py"
    long.write_text("x = 1\n" * 801, encoding="utf-8")
    marked = tmp_path / "marked.py"
    marked.write_text(f"{LONG_MODULE_MARK} one class's API\n" + "x = 1\n" * 801, encoding="utf-8")
    assert long_modules([long, marked], tmp_path) == {"long.py": 801}


def long_functions(path: pathlib.Path, root: pathlib.Path = ROOT) -> list[str]:
    """The functions of path over MAX_FUNCTION_LINES whose line above does not say why."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for node in functions(path):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        marked = first >= 2 and lines[first - 2].strip().startswith(LONG_MARK)
        if body_lines(node) > MAX_FUNCTION_LINES and not marked:
            found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} {body_lines(node)}")
    return found


def test_no_hand_written_function_is_over_60_lines() -> None:
    assert [hit for path in hand_written_files() for hit in long_functions(path)] == []


@pytest.mark.parametrize("marked", [False, True])
def test_the_function_check_finds_a_long_function_unless_it_says_why(
    tmp_path: pathlib.Path, marked: bool
) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(61))
    mark = f"{LONG_MARK} a table of cases reads best whole\n" if marked else ""
    path = tmp_path / "m.py"
    path.write_text(f'{mark}def f():\n    """Doc."""\n{body}', encoding="utf-8")
    line = 2 if marked else 1
    assert long_functions(path, tmp_path) == ([] if marked else [f"m.py:{line} f 61"])


def test_the_function_check_lets_60_lines_pass(tmp_path: pathlib.Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    path = tmp_path / "m.py"
    path.write_text(f'def f():\n    """Doc."""\n{body}', encoding="utf-8")
    assert long_functions(path, tmp_path) == []


def test_no_test_imports_from_a_conftest() -> None:
    # Under pytest-xdist "conftest" may name tests/contrib/conftest.py, so a
    # test that imports a name from it fails to collect there: helpers that
    # tests share are fixtures, or live in a module of their own.
    tests = ROOT / "tests"
    offenders = [
        str(path.relative_to(ROOT))
        for path in tests.rglob("*.py")
        if path.name != "conftest.py"
        and any(
            line.startswith(("from conftest import", "import conftest"))
            for line in path.read_text().splitlines()
        )
    ]
    assert offenders == []
