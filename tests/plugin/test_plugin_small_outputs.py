"""Small schemas whose output once carried unused or missing imports.

Each case is generated, then the packages pass ruff check (unused imports
are F401), mypy --strict, and import cleanly: an empty models module imports
nothing, a query module imports only what its own code names, and a type
alias a query alone uses is still defined in models.
"""

import importlib
import os
import pathlib
import subprocess
import sys

import pytest
from plugin_harness import HERE, ROOT, run_sqlc, tool, write_case

CASES = {
    "small_empty_sqlite": (
        "sqlite",
        "-- no tables\n",
        "-- name: One :one\nSELECT CAST(1 AS INTEGER) AS one;\n",
    ),
    "small_json_in_query_only": (
        "postgresql",
        "CREATE TABLE t (id int8 NOT NULL);\n",
        "-- name: Echo :one\nSELECT @doc::jsonb AS doc, @host::inet AS host;\n",
    ),
    "small_module_names": (
        "postgresql",
        "CREATE TABLE t (uuid uuid NOT NULL, datetime timestamptz NOT NULL, models text);\n",
        "-- name: CountT :one\nSELECT count(*) FROM t WHERE models = $1;\n",
    ),
}


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("small")
    for name, (engine, schema, queries) in CASES.items():
        case = write_case(root / f"case_{name}", engine, schema, queries, {})
        done = run_sqlc(case, "generate")
        assert done.returncode == 0, done.stdout + done.stderr
        (case / "out").rename(root / name)
    return root


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPYPATH": str(HERE)}
    return subprocess.run(
        list(args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_small_outputs_pass_ruff(packages: pathlib.Path) -> None:
    dirs = [str(packages / name) for name in CASES]
    done = _run(tool("ruff"), "check", "--isolated", "--select", "E,F,W,I,UP,B", *dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    done = _run(tool("ruff"), "format", "--isolated", "--check", *dirs)
    assert done.returncode == 0, done.stdout + done.stderr


def test_small_outputs_pass_mypy_strict(packages: pathlib.Path) -> None:
    for name in CASES:
        done = _run(tool("mypy"), "--strict", "--no-incremental", str(packages / name))
        assert done.returncode == 0, done.stdout + done.stderr


def test_small_outputs_import(packages: pathlib.Path) -> None:
    sys.path.insert(0, str(packages))
    try:
        empty = importlib.import_module("small_empty_sqlite.models")
        assert [n for n in vars(empty) if not n.startswith("__")] == []
        json_models = importlib.import_module("small_json_in_query_only.models")
        assert {"JSONValue", "Inet"} <= set(vars(json_models))
        importlib.import_module("small_json_in_query_only.q")
        names = importlib.import_module("small_module_names.q")
        assert "uuid" not in vars(names)
        assert "_models" not in vars(names)
    finally:
        sys.path.remove(str(packages))
