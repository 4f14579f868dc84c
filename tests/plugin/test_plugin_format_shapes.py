"""Shapes of output that ruff format once rewrote, generated for every driver.

Each case is a small schema and query file with one of the shapes sqlc's own
corpus showed: a :copyfrom of one column (a tuple of one, whose trailing
comma ruff does not keep exploded), a :many of a nullable enum of a long
name (a comprehension too long for one line) and SQL indented with tabs
among spaces (ruff's E101). The output must be exactly what ruff format
writes, at its default line length and at longer ones, and pass ruff check
with E101.
"""

import pathlib
import subprocess

import pytest
from plugin_harness import ROOT, run_sqlc, tool, write_case

# sqlc and ruff run as processes; the PostgreSQL checks use the test server.
pytestmark = [pytest.mark.slow, pytest.mark.postgres]

_PG_SCHEMA = (
    "CREATE SCHEMA foo;\n"
    "CREATE TYPE foo.type_user_role AS ENUM ('admin', 'user');\n"
    "CREATE TABLE foo.users (name text NOT NULL, role foo.type_user_role);\n"
)
_PG_QUERIES = (
    "-- name: CopyUsers :copyfrom\n"
    "INSERT INTO foo.users (name) VALUES ($1);\n\n"
    "-- name: ListUserRoles :many\n"
    "SELECT role FROM foo.users;\n\n"
    "-- name: Touch :exec\n"
    "UPDATE foo.users SET name = name\n"
    "WHERE name IN (\n"
    "        SELECT u.name FROM foo.users AS u WHERE u.name = $1 \n"
    "  \t\tFOR UPDATE\n"
    "    );\n"
)
_MYSQL_SCHEMA = "CREATE TABLE users (name VARCHAR(20) NOT NULL);\n"
_MYSQL_QUERIES = (
    "-- name: CopyUsers :copyfrom\n"
    "INSERT INTO users (name) VALUES (?);\n\n"
    "-- name: Touch :exec\n"
    "UPDATE users SET name = name\n"
    "  \t\tWHERE name = ? ;\n"
)
CASES = {
    "psycopg": ("postgresql", _PG_SCHEMA, _PG_QUERIES, {"emit_async": "true"}),
    "asyncpg": ("postgresql", _PG_SCHEMA, _PG_QUERIES, {"driver": "asyncpg"}),
    "pymysql": ("mysql", _MYSQL_SCHEMA, _MYSQL_QUERIES, {"emit_async": "true"}),
    "sqlite3": ("sqlite", _MYSQL_SCHEMA, _MYSQL_QUERIES, {}),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def package(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> pathlib.Path:
    engine, schema, queries, options = CASES[request.param]
    case = write_case(tmp_path_factory.mktemp(request.param), engine, schema, queries, options)
    done = run_sqlc(case, "generate")
    assert done.returncode == 0, done.stdout + done.stderr
    return case / "out"


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("ruff"), *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("line_length", [88, 100, 120])
def test_output_is_as_ruff_formats_it(package: pathlib.Path, line_length: int) -> None:
    done = _ruff(
        "format",
        "--isolated",
        "--no-cache",
        "--diff",
        "--line-length",
        str(line_length),
        str(package),
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_output_passes_ruff_check_with_e101(package: pathlib.Path) -> None:
    done = _ruff(
        "check", "--isolated", "--no-cache", "--extend-select", "E101,W291,W293", str(package)
    )
    assert done.returncode == 0, done.stdout + done.stderr
