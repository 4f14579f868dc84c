"""jobtable's hand-written source as the structure tests read it: modules, imports, functions.

Everything is read with ``ast``: no module is imported, so a module that
fails to import is still read. The generated package ``jobtable.db`` and the
plugin's golden files are no hand-written code and are left out.
"""

import ast
import pathlib
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "jobtable"
GENERATED = "jobtable.db"
HAND_WRITTEN_ROOTS = (PACKAGE, ROOT / "plugin" / "sqlc_gen_jobtable", ROOT / "bench")


def module_name(path: pathlib.Path, package_root: pathlib.Path = PACKAGE) -> str:
    """The dotted name of the module at path, under the package at package_root."""
    parts = [package_root.name, *path.relative_to(package_root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package_root: pathlib.Path = PACKAGE) -> dict[str, pathlib.Path]:
    """The package's hand-written modules by dotted name, at every depth."""
    found: dict[str, pathlib.Path] = {}
    for path in sorted(package_root.rglob("*.py")):
        name = module_name(path, package_root)
        if name == GENERATED or name.startswith(GENERATED + "."):
            continue
        found[name] = path
    return found


def imported_names(path: pathlib.Path, package_root: pathlib.Path = PACKAGE) -> list[str]:
    """Every name path imports, made absolute: ``from M import n`` gives M.n.

    Imports inside functions and under ``TYPE_CHECKING`` count: a circle
    hidden in either still ties the modules together.
    """
    module = module_name(path, package_root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, node.module] if node.module else base_parts)
            else:
                base = node.module or ""
            # A name may be a module or a name inside base: imports() keeps the
            # longest that is a module, so base counts only when the name is not.
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def imports(path: pathlib.Path, known: set[str], package_root: pathlib.Path = PACKAGE) -> set[str]:
    """The modules of known that path imports, each by its longest known name; never jobtable.db."""
    found: set[str] = set()
    for name in imported_names(path, package_root):
        if name == GENERATED or name.startswith(GENERATED + "."):
            continue
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in known:
                found.add(candidate)
                break
    return found


def relative_imports(path: pathlib.Path) -> list[int]:
    """The lines of path that import relatively (``from . import x``, ``from ..a import b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0]


def hand_written_files() -> Iterator[pathlib.Path]:
    """Every hand-written Python file of the library, the plugin and the benchmark."""
    for root in HAND_WRITTEN_ROOTS:
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(ROOT).parts
            if "db" in relative[:3] and relative[:3] == ("src", "jobtable", "db"):
                continue
            yield path


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """How many lines a function's body spans, its docstring left out."""
    body = node.body
    first = body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    if docstring and len(body) > 1:
        first = body[1]
    end = node.end_lineno or first.lineno
    return end - first.lineno + 1


def functions(path: pathlib.Path) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function and method defined in path, nested ones included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
