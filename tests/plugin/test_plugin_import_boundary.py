"""The generated package jobtable.db is imported only by the engine packages.

Python has no ``internal/``: this test is what keeps the generated code behind
``jobtable/_engines/sqlite/`` and ``jobtable/_engines/postgres/``. It reads every module's
imports with ``ast`` (absolute, relative, and ``from jobtable import db``
forms) and needs none of the modules to exist or import cleanly.
"""

import ast
import pathlib

import pytest
from plugin_harness import ROOT

PACKAGE = "jobtable"
GENERATED = "jobtable.db"
ENGINES = ("_engines/sqlite/", "_engines/postgres/")
"""The engine packages: their adapters map the generated code onto the seam."""


def _module_name(package_root: pathlib.Path, path: pathlib.Path) -> str:
    parts = [PACKAGE, *path.relative_to(package_root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(package_root: pathlib.Path, path: pathlib.Path) -> list[str]:
    """Every module path imports, as an absolute name; ``from M import n`` gives M and M.n."""
    module = _module_name(package_root, path)
    # The package that relative imports start from.
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, node.module] if node.module else base_parts)
            else:
                base = node.module or ""
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def generated_package_importers(package_root: pathlib.Path) -> list[str]:
    """The modules under package_root, other than the adapters, that import jobtable.db."""
    offenders: list[str] = []
    for path in sorted(package_root.rglob("*.py")):
        relative = path.relative_to(package_root)
        if relative.parts[0] == "db" or relative.as_posix().startswith(ENGINES):
            continue
        for name in _imported_names(package_root, path):
            if name == GENERATED or name.startswith(GENERATED + "."):
                offenders.append(f"{relative.as_posix()} imports {name}")
    return offenders


def test_only_the_engine_adapters_import_the_generated_package() -> None:
    assert generated_package_importers(ROOT / "src" / PACKAGE) == []


@pytest.mark.parametrize(
    ("module", "source", "imported"),
    [
        ("_runner.py", "import jobtable.db.sqlite.jobs\n", "jobtable.db.sqlite.jobs"),
        ("_runner.py", "from jobtable.db.sqlite import jobs\n", "jobtable.db.sqlite"),
        ("_runner.py", "from jobtable import db\n", "jobtable.db"),
        ("_runner.py", "from .db import sqlite\n", "jobtable.db"),
        ("_runner.py", "from . import db\n", "jobtable.db"),
        ("_runner.py", "from .db.postgres.jobs import Querier\n", "jobtable.db.postgres.jobs"),
        ("cli/_main.py", "from ..db import sqlite\n", "jobtable.db.sqlite"),
        ("cli/__init__.py", "from .. import db\n", "jobtable.db"),
        (
            "_runner.py",
            "def load() -> None:\n    from .db.sqlite import jobs\n",
            "jobtable.db.sqlite",
        ),
    ],
)
def test_every_import_form_of_the_generated_package_is_caught(
    tmp_path: pathlib.Path, module: str, source: str, imported: str
) -> None:
    path = tmp_path / PACKAGE / module
    path.parent.mkdir(parents=True)
    path.write_text(source)
    assert f"{module} imports {imported}" in generated_package_importers(tmp_path / PACKAGE)


@pytest.mark.parametrize(
    "source",
    [
        "import jobtable.dbtools\n",
        "from .dbx import helper\n",
        "from jobtable import _errors\n",
        "import sqlite3\n",
    ],
)
def test_names_that_only_resemble_the_generated_package_pass(
    tmp_path: pathlib.Path, source: str
) -> None:
    path = tmp_path / PACKAGE / "_runner.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    assert generated_package_importers(tmp_path / PACKAGE) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_the_engine_packages_may_import_the_generated_package(
    tmp_path: pathlib.Path, engine: str
) -> None:
    path = tmp_path / PACKAGE / engine / "queries.py"
    path.parent.mkdir(parents=True)
    path.write_text("from jobtable.db.sqlite import jobs\nfrom ...db.postgres import jobs as pg\n")
    assert generated_package_importers(tmp_path / PACKAGE) == []


def test_the_generated_package_may_import_itself(tmp_path: pathlib.Path) -> None:
    path = tmp_path / PACKAGE / "db" / "sqlite" / "jobs.py"
    path.parent.mkdir(parents=True)
    path.write_text("from . import models\n")
    assert generated_package_importers(tmp_path / PACKAGE) == []
