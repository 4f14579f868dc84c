"""The plugin prepares every generated SQL constant before it writes a file.

A constant cut at the wrong offsets (as sqlc 1.31 cut SQLite query text
after a multi-byte character) reads as plausible SQL; these tests prove that
the check refuses such constants on both engines, and that a generation
with one fails naming the query.
"""

import dataclasses
import pathlib
from collections.abc import Iterator

import psycopg
import pytest
from plugin_harness import query_plan, run_sqlc, write_case
from sqlc_gen_jobtable._catalog import Field
from sqlc_gen_jobtable._check import (
    Describe,
    check_postgres,
    check_sqlite,
    postgres_placeholders,
    server_describe,
)
from sqlc_gen_jobtable._plan import QueryPlan
from sqlc_gen_jobtable._pytype import PyType

SCHEMA = "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
_INT, _STR = PyType("int"), PyType("str")


def _plan(sql: str, command: str, params: tuple[Field, ...], columns: int = 0) -> QueryPlan:
    return query_plan(sql, command, params, columns)


RENAME = (Field("name", _STR), Field("id", _INT))
# The two constants sqlc 1.31 cut from a file with an em dash above them.
CUT_SHORT = _plan("SELECT id, name FROM items WHERE id =", ":one", (Field("id", _INT),), 2)
CUT_ACROSS = _plan("?;\n\nUPDATE items SET name = ? WHERE id =", ":exec", RENAME)


def test_sqlite_passes_constants_that_match_their_methods() -> None:
    plans = [
        _plan("SELECT id, name FROM items WHERE id = ?", ":one", (Field("id", _INT),), 2),
        _plan("UPDATE items SET name = ? WHERE id = ?", ":exec", RENAME),
    ]
    assert check_sqlite(SCHEMA, plans) == []


@pytest.mark.parametrize("plan", [CUT_SHORT, CUT_ACROSS], ids=["short", "across"])
def test_sqlite_refuses_a_wrongly_cut_constant(plan: QueryPlan) -> None:
    errors = check_sqlite(SCHEMA, [plan])
    assert len(errors) == 1
    assert "query Q (q.sql): its SQL constant does not prepare" in errors[0]


def test_sqlite_refuses_a_constant_with_fewer_placeholders_than_the_method_binds() -> None:
    plan = _plan("UPDATE items SET name = ? WHERE id = 1", ":exec", RENAME)
    assert check_sqlite(SCHEMA, [plan]) != []


def test_sqlite_refuses_a_constant_with_more_columns_than_the_method_reads() -> None:
    plan = _plan("SELECT id, name FROM items WHERE id = ?", ":one", (Field("id", _INT),), 1)
    assert check_sqlite(SCHEMA, [plan]) == [
        "query Q (q.sql): its SQL constant returns 2 columns, the method reads 1"
    ]


def test_psycopg_placeholders_become_one_number_per_name() -> None:
    sql = "SELECT %(a)s, %(b)s, %(a)s LIKE '%%x'"
    assert postgres_placeholders(sql) == ("SELECT $1, $2, $1 LIKE '%x'", 2)


@pytest.fixture
def describe(pg_server: str) -> Iterator[Describe]:
    with psycopg.connect(pg_server) as conn:
        conn.execute("CREATE TEMP TABLE items (id bigint PRIMARY KEY, name text NOT NULL)")
        yield server_describe(conn)
        conn.rollback()


@pytest.mark.postgres
def test_postgres_refuses_a_wrongly_cut_constant(describe: Describe) -> None:
    short = _plan("SELECT id, name FROM items WHERE id =", ":one", (Field("id", _INT),), 2)
    across = _plan("$1;\n\nUPDATE items SET name = %(name)s WHERE id =", ":exec", RENAME)
    good = _plan("UPDATE items SET name = %(name)s WHERE id = %(id)s", ":exec", RENAME)
    errors = check_postgres(describe, [short, across, good])
    assert len(errors) == 2
    assert all("does not prepare" in e for e in errors)


@pytest.mark.postgres
def test_postgres_refuses_a_constant_that_binds_fewer_parameters(describe: Describe) -> None:
    plan = _plan("UPDATE items SET name = %(name)s WHERE id = 1", ":exec", RENAME)
    errors = check_postgres(describe, [plan])
    assert errors == ["query Q (q.sql): its SQL constant takes 1 parameters, the method binds 2"]


@pytest.mark.postgres
def test_postgres_prepares_asyncpg_constants_as_written(describe: Describe) -> None:
    sql = "UPDATE items SET name = $1 WHERE id = $2 AND name LIKE '%%'"
    good = dataclasses.replace(_plan(sql, ":exec", RENAME), driver="asyncpg")
    assert check_postgres(describe, [good]) == []
    # The INSERT an asyncpg :copyfrom takes its table and columns from is
    # prepared too (psycopg's COPY is not).
    sql = "INSERT INTO items (nmae, id) VALUES ($1, $2)"
    copy = dataclasses.replace(_plan(sql, ":copyfrom", RENAME), driver="asyncpg")
    errors = check_postgres(describe, [copy])
    assert len(errors) == 1
    assert "query Q (q.sql): its SQL constant does not prepare" in errors[0]
    assert "nmae" in errors[0]


@pytest.mark.slow
def test_generation_fails_naming_a_query_sqlite_cannot_prepare(tmp_path: pathlib.Path) -> None:
    queries = "-- name: Broken :exec\nSELECT no_such_function(1);\n"
    case = write_case(tmp_path / "case", "sqlite", SCHEMA, queries, {})
    done = run_sqlc(case, "generate")
    assert done.returncode != 0
    assert "query Broken (q.sql): its SQL constant does not prepare" in done.stderr
    assert not (case / "out").exists()


@pytest.mark.slow
def test_check_sql_false_skips_the_check(tmp_path: pathlib.Path) -> None:
    queries = "-- name: Broken :exec\nSELECT no_such_function(1);\n"
    case = write_case(tmp_path / "case", "sqlite", SCHEMA, queries, {"check_sql": "false"})
    done = run_sqlc(case, "generate")
    assert done.returncode == 0, done.stderr
